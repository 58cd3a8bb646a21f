/* Building SSL_CTXs from [tls]: the certificate chain, key and OCSP response
 * are read and checked once, then every loop gets its own SSL_CTX over the same
 * X509/EVP_PKEY objects (OpenSSL counts references), so loops share no session
 * cache lock and a reload never touches a context a connection is using. */
#include "tls_internal.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/ocsp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct sws_tls_server {
    int n;
    SSL_CTX **ctx;
    sws_tls_info info;
    char protocols[32];
};

static int ctx_index = -1;
static pthread_once_t ctx_once = PTHREAD_ONCE_INIT;

static void ctxdata_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl,
                         void *argp) {
    sws_tls_ctxdata *d = ptr;
    if (d) {
        OPENSSL_free(d->ocsp);
        free(d);
    }
}

static void make_index(void) {
    ctx_index = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, ctxdata_free);
}

int sws_tls_ctx_index(void) {
    pthread_once(&ctx_once, make_index);
    return ctx_index;
}

bool sws_tls_kernel_has_ktls(void) {
    return access("/sys/module/tls", F_OK) == 0;
}

/* OpenSSL's newest reason, then the queue cleared (it is per thread and would
 * blame the next failure on this one). */
static void why(char *buf, size_t len) {
    unsigned long e = ERR_peek_last_error();
    if (e)
        ERR_error_string_n(e, buf, len);
    else
        snprintf(buf, len, "unknown error");
    ERR_clear_error();
}

static const unsigned char alpn_http11[] = "\x08http/1.1";
static const unsigned char alpn_h2_http11[] = "\x02h2\x08http/1.1";

/* HTTP/2 first where it is on, then HTTP/1.1 (the server's order wins, as
 * nginx's). A client that offers ALPN without either gets
 * no_application_protocol, as RFC 7301 says; one without ALPN is served
 * HTTP/1.1. arg: non-NULL when h2 is offered. */
static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned int inlen, void *arg) {
    (void)ssl;
    unsigned char *sel;
    const unsigned char *ours = arg ? alpn_h2_http11 : alpn_http11;
    unsigned int ourlen =
        arg ? (unsigned)sizeof(alpn_h2_http11) - 1 : (unsigned)sizeof(alpn_http11) - 1;
    if (SSL_select_next_proto(&sel, outlen, ours, ourlen, in, inlen) != OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_ALERT_FATAL;
    *out = sel;
    return SSL_TLSEXT_ERR_OK;
}

/* A stapled response is handed to OpenSSL per handshake, which frees it. */
static int ocsp_status(SSL *ssl, void *arg) {
    sws_tls_ctxdata *d = SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), sws_tls_ctx_index());
    if (!d || !d->ocsp)
        return SSL_TLSEXT_ERR_NOACK;
    unsigned char *copy = OPENSSL_memdup(d->ocsp, (size_t)d->ocsp_len);
    if (!copy || !SSL_set_tlsext_status_ocsp_resp(ssl, copy, d->ocsp_len)) {
        OPENSSL_free(copy);
        return SSL_TLSEXT_ERR_NOACK;
    }
    return SSL_TLSEXT_ERR_OK;
}

typedef struct material {
    X509 *leaf;
    STACK_OF(X509) * chain;
    EVP_PKEY *pkey;
    unsigned char *ocsp;
    long ocsp_len;
} material;

static void material_free(material *m) {
    X509_free(m->leaf);
    sk_X509_pop_free(m->chain, X509_free);
    EVP_PKEY_free(m->pkey);
    OPENSSL_free(m->ocsp);
}

static int load_material(const sws_tls_config *cfg, material *m, char *err, size_t errlen) {
    char r[256];
    memset(m, 0, sizeof(*m));
    ERR_clear_error();
    if (!cfg->cert[0] || !cfg->key[0]) {
        snprintf(err, errlen, "[tls] a tls listener needs cert and key");
        return -EINVAL;
    }
    FILE *f = fopen(cfg->cert, "r");
    if (!f) {
        snprintf(err, errlen, "[tls] cert %s: cannot open: %s", cfg->cert, strerror(errno));
        return -EINVAL;
    }
    m->leaf = PEM_read_X509(f, NULL, NULL, NULL);
    if (!m->leaf) {
        fclose(f);
        why(r, sizeof(r));
        snprintf(err, errlen, "[tls] cert %s: no PEM certificate (%s)", cfg->cert, r);
        return -EINVAL;
    }
    m->chain = sk_X509_new_null();
    X509 *x;
    while (m->chain && (x = PEM_read_X509(f, NULL, NULL, NULL)) != NULL)
        sk_X509_push(m->chain, x);
    fclose(f);
    ERR_clear_error(); /* the end of the file reads as "no start line" */
    f = fopen(cfg->key, "r");
    if (!f) {
        snprintf(err, errlen, "[tls] key %s: cannot open: %s", cfg->key, strerror(errno));
        return -EINVAL;
    }
    m->pkey = PEM_read_PrivateKey(f, NULL, NULL, NULL);
    fclose(f);
    if (!m->pkey) {
        why(r, sizeof(r));
        snprintf(err, errlen, "[tls] key %s: no PEM private key (%s)", cfg->key, r);
        return -EINVAL;
    }
    if (X509_check_private_key(m->leaf, m->pkey) != 1) {
        ERR_clear_error();
        snprintf(err, errlen, "[tls] key %s does not match the certificate in %s", cfg->key,
                 cfg->cert);
        return -EINVAL;
    }
    if (cfg->ocsp[0]) {
        f = fopen(cfg->ocsp, "rb");
        if (!f) {
            snprintf(err, errlen, "[tls] ocsp %s: cannot open: %s", cfg->ocsp, strerror(errno));
            return -EINVAL;
        }
        unsigned char buf[65536];
        size_t got = fread(buf, 1, sizeof(buf), f);
        bool big = !feof(f);
        fclose(f);
        const unsigned char *p = buf;
        OCSP_RESPONSE *resp = big ? NULL : d2i_OCSP_RESPONSE(NULL, &p, (long)got);
        if (big) {
            snprintf(err, errlen, "[tls] ocsp %s: larger than 64 KiB", cfg->ocsp);
            return -EINVAL;
        }
        if (!resp) {
            why(r, sizeof(r));
            snprintf(err, errlen, "[tls] ocsp %s: not a DER OCSP response (%s)", cfg->ocsp, r);
            return -EINVAL;
        }
        unsigned char *der = NULL;
        int len = i2d_OCSP_RESPONSE(resp, &der);
        OCSP_RESPONSE_free(resp);
        if (len <= 0) {
            snprintf(err, errlen, "[tls] ocsp %s: cannot encode", cfg->ocsp);
            return -EINVAL;
        }
        m->ocsp = der;
        m->ocsp_len = len;
    }
    return 0;
}

static SSL_CTX *build_ctx(const sws_tls_config *cfg, const material *m, sws_tls_keys *keys,
                          char *err, size_t errlen) {
    char r[256];
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    sws_tls_ctxdata *d = calloc(1, sizeof(*d));
    if (!ctx || !d || !SSL_CTX_set_ex_data(ctx, sws_tls_ctx_index(), d)) {
        free(d);
        SSL_CTX_free(ctx);
        ERR_clear_error();
        snprintf(err, errlen, "[tls] out of memory");
        return NULL;
    }
    d->keys = keys;
    if (m->ocsp) {
        d->ocsp = OPENSSL_memdup(m->ocsp, (size_t)m->ocsp_len);
        d->ocsp_len = d->ocsp ? m->ocsp_len : 0;
    }
#define FAIL(...)                                                                                  \
    do {                                                                                           \
        snprintf(err, errlen, __VA_ARGS__);                                                        \
        SSL_CTX_free(ctx);                                                                         \
        return NULL;                                                                               \
    } while (0)
    SSL_CTX_set_min_proto_version(ctx,
                                  (cfg->protocols & SWS_TLS_V12) ? TLS1_2_VERSION : TLS1_3_VERSION);
    SSL_CTX_set_max_proto_version(ctx,
                                  (cfg->protocols & SWS_TLS_V13) ? TLS1_3_VERSION : TLS1_2_VERSION);
    /* No renegotiation (a client-driven CPU sink), no compression (CRIME);
     * the client's cipher order wins, as Mozilla's intermediate profile says. */
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
                                 (cfg->tickets ? 0 : SSL_OP_NO_TICKET));
    /* Buffers follow data: an idle connection gives OpenSSL's record buffers
     * back (as nginx does); records are sealed one at a time. */
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ENABLE_PARTIAL_WRITE |
                              SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (SSL_CTX_set_cipher_list(ctx, cfg->ciphers) != 1) {
        why(r, sizeof(r));
        FAIL("[tls] ciphers '%s': %s", cfg->ciphers, r);
    }
    if (SSL_CTX_set_ciphersuites(ctx, cfg->ciphersuites) != 1) {
        why(r, sizeof(r));
        FAIL("[tls] ciphersuites '%s': %s", cfg->ciphersuites, r);
    }
    if (SSL_CTX_set1_groups_list(ctx, cfg->groups) != 1) {
        why(r, sizeof(r));
        FAIL("[tls] groups '%s': %s", cfg->groups, r);
    }
    SSL_CTX_set_dh_auto(ctx, 1); /* the DHE suites of the profile, RFC 7919 groups */
    X509_up_ref(m->leaf);
    if (SSL_CTX_use_cert_and_key(ctx, m->leaf, m->pkey, m->chain, 1) != 1) {
        X509_free(m->leaf);
        why(r, sizeof(r));
        FAIL("[tls] cert %s: %s", cfg->cert, r);
    }
    X509_free(m->leaf); /* the context holds its own reference */
    SSL_CTX_set_alpn_select_cb(ctx, alpn_select, cfg->alpn_h2 ? (void *)alpn_h2_http11 : NULL);
    static const unsigned char sid_ctx[] = "scalwsd";
    SSL_CTX_set_session_id_context(ctx, sid_ctx, sizeof(sid_ctx) - 1);
    if (cfg->session_cache) {
        SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
        SSL_CTX_sess_set_cache_size(ctx, cfg->session_cache);
    } else {
        SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    }
    /* A session is good while its ticket key still decrypts: at least two
     * rotation periods (tls_keys.c). */
    SSL_CTX_set_timeout(ctx, (long)(cfg->ticket_key_rotate_ms / 1000u) * 2);
    if (cfg->tickets && keys)
        SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, sws_tls_ticket_cb);
    if (d->ocsp) {
        SSL_CTX_set_tlsext_status_cb(ctx, ocsp_status);
    }
#undef FAIL
    return ctx;
}

sws_tls_server *sws_tls_server_new(const sws_tls_config *cfg, int nctx, sws_tls_keys *keys,
                                   char *err, size_t errlen) {
    material m;
    if (nctx < 1)
        nctx = 1;
    if (cfg->tickets && !keys) {
        snprintf(err, errlen, "[tls] session_tickets on needs the ticket key ring");
        return NULL;
    }
    if (load_material(cfg, &m, err, errlen) < 0) {
        material_free(&m);
        return NULL;
    }
    sws_tls_server *s = calloc(1, sizeof(*s));
    if (s)
        s->ctx = calloc((size_t)nctx, sizeof(SSL_CTX *));
    if (!s || !s->ctx) {
        free(s);
        material_free(&m);
        snprintf(err, errlen, "[tls] out of memory");
        return NULL;
    }
    for (int i = 0; i < nctx; i++) {
        s->ctx[i] = build_ctx(cfg, &m, keys, err, errlen);
        if (!s->ctx[i]) {
            s->n = i;
            sws_tls_server_free(s);
            material_free(&m);
            return NULL;
        }
    }
    s->n = nctx;
    snprintf(s->protocols, sizeof(s->protocols), "%s", sws_tls_protocols_name(cfg->protocols));
    s->info = (sws_tls_info){.protocols = s->protocols,
                             .ktls_kernel = sws_tls_kernel_has_ktls(),
                             .ktls_live = false,
                             .ocsp = m.ocsp != NULL,
                             .tickets = cfg->tickets,
                             .session_cache = cfg->session_cache};
    material_free(&m);
    return s;
}

void sws_tls_server_free(sws_tls_server *s) {
    if (!s)
        return;
    for (int i = 0; i < s->n; i++)
        SSL_CTX_free(s->ctx[i]);
    free(s->ctx);
    free(s);
}

SSL_CTX *sws_tls_server_ctx(sws_tls_server *s, int i) {
    return s->ctx[i % s->n];
}

void sws_tls_server_info(const sws_tls_server *s, sws_tls_info *out) {
    *out = s->info;
}
