/* Matching a request to its route (route.h): a scan of the table that
 * scores each route by how specifically it matches and keeps the best. No
 * allocation, no copy of the request: the host and path are compared where
 * the parser keeps them. */
#include "route.h"
#include "htpasswd.h"
#include "sws_tls_client.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static char lower(char c) {
    return (char)(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
}

/* The absolute-form's "scheme://authority" length (0 for any other form),
 * and the authority itself. */
static size_t absolute_form(const char *t, size_t n, const char **auth, size_t *auth_len) {
    static const char *const schemes[] = {"http://", "https://"};
    if (n == 0 || t[0] == '/' || t[0] == '*')
        return 0; /* origin-form (nearly every request) and asterisk-form */
    for (size_t k = 0; k < 2; k++) {
        size_t sl = strlen(schemes[k]);
        if (n < sl || strncasecmp(t, schemes[k], sl) != 0)
            continue;
        size_t p = sl;
        while (p < n && t[p] != '/' && t[p] != '?')
            p++;
        *auth = t + sl;
        *auth_len = p - sl;
        return p;
    }
    return 0;
}

/* The host of a Host value or an authority: without userinfo (only an
 * authority may carry one: the parser refuses '@' in Host), the port and one
 * trailing dot. */
static void host_only(const char **h, size_t *n, bool authority) {
    const char *s = *h;
    size_t len = *n;
    if (len == 0)
        return; /* no Host (s may be NULL) */
    const char *at = authority ? memchr(s, '@', len) : NULL;
    if (at) {
        len -= (size_t)(at + 1 - s);
        s = at + 1;
    }
    size_t end = len;
    if (len && s[0] == '[') {
        const char *close = memchr(s, ']', len);
        end = close ? (size_t)(close - s) + 1 : len;
    } else {
        const char *colon = memchr(s, ':', len);
        if (colon)
            end = (size_t)(colon - s);
    }
    if (end && s[end - 1] == '.')
        end--;
    *h = s;
    *n = end;
}

static bool same_lower(const char *req, const char *route, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (lower(req[i]) != route[i])
            return false;
    return true;
}

/* How well r's host matches: 0 not at all; else larger is more specific. */
static uint64_t host_score(const sws_route *r, const char *h, size_t n) {
    if (r->host_len == 0)
        return 1;
    if (!r->wildcard)
        return n == r->host_len && same_lower(h, r->host, n) ? 3u << 16 : 0;
    /* ".example.com": at least one label before it. */
    if (n <= r->host_len || !same_lower(h + n - r->host_len, r->host, r->host_len))
        return 0;
    return (2u << 16) + r->host_len;
}

/* How well r's path matches p (the target's path, up to '?'): 0 not at all. */
static uint64_t path_score(const sws_route *r, const char *p, size_t n) {
    if (r->path_len == 0)
        return 1;
    if (n < r->path_len || memcmp(p, r->path, r->path_len) != 0)
        return 0;
    if (r->exact)
        return n == r->path_len ? 1u << 16 : 0;
    if (r->path[r->path_len - 1] != '/' && n > r->path_len && p[r->path_len] != '/')
        return 0; /* "/api" is not a prefix of "/apix" */
    return 2u + r->path_len;
}

int sws_route_match(const sws_routes *t, const char *host, size_t host_len, const char *target,
                    size_t target_len) {
    if (t->n <= 1)
        return 0;
    const char *auth;
    size_t auth_len, skip = absolute_form(target, target_len, &auth, &auth_len);
    if (skip) {
        /* RFC 9112 3.2.2: the target's authority wins over Host. */
        host = auth;
        host_len = auth_len;
        target += skip;
        target_len -= skip;
    }
    if (!host)
        host_len = 0;
    host_only(&host, &host_len, skip != 0);
    const char *q = memchr(target, '?', target_len);
    size_t plen = q ? (size_t)(q - target) : target_len;
    if (plen == 0 && skip) {
        target = "/"; /* "http://host" is the root */
        plen = 1;
    }
    int best = 0;
    uint64_t best_score = 0;
    for (int i = 1; i < t->n; i++) {
        const sws_route *r = &t->r[i];
        uint64_t hs = host_score(r, host, host_len);
        if (!hs)
            continue;
        uint64_t ps = path_score(r, target, plen);
        if (!ps)
            continue;
        uint64_t score = hs << 32 | ps;
        if (score > best_score) {
            best_score = score;
            best = i;
        }
    }
    return best;
}

sws_route_view sws_route_target(const sws_route *r, const char *target, size_t target_len) {
    const char *auth;
    size_t auth_len, skip = absolute_form(target, target_len, &auth, &auth_len);
    sws_route_view v = {.path = target + skip, .len = target_len - skip};
    if (skip && (v.len == 0 || v.path[0] == '?'))
        v.lead_slash = true;
    if (!r->cfg.strip_prefix || r->exact || r->path_len == 0 || v.len < r->path_len ||
        memcmp(v.path, r->path, r->path_len) != 0)
        return v;
    /* A prefix ending in '/' keeps that '/': "/api/x" under "/api/" is "/x". */
    size_t cut = r->path[r->path_len - 1] == '/' ? r->path_len - 1 : r->path_len;
    v.path += cut;
    v.len -= cut;
    v.lead_slash = v.len == 0 || v.path[0] != '/';
    return v;
}

void sws_routes_ref(sws_routes *t) {
    if (t)
        atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
}

void sws_routes_unref(sws_routes *t) {
    if (!t || atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) != 1)
        return;
    for (int i = 0; i < t->n; i++) {
        free(t->r[i].cfg.body);
        sws_tls_client_free(t->r[i].cfg.up_tls); /* open engines keep their SSL_CTX */
        sws_htpasswd_free(t->r[i].cfg.access.users);
    }
    free(t);
}

const sws_route *sws_routes_find(const sws_routes *t, const char *name) {
    for (int i = 0; t && i < t->n; i++)
        if (strcmp(t->r[i].name, name) == 0)
            return &t->r[i];
    return NULL;
}
