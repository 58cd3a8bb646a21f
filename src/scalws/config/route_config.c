/* [route NAME] sections into the route table (route.h). A route section
 * takes its own keys (sws_route_key_table) and every key of [respond],
 * [static], [proxy], [redirect] and [compress] by the rows of the one key table: each
 * section is read into a scratch config, with the key table's defaults, and what the
 * scenarios read of it is kept in the route's compact sws_scenario_cfg. So a
 * key added to one of those sections works in routes without a line here
 * (as long as it lives in sws_config's proxy, stat or comp member). A key both a
 * route and a scenario section have (a [proxy] host, say) is reached in a
 * route as "proxy.host". The access keys of [server] (access_config.h) are a
 * route's too: each route has its own, the default's in [server]. */
#include "htpasswd.h"
#include "route.h"
#include "sws_tls_client.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sws_route_load {
    int n, cap;
    sws_route *r;
    bool open;           /* a section is being read into scratch */
    sws_config *scratch; /* its keys, on the key table's defaults */
    char name[SWS_ROUTE_NAME_MAX];
    char origin[288];
};

/* The scenario sections a route takes keys of, in the order they are tried. */
static const char *const scenario_sections[] = {"respond", "static", "proxy", "redirect",
                                                "compress"};

static bool name_ok(const char *n) {
    size_t len = strlen(n);
    if (len == 0 || len >= SWS_ROUTE_NAME_MAX)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = n[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.'))
            return false;
    }
    return true;
}

static void fill_scenario(sws_scenario_cfg *d, const sws_config *c, int kind, bool strip) {
    d->scenario = (sws_scenario_kind)kind;
    d->strip_prefix = strip;
    d->status = c->status;
    d->body_len = c->body_len;
    d->body = NULL;
    memcpy(d->content_type, c->content_type, sizeof(d->content_type));
    d->stat = c->stat;
    d->proxy = c->proxy;
    d->redirect = c->redirect;
    d->headers = NULL; /* sws_routes_build: its own or [server]'s */
    d->comp = c->comp;
    d->access = c->access;
    d->access.users = NULL; /* loaded with the table (sws_routes_build) */
}

/* Whether k is one of [server]'s access keys, which a route takes too. */
static bool access_key(const sws_key *k) {
    return strcmp(k->section, "server") == 0 && k->off >= offsetof(sws_config, access) &&
           k->off < offsetof(sws_config, access) + sizeof(sws_access_config);
}

/* The section being read becomes a route of the list (its body copied). */
static int finish(struct sws_route_load *L) {
    if (!L->open)
        return 0;
    L->open = false;
    if (L->n == L->cap) {
        int cap = L->cap ? L->cap * 2 : 8;
        sws_route *r = realloc(L->r, (size_t)cap * sizeof(*r));
        if (!r)
            return -ENOMEM;
        L->r = r;
        L->cap = cap;
    }
    const sws_config *s = L->scratch;
    sws_route *r = &L->r[L->n];
    memset(r, 0, sizeof(*r));
    snprintf(r->name, sizeof(r->name), "%s", L->name);
    snprintf(r->origin, sizeof(r->origin), "%s", L->origin);
    /* The names move to the route. */
    r->hosts = L->scratch->rt.hosts;
    r->hosts_len = s->rt.hosts_len;
    r->nhosts = s->rt.nhosts;
    L->scratch->rt.hosts = NULL;
    r->path_len = (uint16_t)strlen(s->rt.path);
    memcpy(r->path, s->rt.path, r->path_len);
    r->exact = r->path_len && !s->rt.prefix;
    if (s->rt.access_log[0]) {
        r->own_log = true;
        if (strcmp(s->rt.access_log, "off") != 0)
            snprintf(r->log_path, sizeof(r->log_path), "%s", s->rt.access_log);
        r->access_log_line = s->rt.access_log_line;
    }
    if (s->rt.log_format[0]) {
        r->own_format = true;
        r->log_fmt = s->rt.log_fmt;
        snprintf(r->log_format, sizeof(r->log_format), "%s", s->rt.log_format);
    }
    fill_scenario(&r->cfg, s, s->rt.scenario, s->rt.strip_prefix);
    int root = sws_config_key_index("static", "root");
    int mime = sws_config_key_index("static", "mime_types");
    r->root_line = root >= 0 ? s->origin_line[root] : 0;
    r->mime_types_line = mime >= 0 ? s->origin_line[mime] : 0;
    memcpy(r->error_page, s->error_page, sizeof(r->error_page));
    r->error_page_line = s->rt.error_page_line;
    memcpy(r->listen, s->rt.listen, sizeof(r->listen));
    r->listen_line = s->rt.listen_line;
    L->n++; /* from here its heap parts are freed with the list */
    int rc = 0;
    r->own_headers = s->hdr.set;
    r->cfg.headers = sws_header_policy_build(&s->hdr, &rc);
    if (rc < 0)
        return rc;
    if (s->body_len) {
        if (!(r->cfg.body = malloc(s->body_len)))
            return -ENOMEM;
        memcpy(r->cfg.body, s->body, s->body_len);
    }
    return 0;
}

/* The nearest key a route takes, for "did you mean": its own, then the
 * scenario sections'. NULL when none is a likely typo of key. */
static const char *nearest_route_key(const char *key) {
    unsigned best = 9;
    const char *near = NULL;
    for (int i = 0; i < sws_route_nkeys; i++)
        if (sws_config_near(key, sws_route_key_table[i].name, &best))
            near = sws_route_key_table[i].name;
    for (int i = 0; i < sws_config_nkeys; i++) {
        const sws_key *k = &sws_config_keys[i];
        if (access_key(k) && sws_config_near(key, k->name, &best))
            near = k->name;
        for (size_t j = 0; j < sizeof(scenario_sections) / sizeof(scenario_sections[0]); j++)
            if (strcmp(k->section, scenario_sections[j]) == 0 &&
                sws_config_near(key, k->name, &best))
                near = k->name;
    }
    return near;
}

static int set_route_key(sws_config *s, const char *key, char *why, size_t len, const char *v,
                         uint32_t line) {
    for (int i = 0; i < sws_route_nkeys; i++) {
        if (strcmp(sws_route_key_table[i].name, key) != 0)
            continue;
        if (strcmp(key, "access_log") == 0)
            s->rt.access_log_line = line; /* preflight.c names it */
        if (strcmp(key, "error_page") == 0)
            s->rt.error_page_line = line; /* for the messages of the files it names */
        if (strcmp(key, "listen") == 0)
            s->rt.listen_line = line; /* resolved with the table: named in its messages */
        return sws_config_set_key(s, &sws_route_key_table[i], v, why, len);
    }
    int ai = sws_config_key_index("server", key);
    if (ai >= 0 && access_key(&sws_config_keys[ai])) {
        int rc = sws_config_set_key(s, &sws_config_keys[ai], v, why, len);
        if (rc == 0) {
            s->origin[ai] = SWS_FROM_FILE;
            s->origin_line[ai] = line;
        }
        return rc;
    }
    /* "proxy.host": a scenario section's key named outright. */
    const char *dot = strchr(key, '.');
    for (size_t k = 0; k < sizeof(scenario_sections) / sizeof(scenario_sections[0]); k++) {
        const char *sec = scenario_sections[k];
        const char *name = key;
        if (dot) {
            if ((size_t)(dot - key) != strlen(sec) || strncmp(key, sec, strlen(sec)) != 0)
                continue;
            name = dot + 1;
        }
        int i = sws_config_key_index(sec, name);
        if (i >= 0) {
            int rc = sws_config_set_key(s, &sws_config_keys[i], v, why, len);
            if (rc == 0) {
                /* Where it came from, for the checks of the files it names
                 * (preflight.c) and --print-config. */
                s->origin[i] = SWS_FROM_FILE;
                s->origin_line[i] = line;
            }
            return rc;
        }
    }
    const char *near = nearest_route_key(dot ? dot + 1 : key);
    if (near)
        snprintf(why, len, "unknown key (did you mean %s?)", near);
    else
        snprintf(
            why, len,
            "unknown key (a route takes host, listen, path, path_prefix, scenario, strip_prefix, "
            "access_log, log_format, add_header, error_page, the keys of [respond], "
            "[static], [proxy] and [redirect], and the access keys of [server])");
    return -EINVAL;
}

int sws_route_load_kv(sws_config *c, const char *section, const char *key, const char *value,
                      const char *path, int line, int key_line, char *why, size_t len) {
    const char *name = section + strlen("route");
    while (*name == ' ' || *name == '\t')
        name++;
    if (!name_ok(name)) {
        snprintf(why, len, "bad route name (1..%d letters, digits, '_', '-', '.')",
                 SWS_ROUTE_NAME_MAX - 1);
        return -EINVAL;
    }
    if (strcmp(name, SWS_ROUTE_DEFAULT) == 0) {
        snprintf(why, len,
                 "'default' is the top-level scenario's route: set [server] scenario and its "
                 "section instead");
        return -EINVAL;
    }
    struct sws_route_load *L = c->route_load;
    if (!L) {
        if (!(L = calloc(1, sizeof(*L))) || !(L->scratch = malloc(sizeof(*L->scratch)))) {
            free(L);
            snprintf(why, len, "out of memory");
            return -ENOMEM;
        }
        c->route_load = L;
    }
    if (!L->open || strcmp(L->name, name) != 0) {
        if (finish(L) < 0) {
            snprintf(why, len, "out of memory");
            return -ENOMEM;
        }
        for (int i = 0; i < L->n; i++) {
            if (strcmp(L->r[i].name, name) == 0) {
                snprintf(why, len, "[route %s] appears twice (first at %s)", name, L->r[i].origin);
                return -EINVAL;
            }
        }
        if (L->n + 1 >= SWS_ROUTES_MAX) {
            snprintf(why, len, "more than %d routes", SWS_ROUTES_MAX - 1);
            return -EINVAL;
        }
        sws_config_defaults(L->scratch);
        L->scratch->rt.scenario = -1;
        snprintf(L->name, sizeof(L->name), "%s", name);
        snprintf(L->origin, sizeof(L->origin), "%s:%d", path, line);
        L->open = true;
    }
    return set_route_key(L->scratch, key, why, len, value, (uint32_t)key_line);
}

void sws_route_load_free(sws_config *c) {
    struct sws_route_load *L = c->route_load;
    if (!L)
        return;
    for (int i = 0; i < L->n; i++) {
        free(L->r[i].cfg.body);
        free(L->r[i].hosts);
        sws_header_policy_free(L->r[i].cfg.headers);
    }
    if (L->open)
        free(L->scratch->rt.hosts); /* a section whose reading failed */
    free(L->r);
    free(L->scratch);
    free(L);
    c->route_load = NULL;
}

const char *sws_scenario_cfg_check(const sws_scenario_cfg *cfg, bool named, char *buf, size_t len) {
    const sws_redirect_config *rd = &cfg->redirect;
    if (cfg->scenario == SWS_SCENARIO_REDIRECT && !rd->to[0])
        return "scenario redirect needs to (the target)";
    if (cfg->scenario == SWS_SCENARIO_REDIRECT && rd->host_from_request && !named &&
        !rd->any_host) {
        snprintf(buf, len,
                 "to = %s takes its host from the request ($host), and the route answers any "
                 "Host: set any_host = on, or give a [route] the host names it redirects for "
                 "(host = ...)",
                 rd->to);
        return buf;
    }
    int st = cfg->status;
    if (cfg->scenario == SWS_SCENARIO_RESPOND &&
        (st == 301 || st == 302 || st == 303 || st == 307 || st == 308)) {
        snprintf(buf, len,
                 "status %d needs a Location, which respond does not send: use scenario = "
                 "redirect (to = the target, code = %d)",
                 st, st);
        return buf;
    }
    return NULL;
}

/* What a route needs of itself, named by its section. */
static int check_route(const sws_route *r, char *err, size_t errlen) {
    const char *why = NULL;
    char buf[800];
    if ((int)r->cfg.scenario < 0)
        why = "needs scenario (respond, static, proxy or redirect)";
    else if (r->cfg.scenario == SWS_SCENARIO_PROXY && r->cfg.proxy.nupstreams == 0)
        why = "scenario proxy needs upstream";
    else if (r->cfg.scenario == SWS_SCENARIO_STATIC && !r->cfg.stat.root[0])
        why = "scenario static needs root";
    else if (r->cfg.strip_prefix && (r->exact || !r->path_len))
        why = "strip_prefix needs path_prefix";
    else if (!r->nhosts && !r->path_len && !r->listeners)
        why = "matches every request (no host, no path, no listen): that is the default "
              "route's job ([server] scenario)";
    else
        why = sws_scenario_cfg_check(&r->cfg, r->nhosts > 0, buf, sizeof buf);
    if (!why)
        return 0;
    snprintf(err, errlen, "%s: [route %s] %s", r->origin, r->name, why);
    return -EINVAL;
}

/* Two routes with the same match: the later can never win. Those that
 * share a name (of the same kind: exact or wildcard) are next to each other
 * in the host index; the routes without a host are its list. */
static bool same_path(const sws_route *a, const sws_route *b) {
    if (a->listeners && b->listeners && !(a->listeners & b->listeners))
        return false; /* judged per listener: they never meet */
    return a->exact == b->exact && a->path_len == b->path_len &&
           memcmp(a->path, b->path, a->path_len) == 0;
}

/* The message for a, b (a first in the file) sharing name (NULL: no host). */
static int overlap(const sws_route *a, const sws_route *b, const sws_route_name *name, char *err,
                   size_t errlen) {
    /* Say what they share as they were written: two host-only routes have
     * no path_prefix to speak of. */
    char host[300];
    if (name)
        snprintf(host, sizeof host, "host %s%.*s", name->name[0] == '.' ? "*" : "", (int)name->len,
                 name->name);
    else
        snprintf(host, sizeof host, "no host");
    const char *path = !a->path_len ? "no path"
                       : a->exact   ? "the same path"
                                    : "the same path_prefix";
    snprintf(err, errlen,
             "%s: [route %s] overlaps [route %s] at %s: %s and %s, so one of them can never win",
             b->origin, b->name, a->name, a->origin, host, path);
    return -EINVAL;
}

static int check_overlap(const sws_routes *t, char *err, size_t errlen) {
    const sws_route_name *idx[2] = {t->exact, t->wild};
    uint32_t n[2] = {t->nexact, t->nwild};
    /* The first overlap in the file's order: the later route of the pair
     * that comes first, as a reader fixes them top down. */
    const sws_route *first_a = NULL, *first_b = NULL;
    const sws_route_name *first_name = NULL;
    for (int k = 0; k < 2; k++) {
        for (uint32_t i = 0; i < n[k]; i++) {
            for (uint32_t j = i + 1; j < n[k] && idx[k][j].len == idx[k][i].len &&
                                     memcmp(idx[k][j].name, idx[k][i].name, idx[k][i].len) == 0;
                 j++) {
                const sws_route *a = &t->r[idx[k][i].route], *b = &t->r[idx[k][j].route];
                if (!same_path(a, b) || (first_b && b >= first_b))
                    continue;
                first_a = a;
                first_b = b;
                first_name = &idx[k][i];
            }
        }
    }
    for (uint32_t i = 0; i < t->nany; i++) {
        for (uint32_t j = i + 1; j < t->nany; j++) {
            const sws_route *a = &t->r[t->any[i].route], *b = &t->r[t->any[j].route];
            if (!same_path(a, b) || (first_b && b >= first_b))
                continue;
            first_a = a;
            first_b = b;
            first_name = NULL;
        }
    }
    return first_b ? overlap(first_a, first_b, first_name, err, errlen) : 0;
}

/* A proxy with tls = on: its client context, built now so that a CA file
 * that cannot be read is refused by --check-config, at start and on reload
 * alike. A TLS session cannot be detached into the shared pool. */
static int upstream_tls(sws_route *r, bool is_default, char *err, size_t errlen) {
    const sws_proxy_config *p = &r->cfg.proxy;
    if (r->cfg.scenario != SWS_SCENARIO_PROXY || !p->tls)
        return 0;
    char where[400], why[400];
    if (is_default)
        snprintf(where, sizeof where, "[proxy]");
    else
        snprintf(where, sizeof where, "%s: [route %s]", r->origin, r->name);
    if (p->pool_mode == SWS_POOL_SHARED) {
        snprintf(err, errlen,
                 "%s tls = on needs pool = per_loop (a TLS session lives in the loop that "
                 "made it; pool = shared detaches connections across loops)",
                 where);
        return -EINVAL;
    }
    r->cfg.up_tls = sws_tls_client_new(p->tls_ca, p->tls_verify, why, sizeof why);
    if (!r->cfg.up_tls) {
        snprintf(err, errlen, "%s %s", where, why);
        return -EINVAL;
    }
    return 0;
}

/* The route's htpasswd file, read now: at start and on every reload, so a
 * reload rereads it and a broken one is refused (the old table serves on). */
static int access_build(sws_route *r, bool is_default, char *err, size_t errlen) {
    sws_access_config *a = &r->cfg.access;
    r->gated = sws_access_on(a);
    if (!a->auth_file[0])
        return 0;
    char why[600];
    if (!(a->users = sws_htpasswd_load(a->auth_file, why, sizeof why))) {
        if (is_default)
            snprintf(err, errlen, "[server] auth_basic_file: %s", why);
        else
            snprintf(err, errlen, "%s: [route %s] auth_basic_file: %s", r->origin, r->name, why);
        return -EINVAL;
    }
    return 0;
}

static const char not_found[] = "Not Found\n";

/* A route's listen key into the bits of the listeners it names. */
static int route_listeners(sws_route *r, const sws_config *c, char *err, size_t errlen) {
    r->listeners = 0;
    for (const char *s = r->listen; *s;) {
        s += strspn(s, ", \t");
        size_t n = strcspn(s, ", \t");
        if (!n)
            break;
        char name[SWS_ADDR_MAX];
        snprintf(name, sizeof name, "%.*s", (int)n, s);
        s += n;
        int i = sws_listener_find(c, name);
        if (i >= 0) {
            r->listeners |= 1u << i;
            continue;
        }
        char known[400] = "";
        for (int k = 0, o = 0; k < c->nlisteners && o >= 0 && (size_t)o < sizeof known; k++)
            o += snprintf(known + o, sizeof known - (size_t)o, "%s%s", k ? ", " : "",
                          sws_listener_label(c, k));
        /* origin is the section's "file:line": the key's line is the one to fix. */
        const char *colon = strrchr(r->origin, ':');
        int fl = colon ? (int)(colon - r->origin) : (int)strlen(r->origin);
        snprintf(err, errlen, "%.*s:%" PRIu32 ": [route %s] listen: %s '%s' (the listeners: %s)",
                 fl, r->origin, r->listen_line, r->name,
                 i == -2 ? "two listeners have the address" : "no listener is named", name, known);
        return -EINVAL;
    }
    return 0;
}

int sws_routes_build(sws_config *c, char *err, size_t errlen) {
    struct sws_route_load *L = c->route_load;
    if (L && finish(L) < 0) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    int listed = L ? L->n : 0;
    sws_routes *t = calloc(1, sizeof(*t) + (size_t)(1 + listed) * sizeof(sws_route));
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    atomic_init(&t->refs, 1);
    t->listed = listed > 0;
    sws_route *d = &t->r[0];
    snprintf(d->name, sizeof(d->name), SWS_ROUTE_DEFAULT);
    snprintf(d->origin, sizeof(d->origin), "[server] scenario");
    fill_scenario(&d->cfg, c, c->scenario, false);
    snprintf(d->log_path, sizeof(d->log_path), "%s", c->access_log);
    d->log_fmt = c->log_fmt;
    int si = sws_config_key_index("server", "scenario");
    bool chosen = si >= 0 && c->origin[si] != SWS_FROM_DEFAULT;
    const char *body = c->body;
    if (listed && !chosen) {
        /* Routes, and no default named: what no route matches is not found. */
        d->cfg.scenario = SWS_SCENARIO_RESPOND;
        d->cfg.status = 404;
        d->cfg.body_len = sizeof(not_found) - 1;
        snprintf(d->cfg.content_type, sizeof(d->cfg.content_type), "text/plain");
        body = not_found;
    }
    t->n = 1;
    if (d->cfg.body_len) {
        if (!(d->cfg.body = malloc(d->cfg.body_len))) {
            sws_routes_unref(t);
            snprintf(err, errlen, "out of memory");
            return -ENOMEM;
        }
        memcpy(d->cfg.body, body, d->cfg.body_len);
    }
    for (int i = 0; i < listed; i++) {
        sws_route *r = &t->r[t->n++];
        *r = L->r[i]; /* the body, names and fields move to the table */
        L->r[i].cfg.body = NULL;
        L->r[i].hosts = NULL;
        L->r[i].cfg.headers = NULL;
        /* [server]'s access log where the route names none: the key may come
         * after the section in the file. */
        if (!r->own_log)
            snprintf(r->log_path, sizeof(r->log_path), "%s", c->access_log);
        if (!r->own_format)
            r->log_fmt = c->log_fmt;
    }
    sws_route_load_free(c);
    int lrc = 0;
    for (int i = 1; lrc == 0 && i < t->n; i++)
        lrc = route_listeners(&t->r[i], c, err, errlen);
    if (lrc < 0) {
        sws_routes_unref(t);
        return lrc;
    }
    /* [server]'s add_header lines: the default route's, and every route's
     * that has none of its own (as nginx inherits add_header). */
    int rc = 0;
    for (int i = 0; rc == 0 && i < t->n; i++)
        if (i == 0 || !t->r[i].own_headers)
            t->r[i].cfg.headers = sws_header_policy_build(&c->hdr, &rc);
    if (rc == 0 && sws_routes_index(t) < 0)
        rc = -ENOMEM;
    if (rc < 0) {
        sws_routes_unref(t);
        snprintf(err, errlen, "out of memory");
        return rc;
    }
    for (int i = 1; rc == 0 && i < t->n; i++)
        rc = check_route(&t->r[i], err, errlen);
    /* pool = shared keeps one process-wide stack per upstream number: the
     * numbers of two proxy routes name different upstreams. It is a measured
     * baseline for the one proxy, not for routes. */
    for (int i = 0; rc == 0 && listed && i < t->n; i++) {
        const sws_route *r = &t->r[i];
        if (r->cfg.scenario == SWS_SCENARIO_PROXY && r->cfg.proxy.pool_mode == SWS_POOL_SHARED) {
            snprintf(err, errlen,
                     "%s: [route %s] pool = shared is for a proxy without [route] "
                     "sections (use pool = per_loop)",
                     r->origin, r->name);
            rc = -EINVAL;
        }
    }
    if (rc == 0)
        rc = check_overlap(t, err, errlen);
    for (int i = 0; rc == 0 && i < t->n; i++)
        rc = upstream_tls(&t->r[i], i == 0, err, errlen);
    for (int i = 0; rc == 0 && i < t->n; i++)
        rc = access_build(&t->r[i], i == 0, err, errlen);
    if (rc < 0) {
        sws_routes_unref(t);
        return rc;
    }
    c->routes = t;
    return 0;
}

/* A route's scenario settings back into a config, for the key table's format. */
static void unfill(sws_config *x, const sws_scenario_cfg *s) {
    x->status = s->status;
    x->body_len = s->body_len;
    if (s->body_len)
        memcpy(x->body, s->body, s->body_len);
    memcpy(x->content_type, s->content_type, sizeof(x->content_type));
    x->stat = s->stat;
    x->proxy = s->proxy;
    x->redirect = s->redirect;
    x->comp = s->comp;
    x->access = s->access;
}

/* How a route's section writes a scenario key so that set_route_key reads it
 * back as the same key: "section.key" when the bare name would be taken
 * first by a route key (a proxy's host is not the route's host) or by an
 * earlier scenario section. */
static void route_key_name(const sws_key *key, char *out, size_t len) {
    bool taken = false;
    for (int i = 0; !taken && i < sws_route_nkeys; i++)
        taken = strcmp(sws_route_key_table[i].name, key->name) == 0;
    for (size_t j = 0; !taken && j < sizeof(scenario_sections) / sizeof(scenario_sections[0]) &&
                       strcmp(scenario_sections[j], key->section) != 0;
         j++)
        taken = sws_config_key_index(scenario_sections[j], key->name) >= 0;
    if (taken)
        snprintf(out, len, "%s.%s", key->section, key->name);
    else
        snprintf(out, len, "%s", key->name);
}

/* The value as a file line (';' escaped, as sws_config_print does). */
static void print_kv(FILE *f, const char *k, const char *v) {
    fprintf(f, "%s = ", k);
    for (const char *s = v; *s; s++) {
        if (*s == '\n') { /* a key of several lines (add_header) */
            fprintf(f, "\n%s = ", k);
            continue;
        }
        if (*s == ';')
            fputc('\\', f);
        fputc(*s, f);
    }
    fputc('\n', f);
}

void sws_routes_notes(FILE *f, const sws_config *c) {
    const sws_routes *t = c->routes;
    for (int i = 1; t && i < t->n; i++) {
        const sws_route *r = &t->r[i];
        for (uint32_t at = 0; r->cfg.scenario == SWS_SCENARIO_PROXY && at < r->hosts_len;) {
            const char *h = r->hosts + at;
            at += (uint32_t)strlen(h) + 1;
            if (strcmp(h, "client") == 0 || strcmp(h, "upstream") == 0)
                fprintf(f,
                        "scalwsd: note: %s: [route %s] host = %s is the Host this route matches; "
                        "the Host sent upstream is proxy.host (doc/routes.md)\n",
                        r->origin, r->name, h);
        }
    }
}

void sws_routes_print(FILE *f, const sws_config *c) {
    const sws_routes *t = c->routes;
    if (!t || !t->listed)
        return;
    sws_config *d = malloc(sizeof(*d)), *x = malloc(sizeof(*x));
    char *v = malloc(SWS_BODY_MAX * 2 + 1), *dv = malloc(SWS_BODY_MAX * 2 + 1);
    if (!d || !x || !v || !dv)
        goto out;
    sws_config_defaults(d);
    for (int i = 1; i < t->n; i++) {
        const sws_route *r = &t->r[i];
        fprintf(f, "\n[route %s] ; %s\n", r->name, r->origin);
        if (r->nhosts) {
            fprintf(f, "host = ");
            for (uint32_t at = 0; at < r->hosts_len;) {
                const char *h = r->hosts + at;
                fprintf(f, "%s%s%s", at ? ", " : "", h[0] == '.' ? "*" : "", h);
                at += (uint32_t)strlen(h) + 1;
            }
            fputc('\n', f);
        }
        if (r->listen[0])
            fprintf(f, "listen = %s\n", r->listen);
        if (r->path_len)
            fprintf(f, "%s = %.*s\n", r->exact ? "path" : "path_prefix", (int)r->path_len, r->path);
        fprintf(f, "scenario = %s\n", sws_scenario_name(r->cfg.scenario));
        if (r->cfg.strip_prefix)
            fprintf(f, "strip_prefix = on\n");
        if (r->own_log)
            print_kv(f, "access_log", r->log_path[0] ? r->log_path : "off");
        if (r->own_format)
            print_kv(f, "log_format", r->log_format);
        if (r->own_headers) {
            sws_header_policy_keys(r->cfg.headers, &x->hdr);
            x->hdr.set = true;
            for (int k = 0; k < 2; k++) {
                sws_header_keys_format(&x->hdr, k == 1, v, SWS_BODY_MAX * 2 + 1);
                /* An empty list of its own is written as one empty line. */
                if (*v || (k == 0 && !r->cfg.headers))
                    print_kv(f, k ? "add_header_always" : "add_header", v);
            }
        }
        if (r->error_page[0])
            print_kv(f, "error_page", r->error_page);
        /* The scenario keys that differ from the key table's defaults. */
        sws_config_defaults(x);
        unfill(x, &r->cfg);
        for (int k = 0; k < sws_config_nkeys; k++) {
            const sws_key *key = &sws_config_keys[k];
            bool ours = access_key(key);
            for (size_t s = 0; s < sizeof(scenario_sections) / sizeof(scenario_sections[0]); s++)
                ours = ours || strcmp(key->section, scenario_sections[s]) == 0;
            if (!ours)
                continue;
            sws_config_format(x, key, v, SWS_BODY_MAX * 2 + 1);
            sws_config_format(d, key, dv, SWS_BODY_MAX * 2 + 1);
            if (strcmp(v, dv) != 0) {
                char name[80];
                route_key_name(key, name, sizeof(name));
                print_kv(f, name, v);
            }
        }
    }
out:
    free(d);
    free(x);
    free(v);
    free(dv);
}
