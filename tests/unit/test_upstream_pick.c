/* upstream_pick.c and upstream_health.c's passive half, without a server:
 * how requests spread by weight under each balance, that a down upstream is
 * never picked and none left is -1 (502), the upstream list's syntax and
 * resolution, and nginx's max_fails / fail_timeout. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>

#include "upstream_health.h"
#include "upstream_pick.h"
#include "upstream_tls.h"

static sws_proxy_config cfg_of(const char *list, int balance) {
    sws_proxy_config p;
    char err[300];
    memset(&p, 0, sizeof p);
    p.balance = (uint8_t)balance;
    assert_int_equal(sws_proxy_parse_upstreams(&p, list, err, sizeof err), 0);
    return p;
}

#define THREE "127.0.0.1:9001 weight=3, 127.0.0.1:9002, 127.0.0.1:9003 weight=2"

static void round_robin_spreads_by_weight(void **st) {
    (void)st;
    sws_proxy_config p = cfg_of(THREE, SWS_BALANCE_ROUND_ROBIN);
    sws_pick_state ps;
    sws_pick_init(&ps, 1);
    uint32_t inflight[SWS_UPSTREAMS_MAX] = {0};
    int n[3] = {0}, run = 0, last = -1, longest = 0;
    for (int i = 0; i < 600; i++) {
        int u = sws_pick(&p, &ps, inflight, ~0u);
        assert_in_range(u, 0, 2);
        n[u]++;
        run = u == last ? run + 1 : 1;
        last = u;
        longest = run > longest ? run : longest;
    }
    assert_int_equal(n[0], 300);
    assert_int_equal(n[1], 100);
    assert_int_equal(n[2], 200);
    assert_true(longest <= 2); /* smooth: weight 3 of 6 never comes three times in a row */
}

static void down_upstreams_are_skipped_and_none_left_is_502(void **st) {
    (void)st;
    for (int b = SWS_BALANCE_ROUND_ROBIN; b <= SWS_BALANCE_P2C; b++) {
        sws_proxy_config p = cfg_of(THREE, b);
        sws_pick_state ps;
        sws_pick_init(&ps, 7);
        uint32_t inflight[SWS_UPSTREAMS_MAX] = {0};
        int n[3] = {0};
        for (int i = 0; i < 300; i++)
            n[sws_pick(&p, &ps, inflight, ~(1u << 0))]++; /* upstream 0 down */
        assert_int_equal(n[0], 0);
        assert_true(n[1] > 0 && n[2] > 0);
        assert_int_equal(sws_pick(&p, &ps, inflight, 0), -1);
        assert_int_equal(sws_pick(&p, &ps, inflight, 1u << 5), -1); /* no such upstream */
    }
}

static void least_conn_takes_the_least_loaded_per_weight(void **st) {
    (void)st;
    sws_proxy_config p = cfg_of(THREE, SWS_BALANCE_LEAST_CONN);
    sws_pick_state ps;
    sws_pick_init(&ps, 3);
    uint32_t inflight[SWS_UPSTREAMS_MAX] = {5, 0, 3};
    assert_int_equal(sws_pick(&p, &ps, inflight, ~0u), 1);
    /* 4/3 < 2/1 < 3/2? no: 4/3 = 1.33 < 3/2 = 1.5 < 2/1 */
    inflight[0] = 4, inflight[1] = 2, inflight[2] = 3;
    assert_int_equal(sws_pick(&p, &ps, inflight, ~0u), 0);
    /* Equal loads rotate by weight, as round-robin does. */
    memset(inflight, 0, sizeof inflight);
    int n[3] = {0};
    for (int i = 0; i < 600; i++)
        n[sws_pick(&p, &ps, inflight, ~0u)]++;
    assert_int_equal(n[0], 300);
    assert_int_equal(n[1], 100);
    /* As requests pile up on the one picked, least_conn follows them. */
    memset(inflight, 0, sizeof inflight);
    for (int i = 0; i < 60; i++)
        inflight[sws_pick(&p, &ps, inflight, ~0u)]++;
    assert_int_equal(inflight[0], 30);
    assert_int_equal(inflight[1], 10);
    assert_int_equal(inflight[2], 20);
}

static void p2c_avoids_the_loaded_and_draws_by_weight(void **st) {
    (void)st;
    sws_proxy_config p = cfg_of(THREE, SWS_BALANCE_P2C);
    sws_pick_state ps;
    sws_pick_init(&ps, 42);
    uint32_t inflight[SWS_UPSTREAMS_MAX] = {100, 0, 0};
    int n[3] = {0};
    for (int i = 0; i < 1000; i++)
        n[sws_pick(&p, &ps, inflight, ~0u)]++;
    assert_int_equal(n[0], 0); /* two distinct draws: the other is always less loaded */
    /* Two upstreams, equal loads: the first drawn wins, so weight 3:1 gives ~75%. */
    sws_proxy_config two = cfg_of("127.0.0.1:1 weight=3, 127.0.0.1:2", SWS_BALANCE_P2C);
    uint32_t zero[SWS_UPSTREAMS_MAX] = {0};
    int a = 0;
    for (int i = 0; i < 4000; i++)
        a += sws_pick(&two, &ps, zero, ~0u) == 0;
    assert_in_range(a, 2600, 3400);
    /* One left: that one. */
    assert_int_equal(sws_pick(&p, &ps, inflight, 1u << 2), 2);
}

static void upstream_list_syntax_and_names(void **st) {
    (void)st;
    sws_proxy_config p = cfg_of(THREE, 0);
    assert_int_equal(p.nupstreams, 3);
    assert_int_equal(p.up[0].weight, 3);
    assert_int_equal(p.up[1].weight, 1);
    assert_string_equal(p.up[2].addr, "127.0.0.1:9003");
    char f[400];
    sws_proxy_format_upstreams(&p, f, sizeof f);
    assert_string_equal(f, "127.0.0.1:9001 weight=3, 127.0.0.1:9002, 127.0.0.1:9003 weight=2");
    p = cfg_of("127.0.0.1:1 127.0.0.1:2", 0); /* the older space-separated form */
    assert_int_equal(p.nupstreams, 2);
    p = cfg_of("[::1]:8080", 0);
    assert_string_equal(p.up[0].addr, "[::1]:8080");
    /* A name: every address it has (localhost: 127.0.0.1, and ::1 where
     * /etc/hosts says so), each under the name as written, listed once. */
    p = cfg_of("localhost:9005 weight=2", 0);
    assert_true(p.nupstreams >= 1 && p.nupstreams <= 2);
    for (int i = 0; i < p.nupstreams; i++) {
        assert_string_equal(p.up[i].text, "localhost:9005");
        assert_int_equal(p.up[i].weight, 2);
    }
    sws_proxy_format_upstreams(&p, f, sizeof f);
    assert_string_equal(f, "localhost:9005 weight=2");

    char err[300];
    sws_proxy_config q;
    memset(&q, 0, sizeof q);
    assert_int_equal(sws_proxy_parse_upstreams(&q, "127.0.0.1:1 weight=0", err, sizeof err),
                     -EINVAL);
    assert_non_null(strstr(err, "weight=0"));
    assert_int_equal(sws_proxy_parse_upstreams(&q, "127.0.0.1", err, sizeof err), -EINVAL);
    assert_int_equal(sws_proxy_parse_upstreams(&q, "127.0.0.1:0", err, sizeof err), -EINVAL);
    assert_int_equal(sws_proxy_parse_upstreams(&q, "no-such-host.invalid:80", err, sizeof err),
                     -EINVAL);
    assert_non_null(strstr(err, "cannot resolve upstream 'no-such-host.invalid:80'"));
}

static void passive_health_is_nginx_max_fails(void **st) {
    (void)st;
    char err[200];
    sws_proxy_config p = cfg_of(THREE, 0);
    p.max_fails = 2;
    p.fail_timeout_ms = 1000;
    sws_up_health *h = sws_health_start(&p, NULL, err, sizeof err);
    assert_non_null(h);
    uint64_t t = 5000;
    assert_int_equal(sws_health_usable(h, &p, t), 7u);
    sws_health_failed(h, &p, 0, t);
    assert_int_equal(sws_health_usable(h, &p, t), 7u); /* one of two */
    sws_health_failed(h, &p, 0, t + 100);
    assert_int_equal(sws_health_usable(h, &p, t + 100), 6u); /* out */
    assert_int_equal(sws_health_usable(h, &p, t + 1099), 6u);
    assert_int_equal(sws_health_usable(h, &p, t + 1100), 7u); /* fail_timeout passed: tried */
    sws_health_failed(h, &p, 0, t + 1150);                    /* and failed again: out at once */
    assert_int_equal(sws_health_usable(h, &p, t + 1150), 6u);
    sws_health_passed(h, 0); /* an answer (a request under way before) brings it back */
    assert_int_equal(sws_health_usable(h, &p, t + 1200), 7u);
    /* Failures further apart than fail_timeout never add up. */
    sws_health_failed(h, &p, 1, t + 2000);
    sws_health_failed(h, &p, 1, t + 3500);
    assert_int_equal(sws_health_usable(h, &p, t + 3500), 7u);
    /* max_fails = 0 disables it; a single upstream is never taken out. */
    p.max_fails = 0;
    for (int i = 0; i < 5; i++)
        sws_health_failed(h, &p, 2, t + 4000);
    assert_int_equal(sws_health_usable(h, &p, t + 4000), 7u);
    sws_health_stop(h);
    sws_proxy_config one = cfg_of("127.0.0.1:1", 0);
    one.max_fails = 1;
    one.fail_timeout_ms = 1000;
    h = sws_health_start(&one, NULL, err, sizeof err);
    sws_health_failed(h, &one, 0, t);
    assert_int_equal(sws_health_usable(h, &one, t), 1u);
    sws_health_stop(h);
    assert_int_equal(sws_health_usable(NULL, &p, t), 7u);
}

/* Upstream TLS verifies (and sends as SNI) the host as written, never the
 * address it resolved to; tls_name replaces it for every upstream. */
static void tls_name_is_the_host_as_written(void **st) {
    (void)st;
    sws_proxy_config p = cfg_of("localhost:9443, [::1]:9444, 127.0.0.1:9445", 0);
    char name[256];
    for (int i = 0; i < p.nupstreams; i++) {
        sws_up_tls_name(&p, i, name, sizeof name);
        if (strncmp(p.up[i].text, "localhost:", 10) == 0)
            assert_string_equal(name, "localhost");
        else if (p.up[i].text[0] == '[')
            assert_string_equal(name, "::1");
        else
            assert_string_equal(name, "127.0.0.1");
    }
    snprintf(p.tls_name, sizeof p.tls_name, "backend.internal");
    for (int i = 0; i < p.nupstreams; i++) {
        sws_up_tls_name(&p, i, name, sizeof name);
        assert_string_equal(name, "backend.internal");
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_robin_spreads_by_weight),
        cmocka_unit_test(down_upstreams_are_skipped_and_none_left_is_502),
        cmocka_unit_test(least_conn_takes_the_least_loaded_per_weight),
        cmocka_unit_test(p2c_avoids_the_loaded_and_draws_by_weight),
        cmocka_unit_test(upstream_list_syntax_and_names),
        cmocka_unit_test(passive_health_is_nginx_max_fails),
        cmocka_unit_test(tls_name_is_the_host_as_written),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
