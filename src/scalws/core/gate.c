/* The gate (gate.h). Per loop: each connection's peer address, read once
 * (getpeername) when a gated route first needs it; each exchange's refusal,
 * by its id, until the gate instance answers it; a small cache of Basic
 * credentials already checked. Shared by the loops: the limiter's tables.
 * The order of the checks is nginx's, cheapest refusal first: the address
 * lists, then the connection count, then the rate (a denied client uses
 * none of its budget), then the password, so that a client past its rate
 * never makes the loop compute a bcrypt hash. */
#include "gate.h"

#include "access_config.h"
#include "conn.h"
#include "htpasswd.h"
#include "limiter.h"
#include "route.h"
#include "trusted.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

const char *const sws_limited_names[SWS_LIMITED_N] = {"rate", "conn", "deny", "auth"};

#define AUTH_CACHE 64 /* credentials remembered per loop, direct-mapped */
#define AUTH_TTL_MS 60000
#define AUTH_REST 3 /* after a hash of d, no other for 3d: a quarter of the loop at most */
/* A hash that took less of the loop's CPU than this earns no rest: a fast
 * one (bcrypt at a low cost, SHA-512 crypt) costs the loop little, and a
 * rest measured in a busy machine's wall time would turn a guess's 401 into
 * a 503 by chance. */
#define AUTH_REST_MIN_US 5000
#define HELD_MAX 16 /* old route tables held for refusals under way */

/* A connection's peer. Written only where the gate needs it, and cleared
 * when the connection is freed: the table's pages stay untouched (an idle
 * connection costs nothing more) while no route is gated. */
typedef struct peer {
    uint8_t family; /* 0: not read yet; PEER_UNREADABLE: getpeername failed */
    bool counted;   /* its connection is in the limiter's count */
    uint8_t addr[16];
    uint32_t conn_at; /* where the count was found (sws_limit_conn_open) */
    uint64_t conn_key;
    /* What the last request of the connection learnt of its route, kept for
     * the next one (keep-alive, HTTP/2) while the configuration is the same
     * (gen) and the route too: whether the peer is a trusted proxy, whether
     * the lists let it in, and its rate key. */
    uint32_t gen;
    uint32_t route; /* stat slot + 1 */
    bool trusted, allowed;
    /* ... and whether that judgement leaves only the counts to each request:
     * let in by the lists, no forwarded client to find, no password to
     * check (sws_route_pick's fast path); conn_limit: its route's
     * limit_conn when its connection is counted, else 0. */
    bool fast;
    uint16_t status; /* its route's refusal status */
    /* fast's judgement holds while stamp is the gate's generation and the
     * route's slot + 1, in one word (0: it does not). */
    uint64_t stamp;
    uint64_t rate_key;
    /* The limiter's words the fast path reads (limiter.h; NULL: no limit):
     * the count word is key's while word - conn_base is its count, in
     * 1..conn_limit when it passes; the rate word is key's while its top
     * bits are rate_tag. The route's interval, interval * burst (tau) and
     * the most a time may be ahead (tau + interval). */
    _Atomic uint64_t *conn_word, *rate_word;
    uint64_t conn_base, conn_limit;
    uint64_t rate_tag;
    uint64_t rate_us, tau_us, most_us;
} peer;

typedef struct refusal {
    const sws_route *route; /* NULL: the idle route's ("default") */
    uint32_t retry_s;
    uint16_t status;
} refusal;

typedef struct auth_seen {
    uint8_t digest[32]; /* SHA-256 of the htpasswd's generation and the credentials */
    uint64_t until;     /* loop clock; 0: empty */
    bool ok;
} auth_seen;

typedef struct sws_gate {
    uint32_t gen;      /* the configuration's: bumped by each settle */
    peer *peers;       /* by connection slot */
    refusal *refusals; /* by exchange id */
    auth_seen seen[AUTH_CACHE];
    struct crypt_data *crypt; /* crypt_rn's 32 KiB scratch, made on first use */
    uint64_t hash_rest_until; /* CLOCK_MONOTONIC us: no uncached check before it */
    struct sws_routes *held[HELD_MAX];
    int nheld;
    sws_route idle; /* the instance's route between refusals: "default"'s slot */
} sws_gate;

#define PEER_UNREADABLE 255

static sws_gate *gate_of(const sws_worker *w) {
    return w->gate_sc->state;
}

/* ---- addresses ------------------------------------------------------------------ */

/* p's address from a socket address (an IPv4-mapped one as IPv4): false
 * for another family. */
static bool peer_set(peer *p, const struct sockaddr *sa) {
    if (sa->sa_family == AF_INET) {
        memcpy(p->addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
        p->family = AF_INET;
    } else if (sa->sa_family == AF_INET6) {
        const uint8_t *a = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
        static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        bool v4 = memcmp(a, mapped, 12) == 0;
        memcpy(p->addr, v4 ? a + 12 : a, v4 ? 4 : 16);
        p->family = v4 ? AF_INET : AF_INET6;
    } else {
        return false;
    }
    return true;
}

static peer *peer_of(sws_worker *w, uint32_t conn, const sws_exchange *x) {
    peer *p = &gate_of(w)->peers[conn];
    if (p->family)
        return p;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    int fd = sws_ex_fd(w, x);
    p->family = PEER_UNREADABLE;
    if (fd >= 0) {
        if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0)
            peer_set(p, (struct sockaddr *)&ss);
        return p;
    }
    /* No socket of its own (a QUIC connection's is shared): the address
     * its protocol knows, as text. */
    char text[INET6_ADDRSTRLEN + 8];
    int fam;
    if (sws_ex_peer(w, x, text, sizeof text) == 0 && (fam = sws_addr_parse(text, p->addr)))
        p->family = (uint8_t)fam;
    return p;
}

static bool trusted(const sws_proxy_config *px, int family, const uint8_t *addr) {
    for (int i = 0; i < px->ntrusted; i++)
        if (px->trusted[i].family == family &&
            sws_prefix_eq(addr, px->trusted[i].addr, px->trusted[i].bits))
            return true;
    return false;
}

/* One X-Forwarded-For element: an address, "[v6]" or "[v6]:port", or
 * "v4:port". The family, or 0. */
static int element(const char *s, size_t n, uint8_t addr[16]) {
    while (n && (*s == ' ' || *s == '\t'))
        s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    char t[INET6_ADDRSTRLEN + 8];
    if (n == 0 || n >= sizeof t)
        return 0;
    if (s[0] == '[') {
        const char *close = memchr(s, ']', n);
        if (!close)
            return 0;
        n = (size_t)(close - s - 1);
        s++;
        if (n >= sizeof t)
            return 0;
    } else if (memchr(s, '.', n)) {
        const char *colon = memchr(s, ':', n);
        if (colon)
            n = (size_t)(colon - s); /* v4:port */
    }
    memcpy(t, s, n);
    t[n] = '\0';
    return sws_addr_parse(t, addr);
}

/* The client behind a trusted proxy p: the rightmost X-Forwarded-For
 * address that is not a trusted proxy itself (all of them trusted: the
 * leftmost), as nginx's real_ip_recursive. A field too long to keep, or an
 * element that is no address, stops the walk there; no field: the peer. */
static int forwarded_client(const sws_scenario_cfg *cfg, const peer *p, const sws_http_request *r,
                            uint8_t addr[16]) {
    int fam = p->family;
    memcpy(addr, p->addr, 16);
    if (!r->sf_fields)
        return fam;
    uint16_t n = r->sf_len[SWS_HTTP_SF_XFF];
    if (n == 0 || n > SWS_HTTP_SF_VALUE_MAX)
        return fam;
    const char *v = r->sf_fields + SWS_HTTP_SF_XFF * SWS_HTTP_SF_VALUE_MAX;
    size_t end = n;
    for (;;) {
        size_t start = end;
        while (start > 0 && v[start - 1] != ',')
            start--;
        uint8_t a[16] = {0};
        int f = element(v + start, end - start, a);
        if (!f)
            return fam;
        fam = f;
        memcpy(addr, a, 16);
        if (!trusted(&cfg->proxy, fam, addr) || start == 0)
            return fam;
        end = start - 1;
    }
}

/* ---- Basic credentials (RFC 7617) -------------------------------------------------- */

static int b64(char c) {
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* "Basic" 1*SP token68, decoded into out: its length, or -1 when malformed
 * (another scheme, bad base64, padding in the middle). */
static int basic_decode(const char *v, size_t n, char *out, size_t cap) {
    if (n < 6 || strncasecmp(v, "basic ", 6) != 0)
        return -1;
    size_t i = 6;
    while (i < n && v[i] == ' ')
        i++;
    const char *s = v + i;
    size_t len = n - i;
    if (len == 0 || len % 4 != 0)
        return -1;
    size_t o = 0;
    for (size_t k = 0; k < len; k += 4) {
        int q[4];
        int pad = 0;
        for (int j = 0; j < 4; j++) {
            char c = s[k + (size_t)j];
            if (c == '=' && k + 4 == len && j >= 2) {
                q[j] = 0;
                pad++;
            } else if (pad || (q[j] = b64(c)) < 0) {
                return -1;
            }
        }
        uint32_t bits =
            (uint32_t)q[0] << 18 | (uint32_t)q[1] << 12 | (uint32_t)q[2] << 6 | (uint32_t)q[3];
        if (o + 3 - (size_t)pad > cap)
            return -1;
        out[o++] = (char)(bits >> 16);
        if (pad < 2)
            out[o++] = (char)(bits >> 8);
        if (pad < 1)
            out[o++] = (char)bits;
    }
    return (int)o;
}

enum { AUTH_NO, AUTH_OK, AUTH_BUSY };

static uint64_t clock_us(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static uint64_t mono_us(void) {
    return clock_us(CLOCK_MONOTONIC);
}

/* Whether the request carries a user:password of users: AUTH_OK, AUTH_NO,
 * or AUTH_BUSY (*wait_us until this loop hashes again). Credentials seen
 * within AUTH_TTL_MS are answered from the loop's cache: a browser sends the
 * same ones with every request, and bcrypt costs ~50 ms of the loop. A hash
 * that took d of the loop thread's CPU keeps the loop from the next uncached
 * one for AUTH_REST * d, so that new passwords (a guesser's) take at most a
 * quarter of its time. */
static int authorized(sws_worker *w, const sws_htpasswd *users, const sws_http_request *r,
                      uint64_t *wait_us) {
    if (!r->sf_fields)
        return AUTH_NO;
    uint16_t n = r->sf_len[SWS_HTTP_SF_AUTH];
    if (n == 0 || n > SWS_HTTP_SF_VALUE_MAX)
        return AUTH_NO;
    char cred[SWS_HTTP_SF_VALUE_MAX];
    int len =
        basic_decode(r->sf_fields + SWS_HTTP_SF_AUTH * SWS_HTTP_SF_VALUE_MAX, n, cred, sizeof cred);
    const char *colon = len > 0 ? memchr(cred, ':', (size_t)len) : NULL;
    sws_gate *g = gate_of(w);
    uint64_t gen = sws_htpasswd_gen(users), now = tl_loop_now(w->loop);
    uint8_t msg[8 + SWS_HTTP_SF_VALUE_MAX], d[32];
    size_t dl = 0;
    int verdict = AUTH_NO;
    if (colon) {
        memcpy(msg, &gen, 8);
        memcpy(msg + 8, cred, (size_t)len);
        if (!EVP_Q_digest(NULL, "SHA256", NULL, msg, 8 + (size_t)len, d, &dl))
            dl = 0;
        explicit_bzero(msg, sizeof msg);
    }
    auth_seen *e = dl == 32 ? &g->seen[d[0] % AUTH_CACHE] : NULL;
    if (e && e->until > now && memcmp(e->digest, d, 32) == 0) {
        verdict = e->ok ? AUTH_OK : AUTH_NO;
    } else if (e && g->hash_rest_until > mono_us()) {
        *wait_us = g->hash_rest_until - mono_us();
        verdict = AUTH_BUSY;
    } else if (e && (g->crypt || (g->crypt = malloc(sizeof(*g->crypt))))) {
        size_t ulen = (size_t)(colon - cred);
        uint64_t t0 = clock_us(CLOCK_THREAD_CPUTIME_ID);
        bool ok =
            sws_htpasswd_check(users, cred, ulen, colon + 1, (size_t)len - ulen - 1, g->crypt);
        uint64_t cpu = clock_us(CLOCK_THREAD_CPUTIME_ID) - t0;
        g->hash_rest_until = cpu < AUTH_REST_MIN_US ? 0 : mono_us() + cpu * AUTH_REST;
        memcpy(e->digest, d, 32);
        e->until = now + AUTH_TTL_MS;
        e->ok = ok;
        verdict = ok ? AUTH_OK : AUTH_NO;
    }
    explicit_bzero(cred, sizeof cred);
    return verdict;
}

/* ---- the check ------------------------------------------------------------------ */

static sws_scenario *refuse(sws_worker *w, const sws_route *rt, const sws_exchange *x, int kind,
                            uint16_t status, uint64_t retry_us) {
    SWS_ADD(w->rstats[rt->stat_slot].limited[kind], 1);
    refusal *f = &gate_of(w)->refusals[sws_ex_id(x)];
    f->route = rt;
    f->status = status;
    f->retry_s = (uint32_t)((retry_us + 999999) / 1000000);
    if (f->retry_s == 0)
        f->retry_s = 1;
    return w->gate_sc;
}

/* Whether client (fam, addr) may ask route rt, and its rate key (0: no
 * rate, or an address that could not be read). */
static bool judge(sws_worker *w, const sws_route *rt, int fam, const uint8_t *addr,
                  uint64_t *rate_key) {
    const sws_access_config *a = &rt->cfg.access;
    sws_limiter *l = w->srv->limiter;
    *rate_key =
        a->rate_us && fam != PEER_UNREADABLE ? sws_limit_key(l, fam, addr, rt->stat_slot) : 0;
    return !(a->allow.n || a->deny.n) || sws_acl_allows(&a->allow, &a->deny, fam, addr);
}

/* Every check, and the connection's judgement for its route made again
 * when the route or the configuration changed. */
__attribute__((noinline)) static sws_scenario *gate_full(sws_worker *w, sws_scenario *sc,
                                                         const sws_exchange *x, uint32_t conn,
                                                         const sws_http_request *r) {
    const sws_route *rt = sc->route;
    const sws_access_config *a = &rt->cfg.access;
    if (a->allow.n || a->deny.n || a->rate_us || a->conn) {
        sws_limiter *l = w->srv->limiter;
        peer *p = peer_of(w, conn, x);
        if (a->conn && p->counted && sws_limit_conn_count(l, p->conn_key, p->conn_at) > a->conn)
            return refuse(w, rt, x, SWS_LIMITED_CONN, (uint16_t)a->status, 1000000);
        /* The peer's judgement is the connection's until the route or the
         * configuration changes; a forwarded client's is made per request. */
        uint32_t gen = gate_of(w)->gen;
        if (p->gen != gen || p->route != rt->stat_slot + 1) {
            p->gen = gen;
            p->route = rt->stat_slot + 1;
            p->trusted = rt->cfg.proxy.ntrusted && trusted(&rt->cfg.proxy, p->family, p->addr);
            p->allowed = judge(w, rt, p->family, p->addr, &p->rate_key);
            p->fast = p->allowed && !p->trusted && !a->users;
            p->stamp = p->fast ? (uint64_t)gen << 32 | p->route : 0;
            p->status = (uint16_t)a->status;
            p->conn_limit = a->conn; /* at most 65535: the count's 16 bits */
            p->conn_word = a->conn && p->counted ? sws_limit_conn_word(l, p->conn_at) : NULL;
            p->conn_base = sws_limit_conn_tag(p->conn_key) << 16;
            p->rate_word = p->rate_key ? sws_limit_rate_word(l, p->rate_key) : NULL;
            p->rate_tag = sws_limit_tag(p->rate_key);
            p->rate_us = a->rate_us;
            p->tau_us = a->rate_us * a->burst;
            p->most_us = p->tau_us + a->rate_us;
        }
        bool allowed = p->allowed;
        uint64_t key = p->rate_key;
        if (p->trusted) {
            uint8_t addr[16];
            int fam = forwarded_client(&rt->cfg, p, r, addr);
            allowed = judge(w, rt, fam, addr, &key);
        }
        if (!allowed)
            return refuse(w, rt, x, SWS_LIMITED_DENY, 403, 0);
        if (key) {
            uint64_t wait =
                sws_limit_rate(l, key, tl_loop_now(w->loop) * 1000, a->rate_us, a->burst);
            if (wait)
                return refuse(w, rt, x, SWS_LIMITED_RATE, (uint16_t)a->status, wait);
        }
    }
    if (a->users) {
        uint64_t wait = 0;
        int v = authorized(w, a->users, r, &wait);
        if (v == AUTH_BUSY)
            return refuse(w, rt, x, SWS_LIMITED_AUTH, 503, wait);
        if (v == AUTH_NO)
            return refuse(w, rt, x, SWS_LIMITED_AUTH, 401, 0);
    }
    return sc;
}

/* The rate the long way (sws_limit_rate): the key away from its home slot,
 * a lost race, or a refusal. */
__attribute__((noinline)) static sws_scenario *gate_rate(sws_worker *w, sws_scenario *sc,
                                                         const sws_exchange *x, const peer *p) {
    const sws_access_config *a = &sc->route->cfg.access;
    uint64_t wait = sws_limit_rate(w->srv->limiter, p->rate_key, w->now_us, a->rate_us, a->burst);
    return wait ? refuse(w, sc->route, x, SWS_LIMITED_RATE, p->status, wait) : sc;
}

/* A request's gate, once its route's instance sc is known. The common
 * request costs what its limits must: its connection judged for this route
 * already (the same configuration), only the counts are left: one load for
 * limit_conn, one load and one compare-and-swap for limit_rate, inline, with
 * no call on the way, so that no register is saved for it; anything else
 * (a first request, a forwarded client, a password, a refusal) goes the
 * long way. doc/limits.md, "Cost", says what it saved. */
__attribute__((always_inline)) static inline sws_scenario *
gate_check(sws_worker *w, sws_scenario *sc, const sws_exchange *x, uint32_t conn,
           const sws_http_request *r) {
    const sws_route *rt = sc->route;
    if (!rt->gated)
        return sc;
    const sws_gate *g = gate_of(w);
    const peer *p = &g->peers[conn];
    if (p->stamp != ((uint64_t)g->gen << 32 | (rt->stat_slot + 1)))
        return gate_full(w, sc, x, conn, r);
    /* Another tag makes the difference huge (or wrap), a count of 0 wraps. */
    if (p->conn_word &&
        atomic_load_explicit(p->conn_word, memory_order_relaxed) - p->conn_base - 1 >=
            p->conn_limit)
        return gate_full(w, sc, x, conn, r); /* moved (looked up there), or refused */
    if (!p->rate_word)
        return sc;
    /* GCRA at the key's home slot (limiter.h's sws_limit_rate, with the
     * route's numbers at hand); anything else (another slot, a lost race,
     * a refusal) goes through the limiter. */
    _Atomic uint64_t *rw = p->rate_word;
    uint64_t seen = atomic_load_explicit(rw, memory_order_relaxed);
    uint64_t now = w->now_us & SWS_TAT_MASK;
    if (seen >> SWS_TAT_BITS == p->rate_tag) {
        uint64_t d = sws_limit_ahead(seen, now, p->most_us);
        uint64_t next = p->rate_tag << SWS_TAT_BITS | ((now + d + p->rate_us) & SWS_TAT_MASK);
        if (d <= p->tau_us && atomic_compare_exchange_strong_explicit(
                                  rw, &seen, next, memory_order_relaxed, memory_order_relaxed))
            return sc;
    }
    return gate_rate(w, sc, x, p);
}

/* With [route]s: the match, then the gate. */
__attribute__((noinline)) static sws_scenario *
route_pick_matched(sws_worker *w, const sws_exchange *x, uint32_t conn, const sws_http_request *r) {
    return gate_check(w, sws_route_of(w, w->slots[conn].listener, r), x, conn, r);
}

sws_scenario *sws_route_pick(sws_worker *w, const sws_exchange *x, uint32_t conn,
                             const sws_http_request *r) {
    if (w->routes_on && w->cfg->routes->n > 1) /* routes_on: [route]s, or a gated proxy */
        return route_pick_matched(w, x, conn, r);
    return gate_check(w, &w->sc, x, conn, r);
}

sws_scenario *sws_gate_pick(sws_worker *w, sws_scenario *sc, const sws_exchange *x, uint32_t entry,
                            const sws_http_request *r) {
    return w->gate_on ? gate_check(w, sc, x, entry, r) : sc;
}

/* ---- connections ----------------------------------------------------------------- */

void sws_gate_conn_addr(sws_worker *w, uint32_t conn, const struct sockaddr *sa) {
    peer *p = &gate_of(w)->peers[conn];
    if (!peer_set(p, sa))
        return;
    sws_limiter *l = w->srv->limiter;
    p->conn_key = sws_limit_key(l, p->family, p->addr, UINT32_MAX);
    p->counted = sws_limit_conn_open(l, p->conn_key, &p->conn_at) > 0;
}

void sws_gate_conn_open(sws_worker *w, uint32_t conn, int fd) {
    if (fd < 0)
        return;
    /* The exchange is not there yet: read the address from the socket. */
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0)
        sws_gate_conn_addr(w, conn, (struct sockaddr *)&ss);
}

void sws_gate_conn_close(sws_worker *w, uint32_t conn) {
    peer *p = &gate_of(w)->peers[conn];
    if (!p->family)
        return; /* never written: its page may never have been touched */
    if (p->counted)
        sws_limit_conn_close(w->srv->limiter, p->conn_key);
    *p = (peer){0};
}

/* ---- the configuration ---------------------------------------------------------- */

void sws_gate_settle(sws_worker *w) {
    const sws_routes *t = w->cfg->routes;
    bool on = false, conn = false, fields = false;
    for (int i = 0; i < t->n; i++) {
        const sws_route *r = &t->r[i];
        if (!r->gated)
            continue;
        on = true;
        conn = conn || r->cfg.access.conn;
        fields = fields || r->cfg.access.users || r->cfg.proxy.ntrusted;
    }
    w->gate_on = on;
    w->gate_conn = conn;
    gate_of(w)->gen++; /* what the connections learnt of their routes is stale */
    /* Parsers keep Authorization and X-Forwarded-For only where they are
     * read: the static scenario's storage, lent for good once asked for. */
    if (fields)
        w->lend_sf = true;
}

void sws_gate_hold(sws_worker *w, struct sws_routes *old) {
    sws_gate *g = gate_of(w);
    if (w->gate_sc->pending == 0)
        return;
    if (g->nheld == HELD_MAX) {
        /* Reloads faster than refused requests end: keep the oldest held
         * ones, and drop this one's refusals' routes to the idle one. */
        for (uint32_t i = 0; i < w->nexchanges; i++)
            g->refusals[i].route = NULL;
        return;
    }
    sws_routes_ref(old);
    g->held[g->nheld++] = old;
    w->gate_held = true;
}

void sws_gate_reap(sws_worker *w) {
    sws_gate *g = w->gate_sc ? gate_of(w) : NULL;
    if (!g || g->nheld == 0 || w->gate_sc->pending)
        return;
    for (int i = 0; i < g->nheld; i++)
        sws_routes_unref(g->held[i]);
    g->nheld = 0;
    w->gate_held = false;
}

/* ---- the gate instance: answers the refusals -------------------------------------- */

static int gate_init(sws_worker *w, sws_scenario *sc) {
    sws_gate *g = calloc(1, sizeof(*g));
    if (!g)
        return -ENOMEM;
    sc->state = g;
    /* calloc: the pages of slots never used are never touched. */
    g->gen = 1;
    g->peers = calloc(w->npeers > w->nslots ? w->npeers : w->nslots, sizeof(*g->peers));
    g->refusals = calloc(w->nexchanges, sizeof(*g->refusals));
    if (!g->peers || !g->refusals)
        return -ENOMEM;
    snprintf(g->idle.name, sizeof g->idle.name, SWS_ROUTE_DEFAULT);
    g->idle.stat_slot = 0; /* the default route's, named first */
    snprintf(g->idle.cfg.access.realm, sizeof g->idle.cfg.access.realm, "scalwsd");
    sc->route = &g->idle;
    return 0;
}

static void gate_free(sws_worker *w, sws_scenario *sc) {
    (void)w;
    sws_gate *g = sc->state;
    if (!g)
        return;
    for (int i = 0; i < g->nheld; i++)
        sws_routes_unref(g->held[i]);
    free(g->peers);
    free(g->refusals);
    free(g->crypt);
    free(g);
    sc->state = NULL;
}

static int gate_answer(sws_worker *w, sws_scenario *sc, sws_exchange *x) {
    sws_gate *g = sc->state;
    const refusal *f = &g->refusals[sws_ex_id(x)];
    const sws_route *rt = f->route ? f->route : &g->idle;
    /* The route's for its counters and log line, which follow this hook. */
    sc->route = rt;
    w->log_route = rt;
    int status = f->status ? f->status : 403;
    char value[SWS_REALM_MAX + 40];
    sws_field field;
    uint32_t nf = 1;
    if (status == 401) {
        int n = snprintf(value, sizeof value, "Basic realm=\"%s\", charset=\"UTF-8\"",
                         rt->cfg.access.realm);
        field = sws_field_str("WWW-Authenticate", 16, value, (uint32_t)n);
    } else if (status == 429 || status == 503) {
        int n = snprintf(value, sizeof value, "%u", f->retry_s);
        field = sws_field_str("Retry-After", 11, value, (uint32_t)n);
    } else {
        nf = 0;
    }
    char body[64];
    int bl = snprintf(body, sizeof body, "%s\n", sws_http_reason(status));
    sws_answer a = {.status = status,
                    .content_type = "text/plain",
                    .length = (uint64_t)bl,
                    .whole_body = true,
                    .fields = &field,
                    .nfields = nf};
    int rc = sws_ex_head(w, x, &a);
    if (rc < 0)
        return rc;
    if ((rc = sws_ex_body(w, x, body, (size_t)bl)) < 0)
        return rc;
    if (w->logs)
        sws_ex_log(w, x, status, sws_ex_request(x)->head ? 0 : (uint64_t)bl);
    return SWS_ANSWER_DONE;
}

static bool gate_finished(const sws_worker *w, const sws_scenario *sc) {
    (void)w;
    (void)sc;
    return true; /* it holds nothing of the loop: its answers are given at once */
}

const sws_scenario_ops sws_gate_ops = {
    .name = "gate",
    .init = gate_init,
    .free = gate_free,
    .answer = gate_answer,
    .finished = gate_finished,
};
