/* The ACME scheduler: one thread of the control side (never a loop) that
 * issues the first certificate, renews it renew_before its expiry, backs off
 * after failures (Retry-After wins), and keeps the figures /status and
 * /metrics show. It installs nothing itself: it saves the new pair in
 * state_dir and asks the control thread (install callback) to load it into
 * the live TLS context, which reports back with sws_acme_installed. */
#ifndef SWS_ACME_RUN_H
#define SWS_ACME_RUN_H

#include <stdbool.h>
#include <stdio.h>

#include "acme_config.h"

typedef struct sws_acme_run sws_acme_run;
typedef struct json_t json_t;

/* Why an attempt failed, for /metrics. */
typedef enum sws_acme_cause {
    SWS_ACME_CAUSE_NETWORK = 0, /* the CA did not answer */
    SWS_ACME_CAUSE_CA,          /* an error answer, or one we cannot use */
    SWS_ACME_CAUSE_RATE,        /* rate limited */
    SWS_ACME_CAUSE_CHALLENGE,   /* the CA could not validate the challenge */
    SWS_ACME_CAUSE_LOCAL,       /* state_dir, keys, the install */
    SWS_ACME_CAUSE_N
} sws_acme_cause;

/* Starts the thread. install(ctx) is called on it once key.pem and cert.pem
 * in state_dir hold a new, checked pair (NULL: nothing to load them into, a
 * plaintext server; the pair stays in state_dir). NULL with err on failure. */
sws_acme_run *sws_acme_start(const sws_acme_config *cfg, void (*install)(void *), void *ctx,
                             char *err, size_t errlen);
/* Stops the thread (at most one HTTP timeout) and frees everything. */
void sws_acme_stop(sws_acme_run *r);
/* Control thread, woken by install(): whether this run asked (the flag is
 * taken), so that one wake-up serves every order; and the order's NAME ("" for
 * [acme]'s, the [tls] pair), which is also its certificate's in the TLS list. */
bool sws_acme_install_wanted(sws_acme_run *r);
const char *sws_acme_name(const sws_acme_run *r);
/* Control thread: the pair asked for is serving (ok), or it was refused (why). */
void sws_acme_installed(sws_acme_run *r, bool ok, const char *why);
/* Control thread: one order's object of /status; the lines of /metrics for
 * every order (totals, and a row per order labelled order="NAME"). */
json_t *sws_acme_status(sws_acme_run *r);
void sws_acme_metrics(sws_acme_run *const *runs, int n, FILE *f);

#endif
