/* The list of scenarios: the one place that maps [server] scenario to the ops
 * that serve it. A new scenario adds its kind in config.h and one line here. */
#include "scenario.h"

#include <stddef.h>

#include "route.h"

static const sws_scenario_ops *const by_kind[] = {
    [SWS_SCENARIO_RESPOND] = &sws_respond_ops,
    [SWS_SCENARIO_PROXY] = &sws_proxy_ops,
    [SWS_SCENARIO_STATIC] = &sws_static_ops,
    [SWS_SCENARIO_REDIRECT] = &sws_redirect_ops,
};

const sws_scenario_ops *sws_scenario_ops_of(sws_scenario_kind kind) {
    if ((size_t)kind < sizeof(by_kind) / sizeof(by_kind[0]) && by_kind[kind])
        return by_kind[kind];
    return &sws_respond_ops; /* config.c accepts no other value */
}

uint32_t sws_scenarios_extra_handles(const sws_config *cfg) {
    unsigned kinds = 1u << cfg->scenario;
    for (int i = 0; cfg->routes && i < cfg->routes->n; i++)
        kinds |= 1u << cfg->routes->r[i].cfg.scenario;
    uint32_t n = 0;
    for (size_t k = 0; k < sizeof(by_kind) / sizeof(by_kind[0]); k++)
        if ((kinds & (1u << k)) && by_kind[k] && by_kind[k]->extra_handles)
            n += by_kind[k]->extra_handles(cfg);
    return n;
}
