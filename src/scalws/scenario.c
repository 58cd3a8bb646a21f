/* The list of scenarios: the one place that maps [server] scenario to the ops
 * that serve it. A new scenario adds its kind in config.h and one line here. */
#include "scenario.h"

#include <stddef.h>

static const sws_scenario_ops *const by_kind[] = {
    [SWS_SCENARIO_RESPOND] = &sws_respond_ops,
    [SWS_SCENARIO_PROXY] = &sws_proxy_ops,
};

const sws_scenario_ops *sws_scenario_ops_of(sws_scenario_kind kind) {
    if ((size_t)kind < sizeof(by_kind) / sizeof(by_kind[0]) && by_kind[kind])
        return by_kind[kind];
    return &sws_respond_ops; /* config.c accepts no other value */
}
