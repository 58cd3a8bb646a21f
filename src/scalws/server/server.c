/* Server start-up and shutdown: how many loops, which accept route, which
 * listening sockets (bound here, or inherited from systemd or an older
 * scalwsd), then the workers and their threads. Runs on the main thread
 * before any worker turns; sws_server_start is its steps in order. */
#include "limiter.h"
#include "log_files.h"
#include "route.h"
#include "sws.h"

#include "upstream_health.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

static int pin_thread(pthread_t t, int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return -pthread_setaffinity_np(t, sizeof(set), &set);
}

static int open_shared_fd(const sws_config *cfg, char *err, size_t errlen) {
    int fd = socket(cfg->listen.ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (const struct sockaddr *)&cfg->listen.ss, cfg->listen.len) < 0 ||
        listen(fd, SOMAXCONN) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    (void)err;
    (void)errlen;
    return fd;
}

/* SO_REUSEPORT lets another process of the same user join a port that is in
 * use, which would hide a second scalwsd behind the first. A plain bind tells
 * a busy port from a free one first. */
static int probe_busy(const sws_config *cfg) {
    int fd = socket(cfg->listen.ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1, rc = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (const struct sockaddr *)&cfg->listen.ss, cfg->listen.len) < 0)
        rc = -errno;
    close(fd);
    return rc;
}

/* Inherited listening sockets (socket activation, or the SIGUSR2 re-exec of
 * an older scalwsd, reexec.c). */
typedef struct inherited {
    const int *fds;
    int n;
    int activated; /* the first, or -1 */
} inherited;

/* Step 1: the server's own resources: CPUs, the done eventfd. */
static int init_server(sws_server *s, const sws_config *cfg, char *err, size_t errlen) {
    /* What main set for the server stays: the inherited sockets, the reload hook. */
    const int *inherited_fds = s->inherited_fds;
    int ninherited = s->ninherited;
    void (*reload_apply)(sws_worker *, uint64_t) = s->reload_apply;
    memset(s, 0, sizeof(*s));
    s->inherited_fds = inherited_fds;
    s->ninherited = ninherited;
    s->reload_apply = reload_apply;
    s->cfg = cfg;
    s->sc_ops = sws_scenario_ops_of(cfg->routes->r[0].cfg.scenario);
    for (int i = 0; i < cfg->routes->n; i++)
        s->kinds_at_start |= 1u << cfg->routes->r[i].cfg.scenario;
    s->extra_handles = sws_scenarios_extra_handles(cfg);
    if (sws_route_slots_assign(cfg->routes, err, errlen) < 0)
        return -EINVAL;
    s->shared_fd = -1;
    s->acme_fd = -1;
    s->acme_http_fd = -1;
    s->started_ms = sws_now_ms();
    pthread_mutex_init(&s->shared_lock, NULL);
    sws_cpus_probe(&s->cpus);
    s->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (s->done_fd < 0) {
        snprintf(err, errlen, "eventfd: %s", strerror(errno));
        return -errno;
    }
    /* Made whether or not a route limits now: a reload may add one. */
    if (!(s->limiter = sws_limiter_new())) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    return 0;
}

/* Step 2: how many loops and threads. */
static void plan_loops(sws_server *s, const sws_config *cfg) {
    if (cfg->event_loops == 0) {
        s->shared = true;
        s->nloops = 1;
        s->nthreads = cfg->worker_threads > 0 ? cfg->worker_threads : s->cpus.available;
    } else {
        s->nloops = cfg->event_loops > 0 ? cfg->event_loops : s->cpus.available;
        s->nthreads = s->nloops;
    }
}

/* Step 3: the accept route, as configured unless inherited sockets decide.
 * Several inherited sockets: each is a queue of its own (one per loop of a
 * reuse_port parent), so every one gets a loop, or connections queued on it
 * would be lost when the parent closes its copy. */
static void plan_route(sws_server *s, const sws_config *cfg, inherited *inh) {
    sws_accept_route route = s->shared ? SWS_ACCEPT_ACCEPTOR : cfg->accept;
    inh->n = s->ninherited;
    inh->fds = s->inherited_fds;
    inh->activated = inh->n > 0 ? inh->fds[0] : -1;
    if (inh->n > 1 && !s->shared) {
        if (s->nloops < inh->n)
            s->nloops = s->nthreads = inh->n;
        route = inh->n == s->nloops ? SWS_ACCEPT_REUSE_PORT : SWS_ACCEPT_HERD;
    } else if (inh->n > 1) {
        fprintf(stderr, "scalwsd: %d inherited sockets; the shared model serves the first\n",
                inh->n);
        for (int i = 1; i < inh->n; i++)
            close(inh->fds[i]); /* not left open and never accepted: refused instead */
        inh->n = 1;
    }
    if (inh->n == 1 && (route == SWS_ACCEPT_REUSE_PORT || route == SWS_ACCEPT_HANDOFF ||
                        route == SWS_ACCEPT_REUSE_PORT_CPU)) {
        /* One inherited socket cannot be bound once per loop: share it, with
         * EPOLLEXCLUSIVE unless io_uring was asked for by name (it has no
         * wake-one; blocking acceptor threads serve it then). */
        route = cfg->backend != SWS_BACKEND_URING ? SWS_ACCEPT_EXCLUSIVE : SWS_ACCEPT_ACCEPTOR;
    }
    s->route = route;
    s->pinned = !s->shared && s->nloops <= s->cpus.in_mask;
}

/* Step 3b: a tls listener's contexts: one SSL_CTX per loop (its own session
 * cache), one ticket key ring for all, so a ticket resumes on whichever loop
 * the kernel picks. The server owns the initial config: this is its only
 * write to it. */
static int build_tls(sws_server *s, const sws_config *cfg, char *err, size_t errlen) {
    if (!cfg->listen_tls || cfg->tls_server)
        return 0;
    if (!(s->tls_keys = sws_tls_keys_new())) {
        snprintf(err, errlen, "[tls] cannot make session ticket keys");
        return -ENOMEM;
    }
    sws_tls_build b;
    sws_config_tls_build(cfg, &b);
    b.nloops = s->nloops;
    b.keys = s->tls_keys;
    sws_tls_server *ts = sws_tls_server_new(&b, err, errlen);
    if (!ts)
        return -EINVAL;
    ((sws_config *)cfg)->tls_server = ts;
    s->tls_rotated_ms = sws_now_ms();
    return 0;
}

/* Step 4: the workers and their loops (each with its scenario). */
static int create_workers(sws_server *s, bool inh_many, char *err, size_t errlen) {
    sws_accept_route route = s->route;
    s->workers = calloc((size_t)s->nloops, sizeof(*s->workers));
    s->loops = calloc((size_t)s->nloops, sizeof(*s->loops));
    s->listen_fds = calloc((size_t)s->nloops, sizeof(*s->listen_fds));
    if (!s->workers || !s->loops || !s->listen_fds) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    /* The access log files: one reference per loop and the control thread's. */
    int rc = sws_log_files_open(s->cfg->routes, NULL, s->nloops + 1, &s->logs, err, errlen);
    if (rc < 0)
        return rc;
    for (int i = 0; i < s->nloops; i++) {
        bool has_listener = inh_many || sws_balance_accepts(s, route, i);
        rc = sws_worker_init(s, &s->workers[i], i, has_listener, err, errlen);
        s->workers[i].accepts = has_listener;
        s->workers[i].fed_by = route == SWS_ACCEPT_ACCEPTOR ? -1 : i;
        if (rc < 0)
            return rc; /* sws_worker_init said which part failed */
        s->loops[i] = s->workers[i].loop;
    }
    s->backend = tl_loop_backend(s->loops[0]);
    return 0;
}

/* Step 5: the listeners of the route (or of the inherited sockets). */
static int open_listeners(sws_server *s, const inherited *inh, char *err, size_t errlen) {
    const sws_config *cfg = s->cfg;
    sws_accept_route route = s->route;
    const struct sockaddr *addr = (const struct sockaddr *)&cfg->listen.ss;
    int rc = 0;
    if (inh->n > 1) {
        /* Loop i serves inherited socket i % n: all of them when counts match. */
        for (int i = 0; i < s->nloops && rc == 0; i++)
            rc = tl_listen_shared(s->loops[i], inh->fds[i % inh->n], 0, &s->workers[i].listener);
        for (int i = 0; i < inh->n; i++)
            close(inh->fds[i]); /* the loops hold duplicates */
    } else {
        switch (route) {
        case SWS_ACCEPT_REUSE_PORT: {
            tl_handle hs[s->nloops];
            rc = probe_busy(cfg);
            if (rc < 0)
                break;
            rc = tl_route_reuse_port(s->loops, s->nloops, addr, cfg->listen.len, 0, hs);
            if (rc < 0)
                break;
            for (int i = 0; i < s->nloops; i++)
                s->workers[i].listener = hs[i];
            break;
        }
        case SWS_ACCEPT_HANDOFF:
        case SWS_ACCEPT_REUSE_PORT_CPU:
            rc = probe_busy(cfg); /* both may bind with SO_REUSEPORT (several acceptors) */
            if (rc == 0 &&
                (rc = sws_balance_listen(s, route, addr, cfg->listen.len, err, errlen)) < 0 &&
                err[0])
                return rc; /* balance.c said why */
            break;
        case SWS_ACCEPT_EXCLUSIVE:
        case SWS_ACCEPT_HERD:
        case SWS_ACCEPT_ACCEPTOR:
            rc = inh->activated >= 0 ? inh->activated : open_shared_fd(cfg, err, errlen);
            if (rc < 0)
                break;
            s->shared_fd = rc;
            rc = 0;
            if (route == SWS_ACCEPT_ACCEPTOR)
                break;
            for (int i = 0; i < s->nloops && rc == 0; i++)
                rc = tl_listen_shared(s->loops[i], s->shared_fd,
                                      route == SWS_ACCEPT_EXCLUSIVE ? TL_SHARED_EXCLUSIVE : 0,
                                      &s->workers[i].listener);
            break;
        }
    }
    if (rc < 0)
        snprintf(err, errlen, "%s: cannot listen on %s (accept %s): %s", cfg->listen_origin,
                 cfg->listen.text, sws_accept_name(route),
                 rc == -EADDRINUSE ? "address already in use" : tl_strerror(rc));
    return rc;
}

/* Step 6: TCP_DEFER_ACCEPT. The client speaks first in HTTP: let the kernel
 * hand over a connection with its request, so the first read never finds
 * nothing (nginx's listen ... deferred). Best effort: a refusal is harmless. */
static void defer_accept(sws_server *s) {
    if (!s->cfg->defer_accept)
        return;
    int secs = 1;
    if (s->shared_fd >= 0)
        setsockopt(s->shared_fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &secs, sizeof(secs));
    for (int i = 0; i < s->nloops; i++) {
        int fd = s->workers[i].listener ? tl_handle_fd(s->loops[i], s->workers[i].listener) : -1;
        if (fd >= 0)
            setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &secs, sizeof(secs));
    }
}

/* Step 7: every loop's first accept and sweep; the acceptor threads. */
static int arm_workers(sws_server *s, char *err, size_t errlen) {
    for (int i = 0; i < s->nloops; i++)
        sws_worker_arm(&s->workers[i]);
    if (s->route != SWS_ACCEPT_ACCEPTOR)
        return 0;
    int rc = tl_acceptor_start(&s->acceptor, s->shared_fd, s->nthreads, s->loops, s->nloops,
                               TL_HANDOFF_LEAST_LOADED, sws_token(0, SWS_T_ADOPT));
    if (rc < 0)
        snprintf(err, errlen, "cannot start acceptor threads: %s", tl_strerror(rc));
    return rc;
}

/* Step 8: what a SIGUSR2 re-exec passes on: each distinct listening socket
 * once. */
static void record_listen_fds(sws_server *s, const inherited *inh) {
    if (s->shared_fd >= 0)
        s->listen_fds[s->nlisten_fds++] = s->shared_fd;
    else
        for (int i = 0; i < s->nloops && i < (inh->n > 1 ? inh->n : s->nloops); i++)
            if (s->workers[i].listener)
                s->listen_fds[s->nlisten_fds++] = tl_handle_fd(s->loops[i], s->workers[i].listener);
    /* What was bound, not what was asked: port 0 is the kernel's choice. */
    if (s->nlisten_fds == 0 ||
        sws_sockname_text(s->listen_fds[0], s->listen_text, sizeof(s->listen_text)) < 0)
        snprintf(s->listen_text, sizeof(s->listen_text), "%s", s->cfg->listen.text);
}

/* Step 9: the start line on stderr (tests and operators read it). */
static void print_start(const sws_server *s, const inherited *inh) {
    const sws_config *cfg = s->cfg;
    char accept_text[160];
    sws_balance_describe(s, accept_text, sizeof(accept_text));
    char inherited_text[64] = "";
    if (inh->activated >= 0)
        snprintf(inherited_text, sizeof(inherited_text), " (%d activated socket%s, fd 3%s)", inh->n,
                 inh->n == 1 ? "" : "s", inh->n == 1 ? "" : "..");
    fprintf(stderr,
            "scalwsd %s: %s%d loop%s (%s; affinity %d CPU%s, quota %s%d), %d thread%s, accept %s, "
            "backend %s, listening on %s%s\n",
            SWS_VERSION, s->shared ? "shared model, " : "", s->nloops, s->nloops == 1 ? "" : "s",
            cfg->event_loops < 0 ? "auto" : "configured", s->cpus.in_mask,
            s->cpus.in_mask == 1 ? "" : "s", s->cpus.quota_cpus ? "" : "none/", s->cpus.quota_cpus,
            s->nthreads, s->nthreads == 1 ? "" : "s", accept_text, s->backend, s->listen_text,
            inherited_text);
    if (!s->pinned && !s->shared)
        fprintf(stderr, "scalwsd: %d loops on %d CPUs: loops are not pinned\n", s->nloops,
                s->cpus.in_mask);
    if (cfg->tls_server) {
        sws_tls_info ti;
        sws_tls_server_info(cfg->tls_server, &ti);
        fprintf(stderr,
                "scalwsd: tls on %s: %s, ALPN %s, memory BIOs (kTLS not used; kernel tls "
                "module %s), tickets %s, session cache %u per loop, OCSP stapling %s\n",
                s->listen_text, ti.protocols, cfg->http2 ? "h2 http/1.1" : "http/1.1",
                ti.ktls_kernel ? "present" : "absent", ti.tickets ? "on" : "off", ti.session_cache,
                ti.ocsp ? "on" : "off");
        sws_tls_print_certs(stderr, cfg->tls_server);
    }
}

/* Step 10: the threads that turn the loops, pinned when there are CPUs
 * enough. */
static int start_threads(sws_server *s, char *err, size_t errlen) {
    if (s->shared) {
        s->threads = calloc((size_t)s->nthreads, sizeof(*s->threads));
        for (int i = 0; i < s->nthreads; i++)
            pthread_create(&s->threads[i], NULL, sws_shared_main, s);
        return 0;
    }
    for (int i = 0; i < s->nloops; i++) {
        sws_worker *w = &s->workers[i];
        int rc = -pthread_create(&w->thread, NULL, sws_worker_main, w);
        if (rc < 0) {
            snprintf(err, errlen, "cannot start loop thread %d: %s", i, strerror(-rc));
            return rc;
        }
        if (s->pinned) {
            w->cpu = s->cpus.list[i];
            if (pin_thread(w->thread, w->cpu) < 0)
                w->cpu = -1;
        }
    }
    return 0;
}

int sws_server_start(sws_server *s, const sws_config *cfg, char *err, size_t errlen) {
    inherited inh;
    int rc = init_server(s, cfg, err, errlen);
    if (rc < 0)
        return rc;
    plan_loops(s, cfg);
    plan_route(s, cfg, &inh);
    if ((rc = sws_route_health_build(s, cfg->routes, err, errlen)) < 0)
        return rc;
    if ((rc = build_tls(s, cfg, err, errlen)) < 0 ||
        (rc = create_workers(s, inh.n > 1, err, errlen)) < 0 ||
        (rc = open_listeners(s, &inh, err, errlen)) < 0)
        return rc;
    defer_accept(s);
    if ((rc = arm_workers(s, err, errlen)) < 0)
        return rc;
    record_listen_fds(s, &inh);
    print_start(s, &inh);
    return start_threads(s, err, errlen);
}

void sws_server_free(sws_server *s) {
    if (s->shared) {
        for (int i = 0; i < s->nthreads; i++)
            pthread_join(s->threads[i], NULL);
        free(s->threads);
    } else {
        for (int i = 0; i < s->nloops; i++)
            if (s->workers[i].thread)
                pthread_join(s->workers[i].thread, NULL);
    }
    if (s->acceptor)
        tl_acceptor_stop(s->acceptor);
    sws_balance_free(s);
    for (int i = 0; i < s->nloops && s->workers; i++)
        sws_worker_free(&s->workers[i]);
    sws_log_files_unref(s->logs);
    if (s->shared_fd >= 0)
        close(s->shared_fd);
    close(s->done_fd);
    free(s->limiter);
    free(s->listen_fds);
    free(s->workers);
    free(s->loops);
    sws_tls_keys_free(s->tls_keys);
    for (int k = 0; k < SWS_ROUTE_SLOTS; k++) {
        sws_health_stop(s->health[k]);
        s->health[k] = NULL;
    }
}
