/* A listener's TLS: its certificates (tls_cert.c), the name table that picks
 * a set of them for the client's server name (tls_names.c), and the SSL_CTXs.
 *
 * A set is what one name is served with: at most one certificate per key type
 * (an RSA and an ECDSA one side by side, as nginx's two ssl_certificate
 * lines), from which OpenSSL takes the one the client's signature algorithms
 * allow. Names with the same set share a context. Every handshake starts on
 * its loop's context of the default set (each loop its own, so loops share no
 * session cache lock); the ClientHello callback (tls_sni.c) moves it to its
 * name's set. Built on the control thread, read-only afterwards: loops only
 * look names up. Contexts hold the certificate objects by reference, and the
 * SSL of a connection holds its context, so a reload frees nothing in use. */
#include "tls_internal.h"
#include "tls_names.h"

#include <errno.h>
#include <openssl/err.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* One name or pattern of the table: the set it selects and the session-ID
 * context a session made under it carries. */
typedef struct entry {
    int cert[SWS_TLS_SLOTS]; /* index in certs per key type; -1 none */
    uint32_t group;
    const char *pattern; /* the certificate's own string */
    unsigned char sid[24];
} entry;

typedef struct group {
    int cert[SWS_TLS_SLOTS];
    SSL_CTX *ctx; /* NULL for the default set: its contexts are loop_ctx */
} group;

typedef struct srv_cert {
    sws_tls_cert_config cfg;
    sws_tls_cert *c; /* NULL: refused, nothing loaded before to fall back on */
    char refused[480];
    char section[SWS_TLS_SECTION_MAX + 8];
} srv_cert;

struct sws_tls_server {
    _Atomic int refs; /* the configuration's, and one per handshake under way */
    sws_tls_config cfg;
    char *file;
    sws_tls_keys *keys;
    int nloops;
    SSL_CTX **loop_ctx;
    int ncerts;
    srv_cert *certs;
    int def; /* the default certificate */
    int ngroups;
    group *groups;
    uint32_t def_group;
    unsigned char def_sid[24];
    sws_tls_names *names;
    entry *entries;
    uint32_t nentries, entries_cap;
    sws_tls_info info;
    char protocols[32];
};

static int ctx_index = -1, conn_index = -1;
static pthread_once_t index_once = PTHREAD_ONCE_INIT;

static void ctxdata_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl,
                         void *argp) {
    sws_tls_ctxdata *d = ptr;
    if (!d)
        return;
    for (int i = 0; i < SWS_TLS_SLOTS; i++)
        OPENSSL_free(d->staple[i].ocsp);
    free(d);
}

static void make_indexes(void) {
    ctx_index = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, ctxdata_free);
    conn_index = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
}

int sws_tls_ctx_index(void) {
    pthread_once(&index_once, make_indexes);
    return ctx_index;
}

int sws_tls_conn_index(void) {
    pthread_once(&index_once, make_indexes);
    return conn_index;
}

bool sws_tls_kernel_has_ktls(void) {
    return access("/sys/module/tls", F_OK) == 0;
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

/* The response of the certificate OpenSSL chose (by the client's signature
 * algorithms, before this is called), handed over per handshake: OpenSSL
 * frees it. */
static int ocsp_status(SSL *ssl, void *arg) {
    (void)arg;
    sws_tls_ctxdata *d = SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), sws_tls_ctx_index());
    X509 *chosen = SSL_get_certificate(ssl);
    for (int i = 0; d && chosen && i < SWS_TLS_SLOTS; i++) {
        if (d->staple[i].leaf != chosen || !d->staple[i].ocsp)
            continue;
        unsigned char *copy = OPENSSL_memdup(d->staple[i].ocsp, (size_t)d->staple[i].ocsp_len);
        if (!copy || !SSL_set_tlsext_status_ocsp_resp(ssl, copy, d->staple[i].ocsp_len)) {
            OPENSSL_free(copy);
            return SSL_TLSEXT_ERR_NOACK;
        }
        return SSL_TLSEXT_ERR_OK;
    }
    return SSL_TLSEXT_ERR_NOACK;
}

/* A context serving the certificates of set (one per key type), with the
 * [tls] settings and every callback a handshake may meet on it: a handshake
 * that moves here from another context keeps that one's SSL settings, and
 * takes this one's certificates and callbacks (ALPN, OCSP). */
static SSL_CTX *build_ctx(const sws_tls_server *s, const int *set, const unsigned char *sid,
                          char *err, size_t errlen) {
    const sws_tls_config *cfg = &s->cfg;
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
    d->keys = s->keys;
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
        sws_tls_why(r, sizeof(r));
        FAIL("[tls] ciphers '%s': %s", cfg->ciphers, r);
    }
    if (SSL_CTX_set_ciphersuites(ctx, cfg->ciphersuites) != 1) {
        sws_tls_why(r, sizeof(r));
        FAIL("[tls] ciphersuites '%s': %s", cfg->ciphersuites, r);
    }
    if (SSL_CTX_set1_groups_list(ctx, cfg->groups) != 1) {
        sws_tls_why(r, sizeof(r));
        FAIL("[tls] groups '%s': %s", cfg->groups, r);
    }
    SSL_CTX_set_dh_auto(ctx, 1); /* the DHE suites of the profile, RFC 7919 groups */
    bool ocsp = false;
    for (int k = 0; k < SWS_TLS_SLOTS; k++) {
        if (set[k] < 0)
            continue;
        const srv_cert *sc = &s->certs[set[k]];
        const sws_tls_cert *c = sc->c;
        if (SSL_CTX_use_cert_and_key(ctx, c->leaf, c->pkey, c->chain, 1) != 1) {
            sws_tls_why(r, sizeof(r));
            FAIL("%s cert %s: %s", sc->section, sc->cfg.cert, r);
        }
        d->staple[k].leaf = c->leaf;
        if (c->ocsp) {
            d->staple[k].ocsp = OPENSSL_memdup(c->ocsp, (size_t)c->ocsp_len);
            d->staple[k].ocsp_len = d->staple[k].ocsp ? c->ocsp_len : 0;
            ocsp = true;
        }
    }
    SSL_CTX_set_alpn_select_cb(ctx, alpn_select, cfg->alpn_h2 ? (void *)alpn_h2_http11 : NULL);
    unsigned char sid32[32] = {0};
    memcpy(sid32, sid, 24);
    SSL_CTX_set_session_id_context(ctx, sid32, sizeof(sid32));
    if (cfg->session_cache) {
        SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
        SSL_CTX_sess_set_cache_size(ctx, cfg->session_cache);
    } else {
        SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    }
    /* A session is good while its ticket key still decrypts: at least two
     * rotation periods (tls_keys.c). */
    SSL_CTX_set_timeout(ctx, (long)(cfg->ticket_key_rotate_ms / 1000u) * 2);
    if (cfg->tickets && s->keys)
        SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, sws_tls_ticket_cb);
    if (ocsp)
        SSL_CTX_set_tlsext_status_cb(ctx, ocsp_status);
    sws_tls_sni_install(ctx);
#undef FAIL
    return ctx;
}

/* ---- the server ------------------------------------------------------------ */

static void server_free(sws_tls_server *s) {
    for (int i = 0; s->loop_ctx && i < s->nloops; i++)
        SSL_CTX_free(s->loop_ctx[i]);
    free(s->loop_ctx);
    for (int g = 0; g < s->ngroups; g++)
        SSL_CTX_free(s->groups[g].ctx);
    free(s->groups);
    for (int i = 0; i < s->ncerts; i++)
        sws_tls_cert_unref(s->certs[i].c);
    free(s->certs);
    sws_tls_names_free(s->names);
    free(s->entries);
    free(s->file);
    free(s);
}

void sws_tls_server_release(sws_tls_server *s) {
    if (s && atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1)
        server_free(s);
}

void sws_tls_server_free(sws_tls_server *s) {
    sws_tls_server_release(s);
}

static const srv_cert *find_cert(const sws_tls_server *s, const char *name) {
    for (int i = 0; s && i < s->ncerts; i++)
        if (!strcmp(s->certs[i].cfg.name, name))
            return &s->certs[i];
    return NULL;
}

/* "file:line: " of cert i's cert key (its section's line), or "". */
static const char *cert_at(const sws_tls_server *s, int i, char *buf, size_t len) {
    const sws_tls_cert_config *cc = &s->certs[i].cfg;
    uint32_t line = cc->cert_line ? cc->cert_line : cc->line;
    if (s->file && line)
        snprintf(buf, len, "%s:%u: ", s->file, (unsigned)line);
    else
        buf[0] = '\0';
    return buf;
}

/* First 24 bytes of SHA-256 over the set's certificates and the pattern: two
 * names never share a session, nor do two sets, nor one name across a
 * change of its certificate. */
static void make_sid(const sws_tls_server *s, const int *set, const char *pattern,
                     unsigned char *out) {
    unsigned char buf[SWS_TLS_SLOTS * 32 + SWS_TLS_NAME_LEN + 2] = {0}, md[32];
    size_t n = 0;
    for (int k = 0; k < SWS_TLS_SLOTS; k++, n += 32)
        if (set[k] >= 0)
            memcpy(buf + n, s->certs[set[k]].c->fp, 32);
    size_t plen = strlen(pattern);
    buf[n++] = pattern[0] ? '=' : '*';
    memcpy(buf + n, pattern, plen);
    n += plen;
    unsigned int mdlen = 0;
    EVP_Digest(buf, n, md, &mdlen, EVP_sha256(), NULL);
    memcpy(out, md, 24);
}

/* Reports cert i refused for why: at start (no prev) the build fails; on a
 * reload it keeps what prev had loaded for it, if anything. */
static int refuse(sws_tls_server *s, const sws_tls_build *b, int i, const char *reason, char *err,
                  size_t errlen) {
    srv_cert *sc = &s->certs[i];
    if (!b->prev) {
        snprintf(err, errlen, "%s", reason);
        return -EINVAL;
    }
    snprintf(sc->refused, sizeof(sc->refused), "%s", reason);
    const srv_cert *old = find_cert(b->prev, sc->cfg.name);
    sws_tls_cert *was = old ? old->c : NULL;
    sws_tls_cert_unref(sc->c);
    sc->c = was != sc->c ? was : NULL;
    sws_tls_cert_ref(sc->c);
    return 0;
}

/* Each certificate's objects: read from its files, or kept from prev (all but
 * the one named only, in a replace). */
static int load_certs(sws_tls_server *s, const sws_tls_build *b, const char *only, char *err,
                      size_t errlen) {
    char reason[480];
    for (int i = 0; i < s->ncerts; i++) {
        srv_cert *sc = &s->certs[i];
        const srv_cert *old = find_cert(b->prev, sc->cfg.name);
        if (only && strcmp(only, sc->cfg.name) != 0 && old) {
            sc->c = old->c;
            sws_tls_cert_ref(sc->c);
            snprintf(sc->refused, sizeof(sc->refused), "%s", old->refused);
            continue;
        }
        sc->c = sws_tls_cert_load(&sc->cfg, s->file, reason, sizeof(reason));
        if (!sc->c) {
            if (only || refuse(s, b, i, reason, err, errlen) < 0) {
                snprintf(err, errlen, "%s", reason);
                return -EINVAL;
            }
            continue;
        }
        /* On a reload, an expired certificate does not replace one in use. */
        if (b->prev && old && old->c && sc->c->not_after_s &&
            sc->c->not_after_s < (int64_t)time(NULL)) {
            char at[300];
            snprintf(reason, sizeof(reason), "%s%s cert %s: expired on %s",
                     cert_at(s, i, at, sizeof(at)), sc->section, sc->cfg.cert, sc->c->not_after);
            if (only) {
                snprintf(err, errlen, "%s", reason);
                return -EINVAL;
            }
            refuse(s, b, i, reason, err, errlen);
        }
    }
    return 0;
}

/* The default certificate: the one marked, else the first; on a reload where
 * it has nothing to serve, the first that has. */
static int pick_default(sws_tls_server *s, char *err, size_t errlen) {
    s->def = 0;
    for (int i = 0; i < s->ncerts; i++)
        if (s->certs[i].cfg.is_default) {
            s->def = i;
            break;
        }
    for (int k = 0; k < s->ncerts && !s->certs[s->def].c; k++)
        s->def = k;
    if (!s->certs[s->def].c) {
        snprintf(err, errlen, "%s",
                 s->certs[0].refused[0] ? s->certs[0].refused : "no certificate");
        return -EINVAL;
    }
    return 0;
}

static int new_entry(sws_tls_server *s, const char *pattern) {
    if (s->nentries == s->entries_cap) {
        uint32_t cap = s->entries_cap ? s->entries_cap * 2 : 16;
        entry *e = realloc(s->entries, cap * sizeof(*e));
        if (!e)
            return -ENOMEM;
        s->entries = e;
        s->entries_cap = cap;
    }
    entry *e = &s->entries[s->nentries];
    memset(e, 0, sizeof(*e));
    for (int k = 0; k < SWS_TLS_SLOTS; k++)
        e->cert[k] = -1;
    e->pattern = pattern;
    return 0;
}

/* A name cert i claims that another certificate of its key type holds: a
 * description in reason, and nonzero. */
static int clash(const sws_tls_server *s, int i, char *reason, size_t len) {
    const sws_tls_cert *c = s->certs[i].c;
    for (int n = 0; n < c->nnames; n++) {
        uint32_t v;
        if (!sws_tls_names_get(s->names, c->names[n], &v) || s->entries[v].cert[c->slot] < 0)
            continue;
        const srv_cert *other = &s->certs[s->entries[v].cert[c->slot]];
        char at[300];
        snprintf(reason, len,
                 "%s%s cert %s: %s is served by %s already, with a key of the same type",
                 cert_at(s, i, at, sizeof(at)), s->certs[i].section, s->certs[i].cfg.cert,
                 c->names[n], other->section);
        return 1;
    }
    return 0;
}

/* Every certificate's names into the table, one entry each. A name two
 * certificates of one key type claim is refused in the later one. */
static int fill_names(sws_tls_server *s, const sws_tls_build *b, char *err, size_t errlen) {
    char reason[480];
    if (!(s->names = sws_tls_names_new()))
        goto nomem;
    for (int i = 0; i < s->ncerts; i++) {
        srv_cert *sc = &s->certs[i];
        if (sc->c && sc->c->nnames == 0 && i != s->def) {
            char at[300];
            snprintf(reason, sizeof(reason),
                     "%s%s cert %s: no DNS name to serve it by (subjectAltName or CN); mark it "
                     "default = on",
                     cert_at(s, i, at, sizeof(at)), sc->section, sc->cfg.cert);
            if (refuse(s, b, i, reason, err, errlen) < 0)
                return -EINVAL;
        }
        /* A refused reload falls back on what was loaded before, which may
         * clash too: then it is not served. */
        for (int tries = 0; sc->c && clash(s, i, reason, sizeof(reason)); tries++) {
            if (tries || refuse(s, b, i, reason, err, errlen) < 0) {
                if (!b->prev)
                    return -EINVAL;
                sws_tls_cert_unref(sc->c);
                sc->c = NULL;
            }
        }
        for (int n = 0; sc->c && n < sc->c->nnames; n++) {
            uint32_t v = s->nentries;
            int rc = sws_tls_names_add(s->names, sc->c->names[n], v, &v);
            if (rc == 0 && new_entry(s, sc->c->names[n]) == 0)
                s->nentries++;
            else if (rc != -EEXIST)
                goto nomem;
            s->entries[v].cert[sc->c->slot] = i;
        }
    }
    return 0;
nomem:
    snprintf(err, errlen, "[tls] out of memory");
    return -ENOMEM;
}

static int group_of(sws_tls_server *s, const int *set) {
    for (int g = 0; g < s->ngroups; g++)
        if (!memcmp(s->groups[g].cert, set, sizeof(s->groups[g].cert)))
            return g;
    group *gs = realloc(s->groups, (size_t)(s->ngroups + 1) * sizeof(*gs));
    if (!gs)
        return -ENOMEM;
    s->groups = gs;
    memset(&gs[s->ngroups], 0, sizeof(gs[0]));
    memcpy(gs[s->ngroups].cert, set, sizeof(gs[0].cert));
    return s->ngroups++;
}

static int cmp_sets(const void *a, const void *b, void *arg) {
    const entry *e = arg;
    return memcmp(e[*(const uint32_t *)a].cert, e[*(const uint32_t *)b].cert, sizeof(e->cert));
}

/* Names with equal sets share one group (and its context): sorted by set,
 * so that a thousand names cost a sort, not a thousand scans. */
static int fill_groups(sws_tls_server *s, char *err, size_t errlen) {
    uint32_t *order = malloc((s->nentries + 1) * sizeof(*order));
    if (!order)
        goto nomem;
    for (uint32_t i = 0; i < s->nentries; i++)
        order[i] = i;
    qsort_r(order, s->nentries, sizeof(*order), cmp_sets, s->entries);
    int g = -1;
    for (uint32_t i = 0; i < s->nentries; i++) {
        entry *e = &s->entries[order[i]];
        if (g < 0 || memcmp(s->groups[g].cert, e->cert, sizeof(e->cert)) != 0) {
            group *gs = realloc(s->groups, (size_t)(s->ngroups + 1) * sizeof(*gs));
            if (!gs) {
                free(order);
                goto nomem;
            }
            s->groups = gs;
            g = s->ngroups++;
            memset(&gs[g], 0, sizeof(gs[0]));
            memcpy(gs[g].cert, e->cert, sizeof(e->cert));
        }
        e->group = (uint32_t)g;
        make_sid(s, e->cert, e->pattern, e->sid);
    }
    free(order);
    /* The default set: what the default certificate's first name selects
     * (its siblings of other key types included); by itself without names. */
    const sws_tls_cert *d = s->certs[s->def].c;
    uint32_t v;
    if (d->nnames && sws_tls_names_get(s->names, d->names[0], &v)) {
        s->def_group = s->entries[v].group;
    } else {
        int set[SWS_TLS_SLOTS];
        for (int k = 0; k < SWS_TLS_SLOTS; k++)
            set[k] = -1;
        set[d->slot] = s->def;
        int dg = group_of(s, set);
        if (dg < 0)
            goto nomem;
        s->def_group = (uint32_t)dg;
    }
    make_sid(s, s->groups[s->def_group].cert, "", s->def_sid);
    return 0;
nomem:
    snprintf(err, errlen, "[tls] out of memory");
    return -ENOMEM;
}

static int build_contexts(sws_tls_server *s, char *err, size_t errlen) {
    if (!(s->loop_ctx = calloc((size_t)s->nloops, sizeof(SSL_CTX *)))) {
        snprintf(err, errlen, "[tls] out of memory");
        return -ENOMEM;
    }
    for (int i = 0; i < s->nloops; i++)
        if (!(s->loop_ctx[i] = build_ctx(s, s->groups[s->def_group].cert, s->def_sid, err, errlen)))
            return -EINVAL;
    for (int g = 0; g < s->ngroups; g++)
        if ((uint32_t)g != s->def_group &&
            !(s->groups[g].ctx = build_ctx(s, s->groups[g].cert, s->def_sid, err, errlen)))
            return -EINVAL;
    return 0;
}

static sws_tls_server *build(const sws_tls_build *b, const char *only, char *err, size_t errlen) {
    if (b->cfg->tickets && !b->keys) {
        snprintf(err, errlen, "[tls] session_tickets on needs the ticket key ring");
        return NULL;
    }
    if (b->ncerts < 1) {
        snprintf(err, errlen, "[tls] a tls listener needs cert and key");
        return NULL;
    }
    sws_tls_server *s = calloc(1, sizeof(*s));
    if (!s || !(s->certs = calloc((size_t)b->ncerts, sizeof(*s->certs))) ||
        (b->file && !(s->file = strdup(b->file)))) {
        if (s)
            free(s->certs);
        free(s);
        snprintf(err, errlen, "[tls] out of memory");
        return NULL;
    }
    atomic_init(&s->refs, 1);
    s->cfg = *b->cfg;
    s->keys = b->keys;
    s->nloops = b->nloops < 1 ? 1 : b->nloops;
    s->ncerts = b->ncerts;
    for (int i = 0; i < s->ncerts; i++) {
        srv_cert *sc = &s->certs[i];
        sc->cfg = b->certs[i];
        snprintf(sc->section, sizeof(sc->section), sc->cfg.name[0] ? "[tls %s]" : "[tls]",
                 sc->cfg.name);
    }
    /* The default is picked again once the names are in: on a reload, one
     * whose names clash is dropped. */
    if (load_certs(s, b, only, err, errlen) < 0 || pick_default(s, err, errlen) < 0 ||
        fill_names(s, b, err, errlen) < 0 || pick_default(s, err, errlen) < 0 ||
        fill_groups(s, err, errlen) < 0 || build_contexts(s, err, errlen) < 0) {
        server_free(s);
        return NULL;
    }
    snprintf(s->protocols, sizeof(s->protocols), "%s", sws_tls_protocols_name(s->cfg.protocols));
    s->info = (sws_tls_info){.protocols = s->protocols,
                             .ktls_kernel = sws_tls_kernel_has_ktls(),
                             .tickets = s->cfg.tickets,
                             .session_cache = s->cfg.session_cache,
                             .names = sws_tls_names_count(s->names),
                             .refuse_unknown = s->cfg.refuse_unknown};
    for (int i = 0; i < s->ncerts; i++) {
        s->info.certs += s->certs[i].c != NULL;
        s->info.ocsp |= s->certs[i].c && s->certs[i].c->ocsp;
    }
    return s;
}

sws_tls_server *sws_tls_server_new(const sws_tls_build *b, char *err, size_t errlen) {
    return build(b, NULL, err, errlen);
}

sws_tls_server *sws_tls_server_replace(sws_tls_server *cur, const sws_tls_cert_config *cc,
                                       char *err, size_t errlen) {
    sws_tls_cert_config *list = calloc((size_t)cur->ncerts + 1, sizeof(*list));
    if (!list) {
        snprintf(err, errlen, "[tls] out of memory");
        return NULL;
    }
    int n = 0;
    bool found = false;
    for (int i = 0; i < cur->ncerts; i++) {
        bool it = !strcmp(cur->certs[i].cfg.name, cc->name);
        list[n++] = it ? *cc : cur->certs[i].cfg;
        found |= it;
    }
    if (!found)
        list[n++] = *cc;
    sws_tls_build b = {.cfg = &cur->cfg,
                       .certs = list,
                       .ncerts = n,
                       .file = cur->file,
                       .nloops = cur->nloops,
                       .keys = cur->keys,
                       .prev = cur};
    sws_tls_server *s = build(&b, cc->name, err, errlen);
    free(list);
    return s;
}

void sws_tls_server_info(const sws_tls_server *s, sws_tls_info *out) {
    *out = s->info;
}

int sws_tls_server_certs(const sws_tls_server *s) {
    return s->ncerts;
}

void sws_tls_server_cert(const sws_tls_server *s, int i, sws_tls_cert_info *out) {
    const srv_cert *sc = &s->certs[i];
    const sws_tls_cert *c = sc->c;
    *out = (sws_tls_cert_info){.section = sc->section,
                               .file = sc->cfg.cert,
                               .key_type = c ? c->key_type : "",
                               .not_after = c ? c->not_after : "",
                               .not_after_s = c ? c->not_after_s : 0,
                               .nnames = c ? c->nnames : 0,
                               .names = c ? (const char *const *)c->names : NULL,
                               .is_default = i == s->def,
                               .ocsp = c && c->ocsp,
                               .served = c != NULL,
                               .refused = sc->refused};
}

/* ---- per handshake ---------------------------------------------------------- */

int sws_tls_server_wrap(sws_tls_conn *t, sws_tls_server *s, int loop) {
    int rc = sws_tls_conn_wrap(t, s->loop_ctx[loop % s->nloops]);
    if (rc < 0)
        return rc;
    if (!SSL_set_ex_data(t->ssl, sws_tls_conn_index(), t)) {
        ERR_clear_error();
        sws_tls_conn_free(t);
        return -ENOMEM;
    }
    atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
    t->srv = s;
    return 0;
}

int sws_tls_server_choose(SSL *ssl, sws_tls_conn *t, const char *name, size_t len, int *al) {
    const sws_tls_server *s = t->srv;
    uint32_t e;
    uint32_t g = s->def_group;
    const unsigned char *sid = s->def_sid;
    t->sni_known = len && sws_tls_names_find(s->names, name, len, &e);
    if (t->sni_known) {
        g = s->entries[e].group;
        sid = s->entries[e].sid;
    } else if (s->cfg.refuse_unknown) {
        /* RFC 6066 section 3. Without a name RFC 8446 9.2 suggests
         * missing_extension, which OpenSSL sends as handshake_failure before
         * the version is chosen: unrecognized_name says more. */
        t->refused_name = true;
        *al = SSL_AD_UNRECOGNIZED_NAME;
        return SSL_CLIENT_HELLO_ERROR;
    }
    if (g != s->def_group && !SSL_set_SSL_CTX(ssl, s->groups[g].ctx)) {
        ERR_clear_error();
        *al = SSL_AD_INTERNAL_ERROR;
        return SSL_CLIENT_HELLO_ERROR;
    }
    /* The name's context, and the name itself (a wildcard serves many; an
     * unknown name many more): a session resumes under the name it was made
     * for only, as RFC 6066 section 3 asks. */
    unsigned char ctx[32];
    uint64_t h = sws_tls_name_hash(name, len);
    memcpy(ctx, sid, 24);
    memcpy(ctx + 24, &h, 8);
    SSL_set_session_id_context(ssl, ctx, sizeof(ctx));
    return SSL_CLIENT_HELLO_SUCCESS;
}
