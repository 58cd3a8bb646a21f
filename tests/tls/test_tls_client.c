/* The client engine (sws_tls_client, what the proxy speaks to a TLS upstream)
 * against the server engine, both on memory BIOs: a handshake and data both
 * ways, verification refusing a certificate from another CA and one for
 * another name, verification off accepting it, SNI sent for a name and not
 * for an address, and a CA file that cannot be read refused up front. */
#include "sws_tls_client.h"
#include "tls_test_util.h"

#include <openssl/err.h>
#include <openssl/x509_vfy.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static char dir[64], cert[128], key[128], other_cert[128], other_key[128], junk[128];

static int group_setup(void **state) {
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/sws-tls-client-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(cert, sizeof(cert), "%s/up.pem", dir);
    snprintf(key, sizeof(key), "%s/up.key", dir);
    snprintf(other_cert, sizeof(other_cert), "%s/other.pem", dir);
    snprintf(other_key, sizeof(other_key), "%s/other.key", dir);
    snprintf(junk, sizeof(junk), "%s/junk.pem", dir);
    FILE *f = fopen(junk, "w");
    if (!f)
        return -1;
    fputs("not a certificate\n", f);
    fclose(f);
    return tt_make_cert(TT_EC, cert, key) || tt_make_cert(TT_EC, other_cert, other_key);
}

static int group_teardown(void **state) {
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* The upstream: a server engine on the certificate for localhost/127.0.0.1. */
static sws_tls_server *upstream(void) {
    sws_tls_config t;
    char err[256];
    sws_tls_config_defaults(&t);
    snprintf(t.cert, sizeof(t.cert), "%s", cert);
    snprintf(t.key, sizeof(t.key), "%s", key);
    t.tickets = false;
    sws_tls_server *s = tt_server_new(&t, 1, NULL, err, sizeof(err));
    if (!s)
        fail_msg("%s", err);
    return s;
}

static sws_tls_client *client(const char *ca, bool verify) {
    char err[256];
    sws_tls_client *c = sws_tls_client_new(ca, verify, err, sizeof(err));
    if (!c)
        fail_msg("%s", err);
    return c;
}

typedef struct side {
    sws_tls_conn e;
    char got[4096];
    size_t ngot;
    int last; /* the last result <= 0 of a read or handshake */
} side;

static bool move(sws_tls_conn *from, sws_tls_conn *to) {
    char buf[16384];
    bool moved = false;
    size_t n;
    while ((n = sws_tls_take(from, buf, sizeof(buf))) > 0) {
        assert_int_equal(sws_tls_feed(to, buf, n), 0);
        moved = true;
    }
    return moved;
}

static void step(side *s) {
    if (!s->e.established && !s->e.failed && !SSL_is_server(s->e.ssl)) {
        int rc = sws_tls_handshake(&s->e);
        if (rc <= 0) {
            s->last = rc;
            return;
        }
    }
    int n;
    while ((n = sws_tls_read(&s->e, s->got + s->ngot, sizeof(s->got) - s->ngot)) > 0)
        s->ngot += (size_t)n;
    s->last = n;
}

/* Bytes both ways until neither side says anything more (64 rounds at most). */
static void pump(side *c, side *s) {
    for (int round = 0; round < 64; round++) {
        step(c);
        bool moved = move(&c->e, &s->e);
        step(s);
        moved = move(&s->e, &c->e) || moved;
        if (!moved) {
            step(c);
            return;
        }
    }
    fail_msg("the pump did not settle");
}

static SSL_SESSION **use_slot; /* the session slot connect_to gives the client, or NULL */

/* A client of cl for name against the upstream, pumped through the handshake. */
static void connect_to(sws_tls_client *cl, const char *name, sws_tls_server *up, side *c, side *s) {
    memset(c, 0, sizeof(*c));
    memset(s, 0, sizeof(*s));
    assert_int_equal(sws_tls_conn_init_client(&c->e, cl, name, use_slot), 0);
    assert_int_equal(sws_tls_conn_init(&s->e, up, 0), 0);
    pump(c, s);
}

static void done(side *c, side *s) {
    sws_tls_conn_free(&c->e);
    sws_tls_conn_free(&s->e);
}

static void handshake_and_data_through_memory(void **state) {
    (void)state;
    sws_tls_server *up = upstream();
    sws_tls_client *cl = client(cert, true);
    side c, s;
    connect_to(cl, "localhost", up, &c, &s);
    assert_true(c.e.established);
    assert_true(s.e.established);
    assert_string_equal(sws_tls_verify_error(&c.e), "ok");
    static const char req[] = "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";
    static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    assert_int_equal(sws_tls_write(&c.e, req, strlen(req)), (int)strlen(req));
    pump(&c, &s);
    assert_int_equal(s.ngot, strlen(req));
    assert_memory_equal(s.got, req, strlen(req));
    assert_int_equal(sws_tls_write(&s.e, resp, strlen(resp)), (int)strlen(resp));
    pump(&c, &s);
    assert_int_equal(c.ngot, strlen(resp));
    assert_memory_equal(c.got, resp, strlen(resp));
    /* Our close_notify reaches the upstream as a clean end. */
    assert_int_equal(sws_tls_close_notify(&c.e), 0);
    pump(&c, &s);
    assert_int_equal(s.last, SWS_TLS_EOF);
    done(&c, &s);
    sws_tls_client_free(cl);
    sws_tls_server_free(up);
}

static void verify_fails_with_another_ca(void **state) {
    (void)state;
    sws_tls_server *up = upstream();
    sws_tls_client *cl = client(other_cert, true);
    side c, s;
    connect_to(cl, "localhost", up, &c, &s);
    assert_false(c.e.established);
    assert_true(c.e.failed);
    assert_int_equal(c.last, -EPROTO);
    assert_int_not_equal(SSL_get_verify_result(c.e.ssl), X509_V_OK);
    assert_false(s.e.established); /* the upstream got our alert, no Finished */
    assert_int_equal(ERR_peek_error(), 0);
    done(&c, &s);
    sws_tls_client_free(cl);
    sws_tls_server_free(up);
}

static void wrong_name_refused(void **state) {
    (void)state;
    sws_tls_server *up = upstream();
    sws_tls_client *cl = client(cert, true);
    side c, s;
    connect_to(cl, "upstream.example", up, &c, &s);
    assert_false(c.e.established);
    assert_int_equal(c.last, -EPROTO);
    assert_int_equal(SSL_get_verify_result(c.e.ssl), X509_V_ERR_HOSTNAME_MISMATCH);
    done(&c, &s);
    /* An address is checked against the certificate's IP entries. */
    connect_to(cl, "127.0.0.1", up, &c, &s);
    assert_true(c.e.established);
    done(&c, &s);
    connect_to(cl, "127.0.0.2", up, &c, &s);
    assert_false(c.e.established);
    assert_int_equal(SSL_get_verify_result(c.e.ssl), X509_V_ERR_IP_ADDRESS_MISMATCH);
    done(&c, &s);
    sws_tls_client_free(cl);
    sws_tls_server_free(up);
}

static void verify_off_accepts_any_certificate(void **state) {
    (void)state;
    sws_tls_server *up = upstream();
    sws_tls_client *cl = client(other_cert, false);
    side c, s;
    connect_to(cl, "upstream.example", up, &c, &s);
    assert_true(c.e.established);
    assert_true(s.e.established);
    done(&c, &s);
    sws_tls_client_free(cl);
    sws_tls_server_free(up);
}

static void sni_sent_for_a_name_not_an_address(void **state) {
    (void)state;
    sws_tls_server *up = upstream();
    sws_tls_client *cl = client(cert, true);
    side c, s;
    connect_to(cl, "localhost", up, &c, &s);
    assert_true(s.e.established);
    const char *sni = SSL_get_servername(s.e.ssl, TLSEXT_NAMETYPE_host_name);
    assert_non_null(sni);
    assert_string_equal(sni, "localhost");
    done(&c, &s);
    connect_to(cl, "127.0.0.1", up, &c, &s);
    assert_true(s.e.established);
    assert_null(SSL_get_servername(s.e.ssl, TLSEXT_NAMETYPE_host_name));
    done(&c, &s);
    sws_tls_client_free(cl);
    sws_tls_server_free(up);
}

/* A second connection offers the session the first was given (a TLS 1.3
 * ticket, read after the handshake) and resumes; a slot is per server name,
 * and without one nothing is offered. */
static void second_connection_resumes_from_its_slot(void **state) {
    (void)state;
    sws_tls_server *up = upstream();
    sws_tls_client *cl = client(cert, true);
    SSL_SESSION *slot = NULL;
    side c, s;
    use_slot = &slot;
    connect_to(cl, "localhost", up, &c, &s);
    assert_true(c.e.established);
    assert_false(sws_tls_resumed(&c.e));
    assert_non_null(slot); /* the ticket came with the pump's reads */
    done(&c, &s);
    connect_to(cl, "localhost", up, &c, &s);
    assert_true(c.e.established);
    assert_true(sws_tls_resumed(&c.e));
    assert_true(sws_tls_resumed(&s.e));
    assert_string_equal(sws_tls_verify_error(&c.e), "ok");
    done(&c, &s);
    use_slot = NULL;
    connect_to(cl, "localhost", up, &c, &s);
    assert_true(c.e.established);
    assert_false(sws_tls_resumed(&c.e));
    done(&c, &s);
    sws_tls_client_slot_free(&slot);
    assert_null(slot);
    sws_tls_client_free(cl);
    sws_tls_server_free(up);
}

static void unreadable_ca_file_refused(void **state) {
    (void)state;
    char err[256] = "", missing[160];
    snprintf(missing, sizeof(missing), "%s/missing.pem", dir);
    assert_null(sws_tls_client_new(missing, true, err, sizeof(err)));
    assert_non_null(strstr(err, missing));
    err[0] = '\0';
    assert_null(sws_tls_client_new(junk, true, err, sizeof(err)));
    assert_non_null(strstr(err, "tls_ca"));
    assert_int_equal(ERR_peek_error(), 0);
    /* No file: the system's roots (present or not, the context is made). */
    sws_tls_client *c = sws_tls_client_new("", true, err, sizeof(err));
    assert_non_null(c);
    sws_tls_client_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(handshake_and_data_through_memory),
        cmocka_unit_test(verify_fails_with_another_ca),
        cmocka_unit_test(wrong_name_refused),
        cmocka_unit_test(verify_off_accepts_any_certificate),
        cmocka_unit_test(sni_sent_for_a_name_not_an_address),
        cmocka_unit_test(second_connection_resumes_from_its_slot),
        cmocka_unit_test(unreadable_ca_file_refused),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
