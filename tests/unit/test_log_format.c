/* log_format.c and log_render.c: the named formats and templates compiled
 * and refused, each variable rendered, text escaped as nginx does, and JSON
 * lines that jansson parses back to the bytes they came from (invalid UTF-8
 * as U+FFFD), with every field at its longest within SWS_LOG_LINE_MAX. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "log_format.h"
#include "log_render.h"

static char line[SWS_LOG_LINE_MAX + 1];

static const char *render(const char *fmt, const sws_log_line *l) {
    sws_log_format f;
    char why[200] = "";
    int rc = sws_log_format_compile(&f, fmt, why, sizeof why);
    if (rc != 0)
        fail_msg("%s: %s", fmt, why);
    size_t n = sws_log_render(&f, l, line);
    assert_true(n <= SWS_LOG_LINE_MAX);
    line[n] = '\0';
    return line;
}

static sws_log_line sample(void) {
    return (sws_log_line){
        .peer = "192.0.2.1",
        .request = "GET /a?b=1 HTTP/1.1",
        .request_len = 19,
        .referer = "http://r/",
        .referer_len = 9,
        .user_agent = "ua/1",
        .user_agent_len = 4,
        .host = "example.com:8080",
        .host_len = 16,
        .status = 200,
        .bytes = 1234,
        .secure = true,
        .elapsed_ms = 1234,
        .route = "api",
        .upstream = "127.0.0.1:9000",
        .upstream_us = 4567,
        .time_local = "05/Dec/2026:04:43:21 +0000",
        .time_iso8601 = "2026-12-05T04:43:21+00:00",
        .now_ms = 1796445801123,
    };
}

static void named_formats(void **st) {
    (void)st;
    sws_log_line l = sample();
    assert_string_equal(render("combined", &l),
                        "192.0.2.1 - - [05/Dec/2026:04:43:21 +0000] \"GET /a?b=1 HTTP/1.1\" 200 "
                        "1234 \"http://r/\" \"ua/1\" api\n");
    assert_string_equal(render("", &l), line); /* the default is combined */
    assert_string_equal(render("common", &l), "192.0.2.1 - - [05/Dec/2026:04:43:21 +0000] "
                                              "\"GET /a?b=1 HTTP/1.1\" 200 1234\n");
}

static void every_variable(void **st) {
    (void)st;
    sws_log_line l = sample();
    assert_string_equal(render("$request_method|$request_uri|$server_protocol|$scheme|$host|"
                               "$request_time|${request_time_ms}ms|$upstream_addr|"
                               "$upstream_response_time|$upstream_time_ms|$msec|$time_iso8601|$$",
                               &l),
                        "GET|/a?b=1|HTTP/1.1|https|example.com:8080|1.234|1234ms|127.0.0.1:9000|"
                        "0.004|4|1796445801.123|2026-12-05T04:43:21+00:00|$\n");
    /* Absent: "-"; a request line refused before it was whole. */
    l.upstream = NULL;
    l.upstream_us = -1;
    l.elapsed_ms = -1;
    l.route = NULL;
    l.host_len = 0;
    l.request = "BREW";
    l.request_len = 4;
    assert_string_equal(render("$upstream_addr $upstream_time_ms $request_time $route $host "
                               "$request_method $request_uri $server_protocol",
                               &l),
                        "- - - - - BREW - -\n");
}

static void text_escapes(void **st) {
    (void)st;
    sws_log_line l = sample();
    l.user_agent = "a\"b\\c\td\x7f\x80\xff";
    l.user_agent_len = 10;
    assert_string_equal(render("\"$http_user_agent\"", &l),
                        "\"a\\x22b\\x5Cc\\x09d\\x7F\\x80\\xFF\"\n");
}

static void json_parses_back(void **st) {
    (void)st;
    sws_log_line l = sample();
    /* Quotes, backslash, controls, DEL, UTF-8 kept, invalid bytes (a lone
     * continuation, an overlong, a surrogate, past U+10FFFF, a cut sequence). */
    static const char ua[] = "q\"b\\s\x01\n\x7f \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 "
                             "\x80 \xc0\xaf \xed\xa0\x80 \xf4\x90\x80\x80 \xe2\x82";
    l.user_agent = ua;
    l.user_agent_len = sizeof ua - 1;
    const char *s = render("json", &l);
    json_error_t err;
    json_t *o = json_loads(s, 0, &err);
    if (!o)
        fail_msg("not JSON (%s): %s", err.text, s);
    assert_string_equal(
        json_string_value(json_object_get(o, "http_user_agent")),
        "q\"b\\s\x01\n\x7f \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 "
        "\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd "
        "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd");
    assert_int_equal(json_integer_value(json_object_get(o, "status")), 200);
    assert_int_equal(json_integer_value(json_object_get(o, "upstream_time_ms")), 4);
    assert_string_equal(json_string_value(json_object_get(o, "route")), "api");
    json_decref(o);
    /* Absent values are null; a chosen list of variables. */
    l.upstream = NULL;
    l.upstream_us = -1;
    l.referer = NULL;
    assert_string_equal(render("json $status,upstream_addr upstream_time_ms http_referer", &l),
                        "{\"status\":200,\"upstream_addr\":null,\"upstream_time_ms\":null,"
                        "\"http_referer\":null}\n");
}

/* Every text field at its longest, every byte escaped at its widest: the
 * line fits, and is one JSON object. */
static void longest_line_fits(void **st) {
    (void)st;
    static char junk[300];
    memset(junk, 0xff, sizeof junk);
    sws_log_line l = sample();
    l.request = l.referer = l.user_agent = l.host = junk;
    l.request_len = l.referer_len = l.user_agent_len = l.host_len = sizeof junk;
    const char *s = render("json", &l);
    json_t *o = json_loads(s, 0, NULL);
    assert_non_null(o);
    json_decref(o);
    render("$request $http_user_agent $http_referer $host $request_uri $request_method", &l);
}

/* A request refused before its line was read (no log fields): its parts are
 * absent, never read through a null pointer (fuzz_log_format found the
 * request line split from NULL; log_format/regress_absent_request_line). */
static void absent_request_line(void **st) {
    (void)st;
    sws_log_line l = sample();
    l.request = NULL;
    l.request_len = 0;
    assert_string_equal(render("$request_method|$request_uri|$server_protocol|$request", &l),
                        "-|-|-|-\n");
    assert_string_equal(
        render("json request_method request_uri server_protocol", &l),
        "{\"request_method\":null,\"request_uri\":null,\"server_protocol\":null}\n");
}

static void refused(void **st) {
    (void)st;
    static const char *const bad[][2] = {
        {"$nosuch", "unknown variable 'nosuch'"},
        {"${status", "unknown variable '${status'"},
        {"$ alone", "unknown variable '$'"},
        {"no variables here", "no variable"},
        {"json", NULL},
        {"json status nosuch", "unknown variable 'nosuch'"},
        {"json status-x", "unknown variable 'status-x'"},
        {"json ,", "json names no variable"},
        {"$http_user_agent $http_user_agent $http_user_agent $http_user_agent $http_user_agent "
         "$http_user_agent $http_user_agent $http_user_agent $http_user_agent $http_user_agent "
         "$http_user_agent $http_user_agent $http_user_agent $http_user_agent $http_user_agent "
         "$http_user_agent $http_user_agent",
         "a line could be"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sws_log_format f;
        char why[200] = "";
        int rc = sws_log_format_compile(&f, bad[i][0], why, sizeof why);
        if (!bad[i][1]) {
            assert_int_equal(rc, 0);
            continue;
        }
        if (rc == 0 || !strstr(why, bad[i][1]))
            fail_msg("'%s': rc %d, '%s', want '%s'", bad[i][0], rc, why, bad[i][1]);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(named_formats),     cmocka_unit_test(every_variable),
        cmocka_unit_test(text_escapes),      cmocka_unit_test(json_parses_back),
        cmocka_unit_test(longest_line_fits), cmocka_unit_test(absent_request_line),
        cmocka_unit_test(refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
