/* Parsing of [tls]: paths, the protocol range and cipher strings are taken as
 * text here and checked against OpenSSL when the server builds its contexts
 * (tls_server.c), where a bad value can name OpenSSL's reason. */
#include "tls_config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void sws_tls_config_defaults(sws_tls_config *t) {
    memset(t, 0, sizeof(*t));
    t->protocols = SWS_TLS_V12 | SWS_TLS_V13;
    snprintf(t->ciphers, sizeof(t->ciphers), "%s", SWS_TLS_DEFAULT_CIPHERS);
    snprintf(t->ciphersuites, sizeof(t->ciphersuites), "%s", SWS_TLS_DEFAULT_CIPHERSUITES);
    snprintf(t->groups, sizeof(t->groups), "%s", SWS_TLS_DEFAULT_GROUPS);
    t->tickets = true;
    t->ticket_key_rotate_ms = 3600u * 1000u;
    t->session_cache = 20480;
    t->ktls = true;
}

const char *sws_tls_protocols_name(unsigned p) {
    switch (p) {
    case SWS_TLS_V12:
        return "TLSv1.2";
    case SWS_TLS_V13:
        return "TLSv1.3";
    case SWS_TLS_V12 | SWS_TLS_V13:
        return "TLSv1.2 TLSv1.3";
    }
    return "none";
}

static int set_text(char *dst, size_t cap, const char *v) {
    if (strlen(v) >= cap || strpbrk(v, "\r\n"))
        return -EINVAL;
    strcpy(dst, v);
    return 0;
}

static int parse_bool(const char *v, bool *out) {
    if (!strcmp(v, "on") || !strcmp(v, "true") || !strcmp(v, "1"))
        *out = true;
    else if (!strcmp(v, "off") || !strcmp(v, "false") || !strcmp(v, "0"))
        *out = false;
    else
        return -EINVAL;
    return 0;
}

/* "TLSv1.2 TLSv1.3" (spaces or commas). Older versions are named and refused:
 * they have no forward-secret AEAD suite that every client agrees on. */
static int parse_protocols(const char *v, unsigned *out, char *err, size_t errlen) {
    unsigned p = 0;
    char buf[128];
    if (strlen(v) >= sizeof(buf))
        return -EINVAL;
    strcpy(buf, v);
    for (char *save, *w = strtok_r(buf, " ,\t", &save); w; w = strtok_r(NULL, " ,\t", &save)) {
        if (!strcasecmp(w, "TLSv1.2"))
            p |= SWS_TLS_V12;
        else if (!strcasecmp(w, "TLSv1.3"))
            p |= SWS_TLS_V13;
        else if (!strcasecmp(w, "SSLv3") || !strcasecmp(w, "TLSv1") || !strcasecmp(w, "TLSv1.0") ||
                 !strcasecmp(w, "TLSv1.1")) {
            snprintf(err, errlen, "%s is not offered (broken or deprecated; want TLSv1.2, TLSv1.3)",
                     w);
            return -EINVAL;
        } else {
            snprintf(err, errlen, "unknown protocol '%s' (want TLSv1.2, TLSv1.3)", w);
            return -EINVAL;
        }
    }
    if (!p) {
        snprintf(err, errlen, "no protocol (want TLSv1.2, TLSv1.3)");
        return -EINVAL;
    }
    *out = p;
    return 0;
}

/* A duration of at least a minute: "3600", "60m", "1h" (a bare number is seconds). */
static int parse_rotate(const char *v, uint32_t *out) {
    char *e;
    if (!isdigit((unsigned char)*v))
        return -EINVAL;
    errno = 0;
    unsigned long long n = strtoull(v, &e, 10);
    if (errno)
        return -EINVAL;
    unsigned long long m = 1000;
    if (!strcmp(e, "m"))
        m = 60000;
    else if (!strcmp(e, "h"))
        m = 3600000;
    else if (*e && strcmp(e, "s"))
        return -EINVAL;
    if (n > UINT32_MAX / m || n * m < 60000)
        return -EINVAL;
    *out = (uint32_t)(n * m);
    return 0;
}

#define BAD(...)                                                                                   \
    do {                                                                                           \
        snprintf(err, errlen, __VA_ARGS__);                                                        \
        return -EINVAL;                                                                            \
    } while (0)

int sws_tls_config_set(sws_tls_config *t, const char *key, const char *v, char *err,
                       size_t errlen) {
    if (!strcmp(key, "cert")) {
        if (!*v || set_text(t->cert, sizeof(t->cert), v) < 0)
            BAD("bad path '%s'", v);
    } else if (!strcmp(key, "key")) {
        if (!*v || set_text(t->key, sizeof(t->key), v) < 0)
            BAD("bad path '%s'", v);
    } else if (!strcmp(key, "ocsp")) {
        if (!strcmp(v, "off"))
            t->ocsp[0] = '\0';
        else if (set_text(t->ocsp, sizeof(t->ocsp), v) < 0)
            BAD("bad path '%s'", v);
    } else if (!strcmp(key, "protocols")) {
        if (parse_protocols(v, &t->protocols, err, errlen) < 0)
            return -EINVAL;
    } else if (!strcmp(key, "ciphers")) {
        /* The profile is longer than an ini line (inih: 200 characters). */
        if (!strcmp(v, "intermediate"))
            v = SWS_TLS_DEFAULT_CIPHERS;
        if (!*v || set_text(t->ciphers, sizeof(t->ciphers), v) < 0)
            BAD("bad cipher list");
    } else if (!strcmp(key, "ciphersuites")) {
        if (!*v || set_text(t->ciphersuites, sizeof(t->ciphersuites), v) < 0)
            BAD("bad ciphersuite list");
    } else if (!strcmp(key, "groups")) {
        if (!*v || set_text(t->groups, sizeof(t->groups), v) < 0)
            BAD("bad group list");
    } else if (!strcmp(key, "session_tickets")) {
        if (parse_bool(v, &t->tickets) < 0)
            BAD("bad value '%s' (want on or off)", v);
    } else if (!strcmp(key, "ticket_key_rotate")) {
        if (parse_rotate(v, &t->ticket_key_rotate_ms) < 0)
            BAD("bad duration '%s' (at least 60s; e.g. 1h)", v);
    } else if (!strcmp(key, "session_cache")) {
        char *e;
        unsigned long n = strtoul(v, &e, 10);
        if (!isdigit((unsigned char)*v) || *e || n > 10000000)
            BAD("bad count '%s' (want 0..10000000 entries per loop)", v);
        t->session_cache = (uint32_t)n;
    } else if (!strcmp(key, "ktls")) {
        if (parse_bool(v, &t->ktls) < 0)
            BAD("bad value '%s' (want on or off)", v);
    } else if (!strcmp(key, "unknown_name")) {
        if (!strcmp(v, "default"))
            t->refuse_unknown = false;
        else if (!strcmp(v, "refuse"))
            t->refuse_unknown = true;
        else
            BAD("bad value '%s' (want default or refuse)", v);
    } else
        BAD("unknown key");
    return 0;
}

int sws_tls_cert_config_set(sws_tls_cert_config *c, const char *key, const char *v, char *err,
                            size_t errlen) {
    if (!strcmp(key, "cert")) {
        if (!*v || set_text(c->cert, sizeof(c->cert), v) < 0)
            BAD("bad path '%s'", v);
    } else if (!strcmp(key, "key")) {
        if (!*v || set_text(c->key, sizeof(c->key), v) < 0)
            BAD("bad path '%s'", v);
    } else if (!strcmp(key, "ocsp")) {
        if (!strcmp(v, "off"))
            c->ocsp[0] = '\0';
        else if (!*v || set_text(c->ocsp, sizeof(c->ocsp), v) < 0)
            BAD("bad path '%s'", v);
    } else if (!strcmp(key, "default")) {
        if (parse_bool(v, &c->is_default) < 0)
            BAD("bad value '%s' (want on or off)", v);
    } else {
        BAD("unknown key (a [tls NAME] section takes cert, key, ocsp and default)");
    }
    return 0;
}

bool sws_tls_section_name_ok(const char *n) {
    size_t len = strlen(n);
    if (len == 0 || len >= SWS_TLS_SECTION_MAX)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!isalnum((unsigned char)n[i]) && n[i] != '_' && n[i] != '-' && n[i] != '.')
            return false;
    return true;
}

sws_tls_certs *sws_tls_certs_new(void) {
    sws_tls_certs *l = calloc(1, sizeof(*l));
    if (l)
        atomic_init(&l->refs, 1);
    return l;
}

void sws_tls_certs_ref(sws_tls_certs *l) {
    if (l)
        atomic_fetch_add(&l->refs, 1);
}

void sws_tls_certs_unref(sws_tls_certs *l) {
    if (l && atomic_fetch_sub(&l->refs, 1) == 1) {
        free(l->c);
        free(l->file);
        free(l);
    }
}

sws_tls_cert_config *sws_tls_certs_find(sws_tls_certs *l, const char *name) {
    for (int i = 0; l && i < l->n; i++)
        if (!strcmp(l->c[i].name, name))
            return &l->c[i];
    return NULL;
}

sws_tls_cert_config *sws_tls_certs_add(sws_tls_certs *l, bool first) {
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 4;
        sws_tls_cert_config *c = realloc(l->c, (size_t)cap * sizeof(*c));
        if (!c)
            return NULL;
        l->c = c;
        l->cap = cap;
    }
    if (first)
        memmove(&l->c[1], &l->c[0], (size_t)l->n * sizeof(l->c[0]));
    sws_tls_cert_config *c = &l->c[first ? 0 : l->n];
    l->n++;
    memset(c, 0, sizeof(*c));
    return c;
}
