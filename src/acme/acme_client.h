/* The RFC 8555 protocol: directory, nonces (badNonce retried), account,
 * order, HTTP-01 or TLS-ALPN-01 authorizations, finalize and download. It talks through a
 * send function (acme_http.c with libcurl, or recorded responses in the unit
 * tests) and publishes challenge tokens through callbacks, so it holds no
 * socket, thread or global of its own. One client per thread. */
#ifndef SWS_ACME_CLIENT_H
#define SWS_ACME_CLIENT_H

#include <stdbool.h>
#include <stddef.h>

typedef struct evp_pkey_st EVP_PKEY;

typedef struct sws_acme_resp {
    long status; /* HTTP status */
    char *body;  /* malloc'd, NUL-terminated (may be empty) */
    size_t len;
    char location[512]; /* Location header */
    char nonce[256];    /* Replay-Nonce header */
    char ctype[128];    /* Content-Type header */
    long retry_after;   /* Retry-After in seconds, -1 when absent */
} sws_acme_resp;

void sws_acme_resp_clear(sws_acme_resp *r);

/* One HTTP exchange: method "GET", "HEAD" or "POST" (body is then a JWS, sent
 * as application/jose+json). 0 with *out filled (any status), or a negative
 * errno with a reason in err when nothing came back (CA down, timeout, TLS). */
typedef int (*sws_acme_send_fn)(void *ctx, const char *method, const char *url, const char *body,
                                sws_acme_resp *out, char *err, size_t errlen);

typedef struct sws_acme_hooks {
    sws_acme_send_fn send;
    void *send_ctx;
    /* Waits between polls; false means stop (shutdown). NULL: no wait. */
    bool (*sleep_ms)(void *ctx, unsigned ms);
    /* The challenge's answer for domain (HTTP-01: the token's path;
     * TLS-ALPN-01: the acmeIdentifier certificate), served until withdrawn.
     * 0 or -errno. */
    int (*publish)(void *ctx, const char *domain, const char *token, const char *key_authz);
    void (*withdraw)(void *ctx, const char *domain, const char *token);
    void *ctx;
    const char *challenge; /* the type taken: "http-01" (NULL) or "tls-alpn-01" */
} sws_acme_hooks;

/* Error classes (the negative errno an operation returns). */
#define SWS_ACME_E_NET (-EHOSTUNREACH) /* nothing came back */
#define SWS_ACME_E_CA (-EPROTO)        /* an error answer or a response we cannot use */
#define SWS_ACME_E_RATE (-EBUSY)       /* rateLimited, or 503 with Retry-After */
#define SWS_ACME_E_CHALLENGE (-EACCES) /* an authorization became invalid */
#define SWS_ACME_E_STOP (-ECANCELED)   /* sleep_ms said stop */

typedef struct sws_acme_client {
    sws_acme_hooks h;
    char directory[512];
    char new_nonce[512], new_account[512], new_order[512];
    EVP_PKEY *account_key; /* borrowed */
    char thumbprint[64];
    char kid[512]; /* the account URL, once known */
    char nonce[256];
    unsigned poll_ms;           /* between polls when the CA gives no Retry-After */
    int max_polls;              /* per authorization and per order */
    long retry_after;           /* seconds, from the last error answer; -1 none */
    char err[512];              /* why the last operation failed */
    char err_domain[256];       /* the domain it failed for, when it was one's authorization */
    unsigned bad_nonce_retries; /* counted for /metrics */
} sws_acme_client;

/* Sets up a client (nothing is sent). 0 or -ENOMEM. */
int sws_acme_client_init(sws_acme_client *c, const sws_acme_hooks *h, const char *directory,
                         EVP_PKEY *account_key);

/* Reads the directory. 0 or an SWS_ACME_E_* with c->err. */
int sws_acme_fetch_directory(sws_acme_client *c);
/* newAccount (creates it, or finds the key's existing one). kid is set. */
int sws_acme_account(sws_acme_client *c, const char *email);
/* One certificate for domains with cert_key: order, authorizations, finalize,
 * download. *chain is the PEM chain (malloc'd) on success. */
int sws_acme_issue(sws_acme_client *c, const char *const *domains, int n, EVP_PKEY *cert_key,
                   char **chain);

#endif
