/* state_dir: what the ACME client keeps across restarts. Files, written whole
 * and renamed into place so that a crash leaves the old or the new one:
 *   account.key  the account's P-256 key (0600)
 *   key.pem      the certificate's key (0600)
 *   cert.pem     the chain being served (leaf first)
 *   state.json   account URL, last error, failures, next attempt */
#ifndef SWS_ACME_STORE_H
#define SWS_ACME_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

typedef struct evp_pkey_st EVP_PKEY;
struct sws_acme_config;

typedef struct sws_acme_state {
    char account[512];    /* account URL (kid), empty until created */
    char last_error[512]; /* empty after a success */
    int64_t last_error_at;
    int64_t last_issued_at;
    int64_t next_attempt; /* unix seconds; 0: at once */
    uint32_t failures;    /* in a row */
    int placeholder;      /* cert.pem is the self-signed stand-in */
} sws_acme_state;

/* state_dir created (0700) if missing and made 0700. 0 or -errno with err. */
int sws_acme_store_open(const char *dir, char *err, size_t errlen);
/* "dir/name" into buf. */
void sws_acme_store_path(const char *dir, const char *name, char *buf, size_t cap);
/* Reads a file whole (malloc'd, NUL-terminated), or NULL. */
char *sws_acme_store_read(const char *dir, const char *name, size_t *len);
/* Writes name.tmp with mode, fsyncs, renames to name. 0 or -errno. */
int sws_acme_store_write(const char *dir, const char *name, const char *data, size_t len,
                         unsigned mode);
/* The account key: loaded, or made and saved. NULL with err. */
EVP_PKEY *sws_acme_store_account_key(const char *dir, char *err, size_t errlen);
int sws_acme_state_load(const char *dir, sws_acme_state *st);
int sws_acme_state_save(const char *dir, const sws_acme_state *st);

/* Start-up, before the TLS listener reads its files: state_dir exists and
 * holds a cert.pem/key.pem pair (a one-day self-signed placeholder when no
 * certificate was issued yet). 0 or -errno with err. */
int sws_acme_store_prepare(const struct sws_acme_config *a, char *err, size_t errlen);

#endif
