/* Certificate work for ACME: the CSR for a new order, the key PEM, a chain's
 * expiry, and the self-signed placeholder a TLS listener starts with before
 * the first certificate is issued. OpenSSL only; any thread. */
#ifndef SWS_ACME_CERT_H
#define SWS_ACME_CERT_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

typedef struct evp_pkey_st EVP_PKEY;

/* DER CSR for domains (the first is the subject CN, all are SANs), signed by
 * key, base64url'd as ACME's finalize wants. malloc'd, or NULL. */
char *sws_acme_csr(EVP_PKEY *key, const char *const *domains, int n);

/* PEM text of a private key (malloc'd, NUL-terminated) or NULL. */
char *sws_acme_key_pem(EVP_PKEY *key);
/* A private key from PEM text, or NULL. */
EVP_PKEY *sws_acme_key_from_pem(const char *pem, size_t len);

/* The leaf's notAfter, and whether it names every domain. 0, or -EINVAL when
 * pem is no certificate. */
int sws_acme_cert_info(const char *pem, size_t len, time_t *not_after, const char *const *domains,
                       int n, int *covers);

/* A self-signed certificate for domains, valid one day, as PEM (malloc'd). */
char *sws_acme_placeholder(EVP_PKEY *key, const char *const *domains, int n);

/* Whether key_pem's key is the leaf of chain_pem's. */
int sws_acme_cert_matches(const char *chain_pem, size_t clen, const char *key_pem, size_t klen);

#endif
