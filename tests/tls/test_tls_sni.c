/* A certificate per name: the name table alone (exact names, wildcards of one
 * label, case, a trailing dot, no name, patterns it refuses), then the server
 * engine against an OpenSSL client through memory: each name its own
 * certificate, RSA or ECDSA by the client's signature algorithms, the default
 * and the refusal for unknown names, no resumption across names, a stapled
 * response per certificate, a reload that keeps a refused certificate's
 * predecessor, one certificate replaced alone, and a handshake that outlives
 * the server it started on. */
#include "tls_names.h"
#include "tls_test_util.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/ocsp.h>
#include <openssl/pem.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/* ---- the name table ------------------------------------------------------- */

static int find(const sws_tls_names *t, const char *name) {
    uint32_t v = 999;
    int how = sws_tls_names_find(t, name, strlen(name), &v);
    return how ? (int)v * 10 + how : -1; /* value and how, in one number */
}

static void names_exact_and_wildcard(void **state) {
    sws_tls_names *t = sws_tls_names_new();
    assert_int_equal(sws_tls_names_add(t, "a.test", 1, NULL), 0);
    assert_int_equal(sws_tls_names_add(t, "*.b.test", 2, NULL), 0);
    assert_int_equal(sws_tls_names_add(t, "x.b.test", 3, NULL), 0);
    assert_int_equal(find(t, "a.test"), 11);
    assert_int_equal(find(t, "A.TeSt"), 11);     /* case */
    assert_int_equal(find(t, "a.test."), 11);    /* a trailing dot */
    assert_int_equal(find(t, "y.b.test"), 22);   /* one label under the wildcard */
    assert_int_equal(find(t, "Y.B.TEST."), 22);  /* both at once */
    assert_int_equal(find(t, "x.b.test"), 31);   /* exact beats wildcard */
    assert_int_equal(find(t, "b.test"), -1);     /* the wildcard's parent itself */
    assert_int_equal(find(t, "z.y.b.test"), -1); /* two labels */
    assert_int_equal(find(t, ".b.test"), -1);    /* an empty first label */
    assert_int_equal(find(t, "www.a.test"), -1); /* no wildcard for a.test */
    assert_int_equal(find(t, "test"), -1);
    assert_int_equal(find(t, ""), -1); /* no name */
    assert_int_equal(find(t, "."), -1);
    uint32_t v;
    assert_int_equal(sws_tls_names_find(t, "a.testX", 6, &v), 1); /* len is the name's */
    assert_int_equal(sws_tls_names_count(t), 3);
    sws_tls_names_free(t);
}

static void names_refused_and_duplicates(void **state) {
    sws_tls_names *t = sws_tls_names_new();
    uint32_t old = 0;
    assert_int_equal(sws_tls_names_add(t, "*.test", 1, NULL), -EINVAL); /* a whole TLD */
    assert_int_equal(sws_tls_names_add(t, "a*.b.test", 1, NULL), -EINVAL);
    assert_int_equal(sws_tls_names_add(t, "a.*.test", 1, NULL), -EINVAL);
    assert_int_equal(sws_tls_names_add(t, "*.*.test", 1, NULL), -EINVAL);
    assert_int_equal(sws_tls_names_add(t, "a.test", 7, NULL), 0);
    assert_int_equal(sws_tls_names_add(t, "a.test", 8, &old), -EEXIST);
    assert_int_equal(old, 7);
    /* "*.a.test" and "a.test" are different entries. */
    assert_int_equal(sws_tls_names_add(t, "*.a.test", 9, NULL), 0);
    assert_int_equal(sws_tls_names_get(t, "*.a.test", &old), 1);
    assert_int_equal(old, 9);
    assert_int_equal(sws_tls_names_get(t, "b.a.test", &old), 0);
    sws_tls_names_free(t);
}

static void names_normal_form(void **state) {
    char out[SWS_TLS_NAME_LEN + 1];
    assert_int_equal(sws_tls_name_normal("WWW.Example.COM.", 16, out), 15);
    assert_string_equal(out, "www.example.com");
    assert_int_equal(sws_tls_name_normal("*.Example.com", 13, out), 13);
    assert_string_equal(out, "*.example.com");
    assert_int_equal(sws_tls_name_normal("a..b", 4, out), 0);
    assert_int_equal(sws_tls_name_normal("a b.c", 5, out), 0);
    assert_int_equal(sws_tls_name_normal("", 0, out), 0);
    assert_int_equal(sws_tls_name_normal("a.*", 3, out), 0);
    char longname[300];
    memset(longname, 'a', sizeof(longname));
    assert_int_equal(sws_tls_name_normal(longname, 254, out), 0);
    assert_true(sws_tls_name_hash("A.test.", 7) == sws_tls_name_hash("a.TEST", 6));
}

/* A thousand names: each found (the table grows), none confused. */
static void names_many(void **state) {
    sws_tls_names *t = sws_tls_names_new();
    char n[64];
    for (uint32_t i = 0; i < 1000; i++) {
        snprintf(n, sizeof(n), "host%u.test", i);
        assert_int_equal(sws_tls_names_add(t, n, i, NULL), 0);
        snprintf(n, sizeof(n), "*.w%u.test", i);
        assert_int_equal(sws_tls_names_add(t, n, 5000 + i, NULL), 0);
    }
    for (uint32_t i = 0; i < 1000; i++) {
        snprintf(n, sizeof(n), "HOST%u.test", i);
        assert_int_equal(find(t, n), (int)i * 10 + 1);
        snprintf(n, sizeof(n), "x.w%u.test", i);
        assert_int_equal(find(t, n), (int)(5000 + i) * 10 + 2);
    }
    assert_int_equal(find(t, "host1000.test"), -1);
    sws_tls_names_free(t);
}

/* ---- the server ----------------------------------------------------------- */

static char dir[64];
static sws_tls_keys *keys;

static const char *path(const char *name) {
    static char p[8][160];
    static int k;
    k = (k + 1) % 8;
    snprintf(p[k], sizeof(p[k]), "%s/%s", dir, name);
    return p[k];
}

static int group_setup(void **state) {
    snprintf(dir, sizeof(dir), "/tmp/sws-sni-test-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    keys = sws_tls_keys_new();
    long day = 86400;
    return !keys ||
           tt_make_cert_for(TT_EC, "DNS:a.test,DNS:www.a.test", day, path("a.pem"),
                            path("a.key")) ||
           tt_make_cert_for(TT_RSA, "DNS:a.test,DNS:www.a.test", day, path("ar.pem"),
                            path("ar.key")) ||
           tt_make_cert_for(TT_EC, "DNS:b.test", day, path("b.pem"), path("b.key")) ||
           tt_make_cert_for(TT_EC, "DNS:b.test", day, path("b2.pem"), path("b2.key")) ||
           tt_make_cert_for(TT_EC, "DNS:*.c.test", day, path("c.pem"), path("c.key")) ||
           tt_make_cert_for(TT_EC, "DNS:b.test", -day, path("bx.pem"), path("bx.key")) ||
           tt_make_cert_for(TT_EC, NULL, day, path("cn.pem"), path("cn.key"));
}

static int group_teardown(void **state) {
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    sws_tls_keys_free(keys);
    return system(cmd) == 0 ? 0 : -1;
}

static sws_tls_cert_config spec(const char *name, const char *file) {
    sws_tls_cert_config c;
    memset(&c, 0, sizeof(c));
    snprintf(c.name, sizeof(c.name), "%s", name);
    snprintf(c.cert, sizeof(c.cert), "%s/%s.pem", dir, file);
    snprintf(c.key, sizeof(c.key), "%s/%s.key", dir, file);
    return c;
}

static sws_tls_config settings;

/* b (the default, first), a and its RSA twin, the wildcard c. */
static sws_tls_server *four(int nloops, sws_tls_server *prev, sws_tls_cert_config *list, char *err,
                            size_t errlen) {
    sws_tls_config_defaults(&settings);
    sws_tls_build b = {
        .cfg = &settings, .certs = list, .ncerts = 4, .nloops = nloops, .keys = keys, .prev = prev};
    return sws_tls_server_new(&b, err, errlen);
}

static void four_specs(sws_tls_cert_config *l) {
    l[0] = spec("b", "b");
    l[1] = spec("a", "a");
    l[2] = spec("a-rsa", "ar");
    l[3] = spec("c", "c");
}

/* Whether the certificate at file is the one the client got. */
static bool got(tt_client *c, const char *file) {
    FILE *f = fopen(path(file), "r");
    X509 *want = f ? PEM_read_X509(f, NULL, NULL, NULL) : NULL;
    if (f)
        fclose(f);
    X509 *peer = SSL_get1_peer_certificate(c->ssl);
    bool same = want && peer && X509_cmp(want, peer) == 0;
    X509_free(want);
    X509_free(peer);
    return same;
}

typedef struct hs {
    tt_client c;
    sws_tls_conn t;
    tt_server_side s;
} hs;

/* A handshake for name (NULL: no SNI), with sigalgs and a session if given. */
static void shake(hs *h, SSL_CTX *cctx, sws_tls_server *srv, const char *name, const char *sigalgs,
                  SSL_SESSION *sess) {
    memset(h, 0, sizeof(*h));
    assert_int_equal(tt_client_init(&h->c, cctx), 0);
    SSL_set_tlsext_host_name(h->c.ssl, name);
    if (sigalgs)
        SSL_set1_sigalgs_list(h->c.ssl, sigalgs);
    if (sess)
        SSL_set_session(h->c.ssl, sess);
    assert_int_equal(sws_tls_conn_init(&h->t, srv, 0), 0);
    tt_pump(&h->c, &h->t, &h->s);
}

static void unshake(hs *h) {
    sws_tls_conn_free(&h->t);
    tt_client_free(&h->c);
}

static void each_name_its_certificate(void **state) {
    char err[512];
    sws_tls_cert_config l[4];
    four_specs(l);
    sws_tls_server *s = four(2, NULL, l, err, sizeof(err));
    if (!s)
        fail_msg("%s", err);
    sws_tls_info info;
    sws_tls_server_info(s, &info);
    assert_int_equal(info.certs, 4);
    assert_int_equal(info.names, 4); /* a.test www.a.test b.test *.c.test */
    SSL_CTX *cctx = tt_client_ctx(NULL);
    static const struct {
        const char *name, *sigalgs, *file;
        bool known; /* acknowledged: the name chose a certificate (RFC 6066) */
    } cases[] = {
        {"a.test", "ecdsa_secp256r1_sha256", "a.pem", true},
        {"WWW.A.TEST.", "ecdsa_secp256r1_sha256", "a.pem", true},
        {"a.test", "rsa_pss_rsae_sha256:rsa_pkcs1_sha256", "ar.pem", true},
        {"b.test", NULL, "b.pem", true},
        {"x.c.test", NULL, "c.pem", true},
        {"y.x.c.test", NULL, "b.pem", false}, /* two labels: unknown, the default */
        {"nowhere.test", NULL, "b.pem", false},
        {NULL, NULL, "b.pem", false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        hs h;
        shake(&h, cctx, s, cases[i].name, cases[i].sigalgs, NULL);
        if (!h.t.established || !got(&h.c, cases[i].file))
            fail_msg("%s (%s): not served %s", cases[i].name ? cases[i].name : "no SNI",
                     cases[i].sigalgs ? cases[i].sigalgs : "any", cases[i].file);
        assert_int_equal(h.t.sni_known, cases[i].known);
        unshake(&h);
    }
    /* TLS 1.2: the cipher suite's authentication decides. */
    SSL_CTX_set_max_proto_version(cctx, TLS1_2_VERSION);
    SSL_CTX_set_cipher_list(cctx, "ECDHE-RSA-AES128-GCM-SHA256");
    hs h;
    shake(&h, cctx, s, "www.a.test", NULL, NULL);
    assert_true(h.t.established);
    assert_true(got(&h.c, "ar.pem"));
    unshake(&h);
    SSL_CTX_free(cctx);
    sws_tls_server_free(s);
}

static void unknown_names_refused(void **state) {
    char err[512];
    sws_tls_cert_config l[4];
    four_specs(l);
    sws_tls_config_defaults(&settings);
    settings.refuse_unknown = true;
    sws_tls_build b = {.cfg = &settings, .certs = l, .ncerts = 4, .nloops = 1, .keys = keys};
    sws_tls_server *s = sws_tls_server_new(&b, err, sizeof(err));
    assert_non_null(s);
    SSL_CTX *cctx = tt_client_ctx(NULL);
    const char *names[] = {"nowhere.test", NULL};
    for (int i = 0; i < 2; i++) {
        hs h;
        shake(&h, cctx, s, names[i], NULL, NULL);
        assert_false(h.t.established);
        assert_true(h.t.failed);
        assert_int_equal(h.t.fail, SWS_TLS_FAIL_UNKNOWN_NAME);
        assert_string_equal(sws_tls_fail_name(h.t.fail), "unknown_name");
        assert_true(h.c.failed);
        assert_int_equal(ERR_peek_error(), 0);
        unshake(&h);
    }
    hs h;
    shake(&h, cctx, s, "b.test", NULL, NULL);
    assert_true(h.t.established);
    unshake(&h);
    SSL_CTX_free(cctx);
    sws_tls_server_free(s);
}

/* A session made for one name resumes under it, not under another name:
 * not another certificate's, nor another name of the same wildcard. */
static void no_resumption_across_names(void **state) {
    char err[512];
    sws_tls_cert_config l[4];
    four_specs(l);
    sws_tls_server *s = four(2, NULL, l, err, sizeof(err));
    assert_non_null(s);
    for (int v = 0; v < 2; v++) {
        SSL_CTX *cctx = tt_client_ctx(NULL);
        if (v)
            SSL_CTX_set_max_proto_version(cctx, TLS1_2_VERSION);
        hs h;
        shake(&h, cctx, s, "x.c.test", NULL, NULL);
        assert_true(h.t.established);
        /* A TLS 1.3 ticket arrives after the handshake: one round of data. */
        SSL_write(h.c.ssl, "x", 1);
        tt_pump(&h.c, &h.t, &h.s);
        SSL_SESSION *sess = SSL_get1_session(h.c.ssl);
        unshake(&h);
        assert_true(SSL_SESSION_is_resumable(sess));
        shake(&h, cctx, s, "x.c.test", NULL, sess);
        assert_true(h.t.established);
        assert_true(sws_tls_resumed(&h.t));
        unshake(&h);
        const char *others[] = {"y.c.test", "a.test", "b.test", NULL};
        for (int i = 0; i < 4; i++) {
            shake(&h, cctx, s, others[i], NULL, sess);
            assert_true(h.t.established);
            if (sws_tls_resumed(&h.t))
                fail_msg("TLS 1.%d: a session of x.c.test resumed as %s", v ? 2 : 3,
                         others[i] ? others[i] : "no SNI");
            unshake(&h);
        }
        SSL_SESSION_free(sess);
        SSL_CTX_free(cctx);
    }
    sws_tls_server_free(s);
}

/* An RSA and an ECDSA certificate of one name, each with its own response:
 * the client gets the response of the certificate it got. */
static void ocsp_per_certificate(void **state) {
    int status[2] = {OCSP_RESPONSE_STATUS_TRYLATER, OCSP_RESPONSE_STATUS_INTERNALERROR};
    unsigned char *der[2] = {NULL, NULL};
    int len[2];
    for (int i = 0; i < 2; i++) {
        OCSP_RESPONSE *r = OCSP_response_create(status[i], NULL);
        len[i] = i2d_OCSP_RESPONSE(r, &der[i]);
        OCSP_RESPONSE_free(r);
        FILE *f = fopen(path(i ? "ar.der" : "a.der"), "wb");
        fwrite(der[i], 1, (size_t)len[i], f);
        fclose(f);
    }
    char err[512];
    sws_tls_cert_config l[4];
    four_specs(l);
    snprintf(l[1].ocsp, sizeof(l[1].ocsp), "%s", path("a.der"));
    snprintf(l[2].ocsp, sizeof(l[2].ocsp), "%s", path("ar.der"));
    sws_tls_server *s = four(1, NULL, l, err, sizeof(err));
    assert_non_null(s);
    SSL_CTX *cctx = tt_client_ctx(NULL);
    const char *sigalgs[2] = {"ecdsa_secp256r1_sha256", "rsa_pss_rsae_sha256"};
    for (int i = 0; i < 2; i++) {
        hs h;
        memset(&h, 0, sizeof(h));
        tt_client_init(&h.c, cctx);
        SSL_set_tlsext_host_name(h.c.ssl, "a.test");
        SSL_set1_sigalgs_list(h.c.ssl, sigalgs[i]);
        SSL_set_tlsext_status_type(h.c.ssl, TLSEXT_STATUSTYPE_ocsp);
        sws_tls_conn_init(&h.t, s, 0);
        tt_pump(&h.c, &h.t, &h.s);
        assert_true(h.t.established);
        const unsigned char *resp;
        long rlen = SSL_get_tlsext_status_ocsp_resp(h.c.ssl, &resp);
        assert_int_equal(rlen, len[i]);
        assert_memory_equal(resp, der[i], (size_t)len[i]);
        unshake(&h);
        /* b has none: nothing stapled. */
        memset(&h, 0, sizeof(h));
        tt_client_init(&h.c, cctx);
        SSL_set_tlsext_host_name(h.c.ssl, "b.test");
        SSL_set_tlsext_status_type(h.c.ssl, TLSEXT_STATUSTYPE_ocsp);
        sws_tls_conn_init(&h.t, s, 0);
        tt_pump(&h.c, &h.t, &h.s);
        assert_true(h.t.established);
        assert_int_equal(SSL_get_tlsext_status_ocsp_resp(h.c.ssl, &resp), -1);
        unshake(&h);
        OPENSSL_free(der[i]);
    }
    SSL_CTX_free(cctx);
    sws_tls_server_free(s);
}

static int find_cert(const sws_tls_server *s, const char *section, sws_tls_cert_info *ci) {
    for (int i = 0; i < sws_tls_server_certs(s); i++) {
        sws_tls_server_cert(s, i, ci);
        if (!strcmp(ci->section, section))
            return i;
    }
    return -1;
}

/* A reload: each certificate on its own. A broken one (unreadable, a key of
 * another certificate, expired, claiming a name another holds) keeps what it
 * had, the others load anew; a new one that is broken is not served. At
 * start, a broken one is an error. */
static void reload_keeps_a_refused_certificate(void **state) {
    char err[512];
    sws_tls_cert_config l[4], bad[4];
    four_specs(l);
    sws_tls_server *s1 = four(1, NULL, l, err, sizeof(err));
    assert_non_null(s1);
    SSL_CTX *cctx = tt_client_ctx(NULL);
    const char *cases[][2] = {{"a", "nothere"}, {"key", "b2"}, {"expired", "bx"}};
    for (int k = 0; k < 3; k++) {
        memcpy(bad, l, sizeof(l));
        bad[0] = spec("b", cases[k][1]);
        if (k == 1) /* b's certificate with b2's key */
            snprintf(bad[0].cert, sizeof(bad[0].cert), "%s", path("b.pem"));
        sws_tls_server *s2 = four(1, s1, bad, err, sizeof(err));
        if (!s2)
            fail_msg("%s: %s", cases[k][0], err);
        sws_tls_cert_info ci;
        assert_int_equal(find_cert(s2, "[tls b]", &ci), 0);
        assert_true(ci.served);
        assert_true(ci.is_default);
        assert_true(ci.refused[0] != '\0');
        const char *why[] = {"cannot open", "does not match", "expired on"};
        if (!strstr(ci.refused, why[k]))
            fail_msg("%s: %s", cases[k][0], ci.refused);
        hs h;
        shake(&h, cctx, s2, "b.test", NULL, NULL);
        assert_true(h.t.established);
        assert_true(got(&h.c, "b.pem"));
        unshake(&h);
        sws_tls_server_free(s2);
        /* At start there is nothing to fall back on; an expired certificate
         * is served then (and warned about). */
        sws_tls_server *fresh = four(1, NULL, bad, err, sizeof(err));
        assert_true(k == 2 ? fresh != NULL : fresh == NULL);
        if (!fresh)
            assert_non_null(strstr(err, why[k]));
        sws_tls_server_free(fresh);
    }
    /* A certificate claiming b.test beside b (same key type), new on this
     * reload: not served, and the others are. */
    memcpy(bad, l, sizeof(l));
    bad[3] = spec("b-again", "b2");
    sws_tls_server *s2 = four(1, s1, bad, err, sizeof(err));
    assert_non_null(s2);
    sws_tls_cert_info ci;
    assert_int_equal(find_cert(s2, "[tls b-again]", &ci), 3);
    assert_false(ci.served);
    assert_non_null(strstr(ci.refused, "b.test is served by [tls b] already"));
    hs h;
    shake(&h, cctx, s2, "b.test", NULL, NULL);
    assert_true(got(&h.c, "b.pem"));
    unshake(&h);
    /* The same marked default: another default is served. */
    bad[3].is_default = true;
    sws_tls_server *s2d = four(1, s1, bad, err, sizeof(err));
    assert_non_null(s2d);
    assert_int_equal(find_cert(s2d, "[tls b-again]", &ci), 3);
    assert_false(ci.served);
    assert_false(ci.is_default);
    shake(&h, cctx, s2d, NULL, NULL, NULL);
    assert_true(got(&h.c, "b.pem"));
    unshake(&h);
    sws_tls_server_free(s2d);
    /* ... and the server s2 replaced b by b2 alone: a.test untouched. */
    sws_tls_cert_config nb = spec("b", "b2");
    sws_tls_server *s3 = sws_tls_server_replace(s2, &nb, err, sizeof(err));
    assert_non_null(s3);
    shake(&h, cctx, s3, "b.test", NULL, NULL);
    assert_true(got(&h.c, "b2.pem"));
    unshake(&h);
    shake(&h, cctx, s3, "a.test", "ecdsa_secp256r1_sha256", NULL);
    assert_true(got(&h.c, "a.pem"));
    unshake(&h);
    /* A replacement that fails changes nothing. */
    sws_tls_cert_config broken = spec("b", "nothere");
    assert_null(sws_tls_server_replace(s3, &broken, err, sizeof(err)));
    assert_non_null(strstr(err, "[tls b] cert"));
    /* One added by name (its name is its CN: it has no subjectAltName). */
    sws_tls_cert_config added = spec("cn", "cn");
    sws_tls_server *s4 = sws_tls_server_replace(s3, &added, err, sizeof(err));
    assert_non_null(s4);
    shake(&h, cctx, s4, "localhost", NULL, NULL);
    assert_true(got(&h.c, "cn.pem"));
    unshake(&h);
    sws_tls_server_free(s4);
    sws_tls_server_free(s2);
    sws_tls_server_free(s3);
    sws_tls_server_free(s1);
    SSL_CTX_free(cctx);
}

/* The CN is the name only when there is no subjectAltName DNS entry; a
 * certificate that is not the default needs a name. */
static void names_from_the_certificate(void **state) {
    char err[512];
    sws_tls_cert_config l[2] = {spec("b", "b"), spec("cn", "cn")};
    sws_tls_config_defaults(&settings);
    sws_tls_build b = {.cfg = &settings, .certs = l, .ncerts = 2, .nloops = 1, .keys = keys};
    sws_tls_server *s = sws_tls_server_new(&b, err, sizeof(err));
    if (!s)
        fail_msg("%s", err);
    sws_tls_cert_info ci;
    assert_int_equal(find_cert(s, "[tls cn]", &ci), 1);
    assert_int_equal(ci.nnames, 1);
    assert_string_equal(ci.names[0], "localhost");
    assert_string_equal(ci.key_type, "ECDSA P-256");
    assert_int_equal(strlen(ci.not_after), 20);
    sws_tls_server_free(s);
    char d[512];
    assert_int_equal(sws_tls_cert_describe(path("a.pem"), d, sizeof(d)), 0);
    assert_non_null(strstr(d, "a.test www.a.test (ECDSA P-256, notAfter 20"));
    assert_true(sws_tls_cert_describe(path("nothere.pem"), d, sizeof(d)) < 0);
}

/* The server freed (a reload) while a ClientHello is still on its way: the
 * handshake holds it until the name is chosen. */
static void handshake_outlives_server(void **state) {
    char err[512];
    sws_tls_cert_config l[4];
    four_specs(l);
    sws_tls_server *s = four(1, NULL, l, err, sizeof(err));
    assert_non_null(s);
    SSL_CTX *cctx = tt_client_ctx(NULL);
    hs h;
    memset(&h, 0, sizeof(h));
    tt_client_init(&h.c, cctx);
    SSL_set_tlsext_host_name(h.c.ssl, "x.c.test");
    assert_int_equal(sws_tls_conn_init(&h.t, s, 0), 0);
    sws_tls_server_free(s);
    tt_pump(&h.c, &h.t, &h.s);
    assert_true(h.t.established);
    assert_true(got(&h.c, "c.pem"));
    assert_null(h.t.srv); /* let go once the handshake is done */
    unshake(&h);
    SSL_CTX_free(cctx);
}

int main(void) {
    const struct CMUnitTest names[] = {
        cmocka_unit_test(names_exact_and_wildcard),
        cmocka_unit_test(names_refused_and_duplicates),
        cmocka_unit_test(names_normal_form),
        cmocka_unit_test(names_many),
    };
    const struct CMUnitTest server[] = {
        cmocka_unit_test(each_name_its_certificate),
        cmocka_unit_test(unknown_names_refused),
        cmocka_unit_test(no_resumption_across_names),
        cmocka_unit_test(ocsp_per_certificate),
        cmocka_unit_test(reload_keeps_a_refused_certificate),
        cmocka_unit_test(names_from_the_certificate),
        cmocka_unit_test(handshake_outlives_server),
    };
    int rc = cmocka_run_group_tests_name("tls_names", names, NULL, NULL);
    return rc | cmocka_run_group_tests_name("tls_sni", server, group_setup, group_teardown);
}
