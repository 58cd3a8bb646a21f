/* The ACME client's HTTP transport on libcurl (easy interface): blocking,
 * bounded by timeouts, so it runs on the ACME thread only, never a loop. */
#ifndef SWS_ACME_HTTP_H
#define SWS_ACME_HTTP_H

#include "acme_client.h"

#include <stdatomic.h>

typedef struct sws_acme_http sws_acme_http;

/* ca_file: PEM roots to trust instead of the system's (Pebble's), or NULL.
 * A transfer is cut short once *stop is true (shutdown). NULL on failure. */
sws_acme_http *sws_acme_http_new(const char *ca_file, long timeout_ms, const atomic_bool *stop);
void sws_acme_http_free(sws_acme_http *h);
/* An sws_acme_send_fn; ctx is the sws_acme_http. */
int sws_acme_http_send(void *ctx, const char *method, const char *url, const char *body,
                       sws_acme_resp *out, char *err, size_t errlen);

#endif
