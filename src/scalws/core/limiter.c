/* The shared limit tables (limiter.h): open addressing over a fixed array of
 * 64-bit words, each a key's tag and its state packed so that one
 * compare-and-swap moves it. Entries are never emptied, so a key is always
 * found before the first empty slot of its window; a rate entry whose window
 * is full takes the slot of the key idle the longest (one whose arrival time
 * has passed holds nothing a fresh entry would not), a connection entry any
 * slot whose count fell to 0. */
#include "limiter.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define TAT_BITS SWS_TAT_BITS
#define TAT_MASK SWS_TAT_MASK
#define CONN_BITS 16 /* sws_limit_conn_count (limiter.h) says 16 too */
#define CONN_MASK ((UINT64_C(1) << CONN_BITS) - 1)
#define RETRIES 64 /* a CAS lost this often to other loops: let the request pass */

static uint64_t mix(uint64_t h) {
    h ^= h >> 33;
    h *= UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 33;
    h *= UINT64_C(0xc4ceb9fe1a85ec53);
    h ^= h >> 33;
    return h;
}

uint64_t sws_limit_key(const sws_limiter *l, int family, const uint8_t *addr, uint32_t route) {
    uint64_t w[2] = {0, 0};
    memcpy(w, addr, family == 2 /* AF_INET */ ? 4 : 16);
    uint64_t h = mix(l->seed ^ w[0]);
    h = mix(h ^ w[1]);
    h = mix(h ^ ((uint64_t)(uint32_t)family << 32 | route));
    return h ? h : 1;
}

/* A 40-bit time difference as a signed number. */
static int64_t ahead(uint64_t tat, uint64_t now) {
    uint64_t d = (tat - now) & TAT_MASK;
    return d & (UINT64_C(1) << (TAT_BITS - 1)) ? (int64_t)d - (int64_t)(TAT_MASK + 1) : (int64_t)d;
}

uint64_t sws_limit_rate_slow(sws_limiter *l, uint64_t key, uint64_t now_us, uint64_t interval_us,
                             uint32_t burst) {
    const uint64_t tag = sws_limit_tag(key);
    const uint64_t now = now_us & TAT_MASK, tau = interval_us * burst;
    const uint32_t home = (uint32_t)key;
    for (int attempt = 0; attempt < RETRIES; attempt++) {
        uint32_t slot = 0;
        uint64_t seen = 0;
        bool found = false, empty = false;
        for (uint32_t p = 0; p < SWS_LIMIT_PROBE && !found && !empty; p++) {
            slot = (home + p) & (SWS_LIMIT_SLOTS - 1);
            seen = atomic_load_explicit(&l->rate[slot], memory_order_relaxed);
            found = seen >> TAT_BITS == tag;
            empty = seen == 0;
        }
        if (!found && !empty) { /* a full window: the longest idle key's slot */
            int64_t oldest = INT64_MAX;
            for (uint32_t p = 0; p < SWS_LIMIT_PROBE; p++) {
                uint32_t i = (home + p) & (SWS_LIMIT_SLOTS - 1);
                uint64_t w = atomic_load_explicit(&l->rate[i], memory_order_relaxed);
                int64_t a = ahead(w & TAT_MASK, now);
                if (a < oldest) {
                    oldest = a;
                    slot = i;
                    seen = w;
                }
            }
        }
        uint64_t d = found ? sws_limit_ahead(seen, now, tau + interval_us) : 0;
        if (d > tau)
            return d - tau;
        uint64_t next = tag << TAT_BITS | ((now + d + interval_us) & TAT_MASK);
        if (next == 0)
            next = 1;
        if (atomic_compare_exchange_weak_explicit(&l->rate[slot], &seen, next, memory_order_relaxed,
                                                  memory_order_relaxed))
            return 0;
    }
    return 0;
}

static uint64_t conn_tag(uint64_t key) {
    uint64_t t = key >> CONN_BITS;
    return t ? t : 1;
}

uint32_t sws_limit_conn_open(sws_limiter *l, uint64_t key, uint32_t *at) {
    const uint64_t tag = conn_tag(key);
    const uint32_t home = (uint32_t)key;
    for (int attempt = 0; attempt < RETRIES; attempt++) {
        int mine = -1, free_at = -1;
        uint64_t mw = 0, fw = 0;
        for (uint32_t p = 0; p < SWS_LIMIT_PROBE; p++) {
            uint32_t i = (home + p) & (SWS_LIMIT_SLOTS - 1);
            uint64_t w = atomic_load_explicit(&l->conn[i], memory_order_relaxed);
            if (w >> CONN_BITS == tag && (w & CONN_MASK)) {
                mine = (int)i;
                mw = w;
                break;
            }
            if (!(w & CONN_MASK) && free_at < 0) {
                free_at = (int)i;
                fw = w;
            }
        }
        if (mine < 0 && free_at < 0)
            return 0; /* every slot near it holds another address's connections */
        int i = mine >= 0 ? mine : free_at;
        uint64_t w = mine >= 0 ? mw : fw;
        if ((w & CONN_MASK) == CONN_MASK)
            return 0; /* 65535 of one address: past counting */
        uint64_t next = mine >= 0 ? w + 1 : (tag << CONN_BITS | 1);
        if (atomic_compare_exchange_weak_explicit(&l->conn[i], &w, next, memory_order_relaxed,
                                                  memory_order_relaxed)) {
            *at = (uint32_t)i;
            return (uint32_t)(next & CONN_MASK);
        }
    }
    return 0;
}

void sws_limit_conn_close(sws_limiter *l, uint64_t key) {
    const uint64_t tag = conn_tag(key);
    const uint32_t home = (uint32_t)key;
    for (int attempt = 0; attempt < RETRIES * 4; attempt++) {
        bool any = false;
        for (uint32_t p = 0; p < SWS_LIMIT_PROBE; p++) {
            uint32_t i = (home + p) & (SWS_LIMIT_SLOTS - 1);
            uint64_t w = atomic_load_explicit(&l->conn[i], memory_order_relaxed);
            if (w >> CONN_BITS != tag || !(w & CONN_MASK))
                continue;
            any = true;
            if (atomic_compare_exchange_weak_explicit(&l->conn[i], &w, w - 1, memory_order_relaxed,
                                                      memory_order_relaxed))
                return;
            break; /* lost to another loop: look again */
        }
        if (!any)
            return;
    }
}

uint32_t sws_limit_conn_count_slow(sws_limiter *l, uint64_t key) {
    const uint64_t tag = conn_tag(key);
    const uint32_t home = (uint32_t)key;
    uint32_t n = 0;
    for (uint32_t p = 0; p < SWS_LIMIT_PROBE; p++) {
        uint64_t w = atomic_load_explicit(&l->conn[(home + p) & (SWS_LIMIT_SLOTS - 1)],
                                          memory_order_relaxed);
        if (w >> CONN_BITS == tag)
            n += (uint32_t)(w & CONN_MASK);
    }
    return n;
}

sws_limiter *sws_limiter_new(void) {
    /* Zeroed pages are only touched where keys land: the tables cost memory
     * as clients come, up to 1 MiB. */
    sws_limiter *l = calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    if (getrandom(&l->seed, sizeof l->seed, 0) != sizeof l->seed)
        l->seed = (uint64_t)(uintptr_t)l ^ UINT64_C(0x9e3779b97f4a7c15);
    return l;
}
