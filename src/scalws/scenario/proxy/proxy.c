/* The proxy scenario: an `answer` on the worker's HTTP connection (conn.c:
 * strict parsing, limits, keep-alive, pipelining, TLS, drain, timeouts, the
 * access log) that forwards each request to an upstream taken from this
 * loop's pool and streams the answer back. Memory follows data: an exchange
 * (its two message readers and what goes upstream) is taken from a per-loop
 * free list when a request begins and given back when its answer ends; what
 * the upstream sends comes in loop buffers. An idle client connection costs
 * what a respond one costs, an idle pooled upstream its sws_up_conn.
 * Back-pressure both ways: the client is read only while the exchange has
 * room for its bytes (request_room), the upstream only while the client's
 * output can take what came (at most PX_HELD_MAX loop buffers wait). */
#include "proxy.h"

#include "access_log.h"
#include "http3.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

/* ---- the HTTP connection's hooks ---------------------------------------------- */

static size_t proxy_request_room(sws_worker *w, sws_scenario *sc, sws_exchange *c) {
    (void)w;
    sws_proxy *px = sc->state;
    const px_x *x = slot_of(px, c)->x;
    if (!x)
        return PX_OBUF - PX_SLACK;
    const sws_up_conn *u = x->up == SWS_NIL ? NULL : px->pool.slots[x->up];
    uint32_t taken = u && u->write_inflight ? x->olen : x->olen - x->wpos;
    return taken + PX_SLACK >= PX_OBUF ? 0 : PX_OBUF - PX_SLACK - taken;
}

static int proxy_request_head(sws_worker *w, sws_scenario *sc, sws_exchange *c) {
    (void)w;
    sws_proxy *px = sc->state;
    px_x *x = slot_of(px, c)->x;
    if (!x && !(x = px_x_take(px, c)))
        return 502;
    int st = px_req_head(x, sws_ex_request_head(c));
    if (st > 0) {
        px_x_give(px, x, false);
        return st;
    }
    return 0;
}

static int proxy_request_body(sws_worker *w, sws_scenario *sc, sws_exchange *c, const char *d,
                              size_t len) {
    sws_proxy *px = sc->state;
    px_x *x = slot_of(px, c)->x;
    if (!x)
        return 502;
    if (sws_h1c_body(x->req_streams, px_put_up_cb, x, d, len) < 0) {
        px_x_give(px, x, false);
        return 400;
    }
    if (x->tunnel_open)
        SWS_ADD(w->ctr.tunnel_bytes_up, len);
    return 0;
}

/* The bytes of one read are in: they go up now (not between request_body
 * calls, whose room request_room promised without a write in flight). */
static void proxy_request_flush(sws_worker *w, sws_scenario *sc, sws_exchange *c) {
    sws_proxy *px = sc->state;
    px_x *x = slot_of(px, c)->x;
    if (!x)
        return;
    if (x->up != SWS_NIL && !handshaking(up_of(x)))
        /* Held while the client sends: that wait is not the upstream's. */
        x->up_deadline = tl_loop_now(w->loop) + px_wait_ms(px, x);
    px_flush_up(px, x);
}

static int proxy_request_end(sws_worker *w, sws_scenario *sc, sws_exchange *c) {
    (void)w;
    sws_proxy *px = sc->state;
    px_x *x = slot_of(px, c)->x;
    if (!x)
        return 502;
    if (sws_h1c_body_end(x->req_streams, px_put_up_cb, x) < 0) {
        px_x_give(px, x, false);
        return 400;
    }
    x->req_done = true;
    px_connect_fin(px, x); /* a tunnel's END_STREAM: the upstream's half-close */
    return 0;
}

static int proxy_answer(sws_worker *w, sws_scenario *sc, sws_exchange *c) {
    (void)w;
    sws_proxy *px = sc->state;
    px_x *x = slot_of(px, c)->x;
    /* A tunnel is answered from its head on: its bytes follow the answer. */
    if (!x || !(x->req_done || x->connect) || x->up == SWS_NIL)
        return -EPROTO;
    x->answering = true;
    px_flush_up(px, x);
    /* What the upstream sent already is fed from `more`, once the output
     * before it is written. */
    return SWS_ANSWER_PENDING;
}

static void proxy_more(sws_worker *w, sws_scenario *sc, sws_exchange *c) {
    (void)w;
    sws_proxy *px = sc->state;
    px_x *x = slot_of(px, c)->x;
    if (!x) {
        sws_ex_end(w, c); /* cannot happen: nothing is owed */
        return;
    }
    px->in_more = true;
    px_x_progress(px, x);
    px->in_more = false;
}

/* The client connection ended (its close completed). An exchange cut short
 * is logged with the status it had begun to answer, or nginx's 499 for a
 * client that left before the answer began. */
static void proxy_conn_end(sws_worker *w, sws_scenario *sc, sws_exchange *c) {
    sws_proxy *px = sc->state;
    if (!px)
        return;
    const char *peer = px_peer_of(px, c);
    px_x *x = slot_of(px, c)->x;
    /* A request the connection refused (a strict-parser fault mid-body) has
     * its line already. The socket is closed by now: the peer is the one
     * looked up for X-Forwarded-For. */
    if (x && w->logs && x->head_seen && !sws_ex_refused(c)) {
        if (x->px == px)
            px_log_up(px, x);
        sws_ex_log_peer(w, c, peer[0] ? peer : "-", x->resp_started ? x->resp_status : 499,
                        x->resp_bytes);
        px_log_up_end(px);
    }
    if (!x || x->px != px)
        return;
    sws_up_conn *u = up_of(x);
    if (x->tunnel_open && u) {
        /* RFC 9113 8.5: a tunnel's stream reset (or its connection gone)
         * resets its TCP connection. */
        struct linger abort_close = {1, 0};
        int fd = tl_handle_fd(w->loop, u->h);
        if (fd >= 0)
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort_close, sizeof(abort_close));
    }
    px_x_give(px, x, false);
}

/* ---- upstream completions ------------------------------------------------- */

static void on_up_connect(sws_proxy *px, sws_up_conn *u, const tl_completion *e) {
    px_x *x = px_x_of_up(px, u);
    if (u->state != SWS_UP_CONNECTING || !x)
        return;
    if (e->res < 0) {
        enum sws_up_err k = e->res == -ECONNREFUSED ? SWS_UPE_REFUSED
                            : e->res == -ENETUNREACH || e->res == -EHOSTUNREACH
                                ? SWS_UPE_UNREACHABLE
                            : e->res == -ETIMEDOUT ? SWS_UPE_CONNECT_TIMEOUT
                                                   : SWS_UPE_OTHER;
        px_up_fail(px, x, k, 502);
        return;
    }
    u->state = SWS_UP_BUSY;
    int fd = tl_handle_fd(px->w->loop, u->h);
    int one = 1;
    if (fd >= 0)
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    /* With TLS the handshake is part of connecting: connect_timeout again. */
    x->up_deadline = tl_loop_now(px->w->loop) +
                     (px->pool.tls ? px->pc->connect_timeout_ms : px->pc->read_timeout_ms);
    if (sws_pool_recv(&px->pool, u) < 0) {
        px_up_fail(px, x, SWS_UPE_OTHER, 502);
        return;
    }
    if (px->pool.tls && sws_up_tls_start(&px->pool, u) < 0) {
        px_up_fail(px, x, SWS_UPE_TLS, 502);
        return;
    }
    px_flush_up(px, x);
}

static void on_up_write(sws_proxy *px, sws_up_conn *u, const tl_completion *e) {
    u->write_inflight = false;
    sws_up_tls_written(&px->pool, u);
    px_x *x = px_x_of_up(px, u);
    if (u->state != SWS_UP_BUSY || !x)
        return;
    if (e->res < 0) {
        px_up_fail(px, x, SWS_UPE_RESET, 502);
        return;
    }
    x->wpos += u->wlen;
    u->wlen = 0;
    if (x->replay_over && x->wpos == x->olen)
        x->olen = x->wpos = 0; /* no copy is kept: the room comes back at once */
    if (!handshaking(u))       /* a handshake has connect_timeout from the connect, writes or not */
        x->up_deadline = tl_loop_now(px->w->loop) + px_wait_ms(px, x);
    px_flush_up(px, x);
    px_connect_fin(px, x);
    if (!x->req_done) {
        /* The client was held for the upstream's sake: not its timeout. */
        sws_ex_wait(px->w, x->c, tl_loop_now(px->w->loop) + px->w->cfg->header_timeout_ms);
        sws_ex_more(px->w, x->c);
    }
}

/* The multishot receive of an upstream connection: the watch while it is
 * idle, the response while it is busy. Every buffer is given back here or
 * held by the exchange. */
static void on_up_recv(sws_proxy *px, sws_up_conn *u, const tl_completion *e) {
    sws_worker *w = px->w;
    bool has_buf = (e->flags & TL_CQE_BUFFER) != 0;
    bool final = (e->flags & TL_CQE_FINAL) != 0;
    if (final)
        u->read_armed = false;
    px_x *x = u->state == SWS_UP_BUSY ? px_x_of_up(px, u) : NULL;
    if (!x) {
        if (has_buf) {
            tl_buffer_release(w->loop, e->u.buf.id);
            w->released++;
        }
        if (u->state == SWS_UP_IDLE && !sws_pool_idle_cancelled(&px->pool, u, e))
            sws_pool_idle_event(&px->pool, u); /* closed or spoke while idle */
        else if (u->state == SWS_UP_PARKING && final)
            sws_pool_park(&px->pool, u);
        else if (u->state == SWS_UP_BUSY)
            sws_pool_release(&px->pool, u, false); /* no exchange: cannot happen */
        return;
    }
    if (u->owner != w->loop)
        SWS_ADD(px->pool.st->foreign_loop_uses, 1);
    if (has_buf && e->res > 0 && u->tls) {
        /* Ciphertext waits in the engine, not in the loop's buffer; a
         * response byte is counted once decrypted (a close_notify on a pooled
         * connection is no answer: the request is retried as after a FIN). */
        if (sws_up_tls_established(u))
            x->up_deadline = tl_loop_now(w->loop) + px_wait_ms(px, x);
        int rc = sws_up_tls_feed(u, e->u.buf.data, (size_t)e->res);
        tl_buffer_release(w->loop, e->u.buf.id);
        w->released++;
        if (rc < 0) {
            px_up_fail(px, x, SWS_UPE_OTHER, 502);
            return;
        }
    } else if (has_buf && e->res > 0) {
        u->got_bytes = true;
        x->up_deadline = tl_loop_now(w->loop) + px_wait_ms(px, x);
        if (sws_held_append(w, &x->hhead, &x->htail, e->u.buf.id, e->u.buf.data, 0,
                            (uint32_t)e->res) == SWS_NIL) {
            tl_buffer_release(w->loop, e->u.buf.id); /* cannot happen: one node per buffer */
            px_up_fail(px, x, SWS_UPE_OTHER, 502);
            return;
        }
        x->hcount++;
    } else if (has_buf) {
        tl_buffer_release(w->loop, e->u.buf.id);
        w->released++;
    }
    if (final) {
        if (e->res == -ENOBUFS)
            u->starved = true; /* the tick (or the next progress) receives again */
        else if (e->res == -ECANCELED)
            ; /* paused: x_progress resumes it */
        else if (e->res <= 0) {
            x->has_end = true;
            x->up_end = e->res;
        } else if (!u->recv_paused && sws_pool_recv(&px->pool, u) < 0)
            u->starved = true;
    }
    sws_exchange *c = x->c;
    if (!px_x_progress(px, x) && x->answering)
        sws_ex_more(w, c);
}

/* ---- the loop's rhythm ------------------------------------------------------ */

static void arm_tick(sws_proxy *px) {
    if (px->tick_armed)
        return;
    tl_op op;
    if (tl_timer(px->w->loop, PX_TICK_MS, sws_token_of(px->sc->id, 0, SWS_T_PX_TICK), &op) == 0)
        px->tick_armed = true;
}

static void park_pending(sws_proxy *px) {
    for (uint32_t i = 0; i < px->pool.nslots && px->pool.nparking; i++) {
        sws_up_conn *u = px->pool.slots[i];
        if (u && u->state == SWS_UP_PARKING)
            sws_pool_park(&px->pool, u);
    }
}

/* Ten times a second: upstream timeouts (504), writes that could not start,
 * starved receives; once a second the pool's idle expiry and the free list.
 * While an exchange waits for its upstream, the upstream's timeouts rule:
 * the connection's own deadline is kept past them. */
static void on_tick(sws_proxy *px) {
    sws_worker *w = px->w;
    px->tick_armed = false;
    uint64_t now = tl_loop_now(w->loop);
    for (px_x *x = px->live, *next; x; x = next) {
        next = x->next;
        sws_up_conn *u = up_of(x);
        if (!u)
            continue;
        if (x->wfail) {
            px_up_fail(px, x, SWS_UPE_RESET, 502);
        } else if (now >= x->up_deadline && x->tunnel_open) {
            SWS_ADD(w->ctr.tunnels_idle, 1); /* tunnel_idle_timeout: no byte either way */
            px_cut(px, x);
        } else if (now >= x->up_deadline) {
            px_up_fail(px, x,
                       u->state == SWS_UP_CONNECTING ? SWS_UPE_CONNECT_TIMEOUT
                       : handshaking(u)              ? SWS_UPE_TLS
                                                     : SWS_UPE_READ_TIMEOUT,
                       504);
        } else {
            if (x->answering)
                sws_ex_wait(px->w, x->c, now + 2 * PX_TICK_MS);
            if (u->starved && !u->read_armed)
                sws_pool_recv(&px->pool, u);
        }
    }
    if (px->pool.nparking)
        park_pending(px);
    /* A route removed by a reload keeps no idle connection: it gets no
     * request any more. */
    bool ending = w->draining || px->sc->retired;
    if (px->sc->retired)
        px->pool.draining = true;
    if (now >= px->last_expire + 1000 || ending) {
        px->last_expire = now;
        sws_pool_expire(&px->pool, now);
        px_x_trim(px);
    }
    bool idle = !px->live && px->pool.live == 0;
    if (!(px->sc->retired ? idle : w->draining && !w->active && idle))
        arm_tick(px);
}

static void proxy_dispatch(sws_worker *w, sws_scenario *sc, const tl_completion *e) {
    sws_proxy *px = sc->state;
    unsigned tag = sws_token_tag(e->token);
    if (tag < SWS_T_UP_FIRST && tag != SWS_T_PX_TICK) {
        sws_conn_dispatch(w, sc, e);
        return;
    }
    if (tag == SWS_T_PX_TICK) {
        on_tick(px);
        return;
    }
    uint32_t i = sws_token_index(e->token);
    sws_up_conn *u = tag <= SWS_T_UP_LAST ? sws_pool_conn(&px->pool, i) : NULL;
    if (!u || tag == SWS_T_UP_CLOSE) {
        if (e->flags & TL_CQE_BUFFER)
            tl_buffer_release(w->loop, e->u.buf.id);
        if (tag == SWS_T_UP_CLOSE)
            sws_pool_closed(&px->pool, i);
        return;
    }
    struct px_tunnel *t = px_tunnel_of_up(px, u);
    if (t) {
        px_tunnel_dispatch(px, t, u, e);
        return;
    }
    if (tag == SWS_T_UP_READ) {
        on_up_recv(px, u, e);
        return;
    }
    if (e->flags & TL_CQE_BUFFER)
        tl_buffer_release(w->loop, e->u.buf.id); /* never asked for; kept safe */
    if (u->owner != w->loop)
        SWS_ADD(px->pool.st->foreign_loop_uses, 1);
    if (tag == SWS_T_UP_CONNECT)
        on_up_connect(px, u, e);
    else if (tag == SWS_T_UP_WRITE)
        on_up_write(px, u, e);
}

static uint32_t pool_handles(const sws_proxy_config *pc) {
    return pc->pool_per_loop * (uint32_t)pc->nupstreams;
}

/* One upstream connection per client, whichever proxy route serves it, one
 * more closing during a retry, and each proxy route's idle pool. */
/* Upstream connections: two per client exchange under way (one being
 * connected, one being retired), an HTTP/2 or HTTP/3 stream being one too. */
static uint32_t proxy_exchange_handles(const sws_config *cfg) {
    return (cfg->max_connections + (cfg->http2 ? cfg->h2.streams_per_loop : 0) +
            (sws_listener_quic(cfg) >= 0 ? SWS_H3_DEFAULT_STREAMS : 0)) *
           2;
}

static uint32_t proxy_extra_handles(const sws_config *cfg) {
    const sws_routes *t = cfg->routes;
    if (!t)
        return cfg->scenario == SWS_SCENARIO_PROXY
                   ? proxy_exchange_handles(cfg) + pool_handles(&cfg->proxy)
                   : 0;
    uint32_t n = 0;
    bool any = false;
    for (int i = 0; i < t->n; i++) {
        if (t->r[i].cfg.scenario == SWS_SCENARIO_PROXY) {
            any = true;
            n += pool_handles(&t->r[i].cfg.proxy);
        }
    }
    return any ? proxy_exchange_handles(cfg) + n : 0;
}

/* The route's upstream health record and counters (the server keeps both
 * by the route's stat slot: a reload's new instance of a route continues
 * them). */
static sws_up_health *route_health(const sws_worker *w, const sws_scenario *sc) {
    return w->srv ? w->srv->health[sc->route->stat_slot] : NULL;
}

static int proxy_init(sws_worker *w, sws_scenario *sc) {
    sws_proxy *px = calloc(1, sizeof(*px));
    if (!px)
        return -ENOMEM;
    sc->state = px;
    px->w = w;
    px->sc = sc;
    px->pc = &sc->cfg->proxy;
    if (!w->px_shared) {
        w->px_shared = calloc(1, sizeof(*w->px_shared) + w->nexchanges * sizeof(px_slot));
        if (!w->px_shared)
            return -ENOMEM;
        w->px_shared->nslots = w->nexchanges;
    }
    px->sh = w->px_shared;
    px->sh->refs++;
    sws_up_stats *st = sws_worker_upstats(w, sc->route->stat_slot);
    if (!st)
        return -ENOMEM;
    w->resp_max = PX_RESP_MAX;
    int rc = sws_pool_init(&px->pool, w->loop, px->pc,
                           proxy_exchange_handles(w->cfg) + pool_handles(px->pc), sc->id, st);
    if (rc == 0)
        rc = sws_up_tls_pool_init(&px->pool, sc->cfg->up_tls);
    if (rc < 0)
        return rc;
    sws_pick_init(&px->pick, (uint64_t)now_us() * 2654435761u + (uint64_t)w->index + 1);
    px->health = route_health(w, sc);
    arm_tick(px);
    return 0;
}

static void proxy_free(sws_worker *w, sws_scenario *sc) {
    sws_proxy *px = sc->state;
    if (!px)
        return;
    while (px->live) {
        px_x *x = px->live;
        px->live = x->next;
        free(x);
    }
    px_tunnel_free_all(px);
    while (px->free) {
        px_x *x = px->free;
        px->free = x->next;
        free(x);
    }
    if (px->sh && --px->sh->refs == 0) {
        free(px->sh);
        w->px_shared = NULL;
    }
    sws_pool_free(&px->pool);
    free(px);
    sc->state = NULL;
}

static void proxy_drain(sws_worker *w, sws_scenario *sc, bool force) {
    sws_proxy *px = sc->state;
    sws_conn_drain(w, sc, force);
    if (!px)
        return;
    px->pool.draining = true;
    sws_pool_expire(&px->pool, tl_loop_now(w->loop));
    arm_tick(px);
}

/* A retired instance also waits for its tick: a completion must never reach
 * the next instance given its id. */
static bool proxy_finished(const sws_worker *w, const sws_scenario *sc) {
    const sws_proxy *px = sc->state;
    return sws_conn_finished(w, sc) &&
           (!px || (px->pool.live == 0 && !px->live && !(sc->retired && px->tick_armed)));
}

/* After a reload switched w->cfg: the pool reads its upstreams and timeouts
 * from the new one; the connections learn whether the access log is on. */
static void proxy_reload_commit(sws_worker *w, sws_scenario *sc) {
    sws_proxy *px = sc->state;
    sws_conn_reload_commit(w, sc);
    if (!px)
        return;
    px->pc = &sc->cfg->proxy;
    px->pool.cfg = px->pc;
    /* The same tls keys (they need a restart): the new table's context. */
    if (px->pool.tls && sc->cfg->up_tls)
        px->pool.tls = sc->cfg->up_tls;
    px->health = route_health(w, sc);
}

const sws_scenario_ops sws_proxy_ops = {
    .name = "proxy",
    .extra_handles = proxy_extra_handles,
    .init = proxy_init,
    .free = proxy_free,
    .open = sws_conn_open,
    .dispatch = proxy_dispatch,
    .answer = proxy_answer,
    .more = proxy_more,
    .request_room = proxy_request_room,
    .request_head = proxy_request_head,
    .request_body = proxy_request_body,
    .request_end = proxy_request_end,
    .request_flush = proxy_request_flush,
    .upgrades = true,
    .conn_end = proxy_conn_end,
    .turn_done = sws_conn_turn_done,
    .sweep = sws_conn_sweep,
    .drain = proxy_drain,
    .finished = proxy_finished,
    .reload_commit = proxy_reload_commit,
    .metrics = sws_proxy_metrics,
};
