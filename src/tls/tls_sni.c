/* The callbacks a server context carries for the client's server name:
 * - ClientHello: the name read straight from the extension (no copy, no
 *   allocation) and handed to tls_server.c, which moves the handshake to the
 *   context of its certificates, or refuses it;
 * - servername: acknowledges a name that chose a certificate (RFC 6066: the
 *   server that used it SHALL say so), which also keeps it in the session.
 * A session resumes under the name it was made for only: each name has its
 * own session-ID context (tls_server.c), which OpenSSL compares on
 * resumption, by session ID or by ticket, TLS 1.2 and 1.3 alike (pinned by
 * tests/tls/test_tls_sni.c, no_resumption_across_names).
 * A ClientHello that offers ALPN acme-tls/1 is a TLS-ALPN-01 validation (RFC
 * 8737): answered on the challenge context of its name, or refused. */
#include "tls_acme.h"
#include "tls_internal.h"

#include <openssl/err.h>
#include <string.h>

static sws_tls_conn *conn_of(SSL *ssl) {
    return SSL_get_ex_data(ssl, sws_tls_conn_index());
}

/* The host_name of a server_name extension (RFC 6066 section 3): 0 when the
 * extension holds no well-formed one, which OpenSSL then refuses itself. */
static size_t host_name(const unsigned char *p, size_t len, const char **name) {
    if (len < 5 || (size_t)((p[0] << 8) | p[1]) != len - 2 || p[2] != 0)
        return 0;
    size_t n = (size_t)((p[3] << 8) | p[4]);
    if (n == 0 || n > len - 5)
        return 0;
    *name = (const char *)p + 5;
    return n;
}

/* acme-tls/1 is for validation only (RFC 8737 section 4): with a challenge
 * pending for the name, its self-signed certificate and exactly that
 * protocol, and the connection closes after the handshake (tls_conn.c);
 * without one, no_application_protocol (RFC 7301 section 3.2), whatever else
 * the client offers. */
static int acme_challenge(SSL *ssl, sws_tls_conn *t, const char *name, size_t len, int *al) {
    SSL_CTX *ctx = sws_tls_acme_find(name, len);
    if (!ctx || !SSL_set_SSL_CTX(ssl, ctx)) {
        SSL_CTX_free(ctx);
        ERR_clear_error();
        t->refused_alpn = true;
        *al = SSL_AD_NO_APPLICATION_PROTOCOL;
        return SSL_CLIENT_HELLO_ERROR;
    }
    SSL_CTX_free(ctx); /* the SSL holds its own reference */
    t->acme_challenge = true;
    t->sni_known = true;
    return SSL_CLIENT_HELLO_SUCCESS;
}

static int client_hello(SSL *ssl, int *al, void *arg) {
    (void)arg;
    sws_tls_conn *t = conn_of(ssl);
    if (!t || !t->srv)
        return SSL_CLIENT_HELLO_SUCCESS;
    const unsigned char *p;
    size_t len = 0;
    const char *name = "";
    if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_server_name, &p, &len) == 1)
        len = host_name(p, len, &name);
    else
        len = 0;
    const unsigned char *alpn;
    size_t alen;
    if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_application_layer_protocol_negotiation, &alpn,
                                  &alen) == 1 &&
        alen > 2 && sws_tls_acme_offered(alpn + 2, alen - 2))
        return acme_challenge(ssl, t, name, len, al);
    return sws_tls_server_choose(ssl, t, name, len, al);
}

static int servername(SSL *ssl, int *al, void *arg) {
    (void)al;
    (void)arg;
    sws_tls_conn *t = conn_of(ssl);
    return t && t->sni_known ? SSL_TLSEXT_ERR_OK : SSL_TLSEXT_ERR_NOACK;
}

void sws_tls_sni_install(SSL_CTX *ctx) {
    SSL_CTX_set_client_hello_cb(ctx, client_hello, NULL);
    SSL_CTX_set_tlsext_servername_callback(ctx, servername);
}
