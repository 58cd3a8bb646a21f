/* sws_msg, the proxy's message reader: upstream responses (Content-Length,
 * chunked, close-delimited, no-body answers, 1xx) and requests are read the
 * same in one piece and byte by byte; a cut answer is never complete. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka.h needs the four headers above first. */
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "sws_msg.h"

typedef struct seen {
    int heads, dones, status;
    int skip_body; /* what on_head answers: 1 for a response to HEAD */
    char body[4096];
    size_t blen;
} seen;

static int on_head(void *user, sws_msg *m) {
    seen *s = user;
    s->heads++;
    s->status = m->p.status_code;
    /* As the proxy does: llhttp would read a 304's Content-Length as a body
     * to wait for, but a 304 never has one. */
    return s->skip_body || s->status == 304;
}

static int on_body(void *user, const char *d, size_t n) {
    seen *s = user;
    if (s->blen + n > sizeof(s->body))
        return -1;
    memcpy(s->body + s->blen, d, n);
    s->blen += n;
    return 0;
}

static int on_done(void *user, sws_msg *m) {
    (void)m;
    ((seen *)user)->dones++;
    return 0;
}

static const sws_msg_cb cb = {on_head, on_body, on_done};

/* Feeds text in pieces of step bytes; returns the last result and how many
 * bytes were consumed up to the first complete message. */
static int feed(sws_msg *m, const char *t, size_t step, size_t *consumed) {
    size_t len = strlen(t), off = 0;
    int rc = SWS_MSG_NEED_MORE;
    while (off < len) {
        size_t take = len - off < step ? len - off : step, used;
        rc = sws_msg_feed(m, t + off, take, &used);
        off += used;
        if (rc != SWS_MSG_NEED_MORE)
            break;
    }
    *consumed = off;
    return rc;
}

static void response_framings(void **state) {
    (void)state;
    static const struct {
        const char *text;
        const char *body;
    } cases[] = {
        {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", "hello"},
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
         "abcde"},
        {"HTTP/1.1 204 No Content\r\n\r\n", ""},
        {"HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n", ""},
        {"HTTP/1.1 100 Continue\r\n\r\n", ""},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        for (size_t step = 1; step <= 64; step += 63) {
            seen s = {0};
            sws_msg m;
            sws_msg_init(&m, HTTP_RESPONSE, &cb, &s);
            size_t used;
            int rc = feed(&m, cases[k].text, step, &used);
            if (rc != SWS_MSG_DONE)
                fail_msg("case %zu step %zu: %d", k, step, rc);
            assert_int_equal(used, strlen(cases[k].text));
            assert_int_equal(s.heads, 1);
            assert_int_equal(s.dones, 1);
            assert_int_equal(s.blen, strlen(cases[k].body));
            assert_memory_equal(s.body, cases[k].body, s.blen);
        }
    }
}

static void head_fields_kept(void **state) {
    (void)state;
    seen s = {0};
    sws_msg m;
    sws_msg_init(&m, HTTP_RESPONSE, &cb, &s);
    const char *t =
        "HTTP/1.1 404 Not Here\r\nConnection: close, X-A\r\nX-A: 1\r\nContent-Length: 0\r\n\r\n";
    size_t used;
    assert_int_equal(feed(&m, t, 1, &used), SWS_MSG_DONE);
    assert_int_equal(s.status, 404);
    assert_int_equal(m.start_len, 8);
    assert_memory_equal(m.buf + m.start_off, "Not Here", 8);
    assert_int_equal(m.nf, 3);
    assert_true(sws_msg_name_is(&m, 0, "connection"));
    assert_true(sws_msg_value_has(&m, 0, "x-a"));
    assert_true(sws_msg_value_has(&m, 0, "close"));
    assert_false(sws_msg_value_has(&m, 0, "keep-alive"));
    assert_true(sws_msg_name_is(&m, 1, "X-A"));
}

static void response_to_head_has_no_body(void **state) {
    (void)state;
    seen s = {.skip_body = 1};
    sws_msg m;
    sws_msg_init(&m, HTTP_RESPONSE, &cb, &s);
    size_t used;
    const char *t = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nHTTP/1.1 200 OK\r\n";
    assert_int_equal(feed(&m, t, 1000, &used), SWS_MSG_DONE);
    assert_int_equal(used, strlen("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"));
    assert_int_equal(s.blen, 0);
}

static void close_delimited_ends_at_eof(void **state) {
    (void)state;
    seen s = {0};
    sws_msg m;
    sws_msg_init(&m, HTTP_RESPONSE, &cb, &s);
    size_t used;
    assert_int_equal(feed(&m, "HTTP/1.1 200 OK\r\n\r\nabc", 2, &used), SWS_MSG_NEED_MORE);
    assert_int_equal(sws_msg_eof(&m), SWS_MSG_DONE);
    assert_int_equal(s.dones, 1);
    assert_memory_equal(s.body, "abc", 3);
}

static void cut_answers_are_never_complete(void **state) {
    (void)state;
    static const char *const cut[] = {
        "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n",
        "HTTP/1.1 200 OK\r\nContent-Le",
    };
    for (size_t k = 0; k < sizeof(cut) / sizeof(cut[0]); k++) {
        seen s = {0};
        sws_msg m;
        sws_msg_init(&m, HTTP_RESPONSE, &cb, &s);
        size_t used;
        assert_int_equal(feed(&m, cut[k], 7, &used), SWS_MSG_NEED_MORE);
        assert_int_equal(sws_msg_eof(&m), -EPIPE);
        assert_int_equal(s.dones, 0);
    }
    seen s = {0};
    sws_msg m;
    sws_msg_init(&m, HTTP_RESPONSE, &cb, &s);
    assert_int_equal(sws_msg_eof(&m), 0); /* nothing begun: a plain close */
}

static void bad_responses_refused(void **state) {
    (void)state;
    static const char *const bad[] = {
        "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        "HTTP/1.1 abc OK\r\n\r\n",
        "NOTHTTP\r\n\r\n",
        /* Status codes llhttp passes through (fuzz_response): not three digits
         * in 100..599. Two spaces read as status 0. */
        "HTTP/1.1  200 OK\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 20 OK\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 000 X\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 600 X\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 999 X\r\nContent-Length: 0\r\n\r\n",
    };
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        seen s = {0};
        sws_msg m;
        sws_msg_init(&m, HTTP_RESPONSE, &cb, &s);
        size_t used;
        assert_true(feed(&m, bad[k], 1000, &used) < 0);
    }
}

/* A 1xx answer ends at its head whatever it says (fuzz_response: llhttp read a
 * body after 103 and 199 with a Content-Length). */
static void interim_answers_have_no_body(void **state) {
    (void)state;
    static const char *const t[] = {
        "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\nContent-Length: 3\r\n\r\n",
        "HTTP/1.1 199 Whatever\r\nContent-Length: 3\r\n\r\n",
        "HTTP/1.1 100 Continue\r\nTransfer-Encoding: chunked\r\n\r\n",
    };
    for (size_t k = 0; k < sizeof(t) / sizeof(t[0]); k++) {
        for (size_t step = 1; step <= 64; step += 63) {
            seen s = {0};
            sws_msg m;
            sws_msg_init(&m, HTTP_RESPONSE, &cb, &s);
            size_t used;
            if (feed(&m, t[k], step, &used) != SWS_MSG_DONE)
                fail_msg("case %zu step %zu: not complete at the end of the head", k, step);
            assert_int_equal(used, strlen(t[k]));
            assert_int_equal(s.blen, 0);
        }
    }
}

static void big_head_is_e2big(void **state) {
    (void)state;
    static char t[SWS_MSG_HEAD_MAX + 200];
    strcpy(t, "HTTP/1.1 200 OK\r\nX-Big: ");
    size_t n = strlen(t);
    memset(t + n, 'a', SWS_MSG_HEAD_MAX);
    strcpy(t + n + SWS_MSG_HEAD_MAX, "\r\n\r\n");
    seen s = {0};
    sws_msg m;
    sws_msg_init(&m, HTTP_RESPONSE, &cb, &s);
    size_t used;
    assert_int_equal(feed(&m, t, 4096, &used), -E2BIG);
}

static void requests_pause_between_messages(void **state) {
    (void)state;
    seen s = {0};
    sws_msg m;
    sws_msg_init(&m, HTTP_REQUEST, &cb, &s);
    const char *t = "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                    "2\r\nhi\r\n0\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n";
    size_t used;
    assert_int_equal(feed(&m, t, 5, &used), SWS_MSG_DONE);
    assert_int_equal(s.dones, 1);
    assert_memory_equal(s.body, "hi", 2);
    assert_memory_equal(t + used, "GET /b", 6);
    sws_msg_next(&m);
    size_t used2;
    assert_int_equal(feed(&m, t + used, 3, &used2), SWS_MSG_DONE);
    assert_int_equal(s.dones, 2);
    assert_int_equal(m.start_len, 2);
    assert_memory_equal(m.buf + m.start_off, "/b", 2);
}

/* Chunk size lines are msg.c's, not llhttp 8.1's: several extensions and
 * quoted-pairs in them (RFC 9112 7.1.1) are read, in any split, with trailers;
 * a size line that is not one is refused. */
static void chunk_extensions_read_here(void **state) {
    (void)state;
    static const char *const good[] = {
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        "3;a=1;b=2;c=3\r\nabc\r\n2;name=\"va\\\"lue\";x=\"a b\"\r\nde\r\n0;z\r\nT: 1\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n00003 ; "
        "e\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
    };
    for (size_t k = 0; k < sizeof(good) / sizeof(good[0]); k++) {
        for (size_t step = 1; step <= 200; step += 199) {
            seen s = {0};
            sws_msg m;
            sws_msg_init(&m, HTTP_RESPONSE, &cb, &s);
            size_t used;
            if (feed(&m, good[k], step, &used) != SWS_MSG_DONE)
                fail_msg("case %zu step %zu: not read", k, step);
            assert_int_equal(used, strlen(good[k]));
            assert_int_equal(s.blen, 5);
            assert_memory_equal(s.body, "abcde", 5);
        }
    }
    static const char *const bad[] = {
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nx\r\nabc\r\n0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n;a\r\nabc\r\n0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\nabc\r\n0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;a\rb\r\nabc\r\n0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        "fffffffffffffffffff\r\n",
    };
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        seen s = {0};
        sws_msg m;
        sws_msg_init(&m, HTTP_RESPONSE, &cb, &s);
        size_t used;
        if (feed(&m, bad[k], 1000, &used) >= 0)
            fail_msg("bad case %zu accepted", k);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(chunk_extensions_read_here),
        cmocka_unit_test(response_framings),
        cmocka_unit_test(head_fields_kept),
        cmocka_unit_test(response_to_head_has_no_body),
        cmocka_unit_test(close_delimited_ends_at_eof),
        cmocka_unit_test(cut_answers_are_never_complete),
        cmocka_unit_test(bad_responses_refused),
        cmocka_unit_test(interim_answers_have_no_body),
        cmocka_unit_test(big_head_is_e2big),
        cmocka_unit_test(requests_pause_between_messages),
    };
    return cmocka_run_group_tests_name("sws_msg", tests, NULL, NULL);
}
