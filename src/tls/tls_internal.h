/* What the files of src/tls share and nothing else sees. */
#ifndef SWS_TLS_INTERNAL_H
#define SWS_TLS_INTERNAL_H

#include "sws_tls.h"

#include <openssl/evp.h>
#include <openssl/ssl.h>

/* Hung on every SSL_CTX (ex_data), freed with it: what its callbacks need
 * outlives the configuration that made it, as long as a connection uses it. */
typedef struct sws_tls_ctxdata {
    sws_tls_keys *keys;  /* the process's ring, not owned */
    unsigned char *ocsp; /* DER response, this context's own copy; NULL: none */
    long ocsp_len;
} sws_tls_ctxdata;

int sws_tls_ctx_index(void);
/* t's SSL on ctx between two fresh memory BIOs, neither side chosen yet (the
 * server and client inits choose). 0 or -ENOMEM. */
int sws_tls_conn_wrap(sws_tls_conn *t, SSL_CTX *ctx);
int sws_tls_ticket_cb(SSL *ssl, unsigned char name[16], unsigned char *iv, EVP_CIPHER_CTX *cctx,
                      EVP_MAC_CTX *hctx, int enc);

#endif
