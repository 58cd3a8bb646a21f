/* TLS-ALPN-01 (RFC 8737): the challenge certificates a TLS listener answers
 * with while the ACME thread waits for the CA to validate a name. A table of
 * name -> SSL_CTX written by the ACME thread (a few times per issuance) and
 * read by every loop in the ClientHello callback, only when a client offers
 * ALPN "acme-tls/1"; an atomic count spares every other handshake the lock. */
#ifndef SWS_TLS_ACME_H
#define SWS_TLS_ACME_H

#include <stdbool.h>
#include <stddef.h>

typedef struct ssl_ctx_st SSL_CTX;
typedef struct x509_st X509;
typedef struct evp_pkey_st EVP_PKEY;

#define SWS_TLS_ACME_ALPN "acme-tls/1"
#define SWS_TLS_ACME_MAX 16 /* challenges in flight at once, every order together */

/* The RFC 8737 section 3 certificate for name: self-signed with a new P-256
 * key, one dNSName (name) in subjectAltName and nothing else, and the critical
 * id-pe-acmeIdentifier extension (1.3.6.1.5.5.7.1.31) holding the SHA-256 of
 * key_authz as a DER OCTET STRING. 0 with *cert and *key (caller frees), or
 * -EINVAL/-ENOMEM. Any thread. */
int sws_tls_acme_cert(const char *name, const char *key_authz, X509 **cert, EVP_PKEY **key);

/* Publishes (or replaces) name's challenge: its certificate on a context that
 * negotiates exactly acme-tls/1. 0, -ENOSPC when the table is full, or
 * -EINVAL/-ENOMEM. The ACME thread; loops may look up meanwhile. */
int sws_tls_acme_put(const char *name, const char *key_authz);
/* Withdraws name's challenge (a handshake that already took its context
 * keeps it until the connection ends). */
void sws_tls_acme_drop(const char *name);

/* Whether any challenge is published (one relaxed load). */
bool sws_tls_acme_live(void);
/* name's (len bytes, any case) challenge context with a reference the caller
 * drops (SSL_CTX_free), or NULL. Any thread. */
SSL_CTX *sws_tls_acme_find(const char *name, size_t len);
/* Whether an ALPN list in wire form (a ClientHello's extension body, after
 * its two length bytes) offers acme-tls/1. */
bool sws_tls_acme_offered(const unsigned char *list, size_t len);

#endif
