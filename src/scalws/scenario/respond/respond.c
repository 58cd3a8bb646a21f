/* The `respond` scenario: a fixed answer from the config. It is given to
 * the protocol as a fixed answer (sws_ex_fixed), which HTTP/1.1 frames once
 * per loop for keep-alive and for close and again only when the Date
 * changes, so answering a request is one memcpy. */
#include "conn.h"
#include "http1.h"
#include "route.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The answer served, and the one a reload prepared (commit swaps them). */
typedef struct sws_respond {
    sws_fixed now, next;
    bool has_next;
} sws_respond;

/* An error status answers with its route's page when it has one. */
static void fixed_of(sws_fixed *f, const sws_scenario_cfg *cfg) {
    const sws_error_page *p = sws_error_page_find(cfg, cfg->status);
    if (p)
        sws_fixed_init(f, cfg->status, p->content_type, p->body, p->len);
    else
        sws_fixed_init(f, cfg->status, cfg->content_type, cfg->body, (uint32_t)cfg->body_len);
    f->headers = cfg->headers; /* part of what is framed */
}

static int respond_init(sws_worker *w, sws_scenario *sc) {
    sws_respond *r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    sc->state = r;
    fixed_of(&r->now, sc->cfg);
    w->resp_max = (uint32_t)sws_http1_fixed_cap(&r->now);
    return 0;
}

static void respond_free(sws_worker *w, sws_scenario *sc) {
    (void)w;
    sws_respond *r = sc->state;
    if (!r)
        return;
    sws_fixed_free(&r->now);
    sws_fixed_free(&r->next);
    free(r);
    sc->state = NULL;
}

static int respond_answer(sws_worker *w, sws_scenario *sc, sws_exchange *x) {
    sws_respond *r = sc->state;
    int rc = sws_ex_fixed(w, x, &r->now);
    if (rc < 0)
        return rc;
    if (w->logs)
        sws_ex_log(w, x, r->now.status, sws_ex_request(x)->head ? 0 : r->now.body_len);
    return SWS_ANSWER_DONE;
}

/* The connection buffers were sized at start for four answers (worker.c
 * sws_worker_init): a longer body, in any respond route, needs a restart. */
static const char *respond_reload_refuses(const sws_server *s, const sws_config *o,
                                          const sws_config *n, char *buf, size_t len) {
    (void)o;
    size_t room = s->workers[0].out_cap / 4;
    sws_fixed f;
    for (int i = 0; n->routes && i < n->routes->n; i++) {
        const sws_route *rt = &n->routes->r[i];
        if (rt->cfg.scenario != SWS_SCENARIO_RESPOND)
            continue;
        fixed_of(&f, &rt->cfg);
        if (sws_http1_fixed_cap(&f) <= room)
            continue;
        snprintf(buf, len,
                 "[%s%s] body of %u bytes does not fit the connection buffers sized at start "
                 "(up to %zu bytes)",
                 i ? "route " : "respond", i ? rt->name : "", (unsigned)f.body_len,
                 room - 512 - sizeof(rt->cfg.content_type));
        return buf;
    }
    return NULL;
}

/* Built aside: a reload another instance refuses leaves this one as it was. */
static int respond_reload_prepare(sws_worker *w, sws_scenario *sc, const sws_config *next) {
    (void)w;
    (void)next;
    sws_respond *r = sc->state;
    sws_fixed_free(&r->next);
    fixed_of(&r->next, sc->next_cfg);
    r->has_next = true;
    return 0;
}

static void respond_reload_commit(sws_worker *w, sws_scenario *sc) {
    sws_respond *r = sc->state;
    if (r->has_next) {
        sws_fixed_free(&r->now);
        r->now = r->next;
        memset(&r->next, 0, sizeof(r->next));
        r->has_next = false;
    }
    size_t cap = sws_http1_fixed_cap(&r->now);
    w->resp_max = cap < 512 ? 512 : (uint32_t)cap;
    sws_conn_reload_commit(w, sc);
}

const sws_scenario_ops sws_respond_ops = {
    .name = "respond",
    .init = respond_init,
    .free = respond_free,
    .open = sws_conn_open,
    .dispatch = sws_conn_dispatch,
    .answer = respond_answer,
    .turn_done = sws_conn_turn_done,
    .sweep = sws_conn_sweep,
    .drain = sws_conn_drain,
    .finished = sws_conn_finished,
    .reload_refuses = respond_reload_refuses,
    .reload_prepare = respond_reload_prepare,
    .reload_commit = respond_reload_commit,
};
