/* Unit tests of scalwsd's seams: every scenario fills the hooks the worker
 * calls without asking, under the name the config knows it by; completion
 * tokens round-trip and their tag ranges route as documented; a connection's
 * phases only move forward and always reach FREE. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka.h needs the four headers above first. */
#include <cmocka.h>

#include <string.h>

#include "conn.h"
#include "sws.h"

static const sws_scenario_kind kinds[] = {SWS_SCENARIO_RESPOND, SWS_SCENARIO_PROXY};

static void every_scenario_fills_the_required_hooks(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        const sws_scenario_ops *ops = sws_scenario_ops_of(kinds[i]);
        assert_non_null(ops);
        assert_non_null(ops->name);
        assert_non_null(ops->init);
        assert_non_null(ops->free);
        assert_non_null(ops->open);
        assert_non_null(ops->dispatch);
        assert_non_null(ops->drain);
        assert_non_null(ops->finished);
        /* On the HTTP connection, or owning its connections: never half. */
        bool on_conn = ops->open == sws_conn_open;
        assert_true(on_conn == (ops->answer != NULL));
        /* The request as a whole: all five hooks or none. */
        bool takes = ops->request_head != NULL;
        assert_true(takes == (ops->request_body != NULL));
        assert_true(takes == (ops->request_end != NULL));
        assert_true(takes == (ops->request_room != NULL));
        assert_true(takes == (ops->request_flush != NULL));
        if (on_conn) {
            /* Its own dispatch only for completions of its own (the proxy's
             * upstreams); the connection's go to sws_conn_dispatch. */
            if (!takes)
                assert_ptr_equal(ops->dispatch, sws_conn_dispatch);
            assert_non_null(ops->sweep);
            assert_non_null(ops->turn_done);
        }
    }
}

static void scenario_names_are_the_config_names(void **state) {
    (void)state;
    static sws_config c;
    char err[256];
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        const sws_scenario_ops *ops = sws_scenario_ops_of(kinds[i]);
        sws_config_defaults(&c);
        c.scenario = (sws_scenario_kind)-1;
        assert_int_equal(sws_config_set(&c, "server", "scenario", ops->name, err, sizeof(err)), 0);
        assert_int_equal(c.scenario, kinds[i]);
    }
}

static void tokens_round_trip_and_route_by_range(void **state) {
    (void)state;
    const uint32_t idx[] = {0, 1, 255, 256, 65535, 1u << 24, UINT32_MAX};
    for (size_t i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
        for (unsigned tag = 1; tag <= SWS_T_LAST; tag++) {
            uint64_t t = sws_token(idx[i], tag);
            assert_int_equal(sws_token_index(t), idx[i]);
            assert_int_equal(sws_token_tag(t), tag);
            assert_true(t >> (SWS_TOKEN_TAG_BITS + SWS_TOKEN_INDEX_BITS) == 0);
        }
    const unsigned worker[] = {SWS_T_ACCEPT, SWS_T_ADOPT, SWS_T_SWEEP, SWS_T_POST,
                               SWS_T_LISTENER_CLOSE};
    for (size_t i = 0; i < sizeof(worker) / sizeof(worker[0]); i++)
        assert_true(sws_tag_is_worker(worker[i]));
    const unsigned scenario[] = {SWS_T_RECV,       SWS_T_WRITE,   SWS_T_CLOSE,    SWS_T_PX_TICK,
                                 SWS_T_UP_CONNECT, SWS_T_UP_READ, SWS_T_UP_WRITE, SWS_T_UP_CLOSE};
    for (size_t i = 0; i < sizeof(scenario) / sizeof(scenario[0]); i++)
        assert_false(sws_tag_is_worker(scenario[i]));
    /* Every tag is distinct. */
    for (size_t i = 0; i < sizeof(scenario) / sizeof(scenario[0]); i++)
        for (size_t j = i + 1; j < sizeof(scenario) / sizeof(scenario[0]); j++)
            assert_int_not_equal(scenario[i], scenario[j]);
}

static void phases_move_forward_and_end_free(void **state) {
    (void)state;
    const sws_phase all[] = {SWS_PH_FREE,        SWS_PH_OPEN,      SWS_PH_LAST,
                             SWS_PH_LAST_LINGER, SWS_PH_LINGERING, SWS_PH_CLOSING};
    const size_t n = sizeof(all) / sizeof(all[0]);
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++) {
            bool may = sws_phase_may(all[i], all[j]);
            /* Forward only, but for the slot's reuse (FREE is its start). */
            if (all[i] == SWS_PH_CLOSING)
                assert_true(may == (all[j] == SWS_PH_FREE));
            else if (may)
                assert_true(all[j] > all[i]);
        }
        /* Every live phase can close. */
        if (all[i] != SWS_PH_FREE && all[i] != SWS_PH_CLOSING)
            assert_true(sws_phase_may(all[i], SWS_PH_CLOSING));
    }
    assert_true(sws_phase_may(SWS_PH_FREE, SWS_PH_OPEN));
    assert_false(sws_phase_may(SWS_PH_FREE, SWS_PH_CLOSING));
    assert_false(sws_phase_may(SWS_PH_LAST, SWS_PH_LINGERING)); /* only after a refusal */
    assert_true(sws_phase_gone(SWS_PH_CLOSING) && sws_phase_gone(SWS_PH_FREE));
    assert_false(sws_phase_gone(SWS_PH_LINGERING));
}

static void error_statuses_have_one_slot_table(void **state) {
    (void)state;
    assert_int_equal(sws_status_slot(400), SWS_ST_400);
    assert_int_equal(sws_status_slot(408), SWS_ST_408);
    assert_int_equal(sws_status_slot(431), SWS_ST_431);
    assert_int_equal(sws_status_slot(502), SWS_ST_502);
    assert_int_equal(sws_status_slot(504), SWS_ST_504);
    assert_int_equal(sws_status_slot(505), SWS_ST_OTHER);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_scenario_fills_the_required_hooks),
        cmocka_unit_test(scenario_names_are_the_config_names),
        cmocka_unit_test(tokens_round_trip_and_route_by_range),
        cmocka_unit_test(phases_move_forward_and_end_free),
        cmocka_unit_test(error_statuses_have_one_slot_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
