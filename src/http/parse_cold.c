/* The reference path of request parsing (parse.c has the per-request path:
 * sws_http_feed, head.c's one pass and the bodies it frames): scan_head, then
 * llhttp with its callbacks and the chunk size lines, for every head the one
 * pass does not take, every refusal and every chunked body; and what follows a
 * request that ended the connection. Cold: a common request never comes here.
 * The parser pauses in on_message_complete, so that one request is returned
 * per call. Limits and the RFC 9112 rules llhttp does not enforce are checked
 * here; a violation stops the parser with the status to answer, and the caller
 * closes the connection after answering.
 *
 * Who rejects what (llhttp 8.1 built with LLHTTP_STRICT_MODE, no lenient flag):
 *   llhttp: Content-Length with Transfer-Encoding; duplicate (even identical) or
 *     malformed Content-Length; a Transfer-Encoding whose final coding is not
 *     chunked, or chunked twice; bad chunk sizes (non-hex, overflow) and chunk
 *     framing; whitespace or controls in field names; controls in field values;
 *     a bare CR inside a line; malformed versions.
 *   here: bare LF and bare CR at line ends, obs-fold and a double SP in the
 *     request line (scan_head); an empty field name; a missing (HTTP/1.1) or
 *     repeated Host and a Host with bytes no uri-host can hold; an empty
 *     Transfer-Encoding, one in HTTP/1.0, or codings besides chunked (501);
 *     versions other than 1.0 and 1.1 (505) and requests with no version; a
 *     well-formed method token llhttp does not know (501, RFC 9110 9.1:
 *     "unrecognized or not implemented"), against a malformed one (400);
 *     every chunk size line (sws_size_line_scan), and the asterisk-form target
 *     of any method but OPTIONS (400).
 *
 * Chunk size lines are read by chunk_line.c, not by llhttp (it says why), and
 * llhttp is handed only "SIZE CR LF"; llhttp keeps the chunk data, its CRLF and
 * the size's value and overflow. */
#include "parse_cold.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

enum { F_OTHER = 0, F_HOST, F_TE, F_CL, F_REFERER, F_UA, F_SF, F_EXPECT };

/* What the scanner knows of the request line's method token (p->method_tok).
 * llhttp refuses an unknown method at its first byte that no method it knows
 * has there, which may be before the token is over: the verdict (501 for a
 * well-formed token, 400 for a malformed one) waits for the token's end. */
enum {
    M_PENDING = 0, /* the token has not ended yet */
    M_TOKEN,       /* a token (RFC 9110 5.6.2), ended by SP */
    M_BAD,         /* a byte no token holds, or no SP after it */
};

static sws_http_parser *P(llhttp_t *lp) {
    return (sws_http_parser *)lp->data;
}

static int fail(sws_http_parser *p, int status) {
    if (!p->status)
        p->status = status;
    return -1;
}

/* RFC 9112 2.2: a bare CR is invalid, and a bare LF is one a recipient MAY
 * accept; we do not, because a peer that reads lines differently from us (a
 * proxy in front, or an upstream behind) is how requests are smuggled. Same for
 * obs-fold (5.2: a server MUST reject it or replace it) and for runs of SP in
 * the request line (3: recipients MAY split on any whitespace). It also counts
 * the head's raw bytes (skipped whitespace included) against header_bytes: one
 * exact count, whatever the reads were. Returns 0, or the status to answer with
 * the offset of the offending byte in *at. */
static int scan_head(sws_http_parser *p, const char *data, size_t len, size_t *at) {
    uint8_t s = p->scan;
    size_t i;
    int st = 0;
    for (i = 0; i < len && s != S_DONE; i++) {
        unsigned char c = (unsigned char)data[i];
        if (++p->raw_head > p->limits->header_bytes) {
            st = 431;
            break;
        }
        switch (s) {
        case S_START:
            /* Past the request before: what the log keeps is this one's. */
            p->req.line_len = p->req.referer_len = p->req.user_agent_len = 0;
            if (c == '\r') {
                s = S_START_CR;
                break;
            }
            if (c == '\n') {
                st = 400;
                break;
            }
            if (sws_http_tchar(c)) {
                s = S_METHOD;
                p->method_tok = M_PENDING;
            } else {
                s = S_LINE1;
                p->method_tok = M_BAD;
            }
            break;
        case S_START_CR:
            if (c != '\n')
                st = 400;
            s = S_START;
            break;
        case S_METHOD:
            if (sws_http_tchar(c))
                break;
            p->method_tok = c == ' ' ? M_TOKEN : M_BAD;
            s = S_LINE1;
            __attribute__((fallthrough)); /* the byte that ended it is the line's */
        case S_LINE1:
        case S_LINE1_SP:
            if (c == ' ') {
                if (s == S_LINE1_SP)
                    st = 400;
                s = S_LINE1_SP;
            } else if (c == '\r') {
                s = S_CR;
            } else if (c == '\n') {
                st = 400;
            } else {
                s = S_LINE1;
            }
            break;
        case S_LINE:
            if (c == '\r')
                s = S_CR;
            else if (c == '\n')
                st = 400;
            break;
        case S_CR:
            if (c != '\n')
                st = 400;
            s = S_BOL;
            break;
        case S_BOL:
            if (c == '\r')
                s = S_END_CR;
            else if (c == '\n' || c == ' ' || c == '\t')
                st = 400;
            else
                s = S_LINE;
            break;
        case S_END_CR:
            if (c != '\n')
                st = 400;
            s = S_DONE;
            break;
        }
        if (st)
            break;
        /* The request line as it came, for the access log's "%r": kept byte by
         * byte here because llhttp may refuse it before its end, and then the
         * log still shows what was refused. */
        if (s >= S_METHOD && s <= S_LINE1_SP && p->req.log_fields &&
            p->req.line_len < SWS_HTTP_LOG_FIELD_MAX)
            p->req.log_fields[SWS_HTTP_LOG_LINE + p->req.line_len++] = (char)c;
    }
    p->scan = s;
    *at = i;
    return st;
}

static int on_message_begin(llhttp_t *lp) {
    sws_http_parser *p = P(lp);
    p->in_message = true;
    p->headers_done = false;
    p->head_sound = false;
    p->header_count = 0;
    p->uri_len = 0;
    p->body_bytes = 0;
    p->field = F_OTHER;
    p->name_len = 0;
    p->host_count = 0;
    p->te_len = 0;
    p->ver_len = 0;
    p->te_seen = false;
    p->early_data = false;
    p->host_ws = false;
    p->chunked = false;
    p->expect_continue = false;
    p->expect_match = 0;
    p->trailers = false;
    p->chunk_next = false;
    p->ext_bytes = 0;
    p->req.path_len = 0;
    p->req.path[0] = '\0';
    p->req.path_truncated = false;
    p->req.host_len = 0;
    p->req.referer_len = 0;
    p->req.user_agent_len = 0;
    memset(p->req.sf_len, 0, sizeof(p->req.sf_len));
    p->req.sf_path_len = 0;
    return 0;
}

static int on_url(llhttp_t *lp, const char *at, size_t len) {
    sws_http_parser *p = P(lp);
    p->uri_len += (uint32_t)len;
    if (p->uri_len > p->limits->uri_length)
        return fail(p, 414);
    size_t room = SWS_HTTP_PATH_MAX - 1 - p->req.path_len;
    size_t n = len < room ? len : room;
    memcpy(p->req.path + p->req.path_len, at, n);
    p->req.path_len += (uint16_t)n;
    p->req.path[p->req.path_len] = '\0';
    if (n < len)
        p->req.path_truncated = true;
    if (p->req.sf_fields && p->req.sf_path_len <= SWS_HTTP_SF_PATH_MAX) {
        if (len > (size_t)(SWS_HTTP_SF_PATH_MAX - p->req.sf_path_len)) {
            p->req.sf_path_len = SWS_HTTP_SF_PATH_MAX + 1;
        } else {
            memcpy(p->req.sf_fields + SWS_HTTP_SF_PATH + p->req.sf_path_len, at, len);
            p->req.sf_path_len += (uint16_t)len;
        }
    }
    return 0;
}

/* Only whether a version was given: llhttp takes a request line without one as
 * HTTP/0.9, and calls no version callback for it. */
static int on_version(llhttp_t *lp, const char *at, size_t len) {
    sws_http_parser *p = P(lp);
    (void)at;
    if (len > 0)
        p->ver_len = 1;
    return 0;
}

static int on_version_complete(llhttp_t *lp) {
    sws_http_parser *p = P(lp);
    uint8_t major = llhttp_get_http_major(lp), minor = llhttp_get_http_minor(lp);
    if (major != 1 || minor > 1)
        return fail(p, 505);
    return 0;
}

static int on_header_field(llhttp_t *lp, const char *at, size_t len) {
    sws_http_parser *p = P(lp);
    for (size_t i = 0; i < len; i++) {
        if (p->name_len >= sizeof(p->name)) {
            p->name_len = UINT8_MAX; /* longer than any name we look for */
            break;
        }
        char c = at[i];
        p->name[p->name_len++] = (char)(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
    }
    return 0;
}

static bool name_is(const sws_http_parser *p, const char *lower) {
    size_t n = strlen(lower);
    return p->name_len == n && memcmp(p->name, lower, n) == 0;
}

/* Which static-scenario field the current line is (p->te_len is not used for
 * it: p->sf says which slot). A list field seen again gets a ',' and the rest;
 * a repeated single-valued one becomes unusable. */
static void sf_field(sws_http_parser *p) {
    static const char *const names[SWS_HTTP_SF_N] = {
        "range",           "if-none-match", "if-modified-since", "if-range",
        "accept-encoding", "authorization", "x-forwarded-for"};
    for (int k = 0; k < SWS_HTTP_SF_N; k++) {
        if (!name_is(p, names[k]))
            continue;
        uint16_t *n = &p->req.sf_len[k];
        p->field = F_SF;
        p->sf = (uint8_t)k;
        if (*n > 0 && *n <= SWS_HTTP_SF_VALUE_MAX) {
            if (SWS_HTTP_SF_LIST(k) && *n < SWS_HTTP_SF_VALUE_MAX)
                p->req.sf_fields[k * SWS_HTTP_SF_VALUE_MAX + (*n)++] = ',';
            else
                *n = SWS_HTTP_SF_VALUE_MAX + 1;
        }
        return;
    }
}

static int on_header_field_complete(llhttp_t *lp) {
    sws_http_parser *p = P(lp);
    /* llhttp 8.1 takes ": v" as a field with an empty name. */
    if (p->name_len == 0)
        return fail(p, 400);
    p->field = F_OTHER;
    /* Trailer fields are discarded: they neither frame nor route. */
    if (!p->headers_done) {
        if (name_is(p, "host")) {
            p->field = F_HOST;
            p->host_ws = false;
            if (p->host_count < UINT8_MAX)
                p->host_count++;
        } else if (name_is(p, "transfer-encoding")) {
            p->field = F_TE;
            p->te_seen = true;
            /* Several field lines are one list (RFC 9110 5.3). */
            if (p->te_len > 0 && p->te_len <= SWS_HTTP_TE_MAX) {
                if (p->te_len < SWS_HTTP_TE_MAX)
                    p->te[p->te_len++] = ',';
                else
                    p->te_len = SWS_HTTP_TE_MAX + 1;
            }
        } else if (name_is(p, "content-length")) {
            p->field = F_CL;
        } else if (name_is(p, "early-data")) {
            p->early_data = true; /* "1" is its only value (RFC 8470 5.1) */
        } else if (name_is(p, "expect")) {
            p->field = F_EXPECT;
            /* Several Expect lines: only a lone 100-continue counts. */
            p->expect_match = p->expect_match ? UINT8_MAX : 0;
        } else if (p->req.log_fields && name_is(p, "referer") && p->req.referer_len == 0) {
            p->field = F_REFERER;
        } else if (p->req.log_fields && name_is(p, "user-agent") && p->req.user_agent_len == 0) {
            p->field = F_UA;
        } else if (p->req.sf_fields) {
            sf_field(p);
        }
    }
    p->name_len = 0;
    return 0;
}

/* uri-host [ ":" port ] (RFC 3986): unreserved, pct-encoded, sub-delims, and
 * the brackets and colons of an IP literal and a port. */
static bool host_char(unsigned char c) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return true;
    return c != '\0' && strchr("-._~%!$&'()*+,;=:[]", c) != NULL;
}

static int on_header_value(llhttp_t *lp, const char *at, size_t len) {
    sws_http_parser *p = P(lp);
    if (p->field == F_HOST) {
        /* llhttp strips leading OWS and hands over trailing OWS. */
        for (size_t i = 0; i < len; i++) {
            unsigned char c = (unsigned char)at[i];
            if (c == ' ' || c == '\t')
                p->host_ws = true;
            else if (p->host_ws || !host_char(c))
                return fail(p, 400);
            else if (p->req.host_len < SWS_HTTP_HOST_MAX)
                p->req.host[p->req.host_len++] = (char)c;
        }
    } else if (p->field == F_REFERER || p->field == F_UA) {
        char *dst = p->req.log_fields + (p->field == F_UA ? SWS_HTTP_LOG_UA : SWS_HTTP_LOG_REFERER);
        uint16_t *n = p->field == F_UA ? &p->req.user_agent_len : &p->req.referer_len;
        size_t room = SWS_HTTP_LOG_FIELD_MAX - (size_t)*n;
        size_t k = len < room ? len : room;
        memcpy(dst + *n, at, k);
        *n += (uint16_t)k;
    } else if (p->field == F_SF) {
        uint16_t *n = &p->req.sf_len[p->sf];
        if (*n <= SWS_HTTP_SF_VALUE_MAX) {
            if (len > (size_t)(SWS_HTTP_SF_VALUE_MAX - *n)) {
                *n = SWS_HTTP_SF_VALUE_MAX + 1;
            } else {
                memcpy(p->req.sf_fields + p->sf * SWS_HTTP_SF_VALUE_MAX + *n, at, len);
                *n += (uint16_t)len;
            }
        }
    } else if (p->field == F_EXPECT) {
        /* Case-insensitive "100-continue", trailing OWS allowed. */
        static const char want[] = "100-continue";
        for (size_t i = 0; i < len && p->expect_match != UINT8_MAX; i++) {
            char c = at[i];
            c = (char)(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
            if (p->expect_match < sizeof(want) - 1 && c == want[p->expect_match])
                p->expect_match++;
            else if (p->expect_match < sizeof(want) - 1 || (c != ' ' && c != '\t'))
                p->expect_match = UINT8_MAX;
        }
    } else if (p->field == F_TE) {
        for (size_t i = 0; i < len && p->te_len <= SWS_HTTP_TE_MAX; i++) {
            if (p->te_len == SWS_HTTP_TE_MAX)
                p->te_len = SWS_HTTP_TE_MAX + 1;
            else
                p->te[p->te_len++] = at[i];
        }
    }
    return 0;
}

static int on_header_value_complete(llhttp_t *lp) {
    sws_http_parser *p = P(lp);
    /* llhttp hands over trailing OWS: not part of the value. */
    if (p->field == F_REFERER || p->field == F_UA) {
        const char *v =
            p->req.log_fields + (p->field == F_UA ? SWS_HTTP_LOG_UA : SWS_HTTP_LOG_REFERER);
        uint16_t *n = p->field == F_UA ? &p->req.user_agent_len : &p->req.referer_len;
        while (*n && (v[*n - 1] == ' ' || v[*n - 1] == '\t'))
            (*n)--;
    } else if (p->field == F_SF) {
        const char *v = p->req.sf_fields + p->sf * SWS_HTTP_SF_VALUE_MAX;
        uint16_t *n = &p->req.sf_len[p->sf];
        while (*n && *n <= SWS_HTTP_SF_VALUE_MAX && (v[*n - 1] == ' ' || v[*n - 1] == '\t'))
            (*n)--;
    }
    p->field = F_OTHER;
    if (++p->header_count > p->limits->header_count)
        return fail(p, 431);
    return 0;
}

/* llhttp has already refused a list whose last coding is not chunked, and
 * chunked twice. What is left: no coding at all (400), and codings before
 * chunked that we do not decode (RFC 9112 6.1: a server SHOULD answer 501). */
static int check_transfer_encoding(const sws_http_parser *p) {
    if (p->te_len > SWS_HTTP_TE_MAX)
        return 501; /* longer than "chunked" with any OWS we would keep */
    int codings = 0, chunked = 0;
    size_t i = 0;
    while (i < p->te_len) {
        while (i < p->te_len && (p->te[i] == ' ' || p->te[i] == '\t' || p->te[i] == ','))
            i++;
        size_t b = i;
        while (i < p->te_len && p->te[i] != ',')
            i++;
        size_t e = i;
        while (e > b && (p->te[e - 1] == ' ' || p->te[e - 1] == '\t'))
            e--;
        if (e == b)
            continue;
        codings++;
        if (e - b == 7 && strncasecmp(p->te + b, "chunked", 7) == 0)
            chunked++;
    }
    if (codings == 0 || chunked != 1)
        return 400;
    return codings == 1 ? 0 : 501;
}

static int on_headers_complete(llhttp_t *lp) {
    sws_http_parser *p = P(lp);
    p->headers_done = true;
    p->req.method = llhttp_get_method(lp);
    p->req.http_major = llhttp_get_http_major(lp);
    p->req.http_minor = llhttp_get_http_minor(lp);
    p->req.head = p->req.method == HTTP_HEAD;
    /* Upgrades (and CONNECT) are not served: the request is answered, then the
     * connection closes, since llhttp takes every later byte as the other
     * protocol's. Found by fuzz_request: the bytes after an upgrade were
     * swallowed when they came in the same read and refused when they came
     * in the next. */
    p->req.keep_alive = llhttp_should_keep_alive(lp) != 0 && !lp->upgrade;
    p->req.upgrade = lp->upgrade && p->req.method != HTTP_CONNECT;
    p->req.upgrade_keep = p->req.upgrade && llhttp_should_keep_alive(lp) != 0;
    /* A request line with no version is HTTP/0.9 to llhttp; we serve none. */
    if (p->ver_len == 0)
        return fail(p, 400);
    /* RFC 9112 3.2.4: the asterisk-form is only for a server-wide OPTIONS. */
    if (p->uri_len == 1 && p->req.path[0] == '*' && p->req.method != HTTP_OPTIONS)
        return fail(p, 400);
    /* RFC 9112 3.2: 400 for an HTTP/1.1 request without Host, and for any with
     * more than one. */
    if (p->host_count > 1 || (p->req.http_minor == 1 && p->host_count == 0))
        return fail(p, 400);
    if (p->te_seen) {
        /* RFC 9112 6.1: Transfer-Encoding in HTTP/1.0 means faulty framing. */
        if (p->req.http_minor == 0)
            return fail(p, 400);
        int st = check_transfer_encoding(p);
        if (st)
            return fail(p, st);
    }
    /* The head is sound: a refusal from here on (its declared size, a fault
     * in its body or trailers) is one of a request that has a route. So 413
     * comes after the checks above: a head that is malformed too is a 400
     * (or 501), no route's, whatever its Content-Length says. */
    p->head_sound = true;
    if ((lp->flags & F_CONTENT_LENGTH) && lp->content_length > p->limits->body_size)
        return fail(p, 413);
    int early = sws_http_too_early(p->req.method, p->early_data);
    if (early)
        return fail(p, early);
    p->chunked = (lp->flags & F_CHUNKED) != 0;
    /* RFC 9110 15.2: never a 1xx to an HTTP/1.0 client; none without content. */
    bool body = p->chunked || ((lp->flags & F_CONTENT_LENGTH) && lp->content_length > 0);
    p->expect_continue =
        p->expect_match == sizeof("100-continue") - 1 && p->req.http_minor == 1 && body;
    return 0;
}

static int on_body(llhttp_t *lp, const char *at, size_t len) {
    sws_http_parser *p = P(lp);
    (void)at;
    p->body_bytes += len;
    if (p->body_bytes > p->limits->body_size)
        return fail(p, 413);
    return 0;
}

/* The last chunk (size 0) is followed by the trailer section: pause, so that
 * sws_http_feed knows where it starts and scans it as it scans the head. */
static int on_chunk_header(llhttp_t *lp) {
    sws_http_parser *p = P(lp);
    if (lp->content_length != 0)
        return 0;
    p->last_chunk = true;
    p->trailers = true;
    return HPE_PAUSED;
}

/* After a chunk's data and CRLF the next size line is sws_size_line_scan's: pause
 * so that sws_http_feed knows where it starts. */
static int on_chunk_complete(llhttp_t *lp) {
    sws_http_parser *p = P(lp);
    if (p->trailers)
        return 0;
    p->chunk_next = true;
    return HPE_PAUSED;
}

static int on_message_complete(llhttp_t *lp) {
    sws_http_parser *p = P(lp);
    p->in_message = false;
    p->complete = true;
    /* llhttp reads a trailer's Connection: close like the head's, and after
     * this request refuses every byte but blank lines. Keep-alive is what it
     * decides now, so that the answer closes too and what follows is refused
     * by after_close on both paths. Found by fuzz_request: the next request
     * was served by head.c and refused by llhttp. */
    if (!llhttp_should_keep_alive(lp))
        p->req.keep_alive = false;
    p->closed = !p->req.keep_alive;
    p->scan = S_START;
    p->raw_head = 0;
    return HPE_PAUSED;
}

static const llhttp_settings_t settings = {
    .on_message_begin = on_message_begin,
    .on_url = on_url,
    .on_version = on_version,
    .on_version_complete = on_version_complete,
    .on_header_field = on_header_field,
    .on_header_field_complete = on_header_field_complete,
    .on_header_value = on_header_value,
    .on_header_value_complete = on_header_value_complete,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_chunk_header = on_chunk_header,
    .on_chunk_complete = on_chunk_complete,
    .on_message_complete = on_message_complete,
};

static void llhttp_ready(sws_http_parser *p) {
    if (p->ll_ready)
        return;
    llhttp_init(&p->p, HTTP_REQUEST, &settings);
    p->p.data = p;
    p->ll_ready = true;
}

static int refuse(sws_http_parser *p, int status, size_t len, size_t *consumed, int *out) {
    if (!p->status)
        p->status = status;
    *out = p->status;
    *consumed = len;
    return -EBADMSG;
}

/* The status of an llhttp error: the one a callback chose, else 501, 505 or 400. */
static int llhttp_status(sws_http_parser *p, llhttp_errno_t e) {
    if (p->status)
        return p->status;
    if (e == HPE_INVALID_METHOD)
        return p->method_tok == M_TOKEN ? 501 : 400;
    /* llhttp refuses a well-formed but unknown version ("HTTP/1.2") itself, with
     * this reason; malformed ones ("HTTP/1.x", "HTTP/11.1") get other reasons.
     * The reason is the only split-independent sign: the version span may not
     * have reached on_version when the check fails. test_strict pins it. */
    if (e == HPE_INVALID_VERSION) {
        const char *why = llhttp_get_error_reason(&p->p);
        if (why && strcmp(why, "Invalid HTTP version") == 0)
            return 505;
    }
    return 400;
}

/* llhttp has refused the method before its token ended: only the scanner reads
 * on, until the token ends (501 or 400) or a fault or header_bytes ends it
 * (400, as when the same bytes come in one read). */
int sws_http_method_verdict(sws_http_parser *p, const char *data, size_t len, size_t *consumed,
                            int *status) {
    size_t at;
    int st = scan_head(p, data, len, &at);
    if (p->method_tok == M_TOKEN)
        return refuse(p, 501, len, consumed, status);
    if (st || p->method_tok == M_BAD)
        return refuse(p, 400, len, consumed, status);
    *consumed = len;
    return SWS_HTTP_NEED_MORE;
}

/* What llhttp does with bytes after a request without keep-alive (strict mode:
 * empty lines skipped, anything else "Data after Connection: close"), with
 * scan_head before it as on the reference path: its faults first, then 400.
 * Here for both paths, so that head.c never reads a request llhttp would not:
 * after a request head.c read, llhttp has not seen it end the connection. */
int sws_http_after_close(sws_http_parser *p, const char *data, size_t len, size_t *consumed,
                         int *status) {
    size_t at;
    int st = scan_head(p, data, len, &at);
    if (p->scan != S_START && p->scan != S_START_CR)
        return refuse(p, 400, len, consumed, status);
    if (st)
        return refuse(p, st, len, consumed, status);
    *consumed = len;
    return SWS_HTTP_NEED_MORE;
}

/* The reference path: scan_head, then llhttp (and the chunk size lines).
 * Out of line, so that a request head.c reads does not pay for this path's
 * stack frame. */
int sws_http_feed_reference(sws_http_parser *p, const char *data, size_t len, size_t *consumed,
                            int *status) {
    llhttp_ready(p);
    size_t off = 0;
    llhttp_errno_t e;
    for (;;) {
        if (p->scan == S_CHUNK) {
            /* At a chunk size line: llhttp is fed the line sws_size_line_scan
             * made of it once it is whole. */
            size_t at;
            bool done;
            if (sws_size_line_scan(&p->size_line, &p->ext_bytes, p->limits->chunk_ext_bytes,
                                   data + off, len - off, &at, &done))
                return refuse(p, 400, len, consumed, status);
            off += at;
            if (!done) {
                *consumed = len;
                return SWS_HTTP_NEED_MORE;
            }
            p->scan = S_DONE;
            e = llhttp_execute(&p->p, p->size_line.size, p->size_line.len);
            p->size_line.len = 0;
            if (e == HPE_PAUSED && p->last_chunk) {
                /* The last chunk: the trailer section starts at data + off. */
                llhttp_resume(&p->p);
                p->last_chunk = false;
                p->scan = S_BOL;
            } else if (e != HPE_OK) {
                return refuse(p, llhttp_status(p, e), len, consumed, status);
            }
            if (off >= len) {
                *consumed = len;
                return SWS_HTTP_NEED_MORE;
            }
            continue;
        }
        /* The scanner stops at the blank line that ends the head (or the
         * trailers), which is where llhttp's ends too once bare LFs are
         * refused: it never judges a body byte, and a pipelined request's bytes
         * are scanned when they are fed again after the previous request. */
        size_t upto = len;
        bool head_end = false;
        if (p->scan != S_DONE) {
            size_t at;
            int st = scan_head(p, data + off, len - off, &at);
            if (st) {
                /* llhttp sees the bytes before the offending one first, so that
                 * the first fault in the stream is the one answered, however it
                 * was split. They cannot complete a request: the section is not
                 * over. */
                e = at ? llhttp_execute(&p->p, data + off, at) : HPE_OK;
                return refuse(p, e == HPE_OK ? st : llhttp_status(p, e), len, consumed, status);
            }
            /* llhttp reads up to the head's end only: a chunked body's first
             * size line is sws_size_line_scan's. */
            if (p->scan == S_DONE) {
                head_end = true;
                upto = off + at;
            }
        }
        e = llhttp_execute(&p->p, data + off, upto - off);
        if (e == HPE_OK && head_end) {
            off = upto;
            if (p->chunked && !p->trailers)
                p->scan = S_CHUNK;
            if (off >= len) {
                *consumed = len;
                return SWS_HTTP_NEED_MORE;
            }
            continue;
        }
        if (e == HPE_PAUSED && p->chunk_next) {
            /* Paused after a chunk's CRLF: the next size line starts here. */
            const char *pos = llhttp_get_error_pos(&p->p);
            llhttp_resume(&p->p);
            p->chunk_next = false;
            p->scan = S_CHUNK;
            off = pos ? (size_t)(pos - data) : len;
            if (off >= len) {
                *consumed = len;
                return SWS_HTTP_NEED_MORE;
            }
            continue;
        }
        if (e != HPE_PAUSED || !p->last_chunk)
            break;
        /* Paused after the last chunk's size line: the trailer section starts
         * here, at the start of a line, and is scanned like the head. */
        const char *pos = llhttp_get_error_pos(&p->p);
        llhttp_resume(&p->p);
        p->last_chunk = false;
        p->scan = S_BOL;
        off = pos ? (size_t)(pos - data) : len;
        if (off >= len) {
            *consumed = len;
            return SWS_HTTP_NEED_MORE;
        }
    }
    if (e == HPE_OK) {
        *consumed = len;
        return SWS_HTTP_NEED_MORE;
    }
    if (e == HPE_PAUSED || e == HPE_PAUSED_UPGRADE) {
        const char *pos = llhttp_get_error_pos(&p->p);
        *consumed = pos ? (size_t)(pos - data) : len;
        if (e == HPE_PAUSED)
            llhttp_resume(&p->p);
        else
            p->status = 400; /* what follows an upgrade is not HTTP/1.1 to llhttp */
        if (p->complete) {
            p->complete = false;
            return SWS_HTTP_REQUEST;
        }
        if (p->status)
            return refuse(p, p->status, len, consumed, status);
        *consumed = len;
        return SWS_HTTP_NEED_MORE;
    }
    if (e == HPE_INVALID_METHOD && p->method_tok == M_PENDING) {
        /* The scanner has seen every byte so far and is still in the token. */
        p->method_wait = true;
        *consumed = len;
        return SWS_HTTP_NEED_MORE;
    }
    return refuse(p, llhttp_status(p, e), len, consumed, status);
}
