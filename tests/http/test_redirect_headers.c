/* Unit tests of the [redirect] template (redirect_config.h: cut into parts,
 * the shapes that cannot send a client to a host the file did not name) and
 * of the header policy (header_policy.h: lines checked, built into both wire
 * forms, the always ones apart). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka.h needs the four headers above first. */
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "header_policy.h"
#include "redirect_config.h"

static void templates_are_cut_into_text_and_variables(void **state) {
    (void)state;
    sws_redirect_config r = {0};
    char why[300];
    assert_int_equal(
        sws_redirect_parse_to(&r, "$scheme://${host}:8443/x$uri$is_args$args$$", why, sizeof why),
        0);
    static const uint8_t kinds[] = {SWS_RV_SCHEME, SWS_RV_TEXT,    SWS_RV_HOST, SWS_RV_TEXT,
                                    SWS_RV_URI,    SWS_RV_IS_ARGS, SWS_RV_ARGS, SWS_RV_TEXT};
    assert_int_equal(r.nparts, sizeof kinds);
    for (size_t i = 0; i < sizeof kinds; i++)
        assert_int_equal(r.part[i].kind, kinds[i]);
    assert_memory_equal(r.to + r.part[3].off, ":8443/x", r.part[3].len);
    assert_memory_equal(r.to + r.part[7].off, "$", r.part[7].len); /* "$$" */
    assert_true(r.host_from_request);
    assert_int_equal(r.max_len, 5 + 3 + 255 + 7 + 1024 + 1 + 1024 + 1);
    assert_int_equal(sws_redirect_parse_to(&r, "https://example.test$request_uri", why, sizeof why),
                     0);
    assert_false(r.host_from_request);
    assert_int_equal(sws_redirect_parse_to(&r, "/new$uri", why, sizeof why), 0);
    assert_int_equal(sws_redirect_parse_to(&r, "HTTP://a/", why, sizeof why), 0);
}

static void open_and_broken_templates_are_refused(void **state) {
    (void)state;
    static const struct {
        const char *to, *why;
    } cases[] = {
        {"https://example.test$args", "$args in the host part"},
        {"https://example.test$is_args$args", "$is_args in the host part"},
        {"$scheme://$scheme/", "$scheme in the host part"},
        {"https:///x", "no host after"},
        {"https://$uri", "no host after"},
        {"https://u@a.test/", "no user information"},
        {"/$uri", "needs text after its first '/'"},
        {"//a.test/", "names another host"},
        {"example.test/x", "want an absolute target"},
        {"$host/x", "want an absolute target"},
        {"ftp://a/", "want an absolute target"},
        {"https://a/$nope", "unknown variable $nope"},
        {"https://a/$", "names no variable"},
        {"https://a/${host", "names no variable"},
        {"https://a/x y", "cannot be in a URI"},
        {"https://a/\\x", "cannot be in a URI"},
        {"https://a/%zz", "cannot be in a URI"},
        {"https://a/$request_uri$request_uri$request_uri$request_uri", "can make a Location"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        sws_redirect_config r = {0};
        char why[300] = "";
        assert_int_equal(sws_redirect_parse_to(&r, "https://kept/", why, sizeof why), 0);
        if (sws_redirect_parse_to(&r, cases[i].to, why, sizeof why) == 0)
            fail_msg("accepted: %s", cases[i].to);
        if (!strstr(why, cases[i].why))
            fail_msg("%s: '%s', want '%s'", cases[i].to, why, cases[i].why);
        assert_string_equal(r.to, "https://kept/"); /* a refused value changes nothing */
    }
    sws_redirect_config r = {0};
    char why[300];
    assert_int_equal(sws_redirect_parse_code(&r, "308", why, sizeof why), 0);
    assert_int_equal(r.code, 308);
    assert_int_not_equal(sws_redirect_parse_code(&r, "300", why, sizeof why), 0);
    assert_int_not_equal(sws_redirect_parse_code(&r, "3070", why, sizeof why), 0);
}

static void header_lines_build_both_forms(void **state) {
    (void)state;
    sws_header_keys k = {0};
    char why[300];
    assert_int_equal(sws_header_keys_add(&k, "X-A:  one two  ", false, why, sizeof why), 0);
    assert_int_equal(
        sws_header_keys_add(&k, "Strict-Transport-Security: max-age=1\\; x", true, why, sizeof why),
        0);
    assert_int_equal(sws_header_keys_add(&k, "x-b: 2", false, why, sizeof why), 0);
    int rc;
    sws_header_policy *p = sws_header_policy_build(&k, &rc);
    assert_non_null(p);
    assert_int_equal(p->n, 3);
    uint32_t len;
    const char *all = sws_headers_h1(p, 204, &len);
    const char want_all[] = "X-A: one two\r\nStrict-Transport-Security: max-age=1; x\r\nx-b: 2\r\n";
    assert_int_equal(len, sizeof(want_all) - 1);
    assert_memory_equal(all, want_all, len);
    const char *alw = sws_headers_h1(p, 502, &len);
    const char want_alw[] = "Strict-Transport-Security: max-age=1; x\r\n";
    assert_int_equal(len, sizeof(want_alw) - 1);
    assert_memory_equal(alw, want_alw, len);
    assert_memory_equal(p->h2[1].name, "strict-transport-security", p->h2[1].name_len);
    assert_memory_equal(p->h2[1].value, "max-age=1; x", p->h2[1].value_len);
    assert_true(sws_headers_take(p, 1, 404));
    assert_false(sws_headers_take(p, 0, 404));
    assert_true(sws_headers_take(p, 0, 308));
    /* The lines back, as --print-config writes them. */
    sws_header_keys back;
    sws_header_policy_keys(p, &back);
    char out[300];
    sws_header_keys_format(&back, false, out, sizeof out);
    assert_string_equal(out, "X-A: one two\nx-b: 2");
    sws_header_keys_format(&back, true, out, sizeof out);
    assert_string_equal(out, "Strict-Transport-Security: max-age=1; x");
    sws_header_policy_free(p);
    /* An empty line: the section's own list, empty (nothing inherited). */
    sws_header_keys e = {0};
    assert_int_equal(sws_header_keys_add(&e, "", false, why, sizeof why), 0);
    assert_true(e.set);
    assert_null(sws_header_policy_build(&e, &rc));
    assert_int_equal(rc, 0);
}

static void bad_header_lines_are_refused(void **state) {
    (void)state;
    static const struct {
        const char *line, *why;
    } cases[] = {
        {"Connection: close", "frames the message"},
        {"transfer-encoding: chunked", "frames the message"},
        {"Content-Length: 1", "frames the message"},
        {"TE: trailers", "frames the message"},
        {"Upgrade: h2c", "frames the message"},
        {"Date: x", "written by the server"},
        {"Location: /", "written by the server"},
        {"X Y: 1", "bad field"},
        {": 1", "bad field"},
        {"NoColon", "bad field"},
        {"X-A:   ", "has no value"},
        {"X-A: a\x01"
         "b",
         "control character"},
        {"X-A: a\x7f", "control character"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        sws_header_keys k = {0};
        char why[300] = "";
        if (sws_header_keys_add(&k, cases[i].line, false, why, sizeof why) == 0)
            fail_msg("accepted: %s", cases[i].line);
        if (!strstr(why, cases[i].why))
            fail_msg("%s: '%s', want '%s'", cases[i].line, why, cases[i].why);
        assert_int_equal(k.n, 0);
    }
    /* Bounded: 32 fields a section. */
    sws_header_keys k = {0};
    char why[300], line[32];
    for (int i = 0; i < SWS_HEADERS_MAX; i++) {
        snprintf(line, sizeof line, "X-%d: v", i);
        assert_int_equal(sws_header_keys_add(&k, line, false, why, sizeof why), 0);
    }
    assert_int_not_equal(sws_header_keys_add(&k, "X-Last: v", false, why, sizeof why), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(templates_are_cut_into_text_and_variables),
        cmocka_unit_test(open_and_broken_templates_are_refused),
        cmocka_unit_test(header_lines_build_both_forms),
        cmocka_unit_test(bad_header_lines_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
