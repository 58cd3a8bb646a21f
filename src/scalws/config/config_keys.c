/* The one table of scalwsd's configuration keys, in the order --help and
 * --print-config list them: section, key, kind, default, whether SIGHUP may
 * change it, and one line of help (nginx's command arrays are the model).
 * A key is added here and nowhere else (a custom key's parser and formatter
 * beside their theme's in keys_*.c, declared in keys.h); the man page and the
 * example file are checked against this table by tests/e2e/man_page.sh and
 * example_config.sh. */
#include "config.h"
#include "keys.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* In the order of sws_accept_route. */
static const char *const accept_names[] = {"reuse-port", "handoff",        "exclusive", "acceptor",
                                           "herd",       "reuse-port-cpu", NULL};
static const char *const backend_names[] = {"auto", "epoll", "uring", NULL};
static const char *const scenario_names[] = {"respond", "proxy", "static", "redirect", NULL};
static const char *const symlink_names[] = {"off", "on", "owner", NULL};
static const char *const dotfile_names[] = {"deny", "allow", NULL};
static const char *const pool_names[] = {"per_loop", "shared", NULL};
/* In the order of enum sws_balance and enum sws_forwarded (proxy_config.h). */
static const char *const balance_names[] = {"round_robin", "least_conn", "p2c", NULL};
static const char *const forwarded_names[] = {"x-forwarded", "rfc7239", "off", NULL};

const char *sws_accept_name(sws_accept_route r) {
    return accept_names[r];
}
const char *sws_scenario_name(sws_scenario_kind k) {
    return scenario_names[k];
}
const char *sws_backend_name(sws_backend b) {
    return backend_names[b];
}

/* ---- keys whose values are not one of the plain kinds ------------------- */

/* One listener: "host:port" and its options, "tls" (HTTPS, [tls]), "quic"
 * (HTTP/3 on UDP, [tls] cert and key),
 * "name=NAME" (what a route's listen key calls it) and "http2=on|off". Each
 * line adds one; the first line of a file (or --listen) replaces the default. */
static int listener_option(sws_listener_cfg *l, const char *o, size_t n, char *why, size_t len) {
    if (n == 3 && strncmp(o, "tls", 3) == 0) {
        l->tls = true;
        return 0;
    }
    if (n == 4 && strncmp(o, "quic", 4) == 0) {
        l->quic = true;
        return 0;
    }
    if (n > 5 && strncmp(o, "name=", 5) == 0) {
        size_t nl = n - 5;
        bool ok = nl < sizeof(l->name);
        for (size_t i = 5; ok && i < n; i++)
            ok = (o[i] >= 'a' && o[i] <= 'z') || (o[i] >= 'A' && o[i] <= 'Z') ||
                 (o[i] >= '0' && o[i] <= '9') || o[i] == '_' || o[i] == '-' || o[i] == '.';
        if (ok) {
            memcpy(l->name, o + 5, nl);
            l->name[nl] = '\0';
            return 0;
        }
        snprintf(why, len, "bad listener name '%.*s' (1..%d letters, digits, '_', '-', '.')",
                 (int)nl, o + 5, (int)sizeof(l->name) - 1);
        return -EINVAL;
    }
    if ((n == 8 && strncmp(o, "http2=on", 8) == 0) || (n == 9 && strncmp(o, "http2=off", 9) == 0)) {
        l->http2 = n == 8;
        return 0;
    }
    snprintf(why, len,
             "bad listener option '%.*s' (want tls, quic, name=NAME, http2=on or http2=off)",
             (int)n, o);
    return -EINVAL;
}

static int parse_listen(sws_config *c, const char *v, char *why, size_t len) {
    if (c->listen_fresh) {
        c->nlisteners = 0;
        c->listen_fresh = false;
    }
    if (c->nlisteners == SWS_LISTENERS_MAX) {
        snprintf(why, len, "more than %d listeners", SWS_LISTENERS_MAX);
        return -EINVAL;
    }
    sws_listener_cfg l = {.http2 = -1};
    char addr[SWS_ADDR_MAX];
    size_t alen = strcspn(v, " \t");
    if (alen == 0 || alen >= sizeof(addr)) {
        snprintf(why, len, "bad address '%s' (want host:port [tls|quic] [name=NAME] [http2=off])",
                 v);
        return -EINVAL;
    }
    memcpy(addr, v, alen);
    addr[alen] = '\0';
    if (sws_parse_addr(addr, &l.addr) < 0) {
        snprintf(why, len, "bad address '%s' (want host:port [tls|quic] [name=NAME] [http2=off])",
                 addr);
        return -EINVAL;
    }
    for (const char *o = v + alen; *o;) {
        o += strspn(o, " \t");
        size_t n = strcspn(o, " \t");
        if (n && listener_option(&l, o, n, why, len) < 0)
            return -EINVAL;
        o += n;
    }
    snprintf(l.origin, sizeof(l.origin), "[server] listen");
    c->listeners[c->nlisteners++] = l;
    return 0;
}
/* One line per listener, as the file writes them. */
static void format_listen(const sws_config *c, char *out, size_t len) {
    size_t off = 0;
    if (len)
        out[0] = '\0';
    for (int i = 0; i < c->nlisteners && off < len; i++) {
        const sws_listener_cfg *l = &c->listeners[i];
        int n = snprintf(out + off, len - off, "%s%s%s%s%s%s%s", i ? "\n" : "", l->addr.text,
                         l->tls ? " tls" : "", l->quic ? " quic" : "", l->name[0] ? " name=" : "",
                         l->name,
                         l->http2 < 0 ? ""
                         : l->http2   ? " http2=on"
                                      : " http2=off");
        if (n < 0)
            break;
        off += (size_t)n;
    }
}

#define TLS_KEY(k, name, def, help)                                                                \
    CUSTOM("tls", k, sws_key_parse_tls_##name, sws_key_format_tls_##name, def, RELOAD, help)

/* auto (-1), or a count: event_loops takes 0 (the shared baseline), worker_threads does not. */
static int parse_count(int *dst, const char *v, uint64_t lo, char *why, size_t len) {
    uint64_t n;
    if (strcmp(v, "auto") == 0 || (lo == 0 && !*v)) {
        *dst = -1;
        return 0;
    }
    if (sws_parse_uint(v, lo, 1024, &n) == 0) {
        *dst = (int)n;
        return 0;
    }
    snprintf(why, len, "bad value '%s' (want auto%s or a count up to 1024)", v, lo ? "" : ", 0");
    return -EINVAL;
}
static int parse_event_loops(sws_config *c, const char *v, char *why, size_t len) {
    return parse_count(&c->event_loops, v, 0, why, len);
}
static int parse_worker_threads(sws_config *c, const char *v, char *why, size_t len) {
    return parse_count(&c->worker_threads, v, 1, why, len);
}
static void format_count(int n, char *out, size_t len) {
    if (n < 0)
        snprintf(out, len, "auto");
    else
        snprintf(out, len, "%d", n);
}
static void format_event_loops(const sws_config *c, char *out, size_t len) {
    format_count(c->event_loops, out, len);
}
static void format_worker_threads(const sws_config *c, char *out, size_t len) {
    format_count(c->worker_threads, out, len);
}

static int parse_admin(sws_config *c, const char *v, char *why, size_t len) {
    if (!*v || strcmp(v, "off") == 0) {
        c->admin_enabled = false;
        return 0;
    }
    if (sws_parse_addr(v, &c->admin) == 0) {
        c->admin_enabled = true;
        return 0;
    }
    snprintf(why, len, "bad address '%s' (want host:port or off)", v);
    return -EINVAL;
}
static void format_admin(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->admin_enabled ? c->admin.text : "off");
}

/* The ACME thread keeps the [acme] it started with: every key needs a restart. */
#define ACME_KEY(k, def, help)                                                                     \
    CUSTOM("acme", #k, sws_key_parse_acme_##k, sws_key_format_acme_##k, def, RESTART, help)

/* ---- the table ------------------------------------------------------------ */

#define F(field) offsetof(sws_config, field), sizeof(((sws_config *)0)->field)
#define UINT(s, k, fld, lo, hi, def, restart, help)                                                \
    { s, k, SWS_KEY_UINT, F(fld), lo, hi, NULL, NULL, NULL, def, restart, help }
#define SIZE(s, k, fld, lo, hi, def, restart, help)                                                \
    { s, k, SWS_KEY_SIZE, F(fld), lo, hi, NULL, NULL, NULL, def, restart, help }
#define MS(s, k, fld, lo, def, restart, help)                                                      \
    { s, k, SWS_KEY_MS, F(fld), lo, UINT32_MAX, NULL, NULL, NULL, def, restart, help }
#define MS_IN(s, k, fld, lo, hi, def, restart, help)                                               \
    { s, k, SWS_KEY_MS, F(fld), lo, hi, NULL, NULL, NULL, def, restart, help }
#define BOOL(s, k, fld, def, restart, help)                                                        \
    { s, k, SWS_KEY_BOOL, F(fld), 0, 0, NULL, NULL, NULL, def, restart, help }
#define ENUM(s, k, fld, names, def, restart, help)                                                 \
    { s, k, SWS_KEY_ENUM, F(fld), 0, 0, names, NULL, NULL, def, restart, help }
#define STRING(s, k, fld, def, restart, help)                                                      \
    { s, k, SWS_KEY_STRING, F(fld), 0, 0, NULL, NULL, NULL, def, restart, help }
#define CUSTOM(s, k, parse, format, def, restart, help)                                            \
    { s, k, SWS_KEY_CUSTOM, 0, 0, 0, 0, NULL, parse, format, def, restart, help }
/* A custom key whose value lives in one field: its offset says which part of
 * the config it is (a route takes the keys inside `access`, route_config.c). */
#define CUSTOM_AT(s, k, fld, parse, format, def, restart, help)                                    \
    { s, k, SWS_KEY_CUSTOM, F(fld), 0, 0, NULL, parse, format, def, restart, help }

enum { RELOAD = 0, RESTART = 1 };

const sws_key sws_config_keys[] = {
    CUSTOM("server", "listen", parse_listen, format_listen, "127.0.0.1:8080", RESTART,
           "host:port [tls|quic] [name=NAME] [http2=off]: a listener (one a line, lines add up); "
           "port 0: the kernel picks one; tls: HTTPS; quic: HTTP/3 on UDP ([tls] cert and key)"),
    CUSTOM("server", "event_loops", parse_event_loops, format_event_loops, "auto", RESTART,
           "event loops: auto (one per usable CPU), N, or 0 (one shared loop)"),
    CUSTOM("server", "worker_threads", parse_worker_threads, format_worker_threads, "auto", RESTART,
           "threads of the shared loop (event_loops = 0)"),
    ENUM("server", "accept", accept, accept_names, "reuse-port", RESTART,
         "how loops share the listener: reuse-port, reuse-port-cpu, handoff, exclusive, "
         "acceptor, herd"),
    UINT("server", "acceptors", acceptors, 1, 1024, "1", RESTART,
         "accept = handoff: accepting loops, each feeding its own block of loops"),
    ENUM("server", "backend", backend, backend_names, "auto", RESTART,
         "auto (io_uring where it works, else epoll), epoll or uring"),
    MS("server", "drain_timeout", drain_timeout_ms, 0, "10s", RELOAD,
       "on SIGTERM, how long open connections may finish"),
    MS("server", "drain_idle_grace", drain_idle_grace_ms, 0, "1s", RELOAD,
       "on a drain, how long an idle keep-alive connection may still send a request "
       "(at most keepalive_timeout)"),
    MS("server", "restart_timeout", restart_timeout_ms, 1000, "60s", RELOAD,
       "on SIGUSR2, how long the new process may take to serve before it is stopped"),
    BOOL("server", "defer_accept", defer_accept, "on", RESTART,
         "TCP_DEFER_ACCEPT: accept once the request's first bytes arrive"),
    ENUM("server", "scenario", scenario, scenario_names, "respond", RESTART,
         "what answers requests: respond, proxy, static or redirect"),
    CUSTOM("server", "access_log", sws_key_parse_access_log, sws_key_format_access_log, NULL,
           RELOAD, "file for the access log, one line per answer (unset or off: none)"),
    CUSTOM("server", "log_format", sws_key_parse_log_format, sws_key_format_log_format, "combined",
           RELOAD,
           "access log lines: combined, common, json, json VARIABLES, or a $variable template"),
    CUSTOM("server", "pid_file", sws_key_parse_pid_file, sws_key_format_pid_file, NULL, RESTART,
           "file for the server's pid, kept across SIGUSR2 (unset: none)"),
    BOOL("server", "http2", http2, "on", RESTART,
         "HTTP/2 beside HTTP/1.1: ALPN h2 on a tls listener, the preface on a plaintext one"),
    BOOL("server", "alt_svc", alt_svc, "on", RESTART,
         "with a quic listener: Alt-Svc: h3=\":PORT\"; ma=86400 on the tls listeners' answers"),
    CUSTOM("server", "add_header", sws_key_parse_add_header, sws_key_format_add_header, NULL,
           RELOAD, "\"Name: value\" added to 2xx and 3xx answers; one a line, lines add up"),
    CUSTOM("server", "add_header_always", sws_key_parse_add_header_always,
           sws_key_format_add_header_always, NULL, RELOAD,
           "\"Name: value\" added to every answer, errors included"),
    CUSTOM("server", "error_page", sws_key_parse_error_page, sws_key_format_error_page, NULL,
           RELOAD,
           "CODE [CODE...] FILE[, ...]: files sent as the body of the default route's errors"),
    CUSTOM_AT("server", "limit_rate", access.rate_us, sws_key_parse_rate, sws_key_format_rate,
              "off", RELOAD,
              "requests per client address: N r/s or N r/m (GCRA, shared by the loops), or off"),
    UINT("server", "limit_burst", access.burst, 0, 1000000, "0", RELOAD,
         "requests beyond limit_rate a client may send at once"),
    UINT("server", "limit_conn", access.conn, 0, 65535, "0", RELOAD,
         "open connections per peer address (0: no limit)"),
    CUSTOM_AT("server", "limit_status", access.status, sws_key_parse_limit_status,
              sws_key_format_limit_status, "429", RELOAD,
              "status past limit_rate or limit_conn: 429 or 503 (with Retry-After)"),
    CUSTOM_AT("server", "allow", access.allow, sws_key_parse_allow, sws_key_format_allow, "off",
              RELOAD, "client addresses (CIDR list, or all) that may ask; others 403"),
    CUSTOM_AT("server", "deny", access.deny, sws_key_parse_deny, sws_key_format_deny, "off", RELOAD,
              "client addresses refused with 403 (the most specific of allow and deny wins)"),
    STRING("server", "auth_basic_file", access.auth_file, NULL, RELOAD,
           "htpasswd file (bcrypt or SHA-512 crypt) whose users may ask; others 401"),
    CUSTOM_AT("server", "auth_realm", access.realm, sws_key_parse_realm, sws_key_format_realm,
              "scalwsd", RELOAD, "the realm of the Basic challenge (WWW-Authenticate)"),

    UINT("http2", "max_concurrent_streams", h2.max_concurrent_streams, 1, 10000, "100", RELOAD,
         "streams a client may have open on one connection (more are refused)"),
    SIZE("http2", "window", h2.window, 1024, 2147483647, "64k", RELOAD,
         "request body bytes a stream may send before the scenario has taken them"),
    UINT("http2", "streams_per_loop", h2.streams_per_loop, 16, 1000000, "16384", RESTART,
         "streams under way on one event loop, every connection together (more are refused)"),
    UINT("http2", "reset_burst", h2.reset_burst, 1, 1000000, "1000", RELOAD,
         "RST_STREAM frames a client may send at once (Rapid Reset; then GOAWAY)"),
    UINT("http2", "reset_rate", h2.reset_rate, 1, 1000000, "33", RELOAD,
         "RST_STREAM frames per second a client may send after its burst"),
    UINT("http2", "glitch_burst", h2.glitch_burst, 1, 1000000, "1000", RELOAD,
         "invalid frames and the resets they cost a client may cause at once (then GOAWAY)"),
    UINT("http2", "glitch_rate", h2.glitch_rate, 1, 1000000, "33", RELOAD,
         "invalid frames and resets per second a client may cause after its burst"),
    UINT("http2", "max_continuations", h2.max_continuations, 0, 1000, "8", RELOAD,
         "CONTINUATION frames one header block may have (more: GOAWAY)"),
    UINT("http2", "max_queued_acks", h2.max_queued_acks, 1, 100000, "1000", RELOAD,
         "SETTINGS and PING acks waiting for a client that does not read (more: GOAWAY)"),
    UINT("http2", "max_header_blocks", h2.max_header_blocks, 1, 64, "4", RELOAD,
         "a header block decoding past this many times header_bytes ends the connection"),
    UINT("http2", "stream_buffers", h2.stream_buffers, 1, 10000, "16", RELOAD,
         "output buffers' worth of answers one connection may hold at once (others wait)"),
    SIZE("http2", "loop_buffer", h2.loop_buffer, 1u << 20, UINT64_MAX, "64m", RESTART,
         "answer bytes waiting for clients on one event loop, every stream together"),

    /* [http3]: read by each loop's endpoint at start and on SIGHUP, for the
     * connections (and streams) it makes from then on (doc/http3.md). */
    UINT("http3", "max_concurrent_streams", h3.max_concurrent_streams, 1, 10000, "100", RELOAD,
         "requests a client may have under way on one connection (MAX_STREAMS; more wait)"),
    SIZE("http3", "stream_window", h3.stream_window, 1024, 1u << 30, "256k", RELOAD,
         "request body bytes a stream may send before the scenario has taken them"),
    SIZE("http3", "connection_window", h3.connection_window, 1024, 1u << 30, "1m", RELOAD,
         "request body bytes a connection may send, every stream together"),
    SIZE("http3", "qpack_table_size", h3.qpack_table, 0, 1u << 20, "4k", RELOAD,
         "the QPACK dynamic table a client may use for its requests (0: none)"),
    UINT("http3", "qpack_blocked_streams", h3.qpack_blocked, 0, 10000, "100", RELOAD,
         "streams that may wait for the QPACK table (0: none may)"),
    MS_IN("http3", "idle_timeout", h3.idle_timeout_ms, 1000, 3600000, "30s", RELOAD,
          "idle time before a QUIC connection is closed (max_idle_timeout)"),
    UINT("http3", "max_connections", h3.max_connections, 1, 1000000, "1024", RELOAD,
         "QUIC connections per event loop; a client's Initial past it is dropped"),
    UINT("http3", "streams_per_loop", h3.streams_per_loop, 16, 1000000, "4096", RESTART,
         "requests under way on one event loop, every connection together (more are refused)"),
    BOOL("http3", "early_data", h3.early_data, "off", RELOAD,
         "0-RTT: requests in a resumed connection's first flight; unsafe methods get 425"),
    MS_IN("http3", "early_data_window", h3.early_data_window_ms, 1000, 3600000, "10s", RELOAD,
          "with early_data: the age of a ticket 0-RTT takes, and how long replays are remembered"),
    BOOL("http3", "gso", h3.gso, "on", RESTART,
         "a burst of datagrams to one peer as one UDP GSO send (was [server] quic_gso)"),
    BOOL("http3", "gro", h3.gro, "on", RESTART,
         "UDP GRO on receives: a client's datagrams coalesced by the kernel, cut apart here"),

    STRING("static", "root", stat.root, NULL, RELOAD,
           "the directory served (scenario static needs it; --root sets it)"),
    CUSTOM("static", "index", sws_key_parse_index, sws_key_format_index, "index.html", RELOAD,
           "file served for a directory; empty: none (403, or a listing with autoindex)"),
    STRING("static", "default_type", stat.default_type, "application/octet-stream", RELOAD,
           "Content-Type of an extension mime_types does not list"),
    STRING("static", "cache_control", stat.cache_control, NULL, RELOAD,
           "Cache-Control of every file answer (unset: none)"),
    STRING("static", "mime_types", stat.mime_types, "/etc/mime.types", RELOAD,
           "extension-to-type file, read at start and on reload"),
    ENUM("static", "follow_symlinks", stat.follow_symlinks, symlink_names, "off", RELOAD,
         "off: links only inside root; on: any; owner: inside, same owner as target"),
    ENUM("static", "dotfiles", stat.dotfiles, dotfile_names, "deny", RELOAD,
         "deny: 404 for names beginning with a dot; allow: serve them"),
    BOOL("static", "precompressed", stat.precompressed, "on", RELOAD,
         "serve FILE.br / FILE.gz when they exist and Accept-Encoding allows"),
    UINT("static", "open_file_cache", stat.cache_entries, 0, 1000000, "1024", RESTART,
         "entries of each loop's open-file cache (0: off)"),
    MS("static", "open_file_cache_valid", stat.cache_valid_ms, 0, "1s", RELOAD,
       "how long a cached entry is used before the file is opened again"),
    CUSTOM("static", "try_files", sws_key_parse_try_files, sws_key_format_try_files, "off", RELOAD,
           "paths tried in order ($uri, $uri.html, $uri/, /index.html), =CODE last; off: none"),
    BOOL("static", "autoindex", stat.autoindex, "off", RELOAD,
         "list a directory without its index file (HTML; dotfiles only with dotfiles = allow)"),

    BOOL("compress", "compress", comp.on, "off", RELOAD,
         "compress answers on the fly (gzip, br) for clients that accept it"),
    CUSTOM("compress", "compress_types", sws_key_parse_compress_types,
           sws_key_format_compress_types, SWS_COMPRESS_DEFAULT_TYPES, RELOAD,
           "media types compressed (type/subtype or type/*), spaces or commas between"),
    SIZE("compress", "compress_min_length", comp.min_length, 0, UINT32_MAX, "256", RELOAD,
         "an answer of known length below this goes uncompressed"),
    UINT("compress", "compress_level_gzip", comp.level_gzip, 1, 9, "5", RELOAD,
         "zlib level of gzip answers (1 fastest, 9 smallest)"),
    UINT("compress", "compress_level_br", comp.level_br, 0, 11, "5", RELOAD,
         "brotli quality of br answers (0 fastest, 11 smallest)"),

    UINT("respond", "status", status, 200, 599, "200", RELOAD, "status of the fixed answer"),
    CUSTOM("respond", "body", sws_key_parse_body, sws_key_format_body, "Hello from scalwsd\\n",
           RELOAD, "body of the fixed answer (\\n \\r \\t \\\\ escapes)"),
    STRING("respond", "content_type", content_type, "text/plain", RELOAD,
           "Content-Type of the fixed answer"),

    CUSTOM("redirect", "to", sws_key_parse_redirect_to, sws_key_format_redirect_to, NULL, RELOAD,
           "the Location: a URL or /path with $scheme $host $request_uri $uri $args $is_args"),
    CUSTOM("redirect", "code", sws_key_parse_redirect_code, sws_key_format_redirect_code, "301",
           RELOAD, "status of the redirect: 301, 302, 303, 307 or 308"),
    BOOL("redirect", "any_host", redirect.any_host, "off", RELOAD,
         "allow $host in to without the route's host names (any Host the client sends)"),

    SIZE("limits", "header_bytes", limits.header_bytes, 256, 1u << 20, "16k", RELOAD,
         "bytes of a request head or trailer section (431)"),
    UINT("limits", "header_count", limits.header_count, 1, 10000, "100", RELOAD,
         "header fields of a request (431)"),
    SIZE("limits", "uri_length", limits.uri_length, 16, 1u << 20, "8k", RELOAD,
         "bytes of the request-target (414)"),
    SIZE("limits", "body_size", limits.body_size, 0, UINT64_MAX, "1m", RELOAD,
         "bytes of a request body (413)"),
    SIZE("limits", "chunk_ext_bytes", limits.chunk_ext_bytes, 16, 1u << 20, "4k", RELOAD,
         "bytes of every chunk extension of one request together (400)"),
    MS("limits", "header_timeout", header_timeout_ms, 1, "10s", RELOAD,
       "time to receive a request once its first byte came (408)"),
    MS("limits", "keepalive_timeout", keepalive_timeout_ms, 1, "75s", RELOAD,
       "idle time before a keep-alive connection is closed"),
    MS("limits", "send_timeout", send_timeout_ms, 1, "30s", RELOAD,
       "time for one write of the output buffer before the connection is closed"),
    UINT("limits", "max_connections", max_connections, 1, 1000000, "10000", RESTART,
         "connections per event loop; at the ceiling accepting pauses"),
    MS("limits", "handshake_timeout", handshake_timeout_ms, 1, "10s", RELOAD,
       "time for a TLS handshake on a tls listener"),

    TLS_KEY("cert", cert, NULL,
            "PEM certificate, the leaf then its chain (a tls listener needs it)"),
    TLS_KEY("key", key, NULL, "PEM private key of that certificate"),
    TLS_KEY("ocsp", ocsp, "off", "DER OCSP response to staple, or off"),
    TLS_KEY("unknown_name", unknown, "default",
            "an SNI no certificate has: default (served the default), refuse (alert 112)"),
    TLS_KEY("protocols", protocols, "TLSv1.2 TLSv1.3", "TLSv1.2 and/or TLSv1.3"),
    TLS_KEY("ciphers", ciphers, "intermediate",
            "TLS 1.2 suites (OpenSSL list); intermediate: Mozilla's profile"),
    TLS_KEY("ciphersuites", ciphersuites, SWS_TLS_DEFAULT_CIPHERSUITES, "TLS 1.3 suites"),
    TLS_KEY("groups", groups, SWS_TLS_DEFAULT_GROUPS, "key exchange groups"),
    TLS_KEY("session_tickets", tickets, "on",
            "session tickets, keys made and rotated by the control thread"),
    TLS_KEY("ticket_key_rotate", rotate, "3600s",
            "how often a new ticket key is made (60s at least)"),
    TLS_KEY("session_cache", cache, "20480", "session-ID cache entries per loop; 0 off"),
    TLS_KEY("ktls", ktls, "on", "kernel TLS; never live with memory BIOs (doc/tls.md)"),

    CUSTOM("proxy", "upstream", sws_key_parse_upstream, sws_key_format_upstream, NULL, RESTART,
           "host:port [weight=N][, ...] to forward to; a name: each of its addresses"),
    ENUM("proxy", "balance", proxy.balance, balance_names, "round_robin", RELOAD,
         "how an upstream is picked: round_robin, least_conn or p2c (weighted)"),
    CUSTOM("proxy", "host", sws_key_parse_host, sws_key_format_host, "client", RELOAD,
           "Host sent upstream: client (the client's), upstream (its name) or a value"),
    ENUM("proxy", "forwarded", proxy.forwarded, forwarded_names, "x-forwarded", RELOAD,
         "fields naming the client: x-forwarded (X-Forwarded-*), rfc7239 (Forwarded) or off"),
    CUSTOM("proxy", "trusted_proxies", sws_key_parse_trusted, sws_key_format_trusted, "off", RELOAD,
           "CIDR list whose forwarding fields are kept and appended to; others replaced"),
    UINT("proxy", "max_fails", proxy.max_fails, 0, 1000, "1", RELOAD,
         "failures within fail_timeout that skip an upstream for fail_timeout (0: never)"),
    MS("proxy", "fail_timeout", proxy.fail_timeout_ms, 1, "10s", RELOAD,
       "the window of max_fails, and how long the upstream is skipped after it"),
    CUSTOM("proxy", "health_check", sws_key_parse_health_check, sws_key_format_health_check, "off",
           RESTART, "path an active check GETs on every upstream (2xx/3xx passes), or off"),
    MS("proxy", "health_interval", proxy.health_interval_ms, 100, "2s", RESTART,
       "time between two checks of an upstream"),
    UINT("proxy", "health_rise", proxy.health_rise, 1, 100, "2", RESTART,
         "passed checks in a row that bring a down upstream back"),
    UINT("proxy", "health_fall", proxy.health_fall, 1, 100, "3", RESTART,
         "failed checks in a row that take an upstream down"),
    ENUM("proxy", "pool", proxy.pool_mode, pool_names, "per_loop", RESTART,
         "upstream connection pool: per_loop or shared"),
    UINT("proxy", "pool_per_loop", proxy.pool_per_loop, 0, 100000, "32", RESTART,
         "idle upstream connections kept per loop and upstream"),
    BOOL("proxy", "tls", proxy.tls, "off", RESTART,
         "speak TLS to the upstreams (verified; not with pool = shared)"),
    STRING("proxy", "tls_ca", proxy.tls_ca, NULL, RESTART,
           "PEM file of the roots an upstream's certificate must chain to (unset: the system's)"),
    BOOL("proxy", "tls_verify", proxy.tls_verify, "on", RESTART,
         "verify the upstream's certificate and name; off accepts any certificate"),
    STRING("proxy", "tls_name", proxy.tls_name, NULL, RESTART,
           "name sent as SNI and verified (unset: each upstream's host as written)"),
    MS("proxy", "connect_timeout", proxy.connect_timeout_ms, 1, "5s", RELOAD,
       "time to connect to an upstream (504 after it)"),
    MS("proxy", "read_timeout", proxy.read_timeout_ms, 1, "60s", RELOAD,
       "time between two reads of an upstream's answer (504 after it)"),
    MS("proxy", "idle_timeout", proxy.idle_timeout_ms, 1, "60s", RELOAD,
       "idle time of a pooled upstream connection before it is closed"),
    CUSTOM(
        "proxy", "upgrade", sws_key_parse_upgrade, sws_key_format_upgrade, "websocket", RELOAD,
        "protocols a request may Upgrade to through the proxy (a tunnel), comma separated, or off"),
    MS("proxy", "tunnel_idle_timeout", proxy.tunnel_idle_timeout_ms, 1, "3600s", RELOAD,
       "time a tunnel may carry no byte either way before both sides are closed"),

    ACME_KEY(directory, NULL, "the ACME CA's directory URL; unset: no ACME (doc/acme.md)"),
    ACME_KEY(email, NULL, "the ACME account's contact address"),
    ACME_KEY(domains, NULL,
             "names on [acme]'s certificate, comma separated (up to 8); [acme NAME] orders more"),
    ACME_KEY(state_dir, "/var/lib/scalwsd/acme", "account key, certificate, key, state (0700)"),
    ACME_KEY(renew_before, "30d", "renew when the certificate expires within this"),
    ACME_KEY(challenge, "http-01", "the challenge type: http-01 or tls-alpn-01"),
    ACME_KEY(ca_file, NULL, "PEM roots for the CA's HTTPS instead of the system's"),
    ACME_KEY(http_listen, NULL, "plaintext listener for HTTP-01 alone (for a tls listener)"),
    ACME_KEY(retry_min, "60s", "first retry after a failure; doubles up to retry_max"),
    ACME_KEY(retry_max, "6h", "longest wait between retries (a CA's Retry-After wins)"),

    CUSTOM("admin", "listen", parse_admin, format_admin, "off", RESTART,
           "host:port of the admin API (/status, /metrics) and status page, or off"),
    CUSTOM_AT("admin", "allow", admin_allow, sws_key_parse_admin_allow, sws_key_format_admin_allow,
              "off", RELOAD, "addresses (CIDR list) that may use the admin listener; off: any"),
};
const int sws_config_nkeys = (int)(sizeof sws_config_keys / sizeof sws_config_keys[0]);

/* [route NAME]'s own keys (route.h); the section also takes every key of
 * [respond], [static], [proxy] and [redirect] from the table above. */
const sws_key sws_route_key_table[] = {
    CUSTOM("route NAME", "host", sws_key_parse_route_host, sws_key_format_route_host, NULL, RELOAD,
           "Hosts to match: names, *.name for every name under it, comma separated "
           "(unset: any host)"),
    STRING("route NAME", "listen", rt.listen, NULL, RELOAD,
           "the listeners it serves, by name= or address, comma separated (unset: every one)"),
    CUSTOM("route NAME", "path_prefix", sws_key_parse_route_prefix, sws_key_format_route_prefix,
           NULL, RELOAD, "path prefix to match, on a segment boundary; the longest wins"),
    CUSTOM("route NAME", "path", sws_key_parse_route_path, sws_key_format_route_path, NULL, RELOAD,
           "exact path to match (beats any path_prefix)"),
    ENUM("route NAME", "scenario", rt.scenario, scenario_names, NULL, RELOAD,
         "what answers the route: respond, static, proxy or redirect"),
    BOOL("route NAME", "strip_prefix", rt.strip_prefix, "off", RELOAD,
         "the scenario sees the path without the route's path_prefix"),
    CUSTOM("route NAME", "access_log", sws_key_parse_route_access_log,
           sws_key_format_route_access_log, NULL, RELOAD,
           "the route's access log file, or off (unset: [server]'s)"),
    CUSTOM("route NAME", "log_format", sws_key_parse_route_log_format,
           sws_key_format_route_log_format, NULL, RELOAD,
           "the route's access log format (unset: [server]'s)"),
    CUSTOM("route NAME", "add_header", sws_key_parse_add_header, sws_key_format_add_header, NULL,
           RELOAD, "\"Name: value\" on its 2xx and 3xx answers (none set: [server]'s)"),
    CUSTOM("route NAME", "add_header_always", sws_key_parse_add_header_always,
           sws_key_format_add_header_always, NULL, RELOAD,
           "\"Name: value\" on every answer of the route"),
    CUSTOM("route NAME", "error_page", sws_key_parse_error_page, sws_key_format_error_page, NULL,
           RELOAD, "CODE [CODE...] FILE[, ...]: files sent as the body of the route's errors"),
};
const int sws_route_nkeys = (int)(sizeof sws_route_key_table / sizeof sws_route_key_table[0]);
_Static_assert(sizeof sws_config_keys / sizeof sws_config_keys[0] <= SWS_CONFIG_KEYS_MAX,
               "raise SWS_CONFIG_KEYS_MAX");
