/* The proxy's lines of /metrics (its scenario's `metrics` hook, on the
 * control thread): per loop and route, the upstream pool's counters and the
 * upstream failures by kind, read from each worker's published sws_up_stats;
 * one latency histogram for every route. */
#include "sws.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>

#include "route.h"
#include "upstream.h"

static void metric_head(FILE *f, const char *name, const char *type, const char *help) {
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Loop i's counters of the route in stat slot k, or NULL (control thread). */
static const sws_up_stats *stats_of(const sws_server *s, int i, uint32_t k) {
    return atomic_load_explicit(&s->workers[i].upstats[k], memory_order_acquire);
}

void sws_proxy_metrics(const sws_server *s, FILE *f) {
    static const struct {
        const char *name, *type, *help;
        size_t off;
    } per_loop[] = {
        {"scalwsd_upstream_connects_total", "counter", "Upstream connections opened.",
         offsetof(sws_up_stats, connects)},
        {"scalwsd_upstream_reuses_total", "counter", "Requests sent on a pooled connection.",
         offsetof(sws_up_stats, reuses)},
        {"scalwsd_upstream_retries_total", "counter",
         "Idempotent requests retried after a pooled connection was found dead.",
         offsetof(sws_up_stats, retries)},
        {"scalwsd_upstream_pool_idle", "gauge", "Idle keep-alive connections in the loop's pool.",
         offsetof(sws_up_stats, idle)},
        {"scalwsd_upstream_foreign_loop_uses_total", "counter",
         "Debug: pooled connections used by a loop that does not own them (must stay 0).",
         offsetof(sws_up_stats, foreign_loop_uses)},
        {"scalwsd_upstream_idle_closed_total", "counter",
         "Idle pooled connections dropped because the upstream closed them (or sent bytes).",
         offsetof(sws_up_stats, idle_closed)},
        {"scalwsd_upstream_handovers_total", "counter",
         "pool = shared: idle connections taken by another loop than the one that pooled it.",
         offsetof(sws_up_stats, handovers)},
    };
    uint32_t nslots = sws_route_slot_count();
    for (size_t k = 0; k < sizeof(per_loop) / sizeof(per_loop[0]); k++) {
        metric_head(f, per_loop[k].name, per_loop[k].type, per_loop[k].help);
        for (int i = 0; i < s->nloops; i++) {
            for (uint32_t r = 0; r < nslots; r++) {
                const sws_up_stats *st = stats_of(s, i, r);
                if (!st)
                    continue;
                const sws_up_ctr *c = (const sws_up_ctr *)((const char *)st + per_loop[k].off);
                fprintf(f, "%s{loop=\"%d\",route=\"%s\"} %" PRIu64 "\n", per_loop[k].name, i,
                        sws_route_slot_name(r), atomic_load_explicit(c, memory_order_relaxed));
            }
        }
    }
    if (s->cfg->proxy.pool_mode == SWS_POOL_SHARED) {
        metric_head(f, "scalwsd_upstream_shared_pool_idle", "gauge",
                    "pool = shared: idle keep-alive connections in the process-wide pool.");
        fprintf(f, "scalwsd_upstream_shared_pool_idle %" PRIu64 "\n", sws_pool_shared_idle());
    }
    metric_head(f, "scalwsd_upstream_errors_total", "counter", "Upstream failures by kind.");
    uint64_t b[SWS_UP_LAT_BUCKETS + 1] = {0}, sum = 0, count = 0;
    for (int i = 0; i < s->nloops; i++) {
        for (uint32_t r = 0; r < nslots; r++) {
            const sws_up_stats *st = stats_of(s, i, r);
            if (!st)
                continue;
            for (int k = 0; k < SWS_UPE_N; k++)
                fprintf(f,
                        "scalwsd_upstream_errors_total{loop=\"%d\",route=\"%s\",kind=\"%s\"} "
                        "%" PRIu64 "\n",
                        i, sws_route_slot_name(r), sws_up_err_names[k], SWS_GET(st->errors[k]));
            for (int k = 0; k <= SWS_UP_LAT_BUCKETS; k++)
                b[k] += SWS_GET(st->lat[k]);
            sum += SWS_GET(st->lat_sum_us);
            count += SWS_GET(st->lat_count);
        }
    }
    metric_head(f, "scalwsd_upstream_latency_seconds", "histogram",
                "From sending a request upstream to its response head (every route).");
    uint64_t cum = 0;
    for (int k = 0; k < SWS_UP_LAT_BUCKETS; k++) {
        cum += b[k];
        fprintf(f, "scalwsd_upstream_latency_seconds_bucket{le=\"%g\"} %" PRIu64 "\n",
                sws_up_lat_bounds_us[k] / 1e6, cum);
    }
    cum += b[SWS_UP_LAT_BUCKETS];
    fprintf(f, "scalwsd_upstream_latency_seconds_bucket{le=\"+Inf\"} %" PRIu64 "\n", cum);
    fprintf(f, "scalwsd_upstream_latency_seconds_sum %g\n", (double)sum / 1e6);
    fprintf(f, "scalwsd_upstream_latency_seconds_count %" PRIu64 "\n", count);
}
