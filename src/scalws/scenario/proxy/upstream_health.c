/* Upstream health records and the one probing thread. Why a thread of its
 * own and not the control thread or a loop: a probe of a dead upstream waits
 * for its connect to time out, and the control thread must answer signals
 * and the admin API meanwhile; a loop would have to carry a second kind of
 * connection through its machine for the sake of one request a second. The
 * thread's probes are non-blocking and polled together, so one dead upstream
 * never delays the verdict on the others. */
#include "upstream_health.h"

#include "client_head.h"
#include "sws_tls_client.h"
#include "upstream_tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct health_ent {
    /* passive: written by every loop (relaxed; a lost update among racing
     * loops costs one failure more or less, never a wrong verdict for long) */
    _Atomic uint32_t fails;         /* in the current window */
    _Atomic uint64_t window_ms;     /* its first failure */
    _Atomic uint64_t down_until_ms; /* skipped until then */
    _Atomic uint64_t fails_total;
    _Atomic uint64_t skips_total; /* times max_fails took it out */
    /* active: written by the thread only */
    _Atomic bool checked_down;
    _Atomic uint64_t checks_ok, checks_failed;
    uint32_t run; /* results in a row that disagree with the current state */
} health_ent;

struct sws_up_health {
    sws_proxy_config cfg; /* the section it started with: addresses, health_* */
    health_ent e[SWS_UPSTREAMS_MAX];
    SSL_CTX *tls; /* tls = on: the probes' context (a reference of our own) */
    pthread_t thread;
    bool running;
    int wake_fd; /* eventfd: stop */
};

uint64_t sws_health_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

#define LD(x) atomic_load_explicit(&(x), memory_order_relaxed)
#define ST(x, v) atomic_store_explicit(&(x), (v), memory_order_relaxed)
#define INC(x) atomic_fetch_add_explicit(&(x), 1, memory_order_relaxed)

uint32_t sws_health_usable(const sws_up_health *h, const sws_proxy_config *cfg, uint64_t now) {
    uint32_t mask = 0;
    /* One upstream alone is never skipped for max_fails (nginx): there is
     * nowhere else to send the request. */
    bool passive = cfg->max_fails && cfg->nupstreams > 1;
    for (int i = 0; i < cfg->nupstreams; i++) {
        if (h) {
            const health_ent *e = &h->e[i];
            if (LD(e->checked_down))
                continue;
            if (passive && LD(e->fails) >= cfg->max_fails && now < LD(e->down_until_ms))
                continue;
        }
        mask |= 1u << i;
    }
    return mask;
}

void sws_health_failed(sws_up_health *h, const sws_proxy_config *cfg, int up, uint64_t now) {
    if (!h || up < 0 || up >= SWS_UPSTREAMS_MAX)
        return;
    health_ent *e = &h->e[up];
    INC(e->fails_total);
    if (cfg->max_fails == 0)
        return;
    uint32_t f = LD(e->fails);
    if (f >= cfg->max_fails) {
        /* It was out, and the first try after fail_timeout failed as well
         * (nginx): out for another fail_timeout. */
        ST(e->down_until_ms, now + cfg->fail_timeout_ms);
        return;
    }
    if (f == 0 || now >= LD(e->window_ms) + cfg->fail_timeout_ms) {
        ST(e->window_ms, now);
        ST(e->fails, 1);
        f = 1;
    } else {
        f = atomic_fetch_add_explicit(&e->fails, 1, memory_order_relaxed) + 1;
    }
    if (f >= cfg->max_fails) {
        ST(e->down_until_ms, now + cfg->fail_timeout_ms);
        INC(e->skips_total);
    }
}

void sws_health_passed(sws_up_health *h, int up) {
    if (!h || up < 0 || up >= SWS_UPSTREAMS_MAX)
        return;
    health_ent *e = &h->e[up];
    if (LD(e->fails)) /* a load first: the common case writes nothing shared */
        ST(e->fails, 0);
}

/* ---- active checks --------------------------------------------------------- */

typedef struct probe {
    int fd;
    SSL *ssl; /* tls = on: on the socket itself (this thread may block nobody) */
    short events;
    bool connected;
    bool sent;
    bool done, ok;
    char got[16];
    size_t ngot;
} probe;

static void probe_open(const sws_up_health *h, int i, probe *p) {
    memset(p, 0, sizeof *p);
    const sws_upstream_addr *a = &h->cfg.up[i];
    p->events = POLLOUT;
    p->fd = socket(a->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (p->fd < 0 ||
        (connect(p->fd, (const struct sockaddr *)&a->ss, a->len) < 0 && errno != EINPROGRESS))
        p->done = true;
}

/* A TLS call that did not finish: wait for what it wants, or give up (a
 * handshake or verify failure fails the check, as it fails the proxy's). */
static void probe_tls_wait(probe *p, int rc) {
    switch (SSL_get_error(p->ssl, rc)) {
    case SSL_ERROR_WANT_READ:
        p->events = POLLIN;
        break;
    case SSL_ERROR_WANT_WRITE:
        p->events = POLLOUT;
        break;
    default:
        p->done = true;
    }
    ERR_clear_error();
}

/* Connected: with TLS, the handshake on the socket. false while it is not done. */
static bool probe_tls(const sws_up_health *h, int i, probe *p) {
    if (!h->tls)
        return true;
    if (!p->ssl) {
        char name[256];
        sws_up_tls_name(&h->cfg, i, name, sizeof name);
        p->ssl = SSL_new(h->tls);
        if (!p->ssl || sws_tls_client_name(p->ssl, name) < 0 || SSL_set_fd(p->ssl, p->fd) != 1) {
            ERR_clear_error();
            p->done = true;
            return false;
        }
        SSL_set_connect_state(p->ssl);
    }
    if (SSL_is_init_finished(p->ssl))
        return true;
    int rc = SSL_do_handshake(p->ssl);
    if (rc == 1)
        return true;
    probe_tls_wait(p, rc);
    return false;
}

/* One step on readiness: send the request once connected (and, with TLS,
 * the handshake done), then read the status line; "HTTP/1.x 2xx" or "3xx"
 * passes. */
static void probe_step(const sws_up_health *h, int i, probe *p) {
    if (!p->connected) {
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        if (getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr) {
            p->done = true;
            return;
        }
        p->connected = true;
    }
    if (!probe_tls(h, i, p))
        return;
    if (!p->sent) {
        char req[512];
        int n = sws_h1c_probe_head(req, sizeof req, h->cfg.health_check, h->cfg.up[i].text);
        if (n <= 0) {
            p->done = true;
            return;
        }
        if (p->ssl) {
            int w = SSL_write(p->ssl, req, n);
            if (w <= 0) {
                probe_tls_wait(p, w); /* retried with the same bytes, as SSL_write wants */
                return;
            }
            p->done = w != n;
        } else if (send(p->fd, req, (size_t)n, MSG_NOSIGNAL) != (ssize_t)n) {
            p->done = true;
        }
        p->sent = true;
        p->events = POLLIN;
        return;
    }
    ssize_t r;
    if (p->ssl) {
        int got = SSL_read(p->ssl, p->got + p->ngot, (int)(sizeof(p->got) - 1 - p->ngot));
        if (got <= 0) {
            probe_tls_wait(p, got);
            if (!p->done)
                return;
        }
        r = got;
    } else {
        r = recv(p->fd, p->got + p->ngot, sizeof(p->got) - 1 - p->ngot, 0);
    }
    if (r < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (r <= 0) {
        p->done = true;
        return;
    }
    p->ngot += (size_t)r;
    int status = sws_h1c_status(p->got, p->ngot);
    if (status != 0) {
        p->ok = status >= 200 && status < 400;
        p->done = true;
    }
}

static void verdict(sws_up_health *h, int i, bool ok) {
    health_ent *e = &h->e[i];
    if (ok)
        INC(e->checks_ok);
    else
        INC(e->checks_failed);
    bool down = LD(e->checked_down);
    if (ok != down) {
        e->run = 0; /* agrees with the state it is in */
        return;
    }
    e->run++;
    if (e->run >= (down ? h->cfg.health_rise : h->cfg.health_fall)) {
        e->run = 0;
        ST(e->checked_down, !down);
        fprintf(stderr, "scalwsd: upstream %s (%s) is %s (health check %s)\n", h->cfg.up[i].text,
                h->cfg.up[i].addr, down ? "up" : "down", h->cfg.health_check);
    }
}

/* Probes every upstream at once; false when told to stop. */
static bool check_round(sws_up_health *h, uint64_t deadline) {
    int n = h->cfg.nupstreams;
    probe pr[SWS_UPSTREAMS_MAX];
    for (int i = 0; i < n; i++)
        probe_open(h, i, &pr[i]);
    bool stop = false;
    for (;;) {
        struct pollfd pf[SWS_UPSTREAMS_MAX + 1];
        int map[SWS_UPSTREAMS_MAX + 1], np = 0;
        pf[np] = (struct pollfd){.fd = h->wake_fd, .events = POLLIN};
        map[np++] = -1;
        for (int i = 0; i < n; i++) {
            if (pr[i].done)
                continue;
            pf[np] = (struct pollfd){.fd = pr[i].fd, .events = pr[i].events};
            map[np++] = i;
        }
        uint64_t now = sws_health_now();
        if (np == 1 || now >= deadline)
            break;
        int r = poll(pf, (nfds_t)np, (int)(deadline - now));
        if (r < 0 && errno != EINTR)
            break;
        if (r > 0 && (pf[0].revents & POLLIN)) {
            stop = true;
            break;
        }
        for (int k = 1; r > 0 && k < np; k++)
            if (pf[k].revents)
                probe_step(h, map[k], &pr[map[k]]);
    }
    for (int i = 0; i < n; i++) {
        SSL_free(pr[i].ssl); /* no close_notify: the probe's answer is all it wanted */
        if (pr[i].fd >= 0)
            close(pr[i].fd);
        if (!stop)
            verdict(h, i, pr[i].done && pr[i].ok);
    }
    return !stop;
}

static void *health_main(void *arg) {
    sws_up_health *h = arg;
    uint32_t every = h->cfg.health_interval_ms;
    /* A probe may take the whole interval (HAProxy's default check timeout),
     * and no longer than connect and read timeouts together. */
    uint64_t limit = (uint64_t)h->cfg.connect_timeout_ms + h->cfg.read_timeout_ms;
    uint64_t took_max = every < limit ? every : limit;
    for (;;) {
        uint64_t start = sws_health_now();
        if (!check_round(h, start + took_max))
            return NULL;
        uint64_t now = sws_health_now();
        int wait = now >= start + every ? 0 : (int)(start + every - now);
        struct pollfd pf = {.fd = h->wake_fd, .events = POLLIN};
        if (poll(&pf, 1, wait) > 0)
            return NULL;
    }
}

sws_up_health *sws_health_start(const sws_proxy_config *cfg, const struct sws_tls_client *tls,
                                char *err, size_t errlen) {
    sws_up_health *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(err, errlen, "upstream health: out of memory");
        return NULL;
    }
    h->cfg = *cfg;
    h->wake_fd = -1;
    if (tls && SSL_CTX_up_ref(sws_tls_client_ctx(tls)) == 1)
        h->tls = sws_tls_client_ctx(tls);
    if (!cfg->health_check[0])
        return h;
    h->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    int rc = h->wake_fd < 0 ? errno : pthread_create(&h->thread, NULL, health_main, h);
    if (rc) {
        snprintf(err, errlen, "upstream health checks: cannot start: %s", strerror(rc));
        if (h->wake_fd >= 0)
            close(h->wake_fd);
        SSL_CTX_free(h->tls);
        free(h);
        return NULL;
    }
    h->running = true;
    return h;
}

void sws_health_stop(sws_up_health *h) {
    if (!h)
        return;
    if (h->running) {
        uint64_t one = 1;
        if (write(h->wake_fd, &one, sizeof one) < 0)
            fprintf(stderr, "scalwsd: upstream health: cannot wake the check thread\n");
        pthread_join(h->thread, NULL);
    }
    if (h->wake_fd >= 0)
        close(h->wake_fd);
    SSL_CTX_free(h->tls);
    free(h);
}

/* ---- what the admin API shows ----------------------------------------------- */

static bool skipped(const sws_up_health *h, int i, uint64_t now) {
    const health_ent *e = &h->e[i];
    return h->cfg.max_fails && h->cfg.nupstreams > 1 && LD(e->fails) >= h->cfg.max_fails &&
           now < LD(e->down_until_ms);
}

bool sws_health_fits(const sws_up_health *h, const sws_proxy_config *c) {
    const sws_proxy_config *a = &h->cfg;
    return !sws_proxy_upstreams_differ(a, c) && strcmp(a->health_check, c->health_check) == 0 &&
           a->tls == c->tls && a->tls_verify == c->tls_verify &&
           strcmp(a->tls_ca, c->tls_ca) == 0 && strcmp(a->tls_name, c->tls_name) == 0 &&
           a->health_interval_ms == c->health_interval_ms && a->health_rise == c->health_rise &&
           a->health_fall == c->health_fall;
}

/* One metric's lines for every record: value(h, i) of each upstream. */
static void metric_lines(const sws_up_health *const *hs, const char *const *routes, int n, FILE *f,
                         const char *name, const char *extra,
                         uint64_t (*value)(const sws_up_health *, int, uint64_t), uint64_t now) {
    for (int k = 0; k < n; k++) {
        const sws_up_health *h = hs[k];
        for (int i = 0; i < h->cfg.nupstreams; i++)
            fprintf(f, "%s{route=\"%s\",upstream=\"%s\",address=\"%s\"%s} %llu\n", name, routes[k],
                    h->cfg.up[i].text, h->cfg.up[i].addr, extra,
                    (unsigned long long)value(h, i, now));
    }
}

static uint64_t v_up(const sws_up_health *h, int i, uint64_t now) {
    return !LD(h->e[i].checked_down) && !skipped(h, i, now);
}
static uint64_t v_fails(const sws_up_health *h, int i, uint64_t now) {
    (void)now;
    return LD(h->e[i].fails_total);
}
static uint64_t v_ok(const sws_up_health *h, int i, uint64_t now) {
    (void)now;
    return LD(h->e[i].checks_ok);
}
static uint64_t v_failed(const sws_up_health *h, int i, uint64_t now) {
    (void)now;
    return LD(h->e[i].checks_failed);
}

void sws_health_metrics(const sws_up_health *const *hs, const char *const *routes, int n, FILE *f) {
    if (n == 0)
        return;
    uint64_t now = sws_health_now();
    fprintf(f, "# HELP scalwsd_upstream_up 1 when the upstream may be picked, 0 when health "
               "checks or max_fails took it out.\n# TYPE scalwsd_upstream_up gauge\n");
    metric_lines(hs, routes, n, f, "scalwsd_upstream_up", "", v_up, now);
    fprintf(f, "# HELP scalwsd_upstream_fails_total Failed exchanges with the upstream.\n"
               "# TYPE scalwsd_upstream_fails_total counter\n");
    metric_lines(hs, routes, n, f, "scalwsd_upstream_fails_total", "", v_fails, now);
    fprintf(f, "# HELP scalwsd_upstream_checks_total Active health checks by result.\n"
               "# TYPE scalwsd_upstream_checks_total counter\n");
    metric_lines(hs, routes, n, f, "scalwsd_upstream_checks_total", ",result=\"ok\"", v_ok, now);
    metric_lines(hs, routes, n, f, "scalwsd_upstream_checks_total", ",result=\"failed\"", v_failed,
                 now);
}

void sws_health_status(const sws_up_health *h, const char *route, uint64_t now, json_t *a) {
    for (int i = 0; i < h->cfg.nupstreams; i++) {
        const health_ent *e = &h->e[i];
        bool checked_down = LD(e->checked_down), skip = skipped(h, i, now);
        json_array_append_new(
            a, json_pack("{s:s, s:s, s:s, s:i, s:b, s:s, s:I, s:I, s:I, s:I}", "route", route,
                         "upstream", h->cfg.up[i].text, "address", h->cfg.up[i].addr, "weight",
                         (int)h->cfg.up[i].weight, "up", !checked_down && !skip, "state",
                         checked_down ? "down (health check)"
                         : skip       ? "skipped (max_fails)"
                                      : "up",
                         "fails", (json_int_t)LD(e->fails_total), "skips",
                         (json_int_t)LD(e->skips_total), "checks_ok", (json_int_t)LD(e->checks_ok),
                         "checks_failed", (json_int_t)LD(e->checks_failed)));
    }
}
