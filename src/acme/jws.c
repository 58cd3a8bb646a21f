/* JWS signing for the ACME client: ES256 over base64url(protected) "."
 * base64url(payload), the raw r||s signature JOSE wants (OpenSSL gives DER),
 * the JWK and its RFC 7638 thumbprint for the HTTP-01 key authorization. */
#include "jws.h"

#include <jansson.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

static const char b64u_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

char *sws_b64url(const void *data, size_t len) {
    const unsigned char *p = data;
    char *out = malloc(len / 3 * 4 + 5);
    if (!out)
        return NULL;
    size_t o = 0, i = 0;
    for (; i + 2 < len; i += 3) {
        unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8 | p[i + 2];
        out[o++] = b64u_chars[v >> 18 & 63];
        out[o++] = b64u_chars[v >> 12 & 63];
        out[o++] = b64u_chars[v >> 6 & 63];
        out[o++] = b64u_chars[v & 63];
    }
    if (len - i == 1) {
        unsigned v = (unsigned)p[i] << 16;
        out[o++] = b64u_chars[v >> 18 & 63];
        out[o++] = b64u_chars[v >> 12 & 63];
    } else if (len - i == 2) {
        unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8;
        out[o++] = b64u_chars[v >> 18 & 63];
        out[o++] = b64u_chars[v >> 12 & 63];
        out[o++] = b64u_chars[v >> 6 & 63];
    }
    out[o] = '\0';
    return out;
}

static int b64u_val(int c) {
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '-' || c == '+')
        return 62;
    if (c == '_' || c == '/')
        return 63;
    return -1;
}

long sws_b64url_decode(const char *in, unsigned char *out, size_t cap) {
    unsigned acc = 0;
    int bits = 0;
    size_t o = 0;
    for (; *in && *in != '='; in++) {
        int v = b64u_val((unsigned char)*in);
        if (v < 0)
            return -1;
        acc = acc << 6 | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (o >= cap)
                return -1;
            out[o++] = (unsigned char)(acc >> bits & 0xff);
        }
    }
    return (long)o;
}

EVP_PKEY *sws_jws_new_key(void) {
    return EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
}

/* A P-256 coordinate as the 32 bytes JWK wants, base64url'd. */
static char *coord(EVP_PKEY *key, const char *name) {
    BIGNUM *bn = NULL;
    unsigned char buf[32];
    char *s = NULL;
    if (EVP_PKEY_get_bn_param(key, name, &bn) && BN_bn2binpad(bn, buf, sizeof(buf)) == 32)
        s = sws_b64url(buf, sizeof(buf));
    BN_free(bn);
    return s;
}

char *sws_jwk_json(EVP_PKEY *key) {
    char *x = coord(key, OSSL_PKEY_PARAM_EC_PUB_X), *y = coord(key, OSSL_PKEY_PARAM_EC_PUB_Y);
    char *out = NULL;
    if (x && y) {
        /* RFC 7638 fixes the members, their order and no whitespace; jansson's
         * sorted compact output is exactly that. */
        json_t *j = json_pack("{s:s, s:s, s:s, s:s}", "crv", "P-256", "kty", "EC", "x", x, "y", y);
        if (j)
            out = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
        json_decref(j);
    }
    free(x);
    free(y);
    return out;
}

char *sws_jwk_thumbprint(EVP_PKEY *key) {
    char *jwk = sws_jwk_json(key);
    if (!jwk)
        return NULL;
    unsigned char md[32];
    unsigned mdlen = 0;
    char *out = NULL;
    if (EVP_Digest(jwk, strlen(jwk), md, &mdlen, EVP_sha256(), NULL) && mdlen == 32)
        out = sws_b64url(md, mdlen);
    free(jwk);
    return out;
}

/* ES256 over msg: the DER signature OpenSSL makes, as JOSE's fixed r||s. */
static int es256(EVP_PKEY *key, const char *msg, unsigned char rs[64]) {
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    unsigned char der[80];
    size_t derlen = sizeof(der);
    int rc = -1;
    if (md && EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, key) == 1 &&
        EVP_DigestSign(md, der, &derlen, (const unsigned char *)msg, strlen(msg)) == 1) {
        const unsigned char *p = der;
        ECDSA_SIG *sig = d2i_ECDSA_SIG(NULL, &p, (long)derlen);
        if (sig && BN_bn2binpad(ECDSA_SIG_get0_r(sig), rs, 32) == 32 &&
            BN_bn2binpad(ECDSA_SIG_get0_s(sig), rs + 32, 32) == 32)
            rc = 0;
        ECDSA_SIG_free(sig);
    }
    EVP_MD_CTX_free(md);
    return rc;
}

char *sws_jws_sign(EVP_PKEY *key, const char *kid, const char *nonce, const char *url,
                   const char *payload) {
    char *out = NULL, *hdr_text = NULL, *p64 = NULL, *h64 = NULL, *s64 = NULL, *msg = NULL;
    json_t *hdr = json_pack("{s:s, s:s, s:s}", "alg", "ES256", "nonce", nonce, "url", url);
    if (!hdr)
        return NULL;
    if (kid) {
        json_object_set_new(hdr, "kid", json_string(kid));
    } else {
        char *jwk = sws_jwk_json(key);
        json_t *j = jwk ? json_loads(jwk, 0, NULL) : NULL;
        free(jwk);
        if (!j)
            goto done;
        json_object_set_new(hdr, "jwk", j);
    }
    hdr_text = json_dumps(hdr, JSON_COMPACT);
    if (!hdr_text)
        goto done;
    h64 = sws_b64url(hdr_text, strlen(hdr_text));
    p64 = sws_b64url(payload ? payload : "", payload ? strlen(payload) : 0);
    if (!h64 || !p64)
        goto done;
    size_t mlen = strlen(h64) + strlen(p64) + 2;
    msg = malloc(mlen);
    if (!msg)
        goto done;
    snprintf(msg, mlen, "%s.%s", h64, p64);
    unsigned char rs[64];
    if (es256(key, msg, rs) < 0 || !(s64 = sws_b64url(rs, sizeof(rs))))
        goto done;
    json_t *jws = json_pack("{s:s, s:s, s:s}", "protected", h64, "payload", p64, "signature", s64);
    if (jws)
        out = json_dumps(jws, JSON_COMPACT);
    json_decref(jws);
done:
    json_decref(hdr);
    free(hdr_text);
    free(h64);
    free(p64);
    free(s64);
    free(msg);
    return out;
}
