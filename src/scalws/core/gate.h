/* The gate (gate.c): what a route asks of a request before its scenario
 * sees it (access_config.h): an allowed address, open connections and a
 * request rate within the client's limits (limiter.h), and a user of the
 * route's htpasswd file. A refused request is handed to the loop's gate
 * instance instead of its route's, which answers it (403, 401, 429 or 503)
 * once the protocol has read it; the route's counters and access log line
 * are the route's. Every function runs on the worker's loop thread. */
#ifndef SWS_GATE_H
#define SWS_GATE_H

#include "sws.h"

struct sockaddr;

/* scalwsd_limited_total's kinds. */
enum { SWS_LIMITED_RATE, SWS_LIMITED_CONN, SWS_LIMITED_DENY, SWS_LIMITED_AUTH, SWS_LIMITED_N };
extern const char *const sws_limited_names[SWS_LIMITED_N];

/* The gate instance's hooks (route_inst.c makes one per loop). */
extern const sws_scenario_ops sws_gate_ops;

/* sws_route_pick (sws.h) is the gate's: a gated route's instance when the
 * request passes, else the gate instance, which answers the refusal. */

/* The connection in slot conn opened (fd: its socket) or was freed: counted
 * for limit_conn while some route of the configuration has one. */
void sws_gate_conn_open(sws_worker *w, uint32_t conn, int fd);
void sws_gate_conn_close(sws_worker *w, uint32_t conn);
/* The same for a connection without a socket of its own (QUIC's), peer
 * entry conn (past the TCP slots: w->npeers) opened from sa. */
void sws_gate_conn_addr(sws_worker *w, uint32_t conn, const struct sockaddr *sa);

/* The gate for a request whose route's instance sc is chosen already (the
 * quic host's, by its listener's routes), the client being peer entry
 * entry: sc, or the gate instance that answers the refusal. */
sws_scenario *sws_gate_pick(sws_worker *w, sws_scenario *sc, const sws_exchange *x, uint32_t entry,
                            const sws_http_request *r);

/* After the instances of a configuration were made or switched: w->gate_on,
 * w->gate_conn and the fields the parsers keep, from w->cfg's routes. */
void sws_gate_settle(sws_worker *w);
/* A reload committed: refusals under way keep the old route table (their
 * route's name, realm and counters) until they are answered. */
void sws_gate_hold(sws_worker *w, struct sws_routes *old);
/* After a turn: the old tables go once no refusal is under way. */
void sws_gate_reap(sws_worker *w);

#endif
