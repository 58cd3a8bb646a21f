/* TLS-ALPN-01 (RFC 8737) on the server engine: the acmeIdentifier
 * certificate parsed back with OpenSSL (self-signed, one dNSName, the
 * critical extension holding the SHA-256 of the key authorization), and
 * handshakes through memory: acme-tls/1 answered with it and nothing else
 * while a challenge is pending for the name, refused (no_application_protocol)
 * without one, and ordinary handshakes for the same name untouched. */
#include "tls_acme.h"
#include "tls_test_util.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509v3.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static const char keyauth[] =
    "evaGxfADs6pSRb2LAv9IZf17Dt3juxGJ-PCt92wr-oA.9jg46WB3rR_AHD-EBXdN7cBkH1WOu0tA3M9fm21mqTI";

/* The acmeIdentifier extension of x checked: critical, and its value the DER
 * OCTET STRING of SHA-256(ka). */
static void check_identifier(X509 *x, const char *ka) {
    ASN1_OBJECT *oid = OBJ_txt2obj("1.3.6.1.5.5.7.1.31", 1);
    int at = X509_get_ext_by_OBJ(x, oid, -1);
    ASN1_OBJECT_free(oid);
    assert_true(at >= 0);
    X509_EXTENSION *ext = X509_get_ext(x, at);
    assert_int_equal(X509_EXTENSION_get_critical(ext), 1);
    const ASN1_OCTET_STRING *data = X509_EXTENSION_get_data(ext);
    const unsigned char *p = ASN1_STRING_get0_data(data);
    ASN1_OCTET_STRING *inner = d2i_ASN1_OCTET_STRING(NULL, &p, ASN1_STRING_length(data));
    assert_non_null(inner);
    assert_ptr_equal(p, ASN1_STRING_get0_data(data) + ASN1_STRING_length(data)); /* all of it */
    unsigned char md[32];
    unsigned int mdlen = 0;
    EVP_Digest(ka, strlen(ka), md, &mdlen, EVP_sha256(), NULL);
    assert_int_equal(ASN1_STRING_length(inner), 32);
    assert_memory_equal(ASN1_STRING_get0_data(inner), md, 32);
    ASN1_OCTET_STRING_free(inner);
}

/* subjectAltName of x: exactly one dNSName, name. */
static void check_san(X509 *x, const char *name) {
    int crit = -1;
    GENERAL_NAMES *gens = X509_get_ext_d2i(x, NID_subject_alt_name, &crit, NULL);
    assert_non_null(gens);
    assert_int_equal(sk_GENERAL_NAME_num(gens), 1);
    const GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, 0);
    assert_int_equal(g->type, GEN_DNS);
    assert_int_equal(ASN1_STRING_length(g->d.dNSName), (int)strlen(name));
    assert_memory_equal(ASN1_STRING_get0_data(g->d.dNSName), name, strlen(name));
    GENERAL_NAMES_free(gens);
}

static void identifier_certificate(void **state) {
    (void)state;
    X509 *x;
    EVP_PKEY *k;
    assert_int_equal(sws_tls_acme_cert("c.test", keyauth, &x, &k), 0);
    check_identifier(x, keyauth);
    check_san(x, "c.test");
    /* No other identifier: the subject names no host. */
    char cn[128];
    X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, cn, sizeof(cn));
    assert_null(strstr(cn, "c.test"));
    /* Self-signed by its own key. */
    assert_int_equal(X509_NAME_cmp(X509_get_subject_name(x), X509_get_issuer_name(x)), 0);
    assert_int_equal(X509_verify(x, k), 1);
    assert_int_equal(X509_check_private_key(x, k), 1);
    /* Another key authorization, another digest. */
    X509 *y;
    EVP_PKEY *k2;
    assert_int_equal(sws_tls_acme_cert("c.test", "other.thumb", &y, &k2), 0);
    check_identifier(y, "other.thumb");
    X509_free(y);
    EVP_PKEY_free(k2);
    X509_free(x);
    EVP_PKEY_free(k);
    /* A name that would smuggle a second SAN, or none. */
    assert_int_equal(sws_tls_acme_cert("a.test,DNS:b.test", keyauth, &x, &k), -EINVAL);
    assert_null(x);
    assert_int_equal(sws_tls_acme_cert("", keyauth, &x, &k), -EINVAL);
    assert_int_equal(sws_tls_acme_cert("a.test", "", &x, &k), -EINVAL);
    assert_int_equal(ERR_peek_error(), 0);
}

static void offered_lists(void **state) {
    (void)state;
    assert_true(sws_tls_acme_offered((const unsigned char *)"\x0a"
                                                            "acme-tls/1",
                                     11));
    assert_true(sws_tls_acme_offered((const unsigned char *)"\x02h2\x0a"
                                                            "acme-tls/1",
                                     14));
    assert_false(sws_tls_acme_offered((const unsigned char *)"\x02h2\x08http/1.1", 12));
    assert_false(sws_tls_acme_offered((const unsigned char *)"\x0a"
                                                             "acme-tls/2",
                                      11));
    assert_false(sws_tls_acme_offered((const unsigned char *)"\x0b"
                                                             "acme-tls/1",
                                      11)); /* short */
    assert_false(sws_tls_acme_offered((const unsigned char *)"\x00", 1));
}

/* ---- handshakes ------------------------------------------------------------ */

static char dir[64];
static sws_tls_server *srv;
static SSL_CTX *cctx;
static int alert_read; /* the last alert the client read (its description) */

static void client_info(const SSL *ssl, int where, int ret) {
    (void)ssl;
    if (where & SSL_CB_READ_ALERT)
        alert_read = ret & 0xff;
}

static int setup(void **state) {
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/sws-acme-tls-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    sws_tls_config t;
    sws_tls_config_defaults(&t);
    t.tickets = false;
    t.alpn_h2 = true;
    snprintf(t.cert, sizeof(t.cert), "%s/c.pem", dir);
    snprintf(t.key, sizeof(t.key), "%s/c.key", dir);
    if (tt_make_cert_for(TT_EC, "DNS:c.test,DNS:d.test", 86400, t.cert, t.key))
        return -1;
    char err[512];
    srv = tt_server_new(&t, 1, NULL, err, sizeof(err));
    if (!srv)
        fprintf(stderr, "%s\n", err);
    cctx = tt_client_ctx(NULL);
    if (cctx)
        SSL_CTX_set_info_callback(cctx, client_info);
    return srv && cctx ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    sws_tls_server_free(srv);
    SSL_CTX_free(cctx);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

typedef struct hs {
    tt_client c;
    sws_tls_conn t;
    tt_server_side s;
} hs;

/* A handshake for name offering the ALPN list alpn (wire form). */
static void shake(hs *h, const char *name, const char *alpn, unsigned alen) {
    memset(h, 0, sizeof(*h));
    alert_read = -1;
    assert_int_equal(tt_client_init(&h->c, cctx), 0);
    SSL_set_tlsext_host_name(h->c.ssl, name);
    SSL_set_alpn_protos(h->c.ssl, (const unsigned char *)alpn, alen);
    assert_int_equal(sws_tls_conn_init(&h->t, srv, 0), 0);
    tt_pump(&h->c, &h->t, &h->s);
}

static void unshake(hs *h) {
    sws_tls_conn_free(&h->t);
    tt_client_free(&h->c);
}

#define ACME                                                                                       \
    "\x0a"                                                                                         \
    "acme-tls/1"
#define ACME_H11                                                                                   \
    "\x0a"                                                                                         \
    "acme-tls/1\x08http/1.1"

/* Refused: the client sees no_application_protocol, the server counts it. */
static void assert_refused(hs *h) {
    assert_false(h->t.established);
    assert_true(h->t.failed);
    assert_false(h->t.acme_challenge);
    assert_true(h->c.failed);
    assert_int_equal(h->t.fail, SWS_TLS_FAIL_NO_SHARED);
    assert_int_equal(alert_read, SSL_AD_NO_APPLICATION_PROTOCOL); /* 120 */
}

static void refused_without_challenge(void **state) {
    (void)state;
    hs h;
    /* None pending at all, then one pending for another name. */
    for (int round = 0; round < 2; round++) {
        shake(&h, "c.test", ACME, sizeof(ACME) - 1);
        assert_refused(&h);
        unshake(&h);
        shake(&h, "c.test", ACME_H11, sizeof(ACME_H11) - 1); /* beside another protocol */
        assert_refused(&h);
        unshake(&h);
        shake(&h, NULL, ACME, sizeof(ACME) - 1); /* no name */
        assert_refused(&h);
        unshake(&h);
        assert_int_equal(sws_tls_acme_put("d.test", keyauth), 0);
    }
    sws_tls_acme_drop("d.test");
    assert_false(sws_tls_acme_live());
    ERR_clear_error();
}

static void answered_while_pending(void **state) {
    (void)state;
    assert_int_equal(sws_tls_acme_put("c.test", keyauth), 0);
    assert_true(sws_tls_acme_live());
    const char *names[] = {"c.test", "C.Test"};
    for (int i = 0; i < 2; i++) {
        hs h;
        shake(&h, names[i], ACME_H11, sizeof(ACME_H11) - 1);
        assert_true(h.t.established);
        assert_true(h.t.acme_challenge);
        const unsigned char *p;
        unsigned n;
        SSL_get0_alpn_selected(h.c.ssl, &p, &n);
        assert_int_equal(n, 10); /* exactly acme-tls/1 */
        assert_memory_equal(p, "acme-tls/1", 10);
        X509 *peer = SSL_get1_peer_certificate(h.c.ssl);
        assert_non_null(peer);
        check_identifier(peer, keyauth);
        check_san(peer, "c.test");
        X509_free(peer);
        assert_true(SSL_version(h.c.ssl) >= TLS1_2_VERSION);
        unshake(&h);
    }
    /* An ordinary handshake for the same name gets its own certificate. */
    hs h;
    shake(&h, "c.test", "\x02h2", 3);
    assert_true(h.t.established);
    assert_false(h.t.acme_challenge);
    assert_true(sws_tls_alpn_h2(&h.t));
    X509 *peer = SSL_get1_peer_certificate(h.c.ssl);
    ASN1_OBJECT *oid = OBJ_txt2obj("1.3.6.1.5.5.7.1.31", 1);
    assert_int_equal(X509_get_ext_by_OBJ(peer, oid, -1), -1);
    ASN1_OBJECT_free(oid);
    X509_free(peer);
    unshake(&h);
    /* Withdrawn: refused again. */
    sws_tls_acme_drop("c.test");
    shake(&h, "c.test", ACME, sizeof(ACME) - 1);
    assert_refused(&h);
    unshake(&h);
    ERR_clear_error();
}

/* A handshake that took the challenge's context keeps it past the drop. */
static void drop_during_handshake(void **state) {
    (void)state;
    assert_int_equal(sws_tls_acme_put("c.test", keyauth), 0);
    hs h;
    memset(&h, 0, sizeof(h));
    assert_int_equal(tt_client_init(&h.c, cctx), 0);
    SSL_set_tlsext_host_name(h.c.ssl, "c.test");
    SSL_set_alpn_protos(h.c.ssl, (const unsigned char *)ACME, sizeof(ACME) - 1);
    assert_int_equal(sws_tls_conn_init(&h.t, srv, 0), 0);
    /* The ClientHello only, then the drop, then the rest. */
    SSL_do_handshake(h.c.ssl);
    char buf[16384];
    int n = BIO_read(h.c.out, buf, sizeof(buf));
    assert_true(n > 0);
    assert_int_equal(sws_tls_feed(&h.t, buf, (size_t)n), 0);
    sws_tls_handshake(&h.t);
    sws_tls_acme_drop("c.test");
    tt_pump(&h.c, &h.t, &h.s);
    assert_true(h.t.established);
    assert_true(h.t.acme_challenge);
    unshake(&h);
    /* The table is bounded. */
    char name[32];
    int put = 0;
    for (int i = 0; i < SWS_TLS_ACME_MAX + 2; i++) {
        snprintf(name, sizeof(name), "n%d.test", i);
        put += sws_tls_acme_put(name, keyauth) == 0;
    }
    assert_int_equal(put, SWS_TLS_ACME_MAX);
    for (int i = 0; i < SWS_TLS_ACME_MAX + 2; i++) {
        snprintf(name, sizeof(name), "n%d.test", i);
        sws_tls_acme_drop(name);
    }
    assert_false(sws_tls_acme_live());
}

int main(void) {
    const struct CMUnitTest cert[] = {
        cmocka_unit_test(identifier_certificate),
        cmocka_unit_test(offered_lists),
    };
    const struct CMUnitTest shakes[] = {
        cmocka_unit_test(refused_without_challenge),
        cmocka_unit_test(answered_while_pending),
        cmocka_unit_test(drop_during_handshake),
    };
    int rc = cmocka_run_group_tests_name("tls_acme_cert", cert, NULL, NULL);
    return rc | cmocka_run_group_tests_name("tls_acme_alpn", shakes, setup, teardown);
}
