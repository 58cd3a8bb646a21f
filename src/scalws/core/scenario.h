/* The scenario interface: what a worker asks of the scenario it serves, and
 * nothing else. A worker (worker.c) knows connections and loops; it never
 * names a scenario. Each scenario fills one sws_scenario_ops, as a backend
 * fills tl_backend_ops, and is listed once in scenario.c.
 *
 * Two kinds of scenario fill it:
 *  - those that answer HTTP requests on the worker's HTTP connection (conn.h:
 *    bytes in and out; http1.h: parser, limits, keep-alive; exchange.h: what
 *    a scenario sees of a request and gives of its answer) use sws_conn_open
 *    and friends for the connection hooks and fill `answer` (respond, static,
 *    proxy; the proxy also takes the request's fields and body: request_head...);
 *  - one that owned its connections whole would fill the connection hooks
 *    itself and leave `answer` NULL (none does now).
 *
 * Every hook runs on the worker's loop thread, except reload_refuses and
 * metrics, which the control thread calls. Hooks marked optional may be NULL. */
#ifndef SWS_SCENARIO_H
#define SWS_SCENARIO_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "exchange.h"
#include "token.h"
#include "turnloop.h"

struct sws_worker;
struct sws_server;
struct sws_conn;
typedef struct sws_scenario sws_scenario;

/* What `answer` returns. */
enum {
    /* The whole answer has been given. */
    SWS_ANSWER_DONE = 0,
    /* Its head has been given and more follows (a file body): the
     * connection reads no further request until the scenario calls
     * sws_ex_end. Meanwhile `more` is called each time what was queued has
     * been written out. */
    SWS_ANSWER_PENDING = 1,
};

typedef struct sws_scenario_ops {
    const char *name; /* as in [server] scenario */

    /* Handles the loop needs beyond max_connections and the listener for
     * every route of cfg with this scenario, asked once per scenario before
     * the loop exists (its ceiling is fixed at creation; a reload that would
     * need more is refused). Optional. */
    uint32_t (*extra_handles)(const sws_config *cfg);
    /* Per-loop state into sc->state, once the loop exists; also sets
     * w->resp_max when the scenario appends more than 512 bytes at once to a
     * connection's output. A negative errno fails the start. */
    int (*init)(struct sws_worker *w, sws_scenario *sc);
    /* After the loop is freed; also after a failed or partial init. */
    void (*free)(struct sws_worker *w, sws_scenario *sc);

    /* A connection this loop accepted or was handed, from listener (its
     * index in [server]'s listeners: whether it speaks TLS and HTTP/2). */
    void (*open)(struct sws_worker *w, sws_scenario *sc, tl_handle h, unsigned listener);
    /* A completion whose tag is not the worker's (>= SWS_T_SCENARIO_FIRST). */
    void (*dispatch)(struct sws_worker *w, sws_scenario *sc, const tl_completion *e);

    /* sws_ex_request(x) is a complete request head: answer it through the
     * exchange (exchange.h), at most w->resp_max bytes of head and body at
     * once, for which there is room. The protocol has counted the request.
     * Returns SWS_ANSWER_DONE (the answer is complete), SWS_ANSWER_PENDING
     * (more follows: `more`, then sws_ex_end), or a negative errno that
     * closes the connection. */
    int (*answer)(struct sws_worker *w, sws_scenario *sc, sws_exchange *x);
    /* After SWS_ANSWER_PENDING: what was queued has been written. Add the
     * next part (sws_ex_room) or, with nothing at hand yet, add nothing and
     * call sws_ex_more later; sws_ex_end when the answer is complete.
     * Optional (only for scenarios that return PENDING). */
    void (*more)(struct sws_worker *w, sws_scenario *sc, sws_exchange *x);
    /* The request as a whole, for a scenario that forwards it (the proxy);
     * all NULL for those that answer from the head alone (respond, static:
     * the protocol reads and drops a body). Before `answer`, in order:
     * request_head once its head is complete (sws_ex_request_head: every
     * field), request_body with its body's bytes as they come (decoded:
     * no chunk framing), request_end once it is complete (trailers are
     * dropped). Each returns 0, or an error status to answer with: the
     * connection ends after it. request_room: how many more request bytes it
     * takes now (as they come on the wire, an upper bound of the body bytes
     * they carry); 0 stops reading the client (back-pressure) until the
     * scenario calls sws_ex_more. The bytes of one read may come in several
     * request_body calls, which must not start sending (the room promised
     * holds for all of them); request_flush follows each such batch: send
     * what came. Optional (all five or none). */
    int (*request_head)(struct sws_worker *w, sws_scenario *sc, sws_exchange *x);
    int (*request_body)(struct sws_worker *w, sws_scenario *sc, sws_exchange *x, const char *data,
                        size_t len);
    int (*request_end)(struct sws_worker *w, sws_scenario *sc, sws_exchange *x);
    size_t (*request_room)(struct sws_worker *w, sws_scenario *sc, sws_exchange *x);
    void (*request_flush)(struct sws_worker *w, sws_scenario *sc, sws_exchange *x);
    /* The scenario may take an HTTP/1.1 connection over on an Upgrade
     * request (the proxy's tunnel): such a request does not end the
     * connection by itself; an answer other than 101 lets it go on as
     * HTTP with a fresh request reader. */
    bool upgrades;
    /* The HTTP connection's slot is freed (its close completed): drop what the
     * scenario holds for it (a file being sent). Optional. */
    void (*conn_end)(struct sws_worker *w, sws_scenario *sc, sws_exchange *x);

    /* The loop's rhythm. All optional. date_changed: once a second at most,
     * before the turn's completions are dispatched (a prebuilt Date header).
     * turn_done: after a turn's completions. sweep: once a second (100 ms
     * while draining), with the loop's clock; idle and slow connections. */
    void (*date_changed)(struct sws_worker *w, sws_scenario *sc);
    void (*turn_done)(struct sws_worker *w, sws_scenario *sc);
    void (*sweep)(struct sws_worker *w, sws_scenario *sc, uint64_t now);

    /* Draining (the listener is already closing): close what is idle, answer
     * the rest with Connection: close; force closes everything. */
    void (*drain)(struct sws_worker *w, sws_scenario *sc, bool force);
    /* True once the scenario holds no connection or handle of the loop. */
    bool (*finished)(const struct sws_worker *w, const sws_scenario *sc);

    /* Reload, on the control thread, before anything is posted: why the new
     * config cannot be served without a restart (written into buf), or NULL.
     * Optional. */
    const char *(*reload_refuses)(const struct sws_server *s, const sws_config *o,
                                  const sws_config *n, char *buf, size_t len);
    /* Reload, on the loop, step 1: build what the new config needs without
     * touching what serves now. A negative errno refuses it: this loop keeps
     * its old configuration. Optional. */
    int (*reload_prepare)(struct sws_worker *w, sws_scenario *sc, const sws_config *next);
    /* Reload, step 2: w->cfg, w->limits and w->logs are the new ones;
     * switch to them. Cannot fail. Optional. */
    void (*reload_commit)(struct sws_worker *w, sws_scenario *sc);

    /* Control thread: the scenario's lines of /metrics (Prometheus text),
     * from relaxed counters only. Optional. */
    void (*metrics)(const struct sws_server *s, FILE *f);
} sws_scenario_ops;

struct sws_route;
struct sws_routes;

/* A scenario instance serving on one loop: one per route (route_inst.c), so
 * the hooks take it explicitly. Its settings are its route's (cfg), never
 * w->cfg's scenario sections. */
struct sws_scenario {
    const sws_scenario_ops *ops;
    void *state;                 /* the scenario's per-loop state; owned by ops->init/free */
    const sws_scenario_cfg *cfg; /* its settings: its route's */
    const struct sws_route *route;
    /* reload_prepare's: what cfg and route become at reload_commit. */
    const sws_scenario_cfg *next_cfg;
    const struct sws_route *next_route;
    uint32_t id;       /* its number in completion tokens (token.h); 0: the loop's default */
    uint32_t pending;  /* connections whose answer it has not ended (SWS_ANSWER_PENDING) */
    uint32_t resp_max; /* what it set w->resp_max to */
    /* Retired by a reload: answers no new request, freed once it holds
     * nothing; table keeps route alive until then. */
    bool retired;
    struct sws_routes *table;
    struct sws_scenario *next_retired;
};

/* The ops of a configured scenario (scenario.c), never NULL. */
const sws_scenario_ops *sws_scenario_ops_of(sws_scenario_kind kind);
/* The handles every scenario of cfg's routes asks for beyond max_connections
 * and the listener (scenario.c). */
uint32_t sws_scenarios_extra_handles(const sws_config *cfg);

extern const sws_scenario_ops sws_respond_ops; /* respond.c */
extern const sws_scenario_ops sws_proxy_ops;   /* proxy.c */
/* The proxy's `metrics` hook (proxy_metrics.c). */
void sws_proxy_metrics(const struct sws_server *s, FILE *f);
extern const sws_scenario_ops sws_static_ops;   /* static/scenario.c */
extern const sws_scenario_ops sws_redirect_ops; /* redirect/redirect.c */

#endif
