/* Upstream connection pools. A pool belongs to one worker's loop and is
 * touched only by that loop's thread: with [proxy] pool = per_loop (the
 * default) an idle connection opened by loop i is only ever handed out again
 * on loop i (ADR-0029's follow-up). pool = shared is the baseline it is
 * measured against: idle connections are detached into one process-wide,
 * mutex-protected stack and attached by whichever loop takes them. */
#ifndef SWS_UPSTREAM_H
#define SWS_UPSTREAM_H

#include <stdbool.h>
#include <stdint.h>

#include "lend.h"
#include "proxy_config.h"
#include "token.h"
#include "turnloop.h"

typedef _Atomic uint64_t sws_up_ctr;

enum sws_up_err {
    SWS_UPE_REFUSED,
    SWS_UPE_UNREACHABLE,
    SWS_UPE_CONNECT_TIMEOUT,
    SWS_UPE_READ_TIMEOUT,
    SWS_UPE_RESET,     /* error or EOF before the response */
    SWS_UPE_TRUNCATED, /* closed mid-response */
    SWS_UPE_BAD_RESPONSE,
    SWS_UPE_OTHER,
    SWS_UPE_NONE_USABLE, /* every upstream down (health checks or max_fails) */
    SWS_UPE_TLS,         /* tls = on: handshake or verify failure, a TLS error mid-response */
    SWS_UPE_N
};

#define SWS_UP_LAT_BUCKETS 12

/* Written by the owning loop only, read by the control thread (relaxed). */
typedef struct sws_up_stats {
    sws_up_ctr connects;
    sws_up_ctr reuses;
    sws_up_ctr retries;
    sws_up_ctr idle; /* gauge: connections in the pool now */
    sws_up_ctr foreign_loop_uses;
    sws_up_ctr idle_closed; /* idle connections dropped: the upstream closed or spoke */
    sws_up_ctr handovers;   /* shared: taken by another loop than the one that pooled it */
    sws_up_ctr errors[SWS_UPE_N];
    sws_up_ctr lat[SWS_UP_LAT_BUCKETS + 1]; /* cumulative-free counts; last is +Inf */
    sws_up_ctr lat_sum_us;
    sws_up_ctr lat_count;
} sws_up_stats;

extern const uint32_t sws_up_lat_bounds_us[SWS_UP_LAT_BUCKETS];
extern const char *const sws_up_err_names[SWS_UPE_N];

/* PARKING: pool = shared, released for keeping while its receive was still
 * armed; it is detached once its last completion is in (sws_pool_park). */
enum sws_up_state {
    SWS_UP_FREE = 0,
    SWS_UP_CONNECTING,
    SWS_UP_BUSY,
    SWS_UP_IDLE,
    SWS_UP_CLOSING,
    SWS_UP_PARKING
};

/* One upstream connection: no buffer of its own. What it receives comes in
 * loop buffers through one multishot receive (tl_recv), which stays armed
 * while it is idle in the pool and is its watch (a close or stray bytes drop
 * it at once); what is sent to it is the exchange's (proxy.c). An idle pooled
 * connection is this struct and its socket. */
typedef struct sws_up_conn {
    uint32_t index;
    uint8_t state;
    uint8_t upstream;
    bool reused;    /* taken from the pool for the current exchange */
    bool got_bytes; /* a response byte arrived in the current exchange */
    bool read_armed;
    bool recv_paused; /* the receive was cancelled: the client has not taken what came */
    bool starved;     /* the receive ended with -ENOBUFS: re-armed by the tick */
    bool sent;        /* a byte of the current request was written */
    bool write_inflight;
    tl_handle h;
    tl_op read_op;
    tl_loop *owner; /* the loop that opened it: the only loop that may use it */
    uint64_t idle_since;
    struct sws_up_tls *tls; /* tls = on: its engine (upstream_tls.h), from its connect */
    /* The two 32-bit fields side by side: the pointer above costs no padding
     * and the struct stays 64 bytes (one cache line). */
    uint32_t sess; /* the client connection's slot, or UINT32_MAX */
    uint32_t wlen; /* bytes of the write in flight (plaintext, with TLS) */
} sws_up_conn;

typedef struct sws_pool {
    tl_loop *loop;
    const sws_proxy_config *cfg;
    sws_up_conn **slots; /* allocated on first use, reused afterwards */
    uint32_t nslots;
    uint32_t *free_idx;
    uint32_t nfree;
    uint32_t *idle[SWS_UPSTREAMS_MAX]; /* LIFO stacks of slot indices */
    uint32_t nidle[SWS_UPSTREAMS_MAX];
    uint32_t live;     /* slots not free */
    uint32_t nparking; /* PARKING slots (pool = shared) */
    uint32_t rr;
    uint32_t inflight[SWS_UPSTREAMS_MAX]; /* exchanges under way, for least_conn and p2c */
    bool draining;
    bool shared_user; /* counted among the shared pool's users */
    uint32_t inst;    /* the scenario instance in its completion tokens (token.h) */
    /* Its counters: per loop and route, kept by the worker for the control
     * thread (the route's instance may be replaced by a reload, its counters
     * go on). */
    sws_up_stats *st;
    /* tls = on (upstream_tls.h): the route's client context, the decrypt
     * scratch and the wire buffers lent while a write is in flight. */
    const struct sws_tls_client *tls;
    char *tls_plain;
    sws_lend tls_wire;
    bool tls_wire_init;
    /* The newest session of each upstream (its tickets), offered by the next
     * connection to it, so a new connection resumes instead of a full handshake. */
    struct ssl_session_st *tls_sess[SWS_UPSTREAMS_MAX];
    bool tls_logged;        /* a handshake failure was logged, at tls_logged_ms */
    uint64_t tls_logged_ms; /* (upstream_tls.c: one line per 10 s) */
} sws_pool;

/* nslots: the most connections it holds at once. inst: the instance whose
 * dispatch gets its completions; st: where it counts (outlives it). */
int sws_pool_init(sws_pool *p, tl_loop *loop, const sws_proxy_config *cfg, uint32_t nslots,
                  uint32_t inst, sws_up_stats *st);
void sws_pool_free(sws_pool *p);

/* A connection to upstream `upstream` (upstream_pick.h chooses it; -1: the
 * next in plain rotation) for session sess: an idle pooled one unless fresh,
 * else a new connect (state CONNECTING). Returns the slot or a negative errno. */
int sws_pool_acquire(sws_pool *p, uint32_t sess, bool fresh, int upstream_hint);

/* Ends an exchange: back to the pool when keep and there is room, else closed.
 * No write may be pending on it when keep is true. Per loop, an idle
 * connection keeps its receive armed (its watch); shared, it is detached
 * (after its receive is cancelled: PARKING). */
void sws_pool_release(sws_pool *p, sws_up_conn *u, bool keep);

/* Arms u's multishot receive (SWS_T_UP_READ). 0 or a negative errno. */
int sws_pool_recv(sws_pool *p, sws_up_conn *u);

/* A PARKING connection had a completion, or the tick: detach it into the
 * shared pool once it is quiet. */
void sws_pool_park(sws_pool *p, sws_up_conn *u);

/* An idle connection's receive completed with the -ECANCELED of a
 * back-pressure pause from its last answer: the watch is armed again and
 * true returned; false for anything else (then sws_pool_idle_event). */
bool sws_pool_idle_cancelled(sws_pool *p, sws_up_conn *u, const tl_completion *e);
/* The watch read of an idle connection completed (end of stream, an error or
 * bytes nobody asked for): it leaves the pool and is closed at once. */
void sws_pool_idle_event(sws_pool *p, sws_up_conn *u);

/* Idle connections in the shared pool now (pool = shared). Any thread. */
uint64_t sws_pool_shared_idle(void);

/* Closes idle connections older than idle_timeout (all of them when draining). */
void sws_pool_expire(sws_pool *p, uint64_t now);

/* The slot of a token's connection, or NULL when stale. */
sws_up_conn *sws_pool_conn(sws_pool *p, uint32_t index);

/* The TL_OP_CLOSE completion of a connection. */
void sws_pool_closed(sws_pool *p, uint32_t index);

void sws_up_observe_latency(sws_pool *p, uint64_t us);
void sws_up_error(sws_pool *p, enum sws_up_err kind);

#endif
