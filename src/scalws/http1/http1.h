/* HTTP/1.1 (server.c): the protocol under the exchange for a connection's
 * bytes. The transport reaches it through sws_http1_conn (conn.h); scenarios
 * through the exchange (exchange.h). */
#ifndef SWS_HTTP1_H
#define SWS_HTTP1_H

#include "conn.h"
#include "exchange.h"

extern const sws_conn_proto sws_http1_conn;

/* The output room a fixed answer of f takes (its framed head and body):
 * what a scenario answering with it sets w->resp_max to. */
size_t sws_http1_fixed_cap(const sws_fixed *f);

#endif
