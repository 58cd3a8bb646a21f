/* The proxy's parts shared by its files (proxy.c: the scenario's hooks,
 * upstream completions and the tick; proxy_exchange.c: an exchange's life,
 * from the request's head to the answer's end). Loop thread only. */
#ifndef SWS_PROXY_H
#define SWS_PROXY_H

#include <assert.h>
#include <time.h>

#include "client_head.h"
#include "conn.h"
#include "route.h"
#include "sws.h"
#include "sws_msg.h"
#include "upstream.h"
#include "upstream_health.h"
#include "upstream_pick.h"
#include "upstream_tls.h"
#include "ws_key.h"

#define PX_TICK_MS 100
/* What goes upstream: the rewritten head and the body. Bytes written stay
 * as the retry copy while the request has sent at most PX_REPLAY bytes. */
#define PX_OBUF 40960
#define PX_REPLAY 16384
/* Room kept for a rewritten head (at most SWS_MSG_HEAD_MAX plus the added
 * fields) and chunk framing, on top of what is fed. */
#define PX_SLACK 9216
/* w->resp_max: the longest part appended at once is one loop buffer's worth
 * plus PX_SLACK; the connection's output (4 x resp_max) holds 40 KiB. */
#define PX_RESP_MAX 10240
/* A request is held until it is complete, or until this much of it waits: a
 * fault that the strict parser finds late in a request that fits never
 * reaches the upstream at all. */
#define PX_UP_HOLD (PX_OBUF - 16384 - PX_SLACK)
/* Upstream buffers an exchange holds before its receive is paused. */
#define PX_HELD_MAX 4
/* Free exchanges kept beyond the last second's peak. */
#define PX_X_CACHE 4

/* A route's head is handed over whole once the route is chosen (conn.h): a
 * request not begun must find that much room. */
static_assert(PX_OBUF - PX_SLACK >= SWS_ROUTE_STASH, "a routed head must fit an exchange");

struct sws_proxy;

/* One request and its answer, from its first byte to its answer's end. */
typedef struct px_x {
    struct px_x *prev, *next; /* in flight (px->live), or the free list (next) */
    struct sws_proxy *px;
    sws_exchange *c; /* the client's exchange */
    uint32_t up;     /* pool slot, or SWS_NIL */
    uint64_t up_deadline;
    uint64_t t0_us;
    int resp_status;     /* of the answer being streamed, for the access log */
    uint64_t resp_bytes; /* body bytes of it so far (decoded, before our framing) */
    int up_end;          /* with has_end: the upstream's final receive result (0: EOF) */
    bool has_end;        /* ... waiting behind held buffers */
    bool wfail;          /* a write could not be started: failed at the next tick */
    bool req_done, answering, req_head, req_streams, req_http10, idem;
    bool resp_started, resp_info, resp_up_ka, retried, replay_over;
    bool head_names_up; /* the head sent names its upstream (Host): no retry elsewhere */
    bool head_seen;     /* the request's head was complete */
    uint8_t log_up;     /* the last upstream tried, + 1 (0: none), for the access log */
    bool upgrading;     /* its Upgrade went upstream: a 101 makes a tunnel */
    bool switched;      /* the 101 came: the tunnel has the connections */
    /* An HTTP/2 extended CONNECT (RFC 8441): the client's stream is the
     * tunnel, asked upstream as an HTTP/1.1 upgrade; x lives as long as it. */
    bool connect;
    bool tunnel_open; /* ... the upstream's 101 came: bytes pass as they are, both ways */
    bool up_fin;      /* ... the client's END_STREAM was passed on as a half-close */
    char ws_key[SWS_WS_KEY_LEN + 1]; /* the Sec-WebSocket-Key sent up ("": none) */
    uint32_t fed;          /* bytes of the last up_feed's input read (past them: the tunnel's) */
    uint32_t hhead, htail; /* upstream input not yet fed (w->hpool), oldest first */
    uint32_t hcount;
    uint32_t olen, wpos; /* obuf: filled, and written (the retry copy is [0, olen)) */
    sws_msg resp;
    char obuf[PX_OBUF];
} px_x;

/* The access log's upstream fields (w->log_up_*) for x's line: set before
 * the call that writes it, cleared after. */
void px_log_up(struct sws_proxy *px, const px_x *x);
void px_log_up_end(struct sws_proxy *px);

/* Per connection slot of the loop, shared by the loop's proxy instances
 * (one per proxy route): a connection has one exchange at a time, whichever
 * route serves it, and one peer. */
typedef struct px_slot {
    px_x *x;             /* its exchange, or NULL */
    struct px_tunnel *t; /* or its tunnel (tunnel.c) once a 101 came */
    uint64_t h;          /* the connection peer was looked up for (sws_ex_mark): slots are reused */
    char peer[48];       /* its address, for X-Forwarded-For; "" not looked up */
} px_slot;

struct sws_px_shared {
    uint32_t refs; /* proxy instances of the loop using it */
    uint32_t nslots;
    px_slot s[];
};

typedef struct sws_proxy {
    sws_worker *w;
    sws_scenario *sc; /* the instance this is the state of: its route, its id */
    /* The configuration served: its route's [proxy] keys, the one pointer
     * everything reads them by (set at init and reload_commit). */
    const sws_proxy_config *pc;
    sws_pool pool;
    sws_pick_state pick;
    sws_up_health *health;    /* its route's, the server's; NULL only in unit tests */
    struct sws_px_shared *sh; /* w->px_shared */
    px_x *live;
    px_x *free;
    struct px_tunnel *tunnels; /* open tunnels (tunnel.c) */
    uint32_t nfree, used, peak;
    bool in_more; /* inside the `more` hook: the connection flushes on return */
    bool tick_armed;
    uint64_t last_expire;
} sws_proxy;

static inline uint64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static inline sws_up_conn *up_of(px_x *x) {
    return x->up == SWS_NIL ? NULL : x->px->pool.slots[x->up];
}

/* How long the upstream may keep x waiting: read_timeout for an answer,
 * tunnel_idle_timeout once x is a tunnel (no byte either way). */
static inline uint64_t px_wait_ms(const sws_proxy *px, const px_x *x) {
    return x->tunnel_open ? px->pc->tunnel_idle_timeout_ms : px->pc->read_timeout_ms;
}

/* tls = on and the handshake not done: its deadline is connect_timeout from
 * the connect, which nothing else moves. */
static inline bool handshaking(const sws_up_conn *u) {
    return u && u->tls && !sws_up_tls_established(u);
}

static inline px_slot *slot_of(const sws_proxy *px, const sws_exchange *c) {
    return &px->sh->s[sws_ex_id(c)];
}

/* proxy_exchange.c */
px_x *px_x_take(sws_proxy *px, sws_exchange *c);
void px_x_give(sws_proxy *px, px_x *x, bool keep);
void px_x_trim(sws_proxy *px);
px_x *px_x_of_up(sws_proxy *px, const sws_up_conn *u);
int px_req_head(px_x *x, const sws_head *m);
void px_flush_up(sws_proxy *px, px_x *x);
void px_up_fail(sws_proxy *px, px_x *x, enum sws_up_err kind, int status);
bool px_x_progress(sws_proxy *px, px_x *x);
const char *px_peer_of(const sws_proxy *px, const sws_exchange *c);
/* An extended CONNECT's tunnel: the client ended its side and every byte
 * it sent is written: the upstream is told (a half-close). */
void px_connect_fin(struct sws_proxy *px, px_x *x);
/* The exchange ends without its answer's end (a tunnel idle or reset, a
 * write failed, an upstream cut mid-answer): logged, the client's answer
 * aborted (a stream reset, a connection closed), the upstream closed. x is
 * gone. */
void px_cut(struct sws_proxy *px, px_x *x);
/* put_up for sws_h1c_body: what goes upstream, into the exchange's buffer. */
int px_put_up_cb(void *user, const char *d, size_t n);

/* tunnel.c: the byte tunnel an upgrade becomes. */
/* The upstream answered 101 to x's Upgrade: a's head goes to the client and
 * both connections become the tunnel's (x->switched; x keeps no upstream).
 * 0, or a negative errno (nothing was written: the caller answers 502). */
int px_tunnel_begin(sws_proxy *px, px_x *x, const sws_answer *a);
/* After the 101's last byte was read: rest (what the upstream sent after
 * it) and x's held buffers go to the client through the tunnel; x is given
 * back. */
void px_tunnel_adopt(sws_proxy *px, px_x *x, const char *rest, size_t n);
/* The tunnel u belongs to, or NULL. */
struct px_tunnel *px_tunnel_of_up(sws_proxy *px, const sws_up_conn *u);
/* A completion of the tunnel's upstream connection. */
void px_tunnel_dispatch(sws_proxy *px, struct px_tunnel *t, sws_up_conn *u, const tl_completion *e);
/* The instance is freed (the process ends): the tunnels' memory goes. */
void px_tunnel_free_all(sws_proxy *px);

#endif
