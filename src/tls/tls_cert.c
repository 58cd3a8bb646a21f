/* One certificate of a listener: its chain, key and OCSP response read and
 * checked once (the key matches, the key type is one a context has a slot
 * for), and what it says of itself: the names it serves (subjectAltName DNS
 * entries, else the subject's CN, as RFC 6125 6.4.4 says), its key type, its
 * notAfter. The objects are shared by reference by every context that serves
 * it. */
#include "tls_internal.h"
#include "tls_names.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/ocsp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void sws_tls_why(char *buf, size_t len) {
    unsigned long e = ERR_peek_last_error();
    if (e)
        ERR_error_string_n(e, buf, len);
    else
        snprintf(buf, len, "unknown error");
    ERR_clear_error();
}

void sws_tls_cert_ref(sws_tls_cert *c) {
    if (c)
        atomic_fetch_add(&c->refs, 1);
}

void sws_tls_cert_unref(sws_tls_cert *c) {
    if (!c || atomic_fetch_sub(&c->refs, 1) != 1)
        return;
    X509_free(c->leaf);
    sk_X509_pop_free(c->chain, X509_free);
    EVP_PKEY_free(c->pkey);
    OPENSSL_free(c->ocsp);
    for (int i = 0; i < c->nnames; i++)
        free(c->names[i]);
    free(c->names);
    free(c);
}

/* The slot and a name for the key type; -1 for one no context can hold. */
static int key_type(EVP_PKEY *k, char *out, size_t len) {
    char group[64] = "";
    size_t glen = 0;
    switch (EVP_PKEY_get_base_id(k)) {
    case EVP_PKEY_RSA:
        snprintf(out, len, "RSA %d", EVP_PKEY_get_bits(k));
        return SWS_TLS_SLOT_RSA;
    case EVP_PKEY_RSA_PSS:
        snprintf(out, len, "RSA-PSS %d", EVP_PKEY_get_bits(k));
        return SWS_TLS_SLOT_RSA_PSS;
    case EVP_PKEY_EC: {
        EVP_PKEY_get_group_name(k, group, sizeof(group), &glen);
        const char *nist = EC_curve_nid2nist(OBJ_sn2nid(group));
        snprintf(out, len, "ECDSA %s", nist ? nist : group);
        return SWS_TLS_SLOT_EC;
    }
    case EVP_PKEY_ED25519:
        snprintf(out, len, "Ed25519");
        return SWS_TLS_SLOT_ED25519;
    case EVP_PKEY_ED448:
        snprintf(out, len, "Ed448");
        return SWS_TLS_SLOT_ED448;
    }
    snprintf(out, len, "%s", OBJ_nid2sn(EVP_PKEY_get_base_id(k)));
    return -1;
}

/* A name as a pattern the table serves: exact, or '*' as a whole first label
 * before two labels at least. */
static bool servable(const char *n) {
    const char *star = strchr(n, '*');
    if (!star)
        return true;
    return star == n && n[1] == '.' && !strchr(n + 2, '*') && strchr(n + 2, '.');
}

static int add_name(sws_tls_cert *c, const unsigned char *data, int len) {
    char norm[SWS_TLS_NAME_LEN + 1];
    if (len <= 0 || !sws_tls_name_normal((const char *)data, (size_t)len, norm) || !servable(norm))
        return 0; /* an IP address, a partial wildcard: not a name SNI can carry */
    for (int i = 0; i < c->nnames; i++)
        if (!strcmp(c->names[i], norm))
            return 0;
    char **names = realloc(c->names, (size_t)(c->nnames + 1) * sizeof(*names));
    if (!names)
        return -ENOMEM;
    c->names = names;
    if (!(c->names[c->nnames] = strdup(norm)))
        return -ENOMEM;
    c->nnames++;
    return 0;
}

/* subjectAltName's DNS names; the CN only when there are none (RFC 6125). */
static int read_names(sws_tls_cert *c) {
    GENERAL_NAMES *san = X509_get_ext_d2i(c->leaf, NID_subject_alt_name, NULL, NULL);
    bool any_dns = false;
    int rc = 0;
    for (int i = 0; san && i < sk_GENERAL_NAME_num(san) && rc == 0; i++) {
        const GENERAL_NAME *g = sk_GENERAL_NAME_value(san, i);
        if (g->type != GEN_DNS)
            continue;
        any_dns = true;
        rc = add_name(c, ASN1_STRING_get0_data(g->d.dNSName), ASN1_STRING_length(g->d.dNSName));
    }
    GENERAL_NAMES_free(san);
    if (!any_dns && rc == 0) {
        const X509_NAME *subj = X509_get_subject_name(c->leaf);
        int at = X509_NAME_get_index_by_NID(subj, NID_commonName, -1);
        const ASN1_STRING *cn =
            at >= 0 ? X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subj, at)) : NULL;
        if (cn)
            rc = add_name(c, ASN1_STRING_get0_data(cn), ASN1_STRING_length(cn));
    }
    ERR_clear_error();
    return rc;
}

static void read_dates(sws_tls_cert *c) {
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    if (ASN1_TIME_to_tm(X509_get0_notAfter(c->leaf), &tm) == 1) {
        strftime(c->not_after, sizeof(c->not_after), "%Y-%m-%dT%H:%M:%SZ", &tm);
        c->not_after_s = (int64_t)timegm(&tm);
    }
    ERR_clear_error();
}

/* Reads cc->ocsp into c (a DER response, re-encoded to check it). */
static int read_ocsp(sws_tls_cert *c, const char *path, const char *at, const char *sec, char *err,
                     size_t errlen) {
    char r[256];
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s%s ocsp %s: cannot open: %s", at, sec, path, strerror(errno));
        return -EINVAL;
    }
    unsigned char buf[65536];
    size_t got = fread(buf, 1, sizeof(buf), f);
    bool big = !feof(f);
    fclose(f);
    if (big) {
        snprintf(err, errlen, "%s%s ocsp %s: larger than 64 KiB", at, sec, path);
        return -EINVAL;
    }
    const unsigned char *p = buf;
    OCSP_RESPONSE *resp = d2i_OCSP_RESPONSE(NULL, &p, (long)got);
    if (!resp) {
        sws_tls_why(r, sizeof(r));
        snprintf(err, errlen, "%s%s ocsp %s: not a DER OCSP response (%s)", at, sec, path, r);
        return -EINVAL;
    }
    unsigned char *der = NULL;
    int len = i2d_OCSP_RESPONSE(resp, &der);
    OCSP_RESPONSE_free(resp);
    if (len <= 0) {
        snprintf(err, errlen, "%s%s ocsp %s: cannot encode", at, sec, path);
        return -EINVAL;
    }
    c->ocsp = der;
    c->ocsp_len = len;
    return 0;
}

static void place(char *out, size_t len, const char *file, uint32_t line) {
    if (file && line)
        snprintf(out, len, "%s:%u: ", file, (unsigned)line);
    else
        out[0] = '\0';
}

sws_tls_cert *sws_tls_cert_load(const sws_tls_cert_config *cc, const char *file, char *err,
                                size_t errlen) {
    char r[256], at[300], sec[SWS_TLS_SECTION_MAX + 8];
    snprintf(sec, sizeof(sec), cc->name[0] ? "[tls %s]" : "[tls]", cc->name);
    ERR_clear_error();
    place(at, sizeof(at), file, cc->cert_line ? cc->cert_line : cc->line);
    if (!cc->cert[0] || !cc->key[0]) {
        snprintf(err, errlen, "%s%s a certificate needs cert and key", at, sec);
        return NULL;
    }
    sws_tls_cert *c = calloc(1, sizeof(*c));
    if (!c) {
        snprintf(err, errlen, "%s out of memory", sec);
        return NULL;
    }
    atomic_init(&c->refs, 1);
    FILE *f = fopen(cc->cert, "r");
    if (!f) {
        snprintf(err, errlen, "%s%s cert %s: cannot open: %s", at, sec, cc->cert, strerror(errno));
        goto fail;
    }
    c->leaf = PEM_read_X509(f, NULL, NULL, NULL);
    if (!c->leaf) {
        fclose(f);
        sws_tls_why(r, sizeof(r));
        snprintf(err, errlen, "%s%s cert %s: no PEM certificate (%s)", at, sec, cc->cert, r);
        goto fail;
    }
    c->chain = sk_X509_new_null();
    X509 *x;
    while (c->chain && (x = PEM_read_X509(f, NULL, NULL, NULL)) != NULL)
        sk_X509_push(c->chain, x);
    fclose(f);
    ERR_clear_error(); /* the end of the file reads as "no start line" */
    place(at, sizeof(at), file, cc->key_line ? cc->key_line : cc->line);
    f = fopen(cc->key, "r");
    if (!f) {
        snprintf(err, errlen, "%s%s key %s: cannot open: %s", at, sec, cc->key, strerror(errno));
        goto fail;
    }
    c->pkey = PEM_read_PrivateKey(f, NULL, NULL, NULL);
    fclose(f);
    if (!c->pkey) {
        sws_tls_why(r, sizeof(r));
        snprintf(err, errlen, "%s%s key %s: no PEM private key (%s)", at, sec, cc->key, r);
        goto fail;
    }
    if (X509_check_private_key(c->leaf, c->pkey) != 1) {
        ERR_clear_error();
        snprintf(err, errlen, "%s%s key %s does not match the certificate in %s", at, sec, cc->key,
                 cc->cert);
        goto fail;
    }
    if ((c->slot = key_type(c->pkey, c->key_type, sizeof(c->key_type))) < 0) {
        snprintf(err, errlen, "%s%s key %s: a %s key is not served (want RSA, ECDSA or EdDSA)", at,
                 sec, cc->key, c->key_type);
        goto fail;
    }
    place(at, sizeof(at), file, cc->ocsp_line ? cc->ocsp_line : cc->line);
    if (cc->ocsp[0] && read_ocsp(c, cc->ocsp, at, sec, err, errlen) < 0)
        goto fail;
    unsigned int n = 0;
    if (read_names(c) < 0 || X509_digest(c->leaf, EVP_sha256(), c->fp, &n) != 1) {
        ERR_clear_error();
        snprintf(err, errlen, "%s out of memory", sec);
        goto fail;
    }
    read_dates(c);
    return c;
fail:
    sws_tls_cert_unref(c);
    return NULL;
}

int sws_tls_cert_describe(const char *path, char *out, size_t len) {
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(out, len, "cannot open: %s", strerror(errno));
        return -errno;
    }
    sws_tls_cert c = {.leaf = PEM_read_X509(f, NULL, NULL, NULL)};
    fclose(f);
    if (!c.leaf) {
        char r[256];
        sws_tls_why(r, sizeof(r));
        snprintf(out, len, "no PEM certificate (%s)", r);
        return -EINVAL;
    }
    EVP_PKEY *pub = X509_get0_pubkey(c.leaf);
    if (pub)
        key_type(pub, c.key_type, sizeof(c.key_type));
    read_names(&c);
    read_dates(&c);
    size_t used = 0;
    for (int i = 0; i < c.nnames && used < len; i++)
        used += (size_t)snprintf(out + used, len - used, "%s%s", i ? " " : "", c.names[i]);
    if (used < len)
        snprintf(out + used, len - used, "%s(%s, notAfter %s)", c.nnames ? " " : "no name ",
                 c.key_type, c.not_after[0] ? c.not_after : "unknown");
    for (int i = 0; i < c.nnames; i++)
        free(c.names[i]);
    free(c.names);
    X509_free(c.leaf);
    ERR_clear_error();
    return 0;
}
