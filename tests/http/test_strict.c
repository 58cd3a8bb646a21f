/* RFC 9112 strictness of the request parser: every request that could be read
 * two ways is refused with its status, in one piece and byte by byte, before any
 * request of it is returned, and the parser stays refused (the caller closes).
 * The last test feeds what the RFC allows, so that no rule refuses too much. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka.h needs the four headers above first: a block of its own, so that
 * clang-format's include sorting keeps it after them. */
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sws_http.h"

static const sws_http_limits lim = SWS_HTTP_DEFAULT_LIMITS;
static const sws_http_limits *cur = &lim; /* the limits feed() parses with */

/* Feeds r in pieces of at most step bytes. Returns the status of the refusal
 * (0 when none) and counts the requests returned before it. */
static int feed(const char *r, size_t len, size_t step, int *requests) {
    sws_http_parser p;
    sws_http_parser_init(&p, cur);
    *requests = 0;
    size_t off = 0;
    while (off < len) {
        size_t take = len - off < step ? len - off : step, used;
        int st;
        int rc = sws_http_feed(&p, r + off, take, &used, &st);
        if (rc == -EBADMSG) {
            /* Refused for good: a valid request after it is refused too, so
             * nothing more is read from this connection. */
            const char *ok = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";
            int st2;
            assert_int_equal(sws_http_feed(&p, ok, strlen(ok), &used, &st2), -EBADMSG);
            assert_int_equal(st2, st);
            return st;
        }
        assert_true(rc == SWS_HTTP_NEED_MORE || rc == SWS_HTTP_REQUEST);
        if (rc == SWS_HTTP_REQUEST)
            (*requests)++;
        off += rc == SWS_HTTP_REQUEST ? used : take;
    }
    return 0;
}

static void refused_len(const char *r, size_t len, int want) {
    int requests;
    if (feed(r, len, len, &requests) != want || requests != 0)
        fail_msg("whole: want %d before any request: %.*s", want, (int)len, r);
    if (feed(r, len, 1, &requests) != want || requests != 0)
        fail_msg("byte by byte: want %d before any request: %.*s", want, (int)len, r);
    if (feed(r, len, 7, &requests) != want || requests != 0)
        fail_msg("7 bytes at a time: want %d before any request: %.*s", want, (int)len, r);
    /* The answer says the connection closes. */
    char out[512];
    size_t n = sws_http_error(out, sizeof(out) - 1, want, "Sun, 06 Nov 1994 08:49:37 GMT", false);
    assert_true(n > 0);
    out[n] = '\0';
    char line[32];
    snprintf(line, sizeof(line), "HTTP/1.1 %d ", want);
    assert_memory_equal(out, line, strlen(line));
    assert_non_null(strstr(out, "\r\nConnection: close\r\n"));
    assert_string_not_equal(sws_http_reason(want), "Unknown");
}

/* String literals may hold NUL: their length is the array's. */
#define REFUSED(lit, want) refused_len(lit, sizeof(lit) - 1, want)

static void accepted_len(const char *r, size_t len, int want_requests) {
    int requests;
    if (feed(r, len, len, &requests) != 0 || requests != want_requests)
        fail_msg("whole: want %d requests: %.*s", want_requests, (int)len, r);
    if (feed(r, len, 1, &requests) != 0 || requests != want_requests)
        fail_msg("byte by byte: want %d requests: %.*s", want_requests, (int)len, r);
}

#define ACCEPTED(lit, n) accepted_len(lit, sizeof(lit) - 1, n)

#define POST "POST / HTTP/1.1\r\nHost: a\r\n"
#define GET "GET / HTTP/1.1\r\nHost: a\r\n"
#define CHUNKED POST "Transfer-Encoding: chunked\r\n\r\n"

static void strict_content_length_with_transfer_encoding(void **state) {
    (void)state;
    REFUSED(POST "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400);
    REFUSED(POST "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n", 400);
    REFUSED(POST "Transfer-Encoding: chunked\r\nContent-Length: 0\r\n\r\n0\r\n\r\n", 400);
}

/* Identical duplicates are refused, not merged: a proxy in front may have kept
 * the first and another the last, and a merge is one more way to read it. */
static void strict_duplicate_content_length(void **state) {
    (void)state;
    REFUSED(POST "Content-Length: 3\r\nContent-Length: 3\r\n\r\nabc", 400);
    REFUSED(POST "Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", 400);
    REFUSED(POST "Content-Length: 3, 3\r\n\r\nabc", 400);
}

static void strict_malformed_content_length(void **state) {
    (void)state;
    REFUSED(POST "Content-Length: +3\r\n\r\nabc", 400);
    REFUSED(POST "Content-Length: -3\r\n\r\nabc", 400);
    REFUSED(POST "Content-Length: 0x3\r\n\r\nabc", 400);
    REFUSED(POST "Content-Length: 1 2\r\n\r\nabc", 400);
    REFUSED(POST "Content-Length: 3a\r\n\r\nabc", 400);
    REFUSED(POST "Content-Length: \r\n\r\nabc", 400);
    REFUSED(POST "Content-Length: 99999999999999999999999\r\n\r\nabc", 400);
}

static void strict_transfer_encoding_must_end_in_chunked(void **state) {
    (void)state;
    REFUSED(POST "Transfer-Encoding: gzip\r\n\r\nabc", 400);
    REFUSED(POST "Transfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n", 400);
    REFUSED(POST "Transfer-Encoding: chunkedx\r\n\r\n0\r\n\r\n", 400);
    REFUSED(POST "Transfer-Encoding: identity\r\n\r\n0\r\n\r\n", 400);
    REFUSED(POST "Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n0\r\n\r\n", 400);
    /* chunked twice, in one line or two */
    REFUSED(POST "Transfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n", 400);
    REFUSED(POST "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400);
    /* no coding at all: llhttp would read no body and take it as the next request */
    REFUSED(POST "Transfer-Encoding: \r\n\r\n0\r\n\r\n", 400);
    REFUSED(POST "Transfer-Encoding: ,\r\n\r\n0\r\n\r\n", 400);
    /* RFC 9112 6.1: Transfer-Encoding in HTTP/1.0 is faulty framing */
    REFUSED("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400);
}

static void strict_coding_before_chunked_is_501(void **state) {
    (void)state;
    REFUSED(POST "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501);
    REFUSED(POST "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 501);
    REFUSED(POST "Transfer-Encoding: x-a-very-long-coding-name-indeed, chunked\r\n\r\n0\r\n\r\n",
            501);
}

static void strict_bad_chunk_size(void **state) {
    (void)state;
    REFUSED(CHUNKED "zz\r\nabc\r\n0\r\n\r\n", 400);
    REFUSED(CHUNKED "fffffffffffffffff\r\nabc\r\n0\r\n\r\n", 400); /* 2^68: overflow */
    REFUSED(CHUNKED "-1\r\nabc\r\n0\r\n\r\n", 400);
    REFUSED(CHUNKED "0x3\r\nabc\r\n0\r\n\r\n", 400);
    REFUSED(CHUNKED "3 \r\nabc\r\n0\r\n\r\n", 400);
    REFUSED(CHUNKED " 3\r\nabc\r\n0\r\n\r\n", 400);
    REFUSED(CHUNKED "\r\nabc\r\n0\r\n\r\n", 400);
    REFUSED(CHUNKED "3\nabc\r\n0\r\n\r\n", 400);
    REFUSED(CHUNKED "3\r\nabcX\r\n0\r\n\r\n", 400); /* data longer than its size */
}

/* Extensions are bounded (chunk_ext_bytes, over every chunk of a request), or
 * one could grow forever: 400, the answer to CVE-2024-22019's class. */
static void strict_chunk_extensions_are_bounded(void **state) {
    (void)state;
    static char r[24 * 1024];
    int n = snprintf(r, sizeof(r), CHUNKED "1;x=");
    /* 20 KiB of extension on one line, with the default limit */
    memset(r + n, 'v', 20 * 1024);
    memcpy(r + n + 20 * 1024, "\r\na\r\n0\r\n\r\n", 10);
    refused_len(r, (size_t)n + 20 * 1024 + 10, 400);
    sws_http_limits small = lim;
    small.chunk_ext_bytes = 1024;
    cur = &small;
    refused_len(r, (size_t)n + 1100 + 10, 400); /* cut: still a 1100-byte line */
    /* the same with extensions inside the limit is served */
    memcpy(r + n + 100, "\r\na\r\n0\r\n\r\n", 10);
    accepted_len(r, (size_t)n + 110, 1);
    /* many small lines add up: 300 chunks of ";e=vvvv" (8 bytes) > 1024 */
    n = snprintf(r, sizeof(r), CHUNKED);
    for (int i = 0; i < 300; i++)
        n += snprintf(r + n, sizeof(r) - (size_t)n, "1;e=vvvv\r\na\r\n");
    n += snprintf(r + n, sizeof(r) - (size_t)n, "0\r\n\r\n");
    refused_len(r, (size_t)n, 400);
    cur = &lim;
    accepted_len(r, (size_t)n, 1);
}

/* RFC 9112 7.1.1: any number of extensions, each a token or a quoted-string
 * (quoted-pairs inside), with BWS around ";" and "="; accepted and ignored. */
static void strict_chunk_extensions_accepted(void **state) {
    (void)state;
    ACCEPTED(CHUNKED "3;a=1;b=2;c\r\nabc\r\n0\r\n\r\n", 1);
    ACCEPTED(CHUNKED "3;a=\"x\\\"y\"\r\nabc\r\n0\r\n\r\n", 1);
    ACCEPTED(CHUNKED "3;a=\"q; \\\\ =\";b=t\r\nabc\r\n0;last=\"\"\r\n\r\n", 1);
    ACCEPTED(CHUNKED "3 ; a = 1 ;b\t=\t\"v\"\r\nabc\r\n0\r\n\r\n", 1);
    ACCEPTED(CHUNKED "003;x\r\nabc\r\n000\r\n\r\n", 1);
    ACCEPTED(CHUNKED "3;a=1\r\nabc\r\n0;z=9\r\nT: v\r\n\r\n" GET "\r\n", 2);
    /* and the data after them is framed right: the next request parses */
    ACCEPTED(CHUNKED "A;n=\"0123\"\r\n0123456789\r\n0\r\n\r\n" GET "\r\n", 2);
}

static void strict_bad_chunk_extensions(void **state) {
    (void)state;
    REFUSED(CHUNKED "3;\r\nabc\r\n0\r\n\r\n", 400);         /* no name */
    REFUSED(CHUNKED "3;a=\r\nabc\r\n0\r\n\r\n", 400);       /* no value */
    REFUSED(CHUNKED "3;a=\"x\r\nabc\r\n0\r\n\r\n", 400);    /* open quote */
    REFUSED(CHUNKED "3;a=\"x\"y\r\nabc\r\n0\r\n\r\n", 400); /* after the quote */
    REFUSED(CHUNKED "3;a b\r\nabc\r\n0\r\n\r\n", 400);
    REFUSED(CHUNKED "3;a=1 \r\nabc\r\n0\r\n\r\n", 400); /* whitespace before CR */
    REFUSED(CHUNKED "3;a=\"\x01\"\r\nabc\r\n0\r\n\r\n", 400);
    REFUSED(CHUNKED "3;a=\"\\\x7f\"\r\nabc\r\n0\r\n\r\n", 400);
    REFUSED(CHUNKED "3;a=1\nabc\r\n0\r\n\r\n", 400); /* bare LF */
    REFUSED(CHUNKED "3;a=1\rabc\r\n0\r\n\r\n", 400); /* bare CR */
    REFUSED(CHUNKED "3;a=1\r\nabc\r\n0;\x00\r\n\r\n", 400);
    REFUSED(CHUNKED "3@\r\nabc\r\n0\r\n\r\n", 400);
}

/* RFC 9112 3.2.4: "*" is the target of a server-wide OPTIONS only. */
static void strict_asterisk_form_only_for_options(void **state) {
    (void)state;
    REFUSED("GET * HTTP/1.1\r\nHost: a\r\n\r\n", 400);
    REFUSED("HEAD * HTTP/1.1\r\nHost: a\r\n\r\n", 400);
    REFUSED("POST * HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n", 400);
    ACCEPTED("OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", 1);
    ACCEPTED("GET /* HTTP/1.1\r\nHost: a\r\n\r\n", 1);
}

/* RFC 9112 3: a request line of 8000 octets is served with the defaults. */
static void strict_long_request_line_by_default(void **state) {
    (void)state;
    static char r[8200];
    int n = snprintf(r, sizeof(r), "GET /");
    int target = 8000 - (int)strlen("GET  HTTP/1.1") - 1; /* the path after "/" */
    memset(r + n, 'p', (size_t)target);
    n += target;
    n += snprintf(r + n, sizeof(r) - (size_t)n, " HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_int_equal(strchr(r, '\r') - r, 8000);
    accepted_len(r, (size_t)n, 1);
}

static void strict_obs_fold(void **state) {
    (void)state;
    REFUSED(GET "X: a\r\n b\r\n\r\n", 400);
    REFUSED(GET "X: a\r\n\tb\r\n\r\n", 400);
    REFUSED(GET "X:\r\n b\r\n\r\n", 400);
    REFUSED("GET / HTTP/1.1\r\n Host: a\r\n\r\n", 400);
    REFUSED(POST "Content-Length: 3\r\n \r\n\r\nabc", 400);
}

static void strict_bare_cr(void **state) {
    (void)state;
    REFUSED(GET "X: a\rb\r\n\r\n", 400);
    REFUSED("GET / HTTP/1.1\rHost: a\r\n\r\n", 400);
    REFUSED(GET "\r\r\n", 400);
    REFUSED("GET /a\rb HTTP/1.1\r\nHost: a\r\n\r\n", 400);
    REFUSED("\rGET / HTTP/1.1\r\nHost: a\r\n\r\n", 400);
    REFUSED("GET / HTTP/1.1\r\nHost: a\r\nX\r: b\r\n\r\n", 400);
}

/* RFC 9112 2.2 lets a recipient accept a bare LF; we do not (see parse_cold.c). */
static void strict_bare_lf(void **state) {
    (void)state;
    REFUSED("GET / HTTP/1.1\nHost: a\r\n\r\n", 400);
    REFUSED(GET "X: b\n\r\n", 400);
    REFUSED(GET "\n", 400);
    REFUSED("GET / HTTP/1.1\nHost: a\n\n", 400);
    REFUSED("\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", 400);
}

static void strict_whitespace_before_colon(void **state) {
    (void)state;
    REFUSED("GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400);
    REFUSED("GET / HTTP/1.1\r\nHost\t: a\r\n\r\n", 400);
    REFUSED(POST "Content-Length : 3\r\n\r\nabc", 400);
    REFUSED(POST "Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n", 400);
}

static void strict_controls_in_names_and_values(void **state) {
    (void)state;
    REFUSED("GET / HTTP/1.1\r\nHo\x01st: a\r\n\r\n", 400);
    REFUSED("GET / HTTP/1.1\r\nHo\0st: a\r\n\r\n", 400);
    REFUSED(GET "X\x7f: a\r\n\r\n", 400);
    REFUSED(GET "X: a\x01z\r\n\r\n", 400);
    REFUSED(GET "X: a\0z\r\n\r\n", 400);
    REFUSED(GET "X: a\x7fz\r\n\r\n", 400);
    REFUSED(GET "X: a\x1b[0mz\r\n\r\n", 400);
    REFUSED(GET ": empty name\r\n\r\n", 400);
    REFUSED("GET /a\x01 HTTP/1.1\r\nHost: a\r\n\r\n", 400);
    REFUSED("GET /a\tb HTTP/1.1\r\nHost: a\r\n\r\n", 400);
}

static void strict_host_missing_or_duplicated(void **state) {
    (void)state;
    REFUSED("GET / HTTP/1.1\r\n\r\n", 400);
    REFUSED("GET / HTTP/1.1\r\nX-Host: a\r\n\r\n", 400);
    REFUSED("GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", 400);
    REFUSED("GET / HTTP/1.1\r\nHost: a\r\nhOST: b\r\n\r\n", 400);
    REFUSED("GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", 400);
    /* bytes no uri-host can hold: a second authority or a path in disguise */
    REFUSED("GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400);
    REFUSED("GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 400);
    REFUSED("GET / HTTP/1.1\r\nHost: u@a\r\n\r\n", 400);
    REFUSED("GET / HTTP/1.1\r\nHost: a\xe9\r\n\r\n", 400);
}

static void strict_unknown_version_is_505(void **state) {
    (void)state;
    REFUSED("GET / HTTP/1.2\r\nHost: a\r\n\r\n", 505);
    REFUSED("GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505);
    REFUSED("GET / HTTP/3.1\r\nHost: a\r\n\r\n", 505);
    REFUSED("GET / HTTP/0.9\r\nHost: a\r\n\r\n", 505);
    REFUSED("GET / HTTP/9.9\r\nHost: a\r\n\r\n", 505);
    REFUSED("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505);
    /* malformed versions are not versions: 400 */
    REFUSED("GET / HTTP/1.x\r\nHost: a\r\n\r\n", 400);
    REFUSED("GET / HTTP/11.1\r\nHost: a\r\n\r\n", 400);
    REFUSED("GET / http/1.1\r\nHost: a\r\n\r\n", 400);
    REFUSED("GET / HTTP/1.1 \r\nHost: a\r\n\r\n", 400);
    REFUSED("GET /\r\n\r\n", 400); /* HTTP/0.9's form */
}

/* RFC 9110 9.1: an unrecognised method is 501; a request line whose first word
 * is no token at all is malformed, 400. The same however the bytes are split:
 * llhttp refuses "FOO" at its "F", before the token is over. */
static void strict_unknown_method_is_501(void **state) {
    (void)state;
    REFUSED("FOO / HTTP/1.1\r\nHost: a\r\n\r\n", 501);
    REFUSED("BREW /pot HTTP/1.1\r\nHost: a\r\n\r\n", 501);
    REFUSED("get / HTTP/1.1\r\nHost: a\r\n\r\n", 501);  /* methods are case-sensitive */
    REFUSED("GETX / HTTP/1.1\r\nHost: a\r\n\r\n", 501); /* a known prefix */
    REFUSED("X-MY_VERB! / HTTP/1.1\r\nHost: a\r\n\r\n", 501);
    REFUSED("FOO / HTTP/1.1\r\nHost: a\nX: y\r\n\r\n", 501); /* the first fault answers */
    REFUSED("G@T / HTTP/1.1\r\nHost: a\r\n\r\n", 400);       /* '@' is no tchar */
    REFUSED("FO\x01O / HTTP/1.1\r\nHost: a\r\n\r\n", 400);
    REFUSED("G\tET / HTTP/1.1\r\nHost: a\r\n\r\n", 400);
    REFUSED(" GET / HTTP/1.1\r\nHost: a\r\n\r\n", 400);
    REFUSED("FOO\r\nHost: a\r\n\r\n", 400); /* no request target */
    REFUSED("FOO\n", 400);
    REFUSED("FOO\0 / HTTP/1.1\r\n\r\n", 400);
    /* A pipelined unknown method comes after the request before it. */
    int requests;
    const char two[] = GET "\r\nFOO / HTTP/1.1\r\nHost: a\r\n\r\n";
    assert_int_equal(feed(two, sizeof(two) - 1, 1, &requests), 501);
    assert_int_equal(requests, 1);
    assert_int_equal(feed(two, sizeof(two) - 1, sizeof(two) - 1, &requests), 501);
    assert_int_equal(requests, 1);
    /* A token that never ends: header_bytes bounds it, 400 as in one read. */
    static char longtok[17000]; /* past header_bytes (16k) */
    memset(longtok, 'A', sizeof(longtok));
    assert_int_equal(feed(longtok, sizeof(longtok), 1, &requests), 400);
    assert_int_equal(feed(longtok, sizeof(longtok), sizeof(longtok), &requests), 400);
    /* Known methods are still served. */
    ACCEPTED("DELETE / HTTP/1.1\r\nHost: a\r\n\r\n", 1);
    ACCEPTED("OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", 1);
}

static void strict_request_line_single_spaces(void **state) {
    (void)state;
    REFUSED("GET  / HTTP/1.1\r\nHost: a\r\n\r\n", 400);
    REFUSED("GET /  HTTP/1.1\r\nHost: a\r\n\r\n", 400);
    REFUSED(" GET / HTTP/1.1\r\nHost: a\r\n\r\n", 400);
}

/* The trailer section is read like the head: no obs-fold, no bare LF or CR,
 * and it counts against header_bytes. */
static void strict_trailers_are_scanned_too(void **state) {
    (void)state;
    REFUSED(CHUNKED "0\r\nX: a\r\n b\r\n\r\n", 400);
    REFUSED(CHUNKED "0\r\nX: a\n\r\n", 400);
    REFUSED(CHUNKED "0\r\nX: a\r\n\n", 400);
    REFUSED(CHUNKED "0\r\n\n", 400);
    REFUSED(CHUNKED "0\r\n\r\r\n", 400);
    REFUSED(CHUNKED "3\r\nabc\r\n0;e=1\r\nX: a\rb\r\n\r\n", 400);
    static char r[17000]; /* past header_bytes (16k) */
    int n = snprintf(r, sizeof(r), CHUNKED "0\r\nX-Big: ");
    memset(r + n, 't', 16400);
    memcpy(r + n + 16400, "\r\n\r\n", 4);
    refused_len(r, (size_t)n + 16404, 431);
    ACCEPTED(CHUNKED "0\r\nX: a\r\nY: b\r\n\r\n" GET "\r\n", 2);
    ACCEPTED(CHUNKED "2\r\n\n \r\n0\r\n\r\n", 1); /* data may hold anything */
}

/* Regression (fuzz_request): the bytes after an Upgrade request were swallowed
 * when they came in the same read as it, and refused when they came later. Now
 * the request is served without keep-alive and whatever follows is refused, in
 * every reading. */
static void strict_upgrade_is_answered_then_closed(void **state) {
    (void)state;
    static const char r[] = "POST / HTTP/1.1\r\nHost: [::1]a:8080\r\nTransfer-Encot: a\r\n"
                            "Connection: Upgrade\r\nUpgrade: websocketgrade\r\nUpgrade: "
                            "websocket\r\n\r\nGET / HT\r\n\r\n";
    size_t len = sizeof(r) - 1;
    const size_t steps[] = {len, 1, 4, 7};
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        int requests;
        assert_int_equal(feed(r, len, steps[i], &requests), 400);
        assert_int_equal(requests, 1);
    }
    sws_http_parser p;
    sws_http_parser_init(&p, &lim);
    const char *u = "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: ws\r\n\r\n";
    size_t used;
    int st;
    assert_int_equal(sws_http_feed(&p, u, strlen(u), &used, &st), SWS_HTTP_REQUEST);
    assert_false(p.req.keep_alive);
    const char *c = "CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n";
    sws_http_parser_init(&p, &lim);
    assert_int_equal(sws_http_feed(&p, c, strlen(c), &used, &st), SWS_HTTP_REQUEST);
    assert_false(p.req.keep_alive);
}

/* What the RFC allows is served: these would fail if a rule refused too much. */
static void strict_accepts_what_the_rfc_allows(void **state) {
    (void)state;
    ACCEPTED(GET "\r\n", 1);
    ACCEPTED("GET / HTTP/1.1\r\nHost: a \t\r\n\r\n", 1);
    ACCEPTED("GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n", 1);
    ACCEPTED("GET / HTTP/1.1\r\nHost: xn--bcher-kva.example:80\r\n\r\n", 1);
    ACCEPTED("GET / HTTP/1.1\r\nHost:\r\n\r\n", 1); /* empty: no authority */
    ACCEPTED("GET / HTTP/1.1\r\nHOST: a\r\n\r\n", 1);
    ACCEPTED("GET / HTTP/1.0\r\n\r\n", 1);
    ACCEPTED("\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", 1); /* RFC 9112 2.2 */
    ACCEPTED(GET "X: caf\xc3\xa9\r\nY: a\tb\r\n\r\n", 1); /* obs-text, HTAB */
    ACCEPTED(POST "Content-Length: 3 \r\n\r\nabc", 1);
    ACCEPTED(POST "Transfer-Encoding: CHUNKED\r\n\r\n3\r\nabc\r\n0\r\n\r\n", 1);
    ACCEPTED(POST "Transfer-Encoding: chunked \r\n\r\n3\r\nabc\r\n0\r\n\r\n", 1);
    ACCEPTED(CHUNKED "3;ext=1\r\nabc\r\nA\r\n0123456789\r\n0\r\n\r\n", 1);
    ACCEPTED(CHUNKED "0\r\nX-Trailer: t\r\n\r\n", 1);
    /* a body byte that would be a bare LF or obs-fold in a head is only data */
    ACCEPTED(POST "Content-Length: 4\r\n\r\n\n \r\r" GET "\r\n", 2);
    ACCEPTED(GET "\r\n" GET "\r\n" POST "Content-Length: 1\r\n\r\nx" GET "\r\n", 4);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(strict_content_length_with_transfer_encoding),
        cmocka_unit_test(strict_duplicate_content_length),
        cmocka_unit_test(strict_malformed_content_length),
        cmocka_unit_test(strict_transfer_encoding_must_end_in_chunked),
        cmocka_unit_test(strict_coding_before_chunked_is_501),
        cmocka_unit_test(strict_bad_chunk_size),
        cmocka_unit_test(strict_chunk_extensions_are_bounded),
        cmocka_unit_test(strict_chunk_extensions_accepted),
        cmocka_unit_test(strict_bad_chunk_extensions),
        cmocka_unit_test(strict_asterisk_form_only_for_options),
        cmocka_unit_test(strict_long_request_line_by_default),
        cmocka_unit_test(strict_obs_fold),
        cmocka_unit_test(strict_bare_cr),
        cmocka_unit_test(strict_bare_lf),
        cmocka_unit_test(strict_whitespace_before_colon),
        cmocka_unit_test(strict_controls_in_names_and_values),
        cmocka_unit_test(strict_host_missing_or_duplicated),
        cmocka_unit_test(strict_unknown_version_is_505),
        cmocka_unit_test(strict_unknown_method_is_501),
        cmocka_unit_test(strict_request_line_single_spaces),
        cmocka_unit_test(strict_trailers_are_scanned_too),
        cmocka_unit_test(strict_upgrade_is_answered_then_closed),
        cmocka_unit_test(strict_accepts_what_the_rfc_allows),
    };
    return cmocka_run_group_tests_name("http_strict", tests, NULL, NULL);
}
