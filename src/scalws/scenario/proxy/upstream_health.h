/* Upstream health, one record per upstream address of a proxy route (each
 * proxy route has its own set, route_inst.c) for the whole server.
 * Passive (nginx's max_fails / fail_timeout): the loops report failures and
 * successes of their exchanges. Active (HAProxy's check, rise, fall): one
 * thread probes every upstream with GET health_check every health_interval,
 * so N loops never probe N times. Loops read the verdict as a bit mask from
 * atomics on every pick; no lock anywhere. The thread has its own copy of the
 * [proxy] section it started with (upstream and the health_* keys need a
 * restart), so a reload never frees what it reads. */
#ifndef SWS_UPSTREAM_HEALTH_H
#define SWS_UPSTREAM_HEALTH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "proxy_config.h"

typedef struct sws_up_health sws_up_health;

struct sws_tls_client;

/* Makes the records and, with health_check set, starts the probing thread.
 * tls: the route's client context with tls = on (the probes speak TLS too,
 * verified as the proxy's connections are; the record keeps its own
 * reference), else NULL. NULL with a reason in err. Called once, before the
 * loops start. */
sws_up_health *sws_health_start(const sws_proxy_config *cfg, const struct sws_tls_client *tls,
                                char *err, size_t errlen);
/* Stops the thread and frees. NULL is fine. */
void sws_health_stop(sws_up_health *h);

/* Milliseconds of the clock every function here uses (CLOCK_MONOTONIC). */
uint64_t sws_health_now(void);

/* Bit i set: upstream i may be picked now (not down by checks, not skipped
 * by max_fails). Any loop. cfg: the loop's own config (fail_timeout and
 * max_fails may change on reload). */
uint32_t sws_health_usable(const sws_up_health *h, const sws_proxy_config *cfg, uint64_t now);

/* An exchange with upstream up failed (connect, reset, timeout, a bad
 * answer) or was answered. Any loop. */
void sws_health_failed(sws_up_health *h, const sws_proxy_config *cfg, int up, uint64_t now);
void sws_health_passed(sws_up_health *h, int up);

/* Whether h was made for c's upstream addresses and health_* keys (a reload
 * cannot change them: the record and its thread are built for them). */
bool sws_health_fits(const sws_up_health *h, const sws_proxy_config *c);

/* Control thread: /metrics lines of n records, each labelled with its
 * route; and one record's upstreams appended to the /status array a. */
void sws_health_metrics(const sws_up_health *const *hs, const char *const *routes, int n, FILE *f);
void sws_health_status(const sws_up_health *h, const char *route, uint64_t now, json_t *a);

#endif
