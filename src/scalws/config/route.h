/* Routes (issue 22): [route NAME] sections pick the scenario instance that
 * answers a request by its Host and path. The table is built with the config
 * (route_config.c), read-only afterwards and shared by every loop; matching
 * (route.c) is done once per request on the loop, and allocates nothing.
 *
 * Matching, in this order:
 *   - host: a route takes a list of names. A route with a host beats one
 *     without. An exact name beats a
 *     wildcard; of two wildcards the longer suffix wins. The request's host is
 *     the authority of an absolute-form target, else the Host field, without
 *     its port, compared case-insensitively; a request without one matches
 *     only routes without a host.
 *   - path, among the routes of that host rank: an exact `path` beats any
 *     `path_prefix`; the longest prefix wins. A prefix matches on a segment
 *     boundary: "/api" matches "/api", "/api/x" and "/api?q", not "/apix"; a
 *     prefix ending in '/' matches whatever begins with it. The path is the
 *     raw target up to '?' (no percent-decoding).
 *   - listener: a route with a listen key is seen only by requests of the
 *     listeners it names, as if absent from the others' tables.
 *   - nothing matches: the default route (the top-level scenario; a 404 when
 *     routes exist and [server] scenario is not set).
 * The names of every route are indexed with the table (sorted: exact names,
 * wildcard suffixes), so that a request looks its host up by binary search
 * (each suffix at a '.' for the wildcards, the longest first) instead of
 * comparing it with every name; the routes without a host are a list. */
#ifndef SWS_ROUTE_H
#define SWS_ROUTE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"

#define SWS_ROUTE_NAME_MAX 48
#define SWS_ROUTES_MAX 256 /* routes of one table, the default included */
#define SWS_ROUTE_DEFAULT "default"

typedef struct sws_route {
    char name[SWS_ROUTE_NAME_MAX];
    char origin[288]; /* "file:line" of its section ("[server]" for the default) */
    /* Its host names, each lowercased and NUL-terminated, a wildcard's as
     * ".example.com" (for "*.example.com"); owned by the route (NULL: any host). */
    char *hosts;
    uint32_t hosts_len;
    uint16_t nhosts;   /* 0: any host */
    bool own_headers;  /* its add_header lines are its own, not [server]'s */
    bool exact;        /* path is an exact `path`, not a `path_prefix` */
    uint16_t path_len; /* 0: any path */
    char path[SWS_ROUTE_PATH_MAX];
    uint32_t stat_slot; /* its /metrics slot, by name (route_inst.c); set before posting */
    bool gated;         /* it has access keys: requests pass the gate first (core/gate.h) */
    /* Lines of its root and mime_types keys (0: not in its section), for the
     * messages of the checks of the files they name (preflight.c). */
    uint32_t root_line, mime_types_line;
    /* Its access log (core/log_files.h): the file ("" none) and the format;
     * [server]'s where its section sets neither (own_log, own_format). */
    char log_path[256];
    uint32_t access_log_line; /* its access_log key's line; 0: not in its section */
    bool own_log, own_format;
    char log_format[200]; /* own_format: as written (--print-config) */
    sws_log_format log_fmt;
    /* Its error_page value and line (0: the default route's [server] key,
     * or unset), read into cfg.pages by sws_error_pages_load. */
    char error_page[SWS_ERROR_PAGE_SPEC];
    uint32_t error_page_line;
    /* Its listen key as written ("" none) and its line, and the listeners it
     * names (bit i: [server]'s listeners[i]); 0: every listener. */
    char listen[256];
    uint32_t listen_line;
    uint32_t listeners;
    sws_scenario_cfg cfg;
} sws_route;

/* One name of one route, in the table's host index, with the route's path
 * beside it: choosing among a name's routes reads this array alone. */
typedef struct sws_route_name {
    const char *name; /* the route's copy (NULL in the list of routes without a host) */
    uint16_t len;
    uint16_t route;     /* its index in the table */
    const char *path;   /* the route's */
    uint16_t path_len;  /* 0: any path */
    bool exact;         /* path is an exact `path` */
    bool slash;         /* a path_prefix ending in '/' */
    uint32_t listeners; /* the route's (0: every listener) */
} sws_route_name;

typedef struct sws_routes {
    _Atomic int refs;
    int n;       /* routes[0] is the default */
    bool listed; /* the config has [route] sections (else only the default) */
    /* The host index (sws_routes_index): every exact name and every wildcard
     * suffix, each sorted by name, then route; the routes without a host; and
     * which lengths the wildcard suffixes have (bit n: one of n bytes), so that
     * a host's suffix of no such length is not looked up. */
    sws_route_name *exact, *wild, *any;
    uint32_t nexact, nwild, nany;
    uint64_t wild_len[4];
    sws_route r[];
} sws_routes;

/* What a matched request looks like to the scenario: the target with the
 * route's prefix taken off (strip_prefix), as a view of the parser's copy. */
typedef struct sws_route_view {
    bool lead_slash;  /* a '/' goes before path: nothing of the path was left ("", "?q") */
    const char *path; /* the rest of the target, inside the caller's buffer */
    size_t len;
} sws_route_view;

/* The index in t->r of the route for host (the Host field's value, NULL or
 * empty when absent) and target (the request-target as it came), on the
 * listener of index listener ([server]'s listeners). */
int sws_route_match(const sws_routes *t, unsigned listener, const char *host, size_t host_len,
                    const char *target, size_t target_len);

/* The target as route r's scenario sees it: without r's prefix when
 * strip_prefix is on ("/api/x" -> "/x", "/api" -> "/"), else unchanged. The
 * absolute-form's scheme and authority are dropped in either case. */
sws_route_view sws_route_target(const sws_route *r, const char *target, size_t target_len);

/* Builds t's host index (0, or -ENOMEM). */
int sws_routes_index(sws_routes *t);

/* The request-target's "scheme://authority" length (0 for the origin-form),
 * and the authority itself: what RFC 9112 3.2.2 has win over Host. */
size_t sws_target_authority(const char *t, size_t n, const char **auth, size_t *auth_len);

/* The table's references (config copies share one table). */
void sws_routes_ref(sws_routes *t);
void sws_routes_unref(sws_routes *t);

/* The route named name, or NULL. */
const sws_route *sws_routes_find(const sws_routes *t, const char *name);

/* route_config.c, called by the loader (config.c): one key of [route NAME]. */
int sws_route_load_kv(sws_config *c, const char *section, const char *key, const char *value,
                      const char *path, int line, int key_line, char *why, size_t len);
/* sws_config_build, after the flags: the table from the sections and the
 * top-level scenario, checked (one line naming both routes of an overlap). */
int sws_routes_build(sws_config *c, char *err, size_t errlen);
/* --print-config: the [route NAME] sections, each with the scenario keys it
 * sets to other than the key table's defaults. */
void sws_routes_print(FILE *f, const sws_config *c);
/* Lines for what is valid but likely not meant: a proxy route whose `host`
 * (what it matches) is one of [proxy] host's words (client, upstream), as
 * if it set the Host sent upstream (that is proxy.host in a route). */
void sws_routes_notes(FILE *f, const sws_config *c);
/* Drops what the loader collected (a failed load). */
void sws_route_load_free(sws_config *c);

#endif
