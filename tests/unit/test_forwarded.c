/* forwarded.c: the forwarding fields sent upstream, for a trusted proxy and
 * for anyone else, in both schemes, and the trusted_proxies list itself. A
 * request head is parsed by sws_msg as the proxy parses it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>

#include "forwarded.h"
#include "msg_parse.h"

static const sws_head *parse(const char *head) {
    return test_head(test_parse(HTTP_REQUEST, head));
}

/* The fields built, as one string. */
static const char *build(const sws_proxy_config *p, const char *head, const char *peer, bool tls) {
    static char out[2048];
    size_t len = 0;
    assert_int_equal(sws_forwarded_build(p, parse(head), peer, tls, out, sizeof out - 1, &len), 0);
    out[len] = '\0';
    return out;
}

static void config(sws_proxy_config *p, int mode, const char *trusted) {
    char err[200];
    memset(p, 0, sizeof *p);
    p->forwarded = (uint8_t)mode;
    assert_int_equal(sws_trusted_parse(p, trusted, err, sizeof err), 0);
}

#define SPOOF                                                                                      \
    "GET / HTTP/1.1\r\nHost: example.com\r\nX-Forwarded-For: 6.6.6.6\r\n"                          \
    "X-Forwarded-Proto: https\r\nX-Forwarded-Host: evil\r\nForwarded: for=6.6.6.6\r\n\r\n"

static void untrusted_client_is_replaced_never_appended(void **st) {
    (void)st;
    sws_proxy_config p;
    config(&p, SWS_FWD_X_FORWARDED, "10.0.0.0/8");
    assert_string_equal(build(&p, SPOOF, "192.0.2.7", false),
                        "X-Forwarded-For: 192.0.2.7\r\nX-Forwarded-Proto: http\r\n"
                        "X-Forwarded-Host: example.com\r\n");
    /* Every forwarding field of the client is the builder's, to drop. */
    const sws_head *m = parse(SPOOF);
    int owned = 0;
    for (uint32_t i = 0; i < m->nf; i++)
        owned += sws_forwarded_owns(&p, m, i);
    assert_int_equal(owned, 4);
}

static void trusted_proxy_is_appended_to(void **st) {
    (void)st;
    sws_proxy_config p;
    config(&p, SWS_FWD_X_FORWARDED, "10.0.0.0/8, 2001:db8::/32");
    assert_string_equal(build(&p, SPOOF, "10.1.2.3", true),
                        "Forwarded: for=6.6.6.6\r\n"
                        "X-Forwarded-For: 6.6.6.6, 10.1.2.3\r\nX-Forwarded-Proto: https\r\n"
                        "X-Forwarded-Host: evil\r\n");
    /* Two X-Forwarded-For fields are one list. */
    assert_string_equal(build(&p,
                              "GET / HTTP/1.1\r\nHost: h\r\nX-Forwarded-For: 1.1.1.1\r\n"
                              "X-Forwarded-For: 2.2.2.2, 3.3.3.3\r\n\r\n",
                              "2001:db8::5", false),
                        "X-Forwarded-For: 1.1.1.1, 2.2.2.2, 3.3.3.3, 2001:db8::5\r\n"
                        "X-Forwarded-Proto: http\r\nX-Forwarded-Host: h\r\n");
}

static void rfc7239_quotes_ipv6_and_non_tokens(void **st) {
    (void)st;
    sws_proxy_config p;
    config(&p, SWS_FWD_RFC7239, "off");
    assert_string_equal(build(&p, SPOOF, "2001:db8:cafe::17", true),
                        "Forwarded: for=\"[2001:db8:cafe::17]\";proto=https;host=example.com\r\n");
    assert_string_equal(
        build(&p, "GET / HTTP/1.1\r\nHost: example.com:8080\r\n\r\n", "192.0.2.60", false),
        "Forwarded: for=192.0.2.60;proto=http;host=\"example.com:8080\"\r\n");
    /* No Host (HTTP/1.0), an unknown peer, a mapped IPv4 peer. */
    assert_string_equal(build(&p, "GET / HTTP/1.0\r\n\r\n", "-", false),
                        "Forwarded: for=unknown;proto=http\r\n");
    assert_string_equal(build(&p, "GET / HTTP/1.0\r\n\r\n", "::ffff:192.0.2.1", false),
                        "Forwarded: for=192.0.2.1;proto=http\r\n");
}

static void rfc7239_trusted_appends_to_the_list(void **st) {
    (void)st;
    sws_proxy_config p;
    config(&p, SWS_FWD_RFC7239, "::1, 127.0.0.1");
    assert_string_equal(build(&p, SPOOF, "::1", false),
                        "X-Forwarded-For: 6.6.6.6\r\nX-Forwarded-Proto: https\r\n"
                        "X-Forwarded-Host: evil\r\n"
                        "Forwarded: for=6.6.6.6, for=\"[::1]\";proto=http;host=example.com\r\n");
}

static void off_adds_nothing_and_owns_nothing(void **st) {
    (void)st;
    sws_proxy_config p;
    config(&p, SWS_FWD_OFF, "");
    assert_string_equal(build(&p, SPOOF, "192.0.2.1", false), "");
    const sws_head *m = parse(SPOOF);
    for (uint32_t i = 0; i < m->nf; i++)
        assert_false(sws_forwarded_owns(&p, m, i));
}

static void no_room_leaves_the_output_as_it_was(void **st) {
    (void)st;
    sws_proxy_config p;
    config(&p, SWS_FWD_X_FORWARDED, "");
    char out[16] = "abc";
    size_t len = 3;
    assert_int_equal(
        sws_forwarded_build(&p, parse(SPOOF), "192.0.2.1", false, out, sizeof out, &len), -ENOSPC);
    assert_int_equal(len, 3);
}

static void trusted_proxies_cidrs(void **st) {
    (void)st;
    sws_proxy_config p;
    char err[200];
    memset(&p, 0, sizeof p);
    assert_int_equal(sws_trusted_parse(&p, "10.0.0.0/8, 192.168.1.1, 2001:db8::/32, 172.16.0.0/12",
                                       err, sizeof err),
                     0);
    assert_int_equal(p.ntrusted, 4);
    assert_true(sws_trusted_has(&p, "10.255.0.1"));
    assert_false(sws_trusted_has(&p, "11.0.0.1"));
    assert_true(sws_trusted_has(&p, "192.168.1.1"));
    assert_false(sws_trusted_has(&p, "192.168.1.2"));
    assert_true(sws_trusted_has(&p, "172.31.255.255"));
    assert_false(sws_trusted_has(&p, "172.32.0.0"));
    assert_true(sws_trusted_has(&p, "2001:db8:1::1"));
    assert_false(sws_trusted_has(&p, "2001:db9::1"));
    assert_true(sws_trusted_has(&p, "::ffff:10.1.1.1")); /* a mapped IPv4 */
    assert_false(sws_trusted_has(&p, "-"));
    char f[200];
    sws_trusted_format(&p, f, sizeof f);
    assert_string_equal(f, "10.0.0.0/8, 192.168.1.1/32, 2001:db8::/32, 172.16.0.0/12");
    assert_int_equal(sws_trusted_parse(&p, "10.0.0.0/33", err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "10.0.0.0/33"));
    assert_int_equal(sws_trusted_parse(&p, "::/129", err, sizeof err), -EINVAL);
    assert_int_equal(sws_trusted_parse(&p, "localhost", err, sizeof err), -EINVAL);
    assert_int_equal(sws_trusted_parse(&p, "0.0.0.0/0", err, sizeof err), 0);
    assert_true(sws_trusted_has(&p, "8.8.8.8"));
    assert_false(sws_trusted_has(&p, "::1"));
    assert_int_equal(sws_trusted_parse(&p, "off", err, sizeof err), 0);
    assert_int_equal(p.ntrusted, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(untrusted_client_is_replaced_never_appended),
        cmocka_unit_test(trusted_proxy_is_appended_to),
        cmocka_unit_test(rfc7239_quotes_ipv6_and_non_tokens),
        cmocka_unit_test(rfc7239_trusted_appends_to_the_list),
        cmocka_unit_test(off_adds_nothing_and_owns_nothing),
        cmocka_unit_test(no_room_leaves_the_output_as_it_was),
        cmocka_unit_test(trusted_proxies_cidrs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
