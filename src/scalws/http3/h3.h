/* HTTP/3's parts, shared between its files only: endpoint.c (datagrams in,
 * connection IDs, version negotiation, stateless resets, the timers),
 * quic.c (one QUIC connection on ngtcp2 and GnuTLS: its packets out and
 * its end), session.c (nghttp3 on a connection: streams into requests) and
 * answer.c (the exchange's functions: answers into HTTP/3). Every function
 * runs on the endpoint's loop thread. */
#ifndef SWS_H3_H
#define SWS_H3_H

#include "http3.h"

#include <gnutls/gnutls.h>
#include <nghttp3/nghttp3.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <sys/socket.h>

/* The engine's own constants (the rest are [http3] keys: sws_h3_params). */
#define H3_BODY_RING (64 * 1024) /* a streamed answer's bytes not yet acknowledged */
#define H3_BURST 64              /* datagrams one connection writes per turn */
#define H3_CLOSE_RESENDS 8       /* CONNECTION_CLOSE answers to a closed peer */

typedef struct h3_conn h3_conn;

/* The certificates as GnuTLS loaded them (certs.c): one credentials per
 * set of names, the name table to find a ClientHello's set, shared by the
 * endpoint (for new connections) and by every connection made with it: a
 * reload gives the endpoint another, and this one is freed with its last
 * connection. */
struct sws_tls_names;
typedef struct h3_cred {
    gnutls_certificate_credentials_t *sets; /* nsets; sets[def] for an unknown name */
    uint32_t nsets, def;
    struct sws_tls_names *names; /* name -> set */
    bool refuse_unknown;
    uint32_t refs;
} h3_cred;

/* One request and its answer: the exchange a scenario is given. From the
 * endpoint's stream table; its place there is its exchange id. */
typedef struct h3_stream {
    sws_exchange ex; /* first: the exchange functions find the stream from it */
    h3_conn *hc;
    struct h3_stream *prev, *next; /* the connection's streams */
    int64_t id;
    uint32_t gen; /* bumped at each reuse: the exchange's mark */
    sws_scenario *sc;
    bool used : 1;
    bool routed : 1;
    bool head_done : 1;
    bool req_end : 1;
    bool authority : 1;
    bool answering : 1;
    bool asked : 1; /* its scenario's answer was called: its conn_end is owed */
    bool in_answer : 1;
    bool pending : 1;   /* the scenario answers asynchronously */
    bool submitted : 1; /* the head is with nghttp3 */
    bool nobody : 1;    /* HEAD, 1xx, 204, 304 */
    bool ended : 1;     /* the body is all given */
    bool deferred : 1;  /* the data reader waits for body bytes */
    bool more_due : 1;  /* room came back: the scenario's `more` is owed */
    bool want_more : 1; /* the scenario waits for room */
    bool logged : 1;
    bool early : 1; /* its head came in 0-RTT */
    /* the request as a whole, for a scenario that takes it (the proxy) */
    bool keep_fields : 1; /* every field is kept: a route's scenario may take the request */
    bool takes_body : 1;  /* its route's scenario takes the request (request_head ...) */
    bool took : 1;        /* its request_head was called */
    bool flush : 1;       /* body bytes went to the scenario: its request_flush is owed */
    bool feed : 1;        /* the scenario has room again (sws_ex_more): held bytes owed */
    bool end_due : 1;     /* the body ended behind held bytes: request_end owed */
    bool stop_due : 1;    /* its body is not wanted: STOP_SENDING owed */
    bool cancel_due : 1;  /* the client gave the request up (reset, STOP_SENDING) */
    bool stopped : 1;     /* no more of its body is read */
    bool expect : 1;      /* Expect: 100-continue */
    bool abort_due : 1;   /* sws_ex_abort: reset once the body given is acknowledged */
    bool fin_due : 1;     /* its FIN is ours to write (quic.c's fin_flush) */
    /* An extended CONNECT (RFC 9220, :protocol): answered from its head on,
     * its DATA both ways the tunnel's bytes; FIN is the tunnel's half-close,
     * a reset its abort (H3_REQUEST_CANCELLED). */
    bool tunnel : 1;
    uint16_t refuse; /* an error status to answer instead of the scenario */
    uint16_t status;
    uint32_t hbytes, hcount;
    uint64_t content_length; /* declared; UINT64_MAX: none */
    uint64_t body_in;
    /* Body bytes the scenario has no room for yet: their flow-control
     * credit is given back only as it takes them, so the client cannot
     * send past one stream window ([http3] stream_window) of them. */
    char *held;
    uint32_t held_off, held_len, held_cap;
    uint64_t sent; /* body bytes given to nghttp3 */
    /* A fixed answer's body (respond's, or our error's note), sent from
     * where it is. */
    const char *fixed;
    uint64_t fixed_left;
    /* A streamed body: a ring of H3_BODY_RING, bytes [acked, written)
     * kept until the client acknowledges them (nghttp3 points into it). */
    char *ring;
    uint64_t written, given, acked;
    uint64_t origin; /* the body offset at the ring's start (moved while it is empty) */
    char note[48];
    uint64_t start_ns;
    sws_http_request req;
    /* With keep_fields: every field of the head (names and values in
     * nghttp3's buffers, referenced), and the head a taking scenario reads. */
    sws_field *f;
    nghttp3_rcbuf **rc; /* 2 * fcap: each field's name and value */
    uint16_t nf, fcap;
    sws_head head;
} h3_stream;

/* GnuTLS's anti-replay state (early.c), held by the endpoint and by each
 * connection whose session points at it. */
typedef struct h3_ar {
    gnutls_anti_replay_t ar;
    uint32_t refs;
} h3_ar;

struct h3_conn {
    sws_h3_endpoint *ep;
    h3_conn *prev, *next;
    ngtcp2_conn *q;
    ngtcp2_crypto_conn_ref ref;
    gnutls_session_t tls;
    h3_cred *cred; /* what tls was made with (a reference) */
    h3_ar *ar;     /* its session's anti-replay state (a reference), NULL without 0-RTT */
    nghttp3_conn *h;
    uint64_t id; /* the exchange mark's connection number */
    struct sockaddr_storage local, remote;
    socklen_t local_len, remote_len;
    ngtcp2_cid odcid; /* the client's first Destination CID, in the table */
    ngtcp2_connection_close_error err;
    h3_stream *streams;
    uint32_t nstreams;
    bool closing : 1;   /* our CONNECTION_CLOSE is out: close_pkt answers */
    bool draining : 1;  /* the peer closed: silence until close_at */
    bool goaway : 1;    /* the endpoint drains: GOAWAY sent */
    bool more_due : 1;  /* a stream's `more` is owed */
    bool body_due : 1;  /* a stream's request side has work (h3_stream's flush ... cancel_due) */
    bool peer_told : 1; /* the host's peer hook knows it (its handshake completed) */
    bool dead : 1;      /* freed at the end of the current call */
    bool rx_early : 1;  /* the stream data being read came in 0-RTT */
    uint32_t slot;      /* its place among the endpoint's connections (sws_h3_conn_slot) */
    uint64_t stream_window, idle_timeout_ms; /* the [http3] keys it was made with */
    uint32_t fin_due;                        /* its streams with fin_due */
    uint8_t resends;
    /* ngtcp2's recovery state as last seen, to count what changed in it:
     * its successive PTOs, the start of its recovery period (UINT64_MAX:
     * none yet). */
    size_t pto_seen;
    uint64_t recovery_seen;
    /* A probe timeout fired and pacing held its probe back: until the
     * probe is out (or probe_until), the timer writes without firing the
     * PTO again (quic.c, h3_conn_timer), every millisecond from probe_at. */
    bool probe_held;
    uint64_t probe_at, probe_until;
    uint32_t close_count; /* packets seen while closing */
    uint64_t close_at;
    uint8_t *close_pkt;
    size_t close_len;
};

/* Connection IDs to connections: chained buckets, grown by doubling. */
typedef struct h3_cid_entry {
    struct h3_cid_entry *next;
    h3_conn *hc;
    uint8_t len;
    uint8_t cid[NGTCP2_MAX_CIDLEN];
} h3_cid_entry;

struct sws_h3_endpoint {
    sws_h3_settings s;
    sws_h3_params p; /* s.params points here */
    h3_cred *cred;   /* for new connections (a reference) */
    /* 0-RTT: GnuTLS's anti-replay (its window and recording start), made
     * again when what tickets promised changes; its memory is shared. */
    h3_ar *ar;             /* NULL while 0-RTT has never been on */
    sws_h3_replay *replay; /* a reference */
    uint64_t promised;     /* a hash of what 0-RTT relies on (sws_h3_endpoint_tune) */
    gnutls_datum_t ticket_key;
    uint8_t reset_secret[32]; /* stateless reset tokens of our CIDs */
    h3_cid_entry **buckets;
    uint32_t nbuckets, ncids;
    h3_conn *conns;
    uint64_t next_conn_id;
    bool draining;
    uint32_t depth; /* inside input/on_timer: a scenario's call does not write */
    /* The request fields the static and redirect scenarios read (the whole
     * target, validators, ranges: req.sf_fields), SWS_HTTP_SF_STORAGE per
     * stream of the table; made when the worker first lends them (w->lend_sf). */
    char *sf_store;
    /* The access log's Referer and User-Agent (req.log_fields),
     * SWS_HTTP_LOG_STORAGE per stream; made when the worker first logs. */
    char *log_store;
    /* Connection slots (h3_conn.slot) not in use: max_connections of them. */
    uint32_t *free_slots;
    uint32_t nfree_slots, nslots;
    sws_h3_stats st;
    sws_date_cache date;
    h3_stream *table; /* nstreams entries */
    uint32_t *free_idx;
    uint32_t ntable, nfree;
    nghttp3_nv *nva; /* an answer's head being built */
    uint32_t nva_cap;
    char *low; /* its lowercased names */
    uint32_t low_cap;
    nghttp3_callbacks h3cb;
    uint8_t tx[SWS_H3_MAX_DATAGRAM];
};

static inline h3_stream *stream_ofx(sws_exchange *x) {
    return (h3_stream *)x;
}
static inline const h3_stream *cstream_ofx(const sws_exchange *x) {
    return (const h3_stream *)x;
}

/* certs.c */
/* The certificates loaded; 0, or a negative errno with why in err. */
int h3_cred_load(h3_cred **out, const sws_h3_cert *certs, uint32_t ncerts, bool refuse_unknown,
                 char *err, size_t errlen);
void h3_cred_unref(h3_cred *c);
/* The session's certificate chosen by its ClientHello's server name
 * (the session's pointer is its connection's ref). 0 or -EINVAL. */
int h3_cred_attach(h3_cred *c, gnutls_session_t tls);

/* early.c */
/* 0-RTT on a new connection's session when the endpoint takes it (the
 * connection holds the anti-replay state). 0 or -EINVAL. */
int h3_early_session(h3_conn *hc);
/* The process's replay memory held (settings.replay), at the endpoint's start. */
void h3_early_init(sws_h3_endpoint *ep);
/* A new anti-replay state for the endpoint's window, its recording from
 * now (again after a change of what tickets promised). 0 or -ENOMEM: the
 * endpoint keeps the one it had. */
int h3_early_start(sws_h3_endpoint *ep);
void h3_ar_unref(h3_ar *a);

/* endpoint.c */
int h3_cid_add(sws_h3_endpoint *ep, const uint8_t *cid, size_t len, h3_conn *hc);
void h3_cid_del(sws_h3_endpoint *ep, const uint8_t *cid, size_t len);
void h3_make_cid(sws_h3_endpoint *ep, uint8_t *cid);
int h3_send(sws_h3_endpoint *ep, const ngtcp2_path *path, unsigned ecn, const uint8_t *data,
            size_t len);

/* quic.c */
/* A connection for the client's Initial hd (NULL when it cannot be made). */
h3_conn *h3_conn_new(sws_h3_endpoint *ep, const ngtcp2_pkt_hd *hd, const ngtcp2_path *path,
                     uint64_t now);
/* One packet of the connection's: read, then what it owes written. */
void h3_conn_read(h3_conn *hc, const ngtcp2_path *path, unsigned ecn, const uint8_t *data,
                  size_t len, uint64_t now);
/* Writes what is due (stream data, ACKs, retransmissions). */
void h3_conn_write(h3_conn *hc, uint64_t now);
uint64_t h3_conn_expiry(h3_conn *hc);
void h3_conn_timer(h3_conn *hc, uint64_t now);
/* Ends the connection with an application error (H3_*), CONNECTION_CLOSE out. */
void h3_conn_close_app(h3_conn *hc, uint64_t code, uint64_t now);
void h3_conn_free(h3_conn *hc);
/* A scenario moved a stream outside the engine's own calls: write now. */
void h3_conn_kick(h3_conn *hc);

/* session.c */
/* nghttp3 on the connection, once 1-RTT keys are there. */
int h3_session_start(h3_conn *hc);
/* The request is complete (or refused): its scenario answers it, or we do
 * with the refusal's status. */
void h3_answer_request(h3_conn *hc, h3_stream *st);
/* A hook of the scenario (or a limit) refused the request with status. */
void h3_request_refuse(h3_conn *hc, h3_stream *st, int status);
/* Streams whose room came back get their scenario's `more`. */
void h3_session_more(h3_conn *hc);
/* The stream's entry back to the table. */
void h3_stream_free(h3_conn *hc, h3_stream *st);
/* Draining: GOAWAY (nghttp3_conn_shutdown). */
void h3_session_goaway(h3_conn *hc);

/* request_body.c */
/* n bytes of stream id are done with: the client may send as many more. */
void h3_credit(h3_conn *hc, int64_t id, size_t n);
/* Whether the stream's scenario takes its body now. */
bool h3_body_taking(const h3_stream *st);
/* Body bytes of the stream: to its scenario, held, or dropped. */
void h3_body_recv(h3_conn *hc, h3_stream *st, const uint8_t *data, size_t len);
/* The body ended (a scenario takes it): request_end once it has it all. */
void h3_body_end(h3_conn *hc, h3_stream *st);
/* The rest of the body is not wanted: STOP_SENDING at the next pump. */
void h3_body_stop(h3_conn *hc, h3_stream *st);
/* After each packet read (and at a kick): what the streams' request sides
 * owe (request_flush, held bytes, request_end, STOP_SENDING, a cancel). */
void h3_body_pump(h3_conn *hc);
/* The client reset stream id's request side, or asked us to stop sending:
 * a request the scenario still reads is given up. */
void h3_request_cancelled(h3_conn *hc, int64_t id);
/* sws_ex_more from the scenario: it has room again for held bytes. */
void h3_request_wake(h3_stream *st);

/* The error code of a stream cut short: a tunnel's is a TCP reset, which
 * RFC 9220 3 makes H3_REQUEST_CANCELLED; an answer's, H3_INTERNAL_ERROR. */
static inline uint64_t h3_cut_code(const h3_stream *st) {
    return st->tunnel ? NGHTTP3_H3_REQUEST_CANCELLED : NGHTTP3_H3_INTERNAL_ERROR;
}

/* answer.c */
extern const sws_proto sws_h3_proto;
nghttp3_ssize h3_read_body(nghttp3_conn *conn, int64_t id, nghttp3_vec *vec, size_t veccnt,
                           uint32_t *pflags, void *conn_ud, void *stream_ud);
/* Our own error answer for a stream whose answer has not begun. */
void h3_answer_error(h3_stream *st, int status);
/* The client acknowledged n body bytes. */
void h3_body_acked(h3_stream *st, uint64_t n);

#endif
