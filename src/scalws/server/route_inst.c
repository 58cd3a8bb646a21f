/* A loop's scenario instances, one per route (route.h); the routes'
 * counters are core/route_stats.c's. The default route's instance is the worker's own (w->sc, id
 * 0): it owns the HTTP connections (open, sweep, drain), and a request is handed to another
 * instance only for its answer (conn.c sets c->sc). A reload keeps an instance whose route keeps
 * its name and scenario, starts one for a new route, and retires the rest: a retired instance gets
 * no new request and is freed once it holds nothing (its `finished`), a pending file answer say. */
#include "conn.h"
#include "gate.h"
#include "route.h"
#include "upstream.h"
#include "upstream_health.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- each proxy route's upstream health and counters ----------------------- */

int sws_route_health_build(sws_server *s, const sws_routes *t, char *err, size_t errlen) {
    for (int i = 0; t && i < t->n; i++) {
        const sws_route *r = &t->r[i];
        if (r->cfg.scenario != SWS_SCENARIO_PROXY)
            continue;
        sws_up_health **h = &s->health[r->stat_slot];
        if (*h && !sws_health_fits(*h, &r->cfg.proxy)) {
            snprintf(err, errlen,
                     "[route %s]: upstream, health_* or tls* changed (or resolves to other "
                     "addresses); that needs a restart",
                     r->name);
            return -EINVAL;
        }
        if (!*h && !(*h = sws_health_start(&r->cfg.proxy, r->cfg.up_tls, err, errlen)))
            return -ENOMEM;
    }
    return 0;
}

/* ---- instances ------------------------------------------------------------- */

static const sws_routes *table_of(const sws_config *c) {
    return c->routes;
}

/* The next free id (ids of freed instances are reused: nothing of theirs is
 * in flight any more). */
static int take_id(sws_worker *w, sws_scenario *sc) {
    for (uint32_t i = 1; i < w->ninst; i++) {
        if (!w->inst[i]) {
            w->inst[i] = sc;
            sc->id = i;
            return 0;
        }
    }
    if (w->ninst > SWS_TOKEN_INST_MAX)
        return -ENOSPC;
    sws_scenario **a = realloc(w->inst, (w->ninst + 1) * sizeof(*a));
    if (!a)
        return -ENOMEM;
    w->inst = a;
    sc->id = w->ninst;
    w->inst[w->ninst++] = sc;
    return 0;
}

/* Runs an init, prepare or commit hook with w->resp_max as the instance's
 * own, and keeps what the hook set it to; the loop's is the largest. */
static void resp_max_settle(sws_worker *w) {
    uint32_t m = w->sc.resp_max;
    for (uint32_t i = 0; i < w->ninst; i++) {
        const sws_scenario *sc = w->inst[i];
        if (!sc || sc->retired)
            continue;
        if (sc->resp_max > m)
            m = sc->resp_max;
        /* An error answer goes out in one piece, its route's page with it. */
        if (sws_error_pages_room(sc->cfg) > m)
            m = sws_error_pages_room(sc->cfg);
    }
    w->resp_max = m < 512 ? 512 : m;
}

/* Whether a route's scenario takes request bytes: heads are then kept until
 * their route is chosen (conn.c). Without routes the default takes them from
 * the first byte. */
static void stash_settle(sws_worker *w) {
    const sws_routes *t = table_of(w->cfg);
    /* The gate may hand a request to its own instance: a default route whose
     * scenario takes request bytes is then chosen at the head, as a route
     * is; any other is gated when it answers (http1/, http2/). */
    sws_gate_settle(w);
    w->routes_on = t->n > 1 || (w->gate_on && w->sc.ops->request_head);
    w->stash_heads = false;
    for (int i = 0; w->routes_on && i < t->n; i++)
        if (w->by_route[i]->ops->request_head)
            w->stash_heads = true;
    w->h2_connect = false;
    for (int i = 0; i < t->n; i++)
        if (t->r[i].cfg.scenario == SWS_SCENARIO_PROXY && t->r[i].cfg.proxy.upgrade[0])
            w->h2_connect = true;
}

static void inst_free(sws_worker *w, sws_scenario *sc) {
    sc->ops->free(w, sc);
    if (sc->id < w->ninst && w->inst[sc->id] == sc)
        w->inst[sc->id] = NULL;
    sws_routes_unref(sc->table);
    free(sc);
}

static sws_scenario *inst_new(sws_worker *w, const sws_route *r, int *rc) {
    sws_scenario *sc = calloc(1, sizeof(*sc));
    if (!sc) {
        *rc = -ENOMEM;
        return NULL;
    }
    sc->ops = sws_scenario_ops_of(r->cfg.scenario);
    sc->cfg = &r->cfg;
    sc->route = r;
    if ((*rc = take_id(w, sc)) < 0) {
        free(sc);
        return NULL;
    }
    uint32_t keep = w->resp_max;
    w->resp_max = 512;
    *rc = sc->ops->init(w, sc);
    sc->resp_max = w->resp_max;
    w->resp_max = keep;
    if (*rc < 0) {
        inst_free(w, sc);
        return NULL;
    }
    return sc;
}

int sws_insts_init(sws_worker *w) {
    const sws_routes *t = table_of(w->cfg);
    w->rstats = calloc(SWS_ROUTE_SLOTS, sizeof(*w->rstats));
    w->inst = malloc(sizeof(*w->inst));
    if (!w->rstats || !w->inst)
        return -ENOMEM;
    w->inst[0] = &w->sc;
    w->ninst = 1;
    w->sc.cfg = &t->r[0].cfg;
    w->sc.route = &t->r[0];
    w->resp_max = 512;
    int rc = w->sc.ops->init(w, &w->sc);
    w->sc.resp_max = w->resp_max;
    if (rc < 0)
        return rc;
    w->by_route = calloc((size_t)t->n, sizeof(*w->by_route));
    if (!w->by_route)
        return -ENOMEM;
    /* The gate's instance, for every configuration this loop will serve: a
     * reload may gate a route. */
    sws_scenario *g = calloc(1, sizeof(*g));
    if (!g)
        return -ENOMEM;
    g->ops = &sws_gate_ops;
    g->cfg = &t->r[0].cfg;
    if ((rc = take_id(w, g)) < 0) {
        free(g);
        return rc;
    }
    if ((rc = g->ops->init(w, g)) < 0)
        return rc; /* freed with the instances */
    g->resp_max = 512;
    w->gate_sc = g;
    w->by_route[0] = &w->sc;
    for (int i = 1; i < t->n; i++)
        if (!(w->by_route[i] = inst_new(w, &t->r[i], &rc)))
            return rc;
    resp_max_settle(w);
    stash_settle(w);
    return 0;
}

/* After the loop is freed (the default instance is the worker's to free). */
void sws_insts_free(sws_worker *w) {
    for (uint32_t i = 1; i < w->ninst; i++)
        if (w->inst[i])
            inst_free(w, w->inst[i]);
    free(w->inst);
    free(w->by_route);
    free(w->next_by_route);
    free(w->rstats);
    for (int k = 0; k < SWS_ROUTE_SLOTS; k++) {
        free(atomic_load_explicit(&w->upstats[k], memory_order_relaxed));
        atomic_store_explicit(&w->upstats[k], NULL, memory_order_relaxed);
    }
    w->inst = w->by_route = w->next_by_route = NULL;
    w->retired = NULL;
    w->gate_sc = NULL;
    w->ninst = 0;
}

sws_scenario *sws_inst_of(sws_worker *w, uint64_t token) {
    uint32_t id = sws_token_inst(token);
    if (id == 0)
        return &w->sc;
    return id < w->ninst ? w->inst[id] : NULL;
}

bool sws_insts_finished(const sws_worker *w) {
    for (uint32_t i = 1; i < w->ninst; i++) {
        const sws_scenario *sc = w->inst[i];
        if (sc && !sc->ops->finished(w, sc))
            return false;
    }
    return true;
}

void sws_insts_drain(sws_worker *w, bool force) {
    for (uint32_t i = 0; i < w->ninst; i++) {
        sws_scenario *sc = w->inst[i];
        if (sc && sc->ops->drain)
            sc->ops->drain(w, sc, force); /* retired ones too: they are in inst[] until freed */
    }
}

void sws_insts_date_changed(sws_worker *w) {
    for (uint32_t i = 0; i < w->ninst; i++) {
        sws_scenario *sc = w->inst[i];
        if (sc && !sc->retired && sc->ops->date_changed)
            sc->ops->date_changed(w, sc);
    }
}

void sws_insts_reap(sws_worker *w) {
    sws_gate_reap(w);
    for (sws_scenario **p = &w->retired; *p;) {
        sws_scenario *sc = *p;
        if (sc->ops->finished(w, sc)) {
            *p = sc->next_retired;
            inst_free(w, sc);
        } else {
            p = &sc->next_retired;
        }
    }
}

/* The live instance serving the route named name, or NULL. */
static sws_scenario *live_by_name(sws_worker *w, const char *name) {
    const sws_routes *t = table_of(w->cfg);
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->r[i].name, name) == 0)
            return w->by_route[i];
    return NULL;
}

static void drop_new(sws_worker *w, sws_scenario **next, int n) {
    for (int i = 1; i < n; i++)
        if (next[i] && !next[i]->route) /* not prepared from a kept one: made for this reload */
            inst_free(w, next[i]);
}

int sws_insts_reload_prepare(sws_worker *w, const sws_config *n) {
    const sws_routes *t = table_of(n);
    sws_scenario **next = calloc((size_t)t->n, sizeof(*next));
    if (!next)
        return -ENOMEM;
    int rc = 0;
    for (int i = 0; i < t->n && rc == 0; i++) {
        const sws_route *r = &t->r[i];
        sws_scenario *sc = i == 0 ? &w->sc : live_by_name(w, r->name);
        if (sc && (i == 0 || sc->ops == sws_scenario_ops_of(r->cfg.scenario))) {
            sc->next_cfg = &r->cfg;
            sc->next_route = r;
            uint32_t keep = w->resp_max;
            w->resp_max = sc->resp_max;
            if (sc->ops->reload_prepare)
                rc = sc->ops->reload_prepare(w, sc, n);
            w->resp_max = keep;
            next[i] = sc;
            continue;
        }
        if ((next[i] = inst_new(w, r, &rc)) != NULL) {
            /* Marked as made here (drop_new) until commit points it at its route. */
            next[i]->route = NULL;
        }
    }
    /* The output buffers were sized at start for four of the longest answer
     * (worker.c); the control thread refuses what would not fit (reload.c). */
    for (int i = 0; rc == 0 && i < t->n; i++)
        if ((uint64_t)next[i]->resp_max * 4 > w->out_cap)
            rc = -ENOSPC;
    if (rc < 0) {
        drop_new(w, next, t->n);
        free(next);
        return rc;
    }
    free(w->next_by_route);
    w->next_by_route = next;
    return 0;
}

/* w->cfg is the new config: every instance of its routes switches, the old
 * routes' others retire, holding the old table until they are freed. */
void sws_insts_reload_commit(sws_worker *w, const sws_config *old) {
    const sws_routes *t = table_of(w->cfg), *ot = table_of(old);
    sws_scenario **next = w->next_by_route;
    for (int i = 0; i < t->n; i++) {
        sws_scenario *sc = next[i];
        if (!sc->route) { /* new: already on its settings */
            sc->route = &t->r[i];
            continue;
        }
        sc->cfg = sc->next_cfg;
        sc->route = sc->next_route;
        w->resp_max = sc->resp_max;
        if (sc->ops->reload_commit)
            sc->ops->reload_commit(w, sc);
        sc->resp_max = w->resp_max;
    }
    for (int i = 1; i < ot->n; i++) {
        sws_scenario *sc = w->by_route[i];
        bool kept = false;
        for (int k = 0; k < t->n && !kept; k++)
            kept = next[k] == sc;
        if (kept)
            continue;
        sc->retired = true;
        sc->table = (sws_routes *)ot;
        sws_routes_ref(sc->table);
        sc->next_retired = w->retired;
        w->retired = sc;
    }
    free(w->by_route);
    w->by_route = next;
    w->next_by_route = NULL;
    sws_gate_hold(w, (sws_routes *)ot);
    resp_max_settle(w);
    stash_settle(w);
    sws_insts_reap(w);
}
