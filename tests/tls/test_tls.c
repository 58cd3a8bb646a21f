/* The TLS engine against a real OpenSSL client through memory: handshakes,
 * data both ways, ALPN, resumption by ticket (across loops and key rotations)
 * and by session ID, and the hostile cases (garbage, a truncated hello, TLS
 * 1.0, no shared ALPN), each ending in a classified failure, never a hang. */
#include "tls_test_util.h"

#include <openssl/err.h>
#include <openssl/ocsp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static char dir[64], cert[128], key[128], rsa_cert[128], rsa_key[128];
static sws_tls_keys *keys;

static int group_setup(void **state) {
    snprintf(dir, sizeof(dir), "/tmp/sws-tls-test-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(cert, sizeof(cert), "%s/ec.pem", dir);
    snprintf(key, sizeof(key), "%s/ec.key", dir);
    snprintf(rsa_cert, sizeof(rsa_cert), "%s/rsa.pem", dir);
    snprintf(rsa_key, sizeof(rsa_key), "%s/rsa.key", dir);
    keys = sws_tls_keys_new();
    return tt_make_cert(TT_EC, cert, key) || tt_make_cert(TT_RSA, rsa_cert, rsa_key) || !keys;
}

static int group_teardown(void **state) {
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    sws_tls_keys_free(keys);
    return system(cmd) == 0 ? 0 : -1;
}

static void conf(sws_tls_config *t, const char *c, const char *k) {
    sws_tls_config_defaults(t);
    snprintf(t->cert, sizeof(t->cert), "%s", c);
    snprintf(t->key, sizeof(t->key), "%s", k);
}

static sws_tls_server *server(int n) {
    sws_tls_config t;
    char err[256];
    conf(&t, cert, key);
    sws_tls_server *s = tt_server_new(&t, n, keys, err, sizeof(err));
    if (!s)
        fail_msg("%s", err);
    return s;
}

static const char req[] = "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";
static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

/* One connection: handshake, a request one way, an answer the other. */
static void exchange(SSL_CTX *cctx, sws_tls_server *srv, int loop, SSL_SESSION *use,
                     SSL_SESSION **keep, bool *resumed) {
    tt_client c;
    sws_tls_conn t;
    tt_server_side s = {0};
    assert_int_equal(tt_client_init(&c, cctx), 0);
    if (use)
        SSL_set_session(c.ssl, use);
    assert_int_equal(sws_tls_conn_init(&t, srv, loop), 0);
    tt_pump(&c, &t, &s);
    assert_true(t.established);
    assert_true(SSL_is_init_finished(c.ssl));
    assert_int_equal(SSL_write(c.ssl, req, (int)strlen(req)), (int)strlen(req));
    tt_pump(&c, &t, &s);
    assert_int_equal(s.ngot, strlen(req));
    assert_memory_equal(s.got, req, strlen(req));
    assert_int_equal(sws_tls_write(&t, resp, strlen(resp)), (int)strlen(resp));
    tt_pump(&c, &t, &s);
    assert_int_equal(c.ngot, strlen(resp));
    assert_memory_equal(c.got, resp, strlen(resp));
    if (resumed)
        *resumed = sws_tls_resumed(&t);
    if (keep)
        *keep = SSL_get1_session(c.ssl);
    sws_tls_conn_free(&t);
    tt_client_free(&c);
}

static void handshake_and_data_both_ways(void **state) {
    sws_tls_server *s = server(1);
    SSL_CTX *cctx = tt_client_ctx(cert);
    static const unsigned char alpn[] = "\x02h2\x08http/1.1";
    SSL_CTX_set_alpn_protos(cctx, alpn, sizeof(alpn) - 1);
    tt_client c;
    sws_tls_conn t;
    tt_server_side ss = {0};
    assert_int_equal(tt_client_init(&c, cctx), 0);
    assert_int_equal(sws_tls_conn_init(&t, s, 0), 0);
    /* Before the handshake nothing can be written. */
    assert_int_equal(sws_tls_write(&t, "x", 1), SWS_TLS_WANT);
    tt_pump(&c, &t, &ss);
    assert_true(t.established);
    assert_int_equal(SSL_get_verify_result(c.ssl), X509_V_OK);
    assert_string_equal(sws_tls_version(&t), "TLSv1.3");
    const unsigned char *sel;
    unsigned len;
    SSL_get0_alpn_selected(c.ssl, &sel, &len);
    assert_int_equal(len, 8);
    assert_memory_equal(sel, "http/1.1", 8);
    /* A pipelined pair of requests in one write, answered by two writes. */
    char two[256];
    snprintf(two, sizeof(two), "%s%s", req, req);
    SSL_write(c.ssl, two, (int)strlen(two));
    tt_pump(&c, &t, &ss);
    assert_int_equal(ss.ngot, strlen(two));
    assert_int_equal(ss.last, SWS_TLS_WANT);
    sws_tls_write(&t, resp, strlen(resp));
    sws_tls_write(&t, resp, strlen(resp));
    tt_pump(&c, &t, &ss);
    assert_int_equal(c.ngot, 2 * strlen(resp));
    /* A large answer crosses several records. */
    static char big[40000];
    memset(big, 'b', sizeof(big));
    size_t off = 0;
    while (off < sizeof(big)) {
        int n = sws_tls_write(&t, big + off, sizeof(big) - off);
        assert_true(n > 0);
        off += (size_t)n;
    }
    c.ngot = 0;
    tt_pump(&c, &t, &ss);
    assert_int_equal(c.ngot, sizeof(big));
    /* close_notify both ways. */
    assert_int_equal(sws_tls_close_notify(&t), 0);
    tt_pump(&c, &t, &ss);
    assert_true(c.closed);
    SSL_shutdown(c.ssl);
    tt_pump(&c, &t, &ss);
    assert_int_equal(ss.last, SWS_TLS_EOF);
    assert_false(t.failed);
    sws_tls_conn_free(&t);
    tt_client_free(&c);
    SSL_CTX_free(cctx);
    sws_tls_server_free(s);
}

static void tls12_and_rsa(void **state) {
    sws_tls_config tc;
    char err[256];
    conf(&tc, rsa_cert, rsa_key);
    sws_tls_server *s = tt_server_new(&tc, 1, keys, err, sizeof(err));
    assert_non_null(s);
    SSL_CTX *cctx = tt_client_ctx(rsa_cert);
    SSL_CTX_set_max_proto_version(cctx, TLS1_2_VERSION);
    tt_client c;
    sws_tls_conn t;
    tt_server_side ss = {0};
    tt_client_init(&c, cctx);
    sws_tls_conn_init(&t, s, 0);
    tt_pump(&c, &t, &ss);
    assert_true(t.established);
    assert_string_equal(sws_tls_version(&t), "TLSv1.2");
    /* the client's order wins (Mozilla intermediate): any ECDHE-RSA AEAD suite */
    assert_memory_equal(SSL_get_cipher_name(c.ssl), "ECDHE-RSA-", 10);
    sws_tls_conn_free(&t);
    tt_client_free(&c);
    SSL_CTX_free(cctx);
    sws_tls_server_free(s);
}

/* A ticket from loop 0 resumes on loop 1 (same key ring), still after one
 * rotation (an older key: renewed), and no more after three. */
static void resumption_with_ticket(void **state) {
    sws_tls_server *s = server(2);
    SSL_CTX *cctx = tt_client_ctx(cert);
    SSL_SESSION *sess = NULL, *sess2 = NULL;
    bool resumed = true;
    exchange(cctx, s, 0, NULL, &sess, &resumed);
    assert_false(resumed);
    assert_non_null(sess);
    assert_true(SSL_SESSION_is_resumable(sess));
    exchange(cctx, s, 1, sess, &sess2, &resumed);
    assert_true(resumed);
    SSL_SESSION_free(sess2);
    assert_int_equal(sws_tls_keys_rotate(keys), 0);
    exchange(cctx, s, 0, sess, &sess2, &resumed);
    assert_true(resumed);
    SSL_SESSION_free(sess2);
    for (int i = 0; i < 3; i++)
        sws_tls_keys_rotate(keys);
    exchange(cctx, s, 1, sess, NULL, &resumed);
    assert_false(resumed);
    SSL_SESSION_free(sess);
    /* TLS 1.2 with tickets. */
    SSL_CTX_set_max_proto_version(cctx, TLS1_2_VERSION);
    exchange(cctx, s, 0, NULL, &sess, &resumed);
    exchange(cctx, s, 1, sess, NULL, &resumed);
    assert_true(resumed);
    SSL_SESSION_free(sess);
    SSL_CTX_free(cctx);
    sws_tls_server_free(s);
}

/* Tickets off, TLS 1.2: the session ID cache is per loop. */
static void resumption_with_session_cache(void **state) {
    sws_tls_config tc;
    char err[256];
    conf(&tc, cert, key);
    tc.tickets = false;
    sws_tls_server *s = tt_server_new(&tc, 2, NULL, err, sizeof(err));
    assert_non_null(s);
    SSL_CTX *cctx = tt_client_ctx(cert);
    SSL_CTX_set_max_proto_version(cctx, TLS1_2_VERSION);
    SSL_SESSION *sess = NULL;
    bool resumed;
    exchange(cctx, s, 0, NULL, &sess, &resumed);
    exchange(cctx, s, 0, sess, NULL, &resumed);
    assert_true(resumed);
    exchange(cctx, s, 1, sess, NULL, &resumed);
    assert_false(resumed); /* another loop's cache */
    SSL_SESSION_free(sess);
    SSL_CTX_free(cctx);
    sws_tls_server_free(s);
}

static int feed_only(sws_tls_conn *t, const void *p, size_t n) {
    char buf[4096];
    sws_tls_feed(t, p, n);
    return sws_tls_read(t, buf, sizeof(buf));
}

static void garbage_is_not_tls(void **state) {
    sws_tls_server *s = server(1);
    sws_tls_conn t;
    sws_tls_conn_init(&t, s, 0);
    assert_int_equal(feed_only(&t, req, strlen(req)), -EPROTO);
    assert_int_equal(t.fail, SWS_TLS_FAIL_NOT_TLS);
    assert_int_equal(ERR_peek_error(), 0);
    sws_tls_conn_free(&t);
    /* A handshake record header with nonsense behind it. */
    static const unsigned char junk[] = {0x16, 0x03, 0x01, 0x00, 0x08, 0x01, 0x00,
                                         0x00, 0x04, 0xde, 0xad, 0xbe, 0xef};
    sws_tls_conn_init(&t, s, 0);
    assert_int_equal(feed_only(&t, junk, sizeof(junk)), -EPROTO);
    assert_int_equal(t.fail, SWS_TLS_FAIL_PROTOCOL);
    assert_true(sws_tls_pending(&t) > 0); /* an alert for the peer */
    unsigned char alert[64];
    assert_true(sws_tls_take(&t, alert, sizeof(alert)) >= 7);
    assert_int_equal(alert[0], 0x15);
    /* A failed engine stays failed. */
    assert_int_equal(sws_tls_write(&t, "x", 1), -EPROTO);
    sws_tls_conn_free(&t);
    sws_tls_server_free(s);
}

/* The first bytes of a real ClientHello. */
static size_t client_hello(SSL_CTX *cctx, unsigned char *buf, size_t cap) {
    tt_client c;
    tt_client_init(&c, cctx);
    SSL_do_handshake(c.ssl);
    int n = BIO_read(c.out, buf, (int)cap);
    tt_client_free(&c);
    ERR_clear_error();
    return n > 0 ? (size_t)n : 0;
}

static void truncated_hello_then_eof(void **state) {
    sws_tls_server *s = server(1);
    SSL_CTX *cctx = tt_client_ctx(NULL);
    unsigned char hello[4096];
    size_t n = client_hello(cctx, hello, sizeof(hello));
    assert_true(n > 100);
    sws_tls_conn t;
    sws_tls_conn_init(&t, s, 0);
    assert_int_equal(feed_only(&t, hello, n / 2), SWS_TLS_WANT);
    assert_false(t.failed);
    sws_tls_peer_eof(&t);
    assert_true(t.failed);
    assert_int_equal(t.fail, SWS_TLS_FAIL_TRUNCATED);
    sws_tls_conn_free(&t);
    /* Or it stalls: the handshake timeout ends it. */
    sws_tls_conn_init(&t, s, 0);
    assert_int_equal(feed_only(&t, hello, 5), SWS_TLS_WANT);
    sws_tls_timeout(&t);
    assert_int_equal(t.fail, SWS_TLS_FAIL_TIMEOUT);
    sws_tls_conn_free(&t);
    SSL_CTX_free(cctx);
    sws_tls_server_free(s);
}

static void tls10_refused_with_alert(void **state) {
    sws_tls_server *s = server(1);
    SSL_CTX *cctx = tt_client_ctx(NULL);
    SSL_CTX_set_security_level(cctx, 0);
    SSL_CTX_set_cipher_list(cctx, "DEFAULT@SECLEVEL=0");
    SSL_CTX_set_min_proto_version(cctx, TLS1_VERSION);
    SSL_CTX_set_max_proto_version(cctx, TLS1_VERSION);
    unsigned char hello[4096];
    size_t n = client_hello(cctx, hello, sizeof(hello));
    assert_true(n > 50);
    sws_tls_conn t;
    sws_tls_conn_init(&t, s, 0);
    assert_int_equal(feed_only(&t, hello, n), -EPROTO);
    assert_int_equal(t.fail, SWS_TLS_FAIL_VERSION);
    unsigned char alert[64];
    size_t k = sws_tls_take(&t, alert, sizeof(alert));
    assert_int_equal(k, 7);
    assert_int_equal(alert[0], 0x15); /* alert record */
    assert_int_equal(alert[6], 70);   /* protocol_version */
    sws_tls_conn_free(&t);
    SSL_CTX_free(cctx);
    sws_tls_server_free(s);
}

static void alpn_without_http11_refused(void **state) {
    sws_tls_server *s = server(1);
    SSL_CTX *cctx = tt_client_ctx(NULL);
    static const unsigned char alpn[] = "\x02h2";
    SSL_CTX_set_alpn_protos(cctx, alpn, sizeof(alpn) - 1);
    tt_client c;
    sws_tls_conn t;
    tt_server_side ss = {0};
    tt_client_init(&c, cctx);
    sws_tls_conn_init(&t, s, 0);
    tt_pump(&c, &t, &ss);
    assert_true(t.failed);
    assert_int_equal(t.fail, SWS_TLS_FAIL_NO_SHARED);
    assert_true(c.failed); /* it got the alert */
    sws_tls_conn_free(&t);
    tt_client_free(&c);
    SSL_CTX_free(cctx);
    sws_tls_server_free(s);
}

static void ocsp_stapled(void **state) {
    char path[160], err[256];
    snprintf(path, sizeof(path), "%s/ocsp.der", dir);
    /* A well-formed response ("try later") is enough to prove the stapling. */
    OCSP_RESPONSE *r = OCSP_response_create(OCSP_RESPONSE_STATUS_TRYLATER, NULL);
    unsigned char *der = NULL;
    int len = i2d_OCSP_RESPONSE(r, &der);
    OCSP_RESPONSE_free(r);
    FILE *f = fopen(path, "wb");
    fwrite(der, 1, (size_t)len, f);
    fclose(f);
    sws_tls_config tc;
    conf(&tc, cert, key);
    snprintf(tc.ocsp, sizeof(tc.ocsp), "%s", path);
    sws_tls_server *s = tt_server_new(&tc, 1, keys, err, sizeof(err));
    assert_non_null(s);
    sws_tls_info info;
    sws_tls_server_info(s, &info);
    assert_true(info.ocsp);
    assert_false(info.ktls_live);
    SSL_CTX *cctx = tt_client_ctx(cert);
    tt_client c;
    sws_tls_conn t;
    tt_server_side ss = {0};
    tt_client_init(&c, cctx);
    SSL_set_tlsext_status_type(c.ssl, TLSEXT_STATUSTYPE_ocsp);
    sws_tls_conn_init(&t, s, 0);
    tt_pump(&c, &t, &ss);
    assert_true(t.established);
    const unsigned char *got;
    long glen = SSL_get_tlsext_status_ocsp_resp(c.ssl, &got);
    assert_int_equal(glen, len);
    assert_memory_equal(got, der, (size_t)len);
    OPENSSL_free(der);
    sws_tls_conn_free(&t);
    tt_client_free(&c);
    SSL_CTX_free(cctx);
    sws_tls_server_free(s);
    /* Not an OCSP response: refused by name. */
    f = fopen(path, "wb");
    fputs("not der", f);
    fclose(f);
    assert_null(tt_server_new(&tc, 1, keys, err, sizeof(err)));
    assert_non_null(strstr(err, "not a DER OCSP response"));
}

static void bad_material_is_a_clear_error(void **state) {
    sws_tls_config tc;
    char err[256];
    conf(&tc, cert, rsa_key);
    assert_null(tt_server_new(&tc, 2, keys, err, sizeof(err)));
    assert_non_null(strstr(err, "does not match"));
    conf(&tc, "/nonexistent/cert.pem", key);
    assert_null(tt_server_new(&tc, 2, keys, err, sizeof(err)));
    assert_non_null(strstr(err, "cannot open"));
    conf(&tc, key, key); /* a key where the certificate should be */
    assert_null(tt_server_new(&tc, 2, keys, err, sizeof(err)));
    assert_non_null(strstr(err, "no PEM certificate"));
    conf(&tc, cert, key);
    snprintf(tc.ciphers, sizeof(tc.ciphers), "NOT-A-CIPHER");
    assert_null(tt_server_new(&tc, 2, keys, err, sizeof(err)));
    assert_non_null(strstr(err, "[tls] ciphers"));
    assert_int_equal(ERR_peek_error(), 0);
}

/* A reload builds a new server; a connection open on the old one finishes
 * on it after the old server object is gone (SSL_CTX references). */
static void old_context_outlives_reload(void **state) {
    sws_tls_server *old = server(1);
    SSL_CTX *cctx = tt_client_ctx(cert);
    tt_client c;
    sws_tls_conn t;
    tt_server_side ss = {0};
    tt_client_init(&c, cctx);
    sws_tls_conn_init(&t, old, 0);
    tt_pump(&c, &t, &ss);
    assert_true(t.established);
    sws_tls_server_free(old);
    SSL_write(c.ssl, req, (int)strlen(req));
    tt_pump(&c, &t, &ss);
    assert_int_equal(ss.ngot, strlen(req));
    sws_tls_conn_free(&t);
    tt_client_free(&c);
    SSL_CTX_free(cctx);
}

static void config_keys(void **state) {
    sws_tls_config t;
    char err[256];
    sws_tls_config_defaults(&t);
    assert_int_equal(t.protocols, SWS_TLS_V12 | SWS_TLS_V13);
    assert_int_equal(sws_tls_config_set(&t, "protocols", "TLSv1.3", err, sizeof(err)), 0);
    assert_int_equal(t.protocols, SWS_TLS_V13);
    assert_int_equal(sws_tls_config_set(&t, "protocols", "TLSv1 TLSv1.2", err, sizeof(err)),
                     -EINVAL);
    assert_non_null(strstr(err, "TLSv1 is not offered"));
    assert_int_equal(sws_tls_config_set(&t, "ticket_key_rotate", "10s", err, sizeof(err)), -EINVAL);
    assert_int_equal(sws_tls_config_set(&t, "ticket_key_rotate", "2h", err, sizeof(err)), 0);
    assert_int_equal(t.ticket_key_rotate_ms, 7200000u);
    assert_int_equal(sws_tls_config_set(&t, "session_tickets", "off", err, sizeof(err)), 0);
    assert_false(t.tickets);
    assert_int_equal(sws_tls_config_set(&t, "nope", "x", err, sizeof(err)), -EINVAL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(handshake_and_data_both_ways),
        cmocka_unit_test(tls12_and_rsa),
        cmocka_unit_test(resumption_with_ticket),
        cmocka_unit_test(resumption_with_session_cache),
        cmocka_unit_test(garbage_is_not_tls),
        cmocka_unit_test(truncated_hello_then_eof),
        cmocka_unit_test(tls10_refused_with_alert),
        cmocka_unit_test(alpn_without_http11_refused),
        cmocka_unit_test(ocsp_stapled),
        cmocka_unit_test(bad_material_is_a_clear_error),
        cmocka_unit_test(old_context_outlives_reload),
        cmocka_unit_test(config_keys),
    };
    return cmocka_run_group_tests_name("tls", tests, group_setup, group_teardown);
}
