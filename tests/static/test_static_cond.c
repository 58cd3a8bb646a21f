/* Validators, ranges, Accept-Encoding and the content-type map: the values a
 * client sends, well-formed and not, and what each must decide. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sws_static.h"

#define S(x) x, strlen(x)

static void etag_as_nginx(void **state) {
    (void)state;
    char e[40];
    /* nginx: ngx_sprintf("\"%xT-%xO\"", mtime, size) */
    assert_int_equal(sws_static_etag(e, 1700000000, 1234), strlen("\"6553f100-4d2\""));
    assert_string_equal(e, "\"6553f100-4d2\"");
}

static void dates(void **state) {
    (void)state;
    assert_int_equal(sws_static_parse_date(S("Sun, 06 Nov 1994 08:49:37 GMT")), 784111777);
    assert_int_equal(sws_static_parse_date(S("Sunday, 06-Nov-94 08:49:37 GMT")), 784111777);
    assert_int_equal(sws_static_parse_date(S("Sun Nov  6 08:49:37 1994")), 784111777);
    assert_int_equal(sws_static_parse_date(S("Sun, 06 Nov 1994 08:49:37 UTC")), -1);
    assert_int_equal(sws_static_parse_date(S("yesterday")), -1);
    assert_int_equal(sws_static_parse_date(S("Sun, 06 Foo 1994 08:49:37 GMT")), -1);
    assert_int_equal(sws_static_parse_date(S("")), -1);
    assert_int_equal(sws_static_parse_date(S("Sun, 06 Nov 1994 08:49:37 GMTx")), -1);
}

static void if_none_match(void **state) {
    (void)state;
    const char *e = "\"5f-10\"";
    assert_true(sws_static_inm_match(S("\"5f-10\""), e));
    assert_true(sws_static_inm_match(S("W/\"5f-10\""), e));
    assert_true(sws_static_inm_match(S("\"a\", \"5f-10\""), e));
    assert_true(sws_static_inm_match(S("*"), e));
    assert_false(sws_static_inm_match(S("\"5f-11\""), e));
    assert_false(sws_static_inm_match(S("\"5f-10"), e));
    assert_false(sws_static_inm_match(S(""), e));
    assert_false(sws_static_inm_match(S(",,,"), e));
}

static void if_range(void **state) {
    (void)state;
    const char *e = "\"5f-10\"";
    assert_true(sws_static_if_range(S("\"5f-10\""), e, 784111777));
    assert_false(sws_static_if_range(S("W/\"5f-10\""), e, 784111777)); /* strong only */
    assert_false(sws_static_if_range(S("\"5f-11\""), e, 784111777));
    assert_true(sws_static_if_range(S("Sun, 06 Nov 1994 08:49:37 GMT"), e, 784111777));
    assert_false(sws_static_if_range(S("Sun, 06 Nov 1994 08:49:38 GMT"), e, 784111777));
    assert_false(sws_static_if_range(S("junk"), e, 784111777));
}

static void ranges(void **state) {
    (void)state;
    static const struct {
        const char *v;
        uint64_t size;
        int rc;
        uint64_t first, last;
    } cases[] = {
        {"bytes=0-0", 10, SWS_RANGE_ONE, 0, 0},
        {"bytes=2-5", 10, SWS_RANGE_ONE, 2, 5},
        {"bytes=2-", 10, SWS_RANGE_ONE, 2, 9},
        {"bytes=2-100", 10, SWS_RANGE_ONE, 2, 9},
        {"bytes=-3", 10, SWS_RANGE_ONE, 7, 9},
        {"bytes=-30", 10, SWS_RANGE_ONE, 0, 9},
        {"BYTES= 1-2 ", 10, SWS_RANGE_ONE, 1, 2},
        {"bytes=10-", 10, SWS_RANGE_UNSATISFIABLE, 0, 0},
        {"bytes=10-20", 10, SWS_RANGE_UNSATISFIABLE, 0, 0},
        {"bytes=-0", 10, SWS_RANGE_UNSATISFIABLE, 0, 0},
        {"bytes=0-", 0, SWS_RANGE_UNSATISFIABLE, 0, 0},
        {"bytes=-5", 0, SWS_RANGE_UNSATISFIABLE, 0, 0},
        {"bytes=5-2", 10, SWS_RANGE_NONE, 0, 0},
        {"bytes=0-1,3-4", 10, SWS_RANGE_NONE, 0, 0}, /* several: 200 whole */
        {"bytes=a-b", 10, SWS_RANGE_NONE, 0, 0},
        {"bytes=", 10, SWS_RANGE_NONE, 0, 0},
        {"bytes=-", 10, SWS_RANGE_NONE, 0, 0},
        {"items=0-1", 10, SWS_RANGE_NONE, 0, 0},
        {"bytes=99999999999999999999999-", 10, SWS_RANGE_NONE, 0, 0},
        {"bytes=18446744073709551615-", 10, SWS_RANGE_UNSATISFIABLE, 0, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint64_t f = 0, l = 0;
        int rc = sws_static_range(S(cases[i].v), cases[i].size, &f, &l);
        if (rc != cases[i].rc)
            fail_msg("%s: rc %d, want %d", cases[i].v, rc, cases[i].rc);
        if (rc == SWS_RANGE_ONE && (f != cases[i].first || l != cases[i].last))
            fail_msg("%s: %llu-%llu", cases[i].v, (unsigned long long)f, (unsigned long long)l);
    }
}

static void accept_encoding(void **state) {
    (void)state;
    assert_int_equal(sws_static_accept_encoding(S("gzip")), SWS_ENC_GZIP);
    assert_int_equal(sws_static_accept_encoding(S("gzip, deflate, br")), SWS_ENC_GZIP | SWS_ENC_BR);
    assert_int_equal(sws_static_accept_encoding(S("br;q=0.5, gzip;q=0")), SWS_ENC_BR);
    assert_int_equal(sws_static_accept_encoding(S("gzip;q=0.000")), 0);
    assert_int_equal(sws_static_accept_encoding(S("gzip; q=0.001")), SWS_ENC_GZIP);
    assert_int_equal(sws_static_accept_encoding(S("*")), SWS_ENC_GZIP | SWS_ENC_BR);
    assert_int_equal(sws_static_accept_encoding(S("*;q=0, gzip")), SWS_ENC_GZIP);
    assert_int_equal(sws_static_accept_encoding(S("br;q=0, *")), SWS_ENC_GZIP);
    assert_int_equal(sws_static_accept_encoding(S("identity")), 0);
    assert_int_equal(sws_static_accept_encoding(S("")), 0);
    assert_int_equal(sws_static_accept_encoding(S("GZIP")), SWS_ENC_GZIP);
    assert_int_equal(sws_static_accept_encoding(S("gzipx, brotli")), 0);
}

static void mime_types(void **state) {
    (void)state;
    const char *tmp = getenv("SWS_TEST_TMP");
    char p[512];
    snprintf(p, sizeof(p), "%s/mime.types.test", tmp ? tmp : "/tmp");
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("# comment\n"
          "text/html\t\t\thtml htm\n"
          "text/plain txt\n"
          "application/x-empty\n"
          "image/png png # trailing comment\n"
          "text/x-second html\n",
          f);
    fclose(f);
    int err = 1;
    sws_mime *m = sws_mime_load(p, &err);
    assert_non_null(m);
    assert_int_equal(err, 0);
    assert_int_equal(sws_mime_count(m), 5);
    assert_string_equal(sws_mime_lookup(m, S("a/index.html")), "text/html"); /* first line wins */
    assert_string_equal(sws_mime_lookup(m, S("INDEX.HTM")), "text/html");
    assert_string_equal(sws_mime_lookup(m, S("x.tar.png")), "image/png");
    assert_null(sws_mime_lookup(m, S("README")));
    assert_null(sws_mime_lookup(m, S("a.d/README")));
    assert_null(sws_mime_lookup(m, S("x.")));
    assert_null(sws_mime_lookup(m, S("x.unknown")));
    sws_mime_free(m);
    unlink(p);
    assert_null(sws_mime_load("/nonexistent/mime.types", &err));
    assert_int_equal(err, -ENOENT);
    /* The system's, when media-types is installed. */
    m = sws_mime_load(NULL, &err);
    if (m) {
        assert_string_equal(sws_mime_lookup(m, S("x.css")), "text/css");
        sws_mime_free(m);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(etag_as_nginx), cmocka_unit_test(dates),
        cmocka_unit_test(if_none_match), cmocka_unit_test(if_range),
        cmocka_unit_test(ranges),        cmocka_unit_test(accept_encoding),
        cmocka_unit_test(mime_types),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
