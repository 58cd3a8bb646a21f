/* scalwsd's internal types: the server, its per-core workers (one loop each)
 * and their connections. A connection and everything it points to belong to
 * one worker's thread; the control thread reads only the atomic counters. */
#ifndef SWS_H
#define SWS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "cpu.h"
#include "scenario.h"
#include "sws_http.h"
#include "sws_tls.h"
#include "token.h"
#include "turnloop.h"

#define SWS_VERSION "0.1.0"

/* Single writer (the worker), many readers (the control thread): a relaxed
 * load + store is enough and costs a plain add, never a locked one. */
typedef _Atomic uint64_t sws_ctr;
#define SWS_ADD(c, n)                                                                              \
    atomic_store_explicit(&(c), atomic_load_explicit(&(c), memory_order_relaxed) + (n),            \
                          memory_order_relaxed)
#define SWS_GET(c) atomic_load_explicit(&(c), memory_order_relaxed)

/* Error answers by status; 502 and 504 come from the proxy scenario. */
enum {
    SWS_ST_400,
    SWS_ST_408,
    SWS_ST_413,
    SWS_ST_414,
    SWS_ST_431,
    SWS_ST_502,
    SWS_ST_504,
    SWS_ST_OTHER,
    SWS_ST_N
};

typedef struct sws_counters {
    sws_ctr requests;
    sws_ctr accepted;
    sws_ctr closed;
    sws_ctr active;
    sws_ctr bytes_in;
    sws_ctr bytes_out;
    sws_ctr errors[SWS_ST_N];
    sws_ctr forced; /* closed by the drain timeout */
    sws_ctr turns;
    sws_ctr accept_pauses;
    sws_ctr recv_starved;
    sws_ctr send_timeouts; /* closed: a write was not done within send_timeout */
    sws_ctr tls_handshakes;
    sws_ctr tls_resumed;
    sws_ctr tls_failed[SWS_TLS_FAIL_N]; /* by sws_tls_fail */
} sws_counters;

enum sws_deadline { SWS_DL_IDLE = 0, SWS_DL_HEADER, SWS_DL_FRESH };

/* A loop buffer whose bytes wait for room in the connection's output. The
 * nodes come from a per-worker pool as large as the loop's buffer count: every
 * held node holds a distinct loop buffer, so the pool cannot run dry. */
typedef struct sws_held {
    uint32_t id;
    uint32_t off;
    uint32_t len;
    uint32_t next; /* pool index, SWS_NIL at the end */
    const char *data;
} sws_held;
#define SWS_NIL UINT32_MAX

typedef struct sws_conn {
    uint32_t index;
    tl_handle h;
    sws_scenario *sc; /* answers its requests (routes will set it per request) */
    tl_op recv_op;
    bool live; /* between open and the close completion */
    bool recv_armed;
    bool recv_paused; /* recv cancelled because output is full */
    bool write_inflight;
    bool close_after; /* close once the output is flushed; ignore further input */
    bool closing;     /* tl_close issued */
    bool starved;     /* waits for a loop buffer to re-arm its receive */
    bool linger;      /* the peer may still be sending: half-close, drain, then close */
    bool lingering;   /* write side shut; input is read and dropped until EOF */
    bool peer_eof;
    bool answer_pending; /* the scenario answers asynchronously (SWS_ANSWER_PENDING) */
    uint8_t dl_kind;
    uint64_t deadline;
    uint64_t wdeadline; /* while write_inflight: close if the write has not completed by then */
    uint64_t served;
    uint32_t wlen;         /* bytes of out in flight */
    uint32_t olen;         /* bytes of out filled (>= wlen) */
    uint32_t hhead, htail; /* held input, oldest first (pool indices) */
    uint32_t hcount;
    struct sws_conn *prev, *next; /* the worker's active list */
    sws_http_parser parser;
    char *out;     /* a worker output buffer (out_cap bytes) while there is output, else NULL */
    char peer[48]; /* for the access log only */
    /* The request line, Referer and User-Agent for the access log
     * (SWS_HTTP_LOG_STORAGE bytes, lent to parser.req.log_fields), taken once
     * the access log is on and kept with the slot; NULL while it is off. */
    char *log_fields;
    /* A tls listener's connection: input is fed to the engine and read back
     * as plaintext; out holds plaintext, encrypted at flush into wire, which
     * is what is written. stash keeps decrypted input that did not fit the
     * output (the plaintext twin of held buffers). Both lent from the
     * worker's buffer stack while in use. */
    bool is_tls;
    sws_tls_conn tls;
    char *wire;
    char *stash;
    uint32_t stash_off, stash_len;
} sws_conn;

struct sws_server;

typedef struct sws_worker {
    int index;
    int cpu; /* pinned CPU, or -1 */
    pthread_t thread;
    struct sws_server *srv;
    /* The configuration this loop serves with. Read only on the loop's own
     * thread, so that a reload can swap it inside a turn; the request limits
     * are copied because every parser of the loop points at them. */
    const sws_config *cfg;
    sws_http_limits limits;
    tl_loop *loop;
    tl_handle listener; /* 0 when the loop has none */
    bool listener_closing;
    tl_op sweep_op;
    bool sweep_armed;
    bool sweep_cancelled;
    bool draining;
    bool forced;
    bool done;
    uint64_t drain_at;
    sws_conn **conns;
    uint32_t nslots;
    uint32_t *free_idx;
    uint32_t nfree;
    uint32_t out_cap;
    /* Output buffers: a connection holds one only while it has output, so an
     * idle connection costs no buffer (see out_take in serve.c). */
    char **out_free; /* free buffers, a stack with room for one per slot */
    uint32_t out_nfree;
    uint32_t out_used; /* buffers held by connections */
    uint32_t out_peak; /* most held at once since the last sweep */
    sws_conn *active;  /* list head */
    uint32_t nstarved; /* connections waiting for a loop buffer */
    sws_held *hpool;   /* recv_buffers nodes */
    uint32_t hfree;    /* free list head */
    uint32_t released; /* buffers given back this turn */
    sws_date_cache date;
    uint32_t resp_max; /* the longest answer the scenario appends at once (>= 512) */
    char clf_date[32];
    time_t clf_sec;
    FILE *access_log;
    sws_counters ctr;
    double cpu_seen; /* control thread only: the last CPU time read (admin.c) */
    sws_scenario sc; /* what this loop serves (scenario.h); never named by the worker */
    char *tls_plain; /* tls listener: the loop's decrypt scratch (SWS_TLS_PLAIN) */
} sws_worker;

typedef struct sws_server {
    const sws_config *cfg;
    sws_cpus cpus;
    bool shared; /* event_loops = 0: one loop turned by nthreads threads */
    sws_accept_route route;
    int nloops;   /* loops (1 when shared) */
    int nthreads; /* threads turning loops */
    bool pinned;
    sws_worker *workers;
    tl_loop **loops;
    tl_handoff *handoff;
    tl_acceptor *acceptor;
    int shared_fd; /* the listening socket of exclusive/herd/acceptor, or -1 */
    int *listen_fds; /* every distinct listening socket, for a SIGUSR2 re-exec */
    int nlisten_fds;
    pthread_mutex_t shared_lock;
    pthread_t *threads; /* shared model */
    int done_fd;        /* eventfd: a worker thread has finished */
    _Atomic int drain;  /* 0 serving, 1 draining, 2 forced */
    uint64_t started_ms;
    const char *backend;
    const sws_scenario_ops *sc_ops; /* every loop's; the control thread's metrics */
    sws_tls_keys *tls_keys;         /* ticket keys: rotated by the control thread */
    uint64_t tls_rotated_ms;
    /* [acme] (main.c sets them): the ACME thread, the eventfd it wakes the
     * control thread with when a new certificate waits in state_dir, and
     * [acme] http_listen's socket (-1 for each when unused). */
    struct sws_acme_run *acme;
    int acme_fd;
    int acme_http_fd;
} sws_server;

/* serve.c */
int sws_server_start(sws_server *s, const sws_config *cfg, char *err, size_t errlen);
void sws_server_free(sws_server *s);
uint64_t sws_now_ms(void);

/* drain.c: loop side */
void sws_worker_drain(sws_worker *w, bool force);
bool sws_worker_finished(sws_worker *w);
/* drain.c: control side */
void sws_drain_begin(sws_server *s);
void sws_drain_force(sws_server *s);
/* The control thread's loop: signals, admin, the drain timer. Returns the exit
 * status once every worker has finished. */
int sws_control_run(sws_server *s, int sigfd, int admin_fd);

/* admin.c: control thread */
int sws_admin_open(const sws_config *cfg, char *err, size_t errlen);
/* A listening socket on addr; what names the key in errors ("[admin] listen"). */
int sws_admin_listen(const sws_addr *addr, const char *what, char *err, size_t errlen);
void sws_admin_serve_one(sws_server *s, int listen_fd);
/* [acme] http_listen: answers /.well-known/acme-challenge/ only. */
void sws_admin_serve_challenge(sws_server *s, int listen_fd);

/* The HTTP connection (serve.c), for the scenarios that answer on it: their
 * connection hooks (scenario.h) and what `answer` and `more` may call. */
void sws_conn_open(sws_worker *w, sws_scenario *sc, tl_handle h);
void sws_conn_dispatch(sws_worker *w, sws_scenario *sc, const tl_completion *e);
void sws_conn_drain(sws_worker *w, sws_scenario *sc, bool force);
bool sws_conn_finished(const sws_worker *w, const sws_scenario *sc);
void sws_conn_sweep(sws_worker *w, sws_scenario *sc, uint64_t now);
void sws_conn_turn_done(sws_worker *w, sws_scenario *sc);
/* A pending answer (SWS_ANSWER_PENDING) is complete; the connection goes on
 * with the next request once its output is written. */
void sws_conn_answer_end(sws_worker *w, sws_conn *c);
/* Outside a hook (a file read completed): the scenario appended to c->out or
 * ended its answer; write it, and go on with held input. */
void sws_conn_more(sws_worker *w, sws_conn *c);
void sws_conn_close(sws_worker *w, sws_conn *c);
/* Where c's parser keeps Referer and User-Agent: NULL while the access log is
 * off (nothing is kept, or allocated), else storage kept with the slot. */
char *sws_conn_log_fields(sws_worker *w, sws_conn *c);

#endif
