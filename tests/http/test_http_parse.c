/* Unit tests of the request parser and response heads: each limit gives its
 * status, pipelined requests come out one at a time and in order, keep-alive
 * follows the version and Connection header. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka.h needs the four headers above first: a block of its own, so that
 * clang-format's include sorting keeps it after them. */
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sws_http.h"

static const sws_http_limits lim = SWS_HTTP_DEFAULT_LIMITS;

/* Feeds s in one piece; returns the first non-NEED_MORE result. */
static int feed_all(sws_http_parser *p, const char *s, size_t len, size_t *used, int *status) {
    return sws_http_feed(p, s, len, used, status);
}

static void http_simple_get_keep_alive(void **state) {
    (void)state;
    sws_http_parser p;
    sws_http_parser_init(&p, &lim);
    const char *r = "GET /hello?x=1 HTTP/1.1\r\nHost: a\r\n\r\n";
    size_t used;
    int st;
    assert_int_equal(feed_all(&p, r, strlen(r), &used, &st), SWS_HTTP_REQUEST);
    assert_int_equal(used, strlen(r));
    assert_true(p.req.keep_alive);
    assert_false(p.req.head);
    assert_string_equal(p.req.path, "/hello?x=1");
    assert_int_equal(p.req.http_minor, 1);
}

static void http_connection_close_and_http10(void **state) {
    (void)state;
    sws_http_parser p;
    size_t used;
    int st;
    const char *a = "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
    sws_http_parser_init(&p, &lim);
    assert_int_equal(feed_all(&p, a, strlen(a), &used, &st), SWS_HTTP_REQUEST);
    assert_false(p.req.keep_alive);

    const char *b = "GET / HTTP/1.0\r\n\r\n";
    sws_http_parser_init(&p, &lim);
    assert_int_equal(feed_all(&p, b, strlen(b), &used, &st), SWS_HTTP_REQUEST);
    assert_false(p.req.keep_alive);

    const char *c = "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n";
    sws_http_parser_init(&p, &lim);
    assert_int_equal(feed_all(&p, c, strlen(c), &used, &st), SWS_HTTP_REQUEST);
    assert_true(p.req.keep_alive);
    assert_int_equal(p.req.http_minor, 0);
}

static void http_referer_and_user_agent_are_kept(void **state) {
    (void)state;
    sws_http_parser p;
    size_t used;
    int st;
    char big[600];
    memset(big, 'u', sizeof(big));
    char r[1024];
    int n = snprintf(r, sizeof(r),
                     "GET / HTTP/1.1\r\nHost: a\r\nuser-agent: %.*s\r\nReferer: http://r/ \t\r\n"
                     "Referer: second\r\n\r\n",
                     (int)sizeof(big), big);
    static char keep[SWS_HTTP_LOG_STORAGE];
    /* Not kept unless storage is lent. */
    sws_http_parser_init(&p, &lim);
    assert_int_equal(feed_all(&p, r, (size_t)n, &used, &st), SWS_HTTP_REQUEST);
    assert_int_equal(p.req.user_agent_len, 0);
    sws_http_parser_init(&p, &lim);
    p.req.log_fields = keep;
    assert_int_equal(feed_all(&p, r, (size_t)n, &used, &st), SWS_HTTP_REQUEST);
    assert_int_equal(p.req.user_agent_len, SWS_HTTP_LOG_FIELD_MAX); /* truncated */
    assert_int_equal(p.req.referer_len, 9);                         /* first line, no OWS */
    assert_memory_equal(keep, "http://r/", 9);
    /* The next request starts empty. */
    const char *b = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";
    assert_int_equal(feed_all(&p, b, strlen(b), &used, &st), SWS_HTTP_REQUEST);
    assert_int_equal(p.req.user_agent_len, 0);
    assert_int_equal(p.req.referer_len, 0);
}
/* The request line as it came, one byte at a time or whole: for a request
 * that completes, for one refused in its line (llhttp may refuse before the
 * line ends: the log still shows what was sent), pipelined one after another,
 * and "-" (nothing kept) once blank lines follow. */
/* The static scenario's fields: kept only with storage lent, list fields
 * joined, a repeated Range unusable, too long unusable, reset per request. */
static void http_static_fields_are_kept(void **state) {
    (void)state;
    static char sf[SWS_HTTP_SF_STORAGE];
    sws_http_parser p;
    sws_http_parser_init(&p, &lim);
    p.req.sf_fields = sf;
    char longv[300];
    memset(longv, 'a', sizeof(longv) - 1);
    longv[sizeof(longv) - 1] = '\0';
    char r[2048];
    snprintf(r, sizeof(r),
             "GET /a/b%%20c?q HTTP/1.1\r\nHost: a\r\nRange: bytes=1-2  \r\n"
             "If-None-Match: \"x\"\r\nif-none-match: \"y\"\r\nAccept-Encoding: gzip\r\n"
             "If-Modified-Since: %s\r\n\r\n"
             "GET /2 HTTP/1.1\r\nHost: a\r\nRange: bytes=0-0\r\nRange: bytes=1-1\r\n\r\n",
             longv);
    size_t used, off = 0;
    int st;
    assert_int_equal(sws_http_feed(&p, r, strlen(r), &used, &st), SWS_HTTP_REQUEST);
    off += used;
    assert_int_equal(p.req.sf_len[SWS_HTTP_SF_RANGE], 9);
    assert_memory_equal(sf + SWS_HTTP_SF_RANGE * SWS_HTTP_SF_VALUE_MAX, "bytes=1-2", 9);
    assert_int_equal(p.req.sf_len[SWS_HTTP_SF_INM], 7);
    assert_memory_equal(sf + SWS_HTTP_SF_INM * SWS_HTTP_SF_VALUE_MAX, "\"x\",\"y\"", 7);
    assert_int_equal(p.req.sf_len[SWS_HTTP_SF_AE], 4);
    assert_true(p.req.sf_len[SWS_HTTP_SF_IMS] > SWS_HTTP_SF_VALUE_MAX);
    assert_int_equal(p.req.sf_len[SWS_HTTP_SF_IF_RANGE], 0);
    assert_int_equal(p.req.sf_path_len, strlen("/a/b%20c?q"));
    assert_memory_equal(sf + SWS_HTTP_SF_PATH, "/a/b%20c?q", p.req.sf_path_len);
    assert_int_equal(sws_http_feed(&p, r + off, strlen(r) - off, &used, &st), SWS_HTTP_REQUEST);
    assert_true(p.req.sf_len[SWS_HTTP_SF_RANGE] > SWS_HTTP_SF_VALUE_MAX);
    assert_int_equal(p.req.sf_len[SWS_HTTP_SF_INM], 0);
    assert_int_equal(p.req.sf_len[SWS_HTTP_SF_AE], 0);
    assert_int_equal(p.req.sf_path_len, 2);
    /* Without storage nothing is kept. */
    sws_http_parser_init(&p, &lim);
    assert_int_equal(sws_http_feed(&p, r, strlen(r), &used, &st), SWS_HTTP_REQUEST);
    assert_int_equal(p.req.sf_len[SWS_HTTP_SF_RANGE], 0);
}

static void http_request_line_is_kept_for_the_log(void **state) {
    (void)state;
    static char keep[SWS_HTTP_LOG_STORAGE];
    sws_http_parser p;
    size_t used;
    int st;
    const char *line = keep + SWS_HTTP_LOG_LINE;

    const char *two = "GET /a?b HTTP/1.1\r\nHost: a\r\nUser-Agent: u\r\n\r\n"
                      "POST /c HTTP/1.0\r\nContent-Length: 0\r\n\r\n\r\n";
    sws_http_parser_init(&p, &lim);
    p.req.log_fields = keep;
    assert_int_equal(feed_all(&p, two, strlen(two), &used, &st), SWS_HTTP_REQUEST);
    assert_int_equal(p.req.line_len, strlen("GET /a?b HTTP/1.1"));
    assert_memory_equal(line, "GET /a?b HTTP/1.1", p.req.line_len);
    assert_int_equal(p.req.user_agent_len, 1);
    size_t off = used;
    assert_int_equal(feed_all(&p, two + off, strlen(two) - off, &used, &st), SWS_HTTP_REQUEST);
    assert_memory_equal(line, "POST /c HTTP/1.0", p.req.line_len);
    assert_int_equal(p.req.user_agent_len, 0); /* the first request's is gone */
    off += used;
    assert_int_equal(feed_all(&p, two + off, strlen(two) - off, &used, &st), SWS_HTTP_NEED_MORE);
    assert_int_equal(p.req.line_len, 0); /* a blank line: no request line now */

    /* Refused by llhttp at its first unknown byte, kept to the line's end,
     * even when it comes a byte per read. */
    const char *brew = "BREW /pot HTTP/1.1\r\nHost: a\r\n\r\n";
    sws_http_parser_init(&p, &lim);
    p.req.log_fields = keep;
    int rc = SWS_HTTP_NEED_MORE;
    for (size_t i = 0; i < strlen(brew) && rc == SWS_HTTP_NEED_MORE; i++)
        rc = feed_all(&p, brew + i, 1, &used, &st);
    assert_int_equal(rc, -EBADMSG);
    assert_int_equal(st, 501);
    assert_true(p.req.line_len >= strlen("BREW "));
    assert_memory_equal(line, "BREW ", 5);

    /* A bad byte in the target: the line up to the refusal. */
    const char *bad = "GET /a\x01b HTTP/1.1\r\nHost: a\r\n\r\n";
    sws_http_parser_init(&p, &lim);
    p.req.log_fields = keep;
    assert_int_equal(feed_all(&p, bad, strlen(bad), &used, &st), -EBADMSG);
    assert_int_equal(st, 400);
    assert_true(p.req.line_len >= strlen("GET /a"));
    assert_memory_equal(line, "GET /a", 6);

    /* Longer than the room: truncated, never past it. */
    char big[1024];
    int n = snprintf(big, sizeof(big), "GET /%0900d HTTP/1.1\r\nHost: a\r\n\r\n", 0);
    sws_http_parser_init(&p, &lim);
    p.req.log_fields = keep;
    assert_int_equal(feed_all(&p, big, (size_t)n, &used, &st), SWS_HTTP_REQUEST);
    assert_int_equal(p.req.line_len, SWS_HTTP_LOG_FIELD_MAX);

    /* Nothing kept without storage. */
    sws_http_parser_init(&p, &lim);
    assert_int_equal(feed_all(&p, two, strlen(two), &used, &st), SWS_HTTP_REQUEST);
    assert_int_equal(p.req.line_len, 0);
}

static void http_head_is_flagged(void **state) {
    (void)state;
    sws_http_parser p;
    size_t used;
    int st;
    const char *a = "HEAD / HTTP/1.1\r\nHost: x\r\n\r\n";
    sws_http_parser_init(&p, &lim);
    assert_int_equal(feed_all(&p, a, strlen(a), &used, &st), SWS_HTTP_REQUEST);
    assert_true(p.req.head);
}

static void http_pipelined_one_at_a_time_in_order(void **state) {
    (void)state;
    sws_http_parser p;
    sws_http_parser_init(&p, &lim);
    char buf[1024];
    size_t len = 0;
    for (int i = 0; i < 5; i++)
        len += (size_t)snprintf(buf + len, sizeof(buf) - len, "GET /%d HTTP/1.1\r\nHost: a\r\n\r\n",
                                i);
    size_t off = 0;
    for (int i = 0; i < 5; i++) {
        size_t used;
        int st;
        assert_int_equal(sws_http_feed(&p, buf + off, len - off, &used, &st), SWS_HTTP_REQUEST);
        char want[8];
        snprintf(want, sizeof(want), "/%d", i);
        assert_string_equal(p.req.path, want);
        off += used;
    }
    assert_int_equal(off, len);
}

static void http_byte_by_byte(void **state) {
    (void)state;
    sws_http_parser p;
    sws_http_parser_init(&p, &lim);
    const char *r = "POST /up HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhelloGET /next "
                    "HTTP/1.1\r\nHost: a\r\n\r\n";
    size_t len = strlen(r), off = 0;
    int got = 0;
    while (off < len) {
        size_t used;
        int st;
        int rc = sws_http_feed(&p, r + off, 1, &used, &st);
        assert_true(rc >= 0);
        off += used ? used : 1;
        if (rc == SWS_HTTP_REQUEST) {
            got++;
            if (got == 1)
                assert_string_equal(p.req.path, "/up");
            else
                assert_string_equal(p.req.path, "/next");
        }
    }
    assert_int_equal(got, 2);
}

static void http_chunked_body_is_read(void **state) {
    (void)state;
    sws_http_parser p;
    sws_http_parser_init(&p, &lim);
    const char *r =
        "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
    size_t used;
    int st;
    assert_int_equal(sws_http_feed(&p, r, strlen(r), &used, &st), SWS_HTTP_REQUEST);
    assert_int_equal(used, strlen(r));
    assert_int_equal(p.body_bytes, 3);
}

static int expect_error(const sws_http_limits *l, const char *r, size_t len) {
    sws_http_parser p;
    sws_http_parser_init(&p, l);
    size_t off = 0;
    while (off < len) {
        size_t used;
        int st;
        int rc = sws_http_feed(&p, r + off, len - off, &used, &st);
        if (rc == -EBADMSG)
            return st;
        if (rc == SWS_HTTP_NEED_MORE)
            return 0;
        off += used;
    }
    return 0;
}

static void http_malformed_is_400(void **state) {
    (void)state;
    const char *r = "GET / HTTP/1.1\r\nBad Header\r\n\r\n";
    assert_int_equal(expect_error(&lim, r, strlen(r)), 400);
    const char *r2 = "\x01\x02garbage\r\n\r\n";
    assert_int_equal(expect_error(&lim, r2, strlen(r2)), 400);
}

static void http_header_bytes_limit_is_431(void **state) {
    (void)state;
    size_t n = 17000; /* past header_bytes (16k) */
    char *r = malloc(n + 64);
    int len = snprintf(r, 64, "GET / HTTP/1.1\r\nX-Big: ");
    memset(r + len, 'a', n);
    memcpy(r + len + n, "\r\n\r\n", 4);
    assert_int_equal(expect_error(&lim, r, (size_t)len + n + 4), 431);
    /* The same head, fed in small pieces, is refused the same way. */
    sws_http_parser p;
    sws_http_parser_init(&p, &lim);
    int st = 0;
    for (size_t off = 0; off < (size_t)len + n + 4; off += 100) {
        size_t used, take = (size_t)len + n + 4 - off;
        if (take > 100)
            take = 100;
        if (sws_http_feed(&p, r + off, take, &used, &st) == -EBADMSG)
            break;
    }
    assert_int_equal(st, 431);
    free(r);
}

static void http_header_count_limit_is_431(void **state) {
    (void)state;
    char r[8192];
    size_t len = (size_t)snprintf(r, sizeof(r), "GET / HTTP/1.1\r\n");
    for (int i = 0; i < 101; i++)
        len += (size_t)snprintf(r + len, sizeof(r) - len, "X-%d: v\r\n", i);
    len += (size_t)snprintf(r + len, sizeof(r) - len, "\r\n");
    assert_int_equal(expect_error(&lim, r, len), 431);
}

static void http_uri_limit_is_414(void **state) {
    (void)state;
    sws_http_limits l = lim;
    l.uri_length = 100;
    char r[512];
    size_t len = (size_t)snprintf(r, sizeof(r), "GET /");
    memset(r + len, 'u', 200);
    len += 200;
    len += (size_t)snprintf(r + len, sizeof(r) - len, " HTTP/1.1\r\n\r\n");
    assert_int_equal(expect_error(&l, r, len), 414);
}

static void http_body_limit_is_413(void **state) {
    (void)state;
    sws_http_limits l = lim;
    l.body_size = 10;
    const char *a = "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\n";
    assert_int_equal(expect_error(&l, a, strlen(a)), 413);
    const char *b = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                    "6\r\nabcdef\r\n6\r\nabcdef\r\n0\r\n\r\n";
    assert_int_equal(expect_error(&l, b, strlen(b)), 413);
    const char *c = "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n0123456789";
    assert_int_equal(expect_error(&l, c, strlen(c)), 0);
}

/* A refusal once the head is complete and sound is one of a request that
 * has a route (the server picks it by p->req's Host and path); a refusal of
 * the head itself is not. 413 comes after the head's own checks: a head that
 * is malformed too is a 400, whatever its Content-Length. Split or whole, on
 * head.c's path and on the reference path. */
static void http_head_sound_decides_a_refusal_route(void **state) {
    (void)state;
    sws_http_limits l = lim;
    l.body_size = 10;
    l.header_bytes = 256;
    static const struct {
        const char *in;
        int status;
        bool sound;
    } cases[] = {
        {"POST /api/x HTTP/1.1\r\nHost: h.example\r\nContent-Length: 11\r\n\r\n", 413, true},
        {"POST /api/x HTTP/1.1\r\nHost: h.example\r\nExpect: 100-continue\r\n"
         "Content-Length: 99999\r\n\r\n",
         413, true},
        {"POST /api/x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400, true},
        {"POST /api/x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
         "b\r\n0123456789a\r\n0\r\n\r\n",
         413, true},
        {"POST /api/x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
         "0\r\nBad Trailer\r\n\r\n",
         400, true},
        /* the head's own faults: no route's */
        {"POST /api/x HTTP/1.1\r\nHost: a\r\nHost: b\r\nContent-Length: 11\r\n\r\n", 400, false},
        {"POST /api/x HTTP/1.1\r\nContent-Length: 11\r\n\r\n", 400, false},
        {"POST /api/x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n"
         "\r\n",
         501, false},
        {"POST /api/x HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n"
         "\r\n",
         400, false},
        {"GET /a\x01b HTTP/1.1\r\nHost: a\r\n\r\n", 400, false},
        {"GET /api/x HTTP/1.2\r\nHost: a\r\n\r\n", 505, false},
        {"GET /api/x HTTP/1.1\r\nHost: a\r\nX: "
         "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"
         "y"
         "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"
         "y"
         "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"
         "y"
         "\r\n\r\n",
         431, false},
        /* after a request served, the next one's fault at its first byte */
        {"GET /api/x HTTP/1.1\r\nHost: a\r\n\r\n\x01", 400, false},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        for (int split = 0; split < 2; split++) {
            for (int ref = 0; ref < 2; ref++) {
                sws_http_parser p;
                sws_http_parser_init(&p, &l);
                p.reference_only = ref;
                const char *in = cases[k].in;
                size_t len = strlen(in), off = 0, used;
                int rc, st = 0;
                do {
                    size_t n = split ? 1 : len - off;
                    rc = sws_http_feed(&p, in + off, n, &used, &st);
                    off += rc == SWS_HTTP_NEED_MORE ? n : used;
                } while (rc >= 0 && off < len);
                if (rc != -EBADMSG || st != cases[k].status ||
                    sws_http_head_sound(&p) != cases[k].sound)
                    fail_msg("case %zu (split %d, reference %d): rc %d status %d sound %d", k,
                             split, ref, rc, st, sws_http_head_sound(&p));
                if (cases[k].sound) {
                    assert_int_equal(p.req.path_len, 6);
                    assert_memory_equal(p.req.path, "/api/x", 6);
                }
            }
        }
    }
    /* Sound while the body comes, on both paths; not between requests. */
    const char *r = "POST /api/x HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nab";
    for (int ref = 0; ref < 2; ref++) {
        sws_http_parser p;
        sws_http_parser_init(&p, &l);
        p.reference_only = ref;
        size_t used;
        int st;
        assert_false(sws_http_head_sound(&p));
        assert_int_equal(sws_http_feed(&p, r, strlen(r) - 2, &used, &st), SWS_HTTP_NEED_MORE);
        assert_true(sws_http_head_sound(&p));
        assert_int_equal(sws_http_feed(&p, r + strlen(r) - 2, 2, &used, &st), SWS_HTTP_REQUEST);
        assert_false(sws_http_head_sound(&p));
        assert_int_equal(sws_http_feed(&p, "POST /y HTTP/1.1\r\n", 18, &used, &st),
                         SWS_HTTP_NEED_MORE);
        assert_false(sws_http_head_sound(&p));
    }
}

static void http_partial_is_tracked(void **state) {
    (void)state;
    sws_http_parser p;
    sws_http_parser_init(&p, &lim);
    size_t used;
    int st;
    assert_false(sws_http_partial(&p));
    assert_int_equal(sws_http_feed(&p, "GET / HT", 8, &used, &st), SWS_HTTP_NEED_MORE);
    assert_true(sws_http_partial(&p));
    assert_int_equal(sws_http_feed(&p, "TP/1.1\r\nHost: a\r\n\r\n", 19, &used, &st),
                     SWS_HTTP_REQUEST);
    assert_false(sws_http_partial(&p));
}

static void http_head_and_error_responses(void **state) {
    (void)state;
    char out[512];
    const char *date = "Sun, 06 Nov 1994 08:49:37 GMT";
    size_t n = sws_http_head(out, sizeof(out), 200, date, "text/plain", 12, true);
    assert_true(n > 0);
    out[n] = '\0';
    assert_non_null(strstr(out, "HTTP/1.1 200 OK\r\n"));
    assert_non_null(strstr(out, "Content-Length: 12\r\n"));
    assert_non_null(strstr(out, "Connection: keep-alive\r\n"));
    assert_non_null(strstr(out, "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n"));
    assert_int_equal(sws_http_head(out, 20, 200, date, "text/plain", 12, true), 0);
    n = sws_http_error(out, sizeof(out), 431, date, false);
    out[n] = '\0';
    assert_non_null(strstr(out, "HTTP/1.1 431 Request Header Fields Too Large\r\n"));
    assert_non_null(strstr(out, "Connection: close\r\n"));
    /* The body, and the length the access log gives for it. */
    assert_non_null(strstr(out, "\r\n\r\n431 Request Header Fields Too Large\n"));
    assert_int_equal(sws_http_error_body_len(431), strlen("431 Request Header Fields Too Large\n"));
    /* Every status the server answers by itself has its reason phrase. */
    static const int own[] = {400, 408, 413, 414, 431, 501, 502, 503, 504, 505};
    for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
        assert_string_not_equal(sws_http_reason(own[i]), "Unknown");
}

static void http_date_format_is_imf_fixdate(void **state) {
    (void)state;
    char out[32];
    sws_date_format(784111777, out);
    assert_string_equal(out, "Sun, 06 Nov 1994 08:49:37 GMT");
    sws_date_cache c;
    sws_date_init(&c);
    assert_int_equal(strlen(c.str), 29);
    assert_false(sws_date_refresh(&c) && sws_date_refresh(&c)); /* at most once a second */
}

/* RFC 9110 10.1.1: a 100 is owed once the head of a request that expects it
 * is in and its body is not; once per request, never for HTTP/1.0 or a
 * request without content, and a body past body_size is 413 from the head. */
static void http_expect_100_continue(void **state) {
    (void)state;
    sws_http_parser p;
    size_t used;
    int st;
    const char *head = "POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue \r\n"
                       "Content-Length: 5\r\n\r\n";
    sws_http_parser_init(&p, &lim);
    assert_false(sws_http_continue_due(&p));
    /* not before the head is complete, byte by byte */
    for (size_t k = 0; k + 1 < strlen(head); k++) {
        assert_int_equal(sws_http_feed(&p, head + k, 1, &used, &st), SWS_HTTP_NEED_MORE);
        assert_false(sws_http_continue_due(&p));
    }
    assert_int_equal(sws_http_feed(&p, head + strlen(head) - 1, 1, &used, &st), SWS_HTTP_NEED_MORE);
    assert_true(sws_http_continue_due(&p));
    assert_false(sws_http_continue_due(&p)); /* once */
    assert_int_equal(sws_http_feed(&p, "hello", 5, &used, &st), SWS_HTTP_REQUEST);
    assert_false(sws_http_continue_due(&p));
    /* the next request on the connection owes its own */
    assert_int_equal(sws_http_feed(&p, head, strlen(head), &used, &st), SWS_HTTP_NEED_MORE);
    assert_true(sws_http_continue_due(&p));

    /* chunked: owed too */
    const char *ch = "POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n"
                     "Transfer-Encoding: chunked\r\n\r\n";
    sws_http_parser_init(&p, &lim);
    assert_int_equal(sws_http_feed(&p, ch, strlen(ch), &used, &st), SWS_HTTP_NEED_MORE);
    assert_true(sws_http_continue_due(&p));

    /* not owed: HTTP/1.0, no content, another expectation, body already in */
    const char *none[] = {
        "POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continuex\r\nContent-Length: 5\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n",
    };
    for (size_t k = 0; k < sizeof(none) / sizeof(none[0]); k++) {
        sws_http_parser_init(&p, &lim);
        int rc = sws_http_feed(&p, none[k], strlen(none[k]), &used, &st);
        assert_true(rc == SWS_HTTP_NEED_MORE || rc == SWS_HTTP_REQUEST);
        assert_false(sws_http_continue_due(&p));
    }
    char whole[256];
    snprintf(whole, sizeof(whole), "%shello", head);
    sws_http_parser_init(&p, &lim);
    assert_int_equal(sws_http_feed(&p, whole, strlen(whole), &used, &st), SWS_HTTP_REQUEST);
    assert_false(sws_http_continue_due(&p));

    /* too large: the final status at once, from the head alone */
    const char *big = "POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n"
                      "Content-Length: 999999999\r\n\r\n";
    sws_http_parser_init(&p, &lim);
    assert_int_equal(sws_http_feed(&p, big, strlen(big), &used, &st), -EBADMSG);
    assert_int_equal(st, 413);
    assert_false(sws_http_continue_due(&p));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(http_simple_get_keep_alive),
        cmocka_unit_test(http_static_fields_are_kept),
        cmocka_unit_test(http_connection_close_and_http10),
        cmocka_unit_test(http_head_is_flagged),
        cmocka_unit_test(http_referer_and_user_agent_are_kept),
        cmocka_unit_test(http_request_line_is_kept_for_the_log),
        cmocka_unit_test(http_pipelined_one_at_a_time_in_order),
        cmocka_unit_test(http_byte_by_byte),
        cmocka_unit_test(http_chunked_body_is_read),
        cmocka_unit_test(http_malformed_is_400),
        cmocka_unit_test(http_header_bytes_limit_is_431),
        cmocka_unit_test(http_header_count_limit_is_431),
        cmocka_unit_test(http_uri_limit_is_414),
        cmocka_unit_test(http_body_limit_is_413),
        cmocka_unit_test(http_head_sound_decides_a_refusal_route),
        cmocka_unit_test(http_partial_is_tracked),
        cmocka_unit_test(http_head_and_error_responses),
        cmocka_unit_test(http_expect_100_continue),
        cmocka_unit_test(http_date_format_is_imf_fixdate),
    };
    return cmocka_run_group_tests_name("http_parse", tests, NULL, NULL);
}
