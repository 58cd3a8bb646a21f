/* The `respond` scenario: a fixed answer from the config, on the worker's HTTP
 * connection. The whole answer (head + body) is prebuilt per loop for
 * keep-alive and for close, and rebuilt only when the Date changes, so
 * answering a request is one memcpy. */
#include "access_log.h"
#include "conn.h"
#include "route.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The prebuilt answer: head + body, for keep-alive and for close. */
typedef struct sws_answer {
    char *ka;
    char *close;
    uint32_t ka_len, ka_head;
    uint32_t close_len, close_head;
    uint32_t date_version;
    size_t cap;
} sws_answer;

/* The answer served, and the one a reload prepared (commit swaps them). */
typedef struct sws_respond {
    sws_answer now, next;
} sws_respond;

static uint32_t build(char *out, size_t cap, const sws_scenario_cfg *cfg, const char *date, bool ka,
                      uint32_t *head_len) {
    size_t h = sws_http_head(out, cap, cfg->status, date, cfg->content_type, cfg->body_len, ka);
    if (h == 0 || h + cfg->body_len > cap)
        return 0;
    memcpy(out + h, cfg->body, cfg->body_len);
    *head_len = (uint32_t)h;
    return (uint32_t)(h + cfg->body_len);
}

static void refresh(sws_answer *r, const sws_scenario_cfg *cfg, const sws_date_cache *date) {
    r->ka_len = build(r->ka, r->cap, cfg, date->str, true, &r->ka_head);
    r->close_len = build(r->close, r->cap, cfg, date->str, false, &r->close_head);
    r->date_version = date->version;
}

static void answer_free(sws_answer *r) {
    free(r->ka);
    free(r->close);
    r->ka = r->close = NULL;
}

/* Room for the head: status line, fixed headers and the content type. */
static size_t answer_cap(const sws_scenario_cfg *cfg) {
    return 512 + sizeof(cfg->content_type) + cfg->body_len;
}

static int answer_build(sws_answer *r, const sws_scenario_cfg *cfg, const sws_date_cache *date) {
    memset(r, 0, sizeof(*r));
    r->cap = answer_cap(cfg);
    r->ka = malloc(r->cap);
    r->close = malloc(r->cap);
    if (!r->ka || !r->close) {
        answer_free(r);
        return -ENOMEM;
    }
    refresh(r, cfg, date);
    if (!r->ka_len || !r->close_len) {
        answer_free(r);
        return -EINVAL;
    }
    return 0;
}

static int respond_init(sws_worker *w, sws_scenario *sc) {
    sws_respond *r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    sc->state = r;
    int rc = answer_build(&r->now, sc->cfg, &w->date);
    if (rc < 0)
        return rc;
    w->resp_max = (uint32_t)r->now.cap;
    return 0;
}

static void respond_free(sws_worker *w, sws_scenario *sc) {
    (void)w;
    sws_respond *r = sc->state;
    if (!r)
        return;
    answer_free(&r->now);
    answer_free(&r->next);
    free(r);
    sc->state = NULL;
}

static int respond_answer(sws_worker *w, sws_scenario *sc, sws_conn *c, bool ka) {
    const sws_answer *resp = &((const sws_respond *)sc->state)->now;
    const sws_http_request *r = &c->parser->req;
    const char *src = ka ? resp->ka : resp->close;
    uint32_t head = ka ? resp->ka_head : resp->close_head;
    uint32_t n = r->head ? head : ka ? resp->ka_len : resp->close_len;
    memcpy(c->out + c->olen, src, n);
    c->olen += n;
    if (w->access_log)
        sws_conn_log(w, c, sc->cfg->status, r->head ? 0 : n - head);
    return SWS_ANSWER_DONE;
}

static void respond_date_changed(sws_worker *w, sws_scenario *sc) {
    sws_respond *r = sc->state;
    refresh(&r->now, sc->cfg, &w->date);
}

/* The connection buffers were sized at start for four answers (worker.c
 * sws_worker_init): a longer body, in any respond route, needs a restart. */
static const char *respond_reload_refuses(const sws_server *s, const sws_config *o,
                                          const sws_config *n, char *buf, size_t len) {
    (void)o;
    size_t room = s->workers[0].out_cap / 4;
    for (int i = 0; n->routes && i < n->routes->n; i++) {
        const sws_route *rt = &n->routes->r[i];
        if (rt->cfg.scenario != SWS_SCENARIO_RESPOND || answer_cap(&rt->cfg) <= room)
            continue;
        snprintf(buf, len,
                 "[%s%s] body of %zu bytes does not fit the connection buffers sized at start "
                 "(up to %zu bytes)",
                 i ? "route " : "respond", i ? rt->name : "", rt->cfg.body_len,
                 room - 512 - sizeof(rt->cfg.content_type));
        return buf;
    }
    return NULL;
}

/* Built aside: a reload another instance refuses leaves this one as it was. */
static int respond_reload_prepare(sws_worker *w, sws_scenario *sc, const sws_config *next) {
    (void)next;
    sws_respond *r = sc->state;
    answer_free(&r->next);
    int rc = answer_build(&r->next, sc->next_cfg, &w->date);
    if (rc < 0)
        return rc;
    return 0;
}

static void respond_reload_commit(sws_worker *w, sws_scenario *sc) {
    sws_respond *r = sc->state;
    if (r->next.ka) {
        answer_free(&r->now);
        r->now = r->next;
        memset(&r->next, 0, sizeof(r->next));
    }
    w->resp_max = r->now.cap < 512 ? 512 : (uint32_t)r->now.cap;
    sws_conn_reload_commit(w, sc);
}

const sws_scenario_ops sws_respond_ops = {
    .name = "respond",
    .init = respond_init,
    .free = respond_free,
    .open = sws_conn_open,
    .dispatch = sws_conn_dispatch,
    .answer = respond_answer,
    .date_changed = respond_date_changed,
    .turn_done = sws_conn_turn_done,
    .sweep = sws_conn_sweep,
    .drain = sws_conn_drain,
    .finished = sws_conn_finished,
    .reload_refuses = respond_reload_refuses,
    .reload_prepare = respond_reload_prepare,
    .reload_commit = respond_reload_commit,
};
