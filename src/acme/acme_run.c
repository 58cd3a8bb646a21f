/* The ACME thread (acme_run.h): waits until the certificate is due (missing,
 * a placeholder, not naming every domain, or within renew_before of its end),
 * runs one issuance through acme_client.c on libcurl, and on failure logs the
 * cause once, counts it, keeps it for /status and state.json, and waits
 * retry_min * 2^failures (at most retry_max; a CA's Retry-After wins). The
 * served certificate is only ever replaced by a new pair that checked out. */
#include "acme_run.h"

#include "acme_cert.h"
#include "acme_client.h"
#include "acme_http.h"
#include "acme_store.h"
#include "acme_tokens.h"
#include "jws.h"
#include "tls_acme.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct sws_acme_run {
    sws_acme_config cfg;
    void (*install)(void *);
    void *ctx;
    pthread_t thread;
    atomic_bool install_wanted; /* set before install(): sws_acme_install_wanted takes it */
    pthread_mutex_t lock;       /* everything below, and the condvar's wait */
    pthread_cond_t cond;
    atomic_bool stop;  /* set under lock (the condvar), read anywhere (curl's progress) */
    bool install_done; /* the control thread answered the last install */
    bool install_ok;
    char install_why[256];
    /* For /status and /metrics, under lock. */
    sws_acme_state st;
    int64_t expires;      /* notAfter of the served certificate; 0 none */
    int64_t next_renewal; /* when the thread acts next */
    const char *phase;    /* "waiting", "ordering" */
    uint64_t issued, installed, attempts, bad_nonce;
    uint64_t failed[SWS_ACME_CAUSE_N];
    /* Per domain: a failed authorization is that domain's; any other failure
     * is every domain's (one certificate names them all). */
    char dom_error[SWS_ACME_DOMAINS_MAX][512];
    int64_t dom_error_at[SWS_ACME_DOMAINS_MAX];
};

static const char *const cause_names[SWS_ACME_CAUSE_N] = {"network", "ca", "rate_limited",
                                                          "challenge", "local"};

static int64_t now_s(void) {
    return (int64_t)time(NULL);
}

/* Sleeps until t (unix seconds) or ms, whichever the caller gives; false once
 * stop is set. */
static bool wait_until(sws_acme_run *r, int64_t t_ms_abs) {
    struct timespec ts = {.tv_sec = (time_t)(t_ms_abs / 1000),
                          .tv_nsec = (long)(t_ms_abs % 1000) * 1000000L};
    pthread_mutex_lock(&r->lock);
    while (!r->stop) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        if (now.tv_sec > ts.tv_sec || (now.tv_sec == ts.tv_sec && now.tv_nsec >= ts.tv_nsec))
            break;
        pthread_cond_timedwait(&r->cond, &r->lock, &ts);
    }
    bool go = !r->stop;
    pthread_mutex_unlock(&r->lock);
    return go;
}

static int64_t now_ms(void) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

static bool hook_sleep(void *ctx, unsigned ms) {
    return wait_until(ctx, now_ms() + ms);
}
/* HTTP-01: the token table the plaintext listeners answer from; TLS-ALPN-01:
 * the challenge certificate the TLS listener answers acme-tls/1 with. */
static int hook_publish(void *ctx, const char *domain, const char *token, const char *ka) {
    const sws_acme_run *r = ctx;
    return sws_acme_tls_alpn(&r->cfg) ? sws_tls_acme_put(domain, ka)
                                      : sws_acme_token_put(token, ka);
}
static void hook_withdraw(void *ctx, const char *domain, const char *token) {
    const sws_acme_run *r = ctx;
    if (sws_acme_tls_alpn(&r->cfg))
        sws_tls_acme_drop(domain);
    else
        sws_acme_token_drop(token);
}

/* The served pair's expiry, and whether it must be replaced at once. */
static bool served_due(sws_acme_run *r, int64_t *expires) {
    size_t len;
    char *pem = sws_acme_store_read(r->cfg.state_dir, "cert.pem", &len);
    const char *doms[SWS_ACME_DOMAINS_MAX];
    for (int i = 0; i < r->cfg.ndomains; i++)
        doms[i] = r->cfg.domains[i];
    time_t na = 0;
    int covers = 0;
    bool ok = pem && sws_acme_cert_info(pem, len, &na, doms, r->cfg.ndomains, &covers) == 0;
    free(pem);
    *expires = ok ? (int64_t)na : 0;
    return !ok || !covers;
}

static sws_acme_cause cause_of(int rc) {
    switch (rc) {
    case SWS_ACME_E_NET:
        return SWS_ACME_CAUSE_NETWORK;
    case SWS_ACME_E_RATE:
        return SWS_ACME_CAUSE_RATE;
    case SWS_ACME_E_CHALLENGE:
        return SWS_ACME_CAUSE_CHALLENGE;
    case SWS_ACME_E_CA:
        return SWS_ACME_CAUSE_CA;
    default:
        return SWS_ACME_CAUSE_LOCAL;
    }
}

/* One issuance: 0 with key.pem/cert.pem replaced and installed, or an
 * SWS_ACME_E_* / -errno with why. */
static int attempt(sws_acme_run *r, sws_acme_http *http, EVP_PKEY *account, char *why,
                   size_t whylen, long *retry_after, char *domain, size_t domlen) {
    sws_acme_hooks h = {.send = sws_acme_http_send,
                        .send_ctx = http,
                        .sleep_ms = hook_sleep,
                        .publish = hook_publish,
                        .withdraw = hook_withdraw,
                        .ctx = r,
                        .challenge = r->cfg.challenge};
    sws_acme_client c;
    *retry_after = -1;
    if (sws_acme_client_init(&c, &h, r->cfg.directory, account) < 0) {
        snprintf(why, whylen, "out of memory");
        return -ENOMEM;
    }
    const char *doms[SWS_ACME_DOMAINS_MAX];
    for (int i = 0; i < r->cfg.ndomains; i++)
        doms[i] = r->cfg.domains[i];
    EVP_PKEY *key = NULL;
    char *chain = NULL, *kp = NULL, *old_key = NULL, *old_cert = NULL;
    int rc = sws_acme_fetch_directory(&c);
    if (rc == 0)
        rc = sws_acme_account(&c, r->cfg.email);
    if (rc == 0) {
        pthread_mutex_lock(&r->lock);
        snprintf(r->st.account, sizeof(r->st.account), "%s", c.kid);
        pthread_mutex_unlock(&r->lock);
        /* A new key for every certificate: a renewal never reuses the old one. */
        key = sws_jws_new_key();
        rc = key ? sws_acme_issue(&c, doms, r->cfg.ndomains, key, &chain) : -ENOMEM;
    }
    pthread_mutex_lock(&r->lock);
    r->bad_nonce += c.bad_nonce_retries;
    pthread_mutex_unlock(&r->lock);
    if (rc < 0) {
        snprintf(why, whylen, "%s", c.err[0] ? c.err : strerror(-rc));
        snprintf(domain, domlen, "%s", c.err_domain);
        *retry_after = c.retry_after;
        goto done;
    }
    pthread_mutex_lock(&r->lock);
    r->issued++;
    pthread_mutex_unlock(&r->lock);
    kp = sws_acme_key_pem(key);
    if (!kp || !sws_acme_cert_matches(chain, strlen(chain), kp, strlen(kp))) {
        snprintf(why, whylen, "the issued certificate does not match its key");
        rc = -EINVAL;
        goto done;
    }
    /* The pair serving now, put back if the TLS layer refuses the new one:
     * state_dir must always hold what serves (a restart or SIGHUP reads it). */
    size_t oklen = 0, oclen = 0;
    old_key = sws_acme_store_read(r->cfg.state_dir, "key.pem", &oklen);
    old_cert = sws_acme_store_read(r->cfg.state_dir, "cert.pem", &oclen);
    /* Key first, then the chain; the control thread reads both only after
     * install() below, so it never sees a half-written pair. */
    if ((rc = sws_acme_store_write(r->cfg.state_dir, "key.pem", kp, strlen(kp), 0600)) < 0 ||
        (rc = sws_acme_store_write(r->cfg.state_dir, "cert.pem", chain, strlen(chain), 0644)) < 0) {
        snprintf(why, whylen, "cannot save the certificate in %s: %s", r->cfg.state_dir,
                 strerror(-rc));
        goto done;
    }
    if (!r->install) {
        /* No tls listener: the pair is kept in state_dir for whoever uses it. */
        rc = 0;
        goto done;
    }
    pthread_mutex_lock(&r->lock);
    r->install_done = false;
    pthread_mutex_unlock(&r->lock);
    atomic_store(&r->install_wanted, true);
    r->install(r->ctx);
    /* The control thread answers within a turn of its poll; bounded anyway. */
    int64_t deadline = now_ms() + 30000;
    pthread_mutex_lock(&r->lock);
    while (!r->install_done && !r->stop) {
        struct timespec ts = {.tv_sec = (time_t)(deadline / 1000),
                              .tv_nsec = (long)(deadline % 1000) * 1000000L};
        if (pthread_cond_timedwait(&r->cond, &r->lock, &ts) == ETIMEDOUT)
            break;
    }
    bool ok = r->install_done && r->install_ok;
    if (!ok)
        snprintf(why, whylen, "install: %s",
                 r->install_done ? r->install_why : "the control thread did not answer");
    else
        r->installed++;
    pthread_mutex_unlock(&r->lock);
    rc = ok ? 0 : -EIO;
    if (!ok && old_key && old_cert &&
        (sws_acme_store_write(r->cfg.state_dir, "key.pem", old_key, oklen, 0600) < 0 ||
         sws_acme_store_write(r->cfg.state_dir, "cert.pem", old_cert, oclen, 0644) < 0))
        fprintf(stderr, "scalwsd: acme: cannot put the serving pair back in %s\n",
                r->cfg.state_dir);
done:
    free(old_key);
    free(old_cert);
    free(kp);
    free(chain);
    EVP_PKEY_free(key);
    return rc;
}

static void *run(void *arg) {
    sws_acme_run *r = arg;
    char err[512];
    sws_acme_http *http = NULL;
    EVP_PKEY *account = NULL;
    bool logged_local = false;
    while (!r->stop) {
        if (!account) {
            account = sws_acme_store_account_key(
                r->cfg.account_dir[0] ? r->cfg.account_dir : r->cfg.state_dir, err, sizeof(err));
            http = http ? http
                        : sws_acme_http_new(r->cfg.ca_file[0] ? r->cfg.ca_file : NULL, 30000,
                                            &r->stop);
            if (!account || !http) {
                if (!logged_local)
                    fprintf(stderr, "scalwsd: acme: %s; retrying every %" PRIu32 " s\n",
                            account ? "cannot start libcurl" : err, r->cfg.retry_min_s);
                logged_local = true;
                if (!wait_until(r, now_ms() + (int64_t)r->cfg.retry_min_s * 1000))
                    break;
                continue;
            }
        }
        int64_t expires;
        bool due_now = served_due(r, &expires);
        pthread_mutex_lock(&r->lock);
        r->expires = r->st.placeholder ? 0 : expires;
        int64_t when =
            due_now || r->st.placeholder ? now_s() : expires - (int64_t)r->cfg.renew_before_s;
        if (r->st.next_attempt > when)
            when = r->st.next_attempt; /* a back-off, also one saved before a restart */
        r->next_renewal = when;
        r->phase = "waiting";
        pthread_mutex_unlock(&r->lock);
        if (!wait_until(r, when * 1000))
            break;
        pthread_mutex_lock(&r->lock);
        r->phase = "ordering";
        r->attempts++;
        pthread_mutex_unlock(&r->lock);
        char why[512] = "", domain[256] = "";
        long retry_after;
        int rc = attempt(r, http, account, why, sizeof(why), &retry_after, domain, sizeof(domain));
        if (rc == SWS_ACME_E_STOP || r->stop)
            break;
        pthread_mutex_lock(&r->lock);
        if (rc == 0) {
            r->st.last_error[0] = '\0';
            r->st.failures = 0;
            r->st.next_attempt = 0;
            r->st.placeholder = 0;
            r->st.last_issued_at = now_s();
            memset(r->dom_error, 0, sizeof(r->dom_error));
            memset(r->dom_error_at, 0, sizeof(r->dom_error_at));
            fprintf(stderr, "scalwsd: acme: certificate for %s issued and serving\n",
                    r->cfg.domains[0]);
        } else {
            sws_acme_cause cause = cause_of(rc);
            r->failed[cause]++;
            r->st.failures++;
            uint64_t wait = r->cfg.retry_min_s;
            for (uint32_t i = 1; i < r->st.failures && wait < r->cfg.retry_max_s; i++)
                wait *= 2;
            if (wait > r->cfg.retry_max_s)
                wait = r->cfg.retry_max_s;
            if (retry_after > 0 && (uint64_t)retry_after > wait)
                wait = (uint64_t)retry_after;
            snprintf(r->st.last_error, sizeof(r->st.last_error), "%s", why);
            r->st.last_error_at = now_s();
            for (int i = 0; i < r->cfg.ndomains; i++) {
                if (domain[0] && strcmp(domain, r->cfg.domains[i]) != 0)
                    continue;
                snprintf(r->dom_error[i], sizeof(r->dom_error[i]), "%s", why);
                r->dom_error_at[i] = r->st.last_error_at;
            }
            r->st.next_attempt = now_s() + (int64_t)wait;
            /* Once per failed attempt, never per poll or per retry inside it. */
            fprintf(stderr,
                    "scalwsd: acme: %s failed (%s): %s; the current certificate keeps serving; "
                    "next attempt in %" PRIu64 " s\n",
                    r->cfg.domains[0], cause_names[cause], why, wait);
        }
        sws_acme_state st = r->st;
        pthread_mutex_unlock(&r->lock);
        if (sws_acme_state_save(r->cfg.state_dir, &st) < 0)
            fprintf(stderr, "scalwsd: acme: cannot save %s/state.json\n", r->cfg.state_dir);
    }
    EVP_PKEY_free(account);
    sws_acme_http_free(http);
    return NULL;
}

sws_acme_run *sws_acme_start(const sws_acme_config *cfg, void (*install)(void *), void *ctx,
                             char *err, size_t errlen) {
    sws_acme_run *r = calloc(1, sizeof(*r));
    if (!r) {
        snprintf(err, errlen, "acme: out of memory");
        return NULL;
    }
    r->cfg = *cfg;
    r->install = install;
    r->ctx = ctx;
    r->phase = "waiting";
    pthread_mutex_init(&r->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_cond_init(&r->cond, &ca);
    pthread_condattr_destroy(&ca);
    if (sws_acme_store_open(cfg->state_dir, err, errlen) < 0) {
        free(r);
        return NULL;
    }
    sws_acme_state_load(cfg->state_dir, &r->st);
    for (int i = 0; r->st.last_error[0] && i < cfg->ndomains; i++) {
        snprintf(r->dom_error[i], sizeof(r->dom_error[i]), "%s", r->st.last_error);
        r->dom_error_at[i] = r->st.last_error_at;
    }
    if (r->st.last_error[0])
        fprintf(stderr, "scalwsd: acme: resuming from %s: last error: %s\n", cfg->state_dir,
                r->st.last_error);
    int e = pthread_create(&r->thread, NULL, run, r);
    if (e) {
        snprintf(err, errlen, "acme: cannot start its thread: %s", strerror(e));
        free(r);
        return NULL;
    }
    return r;
}

void sws_acme_stop(sws_acme_run *r) {
    if (!r)
        return;
    pthread_mutex_lock(&r->lock);
    r->stop = true;
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->lock);
    pthread_join(r->thread, NULL);
    pthread_cond_destroy(&r->cond);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

bool sws_acme_install_wanted(sws_acme_run *r) {
    return atomic_exchange(&r->install_wanted, false);
}

const char *sws_acme_name(const sws_acme_run *r) {
    return r->cfg.name;
}

void sws_acme_installed(sws_acme_run *r, bool ok, const char *why) {
    pthread_mutex_lock(&r->lock);
    r->install_done = true;
    r->install_ok = ok;
    snprintf(r->install_why, sizeof(r->install_why), "%s", why ? why : "");
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->lock);
}

/* The order's label: NAME, or "[acme]" for [acme]'s own. */
static const char *label(const sws_acme_run *r) {
    return r->cfg.name[0] ? r->cfg.name : "[acme]";
}

/* 2 failing (the last attempt failed: until one succeeds, retries
 * included), 1 ordering (an attempt under way, none failed before it), 0
 * valid and waiting, 3 none (the placeholder: nothing issued yet). Under
 * r->lock; the phase says what the thread is doing. */
static int state_of(const sws_acme_run *r) {
    if (r->st.failures)
        return 2;
    if (strcmp(r->phase, "ordering") == 0)
        return 1;
    return r->st.placeholder || !r->expires ? 3 : 0;
}

static const char *const state_names[] = {"valid", "ordering", "failing", "none"};

static json_t *iso(int64_t t) {
    if (t <= 0)
        return json_null();
    char buf[32];
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
    return json_string(buf);
}

json_t *sws_acme_status(sws_acme_run *r) {
    pthread_mutex_lock(&r->lock);
    json_t *doms = json_array();
    /* One certificate names every domain, so each shares its figures. */
    for (int i = 0; i < r->cfg.ndomains; i++)
        json_array_append_new(doms,
                              json_pack("{s:s, s:o, s:o, s:s?, s:o}", "domain", r->cfg.domains[i],
                                        "certificate_expires", iso(r->expires), "next_renewal",
                                        iso(r->next_renewal), "last_error",
                                        r->dom_error[i][0] ? r->dom_error[i] : NULL,
                                        "last_error_at", iso(r->dom_error_at[i])));
    json_t *j = json_pack(
        "{s:s, s:s, s:s, s:s, s:s, s:b, s:o, s:o, s:I, s:I, s:s?, s:o, s:o}", "order", label(r),
        "directory", r->cfg.directory, "challenge", r->cfg.challenge, "phase", r->phase, "state",
        state_names[state_of(r)], "placeholder", r->st.placeholder, "certificate_expires",
        iso(r->expires), "next_renewal", iso(r->next_renewal), "failures_in_a_row",
        (json_int_t)r->st.failures, "installed", (json_int_t)r->installed, "last_error",
        r->st.last_error[0] ? r->st.last_error : NULL, "last_error_at",
        iso(r->st.failures ? r->st.last_error_at : 0), "domains", doms);
    pthread_mutex_unlock(&r->lock);
    return j;
}

void sws_acme_metrics(sws_acme_run *const *runs, int n, FILE *f) {
    uint64_t attempts = 0, issued = 0, installed = 0, bad_nonce = 0, failed[SWS_ACME_CAUSE_N] = {0};
    int64_t soonest = 0;
    for (int i = 0; i < n; i++) {
        sws_acme_run *r = runs[i];
        pthread_mutex_lock(&r->lock);
        attempts += r->attempts;
        issued += r->issued;
        installed += r->installed;
        bad_nonce += r->bad_nonce;
        for (int k = 0; k < SWS_ACME_CAUSE_N; k++)
            failed[k] += r->failed[k];
        if (r->expires && (!soonest || r->expires < soonest))
            soonest = r->expires;
        pthread_mutex_unlock(&r->lock);
    }
    fprintf(f,
            "# HELP scalwsd_acme_attempts_total ACME issuance attempts (first and renewals).\n"
            "# TYPE scalwsd_acme_attempts_total counter\nscalwsd_acme_attempts_total %" PRIu64 "\n"
            "# HELP scalwsd_acme_issued_total Certificates the CA issued.\n"
            "# TYPE scalwsd_acme_issued_total counter\nscalwsd_acme_issued_total %" PRIu64 "\n"
            "# HELP scalwsd_acme_installed_total Issued certificates installed into TLS.\n"
            "# TYPE scalwsd_acme_installed_total counter\nscalwsd_acme_installed_total %" PRIu64
            "\n"
            "# HELP scalwsd_acme_bad_nonce_retries_total Requests sent again after badNonce.\n"
            "# TYPE scalwsd_acme_bad_nonce_retries_total counter\n"
            "scalwsd_acme_bad_nonce_retries_total %" PRIu64 "\n"
            "# HELP scalwsd_acme_failures_total Failed attempts, by cause.\n"
            "# TYPE scalwsd_acme_failures_total counter\n",
            attempts, issued, installed, bad_nonce);
    for (int k = 0; k < SWS_ACME_CAUSE_N; k++)
        fprintf(f, "scalwsd_acme_failures_total{cause=\"%s\"} %" PRIu64 "\n", cause_names[k],
                failed[k]);
    fprintf(f,
            "# HELP scalwsd_acme_certificate_expiry_seconds notAfter of the served certificate "
            "that expires first (unix time; 0 none yet).\n"
            "# TYPE scalwsd_acme_certificate_expiry_seconds gauge\n"
            "scalwsd_acme_certificate_expiry_seconds %" PRId64 "\n",
            soonest);
    /* One row per order, each family's lines together (the exposition
     * format wants them so). */
    static const struct {
        const char *name, *help;
    } fam[] = {
        {"scalwsd_acme_order_state", "1 for the order's state (valid, ordering, failing, none)."},
        {"scalwsd_acme_order_not_after_seconds", "notAfter of the order's served certificate."},
        {"scalwsd_acme_order_failures_in_a_row", "Failed attempts since the last success."},
        {"scalwsd_acme_order_last_error_seconds", "When the last attempt failed (0: it did not)."},
        {"scalwsd_acme_order_installed_total", "The order's certificates installed into TLS."},
    };
    for (size_t k = 0; k < sizeof(fam) / sizeof(fam[0]); k++) {
        fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", fam[k].name, fam[k].help, fam[k].name,
                k == 4 ? "counter" : "gauge");
        for (int i = 0; i < n; i++) {
            sws_acme_run *r = runs[i];
            pthread_mutex_lock(&r->lock);
            if (k == 0) {
                int st = state_of(r);
                for (int v = 0; v < 4; v++)
                    fprintf(f, "%s{order=\"%s\",state=\"%s\"} %d\n", fam[k].name, label(r),
                            state_names[v], v == st);
            } else {
                int64_t v = k == 1   ? r->expires
                            : k == 2 ? (int64_t)r->st.failures
                            : k == 3 ? (r->st.failures ? r->st.last_error_at : 0)
                                     : (int64_t)r->installed;
                fprintf(f, "%s{order=\"%s\"} %" PRId64 "\n", fam[k].name, label(r), v);
            }
            pthread_mutex_unlock(&r->lock);
        }
    }
}
