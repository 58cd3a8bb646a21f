/* The proxy's exchanges: one request and its answer, from the request's
 * head (an upstream chosen, the head rewritten) through the body going up
 * and the upstream's answer coming back into the client's exchange, to the
 * answer's end, a retry or a failure. */
#include "proxy.h"

#include "access_log.h"
#include "compress.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

/* c's peer as looked up for it, or "" (a slot's text may be an earlier
 * connection's: the handle tells). */
const char *px_peer_of(const sws_proxy *px, const sws_exchange *c) {
    const px_slot *sl = slot_of(px, c);
    return sl->h == sws_ex_mark_of(c).conn ? sl->peer : "";
}

/* The one place an upstream is chosen: by [proxy] balance among those health
 * allows, never one in the mask `exclude` (an upstream that just failed). -1: none. */
static int pick_upstream(sws_proxy *px, uint32_t exclude) {
    const sws_proxy_config *cfg = px->pc;
    uint32_t usable = sws_health_usable(px->health, cfg, sws_health_now()) & ~exclude;
    return sws_pick(cfg, &px->pick, px->pool.inflight, usable);
}

/* Whether the Upgrade value of m lists only protocols [proxy] upgrade allows. */
static bool upgrade_allowed(const sws_proxy_config *pc, const sws_head *m) {
    if (!pc->upgrade[0])
        return false;
    for (uint32_t i = 0; i < m->nf; i++)
        if (m->f[i].name_len == 7 && strncasecmp(m->f[i].name, "upgrade", 7) == 0)
            return sws_proxy_upgrade_allowed(pc, m->f[i].value, m->f[i].value_len);
    return false;
}

/* ---- exchanges ------------------------------------------------------------ */

static const sws_msg_cb resp_cb;

px_x *px_x_take(sws_proxy *px, sws_exchange *c) {
    px_x *x = px->free;
    if (x) {
        px->free = x->next;
        px->nfree--;
    } else if (!(x = malloc(sizeof(*x)))) {
        return NULL;
    }
    memset(x, 0, offsetof(px_x, resp));
    x->px = px;
    x->c = c;
    x->up = SWS_NIL;
    x->hhead = x->htail = SWS_NIL;
    x->t0_us = now_us();
    sws_msg_init(&x->resp, HTTP_RESPONSE, &resp_cb, x);
    x->next = px->live;
    if (px->live)
        px->live->prev = x;
    px->live = x;
    slot_of(px, c)->x = x;
    if (++px->used > px->peak)
        px->peak = px->used;
    return x;
}

static void held_release_all(sws_worker *w, px_x *x) {
    while (x->hcount) {
        uint32_t i = x->hhead;
        tl_buffer_release(w->loop, w->hpool[i].id);
        w->released++;
        x->hhead = w->hpool[i].next;
        w->hpool[i].next = w->hfree;
        w->hfree = i;
        x->hcount--;
    }
    x->htail = SWS_NIL;
}

void px_log_up(sws_proxy *px, const px_x *x) {
    if (!x->log_up)
        return;
    px->w->log_up_addr = px->pc->up[x->log_up - 1].addr;
    px->w->log_up_us = (int64_t)(now_us() - x->t0_us);
}

void px_log_up_end(sws_proxy *px) {
    px->w->log_up_addr = NULL;
}

/* The exchange is over: its upstream goes back to the pool (keep) or is
 * closed, its held buffers to the loop, itself to the free list. */
void px_x_give(sws_proxy *px, px_x *x, bool keep) {
    sws_up_conn *u = up_of(x);
    if (u)
        sws_pool_release(&px->pool, u, keep);
    x->up = SWS_NIL;
    held_release_all(px->w, x);
    if (x->prev)
        x->prev->next = x->next;
    else
        px->live = x->next;
    if (x->next)
        x->next->prev = x->prev;
    if (slot_of(px, x->c)->x == x)
        slot_of(px, x->c)->x = NULL;
    if (x->tunnel_open) {
        SWS_ADD(px->w->ctr.tunnels_active, (uint64_t)-1);
        if (px->w->forced)
            SWS_ADD(px->w->ctr.tunnels_drained, 1);
    }
    x->prev = NULL;
    x->next = px->free;
    px->free = x;
    px->nfree++;
    px->used--;
}

/* Once a second: as many free exchanges as the last second's peak needed. */
void px_x_trim(sws_proxy *px) {
    uint32_t keep = px->peak - px->used + PX_X_CACHE;
    while (px->nfree > keep) {
        px_x *x = px->free;
        px->free = x->next;
        px->nfree--;
        free(x);
    }
    px->peak = px->used;
}

px_x *px_x_of_up(sws_proxy *px, const sws_up_conn *u) {
    if (u->sess >= px->sh->nslots)
        return NULL;
    px_x *x = px->sh->s[u->sess].x;
    return x && x->px == px && x->up == u->index ? x : NULL;
}

/* Appends to what goes upstream. Written bytes stay as the retry copy; once
 * the request passed PX_REPLAY they are dropped when room is needed. */
static int put_up(px_x *x, const char *d, size_t n) {
    if (x->olen + n > PX_OBUF) {
        sws_up_conn *u = up_of(x);
        if (x->wpos == 0 || (u && u->write_inflight))
            return -1;
        memmove(x->obuf, x->obuf + x->wpos, x->olen - x->wpos);
        x->olen -= x->wpos;
        x->wpos = 0;
        x->replay_over = true;
        if (x->olen + n > PX_OBUF)
            return -1;
    }
    memcpy(x->obuf + x->olen, d, n);
    x->olen += (uint32_t)n;
    if (x->olen > PX_REPLAY)
        x->replay_over = true; /* a larger request is not retried: the copy's bound */
    return 0;
}

/* ---- request callbacks (the exchange's own reader of the request) ----------- */

/* The head that goes upstream (http1/client_head.c), into the exchange's output. */
static bool rewrite_head(sws_proxy *px, px_x *x, const sws_head *m, const sws_up_conn *u) {
    char head[SWS_MSG_HEAD_MAX + 512];
    const sws_px_request in = {
        .m = m,
        .cfg = px->pc,
        .route = px->sc->route,
        .peer = px_peer_of(px, x->c),
        .upstream = px->pc->up[u->upstream].text,
        .client_tls = sws_ex_secure(x->c),
        .streams = x->req_streams,
        .upgrade = x->upgrading,
        .protocol = x->connect ? m->protocol : NULL,
        .protocol_len = x->connect ? m->protocol_len : 0,
        .ws_key = x->ws_key[0] ? x->ws_key : NULL,
    };
    size_t hl = sws_px_request_head(&in, head, sizeof(head), &x->head_names_up);
    return hl && put_up(x, head, hl) == 0;
}

/* An extended CONNECT (RFC 8441): a tunnel of a protocol [proxy] upgrade
 * allows (one token), asked upstream as an HTTP/1.1 upgrade with a key of
 * our own for websocket. 0, or the status to refuse it with. */
static int connect_head(sws_proxy *px, px_x *x, const sws_head *m) {
    const char *p = m->protocol;
    uint32_t n = m->protocol_len;
    if (n == 0 || memchr(p, ',', n) || !sws_proxy_upgrade_allowed(px->pc, p, n))
        return 501;
    if (px->w->draining)
        return 503; /* draining, no tunnel begins */
    if (n == 9 && strncasecmp(p, "websocket", 9) == 0 && sws_ws_key_new(x->ws_key) < 0)
        return 500;
    x->connect = true;
    x->upgrading = true;
    return 0;
}

/* The request's head is complete: an upstream is chosen and the head that
 * goes to it written. 0, or the status to refuse the request with. */
int px_req_head(px_x *x, const sws_head *m) {
    sws_proxy *px = x->px;
    if (m->method == HTTP_CONNECT && !m->protocol)
        return 501;
    x->head_seen = true;
    x->req_head = m->method == HTTP_HEAD;
    x->idem = m->method == HTTP_GET || m->method == HTTP_HEAD || m->method == HTTP_OPTIONS ||
              m->method == HTTP_PUT || m->method == HTTP_DELETE;
    x->req_http10 = m->http_major == 1 && m->http_minor == 0;
    x->req_streams = m->streams;
    /* An upgrade goes on as asked when its every protocol is allowed; else
     * without it, answered as a plain request. Draining, no tunnel begins. */
    x->upgrading = m->upgrade && !px->w->draining && upgrade_allowed(px->pc, m);
    if (m->protocol) {
        int st = connect_head(px, x, m);
        if (st)
            return st;
        x->req_streams = false; /* the stream's DATA is the tunnel's, passed as it is */
    }
    px_slot *sl = slot_of(px, x->c);
    uint64_t conn = sws_ex_mark_of(x->c).conn;
    if (sl->h != conn || !sl->peer[0]) { /* once per connection: X-Forwarded-For */
        sws_ex_peer(px->w, x->c, sl->peer, sizeof(sl->peer));
        sl->h = conn;
    }

    int pick = pick_upstream(px, 0);
    int rc = pick < 0 ? -EHOSTUNREACH : sws_pool_acquire(&px->pool, sws_ex_id(x->c), false, pick);
    if (rc < 0) {
        sws_up_error(&px->pool, pick < 0 ? SWS_UPE_NONE_USABLE : SWS_UPE_OTHER);
        return 502;
    }
    x->up = (uint32_t)rc;
    sws_up_conn *u = px->pool.slots[rc];
    x->log_up = (uint8_t)(u->upstream + 1);
    if (u->state == SWS_UP_BUSY && sws_pool_recv(&px->pool, u) < 0)
        x->wfail = true; /* the tick fails it: as a reset, retried once */
    x->t0_us = now_us();
    x->up_deadline =
        tl_loop_now(px->w->loop) +
        (u->state == SWS_UP_CONNECTING ? px->pc->connect_timeout_ms : px->pc->read_timeout_ms);
    if (!rewrite_head(px, x, m, u))
        return 431;
    return 0;
}

int px_put_up_cb(void *user, const char *d, size_t n) {
    return put_up(user, d, n);
}

/* ---- response callbacks: into the client's exchange ------------------------ */

/* The upstream switches protocols. Only an upgrade we asked for (RFC 9110
 * 15.2.2), and with its Upgrade field: anything else is a bad answer (502).
 * The 101 goes to the client with the upstream's end-to-end fields and its
 * Upgrade, and the connections become the tunnel's. */
/* An extended CONNECT's 101: the upstream's proof of our key is checked
 * (RFC 6455 4.1: a wrong one fails the handshake, 502), and the client's
 * stream gets a 200 with the upstream's end-to-end fields but the proof
 * (RFC 8441 5); the stream's DATA are the tunnel's bytes from here on. */
static int connect_open(px_x *x, sws_msg *m) {
    sws_proxy *px = x->px;
    sws_up_conn *u = up_of(x);
    bool proved = !x->ws_key[0];
    sws_field fields[SWS_MSG_FIELDS_MAX + 1];
    uint32_t n = sws_h1c_answer_fields(m, fields, SWS_MSG_FIELDS_MAX), k = 0;
    for (uint32_t i = 0; i < n; i++) {
        const sws_field *f = &fields[i];
        if (f->name_len == 20 && strncasecmp(f->name, "sec-websocket-accept", 20) == 0) {
            proved = x->ws_key[0] && sws_ws_accept_matches(x->ws_key, f->value, f->value_len);
            continue;
        }
        fields[k++] = *f;
    }
    if (!x->upgrading || !u || !proved)
        return -1;
    fields[k++] = SWS_FIELD_LIT("Via", "1.1 scalwsd");
    sws_answer a = {
        .status = 200, .length = SWS_BODY_STREAM, .relayed = true, .fields = fields, .nfields = k};
    if (sws_ex_head(px->w, x->c, &a) < 0)
        return -1;
    x->tunnel_open = true;
    x->resp_started = true;
    x->resp_status = 200;
    x->resp_up_ka = false;
    x->up_deadline = tl_loop_now(px->w->loop) + px_wait_ms(px, x);
    SWS_ADD(px->w->ctr.tunnels, 1);
    SWS_ADD(px->w->ctr.tunnels_active, 1);
    sws_health_passed(px->health, u->upstream);
    px_connect_fin(px, x); /* the client may have ended its side already */
    return 1;
}

static int switch_head(px_x *x, sws_msg *m) {
    if (x->connect)
        return connect_open(x, m);
    uint32_t up = m->nf;
    for (uint32_t i = 0; i < m->nf && up == m->nf; i++)
        if (sws_msg_name_is(m, i, "upgrade"))
            up = i;
    sws_up_conn *u = up_of(x);
    if (!x->upgrading || up == m->nf || !u)
        return -1;
    /* Every byte of the request went up before the tunnel takes the
     * connection; a plaintext write still reading x's buffer would outlive
     * x. The upstream has read the request to answer it, so its write has
     * completed already in practice: this is a guard, answered 502. */
    uint32_t going = u->write_inflight ? u->wlen : 0;
    if ((!u->tls && u->write_inflight) || x->wpos + going != x->olen)
        return -1;
    int upstream = u->upstream;
    sws_field fields[SWS_MSG_FIELDS_MAX + 3];
    uint32_t nf = sws_h1c_answer_fields(m, fields, SWS_MSG_FIELDS_MAX);
    fields[nf++] = sws_field_str("Upgrade", 7, m->buf + m->f[up].val_off, m->f[up].val_len);
    fields[nf++] = SWS_FIELD_LIT("Connection", "upgrade");
    fields[nf++] = SWS_FIELD_LIT("Via", "1.1 scalwsd");
    sws_answer a = {.status = 101,
                    .relayed = true,
                    .reason = m->buf + m->start_off,
                    .reason_len = m->start_len,
                    .fields = fields,
                    .nfields = nf};
    if (px_tunnel_begin(x->px, x, &a) < 0)
        return -1;
    x->resp_started = true;
    x->resp_status = 101;
    sws_health_passed(x->px->health, upstream);
    return 1;
}

static int resp_head(void *user, sws_msg *m) {
    px_x *x = user;
    sws_proxy *px = x->px;
    llhttp_t *p = &m->p;
    int status = p->status_code;
    if (status == 101)
        return switch_head(x, m);
    if (status >= 100 && status < 200) {
        x->resp_info = true; /* 100 Continue and friends: the client got the connection's */
        return 0;
    }
    /* A 2xx to an extended CONNECT would tell the client its tunnel is
     * open: only a 101 opens one, any other success is a bad answer. */
    if (x->connect && status < 300)
        return -1;
    sws_h1c_framing fr = sws_h1c_response_framing(m, x->req_head);
    sws_field fields[SWS_MSG_FIELDS_MAX + 1];
    uint32_t nf = sws_h1c_answer_fields(m, fields, SWS_MSG_FIELDS_MAX);
    fields[nf++] = SWS_FIELD_LIT("Via", "1.1 scalwsd");
    /* The length the upstream gave is the answer's (a HEAD's or a 304's
     * too); without one the body streams until the upstream's end. */
    sws_answer a = {.status = status,
                    .length = fr.has_length ? fr.length : SWS_BODY_STREAM,
                    .relayed = true,
                    .reason = m->buf + m->start_off,
                    .reason_len = m->start_len,
                    .fields = fields,
                    .nfields = nf};
    /* Compressed on the fly where the route says so and the upstream did
     * not (core/compress.c). */
    if (sws_compress_head(px->w, px->sc, x->c, &a, NULL, SWS_BODY_STREAM) < 0)
        return -1;
    x->resp_started = true;
    x->resp_status = status;
    x->resp_up_ka = !fr.to_close && !x->connect; /* the client's bytes may have gone up */
    sws_up_observe_latency(&px->pool, now_us() - x->t0_us);
    return fr.no_body ? 1 : 0;
}

static int resp_body(void *user, const char *d, size_t n) {
    px_x *x = user;
    x->resp_bytes += n;
    return sws_ex_body(x->px->w, x->c, d, n) < 0 ? -1 : 0;
}

static int resp_done(void *user, sws_msg *m) {
    px_x *x = user;
    if (x->resp_info)
        return 0;
    x->resp_up_ka = x->resp_up_ka && llhttp_should_keep_alive(&m->p);
    if (m->nf > m->head_nf && x->resp_started) {
        /* The upstream's trailer section, where the client's protocol can
         * carry it. It fits: the section is within the reader's head buffer
         * and the upstream's bytes are fed only while the output has
         * PX_SLACK room beyond them; were it refused (HTTP/2 out of memory)
         * it is dropped, as a recipient may (RFC 9110 6.5.1). */
        sws_field tf[SWS_MSG_FIELDS_MAX];
        uint32_t n = sws_h1c_trailer_fields(m, tf, SWS_MSG_FIELDS_MAX);
        if (n)
            (void)sws_ex_trailers(x->px->w, x->c, tf, n);
    }
    return 0;
}

static const sws_msg_cb resp_cb = {resp_head, resp_body, resp_done};

/* Feeds what the upstream sent. 1 when the response is complete, 0 for more,
 * negative when it is malformed. */
static int up_feed(px_x *x, const char *d, size_t len) {
    size_t off = 0;
    while (off < len) {
        size_t used;
        int rc = sws_msg_feed(&x->resp, d + off, len - off, &used);
        if (rc < 0)
            return rc;
        off += used;
        if (rc == SWS_MSG_DONE && (x->switched || x->tunnel_open)) {
            x->fed = (uint32_t)off; /* the rest is the tunnel's */
            return 1;
        }
        if (rc == SWS_MSG_DONE) {
            sws_msg_next(&x->resp);
            if (x->resp_info) {
                x->resp_info = false;
                continue;
            }
            if (off < len)
                x->resp_up_ka = false; /* bytes past the response: not a connection to trust */
            return 1;
        }
    }
    return 0;
}

/* ---- the exchange's life -------------------------------------------------- */

/* With TLS the engine's own records (the handshake) go out even while the
 * request is held, and plaintext is sealed once the handshake is done. */
static void flush_up_tls(sws_proxy *px, px_x *x, sws_up_conn *u) {
    uint32_t n = x->olen - x->wpos;
    if (!x->req_done && !x->connect && n <= PX_UP_HOLD)
        n = 0;
    int sealed = sws_up_tls_send(&px->pool, u, x->obuf + x->wpos, n);
    if (sealed < 0)
        x->wfail = true;
    else if (sealed > 0)
        u->sent = true;
}

void px_flush_up(sws_proxy *px, px_x *x) {
    sws_up_conn *u = up_of(x);
    if (u && u->tls && u->state == SWS_UP_BUSY && !u->write_inflight) {
        flush_up_tls(px, x, u);
        return;
    }
    if (!u || u->state != SWS_UP_BUSY || u->write_inflight || x->olen == x->wpos)
        return;
    if (!x->req_done && !x->connect && x->olen - x->wpos <= PX_UP_HOLD)
        return; /* a tunnel's bytes go as they come */
    tl_op op;
    uint32_t n = x->olen - x->wpos;
    if (tl_write(px->w->loop, u->h, x->obuf + x->wpos, n,
                 sws_token_of(px->sc->id, u->index, SWS_T_UP_WRITE), &op) < 0) {
        x->wfail = true;
        return;
    }
    u->wlen = n;
    u->write_inflight = true;
    u->sent = true;
}

/* After a part of the exchange moved: the connection writes what was
 * appended and reads what it held back. Inside `more` it does so itself. */
static void conn_kick(sws_proxy *px, sws_exchange *c) {
    if (!px->in_more)
        sws_ex_more(px->w, c);
}

static void exchange_end(sws_proxy *px, px_x *x) {
    sws_worker *w = px->w;
    sws_exchange *c = x->c;
    sws_up_conn *u = up_of(x);
    bool keep = x->resp_up_ka && x->req_done && u && x->olen == x->wpos && !u->write_inflight &&
                x->hcount == 0 && !x->has_end && sws_up_tls_clean(u);
    if (u)
        sws_health_passed(px->health, u->upstream);
    if (w->logs) {
        px_log_up(px, x);
        sws_ex_log(w, c, x->resp_status, x->resp_bytes);
        px_log_up_end(px);
    }
    px_x_give(px, x, keep);
    sws_ex_end(w, c);
    conn_kick(px, c);
}

/* An answer of our own (502, 504) before any byte of the upstream's: the
 * connection ends after it. Before the request was read whole, the
 * connection answers (and lingers); once answering, it ends the answer. */
static void x_error(sws_proxy *px, px_x *x, int status) {
    sws_exchange *c = x->c;
    bool answering = x->answering;
    px_log_up(px, x); /* the error's line names the upstream that failed */
    px_x_give(px, x, false);
    sws_ex_error(px->w, c, status);
    px_log_up_end(px);
    if (answering)
        conn_kick(px, c);
}

/* The upstream failed. Retries once, on a fresh connection, a request sent on
 * a pooled connection that died before a response byte, when the method is
 * idempotent (or nothing was sent yet) and everything sent is still at hand:
 * a request past the copy's bound (PX_REPLAY, 16 KiB) is answered 502 instead. */
void px_up_fail(sws_proxy *px, px_x *x, enum sws_up_err kind, int status) {
    sws_up_conn *u = up_of(x);
    if (!u)
        return;
    if (x->tunnel_open) {
        px_cut(px, x); /* a tunnel's end: no retry, no fault of the upstream's */
        return;
    }
    bool retry = kind == SWS_UPE_RESET && u->reused && !u->got_bytes && (x->idem || !u->sent) &&
                 !x->retried && !x->replay_over && !x->resp_started;
    int upstream = u->upstream;
    /* A connect that failed sent nothing: any request may go to another
     * upstream (nginx's proxy_next_upstream error timeout), so one dead
     * upstream costs its clients no 502 while health catches up. */
    bool connect_failed =
        kind == SWS_UPE_REFUSED || kind == SWS_UPE_UNREACHABLE || kind == SWS_UPE_CONNECT_TIMEOUT;
    if (!retry) /* a pooled connection found closed is no fault of the upstream's */
        sws_health_failed(px->health, px->pc, upstream, sws_health_now());
    if (connect_failed && !u->sent && !x->retried && !x->replay_over && !x->resp_started &&
        !x->head_names_up) {
        int other = pick_upstream(px, 1u << upstream);
        if (other >= 0) {
            retry = true;
            upstream = other;
        }
    }
    sws_pool_release(&px->pool, u, false);
    x->up = SWS_NIL;
    if (retry) {
        int rc = sws_pool_acquire(&px->pool, sws_ex_id(x->c), true, upstream);
        if (rc >= 0) {
            SWS_ADD(px->pool.st->retries, 1);
            x->up = (uint32_t)rc;
            x->log_up = (uint8_t)(upstream + 1);
            x->retried = true;
            x->wpos = 0;
            x->wfail = x->has_end = false;
            held_release_all(px->w, x);
            sws_msg_init(&x->resp, HTTP_RESPONSE, &resp_cb, x);
            x->up_deadline = tl_loop_now(px->w->loop) + px->pc->connect_timeout_ms;
            return;
        }
    }
    sws_up_error(&px->pool, kind);
    if (!x->resp_started) {
        x_error(px, x, status);
        return;
    }
    /* Cut mid-answer: what came is written, then the connection closes
     * without the answer's end (no last chunk, Content-Length unmet), so the
     * client cannot take it for complete. */
    px_cut(px, x);
}

/* A tunnel's bytes from the upstream, as they are, into the client's
 * stream: the caller found room for them. */
static void tunnel_down(sws_proxy *px, px_x *x, const char *d, size_t n) {
    if (n == 0)
        return;
    if (sws_ex_body(px->w, x->c, d, n) < 0) {
        x->wfail = true; /* cannot happen: room was asked; the tick ends it */
        return;
    }
    x->resp_bytes += n;
    SWS_ADD(px->w->ctr.tunnel_bytes_down, n);
    x->up_deadline = tl_loop_now(px->w->loop) + px_wait_ms(px, x);
}

void px_connect_fin(sws_proxy *px, px_x *x) {
    sws_up_conn *u = up_of(x);
    if (!x->tunnel_open || !x->req_done || x->up_fin || !u || u->write_inflight ||
        x->wpos != x->olen)
        return;
    x->up_fin = true;
    sws_up_tls_close(&px->pool, u);
    int fd = tl_handle_fd(px->w->loop, u->h);
    if (fd < 0 || shutdown(fd, SHUT_WR) < 0)
        x->wfail = true;
}

void px_cut(sws_proxy *px, px_x *x) {
    sws_exchange *c = x->c;
    if (px->w->logs) {
        px_log_up(px, x);
        sws_ex_log(px->w, c, x->resp_status, x->resp_bytes);
        px_log_up_end(px);
    }
    px_x_give(px, x, false);
    sws_ex_abort(px->w, c);
    conn_kick(px, c);
}

/* TLS: moves the handshake on (then sends the request), and decrypts what
 * came into the client's output while it has room. -1: the exchange is over
 * (x is gone); 0: plaintext waits for room (or for the answer to begin);
 * 1: nothing more can be decrypted now. */
static int tls_progress(sws_proxy *px, px_x *x, sws_up_conn *u) {
    sws_worker *w = px->w;
    sws_exchange *c = x->c;
    if (!sws_up_tls_established(u)) {
        int rc = sws_up_tls_handshake(u);
        if (rc < 0) {
            sws_up_tls_log_failure(&px->pool, u, px->sc->route->name);
            px_up_fail(px, x, SWS_UPE_TLS, 502);
            return -1;
        }
        px_flush_up(px, x); /* the handshake's records, then the request once done */
        if (rc == 0)
            return 1;
        x->up_deadline = tl_loop_now(w->loop) + px->pc->read_timeout_ms;
    }
    while (x->answering) {
        size_t room;
        sws_ex_room(w, c, &room);
        if (room <= PX_SLACK)
            return 0; /* the client has not taken what it has: `more` comes back */
        room -= PX_SLACK;
        int n = sws_up_tls_read(u, px->pool.tls_plain,
                                room < SWS_UP_TLS_PLAIN ? room : SWS_UP_TLS_PLAIN);
        if (n == SWS_TLS_WANT) {
            px_flush_up(px, x); /* what reading queued: a KeyUpdate's answer, say */
            return 1;
        }
        if (n == SWS_TLS_EOF) { /* close_notify: as the end of the stream */
            x->has_end = true;
            x->up_end = 0;
            return 1;
        }
        if (n < 0) {
            px_up_fail(px, x, SWS_UPE_TLS, 502);
            return -1;
        }
        u->got_bytes = true; /* a response byte: no retry past here */
        if (x->tunnel_open) {
            tunnel_down(px, x, px->pool.tls_plain, (size_t)n);
            continue;
        }
        int rc = up_feed(x, px->pool.tls_plain, (size_t)n);
        if (rc < 0) {
            px_up_fail(px, x, SWS_UPE_BAD_RESPONSE, 502);
            return -1;
        }
        if (rc == 1 && x->switched) {
            px_tunnel_adopt(px, x, px->pool.tls_plain + x->fed, (size_t)n - x->fed);
            return -1;
        }
        if (rc == 1 && x->tunnel_open) {
            tunnel_down(px, x, px->pool.tls_plain + x->fed, (size_t)n - x->fed);
            continue;
        }
        if (rc == 1) {
            exchange_end(px, x);
            return -1;
        }
    }
    return sws_up_tls_backlog(u) ? 0 : 1;
}

/* Moves what the upstream sent into the client's output while it has room,
 * then what ended the upstream's receive, then receives again. true when
 * the exchange is over (x is gone). */
bool px_x_progress(sws_proxy *px, px_x *x) {
    sws_worker *w = px->w;
    sws_exchange *c = x->c;
    sws_up_conn *u = up_of(x);
    if (u && u->tls) {
        int r = tls_progress(px, x, u);
        if (r < 0)
            return true;
        if (r == 0) {
            /* Back-pressure: what waits in the engine is bounded as held buffers are. */
            if (sws_up_tls_backlog(u) >= PX_HELD_MAX * SWS_UP_TLS_PLAIN && u->read_armed &&
                !u->recv_paused) {
                u->recv_paused = true;
                tl_cancel(w->loop, u->read_op);
            }
            return false;
        }
    }
    while (x->answering && x->hcount) {
        uint32_t i = x->hhead;
        sws_held *h = &w->hpool[i];
        size_t room;
        sws_ex_room(w, c, &room);
        if (room < h->len + PX_SLACK)
            break; /* the client has not taken what it has: `more` comes back */
        int rc = 0;
        if (x->tunnel_open)
            tunnel_down(px, x, h->data + h->off, h->len);
        else
            rc = up_feed(x, h->data + h->off, h->len);
        if (rc == 1 && x->tunnel_open) { /* its 101: what follows is the tunnel's */
            tunnel_down(px, x, h->data + h->off + x->fed, h->len - x->fed);
            rc = 0;
        }
        if (rc == 1 && x->switched) {
            /* The tunnel copies what follows the 101, then the buffer goes. */
            x->hhead = h->next;
            if (--x->hcount == 0)
                x->htail = SWS_NIL;
            px_tunnel_adopt(px, x, h->data + h->off + x->fed, h->len - x->fed);
            tl_buffer_release(w->loop, h->id);
            w->released++;
            h->next = w->hfree;
            w->hfree = i;
            return true;
        }
        tl_buffer_release(w->loop, h->id);
        w->released++;
        x->hhead = h->next;
        h->next = w->hfree;
        w->hfree = i;
        if (--x->hcount == 0)
            x->htail = SWS_NIL;
        if (rc < 0) {
            px_up_fail(px, x, SWS_UPE_BAD_RESPONSE, 502);
            return true;
        }
        if (rc == 1) {
            exchange_end(px, x);
            return true;
        }
    }
    if (!u)
        return false;
    if (x->hcount >= PX_HELD_MAX) {
        if (u->read_armed && !u->recv_paused) {
            u->recv_paused = true; /* back-pressure: until the client took some */
            tl_cancel(w->loop, u->read_op);
        }
        return false;
    }
    if (x->hcount)
        return false;
    if (x->has_end) {
        if (!x->answering)
            return false;
        x->has_end = false;
        if (x->tunnel_open) {
            /* The upstream's FIN ends the stream (END_STREAM), and with it
             * the tunnel; a reset resets the stream. */
            if (x->up_end == 0)
                exchange_end(px, x);
            else
                px_cut(px, x);
            return true;
        }
        if (x->up_end == 0 && x->resp_started && sws_msg_eof(&x->resp) == SWS_MSG_DONE) {
            x->resp_up_ka = false; /* close-delimited: complete, and the connection is done */
            exchange_end(px, x);
            return true;
        }
        /* Closed during the handshake: the upstream refused our TLS. */
        px_up_fail(px, x,
                   handshaking(u)    ? SWS_UPE_TLS
                   : x->resp_started ? SWS_UPE_TRUNCATED
                                     : SWS_UPE_RESET,
                   502);
        return true;
    }
    if (u->state == SWS_UP_BUSY && !u->read_armed && (u->recv_paused || u->starved))
        sws_pool_recv(&px->pool, u); /* on failure the tick tries again */
    return false;
}
