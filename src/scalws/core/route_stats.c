/* The routes' counters and a request's route: stat slots named for good
 * (the control thread assigns them before the loops use them), the per-loop
 * counts a request adds when its answer ends, their /metrics lines, and the
 * pick of a request's route instance by Host and path. */
#include "conn.h"
#include "gate.h"
#include "route.h"
#include "sws.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* ---- the routes' stat slots: names, for good (control thread) -------------- */

static struct {
    int n;
    char name[SWS_ROUTE_SLOTS][SWS_ROUTE_NAME_MAX];
} slots;

int sws_route_slots_assign(sws_routes *t, char *err, size_t errlen) {
    for (int i = 0; t && i < t->n; i++) {
        sws_route *r = &t->r[i];
        int k = 0;
        while (k < slots.n && strcmp(slots.name[k], r->name) != 0)
            k++;
        if (k == slots.n) {
            if (slots.n == SWS_ROUTE_SLOTS) {
                snprintf(err, errlen,
                         "[route %s]: %d route names were served since the start; more need a "
                         "restart",
                         r->name, SWS_ROUTE_SLOTS);
                return -ENOSPC;
            }
            snprintf(slots.name[slots.n++], SWS_ROUTE_NAME_MAX, "%s", r->name);
        }
        r->stat_slot = (uint32_t)k;
    }
    return 0;
}

uint32_t sws_route_slot_count(void) {
    return (uint32_t)slots.n;
}

const char *sws_route_slot_name(uint32_t k) {
    return k < (uint32_t)slots.n ? slots.name[k] : "";
}

static uint64_t sum(const sws_server *s, int slot, size_t off) {
    uint64_t n = 0;
    for (int i = 0; i < s->nloops; i++)
        if (s->workers[i].rstats)
            n += SWS_GET(*(sws_ctr *)((char *)&s->workers[i].rstats[slot] + off));
    return n;
}

void sws_route_metrics(const sws_server *s, FILE *f) {
    static const uint32_t le_ms[SWS_LAT_BUCKETS] = {1, 5, 25, 100, 250, 1000, 2500, 10000};
    fprintf(f, "# HELP scalwsd_route_requests_total Requests answered by each route.\n"
               "# TYPE scalwsd_route_requests_total counter\n");
    for (int k = 0; k < slots.n; k++)
        fprintf(f, "scalwsd_route_requests_total{route=\"%s\"} %" PRIu64 "\n", slots.name[k],
                sum(s, k, offsetof(sws_route_stats, requests)));
    fprintf(f, "# HELP scalwsd_route_errors_total Answers of each route with a 4xx or 5xx "
               "status.\n# TYPE scalwsd_route_errors_total counter\n");
    for (int k = 0; k < slots.n; k++) {
        fprintf(f, "scalwsd_route_errors_total{route=\"%s\",class=\"4xx\"} %" PRIu64 "\n",
                slots.name[k], sum(s, k, offsetof(sws_route_stats, err4xx)));
        fprintf(f, "scalwsd_route_errors_total{route=\"%s\",class=\"5xx\"} %" PRIu64 "\n",
                slots.name[k], sum(s, k, offsetof(sws_route_stats, err5xx)));
    }
    fprintf(f, "# HELP scalwsd_limited_total Requests a route refused by its access keys, by "
               "kind: rate (limit_rate), conn (limit_conn), deny (allow/deny), auth (Basic).\n"
               "# TYPE scalwsd_limited_total counter\n");
    for (int k = 0; k < slots.n; k++)
        for (int kind = 0; kind < SWS_LIMITED_N; kind++)
            fprintf(f, "scalwsd_limited_total{route=\"%s\",kind=\"%s\"} %" PRIu64 "\n",
                    slots.name[k], sws_limited_names[kind],
                    sum(s, k, offsetof(sws_route_stats, limited) + (size_t)kind * sizeof(sws_ctr)));
    fprintf(f, "# HELP scalwsd_route_request_duration_seconds From a request's first byte read "
               "to its answer complete in the output, by route.\n"
               "# TYPE scalwsd_route_request_duration_seconds histogram\n");
    for (int k = 0; k < slots.n; k++) {
        uint64_t cum = 0;
        for (int b = 0; b < SWS_LAT_BUCKETS; b++) {
            cum += sum(s, k, offsetof(sws_route_stats, lat) + (size_t)b * sizeof(sws_ctr));
            fprintf(f,
                    "scalwsd_route_request_duration_seconds_bucket{route=\"%s\",le=\"%g\"} "
                    "%" PRIu64 "\n",
                    slots.name[k], le_ms[b] / 1000.0, cum);
        }
        uint64_t n = sum(s, k, offsetof(sws_route_stats, requests));
        fprintf(
            f,
            "scalwsd_route_request_duration_seconds_bucket{route=\"%s\",le=\"+Inf\"} %" PRIu64 "\n"
            "scalwsd_route_request_duration_seconds_sum{route=\"%s\"} %.3f\n"
            "scalwsd_route_request_duration_seconds_count{route=\"%s\"} %" PRIu64 "\n",
            slots.name[k], n, slots.name[k],
            (double)sum(s, k, offsetof(sws_route_stats, lat_ms_sum)) / 1000.0, slots.name[k], n);
    }
}

/* ---- a request's route ----------------------------------------------------- */

sws_scenario *sws_route_of(sws_worker *w, unsigned listener, const sws_http_request *r) {
    const sws_routes *t = w->cfg->routes;
    if (t->n <= 1)
        return &w->sc;
    return w->by_route[sws_route_match(t, listener, r->host, r->host_len, r->path, r->path_len)];
}

void sws_route_count(sws_worker *w, const sws_scenario *sc, int status, uint64_t ms) {
    static const uint32_t le_ms[SWS_LAT_BUCKETS] = {1, 5, 25, 100, 250, 1000, 2500, 10000};
    sws_route_stats *st = &w->rstats[sc->route->stat_slot];
    SWS_ADD(st->requests, 1);
    if (status >= 500)
        SWS_ADD(st->err5xx, 1);
    else if (status >= 400)
        SWS_ADD(st->err4xx, 1);
    SWS_ADD(st->lat_ms_sum, ms);
    for (int b = 0; b < SWS_LAT_BUCKETS; b++) {
        if (ms <= le_ms[b]) {
            SWS_ADD(st->lat[b], 1);
            break;
        }
    }
}
