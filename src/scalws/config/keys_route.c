/* [route NAME]'s own custom keys: host (names, lowercased, "*.name" kept
 * as ".name" for route.c's match), path and path_prefix. The rest of the
 * section is route_config.c's. */
#include "keys.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* [route NAME] host: names separated by commas (or spaces); several host
 * lines add up, for lists longer than a line. */
int sws_key_parse_route_host(sws_config *c, const char *v, char *why, size_t len) {
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
void sws_key_format_route_host(const sws_config *c, char *out, size_t len) {
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
int sws_key_parse_route_path(sws_config *c, const char *v, char *why, size_t len) {
    return route_path(c, v, false, why, len);
}
int sws_key_parse_route_prefix(sws_config *c, const char *v, char *why, size_t len) {
    return route_path(c, v, true, why, len);
}
void sws_key_format_route_path(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->rt.prefix ? "" : c->rt.path);
}
void sws_key_format_route_prefix(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->rt.prefix ? c->rt.path : "");
}
