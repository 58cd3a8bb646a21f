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

/* What the endpoint makes each new connection with: the [http3] keys
 * (doc/http3.md). sws_h3_params_default gives the defaults. */
typedef struct sws_h3_params {
    uint32_t max_streams_bidi; /* requests at once per connection (MAX_STREAMS) */
    uint64_t stream_window;    /* a request body's flow-control window (and the uni streams') */
    uint64_t conn_window;      /* a connection's */
    uint64_t qpack_table;      /* the QPACK dynamic table a client may use for its requests */
    uint32_t qpack_blocked;    /* streams that may wait on it */
    uint64_t idle_timeout_ms;
    /* Connections at once; a client's Initial past it is dropped. */
    uint32_t max_connections;
    /* 0-RTT (RFC 9001 4.6): tickets allow early data, which GnuTLS's
     * anti-replay takes once within early_window_ms (the ticket's age and the
     * replay memory); a request that came in it with a method other than
     * GET, HEAD or OPTIONS is answered 425 (RFC 8470). Off: no ticket offers it. */
    bool early_data;
    uint32_t early_window_ms;
} sws_h3_params;

#define SWS_H3_DEFAULT_STREAMS_BIDI 100
#define SWS_H3_DEFAULT_STREAM_WINDOW (256 * 1024)
#define SWS_H3_DEFAULT_CONN_WINDOW (1024 * 1024)
#define SWS_H3_DEFAULT_QPACK_TABLE 4096
#define SWS_H3_DEFAULT_QPACK_BLOCKED 100
#define SWS_H3_DEFAULT_CONNECTIONS 1024
#define SWS_H3_DEFAULT_IDLE_MS 30000
#define SWS_H3_DEFAULT_EARLY_WINDOW_MS 10000
#define SWS_H3_DEFAULT_STREAMS 4096

void sws_h3_params_default(sws_h3_params *p);

/* One certificate and its key (PEM), as a [tls] or [tls NAME] section
 * names them. The names it serves are its own (subjectAltName DNS entries,
 * else the subject's CN); certificates holding the same names are one set,
 * from which GnuTLS takes the one the client's signature algorithms allow
 * (RSA beside ECDSA). */
typedef struct sws_h3_cert {
    const char *cert_file, *key_file;
    const char *ocsp_file; /* a DER OCSP response stapled with it; NULL or "": none */
    bool is_default;       /* served for an unknown or absent server name */
    bool optional;         /* ACME's to make: not served until its files load */
} sws_h3_cert;

/* The replay memory of 0-RTT (early.c): the ClientHellos whose early data
 * was taken, each until its window ends, shared by the endpoints of a
 * process because a replayed ClientHello may reach any loop. Any thread. */
typedef struct sws_h3_replay sws_h3_replay;
/* A new one (one reference), NULL without memory. */
sws_h3_replay *sws_h3_replay_new(void);
void sws_h3_replay_unref(sws_h3_replay *r);

typedef struct sws_h3_settings {
    /* The certificates, chosen by the ClientHello's server name; the
     * default is the one marked so, else the first. ncerts 0: cert_file
     * and key_file alone. */
    const sws_h3_cert *certs;
    uint32_t ncerts;
    bool refuse_unknown; /* no certificate for an unknown name: alert unrecognized_name */
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
    sws_h3_peer_fn peer;         /* optional; called with route_ud */
    sws_http_limits limits;      /* [limits]: 414, 431, 413 as over HTTP/2 */
    const sws_h3_params *params; /* NULL: sws_h3_params_default */
    sws_h3_replay *replay;       /* the process's (a reference is taken); NULL: one of its own */
    /* Requests under way on the endpoint, all connections together (its
     * stream table, allocated once); past it a stream is refused with
     * H3_REQUEST_REJECTED, which a client may retry. 0: SWS_H3_DEFAULT_STREAMS. */
    uint32_t max_streams;
    /* sws_ex_id of the endpoint's exchanges: xid_base + their place in the
     * table (the host keeps the range apart from its TCP connections'). */
    uint32_t xid_base;
    /* The session ticket key (SWS_H3_TICKET_KEY_LEN bytes, copied), the
     * same for every loop's endpoint so that a session resumes on any of
     * them (sws_h3_ticket_key makes one); NULL: one of its own. */
    const uint8_t *ticket_key;
    /* The secret stateless reset tokens are derived from
     * (SWS_H3_RESET_SECRET_LEN bytes, copied); NULL: drawn here. A host
     * that restarts gives the new process's endpoint the old one's, so that
     * the old process's connections can be reset once it is gone. */
    const uint8_t *reset_secret;
} sws_h3_settings;

#define SWS_H3_RESET_SECRET_LEN 32
#define SWS_H3_TICKET_KEY_LEN                                                                      \
    64 /* GnuTLS's master key, from which it derives its rotating keys                             \
        */

/* What an endpoint counted, for /metrics. */
typedef struct sws_h3_stats {
    uint64_t datagrams_in, datagrams_out, send_errors;
    uint64_t connections, streams, requests;
    uint64_t version_negotiations, stateless_resets, dropped;
    /* Loss recovery as ngtcp2 0.12 shows it (it keeps no connection-wide
     * count of lost packets): packets carrying a stream's data that it
     * declared lost, summed per stream as the stream closes (a packet with
     * two streams' data counts for each; handshake and ACK-only packets not
     * at all), whose frames it sent again; probe timeouts that fired (a
     * tail loss: no ACK came in time); congestion events (a loss or an
     * ECN-CE mark that began a recovery period, the window cut). */
    uint64_t stream_packets_lost, probe_timeouts, congestion_events;
    /* Now, over the open connections: bytes sent and not yet acknowledged,
     * and the mean smoothed RTT (ns) of those with an RTT sample (0: none). */
    uint64_t bytes_in_flight, smoothed_rtt_ns;
    uint64_t early_connections; /* whose 0-RTT was taken */
    uint64_t too_early;         /* requests answered 425 (RFC 8470) */
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
/* The same for a set of certificates chosen by name (as sws_h3_settings'
 * certs): all of them load (but optional ones not there yet), or the
 * endpoint keeps what it had. */
int sws_h3_endpoint_reload_certs(sws_h3_endpoint *ep, const sws_h3_cert *certs, uint32_t ncerts,
                                 bool refuse_unknown, char *err, size_t errlen);
/* SIGHUP: the [http3] keys and [limits] for the connections made from now
 * on (and the limits for every stream whose head comes from now on); those
 * under way keep the transport parameters and SETTINGS they announced.
 * Tickets issued before a change of what a client's 0-RTT relies on (the
 * windows, the stream limit, the QPACK settings, the field section size)
 * take no more early data (RFC 9000 7.4.1, RFC 9114 7.2.4.2). */
void sws_h3_endpoint_tune(sws_h3_endpoint *ep, const sws_h3_params *p,
                          const sws_http_limits *limits);
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
/* The drain's timeout: every connection closes now (CONNECTION_CLOSE
 * H3_NO_ERROR, after its GOAWAY) and its streams end, each scenario told
 * (conn_end): a tunnel or a proxied answer still under way lets go of its
 * upstream, so that the loop can finish. */
void sws_h3_close_all(sws_h3_endpoint *ep);
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
