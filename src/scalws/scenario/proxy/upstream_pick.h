/* Which upstream the next request goes to ([proxy] balance): round_robin
 * (smooth weighted, as nginx's), least_conn (fewest of this loop's requests in
 * flight per weight) or p2c (two drawn by weight, the less loaded one). Only
 * upstreams in the usable mask (upstream_health.h) are candidates. Pure: the
 * state is the caller's (one per loop), nothing else is touched. */
#ifndef SWS_UPSTREAM_PICK_H
#define SWS_UPSTREAM_PICK_H

#include <stdint.h>

#include "proxy_config.h"

typedef struct sws_pick_state {
    int32_t cw[SWS_UPSTREAMS_MAX]; /* smooth weighted round-robin's current weights */
    uint64_t rng;                  /* xorshift state for p2c */
} sws_pick_state;

void sws_pick_init(sws_pick_state *st, uint64_t seed);

/* The upstream for the next request, or -1 when no usable upstream is left
 * (the request is answered 502). usable: bit i for upstream i; inflight: this
 * loop's requests in flight per upstream. */
int sws_pick(const sws_proxy_config *cfg, sws_pick_state *st, const uint32_t *inflight,
             uint32_t usable);

#endif
