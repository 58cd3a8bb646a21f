/* CSRs, key PEM, certificate expiry and the placeholder certificate for the
 * ACME client (acme_cert.h). ECDSA P-256 throughout: small, fast handshakes,
 * and what every ACME CA issues for. */
#include "acme_cert.h"

#include "jws.h"

#include <errno.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <string.h>

static STACK_OF(X509_EXTENSION) * san_exts(const char *const *domains, int n) {
    size_t cap = 16;
    for (int i = 0; i < n; i++)
        cap += strlen(domains[i]) + 5;
    char *san = malloc(cap);
    if (!san)
        return NULL;
    size_t o = 0;
    for (int i = 0; i < n; i++)
        o += (size_t)snprintf(san + o, cap - o, "%sDNS:%s", i ? "," : "", domains[i]);
    STACK_OF(X509_EXTENSION) *exts = sk_X509_EXTENSION_new_null();
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, NULL, NID_subject_alt_name, san);
    free(san);
    if (!exts || !ext || !sk_X509_EXTENSION_push(exts, ext)) {
        X509_EXTENSION_free(ext);
        sk_X509_EXTENSION_free(exts);
        return NULL;
    }
    return exts;
}

char *sws_acme_csr(EVP_PKEY *key, const char *const *domains, int n) {
    X509_REQ *req = X509_REQ_new();
    STACK_OF(X509_EXTENSION) *exts = san_exts(domains, n);
    char *out = NULL;
    unsigned char *der = NULL;
    if (!req || !exts || n < 1)
        goto done;
    X509_NAME *name = X509_REQ_get_subject_name(req);
    if (!X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)domains[0], -1,
                                    -1, 0) ||
        !X509_REQ_add_extensions(req, exts) || !X509_REQ_set_pubkey(req, key) ||
        !X509_REQ_sign(req, key, EVP_sha256()))
        goto done;
    int len = i2d_X509_REQ(req, &der);
    if (len > 0)
        out = sws_b64url(der, (size_t)len);
done:
    OPENSSL_free(der);
    sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
    X509_REQ_free(req);
    return out;
}

static char *bio_text(BIO *b) {
    char *p;
    long n = BIO_get_mem_data(b, &p);
    char *out = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (out) {
        memcpy(out, p, (size_t)n);
        out[n] = '\0';
    }
    return out;
}

char *sws_acme_key_pem(EVP_PKEY *key) {
    BIO *b = BIO_new(BIO_s_mem());
    char *out = NULL;
    if (b && PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL))
        out = bio_text(b);
    BIO_free(b);
    return out;
}

EVP_PKEY *sws_acme_key_from_pem(const char *pem, size_t len) {
    BIO *b = BIO_new_mem_buf(pem, (int)len);
    EVP_PKEY *k = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    return k;
}

int sws_acme_cert_info(const char *pem, size_t len, time_t *not_after, const char *const *domains,
                       int n, int *covers) {
    BIO *b = BIO_new_mem_buf(pem, (int)len);
    X509 *x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    if (!x)
        return -EINVAL;
    struct tm tm;
    int rc = -EINVAL;
    if (ASN1_TIME_to_tm(X509_get0_notAfter(x), &tm)) {
        *not_after = timegm(&tm);
        rc = 0;
    }
    int all = 1;
    for (int i = 0; i < n; i++)
        if (X509_check_host(x, domains[i], 0, 0, NULL) != 1)
            all = 0;
    if (covers)
        *covers = all;
    X509_free(x);
    return rc;
}

char *sws_acme_placeholder(EVP_PKEY *key, const char *const *domains, int n) {
    X509 *x = X509_new();
    STACK_OF(X509_EXTENSION) *exts = san_exts(domains, n);
    BIO *b = BIO_new(BIO_s_mem());
    char *out = NULL;
    if (!x || !exts || !b || n < 1)
        goto done;
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), 0);
    X509_gmtime_adj(X509_getm_notAfter(x), 86400);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)domains[0], -1, -1,
                               0);
    X509_set_issuer_name(x, name);
    X509_add_ext(x, sk_X509_EXTENSION_value(exts, 0), -1);
    if (X509_set_pubkey(x, key) && X509_sign(x, key, EVP_sha256()) && PEM_write_bio_X509(b, x))
        out = bio_text(b);
done:
    BIO_free(b);
    sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
    X509_free(x);
    return out;
}

int sws_acme_cert_matches(const char *chain_pem, size_t clen, const char *key_pem, size_t klen) {
    BIO *b = BIO_new_mem_buf(chain_pem, (int)clen);
    X509 *x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
    BIO_free(b);
    EVP_PKEY *k = sws_acme_key_from_pem(key_pem, klen);
    int ok = x && k && X509_check_private_key(x, k) == 1;
    X509_free(x);
    EVP_PKEY_free(k);
    return ok;
}
