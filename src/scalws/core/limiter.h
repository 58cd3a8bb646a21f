/* Per-client limits shared by every loop (limiter.c): a request rate (GCRA,
 * nginx's limit_req without delay) and a count of open connections (nginx's
 * limit_conn), per client address and route. A client's connections land on
 * different loops, so the state is one process-wide table of each, fixed in
 * size and made of 64-bit atomics: a check is a few loads and one
 * compare-and-swap, never a lock (doc/limits.md says why and what it costs).
 * Every function may be called from any thread. */
#ifndef SWS_LIMITER_H
#define SWS_LIMITER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* Entries of each table (a power of two) and how far a key is searched
 * from its home slot. */
#define SWS_LIMIT_SLOTS (1u << 16)
#define SWS_LIMIT_PROBE 8

typedef struct sws_limiter {
    uint64_t seed; /* keys are hashed with it: a client cannot aim at a slot */
    /* Rate: a tag (the key's hash, 24 bits) and the theoretical arrival
     * time (40 bits of microseconds, modulo ~12.7 days). 0: empty. */
    _Atomic uint64_t rate[SWS_LIMIT_SLOTS];
    /* Connections: a tag (48 bits) and a count (16 bits). A count of 0 is
     * free for another key. */
    _Atomic uint64_t conn[SWS_LIMIT_SLOTS];
} sws_limiter;

/* A client's key: its address (family and 4 or 16 bytes) and a route's
 * stat slot, hashed with the limiter's seed; never 0. */
uint64_t sws_limit_key(const sws_limiter *l, int family, const uint8_t *addr, uint32_t route);

/* The rate word: a 24-bit tag and a 40-bit theoretical arrival time. */
#define SWS_TAT_BITS 40
#define SWS_TAT_MASK ((UINT64_C(1) << SWS_TAT_BITS) - 1)

static inline uint64_t sws_limit_tag(uint64_t key) {
    return (key >> SWS_TAT_BITS) ? (key >> SWS_TAT_BITS) : 1;
}

/* GCRA on one word: how far ahead of now its arrival time is, within what
 * a request could have put it (else a time from before the clock wrapped,
 * or none: 0). */
static inline uint64_t sws_limit_ahead(uint64_t word, uint64_t now, uint64_t most) {
    uint64_t d = ((word & SWS_TAT_MASK) - now) & SWS_TAT_MASK;
    return d <= most ? d : 0; /* a past time is a large d too: owed nothing */
}

/* sws_limit_rate for a key not at its home slot, or a lost race. */
uint64_t sws_limit_rate_slow(sws_limiter *l, uint64_t key, uint64_t now_us, uint64_t interval_us,
                             uint32_t burst);

/* One request of key at now_us against one every interval_us with burst
 * more at once. 0: it passes (and is counted); else the microseconds until
 * one would pass. Inline for the common case, a client already at its home
 * slot: one load, one compare-and-swap. */
static inline uint64_t sws_limit_rate(sws_limiter *l, uint64_t key, uint64_t now_us,
                                      uint64_t interval_us, uint32_t burst) {
    _Atomic uint64_t *w = &l->rate[(uint32_t)key & (SWS_LIMIT_SLOTS - 1)];
    uint64_t seen = atomic_load_explicit(w, memory_order_relaxed), tag = sws_limit_tag(key);
    if (seen >> SWS_TAT_BITS == tag) {
        uint64_t now = now_us & SWS_TAT_MASK, tau = interval_us * burst;
        uint64_t d = sws_limit_ahead(seen, now, tau + interval_us);
        if (d > tau)
            return d - tau;
        uint64_t next = tag << SWS_TAT_BITS | ((now + d + interval_us) & SWS_TAT_MASK);
        if (atomic_compare_exchange_strong_explicit(w, &seen, next, memory_order_relaxed,
                                                    memory_order_relaxed))
            return 0;
    }
    return sws_limit_rate_slow(l, key, now_us, interval_us, burst);
}

/* A connection of key opens: its count after it, or 0 when the table has no
 * room near key's slot (the connection is then not counted: the caller must
 * not call sws_limit_conn_close for it). *at: where the count is, for
 * sws_limit_conn_count. */
uint32_t sws_limit_conn_open(sws_limiter *l, uint64_t key, uint32_t *at);
/* A counted connection of key closes. */
void sws_limit_conn_close(sws_limiter *l, uint64_t key);
/* sws_limit_conn_count when the count is not at `at`. */
uint32_t sws_limit_conn_count_slow(sws_limiter *l, uint64_t key);

/* Open connections of key (0 when none are counted): one load when the
 * count is still at `at` (where sws_limit_conn_open put it), else a look
 * through key's window. The count stays where it was made while the
 * address has a connection open (a slot is taken by another address only at
 * 0). Two loops opening the first connections of one address while a third
 * address's count falls to 0 can make two counts of it in the window; the
 * one read is then short of the other: the limit errs towards letting a
 * connection through, never locks one out. */
static inline uint32_t sws_limit_conn_count(sws_limiter *l, uint64_t key, uint32_t at) {
    uint64_t w = atomic_load_explicit(&l->conn[at & (SWS_LIMIT_SLOTS - 1)], memory_order_relaxed);
    uint64_t tag = key >> 16 ? key >> 16 : 1;
    if (w >> 16 == tag && (w & 0xffff))
        return (uint32_t)(w & 0xffff);
    return sws_limit_conn_count_slow(l, key);
}

/* Where a caller that checks one key often keeps its words (the gate keeps
 * them per connection): the rate word at key's home slot, the count word
 * where sws_limit_conn_open put it, and the tags that say they are still
 * key's. A word that no longer carries its tag sends the caller to
 * sws_limit_rate or sws_limit_conn_count. */
static inline _Atomic uint64_t *sws_limit_rate_word(sws_limiter *l, uint64_t key) {
    return &l->rate[(uint32_t)key & (SWS_LIMIT_SLOTS - 1)];
}
static inline _Atomic uint64_t *sws_limit_conn_word(sws_limiter *l, uint32_t at) {
    return &l->conn[at & (SWS_LIMIT_SLOTS - 1)];
}
static inline uint64_t sws_limit_conn_tag(uint64_t key) {
    return key >> 16 ? key >> 16 : 1;
}

/* A zeroed limiter with a fresh seed, or NULL. Freed with free(). */
sws_limiter *sws_limiter_new(void);

#endif
