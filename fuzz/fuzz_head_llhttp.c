/* Differential fuzz target: the same bytes through our parser (head.c's one
 * pass wherever it takes a head, the reference path elsewhere) and through
 * llhttp alone, as a peer that never saw our code would read them. Every
 * request we serve must be a request llhttp frames the same way: same end,
 * method, version, target, Host, body length and keep-alive. We may refuse
 * what llhttp takes (we are stricter, see parse_cold.c); never the reverse, since
 * a proxy behind or in front of us that frames differently is a smuggling
 * path. The one exception is the chunk size line, which parse_cold.c reads itself
 * because llhttp 8.1 refuses extensions RFC 9112 allows (fuzz_request covers
 * it): a refusal there from llhttp ends the comparison. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sws_http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_REQ 64

typedef struct framed {
    size_t end; /* offset just past the request in the stream */
    uint8_t method, major, minor;
    bool keep_alive;
    uint64_t body; /* content bytes */
    uint32_t target_len;
    char target[SWS_HTTP_PATH_MAX];
    uint16_t host_len;
    char host[SWS_HTTP_HOST_MAX];
} framed;

typedef struct side {
    int n;
    framed req[MAX_REQ];
    bool chunk_line_refused; /* llhttp only: see the file's comment */
} side;

static void check(bool ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "fuzz_head_llhttp: %s\n", what);
        abort();
    }
}

/* ---- ours ---------------------------------------------------------------- */

static const sws_http_limits lim = SWS_HTTP_DEFAULT_LIMITS;

static void ours(const uint8_t *data, size_t size, side *s) {
    static sws_http_parser p;
    static char log_fields[SWS_HTTP_LOG_STORAGE], sf_fields[SWS_HTTP_SF_STORAGE];
    sws_http_parser_init(&p, &lim);
    /* As a connection with the access log and the static scenario lends them:
     * head.c's field keeping runs too. */
    p.req.log_fields = log_fields;
    p.req.sf_fields = sf_fields;
    memset(s, 0, sizeof(*s));
    size_t off = 0;
    while (off < size && s->n < MAX_REQ) {
        size_t used;
        int st;
        int rc = sws_http_feed(&p, (const char *)data + off, size - off, &used, &st);
        if (rc != SWS_HTTP_REQUEST)
            return; /* waiting for more, or refused: nothing more is served */
        off += used;
        framed *f = &s->req[s->n++];
        const sws_http_request *r = &p.req;
        f->end = off;
        f->method = r->method;
        f->major = r->http_major;
        f->minor = r->http_minor;
        f->keep_alive = r->keep_alive;
        f->body = p.body_bytes;
        f->target_len = r->path_truncated ? UINT32_MAX : r->path_len;
        memcpy(f->target, r->path, r->path_len);
        f->host_len = r->host_len;
        memcpy(f->host, r->host, r->host_len);
    }
}

/* ---- llhttp alone ---------------------------------------------------------- */

typedef struct peer {
    llhttp_t p;
    side *s;
    framed cur;
    uint32_t target_len;
    bool in_host, host_done;
} peer;

static int pe_begin(llhttp_t *lp) {
    peer *x = lp->data;
    memset(&x->cur, 0, sizeof(x->cur));
    x->target_len = 0;
    x->in_host = x->host_done = false;
    return 0;
}

static int pe_url(llhttp_t *lp, const char *at, size_t len) {
    peer *x = lp->data;
    for (size_t i = 0; i < len; i++, x->target_len++)
        if (x->target_len < SWS_HTTP_PATH_MAX - 1)
            x->cur.target[x->target_len] = at[i];
    return 0;
}

static int pe_field(llhttp_t *lp, const char *at, size_t len) {
    peer *x = lp->data;
    /* Names come whole here: llhttp_execute is given the whole stream. */
    x->in_host = !x->host_done && !(lp->flags & F_TRAILING) && len == 4 && (at[0] | 0x20) == 'h' &&
                 (at[1] | 0x20) == 'o' && (at[2] | 0x20) == 's' && (at[3] | 0x20) == 't';
    return 0;
}

static int pe_value(llhttp_t *lp, const char *at, size_t len) {
    peer *x = lp->data;
    if (!x->in_host)
        return 0;
    for (size_t i = 0; i < len && x->cur.host_len < SWS_HTTP_HOST_MAX; i++)
        x->cur.host[x->cur.host_len++] = at[i];
    return 0;
}

static int pe_value_complete(llhttp_t *lp) {
    peer *x = lp->data;
    if (x->in_host) {
        /* llhttp hands over trailing OWS; a Host value ends before it. */
        while (x->cur.host_len && (x->cur.host[x->cur.host_len - 1] == ' ' ||
                                   x->cur.host[x->cur.host_len - 1] == '\t'))
            x->cur.host_len--;
        x->host_done = true;
        x->in_host = false;
    }
    return 0;
}

static int pe_body(llhttp_t *lp, const char *at, size_t len) {
    peer *x = lp->data;
    (void)at;
    x->cur.body += len;
    return 0;
}

static int pe_complete(llhttp_t *lp) {
    peer *x = lp->data;
    x->cur.method = llhttp_get_method(lp);
    x->cur.major = llhttp_get_http_major(lp);
    x->cur.minor = llhttp_get_http_minor(lp);
    /* As parse.c decides it: an upgrade is answered, then the connection ends. */
    x->cur.keep_alive = llhttp_should_keep_alive(lp) && !lp->upgrade;
    x->cur.target_len = x->target_len < SWS_HTTP_PATH_MAX ? x->target_len : UINT32_MAX;
    return HPE_PAUSED; /* so that the end is known */
}

static const llhttp_settings_t pe_settings = {
    .on_message_begin = pe_begin,
    .on_url = pe_url,
    .on_header_field = pe_field,
    .on_header_value = pe_value,
    .on_header_value_complete = pe_value_complete,
    .on_body = pe_body,
    .on_message_complete = pe_complete,
};

static void llhttp_alone(const uint8_t *data, size_t size, side *s) {
    static peer x;
    memset(&x, 0, sizeof(x));
    memset(s, 0, sizeof(*s));
    x.s = s;
    llhttp_init(&x.p, HTTP_REQUEST, &pe_settings);
    x.p.data = &x;
    const char *d = (const char *)data;
    size_t off = 0;
    while (off < size && s->n < MAX_REQ) {
        llhttp_errno_t e = llhttp_execute(&x.p, d + off, size - off);
        if (e == HPE_OK)
            return;
        if (e == HPE_PAUSED) {
            const char *pos = llhttp_get_error_pos(&x.p);
            off = (size_t)(pos - d);
            x.cur.end = off;
            s->req[s->n++] = x.cur;
            llhttp_resume(&x.p);
            continue;
        }
        if (e == HPE_PAUSED_UPGRADE)
            return; /* the rest is another protocol's */
        const char *why = llhttp_get_error_reason(&x.p);
        s->chunk_line_refused = (x.p.flags & F_CHUNKED) && why && strstr(why, "chunk") != NULL;
        return;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static side a, b;
    ours(data, size, &a);
    llhttp_alone(data, size, &b);
    for (int i = 0; i < a.n; i++) {
        if (i == b.n) {
            /* llhttp stopped before this request ended. Our chunk size lines
             * are our own (see above); anything else is a request llhttp
             * would not have served. */
            check(b.chunk_line_refused || b.n == MAX_REQ, "we served a request llhttp refuses");
            return 0;
        }
        const framed *x = &a.req[i], *y = &b.req[i];
        check(x->end == y->end, "the request ends elsewhere for llhttp");
        check(x->method == y->method, "llhttp reads another method");
        check(x->major == y->major && x->minor == y->minor, "llhttp reads another version");
        check(x->body == y->body, "llhttp reads another body length");
        check(x->keep_alive == y->keep_alive, "llhttp decides keep-alive otherwise");
        check(x->target_len == y->target_len &&
                  (x->target_len == UINT32_MAX || memcmp(x->target, y->target, x->target_len) == 0),
              "llhttp reads another target");
        if (x->host_len < SWS_HTTP_HOST_MAX)
            check(x->host_len == y->host_len && memcmp(x->host, y->host, x->host_len) == 0,
                  "llhttp reads another Host");
    }
    return 0;
}
