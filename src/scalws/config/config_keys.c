/* The one table of scalwsd's configuration keys, in the order --help and
 * --print-config list them: section, key, kind, default, whether SIGHUP may
 * change it, and one line of help (nginx's command arrays are the model).
 * A key is added here and nowhere else; the man page and the example file are
 * checked against this table by tests/e2e/man_page.sh and example_config.sh. */
#include "access_config.h"
#include "config.h"
#include "trusted.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
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

/* [tls]: parsed by src/tls/tls_config.c, which the unit tests also drive. */
#define TLS_PARSE(name, key)                                                                       \
    static int parse_tls_##name(sws_config *c, const char *v, char *why, size_t len) {             \
        return sws_tls_config_set(&c->tls, key, v, why, len);                                      \
    }
TLS_PARSE(cert, "cert")
TLS_PARSE(key, "key")
TLS_PARSE(ocsp, "ocsp")
TLS_PARSE(protocols, "protocols")
TLS_PARSE(ciphers, "ciphers")
TLS_PARSE(ciphersuites, "ciphersuites")
TLS_PARSE(groups, "groups")
TLS_PARSE(tickets, "session_tickets")
TLS_PARSE(rotate, "ticket_key_rotate")
TLS_PARSE(cache, "session_cache")
TLS_PARSE(ktls, "ktls")
TLS_PARSE(unknown, "unknown_name")
static void format_tls_cert(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->tls.cert);
}
static void format_tls_key(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->tls.key);
}
static void format_tls_ocsp(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->tls.ocsp[0] ? c->tls.ocsp : "off");
}
static void format_tls_protocols(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", sws_tls_protocols_name(c->tls.protocols));
}
/* The profile is longer than an ini line (inih reads 200 characters). */
static void format_tls_ciphers(const sws_config *c, char *out, size_t len) {
    bool def = strcmp(c->tls.ciphers, SWS_TLS_DEFAULT_CIPHERS) == 0;
    snprintf(out, len, "%s", def ? "intermediate" : c->tls.ciphers);
}
static void format_tls_ciphersuites(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->tls.ciphersuites);
}
static void format_tls_groups(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->tls.groups);
}
static void format_tls_tickets(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->tls.tickets ? "on" : "off");
}
static void format_tls_rotate(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%us", (unsigned)(c->tls.ticket_key_rotate_ms / 1000u));
}
static void format_tls_cache(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%u", (unsigned)c->tls.session_cache);
}
static void format_tls_ktls(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->tls.ktls ? "on" : "off");
}
static void format_tls_unknown(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->tls.refuse_unknown ? "refuse" : "default");
}
#define TLS_KEY(k, name, def, help)                                                                \
    CUSTOM("tls", k, parse_tls_##name, format_tls_##name, def, RELOAD, help)

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

/* The body may carry \n, \r, \t and \\ escapes (ini values are one line); any
 * other escaped character stands for itself ("\;" for a ';'). */
static int parse_body(sws_config *c, const char *v, char *why, size_t len) {
    size_t n = 0;
    for (const char *s = v; *s; s++) {
        char ch = *s;
        if (ch == '\\' && s[1]) {
            s++;
            ch = *s == 'n' ? '\n' : *s == 'r' ? '\r' : *s == 't' ? '\t' : *s;
        }
        if (n >= SWS_BODY_MAX) {
            snprintf(why, len, "body longer than %d bytes", SWS_BODY_MAX);
            return -EINVAL;
        }
        c->body[n++] = ch;
    }
    c->body_len = n;
    return 0;
}
static void format_body(const sws_config *c, char *out, size_t len) {
    size_t o = 0;
    for (size_t i = 0; i < c->body_len && o + 3 < len; i++) {
        char ch = c->body[i];
        const char *esc = ch == '\n'   ? "\\n"
                          : ch == '\r' ? "\\r"
                          : ch == '\t' ? "\\t"
                          : ch == '\\' ? "\\\\"
                                       : NULL;
        if (esc) {
            memcpy(out + o, esc, 2);
            o += 2;
        } else {
            out[o++] = ch;
        }
    }
    out[o] = '\0';
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

/* A file name: no '/', not "." or "..". */
static int parse_index(sws_config *c, const char *v, char *why, size_t len) {
    if (strlen(v) >= sizeof(c->stat.index) || strchr(v, '/') || strcmp(v, ".") == 0 ||
        strcmp(v, "..") == 0 || strpbrk(v, "\r\n")) {
        snprintf(why, len, "bad index '%s' (want a file name, or empty for none)", v);
        return -EINVAL;
    }
    strcpy(c->stat.index, v);
    return 0;
}
static void format_index(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->stat.index);
}

/* Whether the text [s, s + n) has a ".." segment. */
static bool dotdot(const char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        size_t e = i;
        while (e < n && s[e] != '/')
            e++;
        if (e - i == 2 && s[i] == '.' && s[i + 1] == '.')
            return true;
        i = e + 1;
    }
    return false;
}

/* try_files: paths below the root, each '/'-first or "$uri"-first with at
 * most one $uri and no ".." (nothing may climb out of the root), and at the
 * end "=CODE" if wanted; parsed once here, so a request reads offsets. */
static int parse_try_files(sws_config *c, const char *v, char *why, size_t len) {
    sws_static_config *st = &c->stat;
    if (strlen(v) >= sizeof(st->try_files) || strpbrk(v, "\r\n")) {
        snprintf(why, len, "longer than %zu bytes", sizeof(st->try_files) - 1);
        return -EINVAL;
    }
    sws_static_config t = {0};
    strcpy(t.try_files, strcmp(v, "off") == 0 ? "" : v);
    const char *s = t.try_files;
    for (size_t i = 0; s[i];) {
        if (s[i] == ' ' || s[i] == '\t') {
            i++;
            continue;
        }
        size_t e = i;
        while (s[e] && s[e] != ' ' && s[e] != '\t')
            e++;
        size_t n = e - i;
        if (t.ntry && t.try[t.ntry - 1].code) {
            snprintf(why, len, "'%.*s' after '=%u': a status ends the list", (int)n, s + i,
                     t.try[t.ntry - 1].code);
            return -EINVAL;
        }
        if (t.ntry == SWS_TRY_MAX) {
            snprintf(why, len, "more than %d entries", SWS_TRY_MAX);
            return -EINVAL;
        }
        sws_try *y = &t.try[t.ntry++];
        *y = (sws_try){.off = (uint8_t)i, .len = (uint8_t)n};
        if (s[i] == '=') {
            uint64_t code;
            char num[8];
            snprintf(num, sizeof(num), "%.*s", (int)(n - 1), s + i + 1);
            if (n > 4 || sws_parse_uint(num, 400, 599, &code) < 0) {
                snprintf(why, len, "bad status '%.*s' (want =400..=599)", (int)n, s + i);
                return -EINVAL;
            }
            y->code = (uint16_t)code;
        } else {
            const char *u = strstr(s + i, "$uri");
            if (u && u >= s + e)
                u = NULL;
            size_t at = u ? (size_t)(u - s) : e; /* the literal before $uri */
            const char *rest = u ? u + 4 : s + e;
            bool ok = (s[i] == '/' || u == s + i) && !memchr(rest, '$', (size_t)(s + e - rest)) &&
                      !memchr(s + i, '$', at - i) && !dotdot(s + i, at - i) &&
                      !dotdot(rest, (size_t)(s + e - rest));
            for (size_t k = i; ok && k < e; k++)
                ok = (unsigned char)s[k] >= 0x20 && s[k] != 0x7f;
            if (!ok) {
                snprintf(why, len,
                         "bad entry '%.*s' (want /path or $uri with text around it, one $uri, no "
                         "'..', or =CODE last)",
                         (int)n, s + i);
                return -EINVAL;
            }
            y->uri = u ? (uint8_t)(u - (s + i) + 1) : 0;
        }
        i = e;
    }
    memcpy(st->try_files, t.try_files, sizeof(st->try_files));
    st->ntry = t.ntry;
    memcpy(st->try, t.try, sizeof(st->try));
    return 0;
}
static void format_try_files(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->stat.try_files[0] ? c->stat.try_files : "off");
}

/* compress_types: media types ("text/html") or every subtype of one
 * ("text/" then "*"), separated by spaces or commas; kept lowercased, one space
 * apart, for core/compress.c's match. */
static int parse_compress_types(sws_config *c, const char *v, char *why, size_t len) {
    char out[SWS_COMPRESS_TYPES_MAX];
    size_t n = 0;
    const char *p = v;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        if (!*p)
            break;
        const char *s = p;
        while (*p && *p != ' ' && *p != '\t' && *p != ',')
            p++;
        size_t tl = (size_t)(p - s);
        const char *slash = memchr(s, '/', tl);
        bool ok = slash && slash > s && slash < s + tl - 1 &&
                  !memchr(slash + 1, '/', (size_t)(s + tl - slash - 1));
        for (size_t i = 0; ok && i < tl; i++)
            ok = s[i] > ' ' && s[i] < 127 && !strchr("\"(),:;<=>?@[\\]{}", s[i]);
        if (!ok) {
            snprintf(why, len, "bad media type '%.*s' (want type/subtype or type/*)", (int)tl, s);
            return -EINVAL;
        }
        if (n + tl + 1 >= sizeof(out)) {
            snprintf(why, len, "too long (%zu bytes of types at most)", sizeof(out) - 1);
            return -EINVAL;
        }
        if (n)
            out[n++] = ' ';
        for (size_t i = 0; i < tl; i++)
            out[n++] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
    }
    out[n] = '\0';
    memcpy(c->comp.types, out, n + 1);
    return 0;
}
static void format_compress_types(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->comp.types);
}

static int parse_upstream(sws_config *c, const char *v, char *why, size_t len) {
    return sws_proxy_parse_upstreams(&c->proxy, v, why, len);
}
static void format_upstream(const sws_config *c, char *out, size_t len) {
    sws_proxy_format_upstreams(&c->proxy, out, len);
}
static int parse_host(sws_config *c, const char *v, char *why, size_t len) {
    return sws_proxy_parse_host(&c->proxy, v, why, len);
}
static void format_host(const sws_config *c, char *out, size_t len) {
    sws_proxy_format_host(&c->proxy, out, len);
}
static int parse_trusted(sws_config *c, const char *v, char *why, size_t len) {
    return sws_trusted_parse(&c->proxy, v, why, len);
}
static void format_trusted(const sws_config *c, char *out, size_t len) {
    sws_trusted_format(&c->proxy, out, len);
}
static int parse_upgrade(sws_config *c, const char *v, char *why, size_t len) {
    return sws_proxy_parse_upgrade(&c->proxy, v, why, len);
}
static void format_upgrade(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->proxy.upgrade[0] ? c->proxy.upgrade : "off");
}
/* The access keys ([server] and [route NAME], access_config.h). */
static int parse_rate(sws_config *c, const char *v, char *why, size_t len) {
    return sws_rate_parse(&c->access, v, why, len);
}
static void format_rate(const sws_config *c, char *out, size_t len) {
    sws_rate_format(&c->access, out, len);
}
static int parse_limit_status(sws_config *c, const char *v, char *why, size_t len) {
    if (strcmp(v, "429") != 0 && strcmp(v, "503") != 0) {
        snprintf(why, len, "bad status '%s' (want 429 or 503)", v);
        return -EINVAL;
    }
    c->access.status = v[0] == '5' ? 503 : 429;
    return 0;
}
static void format_limit_status(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%u", c->access.status);
}
static int parse_allow(sws_config *c, const char *v, char *why, size_t len) {
    return sws_acl_parse(&c->access.allow, v, why, len);
}
static void format_allow(const sws_config *c, char *out, size_t len) {
    sws_acl_format(&c->access.allow, out, len);
}
static int parse_deny(sws_config *c, const char *v, char *why, size_t len) {
    return sws_acl_parse(&c->access.deny, v, why, len);
}
static void format_deny(const sws_config *c, char *out, size_t len) {
    sws_acl_format(&c->access.deny, out, len);
}
static int parse_admin_allow(sws_config *c, const char *v, char *why, size_t len) {
    return sws_acl_parse(&c->admin_allow, v, why, len);
}
static void format_admin_allow(const sws_config *c, char *out, size_t len) {
    sws_acl_format(&c->admin_allow, out, len);
}
/* A realm goes inside a quoted-string (RFC 7235 2.2): printable, no quote
 * or backslash to escape. */
static int parse_realm(sws_config *c, const char *v, char *why, size_t len) {
    size_t n = strlen(v);
    bool ok = n > 0 && n < sizeof(c->access.realm);
    for (size_t i = 0; ok && i < n; i++)
        ok = (unsigned char)v[i] >= 0x20 && v[i] != 0x7f && v[i] != '"' && v[i] != '\\';
    if (!ok) {
        snprintf(why, len, "bad realm (1..%zu printable characters, no '\"' or '\\')",
                 sizeof(c->access.realm) - 1);
        return -EINVAL;
    }
    memcpy(c->access.realm, v, n + 1);
    return 0;
}
static void format_realm(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->access.realm);
}
/* An origin-form path ("/healthz"), or off. */
static int parse_health_check(sws_config *c, const char *v, char *why, size_t len) {
    if (!*v || strcmp(v, "off") == 0) {
        c->proxy.health_check[0] = '\0';
        return 0;
    }
    bool ok = v[0] == '/' && strlen(v) < sizeof(c->proxy.health_check);
    for (const char *s = v; ok && *s; s++)
        ok = (unsigned char)*s > ' ' && *s != 0x7f;
    if (!ok) {
        snprintf(why, len, "bad path '%s' (want /path or off)", v);
        return -EINVAL;
    }
    strcpy(c->proxy.health_check, v);
    return 0;
}
static void format_health_check(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->proxy.health_check[0] ? c->proxy.health_check : "off");
}

/* A file for a log or the pid: one line; "off" is none. */
static int log_path(char *dst, size_t cap, const char *v, bool off_ok, char *why, size_t len) {
    if (strlen(v) >= cap || strpbrk(v, "\r\n")) {
        snprintf(why, len, "bad file name (one line, at most %zu bytes)", cap - 1);
        return -EINVAL;
    }
    snprintf(dst, cap, "%s", strcmp(v, "off") == 0 && !off_ok ? "" : v);
    return 0;
}
static int parse_access_log(sws_config *c, const char *v, char *why, size_t len) {
    return log_path(c->access_log, sizeof(c->access_log), v, false, why, len);
}
static void format_access_log(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->access_log);
}
static int parse_pid_file(sws_config *c, const char *v, char *why, size_t len) {
    return log_path(c->pid_file, sizeof(c->pid_file), v, false, why, len);
}
static void format_pid_file(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->pid_file);
}
static int parse_log_format(sws_config *c, const char *v, char *why, size_t len) {
    if (strlen(v) >= sizeof(c->log_format)) {
        snprintf(why, len, "format longer than %zu bytes", sizeof(c->log_format) - 1);
        return -EINVAL;
    }
    int rc = sws_log_format_compile(&c->log_fmt, v, why, len);
    if (rc == 0)
        snprintf(c->log_format, sizeof(c->log_format), "%s", v);
    return rc;
}
static void format_log_format(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->log_format);
}
/* A route's: "" until set, so that an unset one takes [server]'s. */
static int parse_route_access_log(sws_config *c, const char *v, char *why, size_t len) {
    if (!*v) {
        snprintf(why, len, "empty (want a file, or off)");
        return -EINVAL;
    }
    return log_path(c->rt.access_log, sizeof(c->rt.access_log), v, true, why, len);
}
static void format_route_access_log(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->rt.access_log);
}
static int parse_route_log_format(sws_config *c, const char *v, char *why, size_t len) {
    if (strlen(v) >= sizeof(c->rt.log_format)) {
        snprintf(why, len, "format longer than %zu bytes", sizeof(c->rt.log_format) - 1);
        return -EINVAL;
    }
    int rc = sws_log_format_compile(&c->rt.log_fmt, v, why, len);
    if (rc == 0)
        snprintf(c->rt.log_format, sizeof(c->rt.log_format), "%s", v);
    return rc;
}
static void format_route_log_format(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->rt.log_format);
}

/* One name of a route's host list: a DNS name ("*.name" for every name
 * under it, a trailing dot dropped) or an IP literal, without a port. */
static bool route_name_ok(const char *s, size_t n) {
    if (n == 0 || n > 253)
        return false;
    if (s[0] == '[') { /* an IPv6 literal, as Host writes it */
        for (size_t i = 1; i + 1 < n; i++)
            if (!strchr("0123456789abcdefABCDEF:.", s[i]))
                return false;
        return n > 2 && s[n - 1] == ']';
    }
    size_t label = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (ch == '.') {
            if (label == 0)
                return false; /* an empty label */
            label = 0;
            continue;
        }
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '-') ||
            ++label > 63)
            return false;
    }
    return label > 0;
}

/* Appends one name to c->rt.hosts, lowercased ("*.a.b" as ".a.b"). */
static int add_route_name(sws_config *c, const char *v, size_t n, char *why, size_t len) {
    sws_route_keys *rt = &c->rt;
    bool wild = n > 2 && v[0] == '*' && v[1] == '.';
    const char *h = wild ? v + 2 : v;
    size_t hl = wild ? n - 2 : n;
    if (hl > 1 && h[hl - 1] == '.' && h[0] != '[')
        hl--; /* "example.com." is example.com, as a Host with its dot is matched */
    if (!route_name_ok(h, hl)) {
        snprintf(why, len, "bad host '%.*s' (want names, *.name or IP addresses, no port%s)",
                 (int)n, v, n == 1 && v[0] == '*' ? "; unset matches any host" : "");
        return -EINVAL;
    }
    char name[256];
    size_t k = 0;
    if (wild)
        name[k++] = '.';
    for (size_t i = 0; i < hl; i++)
        name[k++] = (char)(h[i] >= 'A' && h[i] <= 'Z' ? h[i] + ('a' - 'A') : h[i]);
    name[k++] = '\0';
    for (uint32_t at = 0; at < rt->hosts_len; at += (uint32_t)strlen(rt->hosts + at) + 1) {
        if (strcmp(rt->hosts + at, name) == 0) {
            snprintf(why, len, "host '%.*s' is named twice", (int)n, v);
            return -EINVAL;
        }
    }
    if (rt->nhosts == SWS_ROUTE_NAMES_MAX) {
        snprintf(why, len, "more than %d host names in one route", SWS_ROUTE_NAMES_MAX);
        return -EINVAL;
    }
    if (rt->hosts_len + k > rt->hosts_cap) {
        uint32_t cap = rt->hosts_cap ? rt->hosts_cap * 2 : 256;
        char *p = realloc(rt->hosts, cap);
        if (!p) {
            snprintf(why, len, "out of memory");
            return -ENOMEM;
        }
        rt->hosts = p;
        rt->hosts_cap = cap;
    }
    memcpy(rt->hosts + rt->hosts_len, name, k);
    rt->hosts_len += (uint32_t)k;
    rt->nhosts++;
    return 0;
}

/* [server] error_page and [route NAME] error_page: the syntax now, the files
 * when the configuration is complete (sws_error_pages_load). */
static int parse_error_page(sws_config *c, const char *v, char *why, size_t len) {
    if (!*v || strcmp(v, "off") == 0) {
        c->error_page[0] = '\0';
        return 0;
    }
    if (sws_error_page_check(v, why, len) < 0)
        return -EINVAL;
    snprintf(c->error_page, sizeof(c->error_page), "%s", v);
    return 0;
}
static void format_error_page(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->error_page);
}

/* [route NAME] host: names separated by commas (or spaces); several host
 * lines add up, for lists longer than a line. */
static int parse_route_host(sws_config *c, const char *v, char *why, size_t len) {
    const char *s = v;
    bool any = false;
    for (;;) {
        s += strspn(s, ", \t");
        if (!*s)
            break;
        size_t n = strcspn(s, ", \t");
        int rc = add_route_name(c, s, n, why, len);
        if (rc < 0)
            return rc;
        any = true;
        s += n;
    }
    if (!any) {
        snprintf(why, len, "no host name (unset matches any host)");
        return -EINVAL;
    }
    return 0;
}
static void format_route_host(const sws_config *c, char *out, size_t len) {
    size_t o = 0;
    out[0] = '\0';
    for (uint32_t at = 0; at < c->rt.hosts_len && o < len;) {
        const char *h = c->rt.hosts + at;
        o += (size_t)snprintf(out + o, len - o, "%s%s%s", o ? ", " : "", h[0] == '.' ? "*" : "", h);
        at += (uint32_t)strlen(h) + 1;
    }
}

/* path and path_prefix: one of them per route, '/' first, no query (the
 * query is not matched), and short enough for what the parser keeps. */
static int route_path(sws_config *c, const char *v, bool prefix, char *why, size_t len) {
    if (c->rt.path[0]) {
        snprintf(why, len, "a route has one path or path_prefix");
        return -EINVAL;
    }
    size_t n = strlen(v);
    bool ok = v[0] == '/' && n < SWS_ROUTE_PATH_MAX - 1;
    for (size_t i = 0; ok && i < n; i++)
        ok = (unsigned char)v[i] > 0x20 && v[i] != 0x7f && v[i] != '?' && v[i] != '#';
    if (!ok) {
        snprintf(why, len,
                 "bad path '%s' (want /..., up to %d bytes, no query, no spaces: a longer or "
                 "other one could never match)",
                 v, SWS_ROUTE_PATH_MAX - 2);
        return -EINVAL;
    }
    memcpy(c->rt.path, v, n + 1);
    c->rt.prefix = prefix;
    return 0;
}
static int parse_route_path(sws_config *c, const char *v, char *why, size_t len) {
    return route_path(c, v, false, why, len);
}
static int parse_route_prefix(sws_config *c, const char *v, char *why, size_t len) {
    return route_path(c, v, true, why, len);
}
static void format_route_path(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->rt.prefix ? "" : c->rt.path);
}
static void format_route_prefix(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->rt.prefix ? c->rt.path : "");
}

/* add_header, add_header_always ([server] and [route NAME]): one field a
 * line, lines adding up (header_policy.h). */
static int parse_add_header(sws_config *c, const char *v, char *why, size_t len) {
    return sws_header_keys_add(&c->hdr, v, false, why, len);
}
static int parse_add_header_always(sws_config *c, const char *v, char *why, size_t len) {
    return sws_header_keys_add(&c->hdr, v, true, why, len);
}
static void format_add_header(const sws_config *c, char *out, size_t len) {
    sws_header_keys_format(&c->hdr, false, out, len);
}
static void format_add_header_always(const sws_config *c, char *out, size_t len) {
    sws_header_keys_format(&c->hdr, true, out, len);
}

/* [redirect] (redirect_config.c). */
static int parse_redirect_to(sws_config *c, const char *v, char *why, size_t len) {
    return sws_redirect_parse_to(&c->redirect, v, why, len);
}
static void format_redirect_to(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->redirect.to);
}
static int parse_redirect_code(sws_config *c, const char *v, char *why, size_t len) {
    return sws_redirect_parse_code(&c->redirect, v, why, len);
}
static void format_redirect_code(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%u", (unsigned)c->redirect.code);
}

/* [acme]: parsed by src/acme/acme_config.c, which the unit tests also drive
 * (its sws_acme_keys holds the same defaults for them). */
#define ACME_PARSE(name, key)                                                                      \
    static int parse_acme_##name(sws_config *c, const char *v, char *why, size_t len) {            \
        return sws_acme_config_set(&c->acme, key, v, why, len);                                    \
    }
#define ACME_TEXT(name, field)                                                                     \
    ACME_PARSE(name, #name)                                                                        \
    static void format_acme_##name(const sws_config *c, char *out, size_t len) {                   \
        snprintf(out, len, "%s", c->acme.field);                                                   \
    }
#define ACME_SECS(name, field)                                                                     \
    ACME_PARSE(name, #name)                                                                        \
    static void format_acme_##name(const sws_config *c, char *out, size_t len) {                   \
        snprintf(out, len, "%us", (unsigned)c->acme.field);                                        \
    }
ACME_TEXT(directory, directory)
ACME_TEXT(email, email)
ACME_TEXT(state_dir, state_dir)
ACME_TEXT(challenge, challenge)
ACME_TEXT(ca_file, ca_file)
ACME_TEXT(http_listen, http_listen)
ACME_SECS(renew_before, renew_before_s)
ACME_SECS(retry_min, retry_min_s)
ACME_SECS(retry_max, retry_max_s)
ACME_PARSE(domains, "domains")
static void format_acme_domains(const sws_config *c, char *out, size_t len) {
    size_t o = 0;
    out[0] = '\0';
    for (int i = 0; i < c->acme.ndomains && o < len; i++)
        o += (size_t)snprintf(out + o, len - o, "%s%s", i ? ", " : "", c->acme.domains[i]);
}
/* The ACME thread keeps the [acme] it started with: every key needs a restart. */
#define ACME_KEY(k, def, help)                                                                     \
    CUSTOM("acme", #k, parse_acme_##k, format_acme_##k, def, RESTART, help)

/* ---- the table ------------------------------------------------------------ */

#define F(field) offsetof(sws_config, field), sizeof(((sws_config *)0)->field)
#define UINT(s, k, fld, lo, hi, def, restart, help)                                                \
    { s, k, SWS_KEY_UINT, F(fld), lo, hi, NULL, NULL, NULL, def, restart, help }
#define SIZE(s, k, fld, lo, hi, def, restart, help)                                                \
    { s, k, SWS_KEY_SIZE, F(fld), lo, hi, NULL, NULL, NULL, def, restart, help }
#define MS(s, k, fld, lo, def, restart, help)                                                      \
    { s, k, SWS_KEY_MS, F(fld), lo, UINT32_MAX, NULL, NULL, NULL, def, restart, help }
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
    CUSTOM("server", "access_log", parse_access_log, format_access_log, NULL, RELOAD,
           "file for the access log, one line per answer (unset or off: none)"),
    CUSTOM("server", "log_format", parse_log_format, format_log_format, "combined", RELOAD,
           "access log lines: combined, common, json, json VARIABLES, or a $variable template"),
    CUSTOM("server", "pid_file", parse_pid_file, format_pid_file, NULL, RESTART,
           "file for the server's pid, kept across SIGUSR2 (unset: none)"),
    BOOL("server", "http2", http2, "on", RESTART,
         "HTTP/2 beside HTTP/1.1: ALPN h2 on a tls listener, the preface on a plaintext one"),
    BOOL("server", "alt_svc", alt_svc, "on", RESTART,
         "with a quic listener: Alt-Svc: h3=\":PORT\"; ma=86400 on the tls listeners' answers"),
    CUSTOM("server", "add_header", parse_add_header, format_add_header, NULL, RELOAD,
           "\"Name: value\" added to 2xx and 3xx answers; one a line, lines add up"),
    CUSTOM("server", "add_header_always", parse_add_header_always, format_add_header_always, NULL,
           RELOAD, "\"Name: value\" added to every answer, errors included"),
    CUSTOM("server", "error_page", parse_error_page, format_error_page, NULL, RELOAD,
           "CODE [CODE...] FILE[, ...]: files sent as the body of the default route's errors"),
    CUSTOM_AT("server", "limit_rate", access.rate_us, parse_rate, format_rate, "off", RELOAD,
              "requests per client address: N r/s or N r/m (GCRA, shared by the loops), or off"),
    UINT("server", "limit_burst", access.burst, 0, 1000000, "0", RELOAD,
         "requests beyond limit_rate a client may send at once"),
    UINT("server", "limit_conn", access.conn, 0, 65535, "0", RELOAD,
         "open connections per peer address (0: no limit)"),
    CUSTOM_AT("server", "limit_status", access.status, parse_limit_status, format_limit_status,
              "429", RELOAD, "status past limit_rate or limit_conn: 429 or 503 (with Retry-After)"),
    CUSTOM_AT("server", "allow", access.allow, parse_allow, format_allow, "off", RELOAD,
              "client addresses (CIDR list, or all) that may ask; others 403"),
    CUSTOM_AT("server", "deny", access.deny, parse_deny, format_deny, "off", RELOAD,
              "client addresses refused with 403 (the most specific of allow and deny wins)"),
    STRING("server", "auth_basic_file", access.auth_file, NULL, RELOAD,
           "htpasswd file (bcrypt or SHA-512 crypt) whose users may ask; others 401"),
    CUSTOM_AT("server", "auth_realm", access.realm, parse_realm, format_realm, "scalwsd", RELOAD,
              "the realm of the Basic challenge (WWW-Authenticate)"),

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

    STRING("static", "root", stat.root, NULL, RELOAD,
           "the directory served (scenario static needs it; --root sets it)"),
    CUSTOM("static", "index", parse_index, format_index, "index.html", RELOAD,
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
    CUSTOM("static", "try_files", parse_try_files, format_try_files, "off", RELOAD,
           "paths tried in order ($uri, $uri.html, $uri/, /index.html), =CODE last; off: none"),
    BOOL("static", "autoindex", stat.autoindex, "off", RELOAD,
         "list a directory without its index file (HTML; dotfiles only with dotfiles = allow)"),

    BOOL("compress", "compress", comp.on, "off", RELOAD,
         "compress answers on the fly (gzip, br) for clients that accept it"),
    CUSTOM("compress", "compress_types", parse_compress_types, format_compress_types,
           SWS_COMPRESS_DEFAULT_TYPES, RELOAD,
           "media types compressed (type/subtype or type/*), spaces or commas between"),
    SIZE("compress", "compress_min_length", comp.min_length, 0, UINT32_MAX, "256", RELOAD,
         "an answer of known length below this goes uncompressed"),
    UINT("compress", "compress_level_gzip", comp.level_gzip, 1, 9, "5", RELOAD,
         "zlib level of gzip answers (1 fastest, 9 smallest)"),
    UINT("compress", "compress_level_br", comp.level_br, 0, 11, "5", RELOAD,
         "brotli quality of br answers (0 fastest, 11 smallest)"),

    UINT("respond", "status", status, 200, 599, "200", RELOAD, "status of the fixed answer"),
    CUSTOM("respond", "body", parse_body, format_body, "Hello from scalwsd\\n", RELOAD,
           "body of the fixed answer (\\n \\r \\t \\\\ escapes)"),
    STRING("respond", "content_type", content_type, "text/plain", RELOAD,
           "Content-Type of the fixed answer"),

    CUSTOM("redirect", "to", parse_redirect_to, format_redirect_to, NULL, RELOAD,
           "the Location: a URL or /path with $scheme $host $request_uri $uri $args $is_args"),
    CUSTOM("redirect", "code", parse_redirect_code, format_redirect_code, "301", RELOAD,
           "status of the redirect: 301, 302, 303, 307 or 308"),
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

    CUSTOM("proxy", "upstream", parse_upstream, format_upstream, NULL, RESTART,
           "host:port [weight=N][, ...] to forward to; a name: each of its addresses"),
    ENUM("proxy", "balance", proxy.balance, balance_names, "round_robin", RELOAD,
         "how an upstream is picked: round_robin, least_conn or p2c (weighted)"),
    CUSTOM("proxy", "host", parse_host, format_host, "client", RELOAD,
           "Host sent upstream: client (the client's), upstream (its name) or a value"),
    ENUM("proxy", "forwarded", proxy.forwarded, forwarded_names, "x-forwarded", RELOAD,
         "fields naming the client: x-forwarded (X-Forwarded-*), rfc7239 (Forwarded) or off"),
    CUSTOM("proxy", "trusted_proxies", parse_trusted, format_trusted, "off", RELOAD,
           "CIDR list whose forwarding fields are kept and appended to; others replaced"),
    UINT("proxy", "max_fails", proxy.max_fails, 0, 1000, "1", RELOAD,
         "failures within fail_timeout that skip an upstream for fail_timeout (0: never)"),
    MS("proxy", "fail_timeout", proxy.fail_timeout_ms, 1, "10s", RELOAD,
       "the window of max_fails, and how long the upstream is skipped after it"),
    CUSTOM("proxy", "health_check", parse_health_check, format_health_check, "off", RESTART,
           "path an active check GETs on every upstream (2xx/3xx passes), or off"),
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
        "proxy", "upgrade", parse_upgrade, format_upgrade, "websocket", RELOAD,
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
    CUSTOM_AT("admin", "allow", admin_allow, parse_admin_allow, format_admin_allow, "off", RELOAD,
              "addresses (CIDR list) that may use the admin listener; off: any"),
};
const int sws_config_nkeys = (int)(sizeof sws_config_keys / sizeof sws_config_keys[0]);

/* [route NAME]'s own keys (route.h); the section also takes every key of
 * [respond], [static], [proxy] and [redirect] from the table above. */
const sws_key sws_route_key_table[] = {
    CUSTOM("route NAME", "host", parse_route_host, format_route_host, NULL, RELOAD,
           "Hosts to match: names, *.name for every name under it, comma separated "
           "(unset: any host)"),
    STRING("route NAME", "listen", rt.listen, NULL, RELOAD,
           "the listeners it serves, by name= or address, comma separated (unset: every one)"),
    CUSTOM("route NAME", "path_prefix", parse_route_prefix, format_route_prefix, NULL, RELOAD,
           "path prefix to match, on a segment boundary; the longest wins"),
    CUSTOM("route NAME", "path", parse_route_path, format_route_path, NULL, RELOAD,
           "exact path to match (beats any path_prefix)"),
    ENUM("route NAME", "scenario", rt.scenario, scenario_names, NULL, RELOAD,
         "what answers the route: respond, static, proxy or redirect"),
    BOOL("route NAME", "strip_prefix", rt.strip_prefix, "off", RELOAD,
         "the scenario sees the path without the route's path_prefix"),
    CUSTOM("route NAME", "access_log", parse_route_access_log, format_route_access_log, NULL,
           RELOAD, "the route's access log file, or off (unset: [server]'s)"),
    CUSTOM("route NAME", "log_format", parse_route_log_format, format_route_log_format, NULL,
           RELOAD, "the route's access log format (unset: [server]'s)"),
    CUSTOM("route NAME", "add_header", parse_add_header, format_add_header, NULL, RELOAD,
           "\"Name: value\" on its 2xx and 3xx answers (none set: [server]'s)"),
    CUSTOM("route NAME", "add_header_always", parse_add_header_always, format_add_header_always,
           NULL, RELOAD, "\"Name: value\" on every answer of the route"),
    CUSTOM("route NAME", "error_page", parse_error_page, format_error_page, NULL, RELOAD,
           "CODE [CODE...] FILE[, ...]: files sent as the body of the route's errors"),
};
const int sws_route_nkeys = (int)(sizeof sws_route_key_table / sizeof sws_route_key_table[0]);
_Static_assert(sizeof sws_config_keys / sizeof sws_config_keys[0] <= SWS_CONFIG_KEYS_MAX,
               "raise SWS_CONFIG_KEYS_MAX");
