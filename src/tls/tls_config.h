/* The [tls] section: certificate, key, protocols, ciphers, session resumption
 * and OCSP stapling. Plain data, no OpenSSL types, so that config.h can embed
 * it; read-only once loaded, like the rest of sws_config. */
#ifndef SWS_TLS_CONFIG_H
#define SWS_TLS_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SWS_TLS_PATH_MAX 256

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
    bool alpn_h2; /* not a [tls] key: ALPN offers h2 before http/1.1 ([server] http2) */
} sws_tls_config;

void sws_tls_config_defaults(sws_tls_config *t);

/* One key of [tls]. 0, or -EINVAL with a reason in err (without file and line). */
int sws_tls_config_set(sws_tls_config *t, const char *key, const char *value, char *err,
                       size_t errlen);

/* "TLSv1.2 TLSv1.3" for the start line and /status. */
const char *sws_tls_protocols_name(unsigned protocols);

#endif
