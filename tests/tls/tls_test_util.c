/* Certificates in code (no openssl(1) needed for unit tests) and a pump that
 * plays the network between a client SSL and a server engine. */
#include "tls_test_util.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <string.h>

static int add_ext(X509 *x, int nid, const char *value) {
    X509V3_CTX v3;
    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
    X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &v3, nid, value);
    if (!e)
        return -1;
    int ok = X509_add_ext(x, e, -1);
    X509_EXTENSION_free(e);
    return ok ? 0 : -1;
}

int tt_make_cert(int type, const char *cert, const char *key) {
    return tt_make_cert_for(type, "DNS:localhost,IP:127.0.0.1", 86400L * 30, cert, key);
}

int tt_make_cert_for(int type, const char *san, long valid_s, const char *cert, const char *key) {
    EVP_PKEY *pk = type == TT_RSA ? EVP_RSA_gen(2048) : EVP_EC_gen("P-256");
    X509 *x = X509_new();
    int rc = -1;
    if (!pk || !x)
        goto out;
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), valid_s < 0 ? valid_s - 3600 : -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), valid_s);
    X509_set_pubkey(x, pk);
    X509_NAME *n = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)"localhost", -1, -1,
                               0);
    X509_set_issuer_name(x, n);
    if (add_ext(x, NID_basic_constraints, "critical,CA:TRUE") < 0 ||
        (san && add_ext(x, NID_subject_alt_name, san) < 0) || !X509_sign(x, pk, EVP_sha256()))
        goto out;
    FILE *f = fopen(cert, "w");
    if (!f)
        goto out;
    PEM_write_X509(f, x);
    fclose(f);
    f = fopen(key, "w");
    if (!f)
        goto out;
    PEM_write_PrivateKey(f, pk, NULL, NULL, 0, NULL, NULL);
    fclose(f);
    rc = 0;
out:
    X509_free(x);
    EVP_PKEY_free(pk);
    ERR_clear_error();
    return rc;
}

SSL_CTX *tt_client_ctx(const char *cafile) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx)
        return NULL;
    if (cafile) {
        SSL_CTX_load_verify_locations(ctx, cafile, NULL);
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    }
    return ctx;
}

int tt_client_init(tt_client *c, SSL_CTX *ctx) {
    memset(c, 0, sizeof(*c));
    c->ssl = SSL_new(ctx);
    c->in = BIO_new(BIO_s_mem());
    c->out = BIO_new(BIO_s_mem());
    if (!c->ssl || !c->in || !c->out)
        return -1;
    BIO_set_mem_eof_return(c->in, -1);
    BIO_set_mem_eof_return(c->out, -1);
    SSL_set_bio(c->ssl, c->in, c->out);
    SSL_set_connect_state(c->ssl);
    SSL_set_tlsext_host_name(c->ssl, "localhost");
    SSL_set1_host(c->ssl, "localhost");
    return 0;
}

void tt_client_free(tt_client *c) {
    /* keep the session resumable, as a client that closes TCP would */
    if (c->ssl && !c->failed && SSL_is_init_finished(c->ssl))
        SSL_set_shutdown(c->ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
    SSL_free(c->ssl);
    memset(c, 0, sizeof(*c));
}

void tt_pump(tt_client *c, sws_tls_conn *t, tt_server_side *s) {
    char buf[16384];
    for (int round = 0; round < 64; round++) {
        bool moved = false;
        /* the client moves first: its hello, its records */
        if (!c->failed && !c->closed) {
            if (!SSL_is_init_finished(c->ssl)) {
                int r = SSL_do_handshake(c->ssl);
                int e = r == 1 ? 0 : SSL_get_error(c->ssl, r);
                if (r != 1 && e != SSL_ERROR_WANT_READ)
                    c->failed = true;
            }
            size_t n;
            while (!c->failed && SSL_is_init_finished(c->ssl) &&
                   SSL_read_ex(c->ssl, c->got + c->ngot, sizeof(c->got) - c->ngot, &n) == 1) {
                c->ngot += n;
                moved = true;
            }
            if (SSL_get_error(c->ssl, 0) == SSL_ERROR_ZERO_RETURN)
                c->closed = true;
            ERR_clear_error();
        }
        int n;
        while ((n = BIO_read(c->out, buf, sizeof(buf))) > 0) {
            sws_tls_feed(t, buf, (size_t)n);
            moved = true;
        }
        int r;
        while ((r = sws_tls_read(t, s->got + s->ngot, sizeof(s->got) - s->ngot)) > 0) {
            s->ngot += (size_t)r;
            moved = true;
        }
        s->last = r;
        size_t k;
        while ((k = sws_tls_take(t, buf, sizeof(buf))) > 0) {
            BIO_write(c->in, buf, (int)k);
            moved = true;
        }
        if (!moved)
            break;
    }
}

sws_tls_server *tt_server_new(const sws_tls_config *t, int n, sws_tls_keys *keys, char *err,
                              size_t errlen) {
    sws_tls_cert_config cc;
    memset(&cc, 0, sizeof(cc));
    snprintf(cc.cert, sizeof(cc.cert), "%s", t->cert);
    snprintf(cc.key, sizeof(cc.key), "%s", t->key);
    snprintf(cc.ocsp, sizeof(cc.ocsp), "%s", t->ocsp);
    sws_tls_build b = {.cfg = t, .certs = &cc, .ncerts = 1, .nloops = n, .keys = keys};
    return sws_tls_server_new(&b, err, errlen);
}
