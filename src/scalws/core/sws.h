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
#include <sys/socket.h>

#include "config.h"
#include "cpu.h"
#include "exchange.h"
#include "lend.h"
#include "scenario.h"
#include "sws_http.h"
#include "sws_tls.h"
#include "token.h"
#include "turnloop.h"

#define SWS_VERSION TL_VERSION_STRING /* one project, one version (project() in CMakeLists.txt) */

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

/* The errors_total slot of an error answer's status. */
static inline int sws_status_slot(int status) {
    switch (status) {
    case 400:
        return SWS_ST_400;
    case 408:
        return SWS_ST_408;
    case 413:
        return SWS_ST_413;
    case 414:
        return SWS_ST_414;
    case 431:
        return SWS_ST_431;
    case 502:
        return SWS_ST_502;
    case 504:
        return SWS_ST_504;
    default:
        return SWS_ST_OTHER;
    }
}

/* A client connection's life: the HTTP connection (conn.c), whatever its
 * scenario, moves through these by one function (conn_phase) that checks
 * the step with sws_phase_may. What is
 * in flight (a receive, a write) and what the peer did (end of stream) are
 * flags beside it, not phases. */
typedef enum sws_phase {
    SWS_PH_FREE = 0,    /* the slot serves no connection */
    SWS_PH_OPEN,        /* reading and answering requests */
    SWS_PH_LAST,        /* the answer being written is the last: then close; input is ignored */
    SWS_PH_LAST_LINGER, /* the same, but the peer may still be sending: half-close first */
    SWS_PH_LINGERING,   /* write side shut; input is read and dropped until EOF or timeout */
    SWS_PH_CLOSING,     /* tl_close issued; the slot is freed on its completion */
} sws_phase;

static inline bool sws_phase_may(sws_phase from, sws_phase to) {
    switch (from) {
    case SWS_PH_FREE:
        return to == SWS_PH_OPEN;
    case SWS_PH_OPEN:
        return to == SWS_PH_LAST || to == SWS_PH_LAST_LINGER || to == SWS_PH_CLOSING;
    case SWS_PH_LAST:
        return to == SWS_PH_LAST_LINGER || to == SWS_PH_CLOSING;
    case SWS_PH_LAST_LINGER:
        return to == SWS_PH_LINGERING || to == SWS_PH_CLOSING;
    case SWS_PH_LINGERING:
        return to == SWS_PH_CLOSING;
    case SWS_PH_CLOSING:
        return to == SWS_PH_FREE;
    }
    return false;
}

/* Closing, or already freed (a close turnloop refused frees at once): no
 * operation may be started on it any more. */
static inline bool sws_phase_gone(sws_phase p) {
    return p == SWS_PH_CLOSING || p == SWS_PH_FREE;
}

/* HTTP/2 GOAWAYs sent, by reason (metric label). */
enum { SWS_H2_GA_NO_ERROR, SWS_H2_GA_PROTOCOL, SWS_H2_GA_CALM, SWS_H2_GA_OTHER, SWS_H2_GOAWAY_N };
/* HTTP/2 connections ended by a bound (metric label, http2/session.c). */
enum {
    SWS_H2_FLOOD_RESET,   /* Rapid Reset: RST_STREAM past reset_burst/rate */
    SWS_H2_FLOOD_GLITCH,  /* MadeYouReset: invalid frames and resets past glitch_* */
    SWS_H2_FLOOD_ACKS,    /* SETTINGS/PING acks past max_queued_acks */
    SWS_H2_FLOOD_HEADERS, /* a header block past max_header_blocks or max_continuations */
    SWS_H2_FLOOD_N
};

typedef struct sws_counters {
    sws_ctr requests;
    sws_ctr accepted;
    sws_ctr accepted_on[SWS_LISTENERS_MAX]; /* by listener */
    sws_ctr closed;
    sws_ctr active;
    sws_ctr bytes_in;
    sws_ctr bytes_out;
    sws_ctr errors[SWS_ST_N];
    sws_ctr forced; /* closed by the drain timeout */
    sws_ctr turns;
    sws_ctr accept_pauses;
    sws_ctr recv_starved;
    sws_ctr send_timeouts;     /* closed: a write was not done within send_timeout */
    sws_ctr log_failures;      /* access log lines not written whole (access_log.c) */
    sws_ctr tunnels;           /* proxy Upgrade tunnels begun (a 101 relayed) */
    sws_ctr tunnels_active;    /* gauge: tunnels open now */
    sws_ctr tunnels_drained;   /* tunnels closed by the drain timeout */
    sws_ctr tunnels_idle;      /* tunnels closed by tunnel_idle_timeout */
    sws_ctr tunnel_bytes_up;   /* tunnelled bytes from clients to upstreams */
    sws_ctr tunnel_bytes_down; /* tunnelled bytes from upstreams to clients */
    sws_ctr file_cache_hits;   /* static: lookups answered by the open-file cache */
    sws_ctr file_cache_misses; /* static: lookups that opened (or re-checked) the file */
    sws_ctr file_cold_reads;   /* static: reads handed to the helper (not in page cache) */
    sws_ctr tls_handshakes;
    sws_ctr tls_resumed;
    sws_ctr tls_failed[SWS_TLS_FAIL_N]; /* by sws_tls_fail */
    /* HTTP/2 (http2/): connections and streams; resets sent and received;
     * GOAWAYs sent by reason; refused streams (a bound: concurrency, the
     * loop's streams); connections ended by a flood bound. */
    sws_ctr h2_conns;
    sws_ctr h2_active;
    sws_ctr h2_streams;
    sws_ctr h2_rst_sent;
    sws_ctr h2_rst_recv;
    sws_ctr h2_goaway_sent[SWS_H2_GOAWAY_N];
    sws_ctr h2_goaway_recv;
    sws_ctr h2_refused;
    sws_ctr
        h2_buffer_waits; /* answers that waited for a body buffer (stream_buffers, loop_buffer) */
    sws_ctr h2_floods[SWS_H2_FLOOD_N];
    /* Compression on the fly (core/compress.c): answers by coding (0 gzip,
     * 1 br), plain bytes in and compressed bytes out, and answers sent
     * plain because the loop's encoders were all in use. */
    sws_ctr compress_answers[2];
    sws_ctr compress_in;
    sws_ctr compress_out;
    sws_ctr compress_busy;
} sws_counters;

#define SWS_NIL UINT32_MAX

/* The HTTP connection's types (conn.h); the worker holds their table. */
typedef struct sws_conn sws_conn;
typedef struct sws_held sws_held;

struct sws_server;
struct sws_up_stats;

/* Route names served since the start, each with its counters' slot for good. */
#define SWS_ROUTE_SLOTS 512

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
    /* Its handle of each listener ([server]'s, by index; 0: none on this
     * loop), and which of them are closing (bit i: listener[i]). */
    tl_handle listener[SWS_LISTENERS_MAX];
    uint32_t listeners_closing;
    tl_op sweep_op;
    bool sweep_armed;
    bool sweep_cancelled;
    bool draining;
    bool forced;
    bool done;
    uint64_t drain_at;
    sws_conn *slots; /* nslots, calloc'd: a slot's pages are touched when first used */
    uint32_t nslots;
    uint32_t *free_idx;
    uint32_t nfree;
    uint32_t out_cap;
    /* Output buffers (out_cap bytes) and request parsers: a connection holds
     * them only while it has output or a request under way, so an idle
     * connection costs neither (see out_take and parser_take in conn.c). */
    sws_lend outbuf;
    sws_lend parsers;
    sws_lend reqs;     /* http1/: requests read whole, for a scenario that takes them */
    sws_conn *active;  /* list head */
    uint32_t nstarved; /* connections waiting for a loop buffer */
    sws_held *hpool;   /* recv_buffers nodes */
    uint32_t hfree;    /* free list head */
    uint32_t released; /* buffers given back this turn */
    sws_date_cache date;
    uint32_t resp_max; /* the longest answer the scenario appends at once (>= 512) */
    /* The access log (access_log.h): the files this loop writes to (a
     * reference; NULL when no route logs), its line buffer (SWS_LOG_LINE_MAX
     * bytes), and the dates of its lines, made once a second. */
    struct sws_log_files *logs;
    char *log_buf;
    char clf_date[32], iso_date[32];
    time_t clf_sec;
    sws_counters ctr;
    double cpu_seen; /* control thread only: the last CPU time read (admin.c) */
    sws_scenario sc; /* what this loop serves (scenario.h); never named by the worker */
    /* Routes (route_inst.c): every scenario instance of the loop by id (inst[0]
     * is &sc, the default route's, which also owns the connections), the
     * instance of each route of cfg->routes, and what a reload retired. */
    sws_scenario **inst;
    uint32_t ninst;
    sws_scenario **by_route;      /* cfg->routes->n entries */
    sws_scenario **next_by_route; /* between reload prepare and commit */
    sws_scenario *retired;
    struct sws_route_stats *rstats;    /* by route stat_slot; read by the control thread */
    const struct sws_route *log_route; /* the route answering, for its access log line */
    /* The proxy's upstream while it writes a line: NULL none (access_log.h). */
    const char *log_up_addr;
    int64_t log_up_us;
    tl_handoff *handoff; /* handoff: set on an accepting loop, the subset it feeds */
    bool accepts;        /* has a listener of its own (fixed at start) */
    int fed_by;          /* the loop whose accepts this loop serves; -1 acceptor threads */
    bool lend_sf;        /* connections keep the static scenario's fields (set by its init) */
    /* A route's scenario takes request bytes (the proxy): request heads are
     * kept until their route is chosen (conn.c). Set with the instances. */
    bool stash_heads;
    /* A route can tunnel (a proxy with [proxy] upgrade): HTTP/2 and HTTP/3
     * connections offer extended CONNECT (RFC 8441, RFC 9220). Set with the
     * instances. */
    bool h2_connect;
    /* tl_loop_now as of this turn (the loop's clock moves only in a turn),
     * in microseconds: for a check per request that would otherwise pay a
     * call and a multiplication (the gate's rate). */
    uint64_t now_us;
    /* A request's route is chosen at its head: the table has [route]s, or the
     * default route is gated and its scenario takes request bytes. */
    bool routes_on;
    /* The gate (gate.h): its instance (answers refusals; in inst[]), whether
     * some route is gated, and whether some route limits connections. */
    sws_scenario *gate_sc;
    bool gate_on;
    bool gate_conn;
    bool gate_held;                  /* it holds old route tables for refusals under way */
    struct sws_px_shared *px_shared; /* proxy.c: per-slot state of its instances */
    /* proxy.c: each proxy route's upstream counters on this loop, by route
     * stat slot; made by the loop when the route's first instance starts,
     * kept until the worker is freed, read by the control thread. */
    _Atomic(struct sws_up_stats *) upstats[SWS_ROUTE_SLOTS];
    char *tls_plain; /* tls listener: the loop's decrypt scratch (SWS_TLS_PLAIN) */
    /* The protocols of its connections (transport/conn.h): HTTP/1.1, which
     * every connection begins with, and HTTP/2 (NULL when [server] http2 is
     * off), which the preface or ALPN chooses. */
    const struct sws_conn_proto *conn_proto;
    const struct sws_conn_proto *h2_proto;
    void *h2; /* http2/: the loop's stream table and pools */
    /* Exchange ids (sws_ex_id) are below this: the connection slots
     * (HTTP/1.1's exchange is its connection's) then the HTTP/2 streams. */
    uint32_t nexchanges;
    /* The gate's per-connection entries (gate.c): the connection slots,
     * then the quic endpoint's connections (0: nslots alone). */
    uint32_t npeers;
    /* core/compress.c: the loop's compressing exchanges and pooled encoder
     * states; NULL until the first compressed answer. */
    struct sws_compress *compress;
    /* server/quic_host.c: the loop's quic socket and HTTP/3 endpoint; NULL
     * without a quic listener. */
    struct sws_quic *quic;
    /* The Alt-Svc value the tls listeners' answers carry (h3=":PORT";
     * ma=86400), set once the quic socket is bound; length 0: none. */
    char alt_svc[40];
    uint8_t alt_svc_len;
} sws_worker;

/* One listener of the configuration at start (server.c): how the loops
 * accept on it. Its route is the configured one unless inherited sockets
 * decide (one socket cannot be bound once per loop). */
typedef struct sws_listener {
    sws_accept_route route;
    int shared_fd;         /* exclusive/herd/acceptor: its socket, or -1 */
    tl_acceptor *acceptor; /* acceptor: its threads */
    int *inherited;        /* the inherited sockets that are its (start-up only) */
    int ninherited;
    char text[SWS_ADDR_MAX]; /* what it bound (port 0 is the kernel's choice) */
} sws_listener;

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
    tl_handoff **handoffs; /* handoff: one per accepting loop (balance.c) */
    int nhandoffs;
    sws_listener *listeners; /* cfg->nlisteners */
    int nlisteners;
    /* The control thread's reference to the newest access log files
     * (log_files.h), which every loop was posted; NULL when none. */
    struct sws_log_files *logs;
    /* Every distinct listening socket, for a SIGUSR2 re-exec, and the index
     * of the listener each is (the new process tells port-0 listeners apart
     * by it). */
    int *listen_fds;
    int *listen_fd_of;
    int nlisten_fds;
    pthread_mutex_t shared_lock;
    pthread_t *threads; /* shared model */
    int done_fd;        /* eventfd: a worker thread has finished */
    _Atomic int drain;  /* 0 serving, 1 draining, 2 forced */
    uint64_t started_ms;
    const char *backend;
    const sws_scenario_ops *sc_ops; /* every loop's default; the control thread's metrics */
    unsigned kinds_at_start;        /* 1 << sws_scenario_kind of every route at start */
    uint32_t extra_handles;         /* sws_scenarios_extra_handles at start: the loops' room */
    sws_tls_keys *tls_keys;         /* ticket keys: rotated by the control thread */
    bool quic_steered; /* the kernel steers the quic socket's datagrams by connection ID */
    uint64_t tls_rotated_ms;
    _Atomic int turning; /* threads that have begun turning their loop */
    /* What the listeners really bound (port 0 is the kernel's choice): the
     * first HTTP listener (listeners[i].text: each), and the admin one ("" when off). */
    char listen_text[SWS_ADDR_MAX];
    char admin_text[SWS_ADDR_MAX];
    /* [acme] (main.c sets them): an ACME thread per order ([acme]'s own
     * first when it names domains, then each [acme NAME]'s), the eventfd
     * they wake the control thread with when a new certificate waits in
     * their state_dir, and [acme] http_listen's socket (-1 for each when
     * unused). */
    struct sws_acme_run *acme[1 + SWS_ACME_ORDERS_MAX];
    int nacme;
    int acme_fd;
    int acme_http_fd;
    /* Each proxy route's upstream health (upstream_health.h), by route stat
     * slot: made on the control thread when a route first needs one (before
     * the loops start, or before a reload is posted), freed after the loops
     * stopped. */
    struct sws_up_health *health[SWS_ROUTE_SLOTS];
    /* Per-client limits, shared by every loop (limiter.h): made at start. */
    struct sws_limiter *limiter;
    /* Set by main before sws_server_start, so that the server names nothing
     * of the control thread's: the inherited HTTP listeners (socket
     * activation, or the process a SIGUSR2 replaced; reexec.c) with the
     * listener index each was passed for (-1: not said), and what a loop
     * does with a posted reload (reload.c, on the loop's thread). */
    const int *inherited_fds;
    const int *inherited_of;
    int ninherited;
    void (*reload_apply)(sws_worker *w, uint64_t value);
    /* The quic listener's descriptors a SIGUSR2 passed by name (its
     * sockets, relay links and state: server/quic_handover.h), and the
     * hand-over's state, made at start (NULL without HTTP/3). */
    const struct sws_named_fd *inherited_named;
    int ninherited_named;
    struct sws_quic_handover *quic_handover;
} sws_server;

/* server.c: main thread */
int sws_server_start(sws_server *s, const sws_config *cfg, char *err, size_t errlen);
void sws_server_free(sws_server *s);

/* worker.c */
uint64_t sws_now_ms(void);
/* nlisten: the listener handles the loop will hold (its handle ceiling
 * counts them). */
int sws_worker_init(sws_server *s, sws_worker *w, int index, int nlisten, char *err, size_t errlen);
void sws_worker_arm(sws_worker *w);
void sws_worker_free(sws_worker *w);
void *sws_worker_main(void *arg); /* thread: turns w until it is finished */
/* One turn of w's loop and the dispatch of its completions (at most cap,
 * into cq), as its thread does: the completions handled, or -1 once the
 * worker is finished. Exported for fuzz/fuzz_h2.c, which turns a worker on
 * its own thread with a connection on a socketpair. */
int sws_worker_turn(sws_worker *w, tl_completion *cq, int cap, int timeout_ms);
void *sws_shared_main(void *arg); /* thread of the shared model: arg is the server */

/* route_inst.c: a route's requests, 4xx and 5xx answers and latency (from
 * its first byte read to its answer complete in the output), per loop, by
 * the route's stat slot (the control thread gives each name one for good). */
#define SWS_LAT_BUCKETS 8 /* le 1, 5, 25, 100, 250, 1000, 2500, 10000 ms; +Inf is requests */
typedef struct sws_route_stats {
    sws_ctr requests;
    sws_ctr err4xx, err5xx;
    sws_ctr lat_ms_sum;
    sws_ctr lat[SWS_LAT_BUCKETS];
    sws_ctr limited[4]; /* refused by the gate, by kind (gate.h: SWS_LIMITED_*) */
} sws_route_stats;

int sws_insts_init(sws_worker *w);
void sws_insts_free(sws_worker *w);
/* The instance a completion's token names; NULL when it is gone. */
sws_scenario *sws_inst_of(sws_worker *w, uint64_t token);
/* Every instance but the default holds nothing (drain's finished). */
bool sws_insts_finished(const sws_worker *w);
/* Each instance's date_changed hook. */
void sws_insts_date_changed(sws_worker *w);
/* After a turn: frees the retired instances that hold nothing. */
void sws_insts_reap(sws_worker *w);
/* Reload, on the loop: instances for the routes of next (kept by name and
 * scenario, new ones initialised, each prepared); commit switches them and
 * retires the rest. A negative errno: nothing changed. */
int sws_insts_reload_prepare(sws_worker *w, const sws_config *next);
void sws_insts_reload_commit(sws_worker *w, const sws_config *old);
/* The instance that answers request r of exchange x on connection slot conn
 * (whose listener limits the routes): its route's, or the gate's when the route refuses it
 * (gate.h); allocation-free. */
sws_scenario *sws_route_pick(sws_worker *w, const sws_exchange *x, uint32_t conn,
                             const sws_http_request *r);
/* Its route's instance without the gate, for a request of a connection of
 * listener (its index in [server]'s list): for a request refused already. */
sws_scenario *sws_route_of(sws_worker *w, unsigned listener, const sws_http_request *r);
/* One answer of sc's route: its status and its latency in ms. */
void sws_route_count(sws_worker *w, const sws_scenario *sc, int status, uint64_t ms);
/* Control thread, before a table is used: each route's stat slot by name.
 * -ENOSPC once SWS_ROUTE_SLOTS names were seen. */
int sws_route_slots_assign(struct sws_routes *t, char *err, size_t errlen);
/* Control thread: the routes' lines of /metrics. */
void sws_route_metrics(const sws_server *s, FILE *f);
/* Control thread: how many stat slots are named, and slot k's route name. */
uint32_t sws_route_slot_count(void);
const char *sws_route_slot_name(uint32_t k);
/* Control thread, after sws_route_slots_assign and before the table is
 * used: an upstream health record for every proxy route that has none yet; a
 * route whose upstreams or health_* keys differ from its record's is refused
 * (one line in err), since the record and its check thread are its for good. */
int sws_route_health_build(sws_server *s, const struct sws_routes *t, char *err, size_t errlen);
/* Its loop: route stat slot k's upstream counters, made on first use. */
struct sws_up_stats *sws_worker_upstats(sws_worker *w, uint32_t k);
/* Drain: every instance's drain hook, the default's first (which drains the
 * connections; the others what they hold of their own, a proxy its pool). */
void sws_insts_drain(sws_worker *w, bool force);

/* ready.c: "host:port" ("[v6]:port") of a bound socket; 0 or a negative errno. */
int sws_sockname_text(int fd, char *out, size_t cap);
/* Writes "listen ADDR [tls] [name=NAME]" per listener (ADDR as bound),
 * "admin ADDR", "pid N" to path through a temp file and rename. */
int sws_ready_write(const char *path, const sws_server *s);
/* Ends a file written whole to tmp (flushed, synced, closed) and renames it
 * to path, so readers see it complete or not at all: 0 or a negative errno
 * (tmp removed). ready.c; the pid file uses it too. */
int sws_file_commit(FILE *f, const char *tmp, const char *path);

/* pid_file.c (control/): main thread. Writes our pid to path through a temp
 * file and rename: 0 or a negative errno. Removes path if it names us. */
int sws_pid_file_write(const char *path);
void sws_pid_file_remove(const char *path);

/* worker.c: draining, loop side */
void sws_worker_drain(sws_worker *w, bool force);
/* Until when, in a drain, an idle keep-alive connection may still send a
 * request that is answered (drain_idle_grace, never past keepalive_timeout). */
static inline uint64_t sws_drain_grace_end(const sws_worker *w) {
    uint32_t g = w->cfg->drain_idle_grace_ms;
    if (g > w->cfg->keepalive_timeout_ms)
        g = w->cfg->keepalive_timeout_ms;
    return w->drain_at + g;
}
bool sws_worker_finished(sws_worker *w);
/* drain.c: control side */
void sws_drain_begin(sws_server *s);
void sws_drain_force(sws_server *s);
/* log_reopen.c: control thread, on SIGUSR1: every loop writes to the access
 * log files opened again by their paths (logrotate's signal). */
void sws_logs_reopen(sws_server *s);
/* control.c: the control thread's loop: signals, admin, the drain timer. Returns the exit
 * status once every worker has finished. */
int sws_control_run(sws_server *s, int sigfd, int admin_fd);

/* balance.c: start-up (listen, accepts) and the control thread (the rest) */
bool sws_balance_accepts(const sws_server *s, sws_accept_route route, int i);
/* Listener li's handles on the loops of route (reuse-port-cpu, handoff);
 * the handoffs are made with the first listener's and fed by every one. */
int sws_balance_listen(sws_server *s, sws_accept_route route, int li, const struct sockaddr *addr,
                       socklen_t len, char *err, size_t errlen);
void sws_balance_free(sws_server *s);
void sws_balance_describe(const sws_server *s, char *buf, size_t len);
double sws_balance_imbalance_requests(const sws_server *s);
double sws_balance_imbalance_active(const sws_server *s);
void sws_balance_metrics(const sws_server *s, FILE *f);

/* admin.c: control thread */
int sws_admin_open(const sws_config *cfg, char *err, size_t errlen);
/* A listening socket on addr; what names the key in errors ("[admin] listen").
 * share: SO_REUSEPORT, so that a SIGUSR2 successor can bind it too. */
int sws_admin_listen(const sws_addr *addr, const char *what, bool share, char *err, size_t errlen);
void sws_admin_serve_one(sws_server *s, int listen_fd);
/* [acme] http_listen: answers /.well-known/acme-challenge/ only. */
void sws_admin_serve_challenge(sws_server *s, int listen_fd);

#endif
