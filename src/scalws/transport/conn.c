/* The HTTP connection: what respond (and every scenario that answers HTTP
 * requests) runs on. Bytes come in through one multishot receive into loop
 * buffers (on_recv) and go out through one write of the connection's output
 * buffer (flush); the parser, limits, keep-alive, pipelining, lingering close
 * and the access log are here, the answer is the scenario's (`answer`).
 * A slot is reused only after its TL_OP_CLOSE completion, which turnloop
 * reports after every other completion of the handle: no completion can reach
 * a slot that has been handed to another connection. */
#include "conn.h"
#include "conn_tls.h"

#include "access_log.h"
#include "acme_tokens.h"
#include "gate.h"
#include "route.h"

#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

static sws_conn *conn_of(sws_worker *w, uint64_t token) {
    uint32_t i = sws_token_index(token);
    if (i >= w->nslots || w->slots[i].phase == SWS_PH_FREE)
        return NULL;
    return &w->slots[i];
}

static void list_add(sws_worker *w, sws_conn *c) {
    c->prev = NULL;
    c->next = w->active;
    if (w->active)
        w->active->prev = c;
    w->active = c;
}

static void list_del(sws_worker *w, sws_conn *c) {
    if (c->prev)
        c->prev->next = c->next;
    else
        w->active = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
}

static void release(sws_worker *w, uint32_t id) {
    tl_buffer_release(w->loop, id);
    w->released++;
}

static void held_drop_head(sws_worker *w, sws_conn *c) {
    uint32_t i = c->hhead;
    c->hhead = w->hpool[i].next;
    if (c->hhead == SWS_NIL)
        c->htail = SWS_NIL;
    c->hcount--;
    w->hpool[i].next = w->hfree;
    w->hfree = i;
}

static void held_release_all(sws_worker *w, sws_conn *c) {
    while (c->hcount) {
        release(w, w->hpool[c->hhead].id);
        held_drop_head(w, c);
    }
}

/* Output buffers are taken when the first byte of an answer is appended and
 * given back when the last byte is written: an idle keep-alive connection
 * holds none. The pools are trimmed by the sweep (sws_lend_trim), so a steady
 * load reuses blocks without allocating while a burst's are freed within two
 * sweeps. */

bool sws_conn_out_take(sws_worker *w, sws_conn *c) {
    if (!c->out)
        c->out = sws_lend_take(&w->outbuf);
    return c->out != NULL;
}

/* Only once no write of c->out can be in flight. */
static void out_give(sws_worker *w, sws_conn *c) {
    sws_lend_give(&w->outbuf, c->out);
    c->out = NULL;
}

/* The one place a connection's phase changes; entering CLOSING closes the
 * handle, entering FREE gives the slot back. */
static void conn_phase(sws_worker *w, sws_conn *c, sws_phase to) {
    assert(sws_phase_may(c->phase, to));
    c->phase = to;
    if (to == SWS_PH_CLOSING) {
        held_release_all(w, c);
        if (tl_close(w->loop, c->h, sws_token(c->index, SWS_T_CLOSE)) < 0)
            conn_phase(w, c, SWS_PH_FREE); /* a handle turnloop no longer knows: nothing
                                               will complete, free now */
    } else if (to == SWS_PH_FREE) {
        if (c->starved)
            w->nstarved--;
        c->proto->freed(w, c); /* the scenario's conn_end, the parser, the route */
        sws_gate_conn_close(w, c->index);
        /* Every completion of the handle came before its close's: no write
         * can still be reading the buffer. */
        out_give(w, c);
        conn_tls_release(w, c);
        list_del(w, c);
        w->free_idx[w->nfree++] = c->index;
        SWS_ADD(w->ctr.active, (uint64_t)-1);
        SWS_ADD(w->ctr.closed, 1);
    }
}

/* No further request is read: the answer in output is the last. linger: the
 * peer may still be sending (a refused request, pipelined input), so the
 * close is a half-close and a drain (start_linger). */
void conn_last(sws_worker *w, sws_conn *c, bool linger) {
    if (c->phase == SWS_PH_OPEN)
        conn_phase(w, c, linger ? SWS_PH_LAST_LINGER : SWS_PH_LAST);
    else if (c->phase == SWS_PH_LAST && linger)
        conn_phase(w, c, SWS_PH_LAST_LINGER);
}

void sws_conn_last(sws_worker *w, sws_conn *c, bool linger) {
    conn_last(w, c, linger);
    if (!linger)
        sws_conn_stop_reading(w, c);
}

void sws_conn_stop_reading(sws_worker *w, sws_conn *c) {
    if (c->recv_armed && !c->recv_paused) {
        /* As answer(): stop receiving now, or the loop reads the peer's FIN
         * (or the rest of a pipeline) before our close lands. */
        c->recv_paused = true;
        tl_cancel(w->loop, c->recv_op);
    }
}

void conn_arm_recv(sws_worker *w, sws_conn *c) {
    if (c->recv_armed || sws_phase_gone(c->phase))
        return;
    int rc = tl_recv(w->loop, c->h, sws_token(c->index, SWS_T_RECV), &c->recv_op);
    if (rc < 0) {
        sws_conn_close(w, c);
        return;
    }
    c->recv_armed = true;
}

void sws_conn_close(sws_worker *w, sws_conn *c) {
    if (!sws_phase_gone(c->phase))
        conn_phase(w, c, SWS_PH_CLOSING);
}

void sws_conn_open(sws_worker *w, sws_scenario *sc, tl_handle h, unsigned listener) {
    if (w->nfree == 0) {
        /* Cannot happen while slots = handle ceiling; closing is the safe answer. */
        tl_close(w->loop, h, sws_token(w->nslots, SWS_T_CLOSE));
        return;
    }
    uint32_t i = w->free_idx[--w->nfree];
    /* Slots are one array, its pages touched as slots are first used: no
     * allocation (or allocator header) per connection. */
    sws_conn *c = &w->slots[i];
    /* A listener of a configuration a reload replaced keeps its index: the
     * listeners are restart keys, so the list is the same. */
    const sws_listener_cfg *l = &w->cfg->listeners[listener];
    *c = (sws_conn){.ex = {w->conn_proto->ex},
                    .proto = w->conn_proto,
                    .chosen = !w->h2_proto || !sws_listener_h2(w->cfg, (int)listener),
                    .listener = (uint8_t)listener,
                    .index = i,
                    .h = h,
                    .sc = sc,
                    .hhead = SWS_NIL,
                    .htail = SWS_NIL};
    conn_phase(w, c, SWS_PH_OPEN);
    c->dl_kind = SWS_DL_FRESH;
    c->deadline = tl_loop_now(w->loop) + w->cfg->header_timeout_ms;
    /* turnloop sets TCP_NODELAY on accepted sockets: no setsockopt here. */
    list_add(w, c);
    /* Its peer address is read for the gate only when a route limits
     * connections (gate.h). */
    if (w->gate_conn)
        sws_gate_conn_open(w, i, tl_handle_fd(w->loop, h));
    SWS_ADD(w->ctr.accepted, 1);
    SWS_ADD(w->ctr.accepted_on[listener], 1);
    SWS_ADD(w->ctr.active, 1);
    if (l->tls && w->cfg->tls_server) {
        /* The certificates of the configuration serving now: a reload gives
         * new connections the new ones, open ones keep theirs. */
        c->tls = calloc(1, sizeof(*c->tls));
        if (!c->tls || sws_tls_conn_init(&c->tls->eng, w->cfg->tls_server, w->index) < 0) {
            free(c->tls);
            c->tls = NULL;
            sws_conn_close(w, c);
            return;
        }
        c->deadline = tl_loop_now(w->loop) + w->cfg->handshake_timeout_ms;
    }
    conn_arm_recv(w, c);
}

/* Draining: an idle connection is closed at the grace's end, not at its
 * keep-alive timeout (the sweep, idle_close_begin). */
void sws_conn_idle_deadline(sws_worker *w, sws_conn *c, bool partial) {
    const sws_config *cfg = w->cfg;
    if (partial) {
        c->dl_kind = SWS_DL_HEADER;
        c->deadline = tl_loop_now(w->loop) + cfg->header_timeout_ms;
    } else {
        c->dl_kind = SWS_DL_IDLE;
        c->deadline = tl_loop_now(w->loop) + cfg->keepalive_timeout_ms;
        sws_conn_drain_clamp(w, c);
    }
}

void sws_conn_drain_clamp(sws_worker *w, sws_conn *c) {
    if (w->draining && c->dl_kind != SWS_DL_HEADER) {
        uint64_t end = sws_drain_grace_end(w);
        if (c->deadline > end)
            c->deadline = end;
    }
}

#define SWS_LINGER_MS 2000

static void start_linger(sws_worker *w, sws_conn *c) {
    int fd = tl_handle_fd(w->loop, c->h);
    if (fd < 0 || shutdown(fd, SHUT_WR) < 0) {
        sws_conn_close(w, c);
        return;
    }
    conn_phase(w, c, SWS_PH_LINGERING);
    c->deadline = tl_loop_now(w->loop) + SWS_LINGER_MS;
    held_release_all(w, c);
    c->recv_paused = false;
    conn_arm_recv(w, c);
}

static void flush(sws_worker *w, sws_conn *c) {
    if (sws_phase_gone(c->phase) || c->write_inflight)
        return;
    if (c->proto->fill) {
        c->proto->fill(w, c);
        if (sws_phase_gone(c->phase))
            return;
    }
    if (c->olen == 0 && c->answer_pending) {
        /* The last part was written: the scenario appends the next one. */
        c->proto->drained(w, c);
        if (sws_phase_gone(c->phase))
            return;
        if (c->olen == 0 && !c->answer_pending) {
            sws_conn_pump(w, c); /* it ended with nothing more: on to held requests */
            return;
        }
        if (c->olen == 0)
            return; /* the scenario waits for its data; sws_ex_more follows */
    }
    if (c->tls) {
        if (conn_tls_flush(w, c))
            return;
    } else if (c->olen > 0) {
        tl_op op;
        int rc = tl_write(w->loop, c->h, c->out, c->olen, sws_token(c->index, SWS_T_WRITE), &op);
        if (rc < 0) {
            sws_conn_close(w, c);
            return;
        }
        c->wlen = c->olen;
        c->write_inflight = true;
        /* A write is at most out_cap bytes: one that has not completed in
         * send_timeout is a peer that reads (next to) nothing. */
        c->wdeadline = tl_loop_now(w->loop) + w->cfg->send_timeout_ms;
        return;
    }
    out_give(w, c);
    if (c->phase == SWS_PH_LAST_LINGER && !c->peer_eof) {
        start_linger(w, c);
    } else if (c->phase == SWS_PH_LAST || c->phase == SWS_PH_LAST_LINGER) {
        sws_conn_close(w, c);
    }
}

/* Nothing in or out: no answer being written, no request begun, no held
 * input, and (tls) no decrypted input waiting in the stash. */
static bool conn_idle(const sws_worker *w, const sws_conn *c) {
    return c->olen == 0 && !c->write_inflight && !c->proto->partial(c) && c->hcount == 0 &&
           !c->answer_pending && !(c->tls && c->tls->stash);
}

/* Draining, the grace is over and c is idle: no FIN before what is already
 * in its socket is read and answered. The receive is cancelled; its final
 * completion comes after every byte it took (idle_close_finish). Closing at
 * once would lose a request the loop has received but not yet seen, and a
 * close with unread input is a reset. */
static void idle_close_finish(sws_worker *w, sws_conn *c);

static void idle_close_begin(sws_worker *w, sws_conn *c, uint64_t now) {
    if (c->idle_closing)
        return;
    c->deadline = now + SWS_LINGER_MS; /* a cancel that never completes: the sweep again */
    if (c->recv_armed) {
        c->idle_closing = true;
        c->recv_paused = true;
        tl_cancel(w->loop, c->recv_op);
        return;
    }
    idle_close_finish(w, c);
    flush(w, c);
}

static void idle_close_finish(sws_worker *w, sws_conn *c) {
    if (c->phase != SWS_PH_OPEN)
        return;
    if (!conn_idle(w, c)) {
        sws_conn_pump(w, c); /* a request came with the cancel: it is answered (close) */
        return;
    }
    int fd = tl_handle_fd(w->loop, c->h), waiting = 0;
    if (fd >= 0 && ioctl(fd, FIONREAD, &waiting) == 0 && waiting > 0) {
        /* Bytes the receive had not taken yet: read and answer them. */
        c->recv_paused = false;
        c->deadline = tl_loop_now(w->loop) + 100;
        conn_arm_recv(w, c);
        return;
    }
    /* Empty: the FIN goes out with the lingering close (flush). */
    conn_last(w, c, true);
}

static void hold(sws_worker *w, sws_conn *c, uint32_t id, const char *data, uint32_t off,
                 uint32_t len) {
    if (sws_held_append(w, &c->hhead, &c->htail, id, data, off, len) == SWS_NIL) {
        /* Cannot happen (one node per loop buffer); closing is the safe answer. */
        release(w, id);
        sws_conn_close(w, c);
        return;
    }
    c->hcount++;
    if (!c->recv_paused) {
        c->recv_paused = true;
        if (c->recv_armed)
            tl_cancel(w->loop, c->recv_op);
    }
}

/* ---- the protocol: HTTP/1.1, or HTTP/2 when the connection says so ------------- */

static bool proto_switch(sws_worker *w, sws_conn *c, const sws_conn_proto *p) {
    c->chosen = true;
    if (p == c->proto)
        return true;
    c->proto = p;
    if (p->ex)
        c->ex.proto = p->ex;
    if (p->attach && !p->attach(w, c)) {
        sws_conn_close(w, c);
        return false;
    }
    return true;
}

bool sws_conn_switch(sws_worker *w, sws_conn *c, const sws_conn_proto *p) {
    return proto_switch(w, c, p);
}

/* A plaintext connection's first bytes: the HTTP/2 preface (its first four
 * bytes at least, "PRI ", which no HTTP/1.1 request we serve begins with)
 * chooses HTTP/2; anything else HTTP/1.1. Fewer than four bytes that begin
 * the preface wait for the next read (TCP may cut the preface anywhere);
 * then the chosen protocol is given them first. 1: chosen, data goes on to
 * it; 0: data was taken (waiting, or the connection closed). */
static int proto_sniff(sws_worker *w, sws_conn *c, const char *data, uint32_t len) {
    uint32_t had = c->sniffed, n = had + len < 4 ? len : 4 - had;
    bool prefix = memcmp(data, SWS_H2_PREFACE + had, n) == 0;
    if (prefix && had + len < 4) {
        c->sniffed = (uint8_t)(had + len);
        return 0;
    }
    uint32_t rest = len < SWS_H2_PREFACE_LEN - had ? len : SWS_H2_PREFACE_LEN - had;
    bool h2 = prefix && memcmp(data, SWS_H2_PREFACE + had, rest) == 0;
    if (!proto_switch(w, c, h2 ? w->h2_proto : c->proto))
        return 0;
    c->sniffed = 0;
    uint32_t off = 0;
    if (had)
        c->proto->input(w, c, SWS_H2_PREFACE, had, &off); /* the bytes held back */
    return sws_phase_gone(c->phase) || c->phase != SWS_PH_OPEN ? 0 : 1;
}

static void on_recv(sws_worker *w, const tl_completion *e) {
    sws_conn *c = conn_of(w, e->token);
    bool has_buf = (e->flags & TL_CQE_BUFFER) != 0;
    if (!c) {
        if (has_buf)
            release(w, e->u.buf.id);
        return;
    }
    bool final = (e->flags & TL_CQE_FINAL) != 0;
    if (final)
        c->recv_armed = false;
    if (c->phase == SWS_PH_LINGERING) {
        if (has_buf)
            release(w, e->u.buf.id);
        if (final && e->res <= 0 && e->res != -ECANCELED)
            sws_conn_close(w, c);
        else if (final)
            conn_arm_recv(w, c);
        return;
    }
    if (e->res > 0 && has_buf) {
        SWS_ADD(w->ctr.bytes_in, (uint64_t)e->res);
        const char *data = e->u.buf.data;
        uint32_t len = (uint32_t)e->res, off = 0;
        if (c->tls) {
            conn_tls_input(w, c, data, len); /* the engine copies: the buffer goes back now */
            release(w, e->u.buf.id);
        } else if (c->phase != SWS_PH_OPEN)
            release(w, e->u.buf.id);
        else if (!c->chosen && proto_sniff(w, c, data, len) == 0)
            release(w, e->u.buf.id);
        else if (c->hcount || c->recv_paused)
            hold(w, c, e->u.buf.id, data, 0, len);
        else if (c->proto->input(w, c, data, len, &off))
            release(w, e->u.buf.id);
        else
            hold(w, c, e->u.buf.id, data, off, len);
    } else if (has_buf) {
        release(w, e->u.buf.id);
    }
    bool idle_check = false;
    if (final && c->idle_closing) {
        c->idle_closing = false;
        c->recv_paused = c->hcount > 0; /* held input: pump resumes receiving */
        idle_check = true;
    }
    if (final && !sws_phase_gone(c->phase)) {
        if (e->res == 0) {
            /* The peer is done sending: answer what it asked, then close. */
            c->peer_eof = true;
            if (c->tls && !c->tls->eng.established && !c->tls->eng.failed) {
                sws_tls_peer_eof(&c->tls->eng); /* a hello cut short, or no TLS at all */
                conn_tls_failed(w, c);
            }
            if (c->proto->eof && c->phase == SWS_PH_OPEN)
                c->proto->eof(w, c);
            else
                conn_last(w, c, false);
        } else if (e->res == -ENOBUFS) {
            /* turnloop now queues a receive that finds no buffer instead of
             * ending it; kept for a backend that still ends it so. */
            if (!c->starved) {
                c->starved = true;
                w->nstarved++;
            }
        } else if (e->res < 0 && e->res != -ECANCELED) {
            sws_conn_close(w, c);
            return;
        } else if (idle_check) {
            idle_close_finish(w, c);
        } else if (!c->recv_paused && c->phase == SWS_PH_OPEN) {
            conn_arm_recv(w, c);
        }
    }
    flush(w, c);
}

static void on_write(sws_worker *w, const tl_completion *e) {
    sws_conn *c = conn_of(w, e->token);
    if (!c)
        return;
    c->write_inflight = false;
    if (sws_phase_gone(c->phase))
        return;
    if (e->res < 0) {
        sws_conn_close(w, c);
        return;
    }
    SWS_ADD(w->ctr.bytes_out, c->wlen);
    if (c->tls) {
        c->wlen = 0; /* wire is free again; out still holds unsealed plaintext */
        sws_conn_pump(w, c);
        return;
    }
    if (c->olen > c->wlen)
        memmove(c->out, c->out + c->wlen, c->olen - c->wlen);
    c->olen -= c->wlen;
    c->wlen = 0;
    sws_conn_pump(w, c);
}

/* After output moved: feeds held input (as far as there is room and no answer
 * is pending), resumes receiving once nothing is held, and writes. */
void sws_conn_pump(sws_worker *w, sws_conn *c) {
    if (c->tls)
        conn_tls_resume(w, c); /* a tls connection holds plaintext in its stash, not buffers */
    while (c->hcount && !sws_phase_gone(c->phase)) {
        sws_held *h = &w->hpool[c->hhead];
        uint32_t off = h->off;
        if (c->phase == SWS_PH_OPEN && !c->proto->input(w, c, h->data, h->len, &off)) {
            h->off = off;
            break;
        }
        release(w, h->id);
        held_drop_head(w, c);
    }
    if (sws_phase_gone(c->phase))
        return;
    if (c->hcount == 0 && c->recv_paused && !c->tls) {
        c->recv_paused = false;
        if (c->phase == SWS_PH_OPEN)
            conn_arm_recv(w, c);
    }
    flush(w, c);
    /* keepalive_timeout counts from the last answer written, not from when it
     * was queued: a slow but reading client is not cut as idle. */
    if (!sws_phase_gone(c->phase) && !c->write_inflight && c->olen == 0 &&
        c->dl_kind == SWS_DL_IDLE && !c->answer_pending) {
        c->deadline = tl_loop_now(w->loop) + w->cfg->keepalive_timeout_ms;
        sws_conn_drain_clamp(w, c);
    }
}

static void on_closed(sws_worker *w, const tl_completion *e) {
    sws_conn *c = conn_of(w, e->token);
    if (c)
        conn_phase(w, c, SWS_PH_FREE);
}

/* Starvation is rare (every loop buffer held by output-blocked connections):
 * a walk of the active list when buffers come back is cheaper than keeping a
 * second list consistent with slot reuse. */
static void rearm_starved(sws_worker *w) {
    for (sws_conn *c = w->active; c && w->nstarved; c = c->next) {
        if (!c->starved)
            continue;
        c->starved = false;
        w->nstarved--;
        if (c->phase == SWS_PH_OPEN && !c->recv_paused)
            conn_arm_recv(w, c);
    }
}

/* The HTTP connection's part of the sweep. */
void sws_conn_sweep(sws_worker *w, sws_scenario *sc, uint64_t now) {
    (void)sc;
    for (sws_conn *c = w->active, *next; c; c = next) {
        next = c->next;
        if (sws_phase_gone(c->phase))
            continue;
        if (c->write_inflight) {
            if (now >= c->wdeadline) {
                SWS_ADD(w->ctr.send_timeouts, 1);
                sws_conn_close(w, c);
            }
            continue;
        }
        if (c->proto->sweep) {
            c->proto->sweep(w, c, now);
            if (!sws_phase_gone(c->phase))
                flush(w, c);
            continue;
        }
        if (now < c->deadline)
            continue;
        if (c->tls && !c->tls->eng.established && !c->tls->eng.failed) {
            sws_tls_timeout(&c->tls->eng); /* handshake_timeout: a stalled hello */
            SWS_ADD(w->ctr.tls_failed[SWS_TLS_FAIL_TIMEOUT], 1);
            sws_conn_close(w, c);
            continue;
        }
        if (w->draining && c->phase == SWS_PH_OPEN && conn_idle(w, c)) {
            idle_close_begin(w, c, now);
            continue;
        }
        if (c->tls && c->tls->eng.established && !c->tls->eng.failed && c->phase == SWS_PH_OPEN &&
            conn_idle(w, c)) {
            /* keepalive_timeout over TLS: close_notify before the FIN (as
             * nginx), so that the client sees a close, not a truncation. The
             * sweep closes it if that write does not finish by the deadline. */
            c->deadline = now + SWS_LINGER_MS;
            conn_last(w, c, false);
            flush(w, c);
            continue;
        }
        if (c->proto->partial(c) && c->phase == SWS_PH_OPEN && !c->answer_pending &&
            c->proto->timeout(w, c)) {
            flush(w, c);
            continue;
        }
        sws_conn_close(w, c);
    }
    rearm_starved(w);
    sws_lend_trim(&w->outbuf, SWS_OUT_CACHE);
    w->conn_proto->trim(w);
    if (w->h2_proto)
        w->h2_proto->trim(w);
}

/* After a completion has been handled, never inside: code below on_recv and
 * on_write may hold c->parser. */
static void settle(sws_worker *w, uint64_t token) {
    sws_conn *c = conn_of(w, token);
    if (c)
        c->proto->settle(w, c);
}

/* The HTTP connection's completions. */
void sws_conn_dispatch(sws_worker *w, sws_scenario *sc, const tl_completion *e) {
    (void)sc;
    switch (sws_token_tag(e->token)) {
    case SWS_T_RECV:
        on_recv(w, e);
        settle(w, e->token);
        break;
    case SWS_T_WRITE:
        on_write(w, e);
        settle(w, e->token);
        break;
    case SWS_T_CLOSE:
        on_closed(w, e);
        break;
    default:
        if (e->flags & TL_CQE_BUFFER)
            release(w, e->u.buf.id);
        break;
    }
}

void sws_conn_turn_done(sws_worker *w, sws_scenario *sc) {
    (void)sc;
    if (w->h2_proto && w->h2_proto->turn_done)
        w->h2_proto->turn_done(w);
    if (w->released && w->nstarved)
        rearm_starved(w);
}

/* The HTTP connection's part of a drain. */
void sws_conn_drain(sws_worker *w, sws_scenario *sc, bool force) {
    if (sc != &w->sc)
        return; /* a route's instance: the default drains the connections */
    uint64_t now = tl_loop_now(w->loop);
    for (sws_conn *c = w->active, *next; c; c = next) {
        next = c->next;
        if (sws_phase_gone(c->phase))
            continue;
        if (force) {
            SWS_ADD(w->ctr.forced, 1);
            sws_conn_close(w, c);
        } else if (c->proto->drain) {
            c->proto->drain(w, c, false);
            if (!sws_phase_gone(c->phase))
                flush(w, c);
        } else if (conn_idle(w, c) && c->phase == SWS_PH_OPEN) {
            /* Idle, or accepted but silent: its next request may be on the
             * wire. It may still come for drain_idle_grace and is answered
             * with Connection: close; then the sweep closes what stayed
             * idle, reading what is left first (idle_close_begin). */
            sws_conn_drain_clamp(w, c);
            if (c->deadline <= now)
                idle_close_begin(w, c, now);
        }
    }
}

/* The default instance owns the connections: it is finished without any.
 * A route's instance holds a connection only while its answer is pending. */
bool sws_conn_finished(const sws_worker *w, const sws_scenario *sc) {
    return sc == &w->sc ? !w->active : sc->pending == 0;
}

/* A reload committed: each open connection's protocol follows it. */
void sws_conn_reload_commit(sws_worker *w, sws_scenario *sc) {
    if (sc != &w->sc)
        return; /* the connections are the default's */
    for (sws_conn *c = w->active; c; c = c->next)
        c->proto->reload(w, c);
}
