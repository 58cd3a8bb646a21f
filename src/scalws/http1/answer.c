/* HTTP/1.1 answers: the exchange's functions (exchange.h) for a request on
 * an HTTP/1.1 connection: heads framed from an sws_answer (status line,
 * Server, Date, the fields, Content-Length or chunked, Connection; nothing
 * of a body for HEAD, 1xx, 204, 304), bodies copied or chunked, sendfile
 * where the bytes need no framing, fixed answers framed once per Date, our
 * own error answers. Every function runs on the connection's loop thread. */
#include "h1.h"

#include "access_log.h"
#include "h1_write.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>

/* Room kept in front of a chunk's bytes for its size line (out_cap < 16 MiB:
 * six hex digits and CRLF), and after them for its CRLF. */
#define H1_CHUNK_PRE 8
#define H1_CHUNK_POST 2

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
int h1_head(sws_worker *w, sws_exchange *x, const sws_answer *a) {
    sws_conn *c = conn_ofx(x);
    const sws_http_request *r = &c->parser->req;
    if (!sws_conn_out_take(w, c))
        return -ENOMEM;
    int st = a->status;
    /* RFC 9110 6.4.1: no content in an answer to HEAD, nor in 1xx, 204, 304. */
    bool bodyless_status = st < 200 || st == 204 || st == 304;
    bool nobody = r->head || bodyless_status;
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
    uint32_t pl;
    const char *policy = h1_policy(c, st, &pl);
    static const char server[] = "Server: " SWS_HTTP_SERVER "\r\nDate: ";
    /* Status line, Server and Date, Content-Type, the route's fields; then
     * what ends the head: a length or chunked, Connection, the blank line
     * (H1_HEAD_TAIL). */
    size_t fixed = 13 + rl + 2 + sizeof(server) - 1 + SWS_DATE_LEN + 2 + 11 + w->alt_svc_len + 16 +
                   tl + 2 + pl;
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
        if (w->alt_svc_len && c->tls) { /* the quic listener, for https origins */
            H1_PUT(p, "Alt-Svc: ", 9);
            H1_PUT(p, w->alt_svc, w->alt_svc_len);
            H1_PUT(p, "\r\n", 2);
        }
    }
    if (a->content_type) {
        H1_PUT(p, "Content-Type: ", 14);
        H1_PUT(p, a->content_type, tl);
        H1_PUT(p, "\r\n", 2);
    }
    if (pl)
        H1_PUT(p, policy, pl); /* an upstream's field of the same name is kept too, as nginx */
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
    } else if (!(st < 200 || st == 204) && !(st == 304 && a->length == 0)) {
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
void h1_body_end(sws_worker *w, sws_conn *c) {
    (void)w;
    if (c->h1_chunked && c->out && c->olen + 5 <= w->out_cap) {
        memcpy(c->out + c->olen, "0\r\n\r\n", 5);
        c->olen += 5;
    }
    c->h1_chunked = false;
}

/* The trailer section goes in the last chunk (RFC 9112 7.1.2), which ends
 * the body here instead of in h1_body_end; a body not chunked has no place
 * for it (an HTTP/1.0 client's, a HEAD's): the fields are dropped. */
static int h1_trailers(sws_worker *w, sws_exchange *x, const sws_field *f, uint32_t n) {
    sws_conn *c = conn_ofx(x);
    if (!c->h1_chunked || c->h1_nobody || !c->out)
        return 0;
    size_t need = 5; /* "0\r\n" and the blank line */
    for (uint32_t i = 0; i < n; i++)
        need += (size_t)f[i].name_len + f[i].value_len + 4;
    if (c->olen + need > w->out_cap)
        return -ENOSPC;
    char *p = c->out + c->olen;
    H1_PUT(p, "0\r\n", 3);
    for (uint32_t i = 0; i < n; i++) {
        H1_PUT(p, f[i].name, f[i].name_len);
        H1_PUT(p, ": ", 2);
        H1_PUT(p, f[i].value, f[i].value_len);
        H1_PUT(p, "\r\n", 2);
    }
    H1_PUT(p, "\r\n", 2);
    c->olen = (uint32_t)(p - c->out);
    c->h1_chunked = false; /* the last chunk is written */
    return 0;
}

/* HTTP/1.1 sends files with sendfile (h1_sendfile), from the scenario's
 * descriptor, as the socket takes them. */
static int h1_file(sws_worker *w, sws_exchange *x, int fd, uint64_t off, uint64_t len) {
    (void)w;
    (void)x;
    (void)fd;
    (void)off;
    (void)len;
    return -EOPNOTSUPP;
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
 * Date: answering is one memcpy. The tls listeners' copies carry Alt-Svc
 * when a quic listener is advertised (w->alt_svc), as every other answer
 * of theirs does. */
typedef struct h1_frame {
    char *buf;
    uint32_t len, head;
} h1_frame;

typedef struct h1_framed {
    h1_frame v[2][2]; /* [with Alt-Svc][keep-alive] */
    char *fields;     /* Alt-Svc then the policy's fields, for the tls copies */
    uint32_t fields_len;
    uint32_t date_version;
    size_t cap;
} h1_framed;

static void framed_free(void *p) {
    h1_framed *f = p;
    for (int a = 0; a < 2; a++)
        for (int k = 0; k < 2; k++)
            free(f->v[a][k].buf);
    free(f->fields);
    free(f);
}

static void frame(h1_frame *fr, size_t cap, const sws_fixed *f, const char *date, bool ka,
                  const char *fields, uint32_t fields_len) {
    size_t h = sws_http_head_fields(fr->buf, cap, f->status, date, f->content_type, f->body_len, ka,
                                    fields, fields_len);
    fr->len = 0;
    if (h == 0 || h + f->body_len > cap)
        return;
    memcpy(fr->buf + h, f->body, f->body_len);
    fr->head = (uint32_t)h;
    fr->len = (uint32_t)(h + f->body_len);
}

/* The room a fixed answer takes in the output (sws_http1_fixed_cap). */
size_t sws_http1_fixed_cap(const sws_fixed *f) {
    return 512 + (f->content_type ? strlen(f->content_type) : 0) + f->body_len +
           (f->headers ? f->headers->h1_len[1] : 0);
}

static h1_framed *framed_of(sws_worker *w, sws_fixed *f) {
    h1_framed *fr = f->framed[SWS_PROTO_HTTP1];
    uint32_t pl;
    const char *policy = sws_headers_h1(f->headers, f->status, &pl);
    int alts = w->alt_svc_len ? 2 : 1;
    if (!fr) {
        fr = calloc(1, sizeof(*fr));
        if (!fr)
            return NULL;
        fr->cap = sws_http1_fixed_cap(f);
        bool ok = true;
        for (int a = 0; a < alts; a++)
            for (int k = 0; k < 2; k++)
                ok = ok && (fr->v[a][k].buf = malloc(fr->cap));
        if (ok && alts == 2 && (fr->fields = malloc(pl + w->alt_svc_len + 11))) {
            char *p = fr->fields;
            H1_PUT(p, "Alt-Svc: ", 9);
            H1_PUT(p, w->alt_svc, w->alt_svc_len);
            H1_PUT(p, "\r\n", 2);
            if (pl)
                H1_PUT(p, policy, pl);
            fr->fields_len = (uint32_t)(p - fr->fields);
        }
        if (!ok || (alts == 2 && !fr->fields)) {
            framed_free(fr);
            return NULL;
        }
        fr->date_version = w->date.version - 1;
        f->framed[SWS_PROTO_HTTP1] = fr;
        f->framed_free[SWS_PROTO_HTTP1] = framed_free;
    }
    if (fr->date_version != w->date.version) {
        for (int k = 0; k < 2; k++) {
            frame(&fr->v[0][k], fr->cap, f, w->date.str, k, policy, pl);
            if (alts == 2)
                frame(&fr->v[1][k], fr->cap, f, w->date.str, k, fr->fields, fr->fields_len);
        }
        fr->date_version = w->date.version;
    }
    for (int a = 0; a < alts; a++)
        if (!fr->v[a][0].len || !fr->v[a][1].len)
            return NULL;
    return fr;
}

static int h1_fixed(sws_worker *w, sws_exchange *x, sws_fixed *f) {
    sws_conn *c = conn_ofx(x);
    h1_framed *fr = framed_of(w, f);
    if (!fr)
        return -ENOMEM;
    bool ka = c->phase == SWS_PH_OPEN, head = c->parser->req.head;
    /* The quic listener, for https origins only. */
    const h1_frame *v = &fr->v[w->alt_svc_len && c->tls][ka];
    uint32_t n = head ? v->head : v->len;
    if (c->olen + n > w->out_cap)
        return -ENOSPC;
    memcpy(c->out + c->olen, v->buf, n);
    c->olen += n;
    c->status = (uint16_t)f->status;
    c->h1_head = true;
    return 0;
}

static void h1_end(sws_worker *w, sws_exchange *x) {
    h1_answer_end(w, conn_ofx(x));
}

static void h1_more(sws_worker *w, sws_exchange *x) {
    sws_conn *c = conn_ofx(x);
    if (!sws_phase_gone(c->phase))
        sws_conn_pump(w, c);
    h1_parser_settle(w, c);
}

static void h1_close(sws_worker *w, sws_exchange *x) {
    sws_conn_close(w, conn_ofx(x));
}

static void h1_log(sws_worker *w, sws_exchange *x, const char *peer, int status, uint64_t bytes) {
    sws_conn *c = conn_ofx(x);
    if (!peer) {
        h1_conn_log(w, c, status, bytes);
        return;
    }
    const sws_route *keep = w->log_route;
    w->log_route = c->sc->route;
    sws_access_log_parsed(w, peer, c->parser, status, bytes, c->tls != NULL, c->req_start);
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
    h1_answer_end(w, c);
}

const sws_error_page *h1_error_page(sws_worker *w, const sws_conn *c, int status, bool known) {
    const sws_error_page *p = known ? sws_error_page_find(c->sc->cfg, status) : NULL;
    /* The route's resp_max keeps room for it (route_inst.c); else the text. */
    return p && (size_t)p->len + 1024 <= w->out_cap - c->olen ? p : NULL;
}

size_t h1_error_write(sws_worker *w, sws_conn *c, int status, const sws_error_page *page,
                      bool head) {
    char *out = c->out + c->olen;
    size_t cap = w->out_cap - c->olen;
    uint32_t pl; /* the route's header policy: its always fields on an error */
    const char *policy = h1_policy(c, status, &pl);
    if (!page)
        return sws_http_error_fields(out, cap, status, w->date.str, head, policy, pl);
    size_t h = sws_http_head_fields(out, cap, status, w->date.str, page->content_type, page->len,
                                    false, policy, pl);
    if (h == 0 || head)
        return h;
    if (h + page->len > cap)
        return 0;
    memcpy(out + h, page->body, page->len);
    return h + page->len;
}

/* Our own error answer (the route's page, or a text body naming the status)
 * for a request whose answer has not begun, after which the connection ends
 * (the proxy's 502/504). The route counts it when the answer is done. */
static void error_answer(sws_worker *w, sws_conn *c, int status) {
    bool head = c->parser->req.head;
    SWS_ADD(w->ctr.errors[sws_status_slot(status)], 1);
    c->status = (uint16_t)status;
    bool out = sws_conn_out_take(w, c);
    const sws_error_page *page = h1_error_page(w, c, status, true); /* the scenario's error */
    if (w->logs)
        h1_conn_log(w, c, status, head ? 0 : page ? page->len : sws_http_error_body_len(status));
    size_t n = out ? h1_error_write(w, c, status, page, head) : 0;
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
            h1_answer_end(w, c);
        if (!sws_phase_gone(c->phase))
            sws_conn_pump(w, c);
    } else if (c->phase == SWS_PH_OPEN) {
        h1_answer_error_head(w, c, status, c->parser && c->parser->req.head);
        sws_conn_stop_reading(w, c); /* nothing more is read before the lingering close */
        if (!sws_phase_gone(c->phase))
            sws_conn_pump(w, c);
    }
    return 0;
}

const sws_proto sws_h1_proto = {
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
    .file = h1_file,
    .fixed = h1_fixed,
    .error = h1_error,
    .trailers = h1_trailers,
    .end = h1_end,
    .more = h1_more,
    .close = h1_close,
    .abort = h1_abort,
    .log = h1_log,
    .peer = h1_peer,
    .refused = h1_refused,
    .wait = h1_wait,
};
