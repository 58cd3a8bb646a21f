/* The ACME client without a network: JWS (protected header fields, the ES256
 * signature verified with OpenSSL, the RFC 7638 thumbprint), base64url, and
 * the protocol (acme_client.c) driven by recorded CA answers through a fake
 * transport: the whole issuance, badNonce retried, a challenge the CA finds
 * invalid, a rate limit with Retry-After, a CA that does not answer, and a
 * broken answer. Plus the token table and the [acme] keys. */
#include "acme_cert.h"
#include "acme_client.h"
#include "acme_config.h"
#include "acme_store.h"
#include "acme_tokens.h"
#include "jws.h"

#include <errno.h>
#include <jansson.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

/* ---- helpers ---------------------------------------------------------------------- */

static json_t *b64json(const char *b64) {
    unsigned char buf[4096];
    long n = sws_b64url_decode(b64, buf, sizeof(buf) - 1);
    assert_true(n >= 0);
    buf[n] = '\0';
    return json_loads((const char *)buf, 0, NULL);
}

/* Verifies a flattened JWS with key's public half; returns the protected header. */
static json_t *verify_jws(EVP_PKEY *key, const char *jws_text, char *payload_out, size_t cap) {
    json_t *jws = json_loads(jws_text, 0, NULL);
    assert_non_null(jws);
    const char *prot = json_string_value(json_object_get(jws, "protected"));
    const char *pay = json_string_value(json_object_get(jws, "payload"));
    const char *sig = json_string_value(json_object_get(jws, "signature"));
    assert_non_null(prot);
    assert_non_null(pay);
    assert_non_null(sig);
    unsigned char rs[128];
    assert_int_equal(sws_b64url_decode(sig, rs, sizeof(rs)), 64);
    /* JOSE's r||s back to the DER OpenSSL verifies. */
    ECDSA_SIG *es = ECDSA_SIG_new();
    ECDSA_SIG_set0(es, BN_bin2bn(rs, 32, NULL), BN_bin2bn(rs + 32, 32, NULL));
    unsigned char *der = NULL;
    int dlen = i2d_ECDSA_SIG(es, &der);
    ECDSA_SIG_free(es);
    char msg[8192];
    snprintf(msg, sizeof(msg), "%s.%s", prot, pay);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    assert_int_equal(EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, key), 1);
    assert_int_equal(EVP_DigestVerify(md, der, (size_t)dlen, (unsigned char *)msg, strlen(msg)), 1);
    EVP_MD_CTX_free(md);
    OPENSSL_free(der);
    if (payload_out) {
        long n = sws_b64url_decode(pay, (unsigned char *)payload_out, cap - 1);
        assert_true(n >= 0);
        payload_out[n] = '\0';
    }
    json_t *hdr = b64json(prot);
    json_decref(jws);
    assert_non_null(hdr);
    return hdr;
}

/* ---- base64url and JWS ------------------------------------------------------------ */

static void b64url_vectors(void **state) {
    (void)state;
    struct {
        const char *in, *out;
    } v[] = {{"", ""},        {"f", "Zg"},        {"fo", "Zm8"},
             {"foo", "Zm9v"}, {"foob", "Zm9vYg"}, {"\xfb\xff", "-_8"}};
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        char *s = sws_b64url(v[i].in, strlen(v[i].in));
        assert_string_equal(s, v[i].out);
        unsigned char back[16];
        long n = sws_b64url_decode(s, back, sizeof(back));
        assert_int_equal(n, (long)strlen(v[i].in));
        assert_memory_equal(back, v[i].in, (size_t)n);
        free(s);
    }
    unsigned char b[4];
    assert_int_equal(sws_b64url_decode("a*b", b, sizeof(b)), -1);
}

static void jws_with_jwk_verifies(void **state) {
    (void)state;
    EVP_PKEY *k = sws_jws_new_key();
    char *jws = sws_jws_sign(k, NULL, "nonce-1", "https://ca/new-acct", "{\"a\":1}");
    char payload[256];
    json_t *h = verify_jws(k, jws, payload, sizeof(payload));
    assert_string_equal(json_string_value(json_object_get(h, "alg")), "ES256");
    assert_string_equal(json_string_value(json_object_get(h, "nonce")), "nonce-1");
    assert_string_equal(json_string_value(json_object_get(h, "url")), "https://ca/new-acct");
    assert_null(json_object_get(h, "kid"));
    json_t *jwk = json_object_get(h, "jwk");
    assert_string_equal(json_string_value(json_object_get(jwk, "kty")), "EC");
    assert_string_equal(json_string_value(json_object_get(jwk, "crv")), "P-256");
    assert_int_equal(strlen(json_string_value(json_object_get(jwk, "x"))), 43);
    assert_int_equal(strlen(json_string_value(json_object_get(jwk, "y"))), 43);
    assert_null(json_object_get(jwk, "d")); /* never the private part */
    assert_string_equal(payload, "{\"a\":1}");
    json_decref(h);
    free(jws);
    EVP_PKEY_free(k);
}

static void jws_with_kid_and_post_as_get(void **state) {
    (void)state;
    EVP_PKEY *k = sws_jws_new_key();
    char *jws = sws_jws_sign(k, "https://ca/acct/7", "n2", "https://ca/authz/1", NULL);
    char payload[16];
    json_t *h = verify_jws(k, jws, payload, sizeof(payload));
    assert_string_equal(json_string_value(json_object_get(h, "kid")), "https://ca/acct/7");
    assert_null(json_object_get(h, "jwk"));
    assert_string_equal(payload, ""); /* POST-as-GET: an empty payload */
    json_decref(h);
    /* A signature by another key does not verify. */
    EVP_PKEY *other = sws_jws_new_key();
    json_t *j = json_loads(jws, 0, NULL);
    char msg[4096];
    snprintf(msg, sizeof(msg), "%s.%s", json_string_value(json_object_get(j, "protected")),
             json_string_value(json_object_get(j, "payload")));
    unsigned char rs[64];
    sws_b64url_decode(json_string_value(json_object_get(j, "signature")), rs, sizeof(rs));
    ECDSA_SIG *es = ECDSA_SIG_new();
    ECDSA_SIG_set0(es, BN_bin2bn(rs, 32, NULL), BN_bin2bn(rs + 32, 32, NULL));
    unsigned char *der = NULL;
    int dlen = i2d_ECDSA_SIG(es, &der);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, other);
    assert_int_not_equal(EVP_DigestVerify(md, der, (size_t)dlen, (unsigned char *)msg, strlen(msg)),
                         1);
    EVP_MD_CTX_free(md);
    OPENSSL_free(der);
    ECDSA_SIG_free(es);
    json_decref(j);
    free(jws);
    EVP_PKEY_free(other);
    EVP_PKEY_free(k);
}

static void thumbprint_is_sha256_of_canonical_jwk(void **state) {
    (void)state;
    EVP_PKEY *k = sws_jws_new_key();
    char *jwk = sws_jwk_json(k);
    /* RFC 7638 3.2: exactly these members, in this order, no whitespace. */
    const char *head = "{\"crv\":\"P-256\",\"kty\":\"EC\",\"x\":\"";
    assert_int_equal(strncmp(jwk, head, strlen(head)), 0);
    assert_non_null(strstr(jwk, "\",\"y\":\""));
    assert_null(strchr(jwk, ' '));
    unsigned char md[32];
    EVP_Digest(jwk, strlen(jwk), md, NULL, EVP_sha256(), NULL);
    char *want = sws_b64url(md, 32);
    char *t = sws_jwk_thumbprint(k);
    assert_string_equal(t, want);
    assert_int_equal(strlen(t), 43);
    free(want);
    free(t);
    free(jwk);
    EVP_PKEY_free(k);
}

/* ---- the protocol against recorded answers ---------------------------------------- */

typedef struct step {
    const char *method;
    const char *url; /* expected exactly */
    long status;
    const char *location;
    const char *nonce;
    long retry_after;
    const char *body; /* "@CERT" is replaced by a PEM certificate */
    int fail;         /* a transport error instead of an answer */
} step;

typedef struct fake {
    const step *steps;
    int n, at;
    EVP_PKEY *key;
    const char *last_nonce; /* what the next signed request must carry */
    char published[256], keyauth[400], domain[256];
    int withdrawn;
    char *cert_pem;
    int kid_seen, jwk_seen;
} fake;

static int fake_send(void *ctx, const char *method, const char *url, const char *body,
                     sws_acme_resp *out, char *err, size_t errlen) {
    fake *f = ctx;
    assert_true(f->at < f->n);
    const step *s = &f->steps[f->at++];
    assert_string_equal(method, s->method);
    assert_string_equal(url, s->url);
    if (strcmp(method, "POST") == 0) {
        /* Every POST is a JWS by the account key, with the last nonce the CA
         * gave, for this very URL. */
        json_t *h = verify_jws(f->key, body, NULL, 0);
        assert_string_equal(json_string_value(json_object_get(h, "nonce")), f->last_nonce);
        assert_string_equal(json_string_value(json_object_get(h, "url")), url);
        if (json_object_get(h, "kid"))
            f->kid_seen++;
        else
            f->jwk_seen++;
        json_decref(h);
    }
    if (s->fail) {
        snprintf(err, errlen, "Connection refused");
        return -ECONNREFUSED;
    }
    out->status = s->status;
    if (s->location)
        snprintf(out->location, sizeof(out->location), "%s", s->location);
    if (s->nonce) {
        snprintf(out->nonce, sizeof(out->nonce), "%s", s->nonce);
        f->last_nonce = s->nonce;
    }
    out->retry_after = s->retry_after ? s->retry_after : -1;
    const char *b = s->body ? s->body : "";
    if (strcmp(b, "@CERT") == 0)
        b = f->cert_pem;
    out->body = strdup(b);
    out->len = strlen(b);
    return 0;
}

static int fake_publish(void *ctx, const char *domain, const char *token, const char *ka) {
    fake *f = ctx;
    snprintf(f->domain, sizeof(f->domain), "%s", domain);
    snprintf(f->published, sizeof(f->published), "%s", token);
    snprintf(f->keyauth, sizeof(f->keyauth), "%s", ka);
    return 0;
}
static void fake_withdraw(void *ctx, const char *domain, const char *token) {
    fake *f = ctx;
    assert_string_equal(token, f->published);
    assert_string_equal(domain, f->domain);
    f->withdrawn++;
}

#define DIR_BODY                                                                                   \
    "{\"newNonce\":\"https://ca/nonce\",\"newAccount\":\"https://ca/acct\","                       \
    "\"newOrder\":\"https://ca/order\"}"
#define ORDER_BODY                                                                                 \
    "{\"status\":\"pending\",\"authorizations\":[\"https://ca/authz/1\"],"                         \
    "\"finalize\":\"https://ca/order/1/fin\"}"
#define AUTHZ_PENDING                                                                              \
    "{\"status\":\"pending\",\"identifier\":{\"type\":\"dns\",\"value\":\"a.test\"},"              \
    "\"challenges\":[{\"type\":\"dns-01\",\"url\":\"https://ca/chal/dns\",\"token\":\"dnsTok\"},"  \
    "{\"type\":\"http-01\",\"url\":\"https://ca/chal/1\",\"token\":\"tok_1-A\"}]}"
#define BAD_NONCE "{\"type\":\"urn:ietf:params:acme:error:badNonce\",\"detail\":\"stale\"}"

static const step happy[] = {
    {"GET", "https://ca/dir", 200, NULL, NULL, 0, DIR_BODY, 0},
    {"HEAD", "https://ca/nonce", 200, NULL, "n1", 0, NULL, 0},
    /* badNonce once: the same request again with the nonce of that answer. */
    {"POST", "https://ca/acct", 400, NULL, "n2", 0, BAD_NONCE, 0},
    {"POST", "https://ca/acct", 201, "https://ca/acct/9", "n3", 0, "{\"status\":\"valid\"}", 0},
    {"POST", "https://ca/order", 201, "https://ca/order/1", "n4", 0, ORDER_BODY, 0},
    {"POST", "https://ca/authz/1", 200, NULL, "n5", 0, AUTHZ_PENDING, 0},
    {"POST", "https://ca/chal/1", 200, NULL, "n6", 0, "{\"status\":\"pending\"}", 0},
    {"POST", "https://ca/authz/1", 200, NULL, "n7", 1, AUTHZ_PENDING, 0},
    {"POST", "https://ca/authz/1", 200, NULL, "n8", 0, "{\"status\":\"valid\"}", 0},
    {"POST", "https://ca/order/1/fin", 200, NULL, "n9", 0, "{\"status\":\"processing\"}", 0},
    {"POST", "https://ca/order/1", 200, NULL, "n10", 0,
     "{\"status\":\"valid\",\"certificate\":\"https://ca/cert/1\"}", 0},
    {"POST", "https://ca/cert/1", 200, NULL, "n11", 0, "@CERT", 0},
};

static unsigned slept_ms;
static bool fake_sleep(void *ctx, unsigned ms) {
    (void)ctx;
    slept_ms += ms;
    return true;
}

static void client_for(sws_acme_client *c, fake *f, const step *steps, int n) {
    memset(f, 0, sizeof(*f));
    f->steps = steps;
    f->n = n;
    f->key = sws_jws_new_key();
    const char *d[] = {"a.test"};
    EVP_PKEY *ck = sws_jws_new_key();
    f->cert_pem = sws_acme_placeholder(ck, d, 1);
    EVP_PKEY_free(ck);
    sws_acme_hooks h = {.send = fake_send,
                        .send_ctx = f,
                        .sleep_ms = fake_sleep,
                        .publish = fake_publish,
                        .withdraw = fake_withdraw,
                        .ctx = f};
    assert_int_equal(sws_acme_client_init(c, &h, "https://ca/dir", f->key), 0);
    slept_ms = 0;
}

static void fake_free(fake *f) {
    EVP_PKEY_free(f->key);
    free(f->cert_pem);
}

static void issue_whole_order(void **state) {
    (void)state;
    sws_acme_client c;
    fake f;
    client_for(&c, &f, happy, (int)(sizeof(happy) / sizeof(happy[0])));
    assert_int_equal(sws_acme_fetch_directory(&c), 0);
    assert_int_equal(sws_acme_account(&c, "ops@a.test"), 0);
    assert_string_equal(c.kid, "https://ca/acct/9");
    assert_int_equal(c.bad_nonce_retries, 1);
    const char *d[] = {"a.test"};
    EVP_PKEY *ck = sws_jws_new_key();
    char *chain = NULL;
    assert_int_equal(sws_acme_issue(&c, d, 1, ck, &chain), 0);
    assert_int_equal(f.at, f.n); /* every recorded answer was asked for */
    assert_string_equal(chain, f.cert_pem);
    /* newAccount with the jwk (twice: the badNonce retry), the rest with kid. */
    assert_int_equal(f.jwk_seen, 2);
    assert_int_equal(f.kid_seen, 8);
    /* HTTP-01: token "." thumbprint, published, then withdrawn. */
    char want[400];
    snprintf(want, sizeof(want), "tok_1-A.%s", c.thumbprint);
    assert_string_equal(f.published, "tok_1-A");
    assert_string_equal(f.keyauth, want);
    assert_int_equal(f.withdrawn, 1);
    assert_int_equal(slept_ms, 1000); /* the CA's Retry-After: 1 between two polls */
    free(chain);
    EVP_PKEY_free(ck);
    fake_free(&f);
}

static void challenge_invalid_is_reported(void **state) {
    (void)state;
    static const step s[] = {
        {"GET", "https://ca/dir", 200, NULL, NULL, 0, DIR_BODY, 0},
        {"HEAD", "https://ca/nonce", 200, NULL, "n1", 0, NULL, 0},
        {"POST", "https://ca/acct", 200, "https://ca/acct/9", "n2", 0, "{}", 0},
        {"POST", "https://ca/order", 201, "https://ca/order/1", "n3", 0, ORDER_BODY, 0},
        {"POST", "https://ca/authz/1", 200, NULL, "n4", 0, AUTHZ_PENDING, 0},
        {"POST", "https://ca/chal/1", 200, NULL, "n5", 0, "{}", 0},
        {"POST", "https://ca/authz/1", 200, NULL, "n6", 0,
         "{\"status\":\"invalid\",\"challenges\":[{\"type\":\"http-01\",\"error\":{\"type\":"
         "\"urn:ietf:params:acme:error:unauthorized\",\"detail\":\"wrong key authorization\"}}]}",
         0},
    };
    sws_acme_client c;
    fake f;
    client_for(&c, &f, s, (int)(sizeof(s) / sizeof(s[0])));
    assert_int_equal(sws_acme_fetch_directory(&c), 0);
    assert_int_equal(sws_acme_account(&c, NULL), 0);
    const char *d[] = {"a.test"};
    EVP_PKEY *ck = sws_jws_new_key();
    char *chain = NULL;
    assert_int_equal(sws_acme_issue(&c, d, 1, ck, &chain), SWS_ACME_E_CHALLENGE);
    assert_null(chain);
    assert_non_null(strstr(c.err, "a.test"));
    assert_non_null(strstr(c.err, "unauthorized: wrong key authorization"));
    assert_string_equal(c.err_domain, "a.test");
    assert_int_equal(f.withdrawn, 1); /* the token does not outlive its challenge */
    EVP_PKEY_free(ck);
    fake_free(&f);
}

static void rate_limit_carries_retry_after(void **state) {
    (void)state;
    static const step s[] = {
        {"GET", "https://ca/dir", 200, NULL, NULL, 0, DIR_BODY, 0},
        {"HEAD", "https://ca/nonce", 200, NULL, "n1", 0, NULL, 0},
        {"POST", "https://ca/acct", 200, "https://ca/acct/9", "n2", 0, "{}", 0},
        {"POST", "https://ca/order", 429, NULL, "n3", 3600,
         "{\"type\":\"urn:ietf:params:acme:error:rateLimited\",\"detail\":\"too many\"}", 0},
    };
    sws_acme_client c;
    fake f;
    client_for(&c, &f, s, (int)(sizeof(s) / sizeof(s[0])));
    assert_int_equal(sws_acme_fetch_directory(&c), 0);
    assert_int_equal(sws_acme_account(&c, NULL), 0);
    const char *d[] = {"a.test"};
    char *chain = NULL;
    assert_int_equal(sws_acme_issue(&c, d, 1, f.key, &chain), SWS_ACME_E_RATE);
    assert_int_equal(c.retry_after, 3600);
    assert_string_equal(c.err, "newOrder: HTTP 429 rateLimited: too many");
    fake_free(&f);
}

static void ca_down_and_bad_answers(void **state) {
    (void)state;
    static const step down[] = {{"GET", "https://ca/dir", 0, NULL, NULL, 0, NULL, 1}};
    sws_acme_client c;
    fake f;
    client_for(&c, &f, down, 1);
    assert_int_equal(sws_acme_fetch_directory(&c), SWS_ACME_E_NET);
    assert_non_null(strstr(c.err, "Connection refused"));
    fake_free(&f);

    static const step junk[] = {{"GET", "https://ca/dir", 200, NULL, NULL, 0, "<html>", 0}};
    client_for(&c, &f, junk, 1);
    assert_int_equal(sws_acme_fetch_directory(&c), SWS_ACME_E_CA);
    assert_non_null(strstr(c.err, "no JSON object"));
    fake_free(&f);

    /* badNonce for ever: given up after a few, not looped on. */
    static const step nonces[] = {
        {"GET", "https://ca/dir", 200, NULL, NULL, 0, DIR_BODY, 0},
        {"HEAD", "https://ca/nonce", 200, NULL, "n1", 0, NULL, 0},
        {"POST", "https://ca/acct", 400, NULL, "n2", 0, BAD_NONCE, 0},
        {"POST", "https://ca/acct", 400, NULL, "n3", 0, BAD_NONCE, 0},
        {"POST", "https://ca/acct", 400, NULL, "n4", 0, BAD_NONCE, 0},
        {"POST", "https://ca/acct", 400, NULL, "n5", 0, BAD_NONCE, 0},
    };
    client_for(&c, &f, nonces, 6);
    assert_int_equal(sws_acme_fetch_directory(&c), 0);
    assert_int_equal(sws_acme_account(&c, NULL), SWS_ACME_E_CA);
    assert_int_equal(f.at, 6);
    assert_non_null(strstr(c.err, "badNonce"));
    fake_free(&f);

    /* A certificate download that is no certificate is refused. */
    static const step nocert[] = {
        {"GET", "https://ca/dir", 200, NULL, NULL, 0, DIR_BODY, 0},
        {"HEAD", "https://ca/nonce", 200, NULL, "n1", 0, NULL, 0},
        {"POST", "https://ca/acct", 200, "https://ca/acct/9", "n2", 0, "{}", 0},
        {"POST", "https://ca/order", 201, "https://ca/order/1", "n3", 0, ORDER_BODY, 0},
        {"POST", "https://ca/authz/1", 200, NULL, "n4", 0, "{\"status\":\"valid\"}", 0},
        {"POST", "https://ca/order/1/fin", 200, NULL, "n5", 0, "{}", 0},
        {"POST", "https://ca/order/1", 200, NULL, "n6", 0,
         "{\"status\":\"valid\",\"certificate\":\"https://ca/cert/1\"}", 0},
        {"POST", "https://ca/cert/1", 200, NULL, "n7", 0, "garbage", 0},
    };
    client_for(&c, &f, nocert, 8);
    assert_int_equal(sws_acme_fetch_directory(&c), 0);
    assert_int_equal(sws_acme_account(&c, NULL), 0);
    const char *d[] = {"a.test"};
    char *chain = NULL;
    assert_int_equal(sws_acme_issue(&c, d, 1, f.key, &chain), SWS_ACME_E_CA);
    assert_null(chain);
    assert_non_null(strstr(c.err, "no PEM certificate"));
    assert_int_equal(f.withdrawn, 0); /* a valid authorization needs no token */
    fake_free(&f);
}

/* ---- tokens, CSR, store, keys --------------------------------------------------- */

static void token_table(void **state) {
    (void)state;
    char buf[SWS_ACME_KEYAUTH_MAX];
    const char *p = SWS_ACME_CHALLENGE_PREFIX "abc";
    assert_false(sws_acme_challenge_path(p, strlen(p))); /* nothing live: no lock taken */
    assert_int_equal(sws_acme_token_put("abc", "abc.thumb"), 0);
    assert_true(sws_acme_challenge_path(p, strlen(p)));
    assert_int_equal(sws_acme_token_answer(p, strlen(p), buf, sizeof(buf)), 9);
    assert_string_equal(buf, "abc.thumb");
    const char *q = SWS_ACME_CHALLENGE_PREFIX "abcd";
    assert_int_equal(sws_acme_token_answer(q, strlen(q), buf, sizeof(buf)), 0);
    assert_int_equal(sws_acme_token_answer("/abc", 4, buf, sizeof(buf)), 0);
    sws_acme_token_drop("abc");
    assert_int_equal(sws_acme_token_answer(p, strlen(p), buf, sizeof(buf)), 0);
    assert_false(sws_acme_challenge_path(p, strlen(p)));
    for (int i = 0; i < SWS_ACME_TOKENS_MAX; i++) {
        char t[16];
        snprintf(t, sizeof(t), "t%d", i);
        assert_int_equal(sws_acme_token_put(t, "x"), 0);
    }
    assert_int_equal(sws_acme_token_put("one-more", "x"), -ENOSPC);
    for (int i = 0; i < SWS_ACME_TOKENS_MAX; i++) {
        char t[16];
        snprintf(t, sizeof(t), "t%d", i);
        sws_acme_token_drop(t);
    }
    assert_int_equal(atomic_load(&sws_acme_tokens_live), 0);
}

static void csr_names_every_domain(void **state) {
    (void)state;
    EVP_PKEY *k = sws_jws_new_key();
    const char *d[] = {"a.test", "www.a.test"};
    char *csr = sws_acme_csr(k, d, 2);
    assert_non_null(csr);
    unsigned char der[2048];
    long n = sws_b64url_decode(csr, der, sizeof(der));
    assert_true(n > 0);
    const unsigned char *p = der;
    X509_REQ *req = d2i_X509_REQ(NULL, &p, n);
    assert_non_null(req);
    assert_int_equal(X509_REQ_verify(req, k), 1);
    STACK_OF(X509_EXTENSION) *exts = X509_REQ_get_extensions(req);
    assert_int_equal(sk_X509_EXTENSION_num(exts), 1);
    sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
    X509_REQ_free(req);
    /* The placeholder names both and lasts a day. */
    char *pem = sws_acme_placeholder(k, d, 2);
    time_t na;
    int covers = 0;
    assert_int_equal(sws_acme_cert_info(pem, strlen(pem), &na, d, 2, &covers), 0);
    assert_true(covers);
    assert_true(na > time(NULL) + 86000 && na <= time(NULL) + 86400);
    const char *other[] = {"b.test"};
    assert_int_equal(sws_acme_cert_info(pem, strlen(pem), &na, other, 1, &covers), 0);
    assert_false(covers);
    char *kp = sws_acme_key_pem(k);
    assert_true(sws_acme_cert_matches(pem, strlen(pem), kp, strlen(kp)));
    EVP_PKEY *k2 = sws_jws_new_key();
    char *kp2 = sws_acme_key_pem(k2);
    assert_false(sws_acme_cert_matches(pem, strlen(pem), kp2, strlen(kp2)));
    free(kp);
    free(kp2);
    free(pem);
    free(csr);
    EVP_PKEY_free(k);
    EVP_PKEY_free(k2);
}

static void state_dir_round_trip(void **state) {
    (void)state;
    char dir[64] = "/tmp/sws-acme-test-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char sub[128], err[256];
    snprintf(sub, sizeof(sub), "%s/a/b", dir);
    sws_acme_config a;
    sws_acme_config_defaults(&a);
    snprintf(a.state_dir, sizeof(a.state_dir), "%s", sub);
    assert_int_equal(sws_acme_config_set(&a, "domains", "a.test", err, sizeof(err)), 0);
    assert_int_equal(sws_acme_store_prepare(&a, err, sizeof(err)), 0);
    struct stat st;
    assert_int_equal(stat(sub, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    char path[200];
    snprintf(path, sizeof(path), "%s/key.pem", sub);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    sws_acme_state s;
    assert_int_equal(sws_acme_state_load(sub, &s), 0);
    assert_true(s.placeholder);
    /* The account key is made once and then found again. */
    EVP_PKEY *k1 = sws_acme_store_account_key(sub, err, sizeof(err));
    EVP_PKEY *k2 = sws_acme_store_account_key(sub, err, sizeof(err));
    char *t1 = sws_jwk_thumbprint(k1), *t2 = sws_jwk_thumbprint(k2);
    assert_string_equal(t1, t2);
    s.failures = 3;
    s.next_attempt = 12345;
    snprintf(s.last_error, sizeof(s.last_error), "challenge for a.test failed");
    assert_int_equal(sws_acme_state_save(sub, &s), 0);
    sws_acme_state back;
    assert_int_equal(sws_acme_state_load(sub, &back), 0);
    assert_int_equal(back.failures, 3);
    assert_int_equal(back.next_attempt, 12345);
    assert_string_equal(back.last_error, "challenge for a.test failed");
    free(t1);
    free(t2);
    EVP_PKEY_free(k1);
    EVP_PKEY_free(k2);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* challenge = tls-alpn-01: that challenge of the authorization is taken,
 * published for its domain, and its URL is the one POSTed. */
#define AUTHZ_BOTH                                                                                 \
    "{\"status\":\"pending\",\"identifier\":{\"type\":\"dns\",\"value\":\"a.test\"},"              \
    "\"challenges\":[{\"type\":\"http-01\",\"url\":\"https://ca/chal/1\",\"token\":\"tok_1-A\"},"  \
    "{\"type\":\"tls-alpn-01\",\"url\":\"https://ca/chal/2\",\"token\":\"tok_2-B\"}]}"
static const step alpn_order[] = {
    {"GET", "https://ca/dir", 200, NULL, NULL, 0, DIR_BODY, 0},
    {"HEAD", "https://ca/nonce", 200, NULL, "n1", 0, NULL, 0},
    {"POST", "https://ca/acct", 201, "https://ca/acct/9", "n3", 0, "{\"status\":\"valid\"}", 0},
    {"POST", "https://ca/order", 201, "https://ca/order/1", "n4", 0, ORDER_BODY, 0},
    {"POST", "https://ca/authz/1", 200, NULL, "n5", 0, AUTHZ_BOTH, 0},
    {"POST", "https://ca/chal/2", 200, NULL, "n6", 0, "{\"status\":\"pending\"}", 0},
    {"POST", "https://ca/authz/1", 200, NULL, "n8", 0, "{\"status\":\"valid\"}", 0},
    {"POST", "https://ca/order/1/fin", 200, NULL, "n9", 0, "{\"status\":\"valid\"}", 0},
    {"POST", "https://ca/order/1", 200, NULL, "n10", 0,
     "{\"status\":\"valid\",\"certificate\":\"https://ca/cert/1\"}", 0},
    {"POST", "https://ca/cert/1", 200, NULL, "n11", 0, "@CERT", 0},
};

static void tls_alpn_challenge_taken(void **state) {
    (void)state;
    sws_acme_client c;
    fake f;
    client_for(&c, &f, alpn_order, (int)(sizeof(alpn_order) / sizeof(alpn_order[0])));
    c.h.challenge = "tls-alpn-01";
    assert_int_equal(sws_acme_fetch_directory(&c), 0);
    assert_int_equal(sws_acme_account(&c, NULL), 0);
    const char *d[] = {"a.test"};
    EVP_PKEY *ck = sws_jws_new_key();
    char *chain = NULL;
    assert_int_equal(sws_acme_issue(&c, d, 1, ck, &chain), 0);
    assert_int_equal(f.at, f.n);
    char want[400];
    snprintf(want, sizeof(want), "tok_2-B.%s", c.thumbprint);
    assert_string_equal(f.published, "tok_2-B");
    assert_string_equal(f.keyauth, want);
    assert_string_equal(f.domain, "a.test");
    assert_int_equal(f.withdrawn, 1);
    free(chain);
    fake_free(&f);
    /* An authorization without the challenge of the order's type. */
    static const step only_http[] = {
        {"GET", "https://ca/dir", 200, NULL, NULL, 0, DIR_BODY, 0},
        {"HEAD", "https://ca/nonce", 200, NULL, "n1", 0, NULL, 0},
        {"POST", "https://ca/acct", 201, "https://ca/acct/9", "n3", 0, "{}", 0},
        {"POST", "https://ca/order", 201, "https://ca/order/1", "n4", 0, ORDER_BODY, 0},
        {"POST", "https://ca/authz/1", 200, NULL, "n5", 0, AUTHZ_PENDING, 0},
    };
    client_for(&c, &f, only_http, (int)(sizeof(only_http) / sizeof(only_http[0])));
    c.h.challenge = "tls-alpn-01";
    assert_int_equal(sws_acme_fetch_directory(&c), 0);
    assert_int_equal(sws_acme_account(&c, NULL), 0);
    assert_int_equal(sws_acme_issue(&c, d, 1, ck, &chain), SWS_ACME_E_CA);
    assert_string_equal(c.err, "authorization for a.test: no usable tls-alpn-01 challenge");
    assert_int_equal(f.withdrawn, 0);
    EVP_PKEY_free(ck);
    fake_free(&f);
}

static void config_keys(void **state) {
    (void)state;
    sws_acme_config a;
    char err[256];
    sws_acme_config_defaults(&a);
    assert_false(sws_acme_enabled(&a));
    assert_int_equal(a.renew_before_s, 30u * 86400u);
    assert_string_equal(a.challenge, "http-01");
    assert_int_equal(
        sws_acme_config_set(&a, "domains", "a.test, www.a.test b.test", err, sizeof(err)), 0);
    assert_int_equal(a.ndomains, 3);
    assert_string_equal(a.domains[2], "b.test");
    assert_int_equal(sws_acme_config_set(&a, "domains", "*.a.test", err, sizeof(err)), -EINVAL);
    assert_int_equal(a.ndomains, 3); /* a refused value leaves the old one */
    assert_int_equal(sws_acme_config_set(&a, "renew_before", "2h", err, sizeof(err)), 0);
    assert_int_equal(a.renew_before_s, 7200);
    assert_int_equal(sws_acme_config_set(&a, "renew_before", "soon", err, sizeof(err)), -EINVAL);
    assert_int_equal(sws_acme_config_set(&a, "challenge", "dns-01", err, sizeof(err)), -EINVAL);
    assert_int_equal(sws_acme_config_set(&a, "challenge", "tls-alpn-01", err, sizeof(err)), 0);
    assert_true(sws_acme_tls_alpn(&a));
    assert_int_equal(sws_acme_config_set(&a, "state_dir", "relative", err, sizeof(err)), -EINVAL);
    assert_int_equal(sws_acme_config_set(&a, "directory", "ftp://x", err, sizeof(err)), -EINVAL);
    assert_int_equal(sws_acme_config_set(&a, "nope", "x", err, sizeof(err)), -EINVAL);
    assert_int_equal(sws_acme_config_set(&a, "directory", "https://ca/dir", err, sizeof(err)), 0);
    assert_int_equal(sws_acme_config_check(&a, 0, err, sizeof(err)), 0);
    a.ndomains = 0;
    assert_int_equal(sws_acme_config_check(&a, 0, err, sizeof(err)), -EINVAL);
    /* [acme] with no domains of its own: its [acme NAME] orders have them. */
    assert_int_equal(sws_acme_config_check(&a, 2, err, sizeof(err)), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(b64url_vectors),
        cmocka_unit_test(jws_with_jwk_verifies),
        cmocka_unit_test(jws_with_kid_and_post_as_get),
        cmocka_unit_test(thumbprint_is_sha256_of_canonical_jwk),
        cmocka_unit_test(issue_whole_order),
        cmocka_unit_test(challenge_invalid_is_reported),
        cmocka_unit_test(tls_alpn_challenge_taken),
        cmocka_unit_test(rate_limit_carries_retry_after),
        cmocka_unit_test(ca_down_and_bad_answers),
        cmocka_unit_test(token_table),
        cmocka_unit_test(csr_names_every_domain),
        cmocka_unit_test(state_dir_round_trip),
        cmocka_unit_test(config_keys),
    };
    return cmocka_run_group_tests_name("acme", tests, NULL, NULL);
}
