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
#include "sws_http.h"
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
} sws_counters;

/* Token layout: connection index << 8 | tag. */
enum sws_tag {
    SWS_T_ACCEPT = 1,
    SWS_T_RECV,
    SWS_T_WRITE,
    SWS_T_CLOSE,
    SWS_T_ADOPT,
    SWS_T_SWEEP,
    SWS_T_POST,
    SWS_T_LISTENER_CLOSE,
};
/* Tags from 32 up belong to the proxy scenario (proxy.c, upstream.c). */
#define SWS_T_PROXY_FIRST 32
#define SWS_TOKEN(idx, tag) (((uint64_t)(idx) << 8) | (uint64_t)(tag))
#define SWS_TOKEN_IDX(t) ((uint32_t)((t) >> 8))
#define SWS_TOKEN_TAG(t) ((unsigned)((t)&0xffu))

/* Messages from the control thread (tl_loop_post, value). */
enum { SWS_MSG_DRAIN = 1, SWS_MSG_FORCE = 2 };

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
} sws_conn;

/* The prebuilt respond answer: head + body, for keep-alive and for close,
 * rebuilt when the Date changes (once a second at most). */
typedef struct sws_respond {
    char *ka;
    char *close;
    uint32_t ka_len, ka_head;
    uint32_t close_len, close_head;
    uint32_t date_version;
    size_t cap;
} sws_respond;

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
    sws_respond resp;
    uint32_t resp_max; /* the longest answer this loop may append */
    char clf_date[32];
    time_t clf_sec;
    FILE *access_log;
    sws_counters ctr;
    double cpu_seen;         /* control thread only: the last CPU time read (admin.c) */
    struct sws_proxy *proxy; /* scenario proxy: this loop's sessions and upstream pool */
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
    /* What the listeners really bound (port 0 is the kernel's choice): the
     * first HTTP listener, and the admin one ("" when off). */
    char listen_text[SWS_ADDR_MAX];
    char admin_text[SWS_ADDR_MAX];
} sws_server;

/* serve.c */
int sws_server_start(sws_server *s, const sws_config *cfg, char *err, size_t errlen);
void sws_server_free(sws_server *s);
uint64_t sws_now_ms(void);

/* ready.c: "host:port" ("[v6]:port") of a bound socket; 0 or a negative errno. */
int sws_sockname_text(int fd, char *out, size_t cap);
/* Writes "listen ADDR" per distinct listener, "admin ADDR", "pid N" to path
 * through a temp file and rename. */
int sws_ready_write(const char *path, const sws_server *s);

/* respond.c */
int sws_respond_init(sws_respond *r, const sws_config *cfg, const sws_date_cache *date);
void sws_respond_refresh(sws_respond *r, const sws_config *cfg, const sws_date_cache *date);
void sws_respond_free(sws_respond *r);

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
void sws_admin_serve_one(sws_server *s, int listen_fd);

/* conn helpers shared by serve.c and drain.c */
void sws_conn_close(sws_worker *w, sws_conn *c);
/* Where c's parser keeps Referer and User-Agent: NULL while the access log is
 * off (nothing is kept, or allocated), else storage kept with the slot. */
char *sws_conn_log_fields(sws_worker *w, sws_conn *c);
void sws_conn_try_finish(sws_worker *w, sws_conn *c);

#endif
