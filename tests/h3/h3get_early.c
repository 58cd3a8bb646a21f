/* h3get --early: the second connection of --resume sends its requests in
 * 0-RTT, and again after the handshake when the server did not take them. */
#include "h3get.h"

/* Before the handshake: HTTP/3 and the requests on the transport
 * parameters the first connection's server gave, written as 0-RTT when the
 * ticket allows it (else they wait for 1-RTT and are sent again). */
int early_start(client *c, const ngtcp2_transport_params *tp) {
    ngtcp2_conn_set_early_remote_transport_params(c->q, tp);
    if (setup_h3(c) != 0)
        return -1;
    submit_more(c);
    return 0;
}

/* The server did not take them: ngtcp2 forgets the streams, and the
 * requests start again on a new HTTP/3 session after the handshake. */
int early_rejected(client *c) {
    nghttp3_conn_del(c->h);
    c->h = NULL; /* the streams' closes below reach no request */
    if (ngtcp2_conn_early_data_rejected(c->q) != 0)
        return -1;
    for (int i = 0; i < c->next; i++) {
        req *r = &c->reqs[i];
        r->started = false;
        r->sid = -1;
        r->posted = 0;
    }
    c->next = c->inflight = 0;
    return 0;
}
