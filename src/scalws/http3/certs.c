/* The endpoint's certificates on GnuTLS, chosen by the ClientHello's
 * server name as the TCP side chooses OpenSSL's (doc/tls.md, "A
 * certificate per name"): the names are each certificate's own
 * (subjectAltName DNS entries, else the CN), certificates holding the same
 * names are one set (one credentials, GnuTLS picking RSA or ECDSA by the
 * client's signature algorithms), and the name table of src/tls finds a
 * name's set (exact, then `*.` one label); a session's ticket is sealed for
 * its name. Invariant: a table is read-only
 * once loaded, and lives while the endpoint or a connection refers to it. */
#include "h3.h"

#include "tls_names.h"

#include <errno.h>
#include <gnutls/crypto.h>
#include <gnutls/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define H3_NAMES_MAX 256 /* names one certificate may serve here */

void h3_cred_unref(h3_cred *c) {
    if (!c || --c->refs)
        return;
    for (uint32_t i = 0; i < c->nsets; i++)
        gnutls_certificate_free_credentials(c->sets[i]);
    free(c->sets);
    sws_tls_names_free(c->names);
    free(c);
}

/* The names the first certificate of cred serves, normalised, into names
 * (each SWS_TLS_NAME_LEN + 1 bytes): their count. */
static int names_of(gnutls_certificate_credentials_t cred, char (*names)[SWS_TLS_NAME_LEN + 1],
                    int max) {
    gnutls_datum_t der;
    gnutls_x509_crt_t crt;
    if (gnutls_certificate_get_crt_raw(cred, 0, 0, &der) < 0 || gnutls_x509_crt_init(&crt) < 0)
        return 0;
    int n = 0;
    if (gnutls_x509_crt_import(crt, &der, GNUTLS_X509_FMT_DER) == 0) {
        char buf[SWS_TLS_NAME_LEN + 1];
        bool dns = false;
        for (unsigned seq = 0; n < max; seq++) {
            size_t len = sizeof(buf);
            int type = gnutls_x509_crt_get_subject_alt_name(crt, seq, buf, &len, NULL);
            if (type == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE)
                break;
            if (type == GNUTLS_SAN_DNSNAME) {
                dns = true;
                if (sws_tls_name_normal(buf, strnlen(buf, len), names[n]))
                    n++;
            }
        }
        size_t len = sizeof(buf);
        /* The CN only when there is no DNS name, as RFC 6125 says. */
        if (!dns &&
            gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, 0, buf, &len) == 0 &&
            sws_tls_name_normal(buf, strnlen(buf, len), names[n]))
            n++;
    }
    gnutls_x509_crt_deinit(crt);
    return n;
}

/* The pair's OCSP response (pc->ocsp_file), stapled with the chain at idx
 * of cred: the file the TCP side staples, read again at each reload as
 * there. GnuTLS takes a response only for a certificate of the chain (else
 * GNUTLS_E_OCSP_MISMATCH_WITH_CERTS, refused as a bad file) and does not
 * staple one past its nextUpdate. 0 or -EINVAL with why. */
static int load_ocsp(gnutls_certificate_credentials_t cred, unsigned idx, const sws_h3_cert *pc,
                     char *err, size_t errlen) {
    if (!pc->ocsp_file || !pc->ocsp_file[0])
        return 0;
    int g = gnutls_certificate_set_ocsp_status_request_file(cred, pc->ocsp_file, idx);
    if (g < 0) {
        snprintf(err, errlen, "http3: ocsp %s: %s", pc->ocsp_file, gnutls_strerror(g));
        return -EINVAL;
    }
    return 0;
}

static int load_pair(gnutls_certificate_credentials_t *out, const sws_h3_cert *pc, char *err,
                     size_t errlen) {
    int g = gnutls_certificate_allocate_credentials(out);
    if (g < 0) {
        snprintf(err, errlen, "http3: %s", gnutls_strerror(g));
        return -ENOMEM;
    }
    /* Each pair's index comes back: its OCSP response goes with it. */
    gnutls_certificate_set_flags(*out, GNUTLS_CERTIFICATE_API_V2);
    g = gnutls_certificate_set_x509_key_file(*out, pc->cert_file, pc->key_file,
                                             GNUTLS_X509_FMT_PEM);
    if (g < 0) {
        gnutls_certificate_free_credentials(*out);
        snprintf(err, errlen, "http3: cert %s, key %s: %s", pc->cert_file, pc->key_file,
                 gnutls_strerror(g));
        return -EINVAL;
    }
    if (load_ocsp(*out, (unsigned)g, pc, err, errlen) < 0) {
        gnutls_certificate_free_credentials(*out);
        return -EINVAL;
    }
    return 0;
}

/* The set whose names are exactly these (a certificate of another key type
 * for the same site), or -1. */
static int same_names(const h3_cred *c, const uint32_t *count, char (*names)[SWS_TLS_NAME_LEN + 1],
                      int n) {
    uint32_t set;
    if (n == 0 || sws_tls_names_get(c->names, names[0], &set) != 1 || count[set] != (uint32_t)n)
        return -1;
    for (int i = 1; i < n; i++) {
        uint32_t v;
        if (sws_tls_names_get(c->names, names[i], &v) != 1 || v != set)
            return -1;
    }
    return (int)set;
}

int h3_cred_load(h3_cred **out, const sws_h3_cert *certs, uint32_t ncerts, bool refuse_unknown,
                 char *err, size_t errlen) {
    h3_cred *c = calloc(1, sizeof(*c));
    uint32_t *count = calloc(ncerts ? ncerts : 1, sizeof(*count));
    char(*names)[SWS_TLS_NAME_LEN + 1] = malloc(H3_NAMES_MAX * sizeof(*names));
    int rc = -ENOMEM;
    if (!c || !count || !names || !(c->sets = calloc(ncerts ? ncerts : 1, sizeof(*c->sets))) ||
        !(c->names = sws_tls_names_new())) {
        snprintf(err, errlen, "http3: out of memory");
        goto bad;
    }
    c->refs = 1;
    c->refuse_unknown = refuse_unknown;
    for (uint32_t i = 0; i < ncerts; i++) {
        gnutls_certificate_credentials_t one;
        if ((rc = load_pair(&one, &certs[i], err, errlen)) < 0) {
            if (certs[i].optional)
                continue; /* an ACME order not fulfilled yet, as over TCP */
            goto bad;
        }
        int n = names_of(one, names, H3_NAMES_MAX);
        int set = same_names(c, count, names, n);
        if (set >= 0) {
            /* GnuTLS keeps several pairs in one credentials and serves the
             * one the client's signature algorithms allow. */
            gnutls_certificate_free_credentials(one);
            int g = gnutls_certificate_set_x509_key_file(c->sets[set], certs[i].cert_file,
                                                         certs[i].key_file, GNUTLS_X509_FMT_PEM);
            if (g < 0) {
                snprintf(err, errlen, "http3: cert %s: %s", certs[i].cert_file, gnutls_strerror(g));
                rc = -EINVAL;
                goto bad;
            }
            if ((rc = load_ocsp(c->sets[set], (unsigned)g, &certs[i], err, errlen)) < 0)
                goto bad;
        } else {
            set = (int)c->nsets++;
            c->sets[set] = one;
            for (int k = 0; k < n; k++) {
                /* A name another set holds stays with it (the first wins);
                 * a pattern the table cannot serve is not served. */
                int a = sws_tls_names_add(c->names, names[k], (uint32_t)set, NULL);
                if (a == -ENOMEM) {
                    snprintf(err, errlen, "http3: out of memory");
                    rc = a;
                    goto bad;
                }
                count[set] += a == 0;
            }
        }
        if (certs[i].is_default)
            c->def = (uint32_t)set;
    }
    if (c->nsets == 0) {
        if (!ncerts)
            snprintf(err, errlen, "http3: no certificate");
        rc = -EINVAL;
        goto bad;
    }
    free(count);
    free(names);
    *out = c;
    return 0;
bad:
    free(count);
    free(names);
    if (c) {
        c->refs = 1;
        h3_cred_unref(c);
    }
    return rc;
}

/* A session resumes under the name it was made for only (RFC 6066 3): its
 * ticket is sealed with a key of that name's own, HMAC-SHA-512 of the name
 * (normalised) under the endpoint's ticket key, as the TCP side ties a
 * session to the name through its session-ID context. Without a name, the
 * ticket key itself. */
static int ticket_key_of(gnutls_session_t tls, const sws_h3_endpoint *ep, const char *name) {
    uint8_t key[SWS_H3_TICKET_KEY_LEN];
    _Static_assert(SWS_H3_TICKET_KEY_LEN == 64, "HMAC-SHA-512's length");
    if (gnutls_hmac_fast(GNUTLS_MAC_SHA512, ep->ticket_key.data, ep->ticket_key.size, name,
                         strlen(name), key) != 0)
        return GNUTLS_E_INTERNAL_ERROR;
    gnutls_datum_t d = {key, sizeof(key)};
    int rc = gnutls_session_ticket_enable_server(tls, &d);
    gnutls_memset(key, 0, sizeof(key));
    return rc;
}

/* After the ClientHello's extensions are read, before its pre-shared key
 * is opened and a certificate picked: the credentials of the name's set,
 * and the name's ticket key. */
static int client_hello(gnutls_session_t tls) {
    ngtcp2_crypto_conn_ref *ref = gnutls_session_get_ptr(tls);
    const h3_conn *hc = ref->user_data;
    const h3_cred *c = hc->cred;
    char name[SWS_TLS_NAME_LEN + 2], normal[SWS_TLS_NAME_LEN + 1];
    size_t len = sizeof(name);
    unsigned type;
    uint32_t set = c->def;
    bool named = gnutls_server_name_get(tls, name, &len, &type, 0) == 0 &&
                 type == GNUTLS_NAME_DNS && sws_tls_name_normal(name, len, normal);
    bool found = named && sws_tls_names_find(c->names, name, len, &set) > 0;
    if (!found && c->refuse_unknown)
        return GNUTLS_E_UNRECOGNIZED_NAME; /* alert 112, as the TCP side */
    if (set != c->def && gnutls_credentials_set(tls, GNUTLS_CRD_CERTIFICATE, c->sets[set]) != 0)
        return GNUTLS_E_INTERNAL_ERROR;
    return named ? ticket_key_of(tls, hc->ep, normal) : 0;
}

int h3_cred_attach(h3_cred *c, gnutls_session_t tls) {
    if (gnutls_credentials_set(tls, GNUTLS_CRD_CERTIFICATE, c->sets[c->def]) != 0)
        return -EINVAL;
    gnutls_handshake_set_post_client_hello_function(tls, client_hello);
    return 0;
}
