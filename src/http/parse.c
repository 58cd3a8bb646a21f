/* Request parsing, the per-request path: at the start of each request
 * sws_http_feed offers the bytes to head.c's one pass, which takes only whole
 * heads the reference path (parse_cold.c: scan_head, then llhttp) would accept
 * and reads them as its callbacks would (see head.c); a request it took is
 * finished here (fast_body) without llhttp. Everything else goes to the
 * reference path, which says who rejects what. One request is returned per
 * call, so the caller answers pipelined requests in order and can stop feeding
 * when its output is full. */
#include "sws_http.h"

#include "head.h"
#include "parse_cold.h"

#include <errno.h>
#include <string.h>

void sws_http_parser_init(sws_http_parser *p, const sws_http_limits *limits) {
    /* A parser is made per request: everything but the request's path and
     * host buffers (the struct's end), which only their lengths open. */
    memset(p, 0, offsetof(sws_http_parser, req.path));
    p->req.path[0] = '\0';
    p->limits = limits;
    p->scan = S_START;
    /* llhttp is set up when the reference path first needs it (ll_ready): a
     * parser is made per request, and most requests never reach llhttp. */
}

/* The body of a request whose head head.c read: Content-Length bytes, already
 * judged against body_size with the head. Completes the request when they are
 * all in; at is where they start in data. */
static int fast_body(sws_http_parser *p, size_t at, size_t len, size_t *consumed) {
    size_t avail = len - at;
    size_t k = avail < p->body_left ? avail : (size_t)p->body_left;
    p->body_left -= k;
    p->body_bytes += k;
    if (p->body_left > 0) {
        *consumed = len;
        return SWS_HTTP_NEED_MORE;
    }
    p->fast_body = false;
    p->in_message = false;
    p->closed = !p->req.keep_alive;
    *consumed = at + k;
    return SWS_HTTP_REQUEST;
}

/* At the start of a request: head.c's one pass, when it takes the head.
 * Returns SWS_HTTP_REQUEST or SWS_HTTP_NEED_MORE as fast_body, or -1 when the
 * reference path must read the bytes. */
static int fast_head(sws_http_parser *p, const char *data, size_t len, size_t *consumed) {
    size_t head_len;
    uint64_t cl;
    if (p->reference_only || !sws_http_head_fast(p, data, len, &head_len, &cl))
        return -1;
    /* What on_message_begin and on_headers_complete would have left. */
    p->headers_done = true;
    p->head_sound = true;
    p->body_bytes = 0;
    p->chunked = false;
    p->trailers = false;
    p->expect_continue = false;
    if (cl == 0) {
        /* Complete at once (most requests): never in_message, no body. */
        p->closed = !p->req.keep_alive;
        *consumed = head_len;
        return SWS_HTTP_REQUEST;
    }
    p->in_message = true;
    p->fast_body = true;
    p->body_left = cl;
    return fast_body(p, head_len, len, consumed);
}

int sws_http_feed(sws_http_parser *p, const char *data, size_t len, size_t *consumed, int *status) {
    *consumed = 0;
    *status = 0;
    if (p->status) {
        *status = p->status;
        return -EBADMSG;
    }
    if (len == 0)
        return SWS_HTTP_NEED_MORE;
    if (p->fast_body)
        return fast_body(p, 0, len, consumed);
    if (p->closed)
        return sws_http_after_close(p, data, len, consumed, status);
    if (p->method_wait)
        return sws_http_method_verdict(p, data, len, consumed, status);
    if (p->scan == S_START && p->raw_head == 0 && !p->in_message) {
        int rc = fast_head(p, data, len, consumed);
        if (rc >= 0)
            return rc;
    }
    return sws_http_feed_reference(p, data, len, consumed, status);
}

bool sws_http_continue_due(sws_http_parser *p) {
    if (!p->expect_continue || !p->headers_done || !p->in_message || p->status)
        return false;
    p->expect_continue = false;
    return true;
}
