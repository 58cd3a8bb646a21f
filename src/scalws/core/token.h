/* Completion tokens: every operation scalwsd starts on a loop carries one, and
 * the worker's dispatch routes the completion on it. Every tag of every part
 * (worker, HTTP connection, scenarios, upstream pool) is defined here, so that
 * two parts can never pick the same number.
 *
 *   bit 63 ........ 40 | 39 ............ 8 | 7 ..... 0
 *   instance (24 bits) |  index (32 bits)  |    tag
 *
 * The index is a slot of the part that owns the tag (a connection, a proxy
 * session, an upstream connection) or, for a post, the message kind. The
 * instance is the scenario instance (one per route, route_inst.c) whose
 * dispatch gets the completion; 0 is the loop's default one, which also owns
 * the HTTP connections. */
#ifndef SWS_TOKEN_H
#define SWS_TOKEN_H

#include <assert.h>
#include <stdint.h>

#define SWS_TOKEN_TAG_BITS 8
#define SWS_TOKEN_INDEX_BITS 32
#define SWS_TOKEN_INST_SHIFT (SWS_TOKEN_TAG_BITS + SWS_TOKEN_INDEX_BITS)
#define SWS_TOKEN_INST_MAX ((1u << 24) - 1)

enum sws_tag {
    /* The worker itself (worker.c, drain.c): 1..15. */
    SWS_T_ACCEPT = 1,
    SWS_T_ADOPT,
    SWS_T_SWEEP,
    SWS_T_POST,
    SWS_T_LISTENER_CLOSE,
    /* The quic listener (server/quic_host.c): its socket, sends (index: the
     * send buffer), datagrams forwarded from another loop, its timer
     * (index: the timer's generation). */
    SWS_T_UDP_RECV,
    SWS_T_UDP_SEND,
    SWS_T_UDP_FWD,
    SWS_T_UDP_CLOSE,
    SWS_T_QUIC_TIMER,
    /* Posts of the SIGUSR2 hand-over (server/quic_handover.c; index: what). */
    SWS_T_QUIC_RELAY,
    SWS_T_WORKER_LAST = 15,

    /* Everything from here up goes to the scenario's dispatch. */
    SWS_T_SCENARIO_FIRST = 16,
    /* The HTTP connection (respond, and any scenario that answers on it). */
    SWS_T_RECV = SWS_T_SCENARIO_FIRST,
    SWS_T_WRITE,
    SWS_T_CLOSE,
    SWS_T_FILE_READ,      /* static: a cold file read posted back by the loop's helper */
    SWS_T_CONN_LAST = 31, /* 19..31: free for an HTTP connection scenario (a file read) */

    /* The proxy scenario (proxy.c): its clients are HTTP connections. */
    SWS_T_PX_TICK = 32,
    /* The proxy's upstream pool (upstream.c). */
    SWS_T_UP_FIRST = 40,
    SWS_T_UP_CONNECT = SWS_T_UP_FIRST,
    SWS_T_UP_READ,
    SWS_T_UP_WRITE,
    SWS_T_UP_CLOSE,
    SWS_T_UP_LAST = 47,

    /* 48..255: free for new scenarios. */
    SWS_T_LAST = 255,
};

static_assert(SWS_T_LAST < (1u << SWS_TOKEN_TAG_BITS), "a tag must fit the token's tag bits");
static_assert(SWS_T_FILE_READ <= SWS_T_CONN_LAST, "HTTP connection tags overflow their range");
static_assert(SWS_T_PX_TICK < SWS_T_UP_FIRST, "proxy tags run into the pool's");
static_assert(SWS_T_UP_CLOSE <= SWS_T_UP_LAST, "pool tags overflow their range");

static inline uint64_t sws_token(uint32_t index, unsigned tag) {
    return ((uint64_t)index << SWS_TOKEN_TAG_BITS) | (uint64_t)(tag & 0xffu);
}
/* A token for scenario instance inst (0: the default one, as sws_token). */
static inline uint64_t sws_token_of(uint32_t inst, uint32_t index, unsigned tag) {
    return (uint64_t)(inst & SWS_TOKEN_INST_MAX) << SWS_TOKEN_INST_SHIFT | sws_token(index, tag);
}
static inline uint32_t sws_token_inst(uint64_t t) {
    return (uint32_t)(t >> SWS_TOKEN_INST_SHIFT);
}
static inline uint32_t sws_token_index(uint64_t t) {
    return (uint32_t)(t >> SWS_TOKEN_TAG_BITS);
}
static inline unsigned sws_token_tag(uint64_t t) {
    return (unsigned)(t & 0xffu);
}
static inline int sws_tag_is_worker(unsigned tag) {
    return tag < SWS_T_SCENARIO_FIRST;
}

/* Posts from the control thread (tl_loop_post on sws_token(KIND, SWS_T_POST)):
 * the index says what the message is. */
enum sws_post {
    SWS_POST_CONTROL = 0, /* value: SWS_MSG_DRAIN or SWS_MSG_FORCE */
    SWS_POST_RELOAD = 1,  /* value: the new const sws_config * (reload.c) */
    SWS_POST_LOGS = 2,    /* value: the reopened sws_log_files * (log_reopen.c) */
};
enum { SWS_MSG_DRAIN = 1, SWS_MSG_FORCE = 2 };

#endif
