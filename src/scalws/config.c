/* Config loading with inih. One table maps [section] key to a setter; a wrong
 * key or bad value is reported as one line, "file:line: [section] key: why",
 * and the loader stops at the first error (inih reports its line). */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <limits.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sws_config_defaults(sws_config *c) {
    memset(c, 0, sizeof(*c));
    sws_parse_addr("127.0.0.1:8080", &c->listen);
    strcpy(c->listen_origin, "[server] listen (default)");
    c->event_loops = -1;
    c->worker_threads = -1;
    c->accept = SWS_ACCEPT_REUSE_PORT;
    /* auto: io_uring where the kernel has it. With COOP_TASKRUN it serves
     * more requests per CPU-second than epoll in every shape measured
     * (bench/results/vs-nginx-uring-coop-*.json against vs-nginx-epoll-*). */
    c->backend = SWS_BACKEND_AUTO;
    c->drain_timeout_ms = 10000;
    c->defer_accept = true;
    c->status = 200;
    static const char body[] = "Hello from scalwsd\n";
    memcpy(c->body, body, sizeof(body) - 1);
    c->body_len = sizeof(body) - 1;
    strcpy(c->content_type, "text/plain");
    c->limits = (sws_http_limits)SWS_HTTP_DEFAULT_LIMITS;
    c->header_timeout_ms = 10000;
    c->keepalive_timeout_ms = 75000;
    c->send_timeout_ms = 30000;
    c->max_connections = 10000;
    c->handshake_timeout_ms = 10000;
    sws_tls_config_defaults(&c->tls);
    sws_acme_config_defaults(&c->acme);
    c->admin_enabled = false;
    sws_proxy_config_defaults(&c->proxy);
}

static const char *const accept_names[] = {"reuse-port", "handoff", "exclusive", "acceptor",
                                           "herd"};
static const char *const backend_names[] = {"auto", "epoll", "uring"};

const char *sws_accept_name(sws_accept_route r) {
    return accept_names[r];
}
const char *sws_backend_name(sws_backend b) {
    return backend_names[b];
}

int sws_parse_endpoint(const char *text, bool peer, struct sockaddr_storage *ss, socklen_t *len) {
    char host[SWS_ADDR_MAX];
    const char *port;
    if (strlen(text) >= SWS_ADDR_MAX || !*text)
        return -EINVAL;
    if (text[0] == '[') {
        const char *end = strchr(text, ']');
        if (!end || end[1] != ':')
            return -EINVAL;
        size_t hl = (size_t)(end - text - 1);
        memcpy(host, text + 1, hl);
        host[hl] = '\0';
        port = end + 2;
    } else {
        const char *colon = strrchr(text, ':');
        if (colon) {
            size_t hl = (size_t)(colon - text);
            memcpy(host, text, hl);
            host[hl] = '\0';
            port = colon + 1;
        } else {
            host[0] = '\0';
            port = text;
        }
    }
    /* A peer needs a host and a real port; a listener may omit the host
     * (every address) and ask for port 0 (any port). */
    char *e;
    long p = strtol(port, &e, 10);
    if (!*port || *e || p < (peer ? 1 : 0) || p > 65535 || (peer && !host[0]))
        return -EINVAL;
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = (peer ? 0 : AI_PASSIVE) | AI_NUMERICSERV},
                    *res = NULL;
    if (getaddrinfo(host[0] ? host : NULL, port, &hints, &res) != 0 || !res)
        return -EINVAL;
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

int sws_parse_addr(const char *text, sws_addr *out) {
    int err = sws_parse_endpoint(text, false, &out->ss, &out->len);
    if (err == 0)
        snprintf(out->text, sizeof(out->text), "%s", text);
    return err;
}

/* Unsigned integer with an optional multiplier suffix from units. */
static int parse_scaled(const char *v, uint64_t *out, const char *const *suffix,
                        const uint64_t *mult, int nsuffix) {
    char *e;
    if (!isdigit((unsigned char)*v))
        return -EINVAL;
    errno = 0;
    unsigned long long n = strtoull(v, &e, 10);
    if (errno)
        return -EINVAL;
    while (*e == ' ')
        e++;
    uint64_t m = 1;
    if (*e) {
        int i;
        for (i = 0; i < nsuffix; i++)
            if (strcasecmp(e, suffix[i]) == 0)
                break;
        if (i == nsuffix)
            return -EINVAL;
        m = mult[i];
    }
    if (m && n > UINT64_MAX / m)
        return -EINVAL;
    *out = n * m;
    return 0;
}

static int parse_ms(const char *v, uint32_t *out) {
    static const char *const s[] = {"ms", "s", "m"};
    static const uint64_t m[] = {1, 1000, 60000};
    uint64_t n;
    /* A bare number is seconds, as in nginx. */
    if (parse_scaled(v, &n, s, m, 3) < 0)
        return -EINVAL;
    if (!strpbrk(v, "msMS"))
        n *= 1000;
    if (n > UINT32_MAX)
        return -EINVAL;
    *out = (uint32_t)n;
    return 0;
}

static int parse_size(const char *v, uint64_t *out) {
    static const char *const s[] = {"k", "m", "g", "kb", "mb", "gb", "kib", "mib", "gib"};
    static const uint64_t m[] = {1ull << 10, 1ull << 20, 1ull << 30, 1ull << 10, 1ull << 20,
                                 1ull << 30, 1ull << 10, 1ull << 20, 1ull << 30};
    return parse_scaled(v, out, s, m, 9);
}

static int parse_uint(const char *v, uint64_t lo, uint64_t hi, uint64_t *out) {
    char *e;
    if (!isdigit((unsigned char)*v))
        return -EINVAL;
    errno = 0;
    unsigned long long n = strtoull(v, &e, 10);
    if (errno || *e || n < lo || n > hi)
        return -EINVAL;
    *out = n;
    return 0;
}

static int pick(const char *v, const char *const *names, int n) {
    for (int i = 0; i < n; i++)
        if (strcmp(v, names[i]) == 0)
            return i;
    return -1;
}

/* The body may carry \n, \r, \t and \\ escapes: ini values are one line. */
static int set_body(sws_config *c, const char *v) {
    size_t n = 0;
    for (const char *s = v; *s; s++) {
        char ch = *s;
        if (ch == '\\' && s[1]) {
            s++;
            ch = *s == 'n' ? '\n' : *s == 'r' ? '\r' : *s == 't' ? '\t' : *s;
        }
        if (n >= SWS_BODY_MAX)
            return -EINVAL;
        c->body[n++] = ch;
    }
    c->body_len = n;
    return 0;
}

#define BAD(...)                                                                                   \
    do {                                                                                           \
        snprintf(err, errlen, __VA_ARGS__);                                                        \
        return -EINVAL;                                                                            \
    } while (0)

int sws_config_set(sws_config *c, const char *section, const char *key, const char *v, char *err,
                   size_t errlen) {
    uint64_t n;
    if (strcmp(section, "server") == 0) {
        if (strcmp(key, "listen") == 0) {
            /* "host:port" or "host:port tls". */
            char addr[SWS_ADDR_MAX];
            const char *sp = strpbrk(v, " \t");
            size_t alen = sp ? (size_t)(sp - v) : strlen(v);
            bool tls = false;
            if (sp) {
                while (*sp == ' ' || *sp == '\t')
                    sp++;
                if (strcmp(sp, "tls") != 0)
                    BAD("bad listener option '%s' (want host:port or host:port tls)", sp);
                tls = true;
            }
            if (alen >= sizeof(addr))
                BAD("bad address '%s' (want host:port)", v);
            memcpy(addr, v, alen);
            addr[alen] = '\0';
            if (sws_parse_addr(addr, &c->listen) < 0)
                BAD("bad address '%s' (want host:port)", addr);
            c->listen_tls = tls;
        } else if (strcmp(key, "event_loops") == 0) {
            if (strcmp(v, "auto") == 0 || !*v)
                c->event_loops = -1;
            else if (parse_uint(v, 0, 1024, &n) == 0)
                c->event_loops = (int)n;
            else
                BAD("bad value '%s' (want auto, 0 or a count up to 1024)", v);
        } else if (strcmp(key, "worker_threads") == 0) {
            if (strcmp(v, "auto") == 0)
                c->worker_threads = -1;
            else if (parse_uint(v, 1, 1024, &n) == 0)
                c->worker_threads = (int)n;
            else
                BAD("bad value '%s' (want auto or 1..1024)", v);
        } else if (strcmp(key, "accept") == 0) {
            int i = pick(v, accept_names, 5);
            if (i < 0)
                BAD("bad value '%s' (want reuse-port, handoff, exclusive, acceptor or herd)", v);
            c->accept = (sws_accept_route)i;
        } else if (strcmp(key, "backend") == 0) {
            int i = pick(v, backend_names, 3);
            if (i < 0)
                BAD("bad value '%s' (want auto, epoll or uring)", v);
            c->backend = (sws_backend)i;
        } else if (strcmp(key, "drain_timeout") == 0) {
            if (parse_ms(v, &c->drain_timeout_ms) < 0)
                BAD("bad duration '%s' (e.g. 10s, 500ms)", v);
        } else if (strcmp(key, "defer_accept") == 0) {
            if (strcmp(v, "on") == 0 || strcmp(v, "true") == 0 || strcmp(v, "1") == 0)
                c->defer_accept = true;
            else if (strcmp(v, "off") == 0 || strcmp(v, "false") == 0 || strcmp(v, "0") == 0)
                c->defer_accept = false;
            else
                BAD("bad value '%s' (want on or off)", v);
        } else if (strcmp(key, "scenario") == 0) {
            if (strcmp(v, "respond") == 0)
                c->scenario = SWS_SCENARIO_RESPOND;
            else if (strcmp(v, "proxy") == 0)
                c->scenario = SWS_SCENARIO_PROXY;
            else
                BAD("bad value '%s' (want respond or proxy)", v);
        } else if (strcmp(key, "access_log") == 0) {
            if (strlen(v) >= sizeof(c->access_log))
                BAD("path too long");
            strcpy(c->access_log, v);
        } else
            BAD("unknown key");
    } else if (strcmp(section, "respond") == 0) {
        if (strcmp(key, "status") == 0) {
            if (parse_uint(v, 200, 599, &n) < 0)
                BAD("bad status '%s' (want 200..599)", v);
            c->status = (int)n;
        } else if (strcmp(key, "body") == 0) {
            if (set_body(c, v) < 0)
                BAD("body longer than %d bytes", SWS_BODY_MAX);
        } else if (strcmp(key, "content_type") == 0) {
            if (strlen(v) >= sizeof(c->content_type) || strpbrk(v, "\r\n"))
                BAD("bad content type");
            strcpy(c->content_type, v);
        } else
            BAD("unknown key");
    } else if (strcmp(section, "limits") == 0) {
        if (strcmp(key, "header_bytes") == 0) {
            if (parse_size(v, &n) < 0 || n < 256 || n > (1u << 20))
                BAD("bad size '%s' (want 256..1m)", v);
            c->limits.header_bytes = (uint32_t)n;
        } else if (strcmp(key, "header_count") == 0) {
            if (parse_uint(v, 1, 10000, &n) < 0)
                BAD("bad count '%s' (want 1..10000)", v);
            c->limits.header_count = (uint32_t)n;
        } else if (strcmp(key, "uri_length") == 0) {
            if (parse_size(v, &n) < 0 || n < 16 || n > (1u << 20))
                BAD("bad size '%s' (want 16..1m)", v);
            c->limits.uri_length = (uint32_t)n;
        } else if (strcmp(key, "body_size") == 0) {
            if (parse_size(v, &n) < 0)
                BAD("bad size '%s' (e.g. 1m)", v);
            c->limits.body_size = n;
        } else if (strcmp(key, "header_timeout") == 0) {
            if (parse_ms(v, &c->header_timeout_ms) < 0 || c->header_timeout_ms == 0)
                BAD("bad duration '%s' (e.g. 10s)", v);
        } else if (strcmp(key, "keepalive_timeout") == 0) {
            if (parse_ms(v, &c->keepalive_timeout_ms) < 0 || c->keepalive_timeout_ms == 0)
                BAD("bad duration '%s' (e.g. 75s)", v);
        } else if (strcmp(key, "send_timeout") == 0) {
            if (parse_ms(v, &c->send_timeout_ms) < 0 || c->send_timeout_ms == 0)
                BAD("bad duration '%s' (e.g. 30s)", v);
        } else if (strcmp(key, "handshake_timeout") == 0) {
            if (parse_ms(v, &c->handshake_timeout_ms) < 0 || c->handshake_timeout_ms == 0)
                BAD("bad duration '%s' (e.g. 10s)", v);
        } else if (strcmp(key, "max_connections") == 0) {
            if (parse_uint(v, 1, 1000000, &n) < 0)
                BAD("bad count '%s' (want 1..1000000)", v);
            c->max_connections = (uint32_t)n;
        } else
            BAD("unknown key");
    } else if (strcmp(section, "proxy") == 0) {
        return sws_proxy_config_set(&c->proxy, key, v, err, errlen);
    } else if (strcmp(section, "tls") == 0) {
        return sws_tls_config_set(&c->tls, key, v, err, errlen);
    } else if (strcmp(section, "acme") == 0) {
        return sws_acme_config_set(&c->acme, key, v, err, errlen);
    } else if (strcmp(section, "admin") == 0) {
        if (strcmp(key, "listen") == 0) {
            if (!*v || strcmp(v, "off") == 0)
                c->admin_enabled = false;
            else if (sws_parse_addr(v, &c->admin) < 0)
                BAD("bad address '%s' (want host:port or off)", v);
            else
                c->admin_enabled = true;
        } else
            BAD("unknown key");
    } else {
        BAD("unknown section");
    }
    return 0;
}

struct load_ctx {
    sws_config *c;
    FILE *f;
    const char *path;
    int line; /* counted by the reader: Debian's inih has no line numbers in handlers */
    char why[256];
    char section[64];
    char key[64];
    bool failed;
};

static int on_kv(void *user, const char *section, const char *key, const char *value) {
    struct load_ctx *l = user;
    if (l->failed)
        return 0;
    if (strcmp(section, "server") == 0 && strcmp(key, "listen") == 0)
        snprintf(l->c->listen_origin, sizeof(l->c->listen_origin), "%s:%d: [server] listen",
                 l->path, l->line);
    if (sws_config_set(l->c, section, key, value, l->why, sizeof(l->why)) < 0) {
        snprintf(l->section, sizeof(l->section), "%s", section);
        snprintf(l->key, sizeof(l->key), "%s", key);
        l->failed = true;
        return 0;
    }
    return 1;
}

static char *read_line(char *str, int num, void *stream) {
    struct load_ctx *l = stream;
    char *r = fgets(str, num, l->f);
    if (r)
        l->line++;
    return r;
}

int sws_config_load(sws_config *c, const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "r");
    if (!f) {
        int e = errno;
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(e));
        return -e;
    }
    struct load_ctx l = {.c = c, .f = f, .path = path};
    int line = ini_parse_stream(read_line, &l, on_kv, &l);
    fclose(f);
    if (line == 0)
        return 0;
    if (l.failed)
        snprintf(err, errlen, "%s:%d: [%s] %s: %s", path, line, l.section, l.key, l.why);
    else
        snprintf(err, errlen, "%s:%d: syntax error (want [section] or key = value)", path, line);
    return -EINVAL;
}

/* [acme] with the rest: a tls listener without [tls] cert and key serves
 * what ACME keeps in state_dir; HTTP-01 needs a plaintext listener, the
 * server's own or [acme] http_listen. */
static int acme_settle(sws_config *c, char *err, size_t errlen) {
    const sws_acme_config *a = &c->acme;
    if (sws_acme_config_check(a, err, errlen) < 0)
        return -EINVAL;
    if (a->http_listen[0] && sws_parse_addr(a->http_listen, &c->acme_http) < 0) {
        snprintf(err, errlen, "[acme] http_listen: bad address '%s' (want host:port)",
                 a->http_listen);
        return -EINVAL;
    }
    if (c->listen_tls && !a->http_listen[0]) {
        snprintf(err, errlen,
                 "%s: [acme] answers HTTP-01 on plaintext HTTP: with a tls listener set [acme] "
                 "http_listen (e.g. 0.0.0.0:80)",
                 c->listen_origin);
        return -EINVAL;
    }
    if (c->listen_tls && !c->tls.cert[0] && !c->tls.key[0]) {
        snprintf(c->tls.cert, sizeof(c->tls.cert), "%s/cert.pem", a->state_dir);
        snprintf(c->tls.key, sizeof(c->tls.key), "%s/key.pem", a->state_dir);
        c->tls_from_acme = true;
    }
    return 0;
}

int sws_config_build(sws_config *c, const sws_cli *cli, char *err, size_t errlen) {
    char why[400];
    sws_config_defaults(c);
    if (cli->config) {
        int rc = sws_config_load(c, cli->config, err, errlen);
        if (rc < 0)
            return rc;
    }
    if (cli->listen) {
        if (sws_config_set(c, "server", "listen", cli->listen, why, sizeof(why)) < 0) {
            snprintf(err, errlen, "--listen: %s", why);
            return -EINVAL;
        }
        snprintf(c->listen_origin, sizeof(c->listen_origin), "--listen");
    }
    if (cli->threads) {
        const char *key = c->event_loops == 0 ? "worker_threads" : "event_loops";
        if (sws_config_set(c, "server", key, cli->threads, why, sizeof(why)) < 0 ||
            strcmp(cli->threads, "auto") == 0 || atoi(cli->threads) < 1) {
            snprintf(err, errlen, "--worker-threads: bad value '%s' (want 1..1024)", cli->threads);
            return -EINVAL;
        }
    }
    if (cli->scenario &&
        sws_config_set(c, "server", "scenario", cli->scenario, why, sizeof(why)) < 0) {
        snprintf(err, errlen, "--scenario: %s", why);
        return -EINVAL;
    }
    if (cli->upstream &&
        sws_config_set(c, "proxy", "upstream", cli->upstream, why, sizeof(why)) < 0) {
        snprintf(err, errlen, "--upstream: %s", why);
        return -EINVAL;
    }
    if (sws_acme_enabled(&c->acme)) {
        int rc = acme_settle(c, err, errlen);
        if (rc < 0)
            return rc;
    }
    if (c->listen_tls && (!c->tls.cert[0] || !c->tls.key[0])) {
        snprintf(err, errlen, "%s: a tls listener needs [tls] cert and key", c->listen_origin);
        return -EINVAL;
    }
    if (c->listen_tls && c->scenario == SWS_SCENARIO_PROXY) {
        snprintf(err, errlen,
                 "%s: a tls listener serves the respond scenario only so far (proxy over TLS is "
                 "not wired yet)",
                 c->listen_origin);
        return -EINVAL;
    }
    if (c->scenario == SWS_SCENARIO_PROXY && c->proxy.nupstreams == 0) {
        snprintf(err, errlen, "%s: scenario proxy needs [proxy] upstream (or --upstream)",
                 cli->config ? cli->config : "--scenario");
        return -EINVAL;
    }
    return 0;
}
