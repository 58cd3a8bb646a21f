/* What the files of src/tls share and nothing else sees. */
#ifndef SWS_TLS_INTERNAL_H
#define SWS_TLS_INTERNAL_H

#include "sws_tls.h"

#include <openssl/evp.h>
#include <openssl/ssl.h>

/* Key types a context holds one certificate of each (OpenSSL's slots): a
 * client is served the one its signature algorithms allow. */
enum {
    SWS_TLS_SLOT_RSA,
    SWS_TLS_SLOT_RSA_PSS,
    SWS_TLS_SLOT_EC,
    SWS_TLS_SLOT_ED25519,
    SWS_TLS_SLOT_ED448,
    SWS_TLS_SLOTS
};

/* One certificate as loaded and checked (tls_cert.c): read once, shared by
 * reference between the contexts that serve it and between the servers of
 * two reloads when its files did not load the second time. */
typedef struct sws_tls_cert {
    _Atomic int refs;
    X509 *leaf;
    STACK_OF(X509) * chain;
    EVP_PKEY *pkey;
    unsigned char *ocsp; /* DER response to staple; NULL none */
    long ocsp_len;
    int slot;
    char key_type[32];  /* "ECDSA P-256", "RSA 2048" */
    char not_after[24]; /* "2027-01-31T12:00:00Z" */
    int64_t not_after_s;
    unsigned char fp[32]; /* SHA-256 of the leaf's DER */
    int nnames;
    char **names; /* normal form ("*.example.com"), from subjectAltName, else CN */
} sws_tls_cert;

/* Reads and checks cc's files: NULL with one line in err ("[tls NAME] cert
 * /path: why", after "file:line: " when file is given and the key has a line). */
sws_tls_cert *sws_tls_cert_load(const sws_tls_cert_config *cc, const char *file, char *err,
                                size_t errlen);
void sws_tls_cert_ref(sws_tls_cert *c);
void sws_tls_cert_unref(sws_tls_cert *c);

/* OpenSSL's newest reason for a failure into buf ("unknown error" when it
 * gave none), then its error queue cleared (tls_cert.c). */
void sws_tls_why(char *buf, size_t len);

/* Hung on every SSL_CTX (ex_data), freed with it: what its callbacks need
 * outlives the configuration that made it, as long as a connection uses it. */
typedef struct sws_tls_ctxdata {
    sws_tls_keys *keys; /* the process's ring, not owned */
    struct {
        X509 *leaf;          /* not owned: the context holds it */
        unsigned char *ocsp; /* DER response, this context's own copy */
        long ocsp_len;
    } staple[SWS_TLS_SLOTS];
} sws_tls_ctxdata;

int sws_tls_ctx_index(void);
/* The ex_data index of an SSL's sws_tls_conn (server side). */
int sws_tls_conn_index(void);
/* t's SSL on ctx between two fresh memory BIOs, neither side chosen yet (the
 * server and client inits choose). 0 or -ENOMEM. */
int sws_tls_conn_wrap(sws_tls_conn *t, SSL_CTX *ctx);
int sws_tls_ticket_cb(SSL *ssl, unsigned char name[16], unsigned char *iv, EVP_CIPHER_CTX *cctx,
                      EVP_MAC_CTX *hctx, int enc);

/* tls_server.c, for the ClientHello callback (tls_sni.c): the context and
 * session-ID context for the server name the client sent (len 0: none).
 * SSL_CLIENT_HELLO_SUCCESS, or SSL_CLIENT_HELLO_ERROR with the alert in *al. */
/* t's SSL on s's context for loop, with a reference to s for the ClientHello
 * (tls_server.c). 0 or -ENOMEM. */
int sws_tls_server_wrap(sws_tls_conn *t, sws_tls_server *s, int loop);
int sws_tls_server_choose(SSL *ssl, sws_tls_conn *t, const char *name, size_t len, int *al);
void sws_tls_server_release(sws_tls_server *s);
/* tls_sni.c: the callbacks every server context carries. */
void sws_tls_sni_install(SSL_CTX *ctx);

#endif
