/* HTTP/1.1, the server side: the protocol between a connection's bytes
 * (transport/conn.c) and the exchanges a scenario answers (exchange.h). It
 * parses requests (src/http: the one-pass head reader and llhttp) under the
 * [limits], chooses each request's route once its head is complete, answers
 * what no scenario sees (malformed requests, 408, 100-continue, the ACME
 * HTTP-01 challenge), and frames every answer: status line, Server, Date,
 * Content-Length or chunked, Connection, HEAD. Keep-alive and pipelining:
 * one exchange at a time per connection, the next request read only once the
 * answer has ended; a request that ends the connection is the last one read.
 * Every function runs on the connection's loop thread. */
#include "http1.h"

#include "access_log.h"
#include "acme_tokens.h"
#include "client_head.h"
#include "conn.h"
#include "h1_write.h"
#include "route.h"
#include "sws_msg.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>

#define SWS_PARSER_CACHE 16

static sws_conn *conn_ofx(sws_exchange *x) {
    return (sws_conn *)x; /* ex is sws_conn's first member */
}

static const sws_conn *cconn_ofx(const sws_exchange *x) {
    return (const sws_conn *)x;
}

/* A parser block: the parser, then the access log's field storage, then the
 * static scenario's, then the route stash. The storages are always there, so
 * that a reload that turns the access log on finds room in the parsers
 * already lent. */
#define SWS_PARSER_LOG_AT sizeof(sws_http_parser)
#define SWS_PARSER_SF_AT (SWS_PARSER_LOG_AT + SWS_HTTP_LOG_STORAGE)
#define SWS_PARSER_STASH_AT                                                                        \
    ((SWS_PARSER_SF_AT + SWS_HTTP_SF_STORAGE + _Alignof(route_stash) - 1) /                        \
     _Alignof(route_stash) * _Alignof(route_stash))
#define SWS_PARSER_BLOCK (SWS_PARSER_STASH_AT + sizeof(route_stash))

/* The raw bytes of a request head read before its route is known, for a
 * route whose scenario takes request bytes (the proxy): a route is chosen on
 * the complete head, and such a scenario reads the request from its first
 * byte. buf is an output-pool block, taken only when a head spans reads (a
 * head that comes whole is handed over from the loop buffer). It lives in
 * the parser's block: only a request under way can have one. */
typedef struct route_stash {
    char *buf;
    uint32_t len;
    struct h1_req *req; /* the request as a whole, for a scenario that takes it */
} route_stash;

/* The request read whole, for a scenario that takes it (request_head): a
 * reader of every field and of the body's framing, fed the request's bytes
 * as the strict parser passed them, calling the scenario's hooks. Lent from
 * w->reqs while such a request is under way. */
typedef struct h1_req {
    sws_worker *w;
    sws_conn *c;
    int status; /* a hook's refusal */
    bool done;
    sws_head head;
    sws_field f[SWS_MSG_FIELDS_MAX];
    sws_msg msg;
} h1_req;

#define SWS_REQ_CACHE 4

static route_stash *stash_of(const sws_conn *c) {
    return (route_stash *)((char *)c->parser + SWS_PARSER_STASH_AT);
}

/* Where c's parser keeps Referer and User-Agent: NULL while the access log is
 * off (nothing is kept). */
static char *parser_log_fields(const sws_worker *w, sws_http_parser *p) {
    return w->access_log ? (char *)p + SWS_PARSER_LOG_AT : NULL;
}

/* A fresh parser for the request whose first bytes have come. Between
 * requests a parser holds nothing the next one needs, so a new one per
 * request parses as one kept for the connection's life would. */
static bool parser_take(sws_worker *w, sws_conn *c) {
    sws_http_parser *p = sws_lend_take(&w->parsers);
    if (!p)
        return false;
    sws_http_parser_init(p, &w->limits);
    p->req.log_fields = parser_log_fields(w, p);
    if (w->lend_sf)
        p->req.sf_fields = (char *)p + SWS_PARSER_SF_AT;
    c->parser = p;
    *stash_of(c) = (route_stash){NULL, 0, NULL};
    return true;
}

static void stash_give(sws_worker *w, sws_conn *c) {
    route_stash *st = stash_of(c);
    sws_lend_give(&w->outbuf, st->buf);
    st->buf = NULL;
    st->len = 0;
}

static void req_give(sws_worker *w, sws_conn *c) {
    route_stash *st = stash_of(c);
    if (st->req) {
        sws_lend_give(&w->reqs, st->req);
        st->req = NULL;
    }
}

static void parser_give(sws_worker *w, sws_conn *c) {
    if (!c->parser)
        return;
    if (stash_of(c)->buf)
        stash_give(w, c);
    req_give(w, c);
    sws_lend_give(&w->parsers, c->parser);
    c->parser = NULL;
}

/* The request's route is known (its head is complete): its instance holds
 * the connection until the answer ends (route_clear), and counts it in
 * `pending`, so that a retired instance is not freed under a request. */
static void route_set(sws_worker *w, sws_conn *c, sws_scenario *sc) {
    c->sc = sc;
    c->routed = true;
    if (sc != &w->sc)
        sc->pending++;
}

/* The connection is the default instance's again. */
static void route_clear(sws_worker *w, sws_conn *c) {
    if (!c->routed)
        return; /* no routes: it never left the default */
    if (c->sc != &w->sc)
        c->sc->pending--;
    c->sc = &w->sc;
    c->routed = false;
}

static bool conn_partial(const sws_conn *c) {
    return c->parser && sws_http_partial(c->parser);
}

/* The parser goes back once its request is answered and nothing waits to be
 * parsed: no request begun, no held input, no stash, no answer pending (the
 * scenario reads the request until it ends). */
static void parser_settle(sws_worker *w, sws_conn *c) {
    if (c->parser && !c->answer_pending && c->hcount == 0 && !(c->tls && c->tls->stash) &&
        !sws_http_partial(c->parser))
        parser_give(w, c);
}

static void conn_log(sws_worker *w, sws_conn *c, int status, uint64_t bytes) {
    char peer[INET6_ADDRSTRLEN];
    sws_peer_name(w->loop, c->h, peer, sizeof(peer));
    /* The route's name, also for an answer that ends outside `answer` (a
     * proxied one, when the upstream's last byte came). */
    const char *keep = w->log_route;
    if (c->routed || (!w->routes_on && c->answer_pending))
        w->log_route = c->sc->route->name;
    sws_access_log_parsed(w, peer, c->parser, status, bytes);
    w->log_route = keep;
}

static void answer_end(sws_worker *w, sws_conn *c);
static void answer_error_head(sws_worker *w, sws_conn *c, int status, bool head);
static void answer_done(sws_worker *w, sws_conn *c);

/* ---- the exchange: answers framed as HTTP/1.1 ------------------------------- */

/* Room kept in front of a chunk's bytes for its size line (out_cap < 16 MiB:
 * six hex digits and CRLF), and after them for its CRLF. */
#define H1_CHUNK_PRE 8
#define H1_CHUNK_POST 2

static const sws_head *h1_request_head(const sws_exchange *x);

static const sws_http_request *h1_request(const sws_exchange *x) {
    return &cconn_ofx(x)->parser->req;
}

static uint32_t h1_id(const sws_exchange *x) {
    return cconn_ofx(x)->index;
}

static sws_ex_mark h1_mark(const sws_exchange *x) {
    const sws_conn *c = cconn_ofx(x);
    return (sws_ex_mark){c->h, c->served};
}

static bool h1_marked(const sws_exchange *x, sws_ex_mark m) {
    const sws_conn *c = cconn_ofx(x);
    return !sws_phase_gone(c->phase) && c->h == m.conn && c->served == m.req;
}

static bool h1_secure(const sws_exchange *x) {
    return cconn_ofx(x)->tls != NULL;
}

static int h1_fd(sws_worker *w, const sws_exchange *x) {
    return tl_handle_fd(w->loop, cconn_ofx(x)->h);
}

/* What ends a head at most: "Content-Length: " and 20 digits, or
 * Transfer-Encoding; "Connection: keep-alive"; CRLFs. */
#define H1_HEAD_TAIL 80
#define H1_PUT(p, s, n) (memcpy((p), (s), (n)), (p) += (n))

/* The status lines of the answers given most, prebuilt; NULL for others. */
static const char *status_line(int st, size_t *len) {
#define H1_LINE(text)                                                                              \
    do {                                                                                           \
        *len = sizeof("HTTP/1.1 " text "\r\n") - 1;                                                \
        return "HTTP/1.1 " text "\r\n";                                                            \
    } while (0)
    switch (st) {
    case 200:
        H1_LINE("200 OK");
    case 206:
        H1_LINE("206 Partial Content");
    case 301:
        H1_LINE("301 Moved Permanently");
    case 304:
        H1_LINE("304 Not Modified");
    case 404:
        H1_LINE("404 Not Found");
    default:
        return NULL;
    }
#undef H1_LINE
}

/* The head of the answer: the body's framing follows from its length, the
 * request (HEAD, HTTP/1.0) and the status; the connection's fate from its
 * phase (answer() decided keep-alive before the scenario ran). */
static int h1_head(sws_worker *w, sws_exchange *x, const sws_answer *a) {
    sws_conn *c = conn_ofx(x);
    const sws_http_request *r = &c->parser->req;
    if (!sws_conn_out_take(w, c))
        return -ENOMEM;
    int st = a->status;
    /* RFC 9110 6.4.1: no content in an answer to HEAD, nor in 1xx, 204, 304. */
    bool bodyless_status = st < 200 || st == 204 || st == 304;
    bool nobody = a->no_body || r->head || bodyless_status;
    bool stream = a->length == SWS_BODY_STREAM;
    bool http10 = r->http_major == 1 && r->http_minor == 0;
    if (a->last || (w->draining && !c->h1_in_answer))
        sws_conn_last(w, c, false); /* draining: an answer begun later ends it */
    if (stream && http10 && !nobody)
        sws_conn_last(w, c, false); /* an HTTP/1.0 client learns the end from the close */
    bool ka = c->phase == SWS_PH_OPEN;
    /* Written with one check for the parts of bounded length and one per
     * field: this is every answer's path (static's, the proxy's). */
    char *p = c->out + c->olen, *end = c->out + w->out_cap;
    size_t sl;
    const char *line = a->reason ? NULL : status_line(st, &sl);
    const char *reason = a->reason ? a->reason : line ? NULL : sws_http_reason(st);
    size_t rl = a->reason ? a->reason_len : line ? sl : strlen(reason);
    size_t tl = a->content_type ? strlen(a->content_type) : 0;
    static const char server[] = "Server: " SWS_HTTP_SERVER "\r\nDate: ";
    /* Status line, Server and Date, Content-Type; then what ends the head:
     * a length or chunked, Connection, the blank line (H1_HEAD_TAIL). */
    size_t fixed = 13 + rl + 2 + sizeof(server) - 1 + SWS_DATE_LEN + 2 + 16 + tl + 2;
    if ((size_t)(end - p) < fixed + H1_HEAD_TAIL)
        return -ENOSPC;
    if (line) {
        H1_PUT(p, line, sl); /* the whole line, prebuilt */
    } else {
        memcpy(p, "HTTP/1.1 000 ", 13);
        p[9] = (char)('0' + st / 100 % 10);
        p[10] = (char)('0' + st / 10 % 10);
        p[11] = (char)('0' + st % 10);
        p += 13;
        H1_PUT(p, reason, rl);
        H1_PUT(p, "\r\n", 2);
    }
    if (!a->relayed) {
        H1_PUT(p, server, sizeof(server) - 1);
        H1_PUT(p, w->date.str, SWS_DATE_LEN);
        H1_PUT(p, "\r\n", 2);
    }
    if (a->content_type) {
        H1_PUT(p, "Content-Type: ", 14);
        H1_PUT(p, a->content_type, tl);
        H1_PUT(p, "\r\n", 2);
    }
    for (uint32_t i = 0; i < a->nfields; i++) {
        const sws_field *f = &a->fields[i];
        if ((size_t)(end - p) < (size_t)f->name_len + f->value_len + 4 + H1_HEAD_TAIL)
            return -ENOSPC;
        H1_PUT(p, f->name, f->name_len);
        H1_PUT(p, ": ", 2);
        H1_PUT(p, f->value, f->value_len);
        H1_PUT(p, "\r\n", 2);
    }
    bool chunked = false;
    if (stream) {
        /* The length is not known: chunked for HTTP/1.1, the close for 1.0.
         * A bodyless answer says nothing of a body it does not have. */
        if (!nobody && !http10) {
            H1_PUT(p, "Transfer-Encoding: chunked\r\n", 28);
            chunked = true;
        }
    } else if (!(st < 200 || st == 204) && !(st == 304 && a->length == 0) && !a->no_length) {
        /* HEAD gets the length a GET would have (RFC 9110 8.6). */
        H1_PUT(p, "Content-Length: ", 16);
        char t[24];
        int i = sizeof(t);
        uint64_t v = a->length;
        do {
            t[--i] = (char)('0' + v % 10);
            v /= 10;
        } while (v);
        H1_PUT(p, t + i, sizeof(t) - (size_t)i);
        H1_PUT(p, "\r\n", 2);
    }
    if (!ka)
        H1_PUT(p, "Connection: close\r\n", 19);
    else if (http10)
        H1_PUT(p, "Connection: keep-alive\r\n", 24);
    H1_PUT(p, "\r\n", 2);
    c->olen = (uint32_t)(p - c->out);
    c->status = (uint16_t)st;
    c->h1_head = true;
    c->h1_chunked = chunked;
    c->h1_nobody = nobody;
    return 0;
}

static char *h1_room(sws_worker *w, sws_exchange *x, size_t *len) {
    sws_conn *c = conn_ofx(x);
    uint32_t pre = c->h1_chunked ? H1_CHUNK_PRE : 0, post = c->h1_chunked ? H1_CHUNK_POST : 0;
    if (!c->out || c->olen + pre + post >= w->out_cap) {
        *len = 0;
        return c->out ? c->out + c->olen : NULL;
    }
    *len = w->out_cap - c->olen - pre - post;
    return c->out + c->olen + pre;
}

static void h1_commit(sws_worker *w, sws_exchange *x, size_t n) {
    (void)w;
    sws_conn *c = conn_ofx(x);
    if (c->h1_nobody || n == 0)
        return; /* HEAD, 304: the scenario's bytes are not sent */
    if (!c->h1_chunked) {
        c->olen += (uint32_t)n;
        return;
    }
    /* The size line goes where room() kept space for it, the bytes moved up
     * against it when it is shorter than the space. */
    char line[24];
    size_t k = sws_chunk_line(line, n);
    char *at = c->out + c->olen;
    if (k < H1_CHUNK_PRE)
        memmove(at + k, at + H1_CHUNK_PRE, n);
    memcpy(at, line, k);
    memcpy(at + k + n, "\r\n", 2);
    c->olen += (uint32_t)(k + n + 2);
}

/* Body bytes copied in, framed as a chunk when the body is chunked (its
 * size line written first: no move, as commit needs). */
static int h1_body(sws_worker *w, sws_exchange *x, const void *data, size_t n) {
    sws_conn *c = conn_ofx(x);
    if (!c->out || c->olen + n + (c->h1_chunked ? H1_CHUNK_PRE + H1_CHUNK_POST : 0) > w->out_cap)
        return -ENOSPC;
    if (c->h1_nobody || n == 0)
        return 0;
    char *at = c->out + c->olen;
    if (c->h1_chunked) {
        at += sws_chunk_line(at, n);
        memcpy(at, data, n);
        memcpy(at + n, "\r\n", 2);
        c->olen = (uint32_t)(at + n + 2 - c->out);
        return 0;
    }
    memcpy(at, data, n);
    c->olen += (uint32_t)n;
    return 0;
}

/* Writes a chunked body's last chunk (a fixed-length body needs nothing). */
static void body_end(sws_worker *w, sws_conn *c) {
    (void)w;
    if (c->h1_chunked && c->out && c->olen + 5 <= w->out_cap) {
        memcpy(c->out + c->olen, "0\r\n\r\n", 5);
        c->olen += 5;
    }
    c->h1_chunked = false;
}

static int h1_sendfile(sws_worker *w, sws_exchange *x, int fd, uint64_t *off, size_t len) {
    sws_conn *c = conn_ofx(x);
    /* Never over TLS (the plaintext would go beside the engine's records),
     * chunked, or behind bytes not yet written. */
    if (c->tls || c->h1_chunked || c->olen != 0 || c->h1_nobody)
        return -EOPNOTSUPP;
    int sock = tl_handle_fd(w->loop, c->h);
    if (sock < 0)
        return -EBADF;
    off_t o = (off_t)*off;
    ssize_t n = sendfile(sock, fd, &o, len);
    if (n < 0)
        return errno == EAGAIN ? -EAGAIN : -errno;
    if (n == 0)
        return -EIO;
    *off += (uint64_t)n;
    SWS_ADD(w->ctr.bytes_out, (uint64_t)n);
    return (int)n;
}

/* A fixed answer, framed for keep-alive and for close and refreshed with the
 * Date: answering is one memcpy. */
typedef struct h1_framed {
    char *ka, *close;
    uint32_t ka_len, ka_head, close_len, close_head;
    uint32_t date_version;
    size_t cap;
} h1_framed;

static void framed_free(void *p) {
    h1_framed *f = p;
    free(f->ka);
    free(f->close);
    free(f);
}

static uint32_t frame(char *out, size_t cap, const sws_fixed *f, const char *date, bool ka,
                      uint32_t *head_len) {
    size_t h = sws_http_head(out, cap, f->status, date, f->content_type, f->body_len, ka);
    if (h == 0 || h + f->body_len > cap)
        return 0;
    memcpy(out + h, f->body, f->body_len);
    *head_len = (uint32_t)h;
    return (uint32_t)(h + f->body_len);
}

/* The room a fixed answer takes in the output (sws_http1_fixed_cap). */
size_t sws_http1_fixed_cap(const sws_fixed *f) {
    return 512 + (f->content_type ? strlen(f->content_type) : 0) + f->body_len;
}

static h1_framed *framed_of(sws_worker *w, sws_fixed *f) {
    h1_framed *fr = f->framed[SWS_PROTO_HTTP1];
    if (!fr) {
        fr = calloc(1, sizeof(*fr));
        if (!fr)
            return NULL;
        fr->cap = sws_http1_fixed_cap(f);
        fr->ka = malloc(fr->cap);
        fr->close = malloc(fr->cap);
        if (!fr->ka || !fr->close) {
            framed_free(fr);
            return NULL;
        }
        fr->date_version = w->date.version - 1;
        f->framed[SWS_PROTO_HTTP1] = fr;
        f->framed_free[SWS_PROTO_HTTP1] = framed_free;
    }
    if (fr->date_version != w->date.version) {
        fr->ka_len = frame(fr->ka, fr->cap, f, w->date.str, true, &fr->ka_head);
        fr->close_len = frame(fr->close, fr->cap, f, w->date.str, false, &fr->close_head);
        fr->date_version = w->date.version;
    }
    return fr->ka_len && fr->close_len ? fr : NULL;
}

static int h1_fixed(sws_worker *w, sws_exchange *x, sws_fixed *f) {
    sws_conn *c = conn_ofx(x);
    h1_framed *fr = framed_of(w, f);
    if (!fr)
        return -ENOMEM;
    bool ka = c->phase == SWS_PH_OPEN, head = c->parser->req.head;
    const char *src = ka ? fr->ka : fr->close;
    uint32_t hl = ka ? fr->ka_head : fr->close_head;
    uint32_t n = head ? hl : ka ? fr->ka_len : fr->close_len;
    if (c->olen + n > w->out_cap)
        return -ENOSPC;
    memcpy(c->out + c->olen, src, n);
    c->olen += n;
    c->status = (uint16_t)f->status;
    c->h1_head = true;
    return 0;
}

static void h1_end(sws_worker *w, sws_exchange *x) {
    answer_end(w, conn_ofx(x));
}

static void h1_more(sws_worker *w, sws_exchange *x) {
    sws_conn *c = conn_ofx(x);
    if (!sws_phase_gone(c->phase))
        sws_conn_pump(w, c);
    parser_settle(w, c);
}

static void h1_close(sws_worker *w, sws_exchange *x) {
    sws_conn_close(w, conn_ofx(x));
}

static void h1_log(sws_worker *w, sws_exchange *x, const char *peer, int status, uint64_t bytes) {
    sws_conn *c = conn_ofx(x);
    if (!peer) {
        conn_log(w, c, status, bytes);
        return;
    }
    const char *keep = w->log_route;
    w->log_route = c->sc->route->name;
    sws_access_log_parsed(w, peer, c->parser, status, bytes);
    w->log_route = keep;
}

static int h1_peer(sws_worker *w, const sws_exchange *x, char *buf, size_t len) {
    sws_peer_name(w->loop, cconn_ofx(x)->h, buf, len);
    return 0;
}

static bool h1_refused(const sws_exchange *x) {
    const sws_conn *c = cconn_ofx(x);
    return !c->parser || c->parser->status != 0;
}

static void h1_wait(sws_worker *w, sws_exchange *x, uint64_t until) {
    (void)w;
    sws_conn *c = conn_ofx(x);
    if (c->deadline < until)
        c->deadline = until;
}

static void h1_abort(sws_worker *w, sws_exchange *x) {
    sws_conn *c = conn_ofx(x);
    c->h1_chunked = false; /* no last chunk */
    sws_conn_last(w, c, false);
    answer_end(w, c);
}

/* Our own error answer (text body naming the status) for a request whose
 * answer has not begun, after which the connection ends (the proxy's
 * 502/504). The route counts it when the answer is done. */
static void error_answer(sws_worker *w, sws_conn *c, int status) {
    bool head = c->parser->req.head;
    SWS_ADD(w->ctr.errors[sws_status_slot(status)], 1);
    c->status = (uint16_t)status;
    if (w->access_log)
        conn_log(w, c, status, head ? 0 : sws_http_error_body_len(status));
    size_t n = sws_conn_out_take(w, c) ? sws_http_error(c->out + c->olen, w->out_cap - c->olen,
                                                        status, w->date.str, head)
                                       : 0;
    if (n == 0) {
        sws_conn_close(w, c);
        return;
    }
    c->olen += (uint32_t)n;
    c->h1_head = true;
    sws_conn_last(w, c, false);
}

/* Three moments: inside `answer` (answer() ends it as any answer), with the
 * answer pending (ended here), or while the request is still being read and
 * handed to the scenario (the connection answers and lingers: the rest of
 * the request may be on the wire). */
static int h1_error(sws_worker *w, sws_exchange *x, int status) {
    sws_conn *c = conn_ofx(x);
    if (sws_phase_gone(c->phase))
        return -EPIPE;
    if (c->h1_in_answer) {
        error_answer(w, c, status);
    } else if (c->answer_pending) {
        error_answer(w, c, status);
        if (!sws_phase_gone(c->phase))
            answer_end(w, c);
        if (!sws_phase_gone(c->phase))
            sws_conn_pump(w, c);
    } else if (c->phase == SWS_PH_OPEN) {
        answer_error_head(w, c, status, c->parser && c->parser->req.head);
        sws_conn_stop_reading(w, c); /* nothing more is read before the lingering close */
        if (!sws_phase_gone(c->phase))
            sws_conn_pump(w, c);
    }
    return 0;
}

static const sws_proto h1_proto = {
    .name = "HTTP/1.1",
    .request = h1_request,
    .id = h1_id,
    .request_head = h1_request_head,
    .mark = h1_mark,
    .marked = h1_marked,
    .secure = h1_secure,
    .fd = h1_fd,
    .head = h1_head,
    .room = h1_room,
    .commit = h1_commit,
    .body = h1_body,
    .sendfile = h1_sendfile,
    .fixed = h1_fixed,
    .error = h1_error,
    .end = h1_end,
    .more = h1_more,
    .close = h1_close,
    .abort = h1_abort,
    .log = h1_log,
    .peer = h1_peer,
    .refused = h1_refused,
    .wait = h1_wait,
};

/* HTTP-01 (RFC 8555 8.3), before any scenario: a plaintext GET of
 * /.well-known/acme-challenge/TOKEN for a token the ACME thread published.
 * The path test is one atomic load while no challenge is in flight; a token
 * it does not know goes to the scenario as any other path. */
static bool acme_challenge(sws_worker *w, sws_conn *c) {
    const sws_http_request *r = &c->parser->req;
    if (c->tls || !sws_acme_challenge_path(r->path, r->path_len) ||
        (r->method != HTTP_GET && r->method != HTTP_HEAD))
        return false;
    char keyauth[SWS_ACME_KEYAUTH_MAX];
    size_t n = sws_acme_token_answer(r->path, r->path_len, keyauth, sizeof(keyauth));
    if (!n)
        return false;
    sws_answer a = {.status = 200, .content_type = "application/octet-stream", .length = n};
    if (h1_head(w, &c->ex, &a) < 0 || sws_ex_body(w, &c->ex, keyauth, n) < 0)
        return false;
    body_end(w, c);
    if (w->access_log)
        conn_log(w, c, 200, r->head ? 0 : n);
    return true;
}

/* The answer has ended: its route counts it, and the connection is the
 * default instance's again. */
static void answer_done(sws_worker *w, sws_conn *c) {
    sws_route_count(w, c->sc, c->status, (uint32_t)tl_loop_now(w->loop) - c->req_start);
    route_clear(w, c);
    if (c->parser)
        req_give(w, c);
}

/* A complete request: the scenario answers it (room for resp_max bytes was
 * checked before feeding). more: further input is already here (a
 * pipeline). Draining, the answer says Connection: close unless more of a
 * pipeline is here within the grace: then the last of what the client sent
 * carries it, and no request it already sent goes unanswered. Whether the
 * connection is kept is decided here, before the scenario answers: the
 * answer's head says what the phase says (ka_now). */
static void answer(sws_worker *w, sws_conn *c, bool more) {
    const sws_http_request *r = &c->parser->req;
    bool ka =
        r->keep_alive && (!w->draining || (more && tl_loop_now(w->loop) < sws_drain_grace_end(w)));
    if (!ka)
        sws_conn_last(w, c, false);
    if (!sws_conn_out_take(w, c)) {
        /* Out of memory: this connection ends, the others keep their buffers. */
        sws_conn_close(w, c);
        return;
    }
    if (c->phase != SWS_PH_OPEN)
        sws_conn_stop_reading(w, c);
    c->served++;
    c->status = 0;
    c->h1_head = c->h1_chunked = c->h1_nobody = false;
    SWS_ADD(w->ctr.requests, 1);
    if (acme_challenge(w, c))
        return;
    /* The route's instance answers this request (route_inst.c, chosen when
     * its head was complete); the connection goes back to the default one
     * once the answer has ended. */
    if (!c->routed && w->routes_on)
        route_set(w, c, sws_route_pick(w, r));
    sws_scenario *sc = c->sc;
    w->log_route = sc->route->name;
    c->h1_in_answer = true;
    int rc = sc->ops->answer(w, sc, &c->ex);
    c->h1_in_answer = false;
    w->log_route = NULL;
    if (rc < 0) {
        route_clear(w, c); /* the instance holds nothing of it */
        sws_conn_close(w, c);
    } else if (rc == SWS_ANSWER_PENDING) {
        /* The scenario must make progress within send_timeout (the sweep). */
        c->answer_pending = true;
        c->deadline = tl_loop_now(w->loop) + w->cfg->send_timeout_ms;
    } else {
        if (c->h1_chunked)
            body_end(w, c);
        answer_done(w, c);
    }
}

static void answer_end(sws_worker *w, sws_conn *c) {
    c->answer_pending = false;
    body_end(w, c);
    answer_done(w, c);
    sws_conn_idle_deadline(w, c, conn_partial(c));
}

/* An error answer ends the connection: nothing after a bad request can be
 * trusted to be framed right. head: the answer to HEAD, without its body. */
static void answer_error_head(sws_worker *w, sws_conn *c, int status, bool head) {
    SWS_ADD(w->ctr.errors[sws_status_slot(status)], 1);
    /* A request refused after its route was chosen (413 in the body, the
     * proxy's 502) is that route's error; one refused earlier is no route's. */
    if (c->routed)
        sws_route_count(w, c->sc, status, (uint32_t)tl_loop_now(w->loop) - c->req_start);
    if (w->access_log)
        conn_log(w, c, status, head ? 0 : sws_http_error_body_len(status));
    if (!sws_conn_out_take(w, c)) {
        sws_conn_close(w, c);
        return;
    }
    size_t n = sws_http_error(c->out + c->olen, w->out_cap - c->olen, status, w->date.str, head);
    /* The rest of a refused request may still be on the wire: closing with
     * unread input would send a reset that destroys the answer (nginx's
     * lingering close). */
    sws_conn_last(w, c, true);
    if (n == 0) {
        sws_conn_close(w, c);
        return;
    }
    c->olen += (uint32_t)n;
}

static void answer_error(sws_worker *w, sws_conn *c, int status) {
    answer_error_head(w, c, status, false);
}

/* Expect: 100-continue with the body still to come: the interim answer goes
 * out with this turn's flush, so the client sends the body now instead of
 * after its own timeout. Room: consume() feeds only with resp_max bytes free. */
static void answer_continue(sws_worker *w, sws_conn *c) {
    static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
    if (!sws_conn_out_take(w, c)) {
        sws_conn_close(w, c);
        return;
    }
    memcpy(c->out + c->olen, cont, sizeof(cont) - 1);
    c->olen += (uint32_t)(sizeof(cont) - 1);
}

/* ---- the request read whole, for a scenario that takes it ------------------ */

static int req_on_head(void *user, sws_msg *m) {
    h1_req *r = user;
    sws_h1_msg_head(m, r->f, SWS_MSG_FIELDS_MAX, &r->head);
    int st = r->c->sc->ops->request_head(r->w, r->c->sc, &r->c->ex);
    if (st > 0) {
        r->status = st;
        return -1;
    }
    return 0;
}

static int req_on_body(void *user, const char *d, size_t n) {
    h1_req *r = user;
    int st = r->c->sc->ops->request_body(r->w, r->c->sc, &r->c->ex, d, n);
    if (st > 0) {
        r->status = st;
        return -1;
    }
    return 0;
}

static int req_on_done(void *user, sws_msg *m) {
    (void)m;
    h1_req *r = user;
    r->done = true;
    int st = r->c->sc->ops->request_end(r->w, r->c->sc, &r->c->ex);
    if (st > 0) {
        r->status = st;
        return -1;
    }
    return 0;
}

static const sws_msg_cb req_cb = {req_on_head, req_on_body, req_on_done};

/* Feeds the request's bytes, from its first, to its reader. 0, or the
 * status to refuse it with: what a hook chose, 431 for a head past the
 * reader's room, 400 for one the two readers frame differently. */
static int req_feed(sws_worker *w, sws_conn *c, const char *d, size_t n) {
    route_stash *st = stash_of(c);
    h1_req *r = st->req;
    if (!r) {
        if (!(r = sws_lend_take(&w->reqs)))
            return 503;
        r->w = w;
        r->c = c;
        r->status = 0;
        r->done = false;
        r->head = (sws_head){0};
        sws_msg_init(&r->msg, HTTP_REQUEST, &req_cb, r);
        st->req = r;
    }
    size_t off = 0;
    while (off < n && !r->done) {
        size_t used;
        int rc = sws_msg_feed(&r->msg, d + off, n - off, &used);
        if (rc < 0)
            return r->status ? r->status : rc == -E2BIG ? 431 : 400;
        off += used;
    }
    if (off < n)
        return 400; /* the two readers disagree on where the request ends */
    return 0;
}

static const sws_head *h1_request_head(const sws_exchange *x) {
    const sws_conn *c = cconn_ofx(x);
    if (!c->parser)
        return NULL;
    const h1_req *r = stash_of(c)->req;
    return r && r->head.f ? &r->head : NULL;
}

/* Bytes the strict parser passed (rc: what sws_http_feed said of them): once
 * a request's head is complete its route is chosen, and a scenario that takes
 * request bytes gets them all from the request's first, those kept in the
 * stash first. Returns 0, or an error status from the scenario. */
static int pass_bytes(sws_worker *w, sws_conn *c, int rc, const char *d, size_t n) {
    const sws_http_parser *p = c->parser;
    if (c->routed || !w->routes_on) {
        /* Routed already, or no routes: c->sc is the default from the start. */
        return c->sc->ops->request_head ? req_feed(w, c, d, n) : 0;
    }
    bool head_done = rc == SWS_HTTP_REQUEST || (p->in_message && p->headers_done);
    route_stash *st = stash_of(c);
    if (!head_done) {
        if (!w->stash_heads)
            return 0;
        if (!st->buf && !(st->buf = sws_lend_take(&w->outbuf)))
            return 503;
        memcpy(st->buf + st->len, d, n); /* consume() kept n within SWS_ROUTE_STASH */
        st->len += (uint32_t)n;
        return 0;
    }
    route_set(w, c, sws_route_pick(w, &p->req));
    const sws_scenario_ops *ops = c->sc->ops;
    int bad = 0;
    if (!ops->request_head) {
        /* nothing kept is needed */
    } else if (!st->len) {
        bad = req_feed(w, c, d, n); /* the head came whole: no copy */
    } else {
        memcpy(st->buf + st->len, d, n);
        st->len += (uint32_t)n;
        bad = req_feed(w, c, st->buf, st->len);
    }
    stash_give(w, c);
    return bad;
}

/* Parses from data[*off..len). Returns false when output is full (or the
 * scenario takes no more of a request body) and the rest must be held until a
 * write completes (or sws_conn_more). */
static bool consume(sws_worker *w, sws_conn *c, const char *data, uint32_t len, uint32_t *off) {
    while (*off < len) {
        if (c->phase != SWS_PH_OPEN) {
            sws_conn_last(w, c, true); /* pipelined input after a close: see answer_error */
            *off = len;
            break;
        }
        if (c->answer_pending || c->olen + w->resp_max > w->out_cap)
            return false;
        if (!c->parser && !parser_take(w, c)) {
            sws_conn_close(w, c); /* out of memory: this connection ends */
            *off = len;
            break;
        }
        /* Before the route is known, bytes are kept for a route whose
         * scenario takes them (w->stash_heads), at most SWS_ROUTE_STASH. */
        bool stashing = w->stash_heads && !c->routed;
        const sws_scenario_ops *ops = c->sc->ops;
        size_t n = len - *off;
        if (stashing) {
            size_t room = SWS_ROUTE_STASH - stash_of(c)->len;
            if (room == 0) { /* a head this long cannot be routed to such a scenario */
                answer_error(w, c, 431);
                *off = len;
                break;
            }
            if (n > room)
                n = room;
        } else if (ops->request_head) {
            /* The parser sees no byte the scenario cannot take now: what it
             * passed is handed over at once, in the order it came. */
            size_t room = ops->request_room(w, c->sc, &c->ex);
            if (room == 0)
                return false;
            if (n > room)
                n = room;
        }
        size_t used;
        int st;
        if (!sws_http_partial(c->parser))
            c->req_start =
                (uint32_t)tl_loop_now(w->loop); /* the route's latency counts from here */
        int rc = sws_http_feed(c->parser, data + *off, n, &used, &st);
        if (rc == SWS_HTTP_NEED_MORE)
            used = n;
        /* Bytes go on only where someone takes them, or a route is to be
         * chosen: without routes a respond request never calls out. */
        if (rc >= 0 && used && (ops->request_head || (!c->routed && w->routes_on))) {
            int bad = pass_bytes(w, c, rc, data + *off, used);
            if (bad > 0 || sws_phase_gone(c->phase)) {
                if (bad > 0 && c->phase == SWS_PH_OPEN)
                    answer_error(w, c, bad);
                *off = len;
                break;
            }
        }
        if (rc == SWS_HTTP_NEED_MORE) {
            *off += (uint32_t)n;
            if (sws_http_continue_due(c->parser))
                answer_continue(w, c);
            if (c->dl_kind == SWS_DL_IDLE && conn_partial(c)) {
                c->dl_kind = SWS_DL_HEADER;
                c->deadline = tl_loop_now(w->loop) + w->cfg->header_timeout_ms;
            } else if (ops->request_head && c->parser->headers_done) {
                /* A body streamed to the scenario: header_timeout runs
                 * between reads, not over the whole body. */
                c->deadline = tl_loop_now(w->loop) + w->cfg->header_timeout_ms;
            }
            continue;
        }
        if (rc == SWS_HTTP_REQUEST) {
            *off += (uint32_t)used;
            /* Held input counts the buffer being fed (pump) as one. */
            answer(w, c, *off < len || c->hcount > 1);
            if (!c->answer_pending)
                sws_conn_idle_deadline(w, c, conn_partial(c));
            continue;
        }
        answer_error(w, c, st);
        *off = len;
        break;
    }
    return true;
}

/* ---- the connection's side (transport/conn.c calls these) ------------------- */

static bool h1_input(sws_worker *w, sws_conn *c, const char *data, uint32_t len, uint32_t *off) {
    return consume(w, c, data, len, off);
}

static bool h1_partial(const sws_conn *c) {
    return conn_partial(c);
}

static void h1_drained(sws_worker *w, sws_conn *c) {
    if (c->sc->ops->more)
        c->sc->ops->more(w, c->sc, &c->ex);
}

static bool h1_timeout(sws_worker *w, sws_conn *c) {
    if (c->olen + 512 > w->out_cap)
        return false;
    answer_error(w, c, 408);
    return true;
}

static void h1_freed(sws_worker *w, sws_conn *c) {
    if (c->sc->ops->conn_end)
        c->sc->ops->conn_end(w, c->sc, &c->ex);
    c->answer_pending = false;
    route_clear(w, c); /* its instance holds it no more (a retired one may go) */
    parser_give(w, c);
}

/* A reload switched the access log on, off or to another file: open
 * connections keep Referer and User-Agent from now on, or stop. */
static void h1_reload(sws_worker *w, sws_conn *c) {
    if (c->parser)
        c->parser->req.log_fields = parser_log_fields(w, c->parser);
}

static int h1_table_init(sws_worker *w) {
    if (sws_lend_init(&w->parsers, SWS_PARSER_BLOCK, w->nslots) < 0 ||
        sws_lend_init(&w->reqs, sizeof(h1_req), w->nslots) < 0)
        return -ENOMEM;
    return 0;
}

/* After the loop is freed: the parsers connections still held, and the pool. */
static void h1_table_free(sws_worker *w) {
    for (uint32_t k = 0; k < w->nslots && w->slots; k++) {
        sws_conn *c = &w->slots[k];
        if (c->parser) {
            free(stash_of(c)->buf);
            free(stash_of(c)->req);
        }
        free(c->parser);
        c->parser = NULL;
    }
    sws_lend_fini(&w->parsers);
    sws_lend_fini(&w->reqs);
}

static void h1_trim(sws_worker *w) {
    sws_lend_trim(&w->parsers, SWS_PARSER_CACHE);
    sws_lend_trim(&w->reqs, SWS_REQ_CACHE);
}

static void h1_settle(sws_worker *w, sws_conn *c) {
    parser_settle(w, c);
}

const sws_conn_proto sws_http1_conn = {
    .ex = &h1_proto,
    .input = h1_input,
    .partial = h1_partial,
    .settle = h1_settle,
    .drained = h1_drained,
    .timeout = h1_timeout,
    .freed = h1_freed,
    .reload = h1_reload,
    .table_init = h1_table_init,
    .table_free = h1_table_free,
    .trim = h1_trim,
};
