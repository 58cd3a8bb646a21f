/* JWS for ACME (RFC 8555 section 6.2, RFC 7515/7518/7638): base64url, the
 * account key's JWK and thumbprint, and flattened ES256 signatures. Pure
 * functions of their inputs; any thread. */
#ifndef SWS_JWS_H
#define SWS_JWS_H

#include <stddef.h>

typedef struct evp_pkey_st EVP_PKEY;

/* base64url without padding. Returns a malloc'd NUL-terminated string or NULL. */
char *sws_b64url(const void *data, size_t len);
/* Decodes base64url (padding optional). Returns bytes written, or -1. */
long sws_b64url_decode(const char *in, unsigned char *out, size_t cap);

/* A new ECDSA P-256 key, or NULL. */
EVP_PKEY *sws_jws_new_key(void);

/* The public JWK of a P-256 key in RFC 7638's canonical form
 * ({"crv":"P-256","kty":"EC","x":...,"y":...}), malloc'd, or NULL. */
char *sws_jwk_json(EVP_PKEY *key);
/* RFC 7638 thumbprint: base64url(SHA-256(canonical JWK)), malloc'd, or NULL. */
char *sws_jwk_thumbprint(EVP_PKEY *key);

/* A flattened JWS (JSON text, malloc'd) of payload signed with ES256. kid NULL
 * puts the jwk in the protected header (newAccount), else the account URL.
 * payload NULL means POST-as-GET (an empty payload). NULL on failure. */
char *sws_jws_sign(EVP_PKEY *key, const char *kid, const char *nonce, const char *url,
                   const char *payload);

#endif
