/* Upgrade tunnels: after an upstream's 101 the client connection and the
 * upstream connection carry bytes both ways, unread. The tunnel is the
 * client connection's protocol (sws_conn_proto: the HTTP/1.1 protocol handed
 * it over, nothing is parsed any more) and the owner of the upstream
 * connection (its completions come here from proxy.c's dispatch).
 *
 * Memory follows data, as on an idle keep-alive connection: a quiet tunnel
 * holds this struct, its two sockets and their armed receives; no parser,
 * no output buffer. Back-pressure each way, at most one buffer in flight and
 * one held: client bytes are copied into a lent buffer (plain upstream) or
 * sealed (TLS) and written; while that write is in flight the client's next
 * read is held by the connection, which stops receiving. Upstream bytes are
 * copied into the client's output as its room allows; a loop buffer that
 * does not fit is held and the upstream's receive paused until the client
 * has taken it. A FIN is passed on as a half-close once what came before it
 * is written; both ends done (or tunnel_idle_timeout with no byte, an error,
 * the drain timeout) closes both. Loop thread only. */
#include "proxy.h"

#include "access_log.h"
#include "http1.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

typedef struct px_tunnel {
    struct px_tunnel *prev, *next; /* px->tunnels */
    sws_proxy *px;
    sws_conn *c;
    uint32_t up;           /* pool slot; SWS_NIL once it is released */
    uint32_t hhead, htail; /* upstream bytes waiting for the client's output (w->hpool) */
    uint32_t hcount;
    char *ubuf;        /* plain upstream: the client's bytes being written (w->outbuf), or NULL */
    bool up_eof;       /* the upstream finished sending (FIN, close_notify) */
    bool down_fin;     /* ... and the client was told, once the bytes before it were written */
    bool cl_eof;       /* the client finished sending */
    bool up_fin;       /* ... and the upstream was told */
    bool failed;       /* a write upstream could not start: ended at the next fill */
    uint64_t deadline; /* tunnel_idle_timeout from the last byte either way */
} px_tunnel;

static const sws_conn_proto tunnel_conn;

static sws_up_conn *t_up(const px_tunnel *t) {
    return t->up == SWS_NIL ? NULL : t->px->pool.slots[t->up];
}

static void t_touch(px_tunnel *t) {
    t->deadline = tl_loop_now(t->px->w->loop) + t->px->pc->tunnel_idle_timeout_ms;
}

px_tunnel *px_tunnel_of_up(sws_proxy *px, const sws_up_conn *u) {
    if (u->sess >= px->sh->nslots)
        return NULL;
    px_tunnel *t = px->sh->s[u->sess].t;
    return t && t->px == px && t->up == u->index ? t : NULL;
}

static void held_release_all(sws_worker *w, px_tunnel *t) {
    while (t->hcount) {
        uint32_t i = t->hhead;
        tl_buffer_release(w->loop, w->hpool[i].id);
        w->released++;
        t->hhead = w->hpool[i].next;
        w->hpool[i].next = w->hfree;
        w->hfree = i;
        t->hcount--;
    }
    t->htail = SWS_NIL;
}

/* The upstream side goes: closed at once (an abortive end, or the last). */
static void up_release(px_tunnel *t) {
    sws_up_conn *u = t_up(t);
    if (!u)
        return;
    sws_pool_release(&t->px->pool, u, false);
    t->up = SWS_NIL;
    held_release_all(t->px->w, t);
}

/* The tunnel ends: both connections close (the client's through its phase;
 * its slot's freed hook frees the tunnel). */
static void t_end(px_tunnel *t) {
    up_release(t);
    sws_conn_close(t->px->w, t->c);
}

/* Whether both directions have ended and been passed on. */
static bool t_done(const px_tunnel *t) {
    return t->down_fin && t->up_fin;
}

/* The client has finished sending and every byte it sent is written: the
 * upstream is told with a half-close (our close_notify first over TLS). */
static void up_fin(px_tunnel *t) {
    sws_up_conn *u = t_up(t);
    if (t->up_fin || !t->cl_eof || !u || u->write_inflight || t->c->hcount ||
        (t->c->tls && t->c->tls->stash))
        return;
    t->up_fin = true;
    sws_up_tls_close(&t->px->pool, u);
    int fd = tl_handle_fd(t->px->w->loop, u->h);
    if (fd < 0 || shutdown(fd, SHUT_WR) < 0 || t_done(t))
        t_end(t);
}

/* The upstream's answer stops or starts being read: at most one held
 * buffer (or one record's worth waiting in the TLS engine). */
static void up_recv_adjust(px_tunnel *t, sws_up_conn *u) {
    sws_worker *w = t->px->w;
    bool full = u->tls ? sws_up_tls_backlog(u) >= SWS_UP_TLS_PLAIN : t->hcount > 0;
    if (full) {
        if (u->read_armed && !u->recv_paused) {
            u->recv_paused = true;
            tl_cancel(w->loop, u->read_op);
        }
    } else if (!t->up_eof && !u->read_armed && (u->recv_paused || u->starved)) {
        u->recv_paused = false;
        u->starved = false;
        if (sws_pool_recv(&t->px->pool, u) < 0)
            u->starved = true; /* the sweep tries again */
    }
}

/* TLS upstream: plaintext straight into the client's output. false: the
 * tunnel ended. */
static bool down_tls(px_tunnel *t, sws_up_conn *u) {
    sws_worker *w = t->px->w;
    sws_conn *c = t->c;
    /* Not bounded by up_eof: what was decrypted before a FIN still goes. */
    while (sws_up_tls_backlog(u)) {
        if (!sws_conn_out_take(w, c)) {
            t_end(t);
            return false;
        }
        uint32_t room = w->out_cap - c->olen;
        if (room == 0)
            break;
        int n =
            sws_up_tls_read(u, c->out + c->olen, room < SWS_UP_TLS_PLAIN ? room : SWS_UP_TLS_PLAIN);
        if (n == SWS_TLS_WANT)
            break;
        if (n == SWS_TLS_EOF) {
            t->up_eof = true;
            break;
        }
        if (n < 0) {
            t_end(t);
            return false;
        }
        c->olen += (uint32_t)n;
        SWS_ADD(w->ctr.tunnel_bytes_down, (uint64_t)n);
        t_touch(t);
    }
    if (!u->write_inflight && sws_up_tls_send(&t->px->pool, u, NULL, 0) < 0) {
        t_end(t); /* what reading queued (a KeyUpdate's answer) could not go */
        return false;
    }
    return true;
}

/* Plain upstream: held loop buffers into the client's output. */
static bool down_plain(px_tunnel *t) {
    sws_worker *w = t->px->w;
    sws_conn *c = t->c;
    while (t->hcount) {
        if (!sws_conn_out_take(w, c)) {
            t_end(t);
            return false;
        }
        sws_held *h = &w->hpool[t->hhead];
        uint32_t room = w->out_cap - c->olen;
        uint32_t k = h->len < room ? h->len : room;
        if (k == 0)
            break;
        memcpy(c->out + c->olen, h->data + h->off, k);
        c->olen += k;
        h->off += k;
        h->len -= k;
        if (h->len)
            break;
        uint32_t i = t->hhead;
        tl_buffer_release(w->loop, h->id);
        w->released++;
        t->hhead = h->next;
        h->next = w->hfree;
        w->hfree = i;
        if (--t->hcount == 0)
            t->htail = SWS_NIL;
    }
    return true;
}

/* The transport is about to write (no write in flight): what the upstream
 * sent goes into the output; once its end has been passed on whole, the
 * client is told. */
static void tunnel_fill(sws_worker *w, sws_conn *c) {
    px_tunnel *t = c->pstate;
    if (!t || c->phase != SWS_PH_OPEN)
        return;
    if (t->failed) {
        t_end(t);
        return;
    }
    sws_up_conn *u = t_up(t);
    if (u && !(u->tls ? down_tls(t, u) : down_plain(t)))
        return;
    if (u)
        up_recv_adjust(t, u);
    if (!t->up_eof || t->down_fin || t->hcount || c->olen)
        return;
    t->down_fin = true;
    if (c->tls || t_done(t)) {
        /* TLS has no half-close here: close_notify, then the close, once
         * what is queued is written. */
        up_release(t);
        sws_conn_last(w, c, false);
        return;
    }
    int fd = tl_handle_fd(w->loop, c->h);
    if (fd < 0 || shutdown(fd, SHUT_WR) < 0)
        t_end(t);
}

/* Client bytes for the upstream. false: not taken now (a write is in
 * flight), the transport holds them and stops receiving. A failure is not
 * acted on here, where the transport walks its held input: the flush that
 * follows ends the tunnel. */
static bool tunnel_input(sws_worker *w, sws_conn *c, const char *data, uint32_t len,
                         uint32_t *off) {
    px_tunnel *t = c->pstate;
    sws_up_conn *u = t ? t_up(t) : NULL;
    if (!u || t->up_fin || t->failed) {
        *off = len; /* no one to take them: the tunnel is ending */
        return true;
    }
    if (u->write_inflight)
        return false;
    sws_pool *p = &t->px->pool;
    uint32_t n = len - *off;
    if (u->tls) {
        int sealed = sws_up_tls_send(p, u, data + *off, n);
        if (sealed < 0) {
            t->failed = true;
            *off = len;
            return true;
        }
        n = (uint32_t)sealed;
    } else {
        if (!t->ubuf && !(t->ubuf = sws_lend_take(&w->outbuf))) {
            t->failed = true;
            *off = len;
            return true;
        }
        if (n > w->out_cap)
            n = w->out_cap;
        memcpy(t->ubuf, data + *off, n);
        tl_op op;
        if (tl_write(w->loop, u->h, t->ubuf, n,
                     sws_token_of(t->px->sc->id, u->index, SWS_T_UP_WRITE), &op) < 0) {
            t->failed = true;
            *off = len;
            return true;
        }
        u->wlen = n;
        u->write_inflight = true;
    }
    *off += n;
    SWS_ADD(w->ctr.tunnel_bytes_up, n);
    t_touch(t);
    return *off == len;
}

static void tunnel_eof(sws_worker *w, sws_conn *c) {
    (void)w;
    px_tunnel *t = c->pstate;
    c->peer_eof = true;
    if (!t)
        return;
    t->cl_eof = true;
    up_fin(t);
}

static bool tunnel_partial(const sws_conn *c) {
    (void)c;
    return false;
}

static void tunnel_settle(sws_worker *w, sws_conn *c) {
    (void)w;
    (void)c;
}

static void tunnel_drained(sws_worker *w, sws_conn *c) {
    (void)w;
    (void)c;
}

static bool tunnel_timeout(sws_worker *w, sws_conn *c) {
    (void)w;
    (void)c;
    return false;
}

/* tunnel_idle_timeout, and a receive that ran out of loop buffers. */
static void tunnel_sweep(sws_worker *w, sws_conn *c, uint64_t now) {
    px_tunnel *t = c->pstate;
    if (!t || c->phase != SWS_PH_OPEN)
        return;
    if (now >= t->deadline) {
        SWS_ADD(w->ctr.tunnels_idle, 1);
        t_end(t);
        return;
    }
    sws_up_conn *u = t_up(t);
    if (u && u->starved && !u->read_armed)
        up_recv_adjust(t, u);
}

/* A graceful drain leaves tunnels running (SIGUSR2's old process too): the
 * drain timeout's force closes them (sws_conn_drain), counted when freed. */
static void tunnel_drain(sws_worker *w, sws_conn *c, bool force) {
    (void)w;
    (void)c;
    (void)force;
}

static void tunnel_unlink(sws_proxy *px, px_tunnel *t) {
    if (t->prev)
        t->prev->next = t->next;
    else
        px->tunnels = t->next;
    if (t->next)
        t->next->prev = t->prev;
}

/* The client's slot is freed (its close completed): the tunnel goes. */
static void tunnel_freed(sws_worker *w, sws_conn *c) {
    px_tunnel *t = c->pstate;
    c->pstate = NULL;
    if (!t)
        return;
    sws_proxy *px = t->px;
    up_release(t);
    sws_lend_give(&w->outbuf, t->ubuf);
    if (px->sh->s[c->index].t == t)
        px->sh->s[c->index].t = NULL;
    tunnel_unlink(px, t);
    SWS_ADD(w->ctr.tunnels_active, (uint64_t)-1);
    if (w->forced)
        SWS_ADD(w->ctr.tunnels_drained, 1);
    free(t);
}

static void tunnel_reload(sws_worker *w, sws_conn *c) {
    (void)w;
    (void)c;
}

static const sws_conn_proto tunnel_conn = {
    .fill = tunnel_fill,
    .sweep = tunnel_sweep,
    .drain = tunnel_drain,
    .input = tunnel_input,
    .eof = tunnel_eof,
    .partial = tunnel_partial,
    .settle = tunnel_settle,
    .drained = tunnel_drained,
    .timeout = tunnel_timeout,
    .freed = tunnel_freed,
    .reload = tunnel_reload,
};

/* ---- the switch ------------------------------------------------------------- */

int px_tunnel_begin(sws_proxy *px, px_x *x, const sws_answer *a) {
    sws_worker *w = px->w;
    px_tunnel *t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    /* Its line in the access log, while the request is still there to log. */
    if (w->logs) {
        px_log_up(px, x);
        sws_ex_log(w, x->c, 101, 0);
        px_log_up_end(px);
    }
    int rc = sws_h1_switch(w, x->c, a, &tunnel_conn);
    if (rc < 0) {
        free(t);
        return rc;
    }
    sws_conn *c = (sws_conn *)x->c; /* the HTTP/1.1 exchange is its connection's first member */
    *t = (px_tunnel){.px = px, .c = c, .up = x->up, .hhead = SWS_NIL, .htail = SWS_NIL};
    c->pstate = t;
    x->up = SWS_NIL;
    x->switched = true;
    px->sh->s[c->index].t = t;
    t->next = px->tunnels;
    if (px->tunnels)
        px->tunnels->prev = t;
    px->tunnels = t;
    t_touch(t);
    SWS_ADD(w->ctr.tunnels, 1);
    SWS_ADD(w->ctr.tunnels_active, 1);
    return 0;
}

void px_tunnel_adopt(sws_proxy *px, px_x *x, const char *rest, size_t n) {
    sws_worker *w = px->w;
    sws_conn *c = (sws_conn *)x->c;
    px_tunnel *t = c->pstate;
    /* The room the 101 was fed with holds its head and every byte of the
     * buffer it came in (px_x_progress fed it only with PX_SLACK to spare). */
    bool lost = false;
    if (n && sws_conn_out_take(w, c) && c->olen + n <= w->out_cap) {
        memcpy(c->out + c->olen, rest, n);
        c->olen += (uint32_t)n;
        SWS_ADD(w->ctr.tunnel_bytes_down, n);
    } else if (n) {
        lost = true; /* cannot happen (out of memory): the tunnel ends below */
    }
    t->hhead = x->hhead;
    t->htail = x->htail;
    t->hcount = x->hcount;
    x->hhead = x->htail = SWS_NIL;
    x->hcount = 0;
    if (x->has_end) /* the upstream ended (or failed) right after its 101 */
        t->up_eof = true;
    bool in_more = px->in_more;
    px_x_give(px, x, false);
    if (lost) {
        t_end(t);
        return;
    }
    sws_up_conn *u = t_up(t);
    if (u)
        up_recv_adjust(t, u);
    /* Inside `more` the transport writes on its return; else now, and what
     * the client sent after its request is fed to the tunnel. */
    if (!in_more)
        sws_conn_pump(w, c);
}

/* ---- the upstream's completions ---------------------------------------------- */

static void on_recv(px_tunnel *t, sws_up_conn *u, const tl_completion *e) {
    sws_worker *w = t->px->w;
    bool has_buf = (e->flags & TL_CQE_BUFFER) != 0;
    bool final = (e->flags & TL_CQE_FINAL) != 0;
    if (final)
        u->read_armed = false;
    if (has_buf && e->res > 0 && u->tls) {
        int rc = sws_up_tls_feed(u, e->u.buf.data, (size_t)e->res);
        tl_buffer_release(w->loop, e->u.buf.id);
        w->released++;
        if (rc < 0) {
            t_end(t);
            return;
        }
    } else if (has_buf && e->res > 0) {
        if (sws_held_append(w, &t->hhead, &t->htail, e->u.buf.id, e->u.buf.data, 0,
                            (uint32_t)e->res) == SWS_NIL) {
            tl_buffer_release(w->loop, e->u.buf.id); /* cannot happen: one node per buffer */
            t_end(t);
            return;
        }
        t->hcount++;
        SWS_ADD(w->ctr.tunnel_bytes_down, (uint64_t)e->res);
        t_touch(t);
    } else if (has_buf) {
        tl_buffer_release(w->loop, e->u.buf.id);
        w->released++;
    }
    if (final) {
        if (e->res == -ENOBUFS)
            u->starved = true;
        else if (e->res == -ECANCELED)
            ; /* paused: tunnel_fill resumes it */
        else if (e->res == 0)
            t->up_eof = true;
        else if (e->res < 0) {
            t_end(t); /* a reset: the client's side is cut too */
            return;
        } else if (!u->recv_paused && sws_pool_recv(&t->px->pool, u) < 0)
            u->starved = true;
    }
    sws_conn_pump(w, t->c);
}

static void on_write(px_tunnel *t, sws_up_conn *u, const tl_completion *e) {
    sws_worker *w = t->px->w;
    u->write_inflight = false;
    sws_up_tls_written(&t->px->pool, u);
    u->wlen = 0;
    sws_lend_give(&w->outbuf, t->ubuf);
    t->ubuf = NULL;
    if (e->res < 0) {
        t_end(t);
        return;
    }
    /* The client's held bytes go next; then its FIN, if it came. */
    sws_conn_pump(w, t->c);
    if (t->up != SWS_NIL && !sws_phase_gone(t->c->phase))
        up_fin(t);
}

void px_tunnel_dispatch(sws_proxy *px, px_tunnel *t, sws_up_conn *u, const tl_completion *e) {
    unsigned tag = sws_token_tag(e->token);
    if (sws_phase_gone(t->c->phase)) {
        /* The client went (a reset, send_timeout): the upstream goes too. */
        if (tag == SWS_T_UP_WRITE) {
            u->write_inflight = false;
            sws_up_tls_written(&px->pool, u);
        } else if (tag == SWS_T_UP_READ && (e->flags & TL_CQE_FINAL)) {
            u->read_armed = false;
        }
        if (e->flags & TL_CQE_BUFFER) {
            tl_buffer_release(px->w->loop, e->u.buf.id);
            px->w->released++;
        }
        up_release(t);
        return;
    }
    if (tag == SWS_T_UP_READ) {
        on_recv(t, u, e);
        return;
    }
    if (e->flags & TL_CQE_BUFFER)
        tl_buffer_release(px->w->loop, e->u.buf.id); /* never asked for */
    if (tag == SWS_T_UP_WRITE)
        on_write(t, u, e);
}

void px_tunnel_free_all(sws_proxy *px) {
    while (px->tunnels) {
        px_tunnel *t = px->tunnels;
        px->tunnels = t->next;
        free(t->ubuf); /* the connection table (its pstate) may be gone already */
        free(t);
    }
}
