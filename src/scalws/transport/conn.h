/* The transport (conn.c; the TLS pump in conn_tls.c): one client
 * connection's bytes in and out, plain or TLS: receive into loop buffers
 * (held while the protocol cannot take them), one output buffer written as
 * one write (the back-pressure), the write and idle deadlines, the lingering
 * close. What the bytes mean is its protocol's (sws_conn_proto: HTTP/1.1
 * today, http1/), reached only through that table. A connection and
 * everything it points to belong to its worker's loop thread. */
#ifndef SWS_CONN_H
#define SWS_CONN_H

#include "sws.h"

/* Loop buffers for receiving (tl_loop_options.recv_buffers); the held-input
 * pool has one node per buffer. */
#define SWS_RECV_BUFFERS 256 /* fits sws_conn.hcount */
#define SWS_TLS_PLAIN 16384  /* one TLS record's plaintext at most: the decrypt scratch */
/* A request head kept until its route is chosen, for a route whose scenario
 * takes request bytes: at most this much (a longer head is refused with 431).
 * Such a scenario's request_room must be at least this for a request it has
 * not begun, since it is handed the kept bytes at once. */
#define SWS_ROUTE_STASH 16384

enum sws_deadline { SWS_DL_IDLE = 0, SWS_DL_HEADER, SWS_DL_FRESH };

/* A loop buffer whose bytes wait for room in the connection's output. The
 * nodes come from a per-worker pool as large as the loop's buffer count: every
 * held node holds a distinct loop buffer, so the pool cannot run dry. */
struct sws_held {
    uint32_t id;
    uint32_t off;
    uint32_t len;
    uint32_t next; /* pool index, SWS_NIL at the end */
    const char *data;
};

/* Appends loop buffer id (len bytes of data from off) to a held list, oldest
 * first: its node, or SWS_NIL when none is free (cannot happen: one node per
 * loop buffer; the caller gives the buffer back and ends what holds it). The
 * caller counts it. */
static inline uint32_t sws_held_append(sws_worker *w, uint32_t *head, uint32_t *tail, uint32_t id,
                                       const char *data, uint32_t off, uint32_t len) {
    uint32_t i = w->hfree;
    if (i == SWS_NIL)
        return SWS_NIL;
    w->hfree = w->hpool[i].next;
    w->hpool[i] = (sws_held){.id = id, .off = off, .len = len, .next = SWS_NIL, .data = data};
    if (*tail == SWS_NIL)
        *head = i;
    else
        w->hpool[*tail].next = i;
    *tail = i;
    return i;
}

/* A tls listener's connection: input is fed to the engine and read back as
 * plaintext; out holds plaintext, sealed at flush into wire, which is what is
 * written. stash keeps decrypted input that did not fit the output (the
 * plaintext twin of held buffers). wire and stash are lent from the worker's
 * output pool while in use. Allocated with the connection, for tls only: a
 * plaintext connection carries one NULL pointer of it. */
typedef struct sws_conn_tls {
    sws_tls_conn eng;
    char *wire;
    char *stash;
    uint32_t stash_off, stash_len;
} sws_conn_tls;

/* What an idle keep-alive connection holds, and no more: everything a request
 * needs while it is under way (parser, output, TLS scratch) is lent from the
 * worker's pools and given back when the request ends with nothing held. */
struct sws_conn {
    /* The exchange it carries (HTTP/1.1: one at a time): what a scenario is
     * given; first, so that the protocol finds its connection from it. */
    sws_exchange ex;
    /* Its protocol: HTTP/1.1 until the first bytes (the HTTP/2 preface) or
     * the TLS handshake (ALPN h2) choose another. */
    const struct sws_conn_proto *proto;
    /* The protocol's own state of this connection beyond the bits below
     * (HTTP/2: its session and streams); NULL for HTTP/1.1. */
    void *pstate;
    uint32_t index;
    sws_phase phase; /* its life (sws.h); changed by conn_phase() only */
    tl_handle h;
    /* Whose answer it waits for: the request's route's instance while it
     * answers, else the loop's default (w->sc), which owns the connection. */
    sws_scenario *sc;
    tl_op recv_op;
    /* What is in flight, and what the peer did (bits: every open connection
     * holds these): */
    bool recv_armed : 1;
    bool recv_paused : 1; /* recv cancelled because output is full */
    bool write_inflight : 1;
    bool starved : 1;        /* waits for a loop buffer to re-arm its receive */
    bool peer_eof : 1;       /* the peer has finished sending */
    bool idle_closing : 1;   /* drain: recv cancelled to see what is left before the FIN */
    bool answer_pending : 1; /* the scenario answers asynchronously (SWS_ANSWER_PENDING) */
    bool routed : 1;         /* the request's route is chosen: sc is its instance */
    /* The HTTP/1.1 answer being given (http1/): its head is out, its body is
     * chunked, it has no body on the wire (HEAD, 304). */
    bool h1_head : 1;
    bool h1_chunked : 1;
    bool h1_nobody : 1;
    bool h1_in_answer : 1; /* inside the scenario's `answer` */
    bool chosen : 1;       /* its protocol is settled (first bytes seen, or ALPN) */
    /* Bytes of "PRI" seen before the protocol could be told (a first read
     * of one to three bytes): they are the preface's, so their count says
     * what they were. */
    uint8_t sniffed : 2;
    uint8_t dl_kind;
    uint8_t listener; /* the index of the listener it came in on ([server]'s listeners) */
    uint16_t hcount;  /* held input buffers: at most SWS_RECV_BUFFERS */
    uint32_t wlen;    /* bytes of out in flight */
    uint64_t deadline;
    uint64_t wdeadline;    /* while write_inflight: close if the write has not completed by then */
    uint32_t served;       /* requests answered; wraps (with h, an exchange's mark) */
    uint32_t req_start;    /* loop clock (ms, wraps) at the request's first byte: route latency */
    uint16_t status;       /* of the answer being given: the route's errors */
    uint32_t olen;         /* bytes of out filled (>= wlen) */
    uint32_t hhead, htail; /* held input, oldest first (pool indices) */
    struct sws_conn *prev, *next; /* the worker's active list */
    /* From w->parsers from the first byte of a request until it is answered
     * with no input held (parser_settle), else NULL. Its block also holds the
     * storage lent to req.log_fields (access log on) and req.sf_fields
     * (w->lend_sf). */
    sws_http_parser *parser;
    char *out;         /* from w->outbuf (out_cap bytes) while there is output, else NULL */
    sws_conn_tls *tls; /* NULL: plaintext */
};

/* What a connection's protocol does with its bytes (http1/ and http2/ fill
 * one); the transport calls nothing else of it. */
typedef struct sws_conn_proto {
    const sws_proto *ex; /* its exchanges' functions (exchange.h) */
    /* The connection is switched to this protocol (before any of its bytes
     * are given to it): its state into c->pstate. false: it cannot be served
     * (out of memory), the caller closes. Optional. */
    bool (*attach)(sws_worker *w, sws_conn *c);
    /* Before each write, with no write in flight: what the protocol has to
     * send goes into the output now (HTTP/2: its session's frames, as far as
     * the output has room). Optional: HTTP/1.1 writes into it as it answers. */
    void (*fill)(sws_worker *w, sws_conn *c);
    /* The sweep, for a connection whose write is not overdue: the protocol's
     * own deadlines (idle, drain). Optional: without it the transport's
     * (keepalive_timeout, header_timeout's 408, the drain's idle close). */
    void (*sweep)(sws_worker *w, sws_conn *c, uint64_t now);
    /* The server drains (force: everything closes now). Optional, as sweep. */
    void (*drain)(sws_worker *w, sws_conn *c, bool force);
    /* After each turn's completions (the loop's, not one connection's).
     * Optional. */
    void (*turn_done)(sws_worker *w);
    /* Takes bytes from data[*off..len). false: it takes no more now (its
     * output is full, or the scenario takes no more of a body), and the rest
     * is held until pump. */
    bool (*input)(sws_worker *w, sws_conn *c, const char *data, uint32_t len, uint32_t *off);
    /* A request has begun and is not complete. */
    bool (*partial)(const sws_conn *c);
    /* After a completion was handled: give back what an idle connection
     * need not hold. */
    void (*settle)(sws_worker *w, sws_conn *c);
    /* The output is written and an answer is pending: the scenario adds. */
    void (*drained)(sws_worker *w, sws_conn *c);
    /* The peer finished sending (its FIN, or a TLS close_notify). Optional:
     * without it the connection answers what was asked, then closes; with
     * it the protocol decides (a tunnel passes the half-close on). */
    void (*eof)(sws_worker *w, sws_conn *c);
    /* The header deadline passed with a request begun: its error answer
     * (408); false when there is no room for it (the caller closes). */
    bool (*timeout)(sws_worker *w, sws_conn *c);
    /* The slot is being freed (the handle's close completed). */
    void (*freed)(sws_worker *w, sws_conn *c);
    /* A reload committed (the access log may have changed). */
    void (*reload)(sws_worker *w, sws_conn *c);
    /* Per-loop state: with the connection table, and after the loop. */
    int (*table_init)(sws_worker *w);
    void (*table_free)(sws_worker *w);
    void (*trim)(sws_worker *w);
} sws_conn_proto;

/* The worker's table of connections (worker.c sizes the loop for it). */
int sws_conn_table_init(sws_worker *w);
void sws_conn_table_free(sws_worker *w);

/* The preface a client speaking HTTP/2 with prior knowledge begins with
 * (RFC 9113 3.4): on a plaintext listener it chooses HTTP/2 (as nginx's
 * http2 on a shared port). */
#define SWS_H2_PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define SWS_H2_PREFACE_LEN 24

/* The connection hooks of a scenario that answers on the HTTP connection
 * (scenario.h): respond.c fills its ops with these. */
void sws_conn_open(sws_worker *w, sws_scenario *sc, tl_handle h, unsigned listener);
void sws_conn_dispatch(sws_worker *w, sws_scenario *sc, const tl_completion *e);
void sws_conn_drain(sws_worker *w, sws_scenario *sc, bool force);
bool sws_conn_finished(const sws_worker *w, const sws_scenario *sc);
void sws_conn_sweep(sws_worker *w, sws_scenario *sc, uint64_t now);
void sws_conn_turn_done(sws_worker *w, sws_scenario *sc);
void sws_conn_reload_commit(sws_worker *w, sws_scenario *sc);

/* What the protocol may call. */
/* The output buffer, taken if c holds none: false when out of memory. */
bool sws_conn_out_take(sws_worker *w, sws_conn *c);
/* Output moved (or an answer ended): feed held input as far as there is
 * room, resume receiving once nothing is held, and write. */
void sws_conn_pump(sws_worker *w, sws_conn *c);
void sws_conn_close(sws_worker *w, sws_conn *c);
/* The connection is handed to another protocol (an HTTP/1.1 connection to
 * the proxy's tunnel after a 101): from its next byte on, input goes to p.
 * The exchange functions stay the old protocol's when p has none. false:
 * p's attach refused, the connection is closing. */
bool sws_conn_switch(sws_worker *w, sws_conn *c, const sws_conn_proto *p);
/* Nothing more is read: the answer in output is the last, then the close.
 * linger: the peer may still be sending (a refused request, pipelined
 * input), so the close is a half-close and a drain. */
void sws_conn_last(sws_worker *w, sws_conn *c, bool linger);
/* Stops receiving now (nothing more will be read), or the loop reads the
 * peer's FIN or the rest of a pipeline before the close lands. */
void sws_conn_stop_reading(sws_worker *w, sws_conn *c);
/* The deadline after an answer: keepalive_timeout, or the drain's grace;
 * header_timeout when a request has begun (partial: the protocol says). */
void sws_conn_idle_deadline(sws_worker *w, sws_conn *c, bool partial);
/* Draining: an idle connection's deadline is no later than the grace's end. */
void sws_conn_drain_clamp(sws_worker *w, sws_conn *c);
/* The output pool's blocks (out_cap bytes), for a protocol's own buffers. */
#define SWS_OUT_CACHE 64

#endif
