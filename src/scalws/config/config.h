/* scalwsd's configuration: every key has a default, so an empty file (or none)
 * serves `respond` on 127.0.0.1:8080. The keys are one table (config_keys.c):
 * parsing, defaults, --help, --print-config and reload's restart check read it.
 * Loaded once, before any thread starts; read-only afterwards, so every thread
 * may read it without locks. */
#ifndef SWS_CONFIG_H
#define SWS_CONFIG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include "access_config.h"
#include "acme_config.h"
#include "header_policy.h"
#include "log_format.h"
#include "proxy_config.h"
#include "redirect_config.h"
#include "sws_http.h"
#include "tls_config.h"

typedef enum sws_accept_route {
    SWS_ACCEPT_REUSE_PORT = 0,
    SWS_ACCEPT_HANDOFF,
    SWS_ACCEPT_EXCLUSIVE,
    SWS_ACCEPT_ACCEPTOR,
    SWS_ACCEPT_HERD,
    SWS_ACCEPT_REUSE_PORT_CPU, /* reuse-port, the kernel steering by the SYN's CPU (BPF) */
} sws_accept_route;

typedef enum sws_scenario_kind {
    SWS_SCENARIO_RESPOND = 0,
    SWS_SCENARIO_PROXY,
    SWS_SCENARIO_STATIC,
    SWS_SCENARIO_REDIRECT
} sws_scenario_kind;

typedef enum sws_backend { SWS_BACKEND_AUTO = 0, SWS_BACKEND_EPOLL, SWS_BACKEND_URING } sws_backend;

#define SWS_ADDR_MAX 128
#define SWS_CONFIG_KEYS_MAX 160
#define SWS_BODY_MAX 65536
/* Sections a file may name (a [route NAME] is one each): past it, a section
 * given twice is no longer noticed. Above SWS_ROUTES_MAX plus the others. */
#define SWS_CONFIG_SECTIONS_MAX 300

typedef struct sws_addr {
    char text[SWS_ADDR_MAX];
    struct sockaddr_storage ss;
    socklen_t len;
} sws_addr;

/* [server] listen, one line each ("ADDR [tls|quic] [name=NAME] [http2=on|off]"):
 * what every loop accepts on (server.c), in the order of the file. A route's
 * listen key names them (bit i of sws_route.listeners is listeners[i]). */
#define SWS_LISTENERS_MAX 16
#define SWS_LISTENER_NAME_MAX 32
typedef struct sws_listener_cfg {
    sws_addr addr;
    char name[SWS_LISTENER_NAME_MAX]; /* name=NAME; "" none (named by its address) */
    bool tls;                         /* speaks TLS ([tls], [tls NAME]) */
    /* QUIC and HTTP/3 on UDP (doc/http3.md): a socket per loop, no accepts;
     * the TCP listeners' code skips it. TLS is GnuTLS's, not tls's. */
    bool quic;
    int8_t http2;     /* http2=on/off; -1 unset: [server] http2 */
    char origin[320]; /* "file:line: [server] listen", "--listen" or the default */
} sws_listener_cfg;

/* One try_files entry: a path template, or "=CODE" (the last only). */
#define SWS_TRY_MAX 8
typedef struct sws_try {
    uint8_t off, len; /* the entry's text in try_files */
    uint8_t uri;      /* where "$uri" is in it, plus one (0: none) */
    uint16_t code;    /* "=CODE": the status answered (0: a path) */
} sws_try;

/* [static]: the static scenario (src/scalws/static/). */
typedef struct sws_static_config {
    char root[1024];         /* required with scenario static */
    char index[64];          /* file served for a directory ("" none: 403) */
    char default_type[128];  /* for names mime_types has no entry for */
    char cache_control[128]; /* "" none */
    char mime_types[256];    /* the type map file */
    int follow_symlinks;     /* sws_symlinks: off (inside the root only), on, owner */
    bool dotfiles;           /* allow: serve names beginning with '.' */
    bool precompressed;      /* FILE.gz / FILE.br siblings (gzip_static) */
    uint32_t cache_entries;  /* open-file cache entries per loop; 0 off */
    uint32_t cache_valid_ms; /* an entry is checked against the file after this */
    char try_files[256];     /* "$uri $uri/ /index.html" ("" none), parsed into try */
    uint8_t ntry;
    sws_try try[SWS_TRY_MAX];
    bool autoindex; /* a directory without its index is listed (else 403) */
} sws_static_config;

/* error_page: files sent as the body of a route's error answers, read when
 * the configuration is loaded (error_page.c) and kept in memory, so that an
 * error answer never touches the disk. */
#define SWS_ERROR_PAGE_SPEC 512  /* the key's value */
#define SWS_ERROR_PAGE_MAX 16384 /* bytes of one file: it goes out in one write */
#define SWS_ERROR_PAGES_MAX 16   /* statuses of one route */

typedef struct sws_error_page {
    uint16_t status;
    uint32_t len;
    const char *content_type; /* by the file's extension */
    const char *body;         /* len bytes, in its set's data */
} sws_error_page;

/* One route's pages. Owned by the route table; an HTTP/2 stream sending one
 * from where it is holds a reference too (a reload may free the table first). */
typedef struct sws_error_pages {
    _Atomic int refs;
    int n;
    uint32_t largest;
    sws_error_page p[SWS_ERROR_PAGES_MAX];
    char data[];
} sws_error_pages;
/* [compress]: compression on the fly (core/compress.c), per route as the
 * scenario sections are. */
#define SWS_COMPRESS_TYPES_MAX 200
#define SWS_COMPRESS_DEFAULT_TYPES                                                                 \
    "text/html text/css text/plain text/xml text/javascript application/javascript "               \
    "application/json application/xml application/wasm image/svg+xml"
typedef struct sws_compress_config {
    bool on;             /* compress = on */
    uint32_t min_length; /* a known length below it goes plain */
    uint32_t level_gzip; /* zlib's level, 1..9 */
    uint32_t level_br;   /* brotli's quality, 0..11 */
    /* "type/sub" words (or a major type and "/" "*"), lowercased, one space apart */
    char types[SWS_COMPRESS_TYPES_MAX];
} sws_compress_config;

/* The settings one scenario instance serves with: those of the [respond],
 * [static], [proxy] and [redirect] sections, for the default route (the top-level
 * sections) or for one [route NAME] (the same keys inside it). Compact: the
 * body is on the heap, so a hundred routes do not carry a hundred 64 KiB
 * arrays. Built by route_config.c, owned by the route table (route.h). */
typedef struct sws_scenario_cfg {
    sws_scenario_kind scenario;
    bool strip_prefix; /* a route's: the scenario sees the path without the route's prefix */
    int status;
    size_t body_len;
    char *body; /* body_len bytes (NULL when 0) */
    char content_type[128];
    sws_static_config stat;
    sws_proxy_config proxy;
    sws_redirect_config redirect;
    /* Its header policy (add_header lines: its route's, else [server]'s),
     * owned like body; NULL: none. */
    struct sws_header_policy *headers;
    sws_compress_config comp;
    /* Who may ask and how often ([server] for the default route, or the
     * route's section); its users are loaded with the route table. */
    sws_access_config access;
    /* proxy with tls = on: the client context its upstream connections and
     * health checks use, owned (built and freed with the route table). */
    struct sws_tls_client *up_tls;
    /* Its route's error pages (NULL: none), owned by the route table. */
    sws_error_pages *pages;
} sws_scenario_cfg;

#define SWS_ROUTE_NAMES_MAX 4096 /* host names of one route */
#define SWS_ROUTE_PATH_MAX 128   /* the parser keeps 127 bytes of the target (SWS_HTTP_PATH_MAX) */

/* [route NAME]'s own keys (sws_route_key_table), parsed into the loader's
 * scratch config; route_config.c turns them into a route. */
typedef struct sws_route_keys {
    /* Its host names so far, each lowercased and NUL-terminated ("*.a.b"
     * kept as ".a.b"), on the heap while the section is read (route_config.c
     * frees it); NULL: any host. */
    char *hosts;
    uint32_t hosts_len, hosts_cap;
    uint16_t nhosts;
    char path[SWS_ROUTE_PATH_MAX]; /* "" any path */
    bool prefix;                   /* path is a path_prefix */
    bool strip_prefix;
    int scenario; /* sws_scenario_kind */
    uint32_t path_line, host_line;
    /* The route's access log: "" [server]'s, "off" none, else a file; its
     * format ("" [server]'s), compiled when read. */
    char access_log[256];
    uint32_t access_log_line;
    char log_format[200];
    sws_log_format log_fmt;
    uint32_t error_page_line;
    /* listen = NAME, NAME: the listeners it serves ("" every one), resolved
     * against [server]'s list when the table is built. */
    char listen[256];
    uint32_t listen_line;
} sws_route_keys;

struct sws_routes;

/* [http2] (http2/): the bounds of an HTTP/2 connection, each a defence
 * against one known attack (doc/http2.md). */
typedef struct sws_h2_config {
    uint32_t max_concurrent_streams; /* SETTINGS_MAX_CONCURRENT_STREAMS; more: REFUSED_STREAM */
    uint32_t window;                 /* each stream's receive window (request bodies) */
    uint32_t streams_per_loop;       /* streams under way on one loop; more: REFUSED_STREAM */
    uint32_t reset_burst;            /* RST_STREAM received (Rapid Reset): burst, then */
    uint32_t reset_rate;             /* this many per second; past it: GOAWAY */
    uint32_t glitch_burst;           /* resets sent and invalid frames received */
    uint32_t glitch_rate;            /* (MadeYouReset): burst, per second; past it: GOAWAY */
    uint32_t max_continuations;      /* CONTINUATION frames of one header block */
    uint32_t max_queued_acks;        /* SETTINGS and PING acks waiting to be sent */
    uint32_t max_header_blocks;      /* decoded header bytes of a block, times header_bytes */
    uint32_t stream_buffers;         /* answers of one connection waiting in a buffer at once */
    uint64_t loop_buffer;            /* answer bytes buffered on one loop, every stream together */
} sws_h2_config;

/* [http3] (http3/, doc/http3.md): the bounds of a QUIC connection and its
 * HTTP/3, each given to the loops' endpoints for their new connections. */
typedef struct sws_h3_config {
    uint32_t max_concurrent_streams; /* MAX_STREAMS: requests a client may have under way */
    uint64_t stream_window;          /* a request body's flow-control window */
    uint64_t connection_window;      /* a connection's, every stream together */
    uint64_t qpack_table;            /* the QPACK dynamic table a client may use */
    uint32_t qpack_blocked;          /* streams that may wait on it */
    uint32_t idle_timeout_ms;        /* max_idle_timeout */
    uint32_t max_connections;        /* per loop; a client's Initial past it is dropped */
    uint32_t streams_per_loop;       /* the stream table of a loop (Restart) */
    bool early_data;                 /* 0-RTT taken, for safe methods (RFC 8470) */
    uint32_t early_data_window_ms;   /* how old a ticket may be for it; the replay memory */
    /* the quic listener's bursts to one peer go out as UDP GSO sends
     * (server/quic_send.c), where the kernel has UDP_SEGMENT */
    bool gso;
    /* its socket receives with UDP_GRO into a datagram pool of 64 KiB
     * buffers per loop (server/quic_host.c), where the kernel has it */
    bool gro;
} sws_h3_config;

/* An [acme NAME] section as read (acme_sections.c): its keys, which of them
 * it set (bits in the order of its keys) and their lines. */
typedef struct sws_acme_order {
    sws_acme_config a;
    unsigned set;
    uint32_t line;
    uint32_t key_line[5];
} sws_acme_order;

typedef struct sws_config {
    /* [server] */
    sws_listener_cfg listeners[SWS_LISTENERS_MAX];
    int nlisteners;
    bool listen_fresh; /* the next listen line starts the list (the default's is replaced) */
    /* Settled from the list (sws_listeners_settle): some listener speaks TLS,
     * and where the first tls listener (else the first) was set. */
    bool listen_tls;
    char listen_origin[320];
    int event_loops;    /* -1 auto; 0 the shared baseline; N */
    int worker_threads; /* threads of the shared baseline; -1 auto */
    sws_accept_route accept;
    int acceptors; /* accept = handoff: accepting loops, each feeding its own subset */
    sws_backend backend;
    uint32_t drain_timeout_ms;
    uint32_t drain_idle_grace_ms; /* used capped at keepalive_timeout_ms */
    uint32_t restart_timeout_ms;  /* SIGUSR2: a new process not serving by then is stopped */
    char access_log[256];         /* empty: none */
    char log_format[200];         /* as written; compiled into log_fmt */
    sws_log_format log_fmt;
    char pid_file[256]; /* empty: none */
    /* "404 FILE, 502 503 FILE": the default route's error pages ([server]),
     * or, in a route's scratch config, the route's. */
    char error_page[SWS_ERROR_PAGE_SPEC];
    bool defer_accept; /* TCP_DEFER_ACCEPT: accept when the request's first bytes arrive */
    sws_scenario_kind scenario;
    bool http2;   /* the listener speaks HTTP/2 too (ALPN h2, or the preface on plaintext) */
    bool alt_svc; /* a quic listener is advertised on the tls listeners (Alt-Svc) */
    /* [http2] */
    sws_h2_config h2;
    /* [http3] */
    sws_h3_config h3;
    /* [proxy] */
    sws_proxy_config proxy;
    /* [static] */
    sws_static_config stat;
    /* [redirect] */
    sws_redirect_config redirect;
    /* [server] add_header, add_header_always; in a route's scratch config,
     * the route's own lines */
    sws_header_keys hdr;
    /* [compress] */
    sws_compress_config comp;
    /* [respond] */
    int status;
    char body[SWS_BODY_MAX];
    size_t body_len;
    char content_type[128];
    /* [limits] */
    sws_http_limits limits;
    uint32_t header_timeout_ms;
    uint32_t keepalive_timeout_ms;
    uint32_t send_timeout_ms;      /* a write of out (16 KiB) not done by then closes */
    uint32_t max_connections;      /* per loop */
    uint32_t handshake_timeout_ms; /* a TLS handshake not done by then closes */
    /* [tls] */
    sws_tls_config tls;
    /* [tls NAME] sections, and [tls]'s own cert and key first when set
     * (tls_sections.c); shared by reference between copies of this config. */
    sws_tls_certs *tls_certs;
    /* Built from [tls] for a tls listener by whoever owns this config (the
     * server at start, reload.c for a reloaded one); freed with the config.
     * Connections hold references to its SSL_CTXs, so they outlive it. */
    struct sws_tls_server *tls_server;
    /* [acme]: with a tls listener and no [tls] cert/key, tls.cert and tls.key
     * name state_dir's cert.pem and key.pem (tls_from_acme). */
    sws_acme_config acme;
    sws_addr acme_http; /* [acme] http_listen, parsed; len 0 when unset */
    bool tls_from_acme;
    /* [acme NAME]: an order each, settled over [acme] (acme_sections.c). */
    sws_acme_order acme_orders[SWS_ACME_ORDERS_MAX];
    int nacme_orders;
    /* [admin] */
    bool admin_enabled;
    sws_addr admin;
    sws_acl admin_allow; /* n 0: any address */
    /* [server]'s access keys: the default route's (and a [route NAME]'s
     * while the loader reads it) */
    sws_access_config access;
    /* The route table (route.h), built by sws_config_build: the [route NAME]
     * sections and the default route. Shared by reference between copies of
     * this config (sws_routes_ref); sws_config_release drops it. */
    struct sws_routes *routes;
    struct sws_route_load *route_load; /* while loading: the [route] sections so far */
    sws_route_keys rt;                 /* scratch of the [route NAME] being read */
    /* The loader's first warning ("file:line: ..."; "" none): valid but likely
     * not meant, such as a section given twice. sws_config_preflight_notes
     * prints it. */
    char load_note[400];
    /* Where each key's value came from, by its index in the key table. */
    uint8_t origin[SWS_CONFIG_KEYS_MAX]; /* enum sws_origin */
    uint32_t origin_line[SWS_CONFIG_KEYS_MAX];
} sws_config;

enum sws_origin { SWS_FROM_DEFAULT = 0, SWS_FROM_FILE, SWS_FROM_FLAG };

/* One configuration key. The table is the only list of keys there is. */
typedef enum sws_key_kind {
    SWS_KEY_UINT,   /* unsigned integer field of `width` bytes, lo..hi */
    SWS_KEY_SIZE,   /* the same with k/m/g suffixes */
    SWS_KEY_MS,     /* uint32_t milliseconds, lo..hi; a bare number is seconds */
    SWS_KEY_BOOL,   /* bool: on/off (true/false, 1/0) */
    SWS_KEY_ENUM,   /* int-sized enum field: the index of the value in names */
    SWS_KEY_STRING, /* char[width], one line */
    SWS_KEY_CUSTOM, /* its own parse and format */
} sws_key_kind;

typedef struct sws_key {
    const char *section;
    const char *name;
    sws_key_kind kind;
    size_t off;   /* of the field in sws_config */
    size_t width; /* bytes of the field (integers: 4 or 8; strings: the array) */
    uint64_t lo, hi;
    const char *const *names; /* SWS_KEY_ENUM: NULL-terminated */
    int (*parse)(sws_config *c, const char *v, char *why, size_t len);
    void (*format)(const sws_config *c, char *out, size_t len); /* "" when unset */
    const char *def; /* the default as a file would write it; NULL: unset */
    bool restart;    /* SIGHUP cannot change it: a new value is refused until a restart */
    const char *help;
} sws_key;

/* The table and its length. */
extern const sws_key sws_config_keys[];
extern const int sws_config_nkeys;
/* [route NAME]'s own keys (host, path, path_prefix, scenario, strip_prefix);
 * every key of [respond], [static], [proxy] and [compress] is taken in a
 * route too. */
extern const sws_key sws_route_key_table[];
extern const int sws_route_nkeys;

/* Sets k from its text, as the loader does. 0 or -EINVAL with why. */
int sws_config_set_key(sws_config *c, const sws_key *k, const char *v, char *why, size_t len);
/* Whether typed is a typo of known (one or two edits, and fewer than half the
 * word) closer than *best edits; if so *best becomes its distance. Start with
 * *best = 9. For "did you mean" in the loaders' messages. */
bool sws_config_near(const char *typed, const char *known, unsigned *best);
/* The index of [section] key in the key table, or -1. */
int sws_config_key_index(const char *section, const char *key);
/* What a scenario's settings cannot be served with (cfg of a route, named:
 * it has host names; or the default route's): why, written into buf, or
 * NULL. A redirect without `to`, or whose $host would be any Host the client
 * sends without any_host; a respond 3xx redirect status (it has no Location). */
const char *sws_scenario_cfg_check(const sws_scenario_cfg *cfg, bool named, char *buf, size_t len);
/* Drops what a loaded or built config holds on the heap (its route table). */
void sws_config_release(sws_config *c);

void sws_config_defaults(sws_config *c);

/* Loads an ini file over the current values. On error returns -EINVAL (or the
 * file's -errno) and writes one line naming file, line and key into err. */
int sws_config_load(sws_config *c, const char *path, char *err, size_t errlen);

/* Sets one key, as the file would ("server", "listen", "127.0.0.1:8080").
 * Returns 0 or -EINVAL with a reason in err (without file and line). */
int sws_config_set(sws_config *c, const char *section, const char *key, const char *value,
                   char *err, size_t errlen);

/* listeners.c: after the file and the flags, the list checked (an address
 * or a name given twice; tls listeners that disagree on http2), and
 * listen_tls and listen_origin set. 0 or -EINVAL with "origin: why". */
int sws_listeners_settle(sws_config *c, char *err, size_t errlen);
/* Whether listener i speaks HTTP/2 (its http2=, else [server] http2). */
bool sws_listener_h2(const sws_config *c, int i);
/* The quic listener's index (there is at most one), -1 none. */
int sws_listener_quic(const sws_config *c);
/* The listener text names (its name=, else its address as written): its
 * index, -1 none, -2 more than one (two unnamed listeners of one address). */
int sws_listener_find(const sws_config *c, const char *text);
/* "name=NAME" or the address, as /status and messages name listener i. */
const char *sws_listener_label(const sws_config *c, int i);

/* "host:port", "[v6]:port", ":port" or "port" into a socket address. */
int sws_parse_addr(const char *text, sws_addr *out);
/* host:port (or [v6]:port) to an address. peer: a host and a port 1..65535 are
 * required (an upstream); otherwise the host may be empty (a listener). */
int sws_parse_endpoint(const char *text, bool peer, struct sockaddr_storage *ss, socklen_t *len);

/* Values as the file writes them: "10s"/"500ms"/"3" (seconds), "8k"/"1m",
 * and plain integers within lo..hi. 0 or -EINVAL. */
int sws_parse_ms(const char *v, uint64_t *out);
int sws_parse_size(const char *v, uint64_t *out);
int sws_parse_uint(const char *v, uint64_t lo, uint64_t hi, uint64_t *out);

/* What the command line sets: kept by the control thread so that a reload
 * (SIGHUP) reads the same file and lets the same flags win over it. */
typedef struct sws_cli {
    const char *config, *listen, *threads, *scenario, *upstream, *root;
} sws_cli;

/* Defaults, then the file, then the flags; checks what needs several keys.
 * 0, or a negative errno with one line in err ("file:line: ..." or "--flag: ..."). */
int sws_config_build(sws_config *c, const sws_cli *cli, char *err, size_t errlen);

/* error_page.c: the value's syntax ("CODE [CODE...] FILE[, ...]", codes
 * 400..599, each once): 0, or -EINVAL with why. */
int sws_error_page_check(const char *v, char *why, size_t len);
/* The error pages of every route of c's table read from their files (each
 * a regular file of at most SWS_ERROR_PAGE_MAX bytes with a known
 * extension): 0, or -EINVAL with "file:line: [section] error_page: why".
 * sws_config_build calls it; config_file names the file in messages. */
int sws_error_pages_load(sws_config *c, const char *config_file, char *err, size_t errlen);
/* The page of cfg's route for status, or NULL. Any thread. */
const sws_error_page *sws_error_page_find(const sws_scenario_cfg *cfg, int status);
/* Room an answer with cfg's largest page needs in the output (0: no pages). */
uint32_t sws_error_pages_room(const sws_scenario_cfg *cfg);
void sws_error_pages_ref(sws_error_pages *p);
void sws_error_pages_unref(sws_error_pages *p);

/* preflight.c: what the start would refuse in the files and directories the
 * configuration names (the access log's directory, each static root and
 * mime_types file, the tls listener's certificate, key and OCSP file), checked
 * without creating or writing anything, and acceptors against the loops. 0, or a negative errno
 * with one line in err naming the file, line and key ("[route NAME] root" for a route's). */
enum {
    SWS_PRE_ACCESS_LOG = 1,
    SWS_PRE_STATIC = 2,
    SWS_PRE_TLS = 4,
    SWS_PRE_LOOPS = 8,     /* acceptors within the loops the start will make */
    SWS_PRE_PID_FILE = 16, /* pid_file's directory takes a new file */
    SWS_PRE_ALL = 31
};
int sws_config_preflight(const sws_config *c, const sws_cli *cli, unsigned what, char *err,
                         size_t errlen);
/* Warnings, one line each, for what is valid but likely not meant: the
 * loader's load_note, [tls] keys without a tls listener. */
void sws_config_preflight_notes(FILE *f, const sws_config *c, const sws_cli *cli);
/* tls_sections.c: one key of a [tls NAME] section, for the loader. 0 or
 * -EINVAL with why. */
int sws_tls_section_kv(sws_config *c, const char *section, const char *key, const char *value,
                       const char *path, int section_line, int key_line, char *why, size_t len);
/* acme_sections.c: one key of an [acme NAME] section, for the loader (0 or
 * -EINVAL with why); then, once [acme] is read, each order over [acme]'s
 * keys, with its pair in tls_certs on a tls listener (0 or -EINVAL with
 * "file:line: [acme NAME] ..."); whether an order answers HTTP-01; whether
 * a certificate of tls_certs is an order's; --print-config's sections. */
int sws_acme_section_kv(sws_config *c, const char *section, const char *key, const char *value,
                        int section_line, int key_line, char *why, size_t len);
int sws_acme_sections_settle(sws_config *c, const char *file, char *err, size_t errlen);
bool sws_acme_any_http01(const sws_config *c);
bool sws_acme_is_order_cert(const sws_config *c, const char *name);
void sws_acme_sections_print(FILE *f, const sws_config *c);
/* sws_config_build, after [acme]: [tls]'s pair first in tls_certs, and the
 * checks across sections (cert and key in each, one default). */
int sws_tls_sections_settle(sws_config *c, const char *file, char *err, size_t errlen);
/* What a server is built from (src/tls): the [tls] keys and the certificates;
 * the caller sets nloops, keys and prev. */
struct sws_tls_build;
void sws_config_tls_build(const sws_config *c, struct sws_tls_build *b);
/* --print-config: the [tls NAME] sections; a comment line with what the
 * certificate at cert serves. */
void sws_tls_sections_print(FILE *f, const sws_config *c);
void sws_tls_describe_line(FILE *f, const char *cert);
/* The start line's certificates: a summary, one line each (16 at most), a
 * warning for an expired one. */
struct sws_tls_server;
void sws_tls_print_certs(FILE *f, const struct sws_tls_server *ts);
/* One line per certificate ts refused to load ("what: certificate refused:
 * why; still serving ..."); their count. */
int sws_tls_log_refused(FILE *f, const struct sws_tls_server *ts, const char *what);

/* The key's current value as a file would write it ("" when unset). */
void sws_config_format(const sws_config *c, const sws_key *k, char *out, size_t len);

/* --print-config: every key, its value and where it came from, as an ini file
 * that scalwsd reads back to the same configuration. */
void sws_config_print(FILE *f, const sws_config *c, const sws_cli *cli);

/* --help: every key with its default and help, by section. */
void sws_config_usage(FILE *f);

/* The first key that SIGHUP cannot change and whose value differs, written as
 * "[section] key changed (old -> new)" into buf; NULL when there is none. */
const char *sws_config_restart_change(const sws_config *o, const sws_config *n, char *buf,
                                      size_t len);

const char *sws_accept_name(sws_accept_route r);
const char *sws_scenario_name(sws_scenario_kind k);
const char *sws_backend_name(sws_backend b);

#endif
