/* Test helpers for src/tls: certificates made in code, a client SSL on memory
 * BIOs, and a pump that moves bytes between it and a server engine. */
#ifndef TLS_TEST_UTIL_H
#define TLS_TEST_UTIL_H

#include "sws_tls.h"

#include <openssl/ssl.h>

enum { TT_EC = 0, TT_RSA = 1 };

/* A self-signed certificate for localhost and 127.0.0.1 (its own CA) and its
 * key, written as PEM to cert and key. 0 or -1. */
int tt_make_cert(int type, const char *cert, const char *key);
/* The same with subjectAltName san ("DNS:a.test,DNS:*.b.test"; NULL none: the
 * CN "localhost" only), valid for valid_s seconds from now (< 0: expired). */
int tt_make_cert_for(int type, const char *san, long valid_s, const char *cert, const char *key);

/* A server of one certificate, [tls]'s cert, key and ocsp of t, with n loop
 * contexts; NULL with err as sws_tls_server_new. */
sws_tls_server *tt_server_new(const sws_tls_config *t, int n, sws_tls_keys *keys, char *err,
                              size_t errlen);

/* A client context that trusts the PEM certificate in cafile (NULL: verify nothing). */
SSL_CTX *tt_client_ctx(const char *cafile);

typedef struct tt_client {
    SSL *ssl;
    BIO *in, *out; /* network -> client, client -> network */
    char got[65536];
    size_t ngot;
    bool closed; /* close_notify read */
    bool failed;
} tt_client;

int tt_client_init(tt_client *c, SSL_CTX *ctx);
void tt_client_free(tt_client *c);

typedef struct tt_server_side {
    char got[65536];
    size_t ngot;
    int last; /* last sws_tls_read result <= 0 */
} tt_server_side;

/* Moves bytes both ways until neither side has anything to say (at most 64
 * rounds). Client plaintext lands in c->got, server plaintext in s->got. */
void tt_pump(tt_client *c, sws_tls_conn *t, tt_server_side *s);

#endif
