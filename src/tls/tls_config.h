/* The [tls] section: certificate, key, protocols, ciphers, session resumption
 * and OCSP stapling. Plain data, no OpenSSL types, so that config.h can embed
 * it; read-only once loaded, like the rest of sws_config. */
#ifndef SWS_TLS_CONFIG_H
#define SWS_TLS_CONFIG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SWS_TLS_PATH_MAX 256
#define SWS_TLS_SECTION_MAX 48 /* NAME of a [tls NAME] section */

/* Protocol versions, as a contiguous range (OpenSSL takes a min and a max). */
enum { SWS_TLS_V12 = 1u << 0, SWS_TLS_V13 = 1u << 1 };

/* Mozilla's "intermediate" profile (version 5.7): TLS 1.2 with forward-secret
 * AEAD suites only, and every TLS 1.3 suite. */
#define SWS_TLS_DEFAULT_CIPHERS                                                                    \
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"                                   \
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"                                   \
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:"                                   \
    "DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384:DHE-RSA-CHACHA20-POLY1305"
#define SWS_TLS_DEFAULT_CIPHERSUITES                                                               \
    "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"
#define SWS_TLS_DEFAULT_GROUPS "X25519:prime256v1:secp384r1"

typedef struct sws_tls_config {
    char cert[SWS_TLS_PATH_MAX];   /* PEM: the leaf first, then its chain */
    char key[SWS_TLS_PATH_MAX];    /* PEM private key */
    char ocsp[SWS_TLS_PATH_MAX];   /* DER OCSP response to staple; empty: none */
    unsigned protocols;            /* SWS_TLS_V12 | SWS_TLS_V13 */
    char ciphers[1024];            /* TLS 1.2, OpenSSL cipher list syntax */
    char ciphersuites[256];        /* TLS 1.3 */
    char groups[256];              /* key exchange groups (curves) */
    bool tickets;                  /* session tickets (stateless resumption) */
    uint32_t ticket_key_rotate_ms; /* the control thread makes a new ticket key this often */
    uint32_t session_cache;        /* session-ID cache entries per loop; 0 off */
    bool ktls;                     /* ask for kTLS where it can be had (see doc/tls.md) */
    bool refuse_unknown;           /* unknown_name = refuse: no certificate for an unknown SNI */
    bool alpn_h2; /* not a [tls] key: ALPN offers h2 before http/1.1 ([server] http2) */
} sws_tls_config;

/* One certificate of a listener: [tls]'s own cert and key, or a [tls NAME]
 * section's. The names it serves are its own (subjectAltName, else CN). */
typedef struct sws_tls_cert_config {
    char name[SWS_TLS_SECTION_MAX]; /* NAME of [tls NAME]; "" for [tls] */
    char cert[SWS_TLS_PATH_MAX];
    char key[SWS_TLS_PATH_MAX];
    char ocsp[SWS_TLS_PATH_MAX]; /* "" none */
    bool is_default;             /* default = on: served for an unknown or absent SNI */
    uint32_t line;               /* of the section in the config file; 0 none */
    uint32_t cert_line, key_line, ocsp_line;
} sws_tls_cert_config;

/* The certificates of a configuration, [tls]'s first when it has one. Shared
 * by reference between copies of a configuration. */
typedef struct sws_tls_certs {
    _Atomic int refs;
    int n, cap;
    sws_tls_cert_config *c;
    char *file; /* the configuration file their lines are in; NULL none */
} sws_tls_certs;

sws_tls_certs *sws_tls_certs_new(void);
void sws_tls_certs_ref(sws_tls_certs *l);
void sws_tls_certs_unref(sws_tls_certs *l);
/* The one named name (NAME of [tls NAME], "" for [tls]), or NULL. */
sws_tls_cert_config *sws_tls_certs_find(sws_tls_certs *l, const char *name);
/* A new entry at the end (at index 0 with first), zeroed. NULL without memory. */
sws_tls_cert_config *sws_tls_certs_add(sws_tls_certs *l, bool first);

/* One key of [tls NAME] (cert, key, ocsp, default). 0, or -EINVAL with a
 * reason in err. */
int sws_tls_cert_config_set(sws_tls_cert_config *c, const char *key, const char *value, char *err,
                            size_t errlen);
/* Whether n can name a [tls NAME] section (letters, digits, '_', '-', '.'). */
bool sws_tls_section_name_ok(const char *n);

void sws_tls_config_defaults(sws_tls_config *t);

/* One key of [tls]. 0, or -EINVAL with a reason in err (without file and line). */
int sws_tls_config_set(sws_tls_config *t, const char *key, const char *value, char *err,
                       size_t errlen);

/* "TLSv1.2 TLSv1.3" for the start line and /status. */
const char *sws_tls_protocols_name(unsigned protocols);

#endif
