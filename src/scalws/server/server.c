/* Server start-up and shutdown: how many loops, which accept route, which
 * listening sockets (bound here, or inherited from systemd or an older
 * scalwsd), then the workers and their threads. Runs on the main thread
 * before any worker turns; sws_server_start is its steps in order. */
#include "limiter.h"
#include "log_files.h"
#include "quic_handover.h"
#include "quic_host.h"
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

static int open_shared_fd(const sws_addr *addr) {
    int fd = socket(addr->ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (addr->ss.ss_family == AF_INET6) /* [::]:80 beside 0.0.0.0:80, as nginx */
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    if (bind(fd, (const struct sockaddr *)&addr->ss, addr->len) < 0 || listen(fd, SOMAXCONN) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    return fd;
}

/* SO_REUSEPORT lets another process of the same user join a port that is in
 * use, which would hide a second scalwsd behind the first. A plain bind tells
 * a busy port from a free one first. */
static int probe_busy(const sws_addr *addr) {
    int fd = socket(addr->ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1, rc = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (addr->ss.ss_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    if (bind(fd, (const struct sockaddr *)&addr->ss, addr->len) < 0)
        rc = -errno;
    close(fd);
    return rc;
}

/* Step 1: the server's own resources: CPUs, the done eventfd. */
static int init_server(sws_server *s, const sws_config *cfg, char *err, size_t errlen) {
    /* What main set for the server stays: the inherited sockets, the reload hook. */
    const int *inherited_fds = s->inherited_fds, *inherited_of = s->inherited_of;
    int ninherited = s->ninherited;
    const struct sws_named_fd *inherited_named = s->inherited_named;
    int ninherited_named = s->ninherited_named;
    void (*reload_apply)(sws_worker *, uint64_t) = s->reload_apply;
    memset(s, 0, sizeof(*s));
    s->inherited_fds = inherited_fds;
    s->inherited_of = inherited_of;
    s->ninherited = ninherited;
    s->inherited_named = inherited_named;
    s->ninherited_named = ninherited_named;
    s->reload_apply = reload_apply;
    s->cfg = cfg;
    s->sc_ops = sws_scenario_ops_of(cfg->routes->r[0].cfg.scenario);
    for (int i = 0; i < cfg->routes->n; i++)
        s->kinds_at_start |= 1u << cfg->routes->r[i].cfg.scenario;
    s->extra_handles = sws_scenarios_extra_handles(cfg);
    if (sws_route_slots_assign(cfg->routes, err, errlen) < 0)
        return -EINVAL;
    s->nlisteners = cfg->nlisteners;
    s->listeners = calloc((size_t)cfg->nlisteners, sizeof(*s->listeners));
    if (!s->listeners) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    for (int li = 0; li < s->nlisteners; li++)
        s->listeners[li].shared_fd = -1;
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

/* How well inherited socket got fits listener want: 2 the same address and
 * port, 1 the same address where want's port is 0 (the kernel's choice,
 * which a SIGUSR2 passes on bound), 0 not at all. */
static int addr_fit(const sws_addr *want, const struct sockaddr_storage *got) {
    if (want->ss.ss_family != got->ss_family)
        return 0;
    in_port_t wp, gp;
    if (got->ss_family == AF_INET) {
        const struct sockaddr_in *w = (const void *)&want->ss, *g = (const void *)got;
        if (w->sin_addr.s_addr != g->sin_addr.s_addr)
            return 0;
        wp = w->sin_port;
        gp = g->sin_port;
    } else {
        const struct sockaddr_in6 *w = (const void *)&want->ss, *g = (const void *)got;
        if (memcmp(&w->sin6_addr, &g->sin6_addr, sizeof(w->sin6_addr)) != 0)
            return 0;
        wp = w->sin6_port;
        gp = g->sin6_port;
    }
    return wp == gp ? 2 : wp == 0 ? 1 : 0;
}

/* Step 2b: each inherited socket (socket activation, or the process a
 * SIGUSR2 replaced) to its listener. One listener takes them all, whatever
 * their address (as before there were several); with several, each is
 * matched by its bound address: the listener of that address and port, else
 * (a SIGUSR2's socket, named "http-N") one of that address and port 0, told
 * apart by the index N. A socket no listener fits is
 * refused: serving it on the wrong terms (plain for tls) would be worse. */
static int assign_inherited(sws_server *s, const sws_config *cfg, char *err, size_t errlen) {
    int n = s->ninherited;
    for (int li = 0; li < s->nlisteners; li++)
        if (!(s->listeners[li].inherited = calloc((size_t)(n ? n : 1), sizeof(int)))) {
            snprintf(err, errlen, "out of memory");
            return -ENOMEM;
        }
    for (int k = 0; k < n; k++) {
        int fd = s->inherited_fds[k], li = cfg->nlisteners == 1 ? 0 : -1;
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        if (li < 0 && getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
            int named = s->inherited_of ? s->inherited_of[k] : -1, first = -1, empty = -1;
            for (int c = 0; c < cfg->nlisteners && li < 0; c++) {
                if (cfg->listeners[c].quic)
                    continue; /* inherited sockets are TCP listeners' */
                int fit = addr_fit(&cfg->listeners[c].addr, &ss);
                if (fit == 1 && named < 0)
                    continue; /* systemd binds no port 0: that is a SIGUSR2's socket */
                if (fit == 2 || (fit == 1 && c == named))
                    li = c;
                else if (fit == 1 && first < 0)
                    first = c;
                if (fit == 1 && empty < 0 && !s->listeners[c].ninherited)
                    empty = c;
            }
            if (li < 0)
                li = empty >= 0 ? empty : first;
        }
        if (li < 0) {
            char text[SWS_ADDR_MAX];
            sws_sockname_text(fd, text, sizeof(text));
            snprintf(err, errlen,
                     "inherited socket %s (fd %d) is none of the [server] listen lines: add one "
                     "for it, or take it out of the socket unit",
                     text, fd);
            return -EINVAL;
        }
        sws_listener *L = &s->listeners[li];
        L->inherited[L->ninherited++] = fd;
    }
    return 0;
}

/* Step 3: each listener's accept route, as configured unless inherited
 * sockets decide. Several inherited sockets of one listener: each is a queue
 * of its own (one per loop of a reuse_port parent), so every one gets a
 * loop, or connections queued on it would be lost when the parent closes its
 * copy. */
static void plan_route(sws_server *s, const sws_config *cfg) {
    sws_accept_route route = s->shared ? SWS_ACCEPT_ACCEPTOR : cfg->accept;
    int many = 0;
    for (int li = 0; li < s->nlisteners; li++) {
        sws_listener *L = &s->listeners[li];
        if (L->ninherited > 1 && s->shared) {
            fprintf(stderr, "scalwsd: %d inherited sockets; the shared model serves the first\n",
                    L->ninherited);
            for (int i = 1; i < L->ninherited; i++)
                close(L->inherited[i]); /* not left open and never accepted: refused instead */
            L->ninherited = 1;
        }
        many = L->ninherited > many ? L->ninherited : many;
    }
    /* The quic listener's sockets, one per loop of the old process: each is
     * an index of the kernel's group that its connection IDs name. */
    const int *quic_fds;
    int nquic = sws_quic_handover_sockets(s, &quic_fds);
    if (!s->shared && nquic > many)
        many = nquic;
    if (many > 1 && s->nloops < many)
        s->nloops = s->nthreads = many;
    for (int li = 0; li < s->nlisteners; li++) {
        sws_listener *L = &s->listeners[li];
        sws_accept_route r = route;
        if (L->ninherited > 1)
            r = L->ninherited == s->nloops ? SWS_ACCEPT_REUSE_PORT : SWS_ACCEPT_HERD;
        else if (L->ninherited == 1 && (r == SWS_ACCEPT_REUSE_PORT || r == SWS_ACCEPT_HANDOFF ||
                                        r == SWS_ACCEPT_REUSE_PORT_CPU))
            /* One inherited socket cannot be bound once per loop: share it,
             * with EPOLLEXCLUSIVE unless io_uring was asked for by name (it
             * has no wake-one; blocking acceptor threads serve it then). */
            r = cfg->backend != SWS_BACKEND_URING ? SWS_ACCEPT_EXCLUSIVE : SWS_ACCEPT_ACCEPTOR;
        L->route = r;
    }
    s->route = s->listeners[0].route;
    s->pinned = !s->shared && s->nloops <= s->cpus.in_mask;
}

/* Whether loop i holds a handle of listener li. */
static bool listener_on_loop(const sws_server *s, int li, int i) {
    const sws_listener *L = &s->listeners[li];
    if (s->cfg->listeners[li].quic)
        return false; /* its UDP socket is no accepting handle (quic_host.c) */
    return L->ninherited > 1 || sws_balance_accepts(s, L->route, i);
}

/* Step 3b: a tls listener's contexts: one SSL_CTX per loop (its own session
 * cache), one ticket key ring for all, so a ticket resumes on whichever loop
 * the kernel picks. The server owns the initial config: this is its only
 * write to it. */
static int build_tls(sws_server *s, const sws_config *cfg, char *err, size_t errlen) {
    /* listen_tls: some listener speaks TLS (listeners.c). */
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
static int create_workers(sws_server *s, char *err, size_t errlen) {
    s->workers = calloc((size_t)s->nloops, sizeof(*s->workers));
    s->loops = calloc((size_t)s->nloops, sizeof(*s->loops));
    size_t nfds = (size_t)s->nloops * (size_t)s->nlisteners;
    s->listen_fds = calloc(nfds, sizeof(*s->listen_fds));
    s->listen_fd_of = calloc(nfds, sizeof(*s->listen_fd_of));
    if (!s->workers || !s->loops || !s->listen_fds || !s->listen_fd_of) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    /* The access log files: one reference per loop and the control thread's. */
    int rc = sws_log_files_open(s->cfg->routes, NULL, s->nloops + 1, &s->logs, err, errlen);
    if (rc < 0)
        return rc;
    for (int i = 0; i < s->nloops; i++) {
        int nlisten = 0;
        for (int li = 0; li < s->nlisteners; li++)
            nlisten += listener_on_loop(s, li, i);
        rc = sws_worker_init(s, &s->workers[i], i, nlisten, err, errlen);
        s->workers[i].accepts = nlisten > 0;
        s->workers[i].fed_by = s->route == SWS_ACCEPT_ACCEPTOR ? -1 : i;
        if (rc < 0)
            return rc; /* sws_worker_init said which part failed */
        s->loops[i] = s->workers[i].loop;
    }
    s->backend = tl_loop_backend(s->loops[0]);
    return 0;
}

/* Step 5: listener li's handles, by its route (or its inherited sockets). */
static int open_listener(sws_server *s, int li, char *err, size_t errlen) {
    const sws_listener_cfg *lc = &s->cfg->listeners[li];
    sws_listener *L = &s->listeners[li];
    if (lc->quic)
        return sws_quic_start(s, li, err, errlen);
    const struct sockaddr *addr = (const struct sockaddr *)&lc->addr.ss;
    int rc = 0;
    if (L->ninherited > 1) {
        /* Loop i serves inherited socket i % n: all of them when counts match. */
        for (int i = 0; i < s->nloops && rc == 0; i++)
            rc = tl_listen_shared(s->loops[i], L->inherited[i % L->ninherited], 0,
                                  &s->workers[i].listener[li]);
        for (int i = 0; i < L->ninherited; i++)
            close(L->inherited[i]); /* the loops hold duplicates */
    } else {
        switch (L->route) {
        case SWS_ACCEPT_REUSE_PORT: {
            tl_handle hs[s->nloops];
            rc = probe_busy(&lc->addr);
            if (rc < 0)
                break;
            rc = tl_route_reuse_port(s->loops, s->nloops, addr, lc->addr.len, 0, hs);
            if (rc < 0)
                break;
            for (int i = 0; i < s->nloops; i++)
                s->workers[i].listener[li] = hs[i];
            break;
        }
        case SWS_ACCEPT_HANDOFF:
        case SWS_ACCEPT_REUSE_PORT_CPU:
            rc = probe_busy(&lc->addr); /* both may bind with SO_REUSEPORT (several acceptors) */
            if (rc == 0 &&
                (rc = sws_balance_listen(s, L->route, li, addr, lc->addr.len, err, errlen)) < 0 &&
                err[0])
                return rc; /* balance.c said why */
            break;
        case SWS_ACCEPT_EXCLUSIVE:
        case SWS_ACCEPT_HERD:
        case SWS_ACCEPT_ACCEPTOR:
            rc = L->ninherited == 1 ? L->inherited[0] : open_shared_fd(&lc->addr);
            if (rc < 0)
                break;
            L->shared_fd = rc;
            rc = 0;
            if (L->route == SWS_ACCEPT_ACCEPTOR)
                break;
            for (int i = 0; i < s->nloops && rc == 0; i++)
                rc = tl_listen_shared(s->loops[i], L->shared_fd,
                                      L->route == SWS_ACCEPT_EXCLUSIVE ? TL_SHARED_EXCLUSIVE : 0,
                                      &s->workers[i].listener[li]);
            break;
        }
    }
    if (rc < 0)
        snprintf(err, errlen, "%s: cannot listen on %s (accept %s): %s", lc->origin, lc->addr.text,
                 sws_accept_name(L->route),
                 rc == -EADDRINUSE ? "address already in use" : tl_strerror(rc));
    return rc;
}

static int open_listeners(sws_server *s, char *err, size_t errlen) {
    for (int li = 0; li < s->nlisteners; li++) {
        int rc = open_listener(s, li, err, errlen);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* Step 6: TCP_DEFER_ACCEPT. The client speaks first in HTTP: let the kernel
 * hand over a connection with its request, so the first read never finds
 * nothing (nginx's listen ... deferred). Best effort: a refusal is harmless. */
static void defer_accept(sws_server *s) {
    if (!s->cfg->defer_accept)
        return;
    int secs = 1;
    for (int li = 0; li < s->nlisteners; li++) {
        if (s->listeners[li].shared_fd >= 0)
            setsockopt(s->listeners[li].shared_fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &secs,
                       sizeof(secs));
        for (int i = 0; i < s->nloops; i++) {
            tl_handle h = s->workers[i].listener[li];
            int fd = h ? tl_handle_fd(s->loops[i], h) : -1;
            if (fd >= 0)
                setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &secs, sizeof(secs));
        }
    }
}

/* Step 7: every loop's first accept and sweep; the acceptor threads. */
static int arm_workers(sws_server *s, char *err, size_t errlen) {
    for (int i = 0; i < s->nloops; i++)
        sws_worker_arm(&s->workers[i]);
    for (int li = 0; li < s->nlisteners; li++) {
        sws_listener *L = &s->listeners[li];
        if (L->route != SWS_ACCEPT_ACCEPTOR || s->cfg->listeners[li].quic)
            continue;
        /* The token's index is the listener, as an accept's (worker.c). */
        int rc = tl_acceptor_start(&L->acceptor, L->shared_fd, s->nthreads, s->loops, s->nloops,
                                   TL_HANDOFF_LEAST_LOADED, sws_token((uint32_t)li, SWS_T_ADOPT));
        if (rc < 0) {
            snprintf(err, errlen, "cannot start acceptor threads: %s", tl_strerror(rc));
            return rc;
        }
    }
    return 0;
}

/* Step 8: what a SIGUSR2 re-exec passes on: each distinct listening socket
 * once, with its listener's index; and what each listener bound. */
static void record_listen_fds(sws_server *s) {
    for (int li = 0; li < s->nlisteners; li++) {
        sws_listener *L = &s->listeners[li];
        int first = s->nlisten_fds;
        if (s->cfg->listeners[li].quic) {
            /* Its text is the socket's (quic_host.c); a SIGUSR2 passes its
             * sockets by name (quic_handover.c), not as HTTP listeners. */
            free(L->inherited);
            L->inherited = NULL;
            continue;
        }
        if (L->shared_fd >= 0) {
            s->listen_fd_of[s->nlisten_fds] = li;
            s->listen_fds[s->nlisten_fds++] = L->shared_fd;
        } else {
            int upto = L->ninherited > 1 ? L->ninherited : s->nloops;
            for (int i = 0; i < s->nloops && i < upto; i++) {
                if (!s->workers[i].listener[li])
                    continue;
                s->listen_fd_of[s->nlisten_fds] = li;
                s->listen_fds[s->nlisten_fds++] =
                    tl_handle_fd(s->loops[i], s->workers[i].listener[li]);
            }
        }
        /* What was bound, not what was asked: port 0 is the kernel's choice. */
        if (s->nlisten_fds == first ||
            sws_sockname_text(s->listen_fds[first], L->text, sizeof(L->text)) < 0)
            snprintf(L->text, sizeof(L->text), "%s", s->cfg->listeners[li].addr.text);
        free(L->inherited); /* start-up's only */
        L->inherited = NULL;
    }
    snprintf(s->listen_text, sizeof(s->listen_text), "%s", s->listeners[0].text);
}

/* Step 9: the start line on stderr (tests and operators read it). */
static void print_start(const sws_server *s) {
    const sws_config *cfg = s->cfg;
    char accept_text[160];
    sws_balance_describe(s, accept_text, sizeof(accept_text));
    char inherited_text[64] = "";
    if (s->ninherited > 0)
        snprintf(inherited_text, sizeof(inherited_text), " (%d activated socket%s, fd 3%s)",
                 s->ninherited, s->ninherited == 1 ? "" : "s", s->ninherited == 1 ? "" : "..");
    /* Every listener, the first as before ("listening on ADDR"), "tls" after
     * a tls one's address once there are several. */
    char listening[SWS_LISTENERS_MAX * (SWS_ADDR_MAX + 8)];
    size_t off = 0;
    for (int li = 0; li < s->nlisteners && off < sizeof(listening); li++)
        off += (size_t)snprintf(listening + off, sizeof(listening) - off, "%s%s%s", li ? ", " : "",
                                s->listeners[li].text,
                                s->nlisteners > 1 && cfg->listeners[li].tls ? " tls"
                                : cfg->listeners[li].quic                   ? " quic"
                                                                            : "");
    fprintf(stderr,
            "scalwsd %s: %s%d loop%s (%s; affinity %d CPU%s, quota %s%d), %d thread%s, accept %s, "
            "backend %s, listening on %s%s\n",
            SWS_VERSION, s->shared ? "shared model, " : "", s->nloops, s->nloops == 1 ? "" : "s",
            cfg->event_loops < 0 ? "auto" : "configured", s->cpus.in_mask,
            s->cpus.in_mask == 1 ? "" : "s", s->cpus.quota_cpus ? "" : "none/", s->cpus.quota_cpus,
            s->nthreads, s->nthreads == 1 ? "" : "s", accept_text, s->backend, listening,
            inherited_text);
    if (!s->pinned && !s->shared)
        fprintf(stderr, "scalwsd: %d loops on %d CPUs: loops are not pinned\n", s->nloops,
                s->cpus.in_mask);
    for (int li = 0; cfg->tls_server && li < s->nlisteners; li++) {
        if (!cfg->listeners[li].tls)
            continue;
        sws_tls_info ti;
        sws_tls_server_info(cfg->tls_server, &ti);
        fprintf(stderr,
                "scalwsd: tls on %s: %s, ALPN %s, memory BIOs (kTLS not used; kernel tls "
                "module %s), tickets %s, session cache %u per loop, OCSP stapling %s\n",
                s->listeners[li].text, ti.protocols,
                sws_listener_h2(cfg, li) ? "h2 http/1.1" : "http/1.1",
                ti.ktls_kernel ? "present" : "absent", ti.tickets ? "on" : "off", ti.session_cache,
                ti.ocsp ? "on" : "off");
    }
    if (cfg->tls_server)
        sws_tls_print_certs(stderr, cfg->tls_server);
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
    int rc = init_server(s, cfg, err, errlen);
    if (rc < 0)
        return rc;
    plan_loops(s, cfg);
    if ((rc = sws_quic_handover_init(s, err, errlen)) < 0)
        return rc;
    if (sws_listener_quic(cfg) < 0)
        sws_quic_handover_drop_sockets(s); /* no quic listener takes them */
    if ((rc = assign_inherited(s, cfg, err, errlen)) < 0)
        return rc;
    plan_route(s, cfg);
    if ((rc = sws_route_health_build(s, cfg->routes, err, errlen)) < 0)
        return rc;
    if ((rc = build_tls(s, cfg, err, errlen)) < 0 || (rc = create_workers(s, err, errlen)) < 0 ||
        (rc = open_listeners(s, err, errlen)) < 0)
        return rc;
    defer_accept(s);
    if ((rc = arm_workers(s, err, errlen)) < 0)
        return rc;
    record_listen_fds(s);
    print_start(s);
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
    for (int li = 0; li < s->nlisteners; li++)
        if (s->listeners[li].acceptor)
            tl_acceptor_stop(s->listeners[li].acceptor);
    sws_quic_handover_free(s); /* its thread posts to the loops: before they go */
    sws_balance_free(s);
    for (int i = 0; i < s->nloops && s->workers; i++)
        sws_worker_free(&s->workers[i]);
    sws_log_files_unref(s->logs);
    for (int li = 0; li < s->nlisteners; li++) {
        if (s->listeners[li].shared_fd >= 0)
            close(s->listeners[li].shared_fd);
        free(s->listeners[li].inherited);
    }
    free(s->listeners);
    close(s->done_fd);
    free(s->limiter);
    free(s->listen_fds);
    free(s->listen_fd_of);
    free(s->workers);
    free(s->loops);
    sws_tls_keys_free(s->tls_keys);
    for (int k = 0; k < SWS_ROUTE_SLOTS; k++) {
        sws_health_stop(s->health[k]);
        s->health[k] = NULL;
    }
}
