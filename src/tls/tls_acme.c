/* TLS-ALPN-01 challenge certificates and their table (tls_acme.h). The table
 * is 16 slots under a mutex, as the HTTP-01 token table: a lookup holds it for
 * a few compares and an SSL_CTX_up_ref, and only a handshake that offers
 * acme-tls/1 ever takes it. A context handed out is counted by OpenSSL, so a
 * withdrawn challenge is freed once the last handshake on it ends. */
#include "tls_acme.h"

#include <errno.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define NAME_MAX_LEN 254

static struct {
    pthread_mutex_t lock;
    _Atomic int live;
    struct {
        char name[NAME_MAX_LEN];
        SSL_CTX *ctx;
    } slot[SWS_TLS_ACME_MAX];
} T = {.lock = PTHREAD_MUTEX_INITIALIZER};

static const unsigned char alpn_wire[] = "\x0a" SWS_TLS_ACME_ALPN;

bool sws_tls_acme_offered(const unsigned char *list, size_t len) {
    for (size_t i = 0; i < len;) {
        size_t n = list[i];
        if (n == 0 || i + 1 + n > len)
            return false;
        if (n == sizeof(alpn_wire) - 2 && memcmp(list + i + 1, alpn_wire + 1, n) == 0)
            return true;
        i += 1 + n;
    }
    return false;
}

/* The OCTET STRING (SIZE (32)) of RFC 8737 section 3, DER: 04 20 digest. */
static X509_EXTENSION *acme_identifier(const char *key_authz) {
    unsigned char der[34] = {0x04, 0x20};
    unsigned int mdlen = 0;
    if (!EVP_Digest(key_authz, strlen(key_authz), der + 2, &mdlen, EVP_sha256(), NULL) ||
        mdlen != 32)
        return NULL;
    ASN1_OBJECT *oid = OBJ_txt2obj("1.3.6.1.5.5.7.1.31", 1);
    ASN1_OCTET_STRING *value = ASN1_OCTET_STRING_new();
    X509_EXTENSION *ext = NULL;
    if (oid && value && ASN1_OCTET_STRING_set(value, der, sizeof(der)))
        ext = X509_EXTENSION_create_by_OBJ(NULL, oid, 1, value);
    ASN1_OBJECT_free(oid);
    ASN1_OCTET_STRING_free(value);
    return ext;
}

int sws_tls_acme_cert(const char *name, const char *key_authz, X509 **cert, EVP_PKEY **key) {
    *cert = NULL;
    *key = NULL;
    size_t n = strlen(name);
    if (n == 0 || n >= NAME_MAX_LEN || strpbrk(name, ",:* \t") || !key_authz[0])
        return -EINVAL;
    char san[NAME_MAX_LEN + 8];
    snprintf(san, sizeof(san), "DNS:%s", name);
    EVP_PKEY *k = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    X509_EXTENSION *alt = X509V3_EXT_conf_nid(NULL, NULL, NID_subject_alt_name, san);
    X509_EXTENSION *id = acme_identifier(key_authz);
    unsigned char serial[16];
    BIGNUM *bn = NULL;
    bool ok = k && x && alt && id && RAND_bytes(serial, sizeof(serial)) == 1;
    if (ok) {
        serial[0] &= 0x7f; /* positive */
        bn = BN_bin2bn(serial, sizeof(serial), NULL);
        /* The name is in the SAN alone ("no other identifiers"): the
         * subject, which RFC 5280 wants non-empty when it is the issuer,
         * names no host. */
        X509_NAME *subj = X509_get_subject_name(x);
        ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) && X509_set_version(x, 2) &&
             X509_gmtime_adj(X509_getm_notBefore(x), -3600) &&
             X509_gmtime_adj(X509_getm_notAfter(x), 7 * 86400) &&
             X509_NAME_add_entry_by_txt(subj, "CN", MBSTRING_ASC,
                                        (const unsigned char *)"ACME TLS-ALPN-01 challenge", -1, -1,
                                        0) &&
             X509_set_issuer_name(x, subj) && X509_add_ext(x, alt, -1) && X509_add_ext(x, id, -1) &&
             X509_set_pubkey(x, k) && X509_sign(x, k, EVP_sha256());
    }
    BN_free(bn);
    X509_EXTENSION_free(alt);
    X509_EXTENSION_free(id);
    ERR_clear_error();
    if (!ok) {
        X509_free(x);
        EVP_PKEY_free(k);
        return -ENOMEM;
    }
    *cert = x;
    *key = k;
    return 0;
}

/* The challenge context answers acme-tls/1 and nothing else (RFC 8737
 * section 3: the ServerHello names exactly it). */
static int alpn_only_acme(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                          const unsigned char *in, unsigned int inlen, void *arg) {
    (void)ssl;
    (void)arg;
    if (!sws_tls_acme_offered(in, inlen))
        return SSL_TLSEXT_ERR_ALERT_FATAL;
    *out = alpn_wire + 1;
    *outlen = (unsigned char)(sizeof(alpn_wire) - 2);
    return SSL_TLSEXT_ERR_OK;
}

static SSL_CTX *challenge_ctx(const char *name, const char *key_authz) {
    X509 *x;
    EVP_PKEY *k;
    if (sws_tls_acme_cert(name, key_authz, &x, &k) < 0)
        return NULL;
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    bool ok = ctx && SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) &&
              SSL_CTX_use_certificate(ctx, x) == 1 && SSL_CTX_use_PrivateKey(ctx, k) == 1;
    X509_free(x);
    EVP_PKEY_free(k);
    if (!ok) {
        SSL_CTX_free(ctx);
        ERR_clear_error();
        return NULL;
    }
    /* Nothing to resume: a validation is one handshake. */
    SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_alpn_select_cb(ctx, alpn_only_acme, NULL);
    return ctx;
}

static int find_slot(const char *name, size_t len) {
    for (int i = 0; i < SWS_TLS_ACME_MAX; i++)
        if (T.slot[i].ctx && strlen(T.slot[i].name) == len &&
            strncasecmp(T.slot[i].name, name, len) == 0)
            return i;
    return -1;
}

int sws_tls_acme_put(const char *name, const char *key_authz) {
    SSL_CTX *ctx = challenge_ctx(name, key_authz);
    if (!ctx)
        return strlen(name) >= NAME_MAX_LEN ? -EINVAL : -ENOMEM;
    pthread_mutex_lock(&T.lock);
    int i = find_slot(name, strlen(name));
    SSL_CTX *old = NULL;
    if (i < 0)
        for (int k = 0; k < SWS_TLS_ACME_MAX && i < 0; k++)
            if (!T.slot[k].ctx)
                i = k;
    if (i >= 0) {
        old = T.slot[i].ctx;
        if (!old)
            atomic_fetch_add_explicit(&T.live, 1, memory_order_relaxed);
        snprintf(T.slot[i].name, sizeof(T.slot[i].name), "%s", name);
        T.slot[i].ctx = ctx;
    }
    pthread_mutex_unlock(&T.lock);
    SSL_CTX_free(old);
    if (i < 0) {
        SSL_CTX_free(ctx);
        return -ENOSPC;
    }
    return 0;
}

void sws_tls_acme_drop(const char *name) {
    pthread_mutex_lock(&T.lock);
    int i = find_slot(name, strlen(name));
    SSL_CTX *old = NULL;
    if (i >= 0) {
        old = T.slot[i].ctx;
        T.slot[i].ctx = NULL;
        atomic_fetch_sub_explicit(&T.live, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&T.lock);
    SSL_CTX_free(old);
}

bool sws_tls_acme_live(void) {
    return atomic_load_explicit(&T.live, memory_order_relaxed) > 0;
}

SSL_CTX *sws_tls_acme_find(const char *name, size_t len) {
    if (!sws_tls_acme_live() || len == 0 || len >= NAME_MAX_LEN)
        return NULL;
    pthread_mutex_lock(&T.lock);
    int i = find_slot(name, len);
    SSL_CTX *ctx = i >= 0 ? T.slot[i].ctx : NULL;
    if (ctx && !SSL_CTX_up_ref(ctx))
        ctx = NULL;
    pthread_mutex_unlock(&T.lock);
    return ctx;
}
