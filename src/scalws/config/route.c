/* Matching a request to its route (route.h): the host looked up in the
 * table's index of names (exact, then each wildcard suffix, longest first,
 * then the routes without a host), and among the routes of the first rank
 * that has one for the path, the one whose path matches best. No allocation:
 * the host is lowercased on the stack, the path compared where the parser
 * keeps it. */
#include "route.h"
#include "htpasswd.h"
#include "sws_tls_client.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static char lower(char c) {
    return (char)(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
}

size_t sws_target_authority(const char *t, size_t n, const char **auth, size_t *auth_len) {
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

/* Names ordered by length, then bytes: any total order does for the search. */
static int name_cmp(const char *a, size_t al, const char *b, size_t bl) {
    if (al != bl)
        return al < bl ? -1 : 1;
    return memcmp(a, b, al);
}

/* The entries of idx named h: [*lo, return). */
static uint32_t find(const sws_route_name *idx, uint32_t n, const char *h, size_t hl,
                     uint32_t *lo) {
    uint32_t a = 0, b = n;
    while (a < b) { /* the first entry not below h */
        uint32_t m = a + (b - a) / 2;
        if (name_cmp(idx[m].name, idx[m].len, h, hl) < 0)
            a = m + 1;
        else
            b = m;
    }
    *lo = a;
    while (b < n && idx[b].len == hl && memcmp(idx[b].name, h, hl) == 0)
        b++;
    return b;
}

/* How well e's route's path matches p (the target's path, up to '?') on
 * listener l: 0 not at all; else larger is more specific. */
static uint32_t path_score(const sws_route_name *e, unsigned l, const char *p, size_t n) {
    if (e->listeners && !(e->listeners >> l & 1u))
        return 0;
    if (e->path_len == 0)
        return 1;
    if (n < e->path_len || memcmp(p, e->path, e->path_len) != 0)
        return 0;
    if (e->exact)
        return n == e->path_len ? 1u << 16 : 0;
    if (!e->slash && n > e->path_len && p[e->path_len] != '/')
        return 0; /* "/api" is not a prefix of "/apix" */
    return 2u + e->path_len;
}

/* Of the entries e[0..n), the route whose path matches p best: 0 when none
 * does. */
static int best_path(const sws_route_name *e, uint32_t n, unsigned l, const char *p, size_t pl) {
    int best = 0;
    uint32_t best_score = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t score = path_score(&e[i], l, p, pl);
        if (score > best_score) {
            best_score = score;
            best = e[i].route;
        }
    }
    return best;
}

int sws_route_match(const sws_routes *t, unsigned listener, const char *host, size_t host_len,
                    const char *target, size_t target_len) {
    if (t->n <= 1)
        return 0;
    const char *auth;
    size_t auth_len, skip = sws_target_authority(target, target_len, &auth, &auth_len);
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
    char low[256];
    if (host_len && host_len < sizeof(low) && (t->nexact || t->nwild)) {
        for (size_t i = 0; i < host_len; i++)
            low[i] = lower(host[i]);
        uint32_t lo, hi = find(t->exact, t->nexact, low, host_len, &lo);
        int best = best_path(t->exact + lo, hi - lo, listener, target, plen);
        /* ".example.com" for "*.example.com": at least one label before it. */
        for (size_t i = 1; !best && t->nwild && i < host_len; i++) {
            size_t sl = host_len - i;
            if (low[i] != '.' || !(t->wild_len[sl / 64] >> (sl % 64) & 1))
                continue;
            hi = find(t->wild, t->nwild, low + i, sl, &lo);
            best = best_path(t->wild + lo, hi - lo, listener, target, plen);
        }
        if (best)
            return best;
    }
    return best_path(t->any, t->nany, listener, target, plen);
}

static int entry_cmp(const void *a, const void *b) {
    const sws_route_name *x = a, *y = b;
    int c = name_cmp(x->name, x->len, y->name, y->len);
    return c ? c : (int)x->route - (int)y->route;
}

int sws_routes_index(sws_routes *t) {
    uint32_t ne = 0, nw = 0, na = 0;
    for (int i = 1; i < t->n; i++) {
        const sws_route *r = &t->r[i];
        na += r->nhosts == 0;
        for (uint32_t at = 0; at < r->hosts_len; at += (uint32_t)strlen(r->hosts + at) + 1) {
            if (r->hosts[at] == '.')
                nw++;
            else
                ne++;
        }
    }
    t->exact = malloc((ne ? ne : 1) * sizeof(*t->exact));
    t->wild = malloc((nw ? nw : 1) * sizeof(*t->wild));
    t->any = malloc((na ? na : 1) * sizeof(*t->any));
    if (!t->exact || !t->wild || !t->any)
        return -ENOMEM;
    for (int i = 1; i < t->n; i++) {
        const sws_route *r = &t->r[i];
        sws_route_name e = {.route = (uint16_t)i,
                            .path = r->path,
                            .path_len = r->path_len,
                            .exact = r->exact,
                            .slash = r->path_len && r->path[r->path_len - 1] == '/',
                            .listeners = r->listeners};
        if (r->nhosts == 0)
            t->any[t->nany++] = e;
        for (uint32_t at = 0; at < r->hosts_len;) {
            e.name = r->hosts + at;
            e.len = (uint16_t)strlen(e.name);
            if (e.name[0] == '.') {
                t->wild[t->nwild++] = e;
                t->wild_len[e.len / 64] |= 1ull << (e.len % 64);
            } else {
                t->exact[t->nexact++] = e;
            }
            at += (uint32_t)e.len + 1u;
        }
    }
    qsort(t->exact, t->nexact, sizeof(*t->exact), entry_cmp);
    qsort(t->wild, t->nwild, sizeof(*t->wild), entry_cmp);
    return 0;
}

sws_route_view sws_route_target(const sws_route *r, const char *target, size_t target_len) {
    const char *auth;
    size_t auth_len, skip = sws_target_authority(target, target_len, &auth, &auth_len);
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
        free(t->r[i].hosts);
        sws_header_policy_free(t->r[i].cfg.headers);
        sws_error_pages_unref(t->r[i].cfg.pages);
        sws_tls_client_free(t->r[i].cfg.up_tls); /* open engines keep their SSL_CTX */
        sws_htpasswd_free(t->r[i].cfg.access.users);
    }
    free(t->exact);
    free(t->wild);
    free(t->any);
    free(t);
}

const sws_route *sws_routes_find(const sws_routes *t, const char *name) {
    for (int i = 0; t && i < t->n; i++)
        if (strcmp(t->r[i].name, name) == 0)
            return &t->r[i];
    return NULL;
}
