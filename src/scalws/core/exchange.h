/* The exchange: one request and its answer, as a scenario sees them. A
 * scenario reads the request (method, target, authority, the fields it
 * asked for) and answers with a status, fields and a body; it never writes a
 * wire format. Under it a protocol (http1/ today) turns the answer into
 * bytes: the status line, Date and Server, the body's framing
 * (Content-Length, chunked, or the connection's end), Connection and
 * keep-alive, HEAD, informational answers. As h2o's handlers answer an
 * h2o_req_t with h2o_start_response and h2o_send, and lib/http1.c frames it.
 *
 * Life of an answer, all on the exchange's loop thread:
 *   sws_ex_head     once: status, fields, the body's length (or a stream)
 *   sws_ex_room / sws_ex_commit, sws_ex_body, sws_ex_sendfile
 *                   body bytes, as room allows; room comes back after the
 *                   protocol has written what is queued (the `more` hook)
 *   sws_ex_trailers optional, for a streamed body: its trailer fields
 *   sws_ex_end      the answer is complete (or `answer` returns DONE)
 * A fixed answer (respond) is one call: sws_ex_fixed, framed once per
 * protocol and copied per request.
 *
 * Every head a protocol writes (a scenario's, a fixed answer's, its own
 * errors') carries the header policy of the exchange's route
 * (header_policy.h): every field on 2xx and 3xx, the `always` ones on the
 * rest; a scenario never adds them itself.
 *
 * Ownership: an exchange belongs to its protocol; the pointer a hook is given
 * is valid until the answer has ended or the exchange was closed (the
 * scenario's conn_end hook says so). */
#ifndef SWS_EXCHANGE_H
#define SWS_EXCHANGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sws_http.h"

struct sws_worker;
typedef struct sws_exchange sws_exchange;

/* A field of an answer: name and value as they go on the wire (the protocol
 * lowercases names where its format asks it to). */
typedef struct sws_field {
    const char *name;
    const char *value;
    uint32_t name_len;
    uint32_t value_len;
} sws_field;

/* A message's head as its protocol read it, every field in order: for a
 * request also its target and method. What a scenario that forwards the
 * request (the proxy) reads: valid from its request_head hook until its
 * answer has ended. */
typedef struct sws_head {
    const sws_field *f;
    uint32_t nf;
    const char *target; /* the request-target as it came */
    uint32_t target_len;
    uint8_t method; /* llhttp_method_t */
    uint8_t http_major, http_minor;
    bool streams; /* the body's length is not known before its end */
    /* HTTP/1.1 Upgrade with Connection: upgrade (never CONNECT, never over
     * HTTP/2): the protocol hands the connection over on a 101. */
    bool upgrade;
    /* Extended CONNECT (RFC 8441 over HTTP/2, RFC 9220 over HTTP/3):
     * :protocol's value ("websocket"), else NULL. The stream is the tunnel: its request body is the
     * client's bytes, its answer's body the other side's, both as they come. */
    const char *protocol;
    uint32_t protocol_len;
    /* The request came in early data on this hop, before the client's
     * handshake completed (HTTP/3's 0-RTT): a proxy forwards it with
     * Early-Data: 1 (RFC 8470 5.1). */
    bool early;
} sws_head;

/* Whether the comma-separated list in f's value has token (case-insensitive). */
bool sws_field_has(const sws_field *f, const char *token);

/* For the protocols whose heads are fields (HTTP/2, HTTP/3): the llhttp method
 * of a :method value (*known false, and GET, for one llhttp does not know), and
 * a field static and redirect read kept in the request's sf slot k (several
 * lines joined with ','; a value past the slot's room marked unusable, as the
 * HTTP/1.1 parser does). */
uint8_t sws_method_of(const char *v, size_t vl, bool *known);
void sws_sf_put(sws_http_request *r, int k, const uint8_t *v, size_t vl);
/* For the same protocols: the status a CONNECT is refused with before its
 * scenario answers it, or 0. A plain CONNECT (no :protocol) asks for a TCP
 * tunnel, which no scenario opens (501); an extended CONNECT (RFC 8441 over
 * HTTP/2, RFC 9220 over HTTP/3) can be carried only by a scenario that takes
 * the request's bytes (takes_body: the proxy, whose [proxy] upgrade judges
 * the protocol). */
int sws_connect_refusal(uint8_t method, bool protocol, bool takes_body);

/* For the same protocols: h's fields from the n a stream kept (f, room for
 * cap), compacted in place to the regular ones. :path becomes the target,
 * :protocol the protocol (RFC 8441 4), and :authority a Host field where
 * none came (RFC 9113 8.3.1, RFC 9114 4.3.1: a proxy to HTTP/1.1 makes one
 * of it); the other pseudo-fields are dropped. The method, the version and
 * `streams` are the caller's to set. */
void sws_head_from_fields(sws_head *h, sws_field *f, uint32_t n, uint32_t cap);

/* sws_answer.length: the body's size is not known in advance; it is fed
 * and then ended (HTTP/1.1 frames it chunked, or by the close for an
 * HTTP/1.0 client). */
#define SWS_BODY_STREAM UINT64_MAX

typedef struct sws_answer {
    int status;
    const char *content_type; /* NULL: none */
    /* Body bytes (0 for none), or SWS_BODY_STREAM. HEAD, 1xx, 204 and 304
     * get no body whatever it says: the protocol drops it by itself. */
    uint64_t length;
    /* Nothing can follow this answer on the connection (a request the
     * scenario refused as malformed: 400, 414): the protocol ends it. */
    bool last;
    /* Another server's answer (the proxy's upstream): its fields carry
     * their own Date and Server, and reason its own phrase. */
    bool relayed;
    /* The body is short and given at once (a small file, a short text): a
     * protocol that lends a buffer per answer (HTTP/2) may lend one of just
     * `length` bytes, whose room never exceeds what is left of the body. */
    bool whole_body;
    const char *reason; /* NULL: the status's usual phrase */
    uint32_t reason_len;
    const sws_field *fields; /* every other field, in order */
    uint32_t nfields;
} sws_answer;

/* A fixed answer (respond, the HTTP-01 challenge is not one): the protocol
 * frames it once (per Date second) and copies it per request. Made with
 * sws_fixed_init, which only keeps the pointers: status, type and body must
 * outlive it. The protocols' framed copies are made on first use. headers:
 * its route's header policy (header_policy.h), framed with it, so that its
 * fields cost nothing per request; set after init (NULL: none). */
#define SWS_FIXED_PROTOS 2 /* HTTP/2 takes the second slot */
#define SWS_PROTO_HTTP1 0  /* the protocols' slots in sws_fixed.framed */
struct sws_header_policy;
typedef struct sws_fixed {
    int status;
    const char *content_type;
    const char *body;
    uint32_t body_len;
    const struct sws_header_policy *headers;
    /* Each protocol's framed copy, its own to make and free. */
    void *framed[SWS_FIXED_PROTOS];
    void (*framed_free[SWS_FIXED_PROTOS])(void *);
} sws_fixed;

void sws_fixed_init(sws_fixed *f, int status, const char *content_type, const char *body,
                    uint32_t body_len);
/* Frees the framed copies (not the pointers given to init). */
void sws_fixed_free(sws_fixed *f);

/* Which request of which connection an exchange is (sws_ex_mark). */
typedef struct sws_ex_mark {
    uint64_t conn;
    uint32_t req;
} sws_ex_mark;

/* What a protocol implements for its exchanges (http1/ fills one). Every
 * function runs on the exchange's loop thread. */
typedef struct sws_proto {
    const char *name; /* as the access log writes it: "HTTP/1.1" */
    /* A filter between the scenario and the protocol (core/compress.c),
     * which the protocol's calls into the scenario go through. */
    bool filter;
    const sws_http_request *(*request)(const sws_exchange *x);
    uint32_t (*id)(const sws_exchange *x);
    const sws_head *(*request_head)(const sws_exchange *x);
    sws_ex_mark (*mark)(const sws_exchange *x);
    bool (*marked)(const sws_exchange *x, sws_ex_mark m);
    bool (*secure)(const sws_exchange *x);
    int (*fd)(struct sws_worker *w, const sws_exchange *x);
    int (*head)(struct sws_worker *w, sws_exchange *x, const sws_answer *a);
    char *(*room)(struct sws_worker *w, sws_exchange *x, size_t *len);
    void (*commit)(struct sws_worker *w, sws_exchange *x, size_t n);
    int (*body)(struct sws_worker *w, sws_exchange *x, const void *data, size_t len);
    int (*sendfile)(struct sws_worker *w, sws_exchange *x, int fd, uint64_t *off, size_t len);
    int (*file)(struct sws_worker *w, sws_exchange *x, int fd, uint64_t off, uint64_t len);
    int (*fixed)(struct sws_worker *w, sws_exchange *x, sws_fixed *f);
    int (*error)(struct sws_worker *w, sws_exchange *x, int status);
    int (*trailers)(struct sws_worker *w, sws_exchange *x, const sws_field *f, uint32_t n);
    void (*end)(struct sws_worker *w, sws_exchange *x);
    void (*more)(struct sws_worker *w, sws_exchange *x);
    void (*close)(struct sws_worker *w, sws_exchange *x);
    void (*abort)(struct sws_worker *w, sws_exchange *x);
    void (*log)(struct sws_worker *w, sws_exchange *x, const char *peer, int status,
                uint64_t bytes);
    int (*peer)(struct sws_worker *w, const sws_exchange *x, char *buf, size_t len);
    bool (*refused)(const sws_exchange *x);
    void (*wait)(struct sws_worker *w, sws_exchange *x, uint64_t until);
} sws_proto;

/* The first member of every protocol's exchange. */
struct sws_exchange {
    const sws_proto *proto;
};

/* ---- the request ------------------------------------------------------------ */

/* The request, complete as far as its head (the body streams separately). */
static inline const sws_http_request *sws_ex_request(const sws_exchange *x) {
    return x->proto->request(x);
}
/* The request's head with every field (sws_head), for a scenario that
 * takes the request (its request_head hook and after, until the answer
 * ends); NULL before. */
static inline const sws_head *sws_ex_request_head(const sws_exchange *x) {
    return x->proto->request_head(x);
}
/* A number for this exchange, unique on its loop among those under way
 * (below the loop's max_connections + 1): for a scenario's per-exchange
 * table. */
static inline uint32_t sws_ex_id(const sws_exchange *x) {
    return x->proto->id(x);
}
/* Which request this is: a completion that comes back later (a file read
 * the scenario handed to a thread) finds its exchange again only while
 * sws_ex_marked says it is still the same one (the pointer stays valid for
 * the loop's life; what it holds may be another connection's request). */
static inline sws_ex_mark sws_ex_mark_of(const sws_exchange *x) {
    return x->proto->mark(x);
}
static inline bool sws_ex_marked(const sws_exchange *x, sws_ex_mark m) {
    return x->proto->marked(x, m);
}
/* Whether the request came over TLS (the scheme is https). */
static inline bool sws_ex_secure(const sws_exchange *x) {
    return x->proto->secure(x);
}
/* The client's socket, for getpeername: -1 when there is none. Never for
 * writing: bytes go through the answer functions. */
static inline int sws_ex_fd(struct sws_worker *w, const sws_exchange *x) {
    return x->proto->fd(w, x);
}

/* ---- the answer --------------------------------------------------------------- */

/* The answer's head. 0, or -ENOSPC when it does not fit the output (the
 * scenario answers 500 or closes). Once per exchange. */
static inline int sws_ex_head(struct sws_worker *w, sws_exchange *x, const sws_answer *a) {
    return x->proto->head(w, x, a);
}
/* Where body bytes may be written now, and how many (*len; 0: none until
 * the `more` hook): the scenario writes there, then commits what it wrote. */
static inline char *sws_ex_room(struct sws_worker *w, sws_exchange *x, size_t *len) {
    return x->proto->room(w, x, len);
}
static inline void sws_ex_commit(struct sws_worker *w, sws_exchange *x, size_t n) {
    x->proto->commit(w, x, n);
}
/* Copies body bytes: 0, or -ENOSPC when they do not fit now (ask room first). */
static inline int sws_ex_body(struct sws_worker *w, sws_exchange *x, const void *data, size_t len) {
    return x->proto->body(w, x, data, len);
}
/* Sends up to len bytes of the file fd from *off without copying them,
 * where the protocol can (plaintext HTTP/1.1 with nothing queued before
 * them): the bytes sent (*off moved on), -EAGAIN when the socket is full
 * (the `more` hook comes back), or -EOPNOTSUPP when the bytes must be copied
 * through sws_ex_room instead. */
static inline int sws_ex_sendfile(struct sws_worker *w, sws_exchange *x, int fd, uint64_t *off,
                                  size_t len) {
    return x->proto->sendfile(w, x, fd, off, len);
}
/* Hands the rest of the body over as a file range, read by the protocol as
 * it frames the body (HTTP/2: straight into each DATA frame, no buffer and
 * no copy of the scenario's). 0: taken; the protocol owns fd (it closes it)
 * and the body is given: the scenario ends the answer. -EAGAIN: not all of
 * the range is in the page cache (the loop would wait on the disk);
 * -EOPNOTSUPP: not taken (HTTP/1.1 has sendfile; bytes already queued). On
 * either, fd stays the scenario's. */
static inline int sws_ex_file(struct sws_worker *w, sws_exchange *x, int fd, uint64_t off,
                              uint64_t len) {
    return x->proto->file(w, x, fd, off, len);
}
/* The whole answer of f (head and body, or the head alone for HEAD). */
static inline int sws_ex_fixed(struct sws_worker *w, sws_exchange *x, sws_fixed *f) {
    return x->proto->fixed(w, x, f);
}
/* An error answer of the server's own (its route's error_page for the
 * status, else a short text body naming it), after which the connection
 * ends; for 502/504 from a proxy, and for anything the scenario cannot
 * answer once it began. Only before the answer's head was given; outside a
 * hook the exchange is over with it. */
static inline int sws_ex_error(struct sws_worker *w, sws_exchange *x, int status) {
    return x->proto->error(w, x, status);
}
/* The trailer section of an answer whose length was SWS_BODY_STREAM, after
 * its last body byte and before sws_ex_end (an upstream's trailers, which
 * the proxy forwards). The fields are copied. The protocol sends them where
 * its framing carries them (HTTP/1.1's last chunk, an HTTP/2 HEADERS frame
 * that ends the stream) and drops them where it cannot (an HTTP/1.0 client,
 * a HEAD, a body framed by its length): trailers are optional to deliver
 * (RFC 9110 6.5.1). 0, or -ENOSPC when they do not fit the output now. */
static inline int sws_ex_trailers(struct sws_worker *w, sws_exchange *x, const sws_field *f,
                                  uint32_t n) {
    return x->proto->trailers(w, x, f, n);
}
/* A pending answer (SWS_ANSWER_PENDING) is complete; the connection goes on
 * with the next request once the answer is written. */
static inline void sws_ex_end(struct sws_worker *w, sws_exchange *x) {
    x->proto->end(w, x);
}
/* Outside a hook (a file read or an upstream's bytes came): the scenario
 * added to its answer (or ended it), or can take request bytes again. */
static inline void sws_ex_more(struct sws_worker *w, sws_exchange *x) {
    x->proto->more(w, x);
}
/* The exchange fails without an answer: its connection is closed (the
 * client sees the answer cut short). */
static inline void sws_ex_close(struct sws_worker *w, sws_exchange *x) {
    x->proto->close(w, x);
}
/* The answer ends without its end (an upstream cut it short): what is
 * queued is written, then the connection closes, so the client cannot take
 * it for complete (no last chunk, a Content-Length unmet). */
static inline void sws_ex_abort(struct sws_worker *w, sws_exchange *x) {
    x->proto->abort(w, x);
}
/* The access log's line for this exchange (only while w->logs is set), the
 * peer's address looked up now. */
static inline void sws_ex_log(struct sws_worker *w, sws_exchange *x, int status, uint64_t bytes) {
    x->proto->log(w, x, NULL, status, bytes);
}
/* The same with the peer's address given (its socket may be closed). */
static inline void sws_ex_log_peer(struct sws_worker *w, sws_exchange *x, const char *peer,
                                   int status, uint64_t bytes) {
    x->proto->log(w, x, peer, status, bytes);
}
/* The client's address as numeric text into buf: 0 or a negative errno. */
static inline int sws_ex_peer(struct sws_worker *w, const sws_exchange *x, char *buf, size_t len) {
    return x->proto->peer(w, x, buf, len);
}
/* The protocol refused the request itself (and logged it): a malformed
 * body, say; the scenario's record of it is not the request's. */
static inline bool sws_ex_refused(const sws_exchange *x) {
    return x->proto->refused(x);
}

/* The exchange waits on the scenario's side (an upstream), not on the
 * client: the client's own timeouts do not end it before `until` (the
 * loop's clock, ms). */
static inline void sws_ex_wait(struct sws_worker *w, sws_exchange *x, uint64_t until) {
    x->proto->wait(w, x, until);
}

/* Fields made from text the caller keeps: "Name", value. */
static inline sws_field sws_field_str(const char *name, uint32_t name_len, const char *value,
                                      uint32_t value_len) {
    return (sws_field){name, value, name_len, value_len};
}
#define SWS_FIELD_LIT(name, value) sws_field_str(name, sizeof(name) - 1, value, sizeof(value) - 1)

#endif
