/* The HTTP connection (conn.c): one client connection of a scenario that
 * answers HTTP requests (respond, static), with its parser, deadlines, held
 * input and output buffer. A connection and everything it points to belong to
 * its worker's loop thread. */
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
    uint8_t dl_kind;
    uint16_t hcount; /* held input buffers: at most SWS_RECV_BUFFERS */
    uint32_t wlen;   /* bytes of out in flight */
    uint64_t deadline;
    uint64_t wdeadline;    /* while write_inflight: close if the write has not completed by then */
    uint32_t served;       /* requests answered; wraps (the static scenario's job generation) */
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

/* The worker's table of connections (worker.c sizes the loop for it). */
int sws_conn_table_init(sws_worker *w);
void sws_conn_table_free(sws_worker *w);

/* The connection hooks of a scenario that answers on the HTTP connection
 * (scenario.h): respond.c fills its ops with these. */
void sws_conn_open(sws_worker *w, sws_scenario *sc, tl_handle h);
void sws_conn_dispatch(sws_worker *w, sws_scenario *sc, const tl_completion *e);
void sws_conn_drain(sws_worker *w, sws_scenario *sc, bool force);
bool sws_conn_finished(const sws_worker *w, const sws_scenario *sc);
void sws_conn_sweep(sws_worker *w, sws_scenario *sc, uint64_t now);
void sws_conn_turn_done(sws_worker *w, sws_scenario *sc);
void sws_conn_reload_commit(sws_worker *w, sws_scenario *sc);

/* What `answer` and `more` may call. */
/* A pending answer (SWS_ANSWER_PENDING) is complete; the connection goes on
 * with the next request once its output is written. */
void sws_conn_answer_end(sws_worker *w, sws_conn *c);
/* Outside a hook (a file read completed): the scenario appended to c->out or
 * ended its answer; write it, and go on with held input. */
void sws_conn_more(sws_worker *w, sws_conn *c);
void sws_conn_close(sws_worker *w, sws_conn *c);
/* Outside a hook: the request being read or answered fails with an error
 * answer of ours (502, 504) that ends the connection; a pending answer is
 * over. Only before any byte of the scenario's answer was appended. */
void sws_conn_error(sws_worker *w, sws_conn *c, int status);
/* From `answer`: the answer being appended is the connection's last (a
 * refused request: 400, 414); nothing more is read, and it closes once written. */
void sws_conn_last(sws_worker *w, sws_conn *c);
/* One access log line for c's request (w->access_log must be open), the
 * peer's address looked up now: an idle connection keeps no text of it. */
void sws_conn_log(sws_worker *w, sws_conn *c, int status, uint64_t bytes);

#endif
