/* Upstream pools: slots for connections (allocated once, reused), an idle
 * LIFO per upstream (the most recently used connection is the warmest), and
 * the counters /metrics shows. Every function runs on the pool's loop; only
 * the shared pool (pool = shared) is touched by every loop, under its mutex. */
#include "upstream.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "sws.h"
#include "upstream_tls.h"

const uint32_t sws_up_lat_bounds_us[SWS_UP_LAT_BUCKETS] = {
    100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 1000000};
const char *const sws_up_err_names[SWS_UPE_N] = {
    "refused",   "unreachable",  "connect_timeout", "read_timeout", "reset",
    "truncated", "bad_response", "other",           "none_usable",  "tls"};

#define UP_TOKEN(i, tag) sws_token_of(p->inst, i, tag)

/* Issue 17: an idle pooled connection costs at most 1 KiB of user space; it
 * holds no buffer, so its slot is all of it (and its index in an idle stack). */
static_assert(sizeof(sws_up_conn) + sizeof(sws_up_conn *) + sizeof(uint32_t) <= 1024,
              "an idle pooled upstream connection must stay within 1 KiB");
static_assert(sizeof(sws_up_conn) <= 64,
              "an upstream connection is one cache line (doc/internals.md)");

/* The shared pool: detached transports, a LIFO per upstream. Each loop's pool
 * adds pool_per_loop entries of room, so both modes keep as many idle
 * connections in all. The mutex is the cross-thread handover per_loop avoids. */
typedef struct shared_ent {
    tl_detached d;
    uint64_t since_ms;
    const tl_loop *from;
} shared_ent;

static struct {
    pthread_mutex_t mu;
    shared_ent *st[SWS_UPSTREAMS_MAX];
    uint32_t n[SWS_UPSTREAMS_MAX];
    uint32_t cap[SWS_UPSTREAMS_MAX];
    int users;
    _Atomic uint64_t idle;
} g_shared = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* One clock for every loop: each loop's tl_loop_now is its own. */
static uint64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t sws_pool_shared_idle(void) {
    return atomic_load_explicit(&g_shared.idle, memory_order_relaxed);
}

static bool shared(const sws_pool *p) {
    return p->cfg->pool_mode == SWS_POOL_SHARED;
}

static int shared_init(const sws_proxy_config *cfg) {
    int rc = 0;
    pthread_mutex_lock(&g_shared.mu);
    g_shared.users++;
    for (int u = 0; u < cfg->nupstreams && rc == 0; u++) {
        uint32_t cap = g_shared.cap[u] + cfg->pool_per_loop;
        shared_ent *n = realloc(g_shared.st[u], (cap + 1) * sizeof(*n));
        if (!n) {
            rc = -ENOMEM;
            break;
        }
        g_shared.st[u] = n;
        g_shared.cap[u] = cap;
    }
    pthread_mutex_unlock(&g_shared.mu);
    return rc;
}

static void shared_free(void) {
    pthread_mutex_lock(&g_shared.mu);
    if (--g_shared.users == 0) {
        for (int u = 0; u < SWS_UPSTREAMS_MAX; u++) {
            for (uint32_t j = 0; j < g_shared.n[u]; j++)
                close(g_shared.st[u][j].d.fd);
            free(g_shared.st[u]);
            g_shared.st[u] = NULL;
            g_shared.n[u] = g_shared.cap[u] = 0;
        }
        atomic_store(&g_shared.idle, 0);
    }
    pthread_mutex_unlock(&g_shared.mu);
}

/* Closes entries idle since before cutoff (all of them with cutoff UINT64_MAX)
 * outside the lock. */
static void shared_expire(int nupstreams, uint64_t cutoff) {
    int fds[64];
    for (;;) {
        int nf = 0;
        pthread_mutex_lock(&g_shared.mu);
        for (int u = 0; u < nupstreams && nf < 64; u++) {
            uint32_t k = 0;
            for (uint32_t j = 0; j < g_shared.n[u]; j++) {
                shared_ent *e = &g_shared.st[u][j];
                if (nf < 64 && (cutoff == UINT64_MAX || e->since_ms < cutoff))
                    fds[nf++] = e->d.fd;
                else
                    g_shared.st[u][k++] = *e;
            }
            g_shared.n[u] = k;
        }
        atomic_fetch_sub_explicit(&g_shared.idle, (uint64_t)nf, memory_order_relaxed);
        pthread_mutex_unlock(&g_shared.mu);
        for (int i = 0; i < nf; i++)
            close(fds[i]);
        if (nf < 64)
            return;
    }
}

/* An idle transport of upstream up that still looks alive, or -1. A peek is
 * the shared pool's watch: a detached connection has no read armed anywhere. */
static int shared_take(sws_pool *p, int up, tl_detached *out) {
    for (;;) {
        pthread_mutex_lock(&g_shared.mu);
        if (g_shared.n[up] == 0) {
            pthread_mutex_unlock(&g_shared.mu);
            return -1;
        }
        shared_ent e = g_shared.st[up][--g_shared.n[up]];
        atomic_fetch_sub_explicit(&g_shared.idle, 1, memory_order_relaxed);
        pthread_mutex_unlock(&g_shared.mu);
        char c;
        ssize_t r = recv(e.d.fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (e.from != p->loop)
                SWS_ADD(p->st->handovers, 1);
            *out = e.d;
            return 0;
        }
        close(e.d.fd); /* closed by the upstream, or bytes nobody asked for */
        SWS_ADD(p->st->idle_closed, 1);
    }
}

/* Detaches an idle connection into the shared pool: 0 (gone from this loop),
 * -EAGAIN while an operation of it is still outstanding (the first call
 * cancels its receive), or another negative errno: it must be closed. */
static int shared_put(sws_pool *p, sws_up_conn *u) {
    tl_detached d;
    int rc = tl_detach(p->loop, u->h, &d);
    if (rc < 0)
        return rc;
    pthread_mutex_lock(&g_shared.mu);
    bool room = g_shared.n[u->upstream] < g_shared.cap[u->upstream];
    if (room) {
        g_shared.st[u->upstream][g_shared.n[u->upstream]++] =
            (shared_ent){.d = d, .since_ms = mono_ms(), .from = p->loop};
        atomic_fetch_add_explicit(&g_shared.idle, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&g_shared.mu);
    if (!room)
        close(d.fd);
    return 0;
}

int sws_pool_init(sws_pool *p, tl_loop *loop, const sws_proxy_config *cfg, uint32_t nslots,
                  uint32_t inst, sws_up_stats *st) {
    memset(p, 0, sizeof(*p));
    p->loop = loop;
    p->cfg = cfg;
    p->inst = inst;
    p->st = st;
    p->nslots = nslots;
    p->slots = calloc(nslots, sizeof(*p->slots));
    p->free_idx = malloc(nslots * sizeof(*p->free_idx));
    if (!p->slots || !p->free_idx)
        return -ENOMEM;
    for (uint32_t i = 0; i < nslots; i++)
        p->free_idx[i] = nslots - 1 - i;
    p->nfree = nslots;
    for (int u = 0; u < cfg->nupstreams; u++) {
        p->idle[u] = malloc((cfg->pool_per_loop + 1) * sizeof(uint32_t));
        if (!p->idle[u])
            return -ENOMEM;
    }
    if (cfg->pool_mode == SWS_POOL_SHARED) {
        int rc = shared_init(cfg);
        p->shared_user = true; /* shared_init counted this pool even on failure */
        if (rc < 0)
            return rc;
    }
    return 0;
}

void sws_pool_free(sws_pool *p) {
    sws_up_tls_pool_free(p);
    for (uint32_t i = 0; i < p->nslots && p->slots; i++)
        free(p->slots[i]);
    free(p->slots);
    free(p->free_idx);
    for (int u = 0; u < SWS_UPSTREAMS_MAX; u++)
        free(p->idle[u]);
    if (p->shared_user)
        shared_free();
}

sws_up_conn *sws_pool_conn(sws_pool *p, uint32_t index) {
    if (index >= p->nslots || !p->slots[index] || p->slots[index]->state == SWS_UP_FREE)
        return NULL;
    return p->slots[index];
}

static void free_slot(sws_pool *p, sws_up_conn *u) {
    sws_up_tls_free(p, u); /* after the close: a write in flight held its wire */
    u->state = SWS_UP_FREE;
    p->free_idx[p->nfree++] = u->index;
    p->live--;
}

static void close_conn(sws_pool *p, sws_up_conn *u) {
    if (u->state == SWS_UP_CLOSING)
        return;
    u->state = SWS_UP_CLOSING;
    u->sess = SWS_NIL;
    sws_up_tls_close(p, u);
    if (tl_close(p->loop, u->h, UP_TOKEN(u->index, SWS_T_UP_CLOSE)) < 0)
        free_slot(p, u); /* unknown to turnloop: nothing will complete */
}

void sws_pool_closed(sws_pool *p, uint32_t index) {
    sws_up_conn *u = sws_pool_conn(p, index);
    if (u && u->state == SWS_UP_CLOSING)
        free_slot(p, u);
}

static sws_up_conn *slot_get(sws_pool *p) {
    uint32_t i = p->free_idx[p->nfree - 1];
    sws_up_conn *u = p->slots[i];
    if (!u) {
        u = malloc(sizeof(*u));
        if (!u)
            return NULL;
        p->slots[i] = u;
    }
    memset(u, 0, sizeof(*u));
    u->index = i;
    return u;
}

int sws_pool_acquire(sws_pool *p, uint32_t sess, bool fresh, int hint) {
    int up = hint >= 0 ? hint : (int)(p->rr++ % (uint32_t)p->cfg->nupstreams);
    tl_detached d;
    if (!fresh && shared(p) && p->nfree && shared_take(p, up, &d) == 0) {
        sws_up_conn *u = slot_get(p);
        tl_handle h;
        if (!u) {
            close(d.fd);
        } else if (tl_attach(p->loop, &d, &h) == 0) {
            /* Used only on the loop that attached it: that loop owns it now. */
            p->nfree--;
            p->live++;
            u->h = h;
            u->upstream = (uint8_t)up;
            u->sess = sess;
            u->owner = p->loop;
            u->state = SWS_UP_BUSY;
            u->reused = true;
            p->inflight[up]++;
            SWS_ADD(p->st->reuses, 1);
            return (int)u->index;
        }
        /* tl_attach closed it (a full loop): connect afresh below. */
    }
    if (!fresh && p->nidle[up]) {
        uint32_t i = p->idle[up][--p->nidle[up]];
        SWS_ADD(p->st->idle, (uint64_t)-1);
        sws_up_conn *u = p->slots[i];
        /* By construction the pool is per loop; the check proves it stays so. */
        if (u->owner != p->loop)
            SWS_ADD(p->st->foreign_loop_uses, 1);
        u->state = SWS_UP_BUSY;
        u->sess = sess;
        u->reused = true;
        u->got_bytes = false;
        u->sent = false;
        u->wlen = 0; /* the watch receive stays armed: the response comes through it */
        p->inflight[up]++;
        SWS_ADD(p->st->reuses, 1);
        return (int)i;
    }
    if (p->nfree == 0)
        return -EMFILE;
    sws_up_conn *u = slot_get(p);
    if (!u)
        return -ENOMEM;
    uint32_t i = u->index;
    u->upstream = (uint8_t)up;
    u->sess = sess;
    u->owner = p->loop;
    tl_op op;
    const sws_upstream_addr *a = &p->cfg->up[up];
    int rc = tl_connect(p->loop, (const struct sockaddr *)&a->ss, a->len,
                        UP_TOKEN(i, SWS_T_UP_CONNECT), &u->h, &op);
    if (rc < 0)
        return rc;
    p->nfree--;
    p->live++;
    u->state = SWS_UP_CONNECTING;
    p->inflight[up]++;
    SWS_ADD(p->st->connects, 1);
    return (int)i;
}

int sws_pool_recv(sws_pool *p, sws_up_conn *u) {
    if (u->read_armed)
        return 0;
    int rc = tl_recv(p->loop, u->h, UP_TOKEN(u->index, SWS_T_UP_READ), &u->read_op);
    if (rc == 0) {
        u->read_armed = true;
        u->recv_paused = u->starved = false;
    }
    return rc;
}

static void park_end(sws_pool *p, sws_up_conn *u, bool detached) {
    p->nparking--;
    if (detached)
        free_slot(p, u); /* gone from this loop: no close completion comes */
    else
        close_conn(p, u);
}

void sws_pool_park(sws_pool *p, sws_up_conn *u) {
    if (u->state != SWS_UP_PARKING)
        return;
    int rc = shared_put(p, u);
    if (rc != -EAGAIN)
        park_end(p, u, rc == 0);
}

void sws_pool_release(sws_pool *p, sws_up_conn *u, bool keep) {
    if (u->state == SWS_UP_FREE || u->state == SWS_UP_CLOSING || u->state == SWS_UP_PARKING)
        return;
    int up = u->upstream;
    if ((u->state == SWS_UP_BUSY || u->state == SWS_UP_CONNECTING) && p->inflight[up])
        p->inflight[up]--; /* every exchange ends here, whatever ended it */
    bool quiet = u->state == SWS_UP_BUSY && !u->write_inflight;
    /* An answer paused on the way (back-pressure) keeps its connection. If
     * the receive's cancel is still in flight, its -ECANCELED arrives once
     * the connection is idle and re-arms the watch there
     * (sws_pool_idle_cancelled); such a connection cannot go to another
     * loop. */
    bool cancelling = u->recv_paused && u->read_armed;
    u->sess = SWS_NIL;
    if (keep && !p->draining && quiet && !cancelling && shared(p)) {
        int rc = shared_put(p, u);
        if (rc == 0) {
            free_slot(p, u);
            return;
        }
        if (rc == -EAGAIN) {
            u->state = SWS_UP_PARKING;
            p->nparking++;
            return;
        }
    } else if (keep && !p->draining && quiet && !shared(p) &&
               p->nidle[up] < p->cfg->pool_per_loop) {
        /* The watch: end of stream, an error or stray bytes while idle drop
         * the connection at once (sws_pool_idle_event), so a reuse rarely
         * meets a dead one. Armed already unless the last one ended. */
        if (sws_pool_recv(p, u) == 0) {
            u->state = SWS_UP_IDLE;
            u->idle_since = tl_loop_now(p->loop);
            p->idle[up][p->nidle[up]++] = u->index;
            SWS_ADD(p->st->idle, 1);
            return;
        }
    }
    close_conn(p, u);
}

bool sws_pool_idle_cancelled(sws_pool *p, sws_up_conn *u, const tl_completion *e) {
    bool final = (e->flags & TL_CQE_FINAL) != 0, has_buf = (e->flags & TL_CQE_BUFFER) != 0;
    return final && !has_buf && e->res == -ECANCELED && u->recv_paused && sws_pool_recv(p, u) == 0;
}

void sws_pool_idle_event(sws_pool *p, sws_up_conn *u) {
    int up = u->upstream;
    for (uint32_t j = 0; j < p->nidle[up]; j++) {
        if (p->idle[up][j] == u->index) {
            memmove(&p->idle[up][j], &p->idle[up][j + 1],
                    (p->nidle[up] - j - 1) * sizeof(uint32_t));
            p->nidle[up]--;
            SWS_ADD(p->st->idle, (uint64_t)-1);
            break;
        }
    }
    SWS_ADD(p->st->idle_closed, 1);
    close_conn(p, u);
}

void sws_pool_expire(sws_pool *p, uint64_t now) {
    if (shared(p)) {
        uint64_t ms = mono_ms();
        shared_expire(p->cfg->nupstreams, p->draining ? UINT64_MAX
                                          : ms > p->cfg->idle_timeout_ms
                                              ? ms - p->cfg->idle_timeout_ms
                                              : 0);
    }
    for (int up = 0; up < p->cfg->nupstreams; up++) {
        uint32_t k = 0;
        for (uint32_t j = 0; j < p->nidle[up]; j++) {
            sws_up_conn *u = p->slots[p->idle[up][j]];
            if (p->draining || now >= u->idle_since + p->cfg->idle_timeout_ms) {
                SWS_ADD(p->st->idle, (uint64_t)-1);
                close_conn(p, u);
            } else {
                p->idle[up][k++] = u->index;
            }
        }
        p->nidle[up] = k;
    }
    sws_up_tls_pool_trim(p);
}

void sws_up_observe_latency(sws_pool *p, uint64_t us) {
    int b = 0;
    while (b < SWS_UP_LAT_BUCKETS && us > sws_up_lat_bounds_us[b])
        b++;
    SWS_ADD(p->st->lat[b], 1);
    SWS_ADD(p->st->lat_sum_us, us);
    SWS_ADD(p->st->lat_count, 1);
}

void sws_up_error(sws_pool *p, enum sws_up_err kind) {
    SWS_ADD(p->st->errors[kind], 1);
}

/* The proxy route's upstream counters on this loop (slot k), made on first use. */
sws_up_stats *sws_worker_upstats(sws_worker *w, uint32_t k) {
    if (k >= SWS_ROUTE_SLOTS)
        return NULL;
    sws_up_stats *st = atomic_load_explicit(&w->upstats[k], memory_order_relaxed);
    if (!st && (st = calloc(1, sizeof(*st))) != NULL)
        atomic_store_explicit(&w->upstats[k], st, memory_order_release);
    return st;
}
