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

/* One request of key at now_us against one every interval_us with burst
 * more at once. 0: it passes (and is counted); else the microseconds until
 * one would pass. */
uint64_t sws_limit_rate(sws_limiter *l, uint64_t key, uint64_t now_us, uint64_t interval_us,
                        uint32_t burst);

/* A connection of key opens: its count after it, or 0 when the table has no
 * room near key's slot (the connection is then not counted: the caller must
 * not call sws_limit_conn_close for it). */
uint32_t sws_limit_conn_open(sws_limiter *l, uint64_t key);
/* A counted connection of key closes. */
void sws_limit_conn_close(sws_limiter *l, uint64_t key);
/* Open connections of key (0 when none are counted). */
uint32_t sws_limit_conn_count(sws_limiter *l, uint64_t key);

/* A zeroed limiter with a fresh seed, or NULL. Freed with free(). */
sws_limiter *sws_limiter_new(void);

#endif
