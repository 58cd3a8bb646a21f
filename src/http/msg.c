/* The proxy's message reader: llhttp in request or response mode, keeping the
 * head in a fixed buffer for rewriting and passing decoded body bytes on.
 * A complete message pauses the parser, so one feed never runs into the next
 * message: the proxy decides when the stream may go on (keep-alive). Chunk
 * size lines are read here and llhttp is fed "SIZE CR LF" alone: llhttp 8.1
 * refuses several extensions on one line and quoted-pairs in them, which RFC
 * 9112 7.1.1 allows (parse_cold.c does the same for the strict parser, which has
 * already judged every request byte the proxy reads; an upstream's are not). */
#include "sws_msg.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

static sws_msg *of(llhttp_t *p) {
    return p->data;
}

static int append(sws_msg *m, const char *at, size_t n) {
    if (m->len + n > SWS_MSG_HEAD_MAX) {
        m->overflow = true;
        return -1;
    }
    memcpy(m->buf + m->len, at, n);
    m->len += (uint32_t)n;
    return 0;
}

static int on_begin(llhttp_t *p) {
    sws_msg *m = of(p);
    m->len = m->start_off = m->start_len = m->nf = m->head_nf = 0;
    m->last = 0;
    m->started = true;
    m->headers_done = false;
    m->trailers = false;
    return 0;
}

static int on_start(llhttp_t *p, const char *at, size_t n) {
    sws_msg *m = of(p);
    if (append(m, at, n) < 0)
        return -1;
    m->start_len += (uint32_t)n;
    return 0;
}

static int on_field(llhttp_t *p, const char *at, size_t n) {
    sws_msg *m = of(p);
    if (m->last != 1) {
        if (m->nf == SWS_MSG_FIELDS_MAX) {
            m->overflow = true;
            return -1;
        }
        m->f[m->nf++] = (sws_msg_field){.name_off = (uint16_t)m->len};
        m->last = 1;
    }
    if (append(m, at, n) < 0)
        return -1;
    m->f[m->nf - 1].name_len += (uint16_t)n;
    return 0;
}

static int on_value(llhttp_t *p, const char *at, size_t n) {
    sws_msg *m = of(p);
    if (m->last != 2) {
        m->f[m->nf - 1].val_off = (uint16_t)m->len;
        m->last = 2;
    }
    if (append(m, at, n) < 0)
        return -1;
    m->f[m->nf - 1].val_len += (uint16_t)n;
    return 0;
}

static int on_headers(llhttp_t *p) {
    sws_msg *m = of(p);
    m->headers_done = true;
    m->head_nf = m->nf;
    /* llhttp 8.1 takes "HTTP/1.1  200 OK" as status 0, and two-digit or
     * "000"/"999" codes as they are: none may pass on to a client. Found by
     * fuzz_response (RFC 9110 15: a status code is three digits, 100..599). */
    if (p->type == HTTP_RESPONSE && (p->status_code < 100 || p->status_code > 599))
        return -1;
    int rc = m->cb->on_head(m->user, m);
    if (rc < 0)
        return -1;
    /* A 1xx answer never has content (RFC 9112 6.3), but llhttp 8.1 reads a
     * body after 103 or 199 with a Content-Length, which the proxy would have
     * passed on. Found by fuzz_response. */
    if (p->type == HTTP_RESPONSE && p->status_code / 100 == 1)
        return 1;
    if (rc == 0 && (p->flags & F_CHUNKED)) {
        m->size_next = true; /* the first size line is ours */
        return HPE_PAUSED;
    }
    return rc;
}

static int on_chunk_header(llhttp_t *p) {
    of(p)->trailers = p->content_length == 0;
    return 0;
}

/* After a chunk's data and its CRLF: the next size line is ours. */
static int on_chunk_complete(llhttp_t *p) {
    sws_msg *m = of(p);
    if (m->trailers)
        return 0;
    m->size_next = true;
    return HPE_PAUSED;
}

static bool hex(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Reads a size line from data; *at: bytes taken. 1 when it is whole, 0 for
 * more, -1 when malformed. Extensions are skipped (never forwarded: the proxy
 * writes its own framing), only bare CR and LF and controls refused. */
static int size_line(sws_msg *m, const char *data, size_t len, size_t *at) {
    size_t i = 0;
    while (i < len) {
        unsigned char c = (unsigned char)data[i++];
        if (m->cstate == 0 && hex((char)c)) {
            if (m->csize_len >= sizeof(m->csize) - 2)
                return -1;
            m->csize[m->csize_len++] = (char)c;
        } else if (m->cstate < 2 && c == '\r') {
            m->cstate = 2;
        } else if (m->cstate == 2) {
            if (c != '\n' || m->csize_len == 0)
                return -1;
            *at = i;
            return 1;
        } else if (m->csize_len && (c == ';' || c == ' ' || c == '\t' || m->cstate == 1) &&
                   (c >= ' ' || c == '\t') && c != 0x7f) {
            m->cstate = 1;
        } else {
            return -1;
        }
    }
    *at = i;
    return 0;
}

static int on_body(llhttp_t *p, const char *at, size_t n) {
    sws_msg *m = of(p);
    return m->cb->on_body(m->user, at, n) < 0 ? -1 : 0;
}

static int on_complete(llhttp_t *p) {
    sws_msg *m = of(p);
    m->started = false;
    if (m->cb->on_done(m->user, m) < 0)
        return -1;
    return HPE_PAUSED;
}

void sws_msg_init(sws_msg *m, llhttp_type_t type, const sws_msg_cb *cb, void *user) {
    llhttp_settings_init(&m->s);
    m->s.on_message_begin = on_begin;
    m->s.on_url = on_start;
    m->s.on_status = on_start;
    m->s.on_header_field = on_field;
    m->s.on_header_value = on_value;
    m->s.on_headers_complete = on_headers;
    m->s.on_body = on_body;
    m->s.on_message_complete = on_complete;
    m->s.on_chunk_header = on_chunk_header;
    m->s.on_chunk_complete = on_chunk_complete;
    llhttp_init(&m->p, type, &m->s);
    m->p.data = m;
    m->cb = cb;
    m->user = user;
    m->len = m->nf = m->head_nf = 0;
    m->overflow = m->started = m->headers_done = false;
    m->size_next = m->at_size = m->trailers = false;
    m->cstate = m->csize_len = 0;
}

int sws_msg_feed(sws_msg *m, const char *data, size_t len, size_t *used) {
    size_t off = 0;
    for (;;) {
        if (m->at_size) {
            size_t at;
            int rc = size_line(m, data + off, len - off, &at);
            off += at;
            if (rc < 0)
                break;
            if (rc == 0) {
                *used = len;
                return SWS_MSG_NEED_MORE;
            }
            m->at_size = false;
            memcpy(m->csize + m->csize_len, "\r\n", 2);
            llhttp_errno_t e = llhttp_execute(&m->p, m->csize, m->csize_len + 2u);
            m->csize_len = m->cstate = 0;
            if (e != HPE_OK)
                break;
        }
        if (off == len) {
            *used = len;
            return SWS_MSG_NEED_MORE;
        }
        llhttp_errno_t e = llhttp_execute(&m->p, data + off, len - off);
        if (e == HPE_OK) {
            *used = len;
            return SWS_MSG_NEED_MORE;
        }
        if (e == HPE_PAUSED && m->size_next) {
            m->size_next = false;
            m->at_size = true;
            off = (size_t)(llhttp_get_error_pos(&m->p) - data);
            llhttp_resume(&m->p);
            continue;
        }
        if (e == HPE_PAUSED || e == HPE_PAUSED_UPGRADE) {
            *used = (size_t)(llhttp_get_error_pos(&m->p) - data);
            return SWS_MSG_DONE;
        }
        break;
    }
    *used = 0;
    return m->overflow ? -E2BIG : -EBADMSG;
}

int sws_msg_eof(sws_msg *m) {
    if (!m->started)
        return 0;
    /* Only a message whose framing is the end of the stream ends well here;
     * llhttp_finish reports a cut Content-Length or chunked body as an error. */
    if (!m->headers_done || !llhttp_message_needs_eof(&m->p))
        return -EPIPE;
    llhttp_errno_t e = llhttp_finish(&m->p);
    if (e == HPE_OK || e == HPE_PAUSED)
        return SWS_MSG_DONE;
    return -EPIPE;
}

void sws_msg_next(sws_msg *m) {
    llhttp_resume(&m->p);
    m->started = false;
    m->headers_done = false;
    m->size_next = m->at_size = m->trailers = false;
    m->cstate = m->csize_len = 0;
}

bool sws_msg_name_is(const sws_msg *m, uint32_t i, const char *name) {
    size_t n = strlen(name);
    return m->f[i].name_len == n && strncasecmp(m->buf + m->f[i].name_off, name, n) == 0;
}

bool sws_http_list_has(const char *v, size_t n, const char *token) {
    const char *end = v + n;
    size_t tl = strlen(token);
    while (v < end) {
        while (v < end && (*v == ' ' || *v == '\t' || *v == ','))
            v++;
        const char *s = v;
        while (v < end && *v != ',')
            v++;
        const char *e = v;
        while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
            e--;
        if ((size_t)(e - s) == tl && strncasecmp(s, token, tl) == 0)
            return true;
    }
    return false;
}

bool sws_msg_value_has(const sws_msg *m, uint32_t i, const char *token) {
    return sws_http_list_has(m->buf + m->f[i].val_off, m->f[i].val_len, token);
}
