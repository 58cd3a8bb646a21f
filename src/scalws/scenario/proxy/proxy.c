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
#include "access_log.h"
#include "conn.h"
#include "sws.h"

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

#include "client_head.h"
#include "route.h"
#include "sws_msg.h"
#include "upstream.h"
#include "upstream_health.h"
#include "upstream_pick.h"
#include "upstream_tls.h"

#define PX_TICK_MS 100
/* What goes upstream: the rewritten head and the body. Bytes written stay
 * as the retry copy while the request has sent at most PX_REPLAY bytes. */
#define PX_OBUF 40960
#define PX_REPLAY 16384
/* Room kept for a rewritten head (at most SWS_MSG_HEAD_MAX plus the added
 * fields) and chunk framing, on top of what is fed. */
#define PX_SLACK 9216
/* w->resp_max: the longest part appended at once is one loop buffer's worth
 * plus PX_SLACK; the connection's output (4 x resp_max) holds 40 KiB. */
#define PX_RESP_MAX 10240
/* A request is held until it is complete, or until this much of it waits: a
 * fault that the strict parser finds late in a request that fits never
 * reaches the upstream at all. */
#define PX_UP_HOLD (PX_OBUF - 16384 - PX_SLACK)
/* Upstream buffers an exchange holds before its receive is paused. */
#define PX_HELD_MAX 4
/* Free exchanges kept beyond the last second's peak. */
#define PX_X_CACHE 4

/* A route's head is handed over whole once the route is chosen (conn.h): a
 * request not begun must find that much room. */
static_assert(PX_OBUF - PX_SLACK >= SWS_ROUTE_STASH, "a routed head must fit an exchange");

struct sws_proxy;

/* One request and its answer, from its first byte to its answer's end. */
typedef struct px_x {
    struct px_x *prev, *next; /* in flight (px->live), or the free list (next) */
    struct sws_proxy *px;
    sws_exchange *c; /* the client's exchange */
    uint32_t up;     /* pool slot, or SWS_NIL */
    uint64_t up_deadline;
    uint64_t t0_us;
    int resp_status;     /* of the answer being streamed, for the access log */
    uint64_t resp_bytes; /* body bytes of it so far (decoded, before our framing) */
    int up_end;          /* with has_end: the upstream's final receive result (0: EOF) */
    bool has_end;        /* ... waiting behind held buffers */
    bool wfail;          /* a write could not be started: failed at the next tick */
    bool req_done, answering, req_head, req_streams, req_http10, idem;
    bool resp_started, resp_info, resp_up_ka, retried, replay_over;
    bool head_names_up;    /* the head sent names its upstream (Host): no retry elsewhere */
    bool head_seen;        /* the request's head was complete */
    uint32_t hhead, htail; /* upstream input not yet fed (w->hpool), oldest first */
    uint32_t hcount;
    uint32_t olen, wpos; /* obuf: filled, and written (the retry copy is [0, olen)) */
    sws_msg resp;
    char obuf[PX_OBUF];
} px_x;

/* Per connection slot of the loop, shared by the loop's proxy instances
 * (one per proxy route): a connection has one exchange at a time, whichever
 * route serves it, and one peer. */
typedef struct px_slot {
    px_x *x;       /* its exchange, or NULL */
    uint64_t h;    /* the connection peer was looked up for (sws_ex_mark): slots are reused */
    char peer[48]; /* its address, for X-Forwarded-For; "" not looked up */
} px_slot;

struct sws_px_shared {
    uint32_t refs; /* proxy instances of the loop using it */
    uint32_t nslots;
    px_slot s[];
};

typedef struct sws_proxy {
    sws_worker *w;
    sws_scenario *sc; /* the instance this is the state of: its route, its id */
    /* The configuration served: its route's [proxy] keys, the one pointer
     * everything reads them by (set at init and reload_commit). */
    const sws_proxy_config *pc;
    sws_pool pool;
    sws_pick_state pick;
    sws_up_health *health;    /* its route's, the server's; NULL only in unit tests */
    struct sws_px_shared *sh; /* w->px_shared */
    px_x *live;
    px_x *free;
    uint32_t nfree, used, peak;
    bool in_more; /* inside the `more` hook: the connection flushes on return */
    bool tick_armed;
    uint64_t last_expire;
} sws_proxy;

static uint64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static sws_up_conn *up_of(px_x *x) {
    return x->up == SWS_NIL ? NULL : x->px->pool.slots[x->up];
}

/* tls = on and the handshake not done: its deadline is connect_timeout from
 * the connect, which nothing else moves. */
static bool handshaking(const sws_up_conn *u) {
    return u && u->tls && !sws_up_tls_established(u);
}

static px_slot *slot_of(const sws_proxy *px, const sws_exchange *c) {
    return &px->sh->s[sws_ex_id(c)];
}

/* c's peer as looked up for it, or "" (a slot's text may be an earlier
 * connection's: the handle tells). */
static const char *peer_of(const sws_proxy *px, const sws_exchange *c) {
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

/* ---- exchanges ------------------------------------------------------------ */

static const sws_msg_cb resp_cb;

static px_x *x_take(sws_proxy *px, sws_exchange *c) {
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

/* The exchange is over: its upstream goes back to the pool (keep) or is
 * closed, its held buffers to the loop, itself to the free list. */
static void x_give(sws_proxy *px, px_x *x, bool keep) {
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
    x->prev = NULL;
    x->next = px->free;
    px->free = x;
    px->nfree++;
    px->used--;
}

/* Once a second: as many free exchanges as the last second's peak needed. */
static void x_trim(sws_proxy *px) {
    uint32_t keep = px->peak - px->used + PX_X_CACHE;
    while (px->nfree > keep) {
        px_x *x = px->free;
        px->free = x->next;
        px->nfree--;
        free(x);
    }
    px->peak = px->used;
}

static px_x *x_of_up(sws_proxy *px, const sws_up_conn *u) {
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
        .peer = peer_of(px, x->c),
        .upstream = px->pc->up[u->upstream].text,
        .client_tls = sws_ex_secure(x->c),
        .streams = x->req_streams,
    };
    size_t hl = sws_px_request_head(&in, head, sizeof(head), &x->head_names_up);
    return hl && put_up(x, head, hl) == 0;
}

/* The request's head is complete: an upstream is chosen and the head that
 * goes to it written. 0, or the status to refuse the request with. */
static int req_head(px_x *x, const sws_head *m) {
    sws_proxy *px = x->px;
    if (m->method == HTTP_CONNECT)
        return 501;
    x->head_seen = true;
    x->req_head = m->method == HTTP_HEAD;
    x->idem = m->method == HTTP_GET || m->method == HTTP_HEAD || m->method == HTTP_OPTIONS ||
              m->method == HTTP_PUT || m->method == HTTP_DELETE;
    x->req_http10 = m->http_major == 1 && m->http_minor == 0;
    x->req_streams = m->streams;
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

static int put_up_cb(void *user, const char *d, size_t n) {
    return put_up(user, d, n);
}

/* ---- response callbacks: into the client's exchange ------------------------ */

static int resp_head(void *user, sws_msg *m) {
    px_x *x = user;
    sws_proxy *px = x->px;
    llhttp_t *p = &m->p;
    int status = p->status_code;
    if (status == 101)
        return -1; /* an upgrade was never asked for: Upgrade is not forwarded */
    if (status >= 100 && status < 200) {
        x->resp_info = true; /* 100 Continue and friends: the client got the connection's */
        return 0;
    }
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
    if (sws_ex_head(px->w, x->c, &a) < 0)
        return -1;
    x->resp_started = true;
    x->resp_status = status;
    x->resp_up_ka = !fr.to_close;
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
    if (!x->req_done && n <= PX_UP_HOLD)
        n = 0;
    int sealed = sws_up_tls_send(&px->pool, u, x->obuf + x->wpos, n);
    if (sealed < 0)
        x->wfail = true;
    else if (sealed > 0)
        u->sent = true;
}

static void flush_up(sws_proxy *px, px_x *x) {
    sws_up_conn *u = up_of(x);
    if (u && u->tls && u->state == SWS_UP_BUSY && !u->write_inflight) {
        flush_up_tls(px, x, u);
        return;
    }
    if (!u || u->state != SWS_UP_BUSY || u->write_inflight || x->olen == x->wpos)
        return;
    if (!x->req_done && x->olen - x->wpos <= PX_UP_HOLD)
        return;
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
    if (w->access_log)
        sws_ex_log(w, c, x->resp_status, x->resp_bytes);
    x_give(px, x, keep);
    sws_ex_end(w, c);
    conn_kick(px, c);
}

/* An answer of our own (502, 504) before any byte of the upstream's: the
 * connection ends after it. Before the request was read whole, the
 * connection answers (and lingers); once answering, it ends the answer. */
static void x_error(sws_proxy *px, px_x *x, int status) {
    sws_exchange *c = x->c;
    bool answering = x->answering;
    x_give(px, x, false);
    sws_ex_error(px->w, c, status);
    if (answering)
        conn_kick(px, c);
}

/* The upstream failed. Retries once, on a fresh connection, a request sent on
 * a pooled connection that died before a response byte, when the method is
 * idempotent (or nothing was sent yet) and everything sent is still at hand:
 * a request past the copy's bound (PX_REPLAY, 16 KiB) is answered 502 instead. */
static void up_fail(sws_proxy *px, px_x *x, enum sws_up_err kind, int status) {
    sws_up_conn *u = up_of(x);
    if (!u)
        return;
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
    sws_exchange *c = x->c;
    if (px->w->access_log)
        sws_ex_log(px->w, c, x->resp_status, x->resp_bytes);
    x_give(px, x, false);
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
            up_fail(px, x, SWS_UPE_TLS, 502);
            return -1;
        }
        flush_up(px, x); /* the handshake's records, then the request once done */
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
            flush_up(px, x); /* what reading queued: a KeyUpdate's answer, say */
            return 1;
        }
        if (n == SWS_TLS_EOF) { /* close_notify: as the end of the stream */
            x->has_end = true;
            x->up_end = 0;
            return 1;
        }
        if (n < 0) {
            up_fail(px, x, SWS_UPE_TLS, 502);
            return -1;
        }
        u->got_bytes = true; /* a response byte: no retry past here */
        int rc = up_feed(x, px->pool.tls_plain, (size_t)n);
        if (rc < 0) {
            up_fail(px, x, SWS_UPE_BAD_RESPONSE, 502);
            return -1;
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
static bool x_progress(sws_proxy *px, px_x *x) {
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
        int rc = up_feed(x, h->data + h->off, h->len);
        tl_buffer_release(w->loop, h->id);
        w->released++;
        x->hhead = h->next;
        h->next = w->hfree;
        w->hfree = i;
        if (--x->hcount == 0)
            x->htail = SWS_NIL;
        if (rc < 0) {
            up_fail(px, x, SWS_UPE_BAD_RESPONSE, 502);
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
        if (x->up_end == 0 && x->resp_started && sws_msg_eof(&x->resp) == SWS_MSG_DONE) {
            x->resp_up_ka = false; /* close-delimited: complete, and the connection is done */
            exchange_end(px, x);
            return true;
        }
        /* Closed during the handshake: the upstream refused our TLS. */
        up_fail(px, x,
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
    if (!x && !(x = x_take(px, c)))
        return 502;
    int st = req_head(x, sws_ex_request_head(c));
    if (st > 0) {
        x_give(px, x, false);
        return st;
    }
    flush_up(px, x);
    return 0;
}

static int proxy_request_body(sws_worker *w, sws_scenario *sc, sws_exchange *c, const char *d,
                              size_t len) {
    sws_proxy *px = sc->state;
    px_x *x = slot_of(px, c)->x;
    if (!x)
        return 502;
    if (sws_h1c_body(x->req_streams, put_up_cb, x, d, len) < 0) {
        x_give(px, x, false);
        return 400;
    }
    if (x->up != SWS_NIL && !handshaking(up_of(x)))
        /* Held while the client sends: that wait is not the upstream's. */
        x->up_deadline = tl_loop_now(w->loop) + px->pc->read_timeout_ms;
    flush_up(px, x);
    return 0;
}

static int proxy_request_end(sws_worker *w, sws_scenario *sc, sws_exchange *c) {
    (void)w;
    sws_proxy *px = sc->state;
    px_x *x = slot_of(px, c)->x;
    if (!x)
        return 502;
    if (sws_h1c_body_end(x->req_streams, put_up_cb, x) < 0) {
        x_give(px, x, false);
        return 400;
    }
    x->req_done = true;
    flush_up(px, x);
    return 0;
}

static int proxy_answer(sws_worker *w, sws_scenario *sc, sws_exchange *c) {
    (void)w;
    sws_proxy *px = sc->state;
    px_x *x = slot_of(px, c)->x;
    if (!x || !x->req_done || x->up == SWS_NIL)
        return -EPROTO;
    x->answering = true;
    flush_up(px, x);
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
    x_progress(px, x);
    px->in_more = false;
}

/* The client connection ended (its close completed). An exchange cut short
 * is logged with the status it had begun to answer, or nginx's 499 for a
 * client that left before the answer began. */
static void proxy_conn_end(sws_worker *w, sws_scenario *sc, sws_exchange *c) {
    sws_proxy *px = sc->state;
    if (!px)
        return;
    const char *peer = peer_of(px, c);
    px_x *x = slot_of(px, c)->x;
    /* A request the connection refused (a strict-parser fault mid-body) has
     * its line already. The socket is closed by now: the peer is the one
     * looked up for X-Forwarded-For. */
    if (x && w->access_log && x->head_seen && !sws_ex_refused(c))
        sws_ex_log_peer(w, c, peer[0] ? peer : "-", x->resp_started ? x->resp_status : 499,
                        x->resp_bytes);
    if (!x || x->px != px)
        return;
    x_give(px, x, false);
}

/* ---- upstream completions ------------------------------------------------- */

static void on_up_connect(sws_proxy *px, sws_up_conn *u, const tl_completion *e) {
    px_x *x = x_of_up(px, u);
    if (u->state != SWS_UP_CONNECTING || !x)
        return;
    if (e->res < 0) {
        enum sws_up_err k = e->res == -ECONNREFUSED ? SWS_UPE_REFUSED
                            : e->res == -ENETUNREACH || e->res == -EHOSTUNREACH
                                ? SWS_UPE_UNREACHABLE
                            : e->res == -ETIMEDOUT ? SWS_UPE_CONNECT_TIMEOUT
                                                   : SWS_UPE_OTHER;
        up_fail(px, x, k, 502);
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
        up_fail(px, x, SWS_UPE_OTHER, 502);
        return;
    }
    if (px->pool.tls && sws_up_tls_start(&px->pool, u) < 0) {
        up_fail(px, x, SWS_UPE_TLS, 502);
        return;
    }
    flush_up(px, x);
}

static void on_up_write(sws_proxy *px, sws_up_conn *u, const tl_completion *e) {
    u->write_inflight = false;
    sws_up_tls_written(&px->pool, u);
    px_x *x = x_of_up(px, u);
    if (u->state != SWS_UP_BUSY || !x)
        return;
    if (e->res < 0) {
        up_fail(px, x, SWS_UPE_RESET, 502);
        return;
    }
    x->wpos += u->wlen;
    u->wlen = 0;
    if (x->replay_over && x->wpos == x->olen)
        x->olen = x->wpos = 0; /* no copy is kept: the room comes back at once */
    if (!handshaking(u))       /* a handshake has connect_timeout from the connect, writes or not */
        x->up_deadline = tl_loop_now(px->w->loop) + px->pc->read_timeout_ms;
    flush_up(px, x);
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
    px_x *x = u->state == SWS_UP_BUSY ? x_of_up(px, u) : NULL;
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
            x->up_deadline = tl_loop_now(w->loop) + px->pc->read_timeout_ms;
        int rc = sws_up_tls_feed(u, e->u.buf.data, (size_t)e->res);
        tl_buffer_release(w->loop, e->u.buf.id);
        w->released++;
        if (rc < 0) {
            up_fail(px, x, SWS_UPE_OTHER, 502);
            return;
        }
    } else if (has_buf && e->res > 0) {
        u->got_bytes = true;
        x->up_deadline = tl_loop_now(w->loop) + px->pc->read_timeout_ms;
        uint32_t i = w->hfree;
        if (i == SWS_NIL) { /* cannot happen: one node per loop buffer */
            tl_buffer_release(w->loop, e->u.buf.id);
            up_fail(px, x, SWS_UPE_OTHER, 502);
            return;
        }
        w->hfree = w->hpool[i].next;
        w->hpool[i] = (sws_held){.id = e->u.buf.id,
                                 .off = 0,
                                 .len = (uint32_t)e->res,
                                 .next = SWS_NIL,
                                 .data = e->u.buf.data};
        if (x->htail == SWS_NIL)
            x->hhead = i;
        else
            w->hpool[x->htail].next = i;
        x->htail = i;
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
    if (!x_progress(px, x) && x->answering)
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
            up_fail(px, x, SWS_UPE_RESET, 502);
        } else if (now >= x->up_deadline) {
            up_fail(px, x,
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
        x_trim(px);
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
static uint32_t proxy_extra_handles(const sws_config *cfg) {
    const sws_routes *t = cfg->routes;
    if (!t)
        return cfg->scenario == SWS_SCENARIO_PROXY
                   ? cfg->max_connections * 2 + pool_handles(&cfg->proxy)
                   : 0;
    uint32_t n = 0;
    bool any = false;
    for (int i = 0; i < t->n; i++) {
        if (t->r[i].cfg.scenario == SWS_SCENARIO_PROXY) {
            any = true;
            n += pool_handles(&t->r[i].cfg.proxy);
        }
    }
    return any ? cfg->max_connections * 2 + n : 0;
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
        w->px_shared = calloc(1, sizeof(*w->px_shared) + w->nslots * sizeof(px_slot));
        if (!w->px_shared)
            return -ENOMEM;
        w->px_shared->nslots = w->nslots;
    }
    px->sh = w->px_shared;
    px->sh->refs++;
    sws_up_stats *st = sws_worker_upstats(w, sc->route->stat_slot);
    if (!st)
        return -ENOMEM;
    w->resp_max = PX_RESP_MAX;
    int rc = sws_pool_init(&px->pool, w->loop, px->pc,
                           w->cfg->max_connections * 2 + pool_handles(px->pc), sc->id, st);
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
    .conn_end = proxy_conn_end,
    .turn_done = sws_conn_turn_done,
    .sweep = sws_conn_sweep,
    .drain = proxy_drain,
    .finished = proxy_finished,
    .reload_commit = proxy_reload_commit,
    .metrics = sws_proxy_metrics,
};
