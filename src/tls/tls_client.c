/* Client contexts and engines for TLS to an upstream: verification on by
 * default (the roots of tls_ca, else the system's), TLS 1.2 at least, ALPN
 * http/1.1 offered so that an upstream able to speak h2 still speaks what we
 * forward. The engine is tls_conn.c's, started in connect state. */
#include "sws_tls_client.h"
#include "tls_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sws_tls_client {
    SSL_CTX *ctx;
};

static const unsigned char alpn_http11[] = "\x08http/1.1";

/* A session the server gave (after the handshake, or a TLS 1.3 ticket read
 * later): into the engine's slot, if it has one. 1: we keep the reference. */
static int new_session(SSL *ssl, SSL_SESSION *sess) {
    SSL_SESSION **slot = SSL_get_app_data(ssl);
    if (!slot)
        return 0;
    SSL_SESSION_free(*slot);
    *slot = sess;
    return 1;
}

sws_tls_client *sws_tls_client_new(const char *ca_file, bool verify, char *err, size_t errlen) {
    char r[256];
    sws_tls_client *c = calloc(1, sizeof(*c));
    if (c)
        c->ctx = SSL_CTX_new(TLS_client_method());
    if (!c || !c->ctx) {
        free(c);
        ERR_clear_error();
        snprintf(err, errlen, "tls: out of memory");
        return NULL;
    }
    ERR_clear_error();
    FILE *f = ca_file && ca_file[0] ? fopen(ca_file, "r") : NULL;
    if (ca_file && ca_file[0] && !f) {
        snprintf(err, errlen, "tls_ca %s: cannot open: %s", ca_file, strerror(errno));
        sws_tls_client_free(c);
        return NULL;
    }
    if (f)
        fclose(f);
    SSL_CTX_set_min_proto_version(c->ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(c->ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
    SSL_CTX_set_mode(c->ctx, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ENABLE_PARTIAL_WRITE |
                                 SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_alpn_protos(c->ctx, alpn_http11, sizeof(alpn_http11) - 1);
    int ok = ca_file && ca_file[0] ? SSL_CTX_load_verify_file(c->ctx, ca_file)
                                   : SSL_CTX_set_default_verify_paths(c->ctx);
    if (ok != 1) {
        sws_tls_why(r, sizeof(r));
        if (ca_file && ca_file[0])
            snprintf(err, errlen, "tls_ca %s: no PEM certificate could be read (%s)", ca_file, r);
        else
            snprintf(err, errlen, "tls: the system's CA paths cannot be used (%s)", r);
        sws_tls_client_free(c);
        return NULL;
    }
    SSL_CTX_set_verify(c->ctx, verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);
    /* Sessions are kept by the caller's slot (per loop and upstream), never
     * in the context's cache, which every loop would share under its lock. */
    SSL_CTX_set_session_cache_mode(c->ctx,
                                   SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(c->ctx, new_session);
    return c;
}

void sws_tls_client_free(sws_tls_client *c) {
    if (!c)
        return;
    SSL_CTX_free(c->ctx); /* engines still open keep their reference */
    free(c);
}

SSL_CTX *sws_tls_client_ctx(const sws_tls_client *c) {
    return c->ctx;
}

static bool is_ip_literal(const char *name) {
    unsigned char buf[16];
    return inet_pton(AF_INET, name, buf) == 1 || inet_pton(AF_INET6, name, buf) == 1;
}

int sws_tls_client_name(SSL *ssl, const char *name) {
    if (!name || !name[0])
        return 0;
    int ok;
    if (is_ip_literal(name)) {
        /* An address is matched against the certificate's IP entries and is
         * never sent as SNI, which carries host names only. */
        ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name);
    } else {
        ok = SSL_set_tlsext_host_name(ssl, name) == 1 && SSL_set1_host(ssl, name) == 1;
    }
    ERR_clear_error();
    return ok == 1 ? 0 : -EINVAL;
}

int sws_tls_conn_init_client(sws_tls_conn *t, const sws_tls_client *c, const char *name,
                             SSL_SESSION **slot) {
    int rc = sws_tls_conn_wrap(t, c->ctx);
    if (rc < 0)
        return rc;
    SSL_set_connect_state(t->ssl);
    if (sws_tls_client_name(t->ssl, name) < 0) {
        sws_tls_conn_free(t);
        return -EINVAL;
    }
    if (slot) {
        SSL_set_app_data(t->ssl, slot);
        /* A session that cannot be resumed any more is not offered. */
        if (*slot && !SSL_SESSION_is_resumable(*slot))
            sws_tls_client_slot_free(slot);
        if (*slot && SSL_set_session(t->ssl, *slot) != 1)
            ERR_clear_error(); /* a full handshake, then */
    }
    return 0;
}

void sws_tls_client_slot_free(SSL_SESSION **slot) {
    SSL_SESSION_free(*slot);
    *slot = NULL;
}

const char *sws_tls_verify_error(const sws_tls_conn *t) {
    return t->ssl ? X509_verify_cert_error_string(SSL_get_verify_result(t->ssl)) : "ok";
}
