/* HTTP/2's parts (session.c: the connection and its frames; request.c: a
 * stream's request into an exchange; answer.c: the exchange's functions),
 * shared between its files only. The library is libnghttp2, driven without
 * I/O callbacks: the transport's decrypted bytes go to
 * nghttp2_session_mem_recv, and nghttp2_session_mem_send is drained into the
 * connection's output as far as it has room (fill). Every function runs on
 * the connection's loop thread. */
#ifndef SWS_H2_H
#define SWS_H2_H

#include "conn.h"
#include "exchange.h"
#include "mem.h"
#include "route.h"

#include <nghttp2/nghttp2.h>

/* A paused DATA chunk's rest: one frame's payload at most
 * (SETTINGS_MAX_FRAME_SIZE stays at its default). A stream's body buffer is
 * as large as an HTTP/1.1 connection's output (w->out_cap, >= H2_BLOCK): a
 * scenario finds the room it would find there. */
#define H2_BLOCK 16384
/* The unit of the body buffers' bounds: an answer given whole (whole_body)
 * of at most 2, 4 or 8 KiB borrows a buffer of that class, 1, 2 or 4 units;
 * any other a block of out_cap. The bounds count units, so a connection
 * answering 100 small files at once holds 100 small buffers, not 16 blocks
 * with 84 streams waiting in line for them. */
#define H2_UNIT 2048
#define H2_SMALL_CLASSES 3
/* A DATA frame shorter than this (of more that waits) is not made to fill
 * the output's last bytes: it waits for the next write's room. */
#define H2_MIN_DATA 4096
/* What is left of a refused request's declared body that is still taken
 * (and dropped) after its answer, instead of a reset: one default window. */
#define H2_DISCARD_MAX 65535
/* Closed streams remembered per connection (h2_conn.closed_id). */
#define H2_CLOSED_KEPT 16

typedef struct h2_conn h2_conn;

/* A token bucket: burst tokens, refilled at rate per second. */
typedef struct h2_bucket {
    uint32_t tokens;
    uint64_t at; /* loop clock of the last refill */
} h2_bucket;

/* One request and its answer: the exchange a scenario is given. From the
 * loop's stream table; its place there is its exchange id. */
typedef struct h2_stream {
    sws_exchange ex; /* first: the exchange functions find the stream from it */
    h2_conn *hc;
    struct h2_stream *prev, *next; /* the connection's streams */
    int32_t id;
    uint32_t xid;     /* sws_ex_id: w->nslots + the table index */
    uint32_t gen;     /* bumped each time the entry is reused: the exchange's mark */
    sws_scenario *sc; /* the route's instance, once the head is complete */
    bool routed : 1;
    /* the request */
    bool head_done : 1;   /* its header block is complete */
    bool req_end : 1;     /* END_STREAM came */
    bool keep_fields : 1; /* every field is kept (a scenario may take the request) */
    bool takes_body : 1;  /* the scenario takes the request (request_head...) */
    bool took : 1;        /* its request_head was called: it may hold state */
    bool authority : 1;   /* :authority came (Host must agree with it) */
    bool expect : 1;      /* Expect: 100-continue */
    bool early : 1;       /* Early-Data: an earlier hop took it in early data */
    bool flush : 1;       /* body bytes went to the scenario in this input */
    /* An extended CONNECT (RFC 8441, :protocol): answered from its head on,
     * its DATA both ways the tunnel's bytes until either end. */
    bool tunnel : 1;
    /* the answer */
    bool answering : 1;   /* the scenario was asked (answer) */
    bool in_answer : 1;   /* inside the scenario's answer */
    bool pending : 1;     /* the scenario answers asynchronously */
    bool submitted : 1;   /* the answer's head is with the session */
    bool nobody : 1;      /* no body goes out (HEAD, 1xx, 204, 304) */
    bool ended : 1;       /* the scenario has ended the answer: the body is all given */
    bool deferred : 1;    /* the data provider waits for body bytes */
    bool out_wait : 1;    /* the data provider waits for room in the output */
    bool want_more : 1;   /* the body buffer emptied: the scenario's `more` is owed */
    bool closed : 1;      /* the session closed the stream */
    bool reset_by_us : 1; /* we sent its RST_STREAM */
    bool buf_wait : 1;    /* waits for a body buffer (the connection's or loop's bound) */
    bool wlisted : 1;     /* in its connection's line for one (wprev, wnext) */
    bool buf_woken : 1;   /* a buffer is promised to it until it asks */
    bool counted : 1;     /* its route counted its answer */
    bool file : 1;        /* the body's rest is file_fd's range (sws_ex_file) */
    uint16_t refuse;      /* an error status to answer instead of the scenario */
    uint16_t status;
    uint16_t nf, fcap;
    uint32_t hbytes, hcount; /* of the header block (or the trailers) */
    uint32_t start_ms;
    uint64_t content_length; /* declared; UINT64_MAX: none */
    uint64_t body_in;        /* request body bytes received */
    uint64_t sent;           /* answer body bytes sent */
    char *body;              /* its buffer from the loop's pools while an answer is given */
    uint32_t boff, blen;
    uint8_t bclass;       /* the buffer's small class, H2_SMALL_CLASSES for a block */
    uint16_t bunits;      /* its size in H2_UNITs (what the bounds count) */
    const char *fixed;    /* a fixed answer's body, sent from where it is */
    nghttp2_nv *trailers; /* sws_ex_trailers' copy, until the body's end */
    int file_fd;          /* with file: read into the DATA frames, closed at the end */
    uint64_t file_off, file_left;
    uint32_t ntrailers;
    char note[48];                   /* our own error answer's body (sent as fixed) */
    struct h2_stream *wprev, *wnext; /* its connection's line for a body buffer */
    uint32_t fixed_left;
    sws_error_pages *held; /* the error page fixed is in, referenced (or NULL) */
    sws_http_request req;
    sws_head head;      /* with keep_fields, for request_head */
    sws_field *f;       /* fcap entries; the names and values are in rc */
    nghttp2_rcbuf **rc; /* 2 * fcap: each field's name and value, referenced */
    char *store;        /* the request's kept fields (log, static), H2_STORE bytes */
} h2_stream;

#define H2_STORE (SWS_HTTP_LOG_STORAGE + SWS_HTTP_SF_STORAGE)

struct h2_conn {
    nghttp2_session *s;
    h2_mem_session mems; /* its allocations (mem.c): the frame buffer dropped while idle */
    sws_worker *w;
    sws_conn *c;
    h2_stream *streams;
    uint32_t nstreams;
    uint32_t out_wait;                /* streams whose data waits for room in the output */
    uint32_t units;                   /* H2_UNITs of body buffers its streams hold */
    uint32_t promised;                /* units promised to its woken streams */
    struct h2_stream *wfirst, *wlast; /* its streams waiting for a buffer, oldest first */
    const uint8_t *spill;             /* mem_send bytes that did not fit the output */
    size_t spill_len;
    /* A DATA chunk the scenario could not take whole: its rest, until it
     * does; input stops meanwhile. */
    char *carry;
    uint32_t carry_off, carry_len;
    int32_t carry_stream;
    bool dead : 1;         /* terminated: nothing more is read */
    bool stirred : 1;      /* read or written since the last sweep */
    bool notice_sent : 1;  /* draining: the shutdown notice went out */
    bool goaway_final : 1; /* the last GOAWAY is queued: no new stream */
    /* Inside the session (mem_recv, or fill): a scenario's call that would
     * pump the connection (h2_kick) waits for the caller's own flush, so
     * that the library is never entered twice. */
    uint8_t busy;
    bool kicked : 1;   /* in the loop's kick list */
    bool more_due : 1; /* a stream's want_more is set: fill calls the scenarios */
    /* Token buckets: RST_STREAM received (Rapid Reset); resets we sent and
     * invalid frames received (MadeYouReset). */
    h2_bucket resets, glitches;
    /* The streams closed last, since the library keeps no closed stream
     * (RFC 9113 5.1: frames on a stream the client closed are its error;
     * on one we reset, ignored): the id, and whether we ended it. */
    int32_t closed_id[H2_CLOSED_KEPT];
    bool closed_by_us[H2_CLOSED_KEPT];
    uint8_t closed_next;
    int32_t max_id; /* the largest stream id the client opened */
    /* The pacing of the input (session.c): the current frame's header (and
     * priority fields) as they come, then its payload passed in one go. */
    uint32_t scan_skip; /* bytes that pass unjudged: a payload (or the preface) */
    uint8_t scan_have;  /* bytes of scan_buf filled */
    uint8_t scan_need;  /* bytes scan_buf needs: the header, then the priority fields */
    uint8_t scan_buf[16];
    int32_t bad_prio; /* a HEADERS that depends on its own stream: reset it */
    uint64_t notice_at;
    uint64_t wait_until; /* the latest sws_ex_wait of its streams */
};

/* The loop's HTTP/2 state (w->h2). */
typedef struct h2_loop {
    h2_stream *table; /* streams_per_loop entries, calloc'd */
    uint32_t *free_idx;
    uint32_t nfree, n;
    sws_lend blocks;                  /* out_cap: bodies and carries */
    sws_lend small[H2_SMALL_CLASSES]; /* 2, 4 and 8 KiB: bodies given whole */
    /* H2_UNITs lent, the most ([http2] loop_buffer), and promised */
    uint32_t units, units_cap, promised;
    uint32_t block_units; /* of one out_cap block */
    bool no_cachestat;    /* the kernel cannot say what is cached: no h2_file */
    /* Streams waiting for a body buffer, oldest first (a ring of n). */
    struct h2_waiter {
        h2_stream *st;
        uint32_t gen;
    } * waiters;
    uint32_t whead, wlen;
    sws_lend stores; /* H2_STORE request storages */
    nghttp2_session_callbacks *cbs;
    h2_mem mem;    /* the sessions' allocations */
    char *scratch; /* an answer's lowercased field names */
    uint32_t scratch_cap;
    nghttp2_nv *nva;
    uint32_t nva_cap;
    /* Connections a scenario moved outside their own completions (h2_kick),
     * by slot: pumped once the turn's completions are done, so that no
     * stream is freed under a scenario still in its call. */
    uint32_t *kick;
    uint32_t nkick;
} h2_loop;

static inline h2_stream *stream_ofx(sws_exchange *x) {
    return (h2_stream *)x;
}
static inline const h2_stream *cstream_ofx(const sws_exchange *x) {
    return (const h2_stream *)x;
}
static inline h2_loop *h2_loop_of(const sws_worker *w) {
    return (h2_loop *)w->h2;
}

/* session.c */
/* Something to send, or a stream to resume: the connection pumps at the
 * end of the turn. */
void h2_kick(sws_worker *w, h2_conn *hc);
/* The connection moved: its deadline from now (idle, or with streams). */
void h2_progress(sws_worker *w, h2_conn *hc);
/* A stream error of ours: RST_STREAM with code. */
void h2_reset(h2_conn *hc, h2_stream *st, uint32_t code);
/* The connection ends: GOAWAY with code, then the close. */
void h2_terminate(h2_conn *hc, uint32_t code, int flood);

/* request.c */
int h2_on_begin_headers(nghttp2_session *s, const nghttp2_frame *f, void *ud);
int h2_on_header(nghttp2_session *s, const nghttp2_frame *f, nghttp2_rcbuf *name,
                 nghttp2_rcbuf *value, uint8_t flags, void *ud);
/* A frame ended the request's head or body. */
void h2_request_frame(h2_conn *hc, h2_stream *st, const nghttp2_frame *f);
int h2_on_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
               void *ud);
/* The carried chunk's rest to its stream: true once it is all taken. */
bool h2_carry_feed(h2_conn *hc);
/* After an input: request_flush for each stream that took body bytes. */
void h2_request_flush(h2_conn *hc);
/* The stream's entry back to the table: the scenario's conn_end, the route. */
void h2_stream_free(h2_conn *hc, h2_stream *st);

/* answer.c */
extern const sws_proto sws_h2_proto;
ssize_t h2_read_body(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
                     nghttp2_data_source *src, void *ud);
int h2_send_data(nghttp2_session *s, nghttp2_frame *f, const uint8_t *framehd, size_t len,
                 nghttp2_data_source *src, void *ud);
/* The stream's body buffer goes back (its bytes are sent, or it ends): a
 * stream waiting for one is woken. */
void h2_body_give(sws_worker *w, h2_stream *st);
/* The stream leaves the lines for a body buffer (and its promise lapses). */
void h2_wait_drop(sws_worker *w, h2_stream *st);
/* Our own error answer for a stream whose answer has not begun. */
void h2_answer_error(sws_worker *w, h2_stream *st, int status);
/* The answer is complete on the scenario's side: its route counts it. */
void h2_answer_done(sws_worker *w, h2_stream *st);
/* The access log's line for the stream. */
void h2_log(sws_worker *w, h2_stream *st, const char *peer, int status, uint64_t bytes);

#endif
