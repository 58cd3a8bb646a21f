/* The HTTP/3 engine: one QUIC endpoint (ngtcp2, TLS 1.3 through GnuTLS)
 * with HTTP/3 (nghttp3) on it, whose requests become exchanges
 * (exchange.h) that a scenario answers as it answers HTTP/1.1 and HTTP/2.
 * The engine does no I/O of its own: its host hands it each datagram
 * (sws_h3_input) and writes what it asks to send (the send hook), asks when
 * it next wants the clock (sws_h3_next_expiry) and calls sws_h3_on_timer
 * then. One endpoint per loop, every function on that loop's thread.
 *
 * Connection IDs: every ID the server issues is SWS_H3_CID_LEN bytes, made
 * by the make_cid hook (the host's steering byte goes in there: see
 * doc/http3.md for the layout a reuseport program reads). Times are
 * CLOCK_MONOTONIC in nanoseconds (sws_h3_now). */
#ifndef SWS_HTTP3_H
#define SWS_HTTP3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "exchange.h"
#include "scenario.h"
#include "sws_http.h"

#define SWS_H3_CID_LEN 16
/* The default layout's steering byte: SCID[SWS_H3_CID_LOOP_BYTE] is the
 * loop's index, every other byte random. */
#define SWS_H3_CID_LOOP_BYTE 1
/* The largest datagram the engine writes or takes (QUIC's own bound is the
 * path's: 1200 bytes at least, probed upward by ngtcp2). */
#define SWS_H3_MAX_DATAGRAM 1452

typedef struct sws_h3_endpoint sws_h3_endpoint;

/* Writes one datagram from local to remote with the ECN codepoint ecn
 * (0-3). 0, or a negative errno: the datagram is dropped (QUIC recovers it
 * as a loss; -EAGAIN is counted as such). */
typedef int (*sws_h3_send_fn)(void *ud, const struct sockaddr *local, socklen_t local_len,
                              const struct sockaddr *remote, socklen_t remote_len, unsigned ecn,
                              const uint8_t *data, size_t len);
/* Fills a new connection ID of SWS_H3_CID_LEN bytes; it must be
 * unpredictable but for the bytes the host steers on. */
typedef void (*sws_h3_cid_fn)(void *ud, uint8_t *cid, size_t len);
/* The scenario instance that answers the request (its route), never NULL. */
typedef sws_scenario *(*sws_h3_route_fn)(void *ud, sws_exchange *x, const sws_http_request *req);
/* A connection from peer in slot (sws_h3_conn_slot) completed its
 * handshake (its address proven), or ended (peer NULL): for per-client
 * counts. */
typedef void (*sws_h3_peer_fn)(void *ud, uint32_t slot, const struct sockaddr *peer,
                               socklen_t peer_len);

typedef struct sws_h3_settings {
    const char *cert_file, *key_file; /* PEM, as [tls] cert and key */
    uint8_t loop_index;               /* for the default make_cid */
    sws_h3_cid_fn make_cid;           /* NULL: the default layout */
    void *cid_ud;
    sws_h3_send_fn send; /* required */
    void *send_ud;
    /* The worker the scenarios are given (its logs, when set, get a line
     * per request), and which scenario answers a request. */
    struct sws_worker *w;
    sws_h3_route_fn route; /* required */
    void *route_ud;
    sws_h3_peer_fn peer;      /* optional; called with route_ud */
    sws_http_limits limits;   /* [limits]: 414, 431, 413 as over HTTP/2 */
    uint32_t max_connections; /* 0: SWS_H3_DEFAULT_CONNECTIONS */
    /* Requests under way on the endpoint, all connections together (its
     * stream table, allocated once); past it a stream is refused with
     * H3_REQUEST_REJECTED, which a client may retry. 0: SWS_H3_DEFAULT_STREAMS. */
    uint32_t max_streams;
    /* sws_ex_id of the endpoint's exchanges: xid_base + their place in the
     * table (the host keeps the range apart from its TCP connections'). */
    uint32_t xid_base;
    uint64_t idle_timeout_ms; /* 0: SWS_H3_DEFAULT_IDLE_MS */
    /* The session ticket key (SWS_H3_TICKET_KEY_LEN bytes, copied), the
     * same for every loop's endpoint so that a session resumes on any of
     * them (sws_h3_ticket_key makes one); NULL: one of its own. */
    const uint8_t *ticket_key;
} sws_h3_settings;

#define SWS_H3_DEFAULT_CONNECTIONS 1024
#define SWS_H3_DEFAULT_IDLE_MS 30000
#define SWS_H3_DEFAULT_STREAMS 4096
#define SWS_H3_TICKET_KEY_LEN                                                                      \
    64 /* GnuTLS's master key, from which it derives its rotating keys                             \
        */

/* What an endpoint counted, for /metrics once it is wired in. */
typedef struct sws_h3_stats {
    uint64_t datagrams_in, datagrams_out, send_errors;
    uint64_t connections, streams, requests;
    uint64_t version_negotiations, stateless_resets, dropped;
    uint32_t open_connections;
    uint32_t open_streams; /* entries of the stream table in use */
    /* Request body bytes held now for scenarios that have no room for
     * them yet (at most one stream window per stream). */
    uint64_t body_held;
} sws_h3_stats;

/* A new endpoint: loads the certificate and key. 0, or a negative errno
 * with why in err. */
int sws_h3_endpoint_new(sws_h3_endpoint **out, const sws_h3_settings *s, char *err, size_t errlen);
/* SIGHUP: new connections are made with the certificate and key in these
 * files; those under way keep theirs (freed with the last of them). 0, or
 * a negative errno with why in err: the endpoint keeps what it had. */
int sws_h3_endpoint_reload(sws_h3_endpoint *ep, const char *cert_file, const char *key_file,
                           char *err, size_t errlen);
/* Closes every connection without a word (no CONNECTION_CLOSE) and frees. */
void sws_h3_endpoint_free(sws_h3_endpoint *ep);

/* One datagram that came from remote to local (the address it was sent to:
 * IP_PKTINFO), with its ECN bits. Whatever it is, it is judged here: a
 * malformed or unknown packet is dropped (or answered by a version
 * negotiation or a stateless reset), never an error of the host's. */
void sws_h3_input(sws_h3_endpoint *ep, const uint8_t *data, size_t len,
                  const struct sockaddr *remote, socklen_t remote_len, const struct sockaddr *local,
                  socklen_t local_len, unsigned ecn, uint64_t now);
/* When sws_h3_on_timer is next due (ns, CLOCK_MONOTONIC); UINT64_MAX: never. */
uint64_t sws_h3_next_expiry(const sws_h3_endpoint *ep);
void sws_h3_on_timer(sws_h3_endpoint *ep, uint64_t now);
/* Draining: every connection gets an HTTP/3 GOAWAY and no new stream or
 * connection is taken; streams under way finish, then each connection
 * closes. sws_h3_stats' open_connections says when all have. */
void sws_h3_drain(sws_h3_endpoint *ep);
sws_h3_stats sws_h3_stats_of(const sws_h3_endpoint *ep);

/* The slot of x's connection among the endpoint's (below its
 * max_connections), the one the peer hook was told of. */
uint32_t sws_h3_conn_slot(const sws_exchange *x);

/* A new random session ticket key into key (SWS_H3_TICKET_KEY_LEN bytes): 0
 * or -EIO. */
int sws_h3_ticket_key(uint8_t *key);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t sws_h3_now(void);

#endif
