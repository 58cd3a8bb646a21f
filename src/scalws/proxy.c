/* The proxy scenario: a per-loop connection machine that forwards each client
 * request to an upstream taken from this loop's pool and streams the answer
 * back. Bodies flow through fixed buffers with back-pressure (a side is read
 * only while the other side's output has room); nothing is buffered whole. */
#include "access_log.h"
#include "sws.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "forwarded.h"
#include "sws_msg.h"
#include "upstream.h"
#include "upstream_health.h"
#include "upstream_pick.h"

#define PX_TICK_MS 100
#define PX_LINGER_MS 2000

#define PX_IN 16384
#define PX_OUT 40960
#define PX_REPLAY 16384
/* Room kept for a rewritten head (at most SWS_MSG_HEAD_MAX plus the added
 * fields) and chunk framing, on top of one full read. */
#define PX_HEAD_SLACK 9216

typedef struct px_sess {
    uint32_t index;
    tl_handle h;
    tl_op read_op;
    struct sws_proxy *px;
    sws_phase phase; /* its life (sws.h); changed by sess_phase() only */
    bool read_armed, write_inflight, eof, dl_idle;
    bool req_done, resp_started, resp_done, resp_info, resp_up_ka;
    bool req_ka, req_head, req_chunked, req_http10, idem;
    bool resp_chunked_out, retried, replay_over;
    bool head_names_up; /* the head sent names its upstream (Host): no retry elsewhere */
    int bad_status;     /* chosen by a callback that refused the request */
    int chk_status;     /* the strict parser refused what follows chk_off with this status */
    uint32_t chk_off;   /* in[] bytes the strict parser has passed: only these reach req */
    uint32_t up;        /* pool slot, or SWS_NIL */
    uint64_t deadline, up_deadline;
    uint64_t t0_us;
    struct px_sess *prev, *next;
    uint32_t in_off, in_len, olen, wlen, rlen;
    int resp_status;     /* of the answer being streamed, for the access log */
    uint64_t resp_bytes; /* body bytes of it so far (decoded, before our framing) */
    bool logged;         /* the current exchange has its access log line */
    char peer[48];
    /* The respond scenario's strict parser, with the loop's limits, sees every
     * client byte before req does: a request that breaks a limit or could be
     * read two ways is refused before a byte of it is forwarded. */
    sws_http_parser chk;
    sws_msg req, resp;
    char in[PX_IN];
    char out[PX_OUT];
    char replay[PX_REPLAY];         /* what was sent upstream, for one retry */
    char log[SWS_HTTP_LOG_STORAGE]; /* lent to chk while the access log is on */
} px_sess;

typedef struct sws_proxy {
    sws_worker *w;
    sws_pool pool;
    sws_pick_state pick;
    sws_up_health *health; /* the server's; NULL only in unit tests */
    px_sess **slots;
    uint32_t nslots;
    uint32_t *free_idx;
    uint32_t nfree;
    px_sess *active;
    uint32_t nlive;
    bool draining;
    bool tick_armed;
    uint64_t last_expire;
} sws_proxy;

static uint64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* The one place a session's phase changes (the steps: sws_phase_may). What
 * entering it means is done by the caller: sess_close, sess_end, sess_free. */
static void sess_phase(px_sess *s, sws_phase to) {
    assert(sws_phase_may(s->phase, to));
    s->phase = to;
}

/* No further request: the answer being streamed is the last. linger: part
 * of a request is still unread, so the close is a half-close and a drain. */
static void sess_last(px_sess *s, bool linger) {
    if (s->phase == SWS_PH_OPEN)
        sess_phase(s, linger ? SWS_PH_LAST_LINGER : SWS_PH_LAST);
    else if (s->phase == SWS_PH_LAST && linger)
        sess_phase(s, SWS_PH_LAST_LINGER);
}

static sws_up_conn *up_of(sws_proxy *px, px_sess *s) {
    return s->up == SWS_NIL ? NULL : px->pool.slots[s->up];
}

/* The one place an upstream is chosen: by [proxy] balance among those health
 * allows, never one in the mask `exclude` (an upstream that just failed). -1: none. */
static int pick_upstream(sws_proxy *px, uint32_t exclude) {
    const sws_proxy_config *cfg = px->pool.cfg;
    uint32_t usable = sws_health_usable(px->health, cfg, sws_health_now()) & ~exclude;
    return sws_pick(cfg, &px->pick, px->pool.inflight, usable);
}

/* ---- output helpers ----------------------------------------------------- */

typedef struct wbuf {
    char *p;
    uint32_t *len;
    uint32_t cap;
    bool over;
} wbuf;

static void wr(wbuf *b, const char *d, size_t n) {
    if (b->over || *b->len + n > b->cap) {
        b->over = true;
        return;
    }
    memcpy(b->p + *b->len, d, n);
    *b->len += (uint32_t)n;
}

static void wrs(wbuf *b, const char *s) {
    wr(b, s, strlen(s));
}

static void wr_chunk(wbuf *b, const char *d, size_t n) {
    char hdr[24];
    int k = snprintf(hdr, sizeof(hdr), "%zx\r\n", n);
    wr(b, hdr, (size_t)k);
    wr(b, d, n);
    wr(b, "\r\n", 2);
}

/* Appends to the upstream's output and to the replay copy. */
static int put_up(px_sess *s, sws_up_conn *u, const char *d, size_t n) {
    if (u->olen + n > SWS_UP_OBUF)
        return -1;
    memcpy(u->obuf + u->olen, d, n);
    u->olen += (uint32_t)n;
    if (!s->replay_over) {
        if (s->rlen + n > PX_REPLAY) {
            s->replay_over = true;
        } else {
            memcpy(s->replay + s->rlen, d, n);
            s->rlen += (uint32_t)n;
        }
    }
    return 0;
}

static bool hop_by_hop(const sws_msg *m, uint32_t i) {
    static const char *const names[] = {"connection", "keep-alive",        "proxy-connection", "te",
                                        "trailer",    "transfer-encoding", "upgrade"};
    for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
        if (sws_msg_name_is(m, i, names[k]))
            return true;
    /* Fields named by Connection are hop-by-hop too (RFC 9110 7.6.1). */
    char name[64];
    uint32_t nl = m->f[i].name_len;
    if (nl >= sizeof(name))
        return false;
    memcpy(name, m->buf + m->f[i].name_off, nl);
    name[nl] = '\0';
    for (uint32_t j = 0; j < m->nf; j++)
        if (sws_msg_name_is(m, j, "connection") && sws_msg_value_has(m, j, name))
            return true;
    return false;
}

static void wr_field(wbuf *b, const sws_msg *m, uint32_t i) {
    wr(b, m->buf + m->f[i].name_off, m->f[i].name_len);
    wr(b, ": ", 2);
    wr(b, m->buf + m->f[i].val_off, m->f[i].val_len);
    wr(b, "\r\n", 2);
}

/* ---- request callbacks -------------------------------------------------- */

static int req_head(void *user, sws_msg *m) {
    px_sess *s = user;
    sws_proxy *px = s->px;
    llhttp_t *p = &m->p;
    if (p->method == HTTP_CONNECT) {
        s->bad_status = 501;
        return -1;
    }
    s->req_head = p->method == HTTP_HEAD;
    s->logged = false;
    s->resp_bytes = 0;
    s->idem = p->method == HTTP_GET || p->method == HTTP_HEAD || p->method == HTTP_OPTIONS ||
              p->method == HTTP_PUT || p->method == HTTP_DELETE;
    s->req_http10 = p->http_major == 1 && p->http_minor == 0;
    s->req_ka = llhttp_should_keep_alive(p);
    s->req_chunked = (p->flags & F_CHUNKED) != 0;
    bool has_body = s->req_chunked || ((p->flags & F_CONTENT_LENGTH) && p->content_length > 0);

    int pick = pick_upstream(px, 0);
    int rc = pick < 0 ? -EHOSTUNREACH : sws_pool_acquire(&px->pool, s->index, false, pick);
    if (rc < 0) {
        sws_up_error(&px->pool, pick < 0 ? SWS_UPE_NONE_USABLE : SWS_UPE_OTHER);
        s->bad_status = 502;
        return -1;
    }
    s->up = (uint32_t)rc;
    sws_up_conn *u = px->pool.slots[rc];
    if (u->read_armed && PX_OUT - s->olen < SWS_UP_RBUF + PX_HEAD_SLACK) {
        /* The idle watch read would become this exchange's first response
         * read, but the output has no room for a full one yet (an answer
         * before is still flushing): cancel it, and send once it is back. */
        tl_cancel(px->w->loop, u->read_op);
        u->cancelling = true;
    }
    s->rlen = 0;
    s->replay_over = false;
    s->retried = false;
    s->t0_us = now_us();
    uint64_t now = tl_loop_now(px->w->loop);
    s->up_deadline = now + (u->state == SWS_UP_CONNECTING ? px->pool.cfg->connect_timeout_ms
                                                          : px->pool.cfg->read_timeout_ms);

    char head[SWS_MSG_HEAD_MAX + 512];
    uint32_t hl = 0;
    wbuf b = {head, &hl, sizeof(head), false};
    wrs(&b, llhttp_method_name((llhttp_method_t)p->method));
    wr(&b, " ", 1);
    wr(&b, m->buf + m->start_off, m->start_len);
    wrs(&b, " HTTP/1.1\r\n");
    const sws_proxy_config *cfg = px->pool.cfg;
    bool expect = false, host = false;
    for (uint32_t i = 0; i < m->nf; i++) {
        if (hop_by_hop(m, i) || sws_forwarded_owns(cfg, m, i))
            continue;
        if (sws_msg_name_is(m, i, "host")) {
            host = cfg->host_mode == SWS_HOST_CLIENT;
            if (!host)
                continue; /* host = upstream or a value: replaced below */
        }
        if (sws_msg_name_is(m, i, "expect")) {
            /* Answered here: the upstream sees the body without waiting. */
            expect = sws_msg_value_has(m, i, "100-continue");
            continue;
        }
        wr_field(&b, m, i);
    }
    size_t fl = hl;
    if (sws_forwarded_build(cfg, m, s->peer, px->w->cfg->listen_tls, head, sizeof(head), &fl) < 0)
        b.over = true;
    hl = (uint32_t)fl;
    wrs(&b, "Via: 1.1 scalwsd\r\n");
    s->head_names_up = false;
    if (cfg->host_mode == SWS_HOST_FIXED) {
        wrs(&b, "Host: ");
        wrs(&b, cfg->host);
        wrs(&b, "\r\n");
    } else if (!host) {
        /* host = upstream, or an HTTP/1.0 request without Host: what goes
         * upstream is HTTP/1.1, which requires one (RFC 9112 3.2), the
         * upstream's own name, as nginx's default $proxy_host. */
        wrs(&b, "Host: ");
        wrs(&b, cfg->up[u->upstream].text);
        wrs(&b, "\r\n");
        s->head_names_up = true;
    }
    if (s->req_chunked)
        wrs(&b, "Transfer-Encoding: chunked\r\n");
    wr(&b, "\r\n", 2);
    if (b.over || put_up(s, u, head, hl) < 0) {
        s->bad_status = 431;
        return -1;
    }
    if (expect && has_body && !s->req_http10) {
        static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
        wbuf c = {s->out, &s->olen, PX_OUT, false};
        wr(&c, cont, sizeof(cont) - 1);
    }
    return 0;
}

static int req_body(void *user, const char *d, size_t n) {
    px_sess *s = user;
    sws_up_conn *u = up_of(s->px, s);
    if (!u)
        return -1;
    if (s->req_chunked) {
        char hdr[24];
        int k = snprintf(hdr, sizeof(hdr), "%zx\r\n", n);
        if (put_up(s, u, hdr, (size_t)k) < 0 || put_up(s, u, d, n) < 0 ||
            put_up(s, u, "\r\n", 2) < 0)
            return -1;
        return 0;
    }
    return put_up(s, u, d, n);
}

static int req_done(void *user, sws_msg *m) {
    (void)m;
    px_sess *s = user;
    sws_up_conn *u = up_of(s->px, s);
    if (u && s->req_chunked && put_up(s, u, "0\r\n\r\n", 5) < 0)
        return -1;
    s->req_done = true;
    return 0;
}

static const sws_msg_cb req_cb = {req_head, req_body, req_done};

/* ---- response callbacks ------------------------------------------------- */

static int resp_head(void *user, sws_msg *m) {
    px_sess *s = user;
    sws_proxy *px = s->px;
    llhttp_t *p = &m->p;
    int status = p->status_code;
    if (status == 101)
        return -1; /* an upgrade was never asked for: Upgrade is not forwarded */
    if (status >= 100 && status < 200) {
        s->resp_info = true; /* 100 Continue and friends: the client got ours */
        return 0;
    }
    bool nobody = s->req_head || status == 204 || status == 304;
    bool chunked = (p->flags & F_CHUNKED) != 0;
    bool eofbody = !nobody && !chunked && !(p->flags & F_CONTENT_LENGTH);
    bool ka = s->req_ka && !px->draining && !s->eof;
    wbuf b = {s->out, &s->olen, PX_OUT, false};
    char line[32];
    int k = snprintf(line, sizeof(line), "HTTP/1.1 %d ", status);
    wr(&b, line, (size_t)k);
    wr(&b, m->buf + m->start_off, m->start_len);
    wr(&b, "\r\n", 2);
    for (uint32_t i = 0; i < m->nf; i++)
        if (!hop_by_hop(m, i))
            wr_field(&b, m, i);
    wrs(&b, "Via: 1.1 scalwsd\r\n");
    s->resp_chunked_out = false;
    if (!nobody && (chunked || eofbody)) {
        if (!s->req_http10) {
            wrs(&b, "Transfer-Encoding: chunked\r\n");
            s->resp_chunked_out = true;
        } else {
            ka = false; /* an HTTP/1.0 client learns the end from the close */
        }
    }
    if (!ka) {
        wrs(&b, "Connection: close\r\n");
        sess_last(s, false);
    } else if (s->req_http10) {
        wrs(&b, "Connection: keep-alive\r\n");
    }
    wr(&b, "\r\n", 2);
    if (b.over)
        return -1;
    s->resp_started = true;
    s->resp_status = status;
    s->resp_up_ka = !eofbody;
    sws_up_observe_latency(&px->pool, now_us() - s->t0_us);
    return nobody ? 1 : 0;
}

static int resp_body(void *user, const char *d, size_t n) {
    px_sess *s = user;
    wbuf b = {s->out, &s->olen, PX_OUT, false};
    s->resp_bytes += n;
    if (s->resp_chunked_out)
        wr_chunk(&b, d, n);
    else
        wr(&b, d, n);
    return b.over ? -1 : 0;
}

static int resp_done(void *user, sws_msg *m) {
    px_sess *s = user;
    if (s->resp_info)
        return 0;
    if (s->resp_chunked_out) {
        wbuf b = {s->out, &s->olen, PX_OUT, false};
        wr(&b, "0\r\n\r\n", 5);
        if (b.over)
            return -1;
    }
    s->resp_done = true;
    s->resp_up_ka = s->resp_up_ka && llhttp_should_keep_alive(&m->p);
    return 0;
}

static const sws_msg_cb resp_cb = {resp_head, resp_body, resp_done};

/* ---- session machinery -------------------------------------------------- */

static void process_client(sws_proxy *px, px_sess *s);
static void exchange_end(sws_proxy *px, px_sess *s);

static void list_del(sws_proxy *px, px_sess *s) {
    if (s->prev)
        s->prev->next = s->next;
    else
        px->active = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->prev = s->next = NULL;
}

/* The access log line of the current exchange, once: from the request the
 * reader holds (its head stays in it until sws_msg_next), or, for one refused
 * before its head was read, from what the strict parser kept of it. */
static void log_exchange(sws_proxy *px, px_sess *s, int status, uint64_t bytes) {
    sws_worker *w = px->w;
    if (s->logged || !w->access_log)
        return;
    s->logged = true;
    const sws_msg *m = &s->req;
    if (!m->headers_done) {
        sws_access_log_parsed(w, s->peer, &s->chk, status, bytes);
        return;
    }
    char line[SWS_HTTP_LOG_FIELD_MAX];
    int n = snprintf(line, sizeof(line), "%s %.*s HTTP/%d.%d",
                     llhttp_method_name((llhttp_method_t)m->p.method), (int)m->start_len,
                     m->buf + m->start_off, m->p.http_major, m->p.http_minor);
    sws_log_line l = {.peer = s->peer,
                      .request = line,
                      .request_len = n < 0                      ? 0
                                     : (size_t)n < sizeof(line) ? (size_t)n
                                                                : sizeof(line) - 1,
                      .status = status,
                      .bytes = bytes};
    for (uint32_t i = 0; i < m->nf; i++) {
        const char *v = m->buf + m->f[i].val_off;
        if (!l.referer && sws_msg_name_is(m, i, "referer")) {
            l.referer = v;
            l.referer_len = m->f[i].val_len;
        } else if (!l.user_agent && sws_msg_name_is(m, i, "user-agent")) {
            l.user_agent = v;
            l.user_agent_len = m->f[i].val_len;
        }
    }
    sws_access_log(w, &l);
}

static void sess_free(sws_proxy *px, px_sess *s) {
    sess_phase(s, SWS_PH_FREE);
    list_del(px, s);
    px->free_idx[px->nfree++] = s->index;
    px->nlive--;
    SWS_ADD(px->w->ctr.active, (uint64_t)-1);
    SWS_ADD(px->w->ctr.closed, 1);
}

static void sess_close(sws_proxy *px, px_sess *s) {
    if (sws_phase_gone(s->phase))
        return;
    sess_phase(s, SWS_PH_CLOSING);
    /* An exchange cut short: the status it had begun to answer, or nginx's 499
     * for a client that left before the answer began. */
    if (s->req.headers_done)
        log_exchange(px, s, s->resp_started ? s->resp_status : 499, s->resp_bytes);
    sws_up_conn *u = up_of(px, s);
    if (u) {
        sws_pool_release(&px->pool, u, false);
        s->up = SWS_NIL;
    }
    if (tl_close(px->w->loop, s->h, sws_token(s->index, SWS_T_PX_CLOSE)) < 0)
        sess_free(px, s);
}

static void linger_read(sws_proxy *px, px_sess *s) {
    if (tl_read(px->w->loop, s->h, s->in, PX_IN, sws_token(s->index, SWS_T_PX_READ), &s->read_op) <
        0) {
        sess_close(px, s);
        return;
    }
    s->read_armed = true;
}

/* Ends a connection whose answer is flushed. With request bytes still on the
 * wire a close would send a reset that can destroy the answer before the
 * client reads it: shut the write side and drain first (nginx's lingering
 * close), bounded by PX_LINGER_MS. */
static void sess_end(sws_proxy *px, px_sess *s) {
    if (sws_phase_gone(s->phase) || s->phase == SWS_PH_LINGERING)
        return;
    int fd = s->phase == SWS_PH_LAST_LINGER && !s->eof ? tl_handle_fd(px->w->loop, s->h) : -1;
    if (fd < 0 || shutdown(fd, SHUT_WR) < 0) {
        sess_close(px, s);
        return;
    }
    sess_phase(s, SWS_PH_LINGERING);
    s->deadline = tl_loop_now(px->w->loop) + PX_LINGER_MS;
    if (!s->read_armed)
        linger_read(px, s); /* else the cancelled read comes back and re-arms */
}

static void flush_client(sws_proxy *px, px_sess *s) {
    if (s->write_inflight || s->olen == 0 || sws_phase_gone(s->phase))
        return;
    tl_op op;
    if (tl_write(px->w->loop, s->h, s->out, s->olen, sws_token(s->index, SWS_T_PX_WRITE), &op) <
        0) {
        sess_close(px, s);
        return;
    }
    s->wlen = s->olen;
    s->write_inflight = true;
}

static void stop_reading(sws_proxy *px, px_sess *s) {
    if (s->read_armed)
        tl_cancel(px->w->loop, s->read_op);
}

/* An answer of our own (400, 502, 504...): the connection ends after it. It
 * counts in errors_total by status, like the respond scenario's; a request
 * that was read whole and then failed upstream (502, 504) counts in
 * requests_total as well, since it was answered. */
static void answer_error(sws_proxy *px, px_sess *s, int status, bool request) {
    sws_up_conn *u = up_of(px, s);
    if (u) {
        sws_pool_release(&px->pool, u, false);
        s->up = SWS_NIL;
    }
    size_t n =
        sws_http_error(s->out + s->olen, PX_OUT - s->olen, status, px->w->date.str, s->req_head);
    SWS_ADD(px->w->ctr.errors[sws_status_slot(status)], 1);
    log_exchange(px, s, status, s->req_head ? 0 : sws_http_error_body_len(status));
    if (request)
        SWS_ADD(px->w->ctr.requests, 1);
    sess_last(s, !s->req_done);
    stop_reading(px, s);
    if (n == 0) {
        sess_close(px, s);
        return;
    }
    s->olen += (uint32_t)n;
    flush_client(px, s);
    if (!s->write_inflight && !sws_phase_gone(s->phase))
        sess_end(px, s);
}

/* A request is held until it is complete, or until its output holds this
 * much (a body larger than that is streamed): a fault that the strict parser
 * finds late in a request that fits never reaches the upstream at all, and
 * one later in a streamed body ends the upstream connection mid-request. At
 * this level there is always room for one more read (process_client). */
#define PX_UP_HOLD (SWS_UP_OBUF - PX_IN - PX_HEAD_SLACK)

static void flush_up(sws_proxy *px, px_sess *s) {
    sws_up_conn *u = up_of(px, s);
    if (!u || u->state != SWS_UP_BUSY || u->write_inflight || u->olen == 0)
        return;
    if (!s->req_done && u->olen <= PX_UP_HOLD)
        return;
    if (u->cancelling)
        return; /* bytes that came while it was idle must not pass for the answer */
    tl_op op;
    if (tl_write(px->w->loop, u->h, u->obuf, u->olen, sws_token(u->index, SWS_T_UP_WRITE), &op) <
        0) {
        u->olen = 0; /* the failure is seen as an error on the upstream read */
        return;
    }
    u->wlen = u->olen;
    u->write_inflight = true;
    u->sent = true;
}

static void arm_up_read(sws_proxy *px, px_sess *s) {
    sws_up_conn *u = up_of(px, s);
    if (!u || u->state != SWS_UP_BUSY || u->read_armed || s->resp_done)
        return;
    if (PX_OUT - s->olen < SWS_UP_RBUF + PX_HEAD_SLACK)
        return; /* back-pressure: the client has not taken what we have */
    if (tl_read(px->w->loop, u->h, u->rbuf, SWS_UP_RBUF, sws_token(u->index, SWS_T_UP_READ),
                &u->read_op) == 0)
        u->read_armed = true;
}

static void client_arm_read(sws_proxy *px, px_sess *s) {
    if (s->read_armed || s->phase != SWS_PH_OPEN || s->eof || s->req_done || s->chk_status ||
        s->in_len >= PX_IN)
        return;
    sws_up_conn *u = up_of(px, s);
    if (u && SWS_UP_OBUF - u->olen < PX_IN + PX_HEAD_SLACK)
        return;
    if (tl_read(px->w->loop, s->h, s->in + s->in_len, PX_IN - s->in_len,
                sws_token(s->index, SWS_T_PX_READ), &s->read_op) < 0) {
        sess_close(px, s);
        return;
    }
    s->read_armed = true;
}

/* The upstream failed. Retries once, on a fresh connection, a request sent on
 * a pooled connection that died before a response byte, when the method is
 * idempotent (or nothing was sent yet) and everything sent is still at hand:
 * a request whose copy passed PX_REPLAY (16 KiB) is answered 502 instead. */
static void up_fail(sws_proxy *px, px_sess *s, enum sws_up_err kind, int status) {
    sws_up_conn *u = up_of(px, s);
    if (!u)
        return;
    bool retry = kind == SWS_UPE_RESET && u->reused && !u->got_bytes && (s->idem || !u->sent) &&
                 !s->retried && !s->replay_over && !s->resp_started;
    int upstream = u->upstream;
    /* A connect that failed sent nothing: any request may go to another
     * upstream (nginx's proxy_next_upstream error timeout), so one dead
     * upstream costs its clients no 502 while health catches up. */
    bool connect_failed =
        kind == SWS_UPE_REFUSED || kind == SWS_UPE_UNREACHABLE || kind == SWS_UPE_CONNECT_TIMEOUT;
    if (!retry) /* a pooled connection found closed is no fault of the upstream's */
        sws_health_failed(px->health, px->pool.cfg, upstream, sws_health_now());
    if (connect_failed && !u->sent && !s->retried && !s->replay_over && !s->resp_started &&
        !s->head_names_up) {
        int other = pick_upstream(px, 1u << upstream);
        if (other >= 0) {
            retry = true;
            upstream = other;
        }
    }
    sws_pool_release(&px->pool, u, false);
    s->up = SWS_NIL;
    if (retry) {
        int rc = sws_pool_acquire(&px->pool, s->index, true, upstream);
        if (rc >= 0) {
            SWS_ADD(px->pool.st.retries, 1);
            s->up = (uint32_t)rc;
            s->retried = true;
            sws_up_conn *n = px->pool.slots[rc];
            memcpy(n->obuf, s->replay, s->rlen);
            n->olen = s->rlen;
            sws_msg_init(&s->resp, HTTP_RESPONSE, &resp_cb, s);
            s->up_deadline = tl_loop_now(px->w->loop) + px->pool.cfg->connect_timeout_ms;
            return;
        }
    }
    sws_up_error(&px->pool, kind);
    if (!s->resp_started)
        answer_error(px, s, status, true);
    else
        sess_close(px, s); /* never a truncated answer that looks complete */
}

static void exchange_end(sws_proxy *px, px_sess *s) {
    sws_up_conn *u = up_of(px, s);
    bool keep = s->resp_up_ka && s->req_done && u && u->olen == 0 && !u->write_inflight;
    if (!s->req_done) {
        sess_last(s, true); /* the rest of the request was never read */
        stop_reading(px, s);
    }
    if (u) {
        sws_health_passed(px->health, u->upstream);
        sws_pool_release(&px->pool, u, keep);
    }
    s->up = SWS_NIL;
    SWS_ADD(px->w->ctr.requests, 1);
    log_exchange(px, s, s->resp_status, s->resp_bytes);
    if (px->draining)
        sess_last(s, false);
    s->req_done = s->resp_started = s->resp_done = false;
    sws_msg_next(&s->req);
    sws_msg_init(&s->resp, HTTP_RESPONSE, &resp_cb, s);
    s->dl_idle = true;
    s->deadline = tl_loop_now(px->w->loop) + px->w->cfg->keepalive_timeout_ms;
    flush_client(px, s);
    if (s->phase != SWS_PH_OPEN) {
        if (!s->write_inflight)
            sess_end(px, s);
        return;
    }
    process_client(px, s);
}

/* Runs the strict parser over the bytes it has not seen. It stops at the
 * start of the feed that failed: a request that starts in this read is not
 * forwarded at all, one whose head was forwarded earlier ends with its
 * upstream connection closed before it is complete. */
static void validate(sws_proxy *px, px_sess *s) {
    (void)px;
    while (!s->chk_status && s->chk_off < s->in_len) {
        size_t used;
        int st;
        int rc = sws_http_feed(&s->chk, s->in + s->chk_off, s->in_len - s->chk_off, &used, &st);
        if (rc == SWS_HTTP_NEED_MORE) {
            s->chk_off = s->in_len;
        } else if (rc == SWS_HTTP_REQUEST) {
            s->chk_off += (uint32_t)used;
        } else {
            s->chk_status = st ? st : 400;
        }
    }
}

static void process_client(sws_proxy *px, px_sess *s) {
    validate(px, s);
    while (s->phase == SWS_PH_OPEN && !s->req_done && s->in_off < s->chk_off) {
        sws_up_conn *u = up_of(px, s);
        uint32_t avail = s->chk_off - s->in_off;
        if (u && SWS_UP_OBUF - u->olen < avail + PX_HEAD_SLACK)
            break; /* the upstream has not taken what we have */
        size_t used;
        int rc = sws_msg_feed(&s->req, s->in + s->in_off, avail, &used);
        if (rc < 0) {
            int st = s->bad_status ? s->bad_status : rc == -E2BIG ? 431 : 400;
            s->bad_status = 0;
            answer_error(px, s, st, st == 502);
            return;
        }
        s->in_off += (uint32_t)used;
        if (rc == SWS_MSG_DONE)
            s->req_done = true;
    }
    if (sws_phase_gone(s->phase))
        return;
    if (s->chk_status && s->in_off == s->chk_off && !s->req_done && s->phase == SWS_PH_OPEN) {
        /* Everything before the refused bytes has been answered. */
        if (s->resp_started)
            sess_close(px, s); /* never an error in the middle of an answer */
        else
            answer_error(px, s, s->chk_status, false);
        return;
    }
    if (!s->read_armed && s->in_off) {
        /* No read is pending into in[]: the unread rest may move. */
        memmove(s->in, s->in + s->in_off, s->in_len - s->in_off);
        s->in_len -= s->in_off;
        s->chk_off -= s->in_off;
        s->in_off = 0;
    }
    sws_up_conn *u = up_of(px, s);
    if (u && u->state == SWS_UP_BUSY && !s->req_done && u->olen && !u->write_inflight)
        /* Held while the client sends: that wait is not the upstream's. */
        s->up_deadline = tl_loop_now(px->w->loop) + px->pool.cfg->read_timeout_ms;
    if (s->dl_idle && s->req.started) {
        s->dl_idle = false;
        s->deadline = tl_loop_now(px->w->loop) + px->w->cfg->header_timeout_ms;
    }
    flush_client(px, s);
    flush_up(px, s);
    arm_up_read(px, s);
    client_arm_read(px, s);
}

/* ---- completions ------------------------------------------------------- */

static void on_client_read(sws_proxy *px, px_sess *s, const tl_completion *e) {
    s->read_armed = false;
    if (sws_phase_gone(s->phase))
        return;
    if (s->phase == SWS_PH_LINGERING) {
        if (e->res > 0 || e->res == -ECANCELED)
            linger_read(px, s);
        else
            sess_close(px, s);
        return;
    }
    if (e->res > 0) {
        SWS_ADD(px->w->ctr.bytes_in, (uint64_t)e->res);
        if (s->phase != SWS_PH_OPEN)
            return;
        s->in_len += (uint32_t)e->res;
        process_client(px, s);
        return;
    }
    if (e->res == -ECANCELED && s->phase != SWS_PH_OPEN)
        return;
    s->eof = true;
    if (s->req_done || s->up != SWS_NIL) {
        if (!s->req_done && s->up != SWS_NIL) {
            sess_close(px, s); /* the client left in the middle of its request */
            return;
        }
        if (s->resp_started)
            sess_last(s, false); /* answer the request it sent, then close */
        return;
    }
    if (s->olen || s->write_inflight)
        sess_last(s, false);
    else
        sess_close(px, s);
}

static void on_client_write(sws_proxy *px, px_sess *s, const tl_completion *e) {
    s->write_inflight = false;
    if (sws_phase_gone(s->phase))
        return;
    if (e->res < 0) {
        sess_close(px, s);
        return;
    }
    SWS_ADD(px->w->ctr.bytes_out, s->wlen);
    memmove(s->out, s->out + s->wlen, s->olen - s->wlen);
    s->olen -= s->wlen;
    s->wlen = 0;
    if (s->olen) {
        flush_client(px, s);
    } else if (s->phase != SWS_PH_OPEN && s->up == SWS_NIL) {
        sess_end(px, s);
        return;
    }
    arm_up_read(px, s);
}

static px_sess *sess_of_up(sws_proxy *px, sws_up_conn *u) {
    if (u->sess >= px->nslots)
        return NULL;
    px_sess *s = px->slots[u->sess];
    return s && !sws_phase_gone(s->phase) && s->up == u->index ? s : NULL;
}

static void on_up_connect(sws_proxy *px, sws_up_conn *u, const tl_completion *e) {
    px_sess *s = sess_of_up(px, u);
    if (u->state != SWS_UP_CONNECTING || !s)
        return;
    if (e->res < 0) {
        enum sws_up_err k = e->res == -ECONNREFUSED ? SWS_UPE_REFUSED
                            : e->res == -ENETUNREACH || e->res == -EHOSTUNREACH
                                ? SWS_UPE_UNREACHABLE
                            : e->res == -ETIMEDOUT ? SWS_UPE_CONNECT_TIMEOUT
                                                   : SWS_UPE_OTHER;
        up_fail(px, s, k, 502);
        return;
    }
    u->state = SWS_UP_BUSY;
    int fd = tl_handle_fd(px->w->loop, u->h);
    int one = 1;
    if (fd >= 0)
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    s->up_deadline = tl_loop_now(px->w->loop) + px->pool.cfg->read_timeout_ms;
    process_client(px, s);
}

static void on_up_write(sws_proxy *px, sws_up_conn *u, const tl_completion *e) {
    u->write_inflight = false;
    px_sess *s = sess_of_up(px, u);
    if (u->state != SWS_UP_BUSY || !s)
        return;
    if (e->res < 0) {
        up_fail(px, s, SWS_UPE_RESET, 502);
        return;
    }
    memmove(u->obuf, u->obuf + u->wlen, u->olen - u->wlen);
    u->olen -= u->wlen;
    u->wlen = 0;
    s->up_deadline = tl_loop_now(px->w->loop) + px->pool.cfg->read_timeout_ms;
    process_client(px, s);
}

/* Feeds a read of the upstream. 1 when the response is complete. */
static int up_feed(px_sess *s, const char *d, size_t len) {
    size_t off = 0;
    while (off < len) {
        size_t used;
        int rc = sws_msg_feed(&s->resp, d + off, len - off, &used);
        if (rc < 0)
            return rc;
        off += used;
        if (rc == SWS_MSG_DONE) {
            sws_msg_next(&s->resp);
            if (s->resp_info) {
                s->resp_info = false;
                continue;
            }
            if (off < len)
                s->resp_up_ka = false; /* bytes past the response: not a connection to trust */
            return 1;
        }
    }
    return 0;
}

static void on_up_read(sws_proxy *px, sws_up_conn *u, const tl_completion *e) {
    u->read_armed = false;
    bool was_cancelling = u->cancelling;
    u->cancelling = false;
    px_sess *s = sess_of_up(px, u);
    if (u->state != SWS_UP_BUSY || !s)
        return;
    if (was_cancelling) {
        if (e->res == -ECANCELED)
            process_client(px, s); /* the request may go now */
        else
            up_fail(px, s, SWS_UPE_RESET, 502); /* it died (or spoke) while idle; nothing sent */
        return;
    }
    if (e->res > 0) {
        u->got_bytes = true;
        s->up_deadline = tl_loop_now(px->w->loop) + px->pool.cfg->read_timeout_ms;
        int rc = up_feed(s, u->rbuf, (size_t)e->res);
        if (rc < 0) {
            up_fail(px, s, SWS_UPE_BAD_RESPONSE, 502);
            return;
        }
        flush_client(px, s);
        if (rc == 1)
            exchange_end(px, s);
        else
            arm_up_read(px, s);
        return;
    }
    if (e->res == 0 && s->resp_started && sws_msg_eof(&s->resp) == SWS_MSG_DONE) {
        s->resp_up_ka = false; /* close-delimited: complete, and the connection is done */
        flush_client(px, s);
        exchange_end(px, s);
        return;
    }
    up_fail(px, s, s->resp_started ? SWS_UPE_TRUNCATED : SWS_UPE_RESET, 502);
}

static void arm_tick(sws_proxy *px) {
    if (px->tick_armed)
        return;
    tl_op op;
    if (tl_timer(px->w->loop, PX_TICK_MS, sws_token(0, SWS_T_PX_TICK), &op) == 0)
        px->tick_armed = true;
}

/* Ten times a second: upstream timeouts (504), client idle and header
 * timeouts, and once a second the pool's idle expiry. */
static void on_tick(sws_proxy *px) {
    px->tick_armed = false;
    uint64_t now = tl_loop_now(px->w->loop);
    for (px_sess *s = px->active, *next; s; s = next) {
        next = s->next;
        if (sws_phase_gone(s->phase))
            continue;
        sws_up_conn *u = up_of(px, s);
        if (u) {
            if (now >= s->up_deadline)
                up_fail(px, s,
                        u->state == SWS_UP_CONNECTING ? SWS_UPE_CONNECT_TIMEOUT
                                                      : SWS_UPE_READ_TIMEOUT,
                        504);
        } else if (!s->write_inflight && s->olen == 0 && now >= s->deadline) {
            /* Part of a request and then silence: 408, as the respond scenario. */
            if (s->phase == SWS_PH_OPEN && sws_http_partial(&s->chk))
                answer_error(px, s, 408, false);
            else
                sess_close(px, s);
        }
    }
    if (now >= px->last_expire + 1000 || px->draining) {
        px->last_expire = now;
        sws_pool_expire(&px->pool, now);
    }
    if (!(px->draining && px->nlive == 0 && px->pool.live == 0))
        arm_tick(px);
}

static void proxy_dispatch(sws_worker *w, sws_scenario *sc, const tl_completion *e) {
    sws_proxy *px = sc->state;
    uint32_t i = sws_token_index(e->token);
    unsigned tag = sws_token_tag(e->token);
    if (e->flags & TL_CQE_BUFFER)
        tl_buffer_release(w->loop, e->u.buf.id); /* never asked for; kept safe */
    if (!px)
        return;
    if (tag >= SWS_T_UP_FIRST && tag <= SWS_T_UP_LAST) {
        if (tag == SWS_T_UP_CLOSE) {
            sws_pool_closed(&px->pool, i);
            return;
        }
        sws_up_conn *u = sws_pool_conn(&px->pool, i);
        if (!u)
            return;
        if (tag == SWS_T_UP_READ && u->state == SWS_UP_IDLE) {
            sws_pool_idle_event(&px->pool, u); /* the watch: closed or spoke while idle */
            return;
        }
        if (u->owner != w->loop)
            SWS_ADD(px->pool.st.foreign_loop_uses, 1);
        if (tag == SWS_T_UP_CONNECT)
            on_up_connect(px, u, e);
        else if (tag == SWS_T_UP_READ)
            on_up_read(px, u, e);
        else if (tag == SWS_T_UP_WRITE)
            on_up_write(px, u, e);
        return;
    }
    if (tag == SWS_T_PX_TICK) {
        on_tick(px);
        return;
    }
    if (i >= px->nslots || !px->slots[i] || px->slots[i]->phase == SWS_PH_FREE)
        return;
    px_sess *s = px->slots[i];
    if (tag == SWS_T_PX_READ)
        on_client_read(px, s, e);
    else if (tag == SWS_T_PX_WRITE)
        on_client_write(px, s, e);
    else if (tag == SWS_T_PX_CLOSE)
        sess_free(px, s);
}

static void proxy_open(sws_worker *w, sws_scenario *sc, tl_handle h) {
    sws_proxy *px = sc->state;
    if (px->nfree == 0) {
        tl_close(w->loop, h, sws_token(px->nslots, SWS_T_PX_CLOSE));
        return;
    }
    uint32_t i = px->free_idx[px->nfree - 1];
    px_sess *s = px->slots[i];
    if (!s) {
        /* A slot is allocated on first use and reused: never one per request. */
        s = malloc(sizeof(*s));
        if (!s) {
            tl_close(w->loop, h, sws_token(px->nslots, SWS_T_PX_CLOSE));
            return;
        }
        px->slots[i] = s;
    }
    px->nfree--;
    memset(s, 0, offsetof(px_sess, req));
    s->index = i;
    s->h = h;
    s->px = px;
    sess_phase(s, SWS_PH_OPEN);
    s->up = SWS_NIL;
    s->dl_idle = true;
    s->deadline = tl_loop_now(w->loop) + w->cfg->header_timeout_ms;
    sws_http_parser_init(&s->chk, &w->limits);
    sws_msg_init(&s->req, HTTP_REQUEST, &req_cb, s);
    sws_msg_init(&s->resp, HTTP_RESPONSE, &resp_cb, s);
    sws_peer_name(w->loop, h, s->peer, sizeof(s->peer));
    s->chk.req.log_fields = w->access_log ? s->log : NULL;
    s->next = px->active;
    if (px->active)
        px->active->prev = s;
    px->active = s;
    px->nlive++;
    SWS_ADD(w->ctr.accepted, 1);
    SWS_ADD(w->ctr.active, 1);
    client_arm_read(px, s);
}

static uint32_t proxy_extra_handles(const sws_config *cfg) {
    /* One upstream per client, one more closing during a retry, and the pool. */
    return cfg->max_connections * 2 + cfg->proxy.pool_per_loop * (uint32_t)cfg->proxy.nupstreams;
}

static int proxy_init(sws_worker *w, sws_scenario *sc) {
    const sws_config *cfg = w->cfg;
    sws_proxy *px = calloc(1, sizeof(*px));
    if (!px)
        return -ENOMEM;
    sc->state = px;
    px->w = w;
    px->nslots = cfg->max_connections + 1;
    px->slots = calloc(px->nslots, sizeof(*px->slots));
    px->free_idx = malloc(px->nslots * sizeof(*px->free_idx));
    if (!px->slots || !px->free_idx)
        return -ENOMEM;
    for (uint32_t i = 0; i < px->nslots; i++)
        px->free_idx[i] = px->nslots - 1 - i;
    px->nfree = px->nslots;
    int rc = sws_pool_init(&px->pool, w->loop, &cfg->proxy, proxy_extra_handles(cfg));
    if (rc < 0)
        return rc;
    sws_pick_init(&px->pick, (uint64_t)now_us() * 2654435761u + (uint64_t)w->index + 1);
    px->health = w->srv ? w->srv->up_health : NULL;
    arm_tick(px);
    return 0;
}

static void proxy_free(sws_worker *w, sws_scenario *sc) {
    (void)w;
    sws_proxy *px = sc->state;
    if (!px)
        return;
    for (uint32_t i = 0; i < px->nslots && px->slots; i++)
        free(px->slots[i]);
    free(px->slots);
    free(px->free_idx);
    sws_pool_free(&px->pool);
    free(px);
    sc->state = NULL;
}

static void proxy_drain(sws_worker *w, sws_scenario *sc, bool force) {
    sws_proxy *px = sc->state;
    if (!px)
        return;
    px->draining = px->pool.draining = true;
    sws_pool_expire(&px->pool, tl_loop_now(w->loop));
    for (px_sess *s = px->active, *next; s; s = next) {
        next = s->next;
        if (sws_phase_gone(s->phase))
            continue;
        bool idle = s->up == SWS_NIL && !s->req.started && !s->olen && !s->write_inflight;
        if (force) {
            SWS_ADD(w->ctr.forced, 1);
            sess_close(px, s);
        } else if (idle) {
            /* Its next request may be on the wire: it may still come for
             * drain_idle_grace and is answered with Connection: close; the
             * tick closes what stayed idle. */
            uint64_t end = sws_drain_grace_end(w);
            if (s->deadline > end)
                s->deadline = end;
        }
    }
    arm_tick(px);
}

static bool proxy_finished(const sws_worker *w, const sws_scenario *sc) {
    (void)w;
    const sws_proxy *px = sc->state;
    return !px || (px->nlive == 0 && px->pool.live == 0);
}

static void metric_head(FILE *f, const char *name, const char *type, const char *help) {
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void proxy_metrics(const sws_server *s, FILE *f) {
    static const struct {
        const char *name, *type, *help;
        size_t off;
    } per_loop[] = {
        {"scalwsd_upstream_connects_total", "counter", "Upstream connections opened.",
         offsetof(sws_up_stats, connects)},
        {"scalwsd_upstream_reuses_total", "counter", "Requests sent on a pooled connection.",
         offsetof(sws_up_stats, reuses)},
        {"scalwsd_upstream_retries_total", "counter",
         "Idempotent requests retried after a pooled connection was found dead.",
         offsetof(sws_up_stats, retries)},
        {"scalwsd_upstream_pool_idle", "gauge", "Idle keep-alive connections in the loop's pool.",
         offsetof(sws_up_stats, idle)},
        {"scalwsd_upstream_foreign_loop_uses_total", "counter",
         "Debug: pooled connections used by a loop that does not own them (must stay 0).",
         offsetof(sws_up_stats, foreign_loop_uses)},
        {"scalwsd_upstream_idle_closed_total", "counter",
         "Idle pooled connections dropped because the upstream closed them (or sent bytes).",
         offsetof(sws_up_stats, idle_closed)},
        {"scalwsd_upstream_handovers_total", "counter",
         "pool = shared: idle connections taken by another loop than the one that pooled them.",
         offsetof(sws_up_stats, handovers)},
    };
    for (size_t k = 0; k < sizeof(per_loop) / sizeof(per_loop[0]); k++) {
        metric_head(f, per_loop[k].name, per_loop[k].type, per_loop[k].help);
        for (int i = 0; i < s->nloops; i++) {
            const sws_proxy *px = s->workers[i].sc.state;
            if (!px)
                continue;
            const sws_up_ctr *c =
                (const sws_up_ctr *)((const char *)&px->pool.st + per_loop[k].off);
            fprintf(f, "%s{loop=\"%d\"} %" PRIu64 "\n", per_loop[k].name, i,
                    atomic_load_explicit(c, memory_order_relaxed));
        }
    }
    if (s->cfg->proxy.pool_mode == SWS_POOL_SHARED) {
        metric_head(f, "scalwsd_upstream_shared_pool_idle", "gauge",
                    "pool = shared: idle keep-alive connections in the process-wide pool.");
        fprintf(f, "scalwsd_upstream_shared_pool_idle %" PRIu64 "\n", sws_pool_shared_idle());
    }
    metric_head(f, "scalwsd_upstream_errors_total", "counter", "Upstream failures by kind.");
    for (int i = 0; i < s->nloops; i++) {
        const sws_proxy *px = s->workers[i].sc.state;
        for (int k = 0; px && k < SWS_UPE_N; k++)
            fprintf(f, "scalwsd_upstream_errors_total{loop=\"%d\",kind=\"%s\"} %" PRIu64 "\n", i,
                    sws_up_err_names[k], SWS_GET(px->pool.st.errors[k]));
    }
    uint64_t b[SWS_UP_LAT_BUCKETS + 1] = {0}, sum = 0, count = 0;
    for (int i = 0; i < s->nloops; i++) {
        const sws_proxy *px = s->workers[i].sc.state;
        if (!px)
            continue;
        for (int k = 0; k <= SWS_UP_LAT_BUCKETS; k++)
            b[k] += SWS_GET(px->pool.st.lat[k]);
        sum += SWS_GET(px->pool.st.lat_sum_us);
        count += SWS_GET(px->pool.st.lat_count);
    }
    metric_head(f, "scalwsd_upstream_latency_seconds", "histogram",
                "From sending a request upstream to its response head.");
    uint64_t cum = 0;
    for (int k = 0; k < SWS_UP_LAT_BUCKETS; k++) {
        cum += b[k];
        fprintf(f, "scalwsd_upstream_latency_seconds_bucket{le=\"%g\"} %" PRIu64 "\n",
                sws_up_lat_bounds_us[k] / 1e6, cum);
    }
    cum += b[SWS_UP_LAT_BUCKETS];
    fprintf(f, "scalwsd_upstream_latency_seconds_bucket{le=\"+Inf\"} %" PRIu64 "\n", cum);
    fprintf(f, "scalwsd_upstream_latency_seconds_sum %g\n", (double)sum / 1e6);
    fprintf(f, "scalwsd_upstream_latency_seconds_count %" PRIu64 "\n", count);
}

/* After a reload switched w->cfg: the pool reads its timeouts from the new
 * one, and the access log may have been turned on or off. */
static void proxy_reload_commit(sws_worker *w, sws_scenario *sc) {
    sws_proxy *px = sc->state;
    if (!px)
        return;
    px->pool.cfg = &w->cfg->proxy;
    for (px_sess *s = px->active; s; s = s->next)
        s->chk.req.log_fields = w->access_log ? s->log : NULL;
}

const sws_scenario_ops sws_proxy_ops = {
    .name = "proxy",
    .extra_handles = proxy_extra_handles,
    .init = proxy_init,
    .free = proxy_free,
    .open = proxy_open,
    .dispatch = proxy_dispatch,
    .drain = proxy_drain,
    .finished = proxy_finished,
    .reload_commit = proxy_reload_commit,
    .metrics = proxy_metrics,
};
