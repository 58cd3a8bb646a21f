/* A worker: one turnloop loop turned by its own thread (or, in the shared
 * model, by several in turn). It knows loops, listeners and timers; every
 * completion that is not its own goes to its scenario (scenario.h), by the
 * token's tag (token.h). */
#include "access_log.h"
#include "compress.h"
#include "conn.h"
#include "http1.h"
#include "http2.h"
#include "quic_host.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SWS_CQ_BATCH 256
#define SWS_SWEEP_MS 1000

uint64_t sws_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void arm_sweep(sws_worker *w) {
    if (w->sweep_armed || w->done)
        return;
    if (tl_timer(w->loop, w->draining ? 100 : SWS_SWEEP_MS, sws_token(0, SWS_T_SWEEP),
                 &w->sweep_op) == 0)
        w->sweep_armed = true;
}

/* Once a second: expire idle and slow connections (a per-connection timer
 * per request would cost two operations per request), publish loop stats. */
static void on_sweep(sws_worker *w, const tl_completion *e) {
    w->sweep_armed = false;
    w->sweep_cancelled = false;
    if (e->res < 0) {
        /* Cancelled because the worker looked finished; a late adoption may
         * have given it work again. */
        if (!sws_worker_finished(w))
            arm_sweep(w);
        return;
    }
    uint64_t now = tl_loop_now(w->loop);
    if (w->sc.ops->sweep)
        w->sc.ops->sweep(w, &w->sc, now);
    tl_loop_stats st;
    tl_loop_get_stats(w->loop, &st);
    atomic_store_explicit(&w->ctr.turns, st.turns, memory_order_relaxed);
    atomic_store_explicit(&w->ctr.accept_pauses, st.accept_pauses, memory_order_relaxed);
    /* Receives wait in turn for a loop buffer (turnloop counts the waits). */
    atomic_store_explicit(&w->ctr.recv_starved, st.recv_buffer_starved, memory_order_relaxed);
    sws_quic_publish(w);
    if (!sws_worker_finished(w))
        arm_sweep(w);
}

/* The accept of listener li; its token's index says which listener a
 * connection came in on (TLS or not, HTTP/2 or not, the routes it sees). */
static void arm_accept(sws_worker *w, uint32_t li) {
    if (!w->listener[li] || (w->listeners_closing >> li & 1u))
        return;
    tl_op op;
    if (tl_accept(w->loop, w->listener[li], TL_ACCEPT_MULTISHOT, sws_token(li, SWS_T_ACCEPT), &op) <
        0)
        fprintf(stderr, "scalwsd: loop %d: cannot accept on listener %u\n", w->index, li);
}

static void on_accept(sws_worker *w, const tl_completion *e) {
    uint32_t li = sws_token_index(e->token);
    if (e->res >= 0 && e->u.accepted) {
        if (w->handoff) {
            /* Handoff: this loop only accepts; the policy picks the worker. */
            tl_handoff_dispatch(w->handoff, w->loop, e->u.accepted, sws_token(li, SWS_T_ADOPT));
        } else {
            w->sc.ops->open(w, &w->sc, e->u.accepted, li);
        }
    }
    if ((e->flags & TL_CQE_FINAL) && !w->draining && e->res != -ECANCELED)
        arm_accept(w, li);
}

static void dispatch(sws_worker *w, const tl_completion *e) {
    if (!sws_tag_is_worker(sws_token_tag(e->token))) {
        /* The instance the token names (route_inst.c); none: it was freed,
         * which waits until nothing of it is in flight. */
        sws_scenario *sc = sws_inst_of(w, e->token);
        if (sc)
            sc->ops->dispatch(w, sc, e);
        else if (e->flags & TL_CQE_BUFFER)
            tl_buffer_release(w->loop, e->u.buf.id);
        return;
    }
    switch (sws_token_tag(e->token)) {
    case SWS_T_ACCEPT:
        on_accept(w, e);
        break;
    case SWS_T_ADOPT:
        if (e->res >= 0 && e->u.accepted)
            w->sc.ops->open(w, &w->sc, e->u.accepted, sws_token_index(e->token));
        break;
    case SWS_T_SWEEP:
        on_sweep(w, e);
        break;
    case SWS_T_POST:
        if (sws_token_index(e->token) == SWS_POST_RELOAD)
            w->srv->reload_apply(w, e->u.msg.value);
        else if (sws_token_index(e->token) == SWS_POST_LOGS)
            sws_access_log_switch(w, (sws_log_files *)(uintptr_t)e->u.msg.value);
        else if (e->u.msg.value == SWS_MSG_DRAIN || e->u.msg.value == SWS_MSG_FORCE)
            sws_worker_drain(w, e->u.msg.value == SWS_MSG_FORCE);
        break;
    case SWS_T_LISTENER_CLOSE:
        w->listener[sws_token_index(e->token)] = 0;
        w->listeners_closing &= ~(1u << sws_token_index(e->token));
        break;
    case SWS_T_UDP_RECV:
    case SWS_T_UDP_SEND:
    case SWS_T_UDP_FWD:
    case SWS_T_UDP_CLOSE:
    case SWS_T_QUIC_TIMER:
    case SWS_T_QUIC_RELAY:
        sws_quic_dispatch(w, e);
        break;
    default:
        if (e->flags & TL_CQE_BUFFER)
            tl_buffer_release(w->loop, e->u.buf.id);
        break;
    }
}

/* One turn and its dispatch: the completions handled (0 on EINTR), or -1
 * when the worker is finished. */
int sws_worker_turn(sws_worker *w, tl_completion *cq, int cap, int timeout_ms) {
    int n = tl_loop_turn(w->loop, timeout_ms, cq, cap);
    w->now_us = tl_loop_now(w->loop) * 1000;
    if (n < 0 && n != -EINTR) {
        fprintf(stderr, "scalwsd: loop %d: turn failed: %s\n", w->index, tl_strerror(n));
        return -1;
    }
    if (n < 0)
        n = 0;
    if (sws_date_refresh(&w->date))
        sws_insts_date_changed(w);
    w->released = 0;
    for (int i = 0; i < n; i++)
        dispatch(w, &cq[i]);
    if (w->sc.ops->turn_done)
        w->sc.ops->turn_done(w, &w->sc);
    sws_quic_turn_done(w);
    if (w->retired || w->gate_held)
        sws_insts_reap(w);
    if (sws_worker_finished(w)) {
        if (w->sweep_armed && !w->sweep_cancelled) {
            tl_cancel(w->loop, w->sweep_op);
            w->sweep_cancelled = true;
        }
        if (!tl_loop_alive(w->loop)) {
            w->done = true;
            return -1;
        }
    }
    return n;
}

static void signal_done(sws_server *s) {
    uint64_t one = 1;
    ssize_t r = write(s->done_fd, &one, sizeof(one));
    (void)r;
}

void *sws_worker_main(void *arg) {
    sws_worker *w = arg;
    tl_completion cq[SWS_CQ_BATCH];
    atomic_fetch_add(&w->srv->turning, 1);
    while (sws_worker_turn(w, cq, SWS_CQ_BATCH, -1) >= 0) {
    }
    signal_done(w->srv);
    return NULL;
}

/* The shared baseline (event_loops = 0): several threads take turns on one
 * loop. turnloop allows one thread at a time per loop, so the lock is held for
 * a whole turn and its dispatch: leader/followers over one wait set. */
void *sws_shared_main(void *arg) {
    sws_server *s = arg;
    sws_worker *w = &s->workers[0];
    tl_completion cq[SWS_CQ_BATCH];
    atomic_fetch_add(&s->turning, 1);
    for (;;) {
        pthread_mutex_lock(&s->shared_lock);
        bool more = !w->done && sws_worker_turn(w, cq, SWS_CQ_BATCH, 100) >= 0;
        pthread_mutex_unlock(&s->shared_lock);
        if (!more)
            break;
    }
    signal_done(s);
    return NULL;
}

/* The first accepts and sweep of a worker, once its listeners exist. */
void sws_worker_arm(sws_worker *w) {
    for (uint32_t li = 0; li < SWS_LISTENERS_MAX; li++)
        arm_accept(w, li);
    arm_sweep(w);
}

/* Whether some listener speaks HTTP/2: the loop makes its stream tables. */
static bool any_h2(const sws_config *cfg) {
    for (int i = 0; i < cfg->nlisteners; i++)
        if (sws_listener_h2(cfg, i))
            return true;
    return false;
}

/* A worker and its loop, before any thread turns it. nlisten: the listening
 * handles the loop will hold (its handle ceiling counts them). */
int sws_worker_init(sws_server *s, sws_worker *w, int index, int nlisten, char *err,
                    size_t errlen) {
    const sws_config *cfg = s->cfg;
    w->index = index;
    w->srv = s;
    w->cfg = cfg;
    w->limits = cfg->limits;
    w->cpu = -1;
    w->conn_proto = &sws_http1_conn;
    w->h2_proto = any_h2(cfg) ? &sws_http2_conn : NULL;
    int rc = sws_conn_table_init(w);
    if (rc < 0) {
        snprintf(err, errlen, "loop %d: connection table: %s", index, strerror(-rc));
        return rc;
    }
    if (sws_listener_quic(cfg) >= 0 && (rc = sws_quic_reserve(w)) < 0) {
        snprintf(err, errlen, "loop %d: quic: %s", index, strerror(-rc));
        return rc;
    }
    sws_date_init(&w->date);
    w->sc.ops = s->sc_ops;
    w->resp_max = 512;
    /* The access log's files are the server's (log_files.h); the line buffer
     * is the loop's, made now so that a reload that turns the log on
     * allocates nothing on the loop. */
    w->log_buf = malloc(SWS_LOG_LINE_MAX);
    if (!w->log_buf) {
        snprintf(err, errlen, "loop %d: out of memory", index);
        return -ENOMEM;
    }
    w->logs = s->logs;
    tl_loop_options o = {0};
    /* Exactly max_connections plus the listeners: accepting pauses at the
     * ceiling (turnloop#77) and the rest wait in the kernel's queue. */
    o.max_handles = cfg->max_connections + (uint32_t)nlisten + (sws_listener_quic(cfg) >= 0) +
                    sws_scenarios_extra_handles(cfg);
    o.backend = cfg->backend == SWS_BACKEND_EPOLL   ? TL_BACKEND_EPOLL
                : cfg->backend == SWS_BACKEND_URING ? TL_BACKEND_URING
                                                    : TL_BACKEND_AUTO;
    /* EPOLLEXCLUSIVE is an epoll feature: with backend auto, the exclusive
     * route runs on epoll rather than failing (uring refuses it, and says so
     * when asked for by name). */
    for (int li = 0; li < s->nlisteners; li++)
        if (cfg->backend == SWS_BACKEND_AUTO && !s->shared &&
            s->listeners[li].route == SWS_ACCEPT_EXCLUSIVE)
            o.backend = TL_BACKEND_EPOLL;
    o.recv_buffers = SWS_RECV_BUFFERS;
    o.recv_buffer_size = 16384;
    /* GRO's payloads reach 64 KiB: a pool of their own for the quic socket,
     * so that the connections' buffers stay 16 KiB (quic_host.h). */
    if (sws_listener_quic(cfg) >= 0 && cfg->h3.gro)
        o.udp_recv_buffers = SWS_QUIC_GRO_BUFFERS;
    rc = tl_loop_new(&w->loop, &o);
    if (rc < 0) {
        snprintf(err, errlen, "cannot create loop %d (backend %s): %s", index,
                 sws_backend_name(cfg->backend), tl_strerror(rc));
        return rc;
    }
    /* The scenario of every route, the default's first. Its errors are errnos
     * (a scenario that says more has said it on stderr), never turnloop's. */
    rc = sws_insts_init(w);
    if (rc < 0) {
        snprintf(err, errlen, "loop %d: its scenarios could not start: %s", index, strerror(-rc));
        return rc;
    }
    /* Room for four of the scenario's longest answers (reload.c relies on it). */
    w->out_cap = 16384;
    if (w->out_cap < 4 * w->resp_max)
        w->out_cap = 4 * w->resp_max;
    w->outbuf.size = w->out_cap; /* the output pool's blocks (conn.c) */
    return 0;
}

/* After its thread has ended (or never started). */
void sws_worker_free(sws_worker *w) {
    sws_quic_free(w); /* its endpoint writes through the loop: first */
    if (w->loop)
        tl_loop_free(w->loop);
    if (w->sc.ops)
        w->sc.ops->free(w, &w->sc);
    sws_insts_free(w);
    sws_conn_table_free(w);
    sws_compress_free(w);
    sws_log_files_unref(w->logs);
    free(w->log_buf);
}

/* Draining, on the loop: the listeners close, every instance drains (the
 * default's first: it owns the connections). */
void sws_worker_drain(sws_worker *w, bool force) {
    uint64_t now = tl_loop_now(w->loop);
    if (!w->draining) {
        w->draining = true;
        w->drain_at = now;
    }
    if (force)
        w->forced = true;
    for (uint32_t li = 0; li < SWS_LISTENERS_MAX; li++) {
        if (!w->listener[li] || (w->listeners_closing >> li & 1u))
            continue;
        /* Closing the listener makes the kernel refuse new connections. */
        if (tl_close(w->loop, w->listener[li], sws_token(li, SWS_T_LISTENER_CLOSE)) == 0)
            w->listeners_closing |= 1u << li;
        else
            w->listener[li] = 0;
    }
    sws_insts_drain(w, force); /* the default's first: it owns the connections */
    sws_quic_drain(w);
}

bool sws_worker_finished(sws_worker *w) {
    bool open = w->listeners_closing != 0;
    for (int li = 0; li < SWS_LISTENERS_MAX && !open; li++)
        open = w->listener[li] != 0;
    return w->draining && !open && w->sc.ops->finished(w, &w->sc) && sws_insts_finished(w) &&
           sws_quic_finished(w);
}
