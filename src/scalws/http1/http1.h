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

/* The HTTP/1.1 exchange x, answering an Upgrade request, switches
 * protocols (RFC 9110 15.2.2): a's head (101, its Upgrade and Connection
 * among its fields) goes into the output, the request's parser and route are
 * given back, and the connection is handed to `to` (sws_conn_switch): every
 * later byte is its. 0; -EPROTO when x is not an HTTP/1.1 exchange whose
 * answer is pending on an open connection (or a drain made this answer the
 * last); -ENOSPC or -ENOMEM. */
int sws_h1_switch(struct sws_worker *w, sws_exchange *x, const sws_answer *a,
                  const sws_conn_proto *to);

#endif
