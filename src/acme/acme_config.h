/* The [acme] section: which CA, which domains, where state lives, when to
 * renew. Plain data, like sws_tls_config, so config.h can embed it. */
#ifndef SWS_ACME_CONFIG_H
#define SWS_ACME_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SWS_ACME_DOMAINS_MAX 8
#define SWS_ACME_TEXT_MAX 512

#define SWS_ACME_ORDERS_MAX 8 /* [acme NAME] sections */

typedef struct sws_acme_config {
    /* NAME of an [acme NAME] order, "" for [acme]'s own (the [tls] pair). An
     * order keeps its files in state_dir = [acme] state_dir/NAME and shares
     * the account key of account_dir ([acme] state_dir; "" for [acme]). */
    char name[48];
    char account_dir[200];
    char directory[SWS_ACME_TEXT_MAX]; /* the CA's directory URL; empty: ACME off */
    char email[256];                   /* account contact; may be empty */
    char domains[SWS_ACME_DOMAINS_MAX][256];
    int ndomains;
    char state_dir[200];     /* account key, certificate, key, state.json (0700) */
    uint32_t renew_before_s; /* renew when the certificate expires within this */
    char challenge[16];      /* "http-01" or "tls-alpn-01" */
    char ca_file[256];       /* roots to trust for the CA's HTTPS (Pebble's); empty: system */
    char http_listen[128];   /* a plaintext challenge listener (control thread); empty: none */
    uint32_t retry_min_s;    /* first back-off after a failure; doubles up to retry_max_s */
    uint32_t retry_max_s;
} sws_acme_config;

/* Every [acme] key, its default and its help, in one table (acme_config.c):
 * what --help, the man page and the key table on main are made from. */
typedef struct sws_acme_key {
    const char *key, *def, *help;
} sws_acme_key;
extern const sws_acme_key sws_acme_keys[];

void sws_acme_config_defaults(sws_acme_config *a);
int sws_acme_config_set(sws_acme_config *a, const char *key, const char *value, char *err,
                        size_t errlen);
static inline bool sws_acme_enabled(const sws_acme_config *a) {
    return a->directory[0] != '\0';
}
static inline bool sws_acme_tls_alpn(const sws_acme_config *a) {
    return a->challenge[0] == 't';
}
/* What needs several keys: domains and state_dir once directory is set
 * (orders: whether [acme NAME] sections order certificates, so that [acme]
 * may name no domain itself). */
int sws_acme_config_check(const sws_acme_config *a, int orders, char *err, size_t errlen);

#endif
