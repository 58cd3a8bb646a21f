/* Request parsing on llhttp. One request is returned per call (the parser pauses
 * in on_message_complete), so the caller answers pipelined requests in order and
 * can stop feeding when its output is full. Limits are checked inside the
 * callbacks; a violation stops the parser with the status to answer. */
#include "sws_http.h"

#include <errno.h>
#include <string.h>

static sws_http_parser *P(llhttp_t *lp) { return (sws_http_parser *)lp->data; }

static int fail(sws_http_parser *p, int status)
{
    if (!p->status)
        p->status = status;
    return -1;
}

static int on_message_begin(llhttp_t *lp)
{
    sws_http_parser *p = P(lp);
    p->in_message = true;
    p->headers_done = false;
    p->head_bytes = 16; /* method, version and the request line's separators */
    p->raw_head = 0;
    p->header_count = 0;
    p->uri_len = 0;
    p->body_bytes = 0;
    p->req.path_len = 0;
    p->req.path[0] = '\0';
    p->req.path_truncated = false;
    return 0;
}

static int on_url(llhttp_t *lp, const char *at, size_t len)
{
    sws_http_parser *p = P(lp);
    p->uri_len += (uint32_t)len;
    if (p->uri_len > p->limits->uri_length)
        return fail(p, 414);
    p->head_bytes += (uint32_t)len;
    if (p->head_bytes > p->limits->header_bytes)
        return fail(p, 431);
    size_t room = SWS_HTTP_PATH_MAX - 1 - p->req.path_len;
    size_t n = len < room ? len : room;
    memcpy(p->req.path + p->req.path_len, at, n);
    p->req.path_len += (uint16_t)n;
    p->req.path[p->req.path_len] = '\0';
    if (n < len)
        p->req.path_truncated = true;
    return 0;
}

static int on_header_data(llhttp_t *lp, const char *at, size_t len)
{
    sws_http_parser *p = P(lp);
    (void)at;
    p->head_bytes += (uint32_t)len;
    if (p->head_bytes > p->limits->header_bytes)
        return fail(p, 431);
    return 0;
}

static int on_header_value_complete(llhttp_t *lp)
{
    sws_http_parser *p = P(lp);
    p->head_bytes += 4; /* ": " and CRLF */
    if (++p->header_count > p->limits->header_count || p->head_bytes > p->limits->header_bytes)
        return fail(p, 431);
    return 0;
}

static int on_headers_complete(llhttp_t *lp)
{
    sws_http_parser *p = P(lp);
    p->headers_done = true;
    if ((lp->flags & F_CONTENT_LENGTH) && lp->content_length > p->limits->body_size)
        return fail(p, 413);
    p->req.method = llhttp_get_method(lp);
    p->req.http_major = llhttp_get_http_major(lp);
    p->req.http_minor = llhttp_get_http_minor(lp);
    p->req.head = p->req.method == HTTP_HEAD;
    p->req.keep_alive = llhttp_should_keep_alive(lp) != 0;
    return 0;
}

static int on_body(llhttp_t *lp, const char *at, size_t len)
{
    sws_http_parser *p = P(lp);
    (void)at;
    p->body_bytes += len;
    if (p->body_bytes > p->limits->body_size)
        return fail(p, 413);
    return 0;
}

static int on_message_complete(llhttp_t *lp)
{
    sws_http_parser *p = P(lp);
    p->in_message = false;
    p->complete = true;
    return HPE_PAUSED;
}

static const llhttp_settings_t settings = {
    .on_message_begin = on_message_begin,
    .on_url = on_url,
    .on_header_field = on_header_data,
    .on_header_value = on_header_data,
    .on_header_value_complete = on_header_value_complete,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

void sws_http_parser_init(sws_http_parser *p, const sws_http_limits *limits)
{
    memset(p, 0, sizeof(*p));
    p->limits = limits;
    llhttp_init(&p->p, HTTP_REQUEST, &settings);
    p->p.data = p;
}

int sws_http_feed(sws_http_parser *p, const char *data, size_t len, size_t *consumed, int *status)
{
    *consumed = 0;
    *status = 0;
    if (p->status) {
        *status = p->status;
        return -EBADMSG;
    }
    if (len == 0)
        return SWS_HTTP_NEED_MORE;
    llhttp_errno_t e = llhttp_execute(&p->p, data, len);
    if (e == HPE_OK) {
        /* Whitespace llhttp skips is not seen by the callbacks: count raw bytes
         * too, so that no head grows without bound. */
        if (p->in_message && !p->headers_done) {
            p->raw_head += (uint32_t)(len > UINT32_MAX ? UINT32_MAX : len);
            if (p->raw_head > p->limits->header_bytes) {
                p->status = 431;
                *status = 431;
                *consumed = len;
                return -EBADMSG;
            }
        }
        *consumed = len;
        return SWS_HTTP_NEED_MORE;
    }
    if (e == HPE_PAUSED || e == HPE_PAUSED_UPGRADE) {
        const char *pos = llhttp_get_error_pos(&p->p);
        *consumed = pos ? (size_t)(pos - data) : len;
        if (e == HPE_PAUSED)
            llhttp_resume(&p->p);
        else {
            /* Upgrades are not served: answer the request, then close. */
            p->req.keep_alive = false;
            p->status = 400;
        }
        if (p->complete) {
            p->complete = false;
            return SWS_HTTP_REQUEST;
        }
        *consumed = len;
        return SWS_HTTP_NEED_MORE;
    }
    if (!p->status)
        p->status = 400;
    *status = p->status;
    *consumed = len;
    return -EBADMSG;
}
