/* The pickers. Smooth weighted round-robin (nginx's): every candidate's
 * current weight grows by its weight, the largest is taken and lowered by the
 * sum, which spreads a weight-3 upstream as a a b a, not a a a b. least_conn
 * breaks ties by that round-robin too, so equal loads still rotate. */
#include "upstream_pick.h"

void sws_pick_init(sws_pick_state *st, uint64_t seed) {
    for (int i = 0; i < SWS_UPSTREAMS_MAX; i++)
        st->cw[i] = 0;
    st->rng = seed ? seed : 0x9e3779b97f4a7c15u;
}

static uint64_t next_rand(sws_pick_state *st) {
    uint64_t x = st->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    st->rng = x;
    return x;
}

static int32_t weight(const sws_proxy_config *cfg, int i) {
    return cfg->up[i].weight ? (int32_t)cfg->up[i].weight : 1;
}

static int smooth_rr(const sws_proxy_config *cfg, sws_pick_state *st, uint32_t mask) {
    int best = -1;
    int32_t total = 0;
    for (int i = 0; i < cfg->nupstreams; i++) {
        if (!(mask & (1u << i)))
            continue;
        st->cw[i] += weight(cfg, i);
        total += weight(cfg, i);
        if (best < 0 || st->cw[i] > st->cw[best])
            best = i;
    }
    if (best >= 0)
        st->cw[best] -= total;
    return best;
}

/* a's load per weight below b's: inflight[a]/w[a] < inflight[b]/w[b]. */
static int load_cmp(const sws_proxy_config *cfg, const uint32_t *inflight, int a, int b) {
    uint64_t la = (uint64_t)inflight[a] * (uint64_t)weight(cfg, b);
    uint64_t lb = (uint64_t)inflight[b] * (uint64_t)weight(cfg, a);
    return la < lb ? -1 : la > lb ? 1 : 0;
}

static int least_conn(const sws_proxy_config *cfg, sws_pick_state *st, const uint32_t *inflight,
                      uint32_t mask) {
    int best = -1;
    uint32_t tied = 0;
    for (int i = 0; i < cfg->nupstreams; i++) {
        if (!(mask & (1u << i)))
            continue;
        int c = best < 0 ? -1 : load_cmp(cfg, inflight, i, best);
        if (c < 0) {
            best = i;
            tied = 1u << i;
        } else if (c == 0) {
            tied |= 1u << i;
        }
    }
    return best < 0 ? -1 : smooth_rr(cfg, st, tied);
}

/* One candidate drawn with probability proportional to its weight. */
static int draw(const sws_proxy_config *cfg, sws_pick_state *st, uint32_t mask) {
    uint64_t total = 0;
    for (int i = 0; i < cfg->nupstreams; i++)
        if (mask & (1u << i))
            total += (uint64_t)weight(cfg, i);
    if (total == 0)
        return -1;
    uint64_t r = next_rand(st) % total;
    for (int i = 0; i < cfg->nupstreams; i++) {
        if (!(mask & (1u << i)))
            continue;
        if (r < (uint64_t)weight(cfg, i))
            return i;
        r -= (uint64_t)weight(cfg, i);
    }
    return -1;
}

static int p2c(const sws_proxy_config *cfg, sws_pick_state *st, const uint32_t *inflight,
               uint32_t mask) {
    int a = draw(cfg, st, mask);
    if (a < 0)
        return -1;
    int b = draw(cfg, st, mask & ~(1u << a));
    if (b < 0)
        return a;
    return load_cmp(cfg, inflight, b, a) < 0 ? b : a;
}

int sws_pick(const sws_proxy_config *cfg, sws_pick_state *st, const uint32_t *inflight,
             uint32_t usable) {
    uint32_t all = cfg->nupstreams >= 32 ? ~0u : (1u << cfg->nupstreams) - 1u;
    uint32_t mask = usable & all;
    if (!mask)
        return -1;
    switch (cfg->balance) {
    case SWS_BALANCE_LEAST_CONN:
        return least_conn(cfg, st, inflight, mask);
    case SWS_BALANCE_P2C:
        return p2c(cfg, st, inflight, mask);
    default:
        return smooth_rr(cfg, st, mask);
    }
}
