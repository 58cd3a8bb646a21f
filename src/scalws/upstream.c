/* Per-loop upstream pools: slots for connections (allocated once, reused), an
 * idle LIFO per upstream (the most recently used connection is the warmest),
 * and the counters /metrics shows. Every function runs on the pool's loop. */
#include "upstream.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "sws.h"

const uint32_t sws_up_lat_bounds_us[SWS_UP_LAT_BUCKETS] = {
    100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 1000000};
const char *const sws_up_err_names[SWS_UPE_N] = {"refused",      "unreachable", "connect_timeout",
                                                 "read_timeout", "reset",       "truncated",
                                                 "bad_response", "other"};

#define UP_TOKEN(i, tag) SWS_TOKEN(i, tag)

int sws_pool_init(sws_pool *p, tl_loop *loop, const sws_proxy_config *cfg, uint32_t nslots) {
    memset(p, 0, sizeof(*p));
    p->loop = loop;
    p->cfg = cfg;
    p->nslots = nslots;
    p->slots = calloc(nslots, sizeof(*p->slots));
    p->free_idx = malloc(nslots * sizeof(*p->free_idx));
    if (!p->slots || !p->free_idx)
        return -ENOMEM;
    for (uint32_t i = 0; i < nslots; i++)
        p->free_idx[i] = nslots - 1 - i;
    p->nfree = nslots;
    for (int u = 0; u < cfg->nupstreams; u++) {
        p->idle[u] = malloc((cfg->pool_per_loop + 1) * sizeof(uint32_t));
        if (!p->idle[u])
            return -ENOMEM;
    }
    return 0;
}

void sws_pool_free(sws_pool *p) {
    for (uint32_t i = 0; i < p->nslots && p->slots; i++)
        free(p->slots[i]);
    free(p->slots);
    free(p->free_idx);
    for (int u = 0; u < SWS_UPSTREAMS_MAX; u++)
        free(p->idle[u]);
}

sws_up_conn *sws_pool_conn(sws_pool *p, uint32_t index) {
    if (index >= p->nslots || !p->slots[index] || p->slots[index]->state == SWS_UP_FREE)
        return NULL;
    return p->slots[index];
}

static void free_slot(sws_pool *p, sws_up_conn *u) {
    u->state = SWS_UP_FREE;
    p->free_idx[p->nfree++] = u->index;
    p->live--;
}

static void close_conn(sws_pool *p, sws_up_conn *u) {
    if (u->state == SWS_UP_CLOSING)
        return;
    u->state = SWS_UP_CLOSING;
    u->sess = SWS_NIL;
    if (tl_close(p->loop, u->h, UP_TOKEN(u->index, SWS_UP_T_CLOSE)) < 0)
        free_slot(p, u); /* unknown to turnloop: nothing will complete */
}

void sws_pool_closed(sws_pool *p, uint32_t index) {
    sws_up_conn *u = sws_pool_conn(p, index);
    if (u && u->state == SWS_UP_CLOSING)
        free_slot(p, u);
}

int sws_pool_acquire(sws_pool *p, uint32_t sess, bool fresh, int hint) {
    int up = hint >= 0 ? hint : (int)(p->rr++ % (uint32_t)p->cfg->nupstreams);
    if (!fresh && p->nidle[up]) {
        uint32_t i = p->idle[up][--p->nidle[up]];
        SWS_ADD(p->st.idle, (uint64_t)-1);
        sws_up_conn *u = p->slots[i];
        /* By construction the pool is per loop; the check proves it stays so. */
        if (u->owner != p->loop)
            SWS_ADD(p->st.foreign_loop_uses, 1);
        u->state = SWS_UP_BUSY;
        u->sess = sess;
        u->reused = true;
        u->got_bytes = false;
        u->olen = u->wlen = 0;
        SWS_ADD(p->st.reuses, 1);
        return (int)i;
    }
    if (p->nfree == 0)
        return -EMFILE;
    uint32_t i = p->free_idx[p->nfree - 1];
    sws_up_conn *u = p->slots[i];
    if (!u) {
        u = malloc(sizeof(*u));
        if (!u)
            return -ENOMEM;
        p->slots[i] = u;
    }
    memset(u, 0, offsetof(sws_up_conn, rbuf));
    u->index = i;
    u->upstream = (uint8_t)up;
    u->sess = sess;
    u->owner = p->loop;
    tl_op op;
    const sws_upstream_addr *a = &p->cfg->up[up];
    int rc = tl_connect(p->loop, (const struct sockaddr *)&a->ss, a->len,
                        UP_TOKEN(i, SWS_UP_T_CONNECT), &u->h, &op);
    if (rc < 0)
        return rc;
    p->nfree--;
    p->live++;
    u->state = SWS_UP_CONNECTING;
    SWS_ADD(p->st.connects, 1);
    return (int)i;
}

void sws_pool_release(sws_pool *p, sws_up_conn *u, bool keep) {
    if (u->state == SWS_UP_FREE || u->state == SWS_UP_CLOSING)
        return;
    int up = u->upstream;
    if (keep && !p->draining && u->state == SWS_UP_BUSY && !u->read_armed && !u->write_inflight &&
        p->nidle[up] < p->cfg->pool_per_loop) {
        u->state = SWS_UP_IDLE;
        u->sess = SWS_NIL;
        u->idle_since = tl_loop_now(p->loop);
        p->idle[up][p->nidle[up]++] = u->index;
        SWS_ADD(p->st.idle, 1);
        return;
    }
    close_conn(p, u);
}

void sws_pool_expire(sws_pool *p, uint64_t now) {
    for (int up = 0; up < p->cfg->nupstreams; up++) {
        uint32_t k = 0;
        for (uint32_t j = 0; j < p->nidle[up]; j++) {
            sws_up_conn *u = p->slots[p->idle[up][j]];
            if (p->draining || now >= u->idle_since + p->cfg->idle_timeout_ms) {
                SWS_ADD(p->st.idle, (uint64_t)-1);
                close_conn(p, u);
            } else {
                p->idle[up][k++] = u->index;
            }
        }
        p->nidle[up] = k;
    }
}

void sws_up_observe_latency(sws_pool *p, uint64_t us) {
    int b = 0;
    while (b < SWS_UP_LAT_BUCKETS && us > sws_up_lat_bounds_us[b])
        b++;
    SWS_ADD(p->st.lat[b], 1);
    SWS_ADD(p->st.lat_sum_us, us);
    SWS_ADD(p->st.lat_count, 1);
}

void sws_up_error(sws_pool *p, enum sws_up_err kind) {
    SWS_ADD(p->st.errors[kind], 1);
}
