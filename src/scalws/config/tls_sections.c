/* [tls NAME] sections: one certificate each (cert, key, ocsp, default), the
 * names it serves read from the certificate itself. The loader hands their
 * keys here; sws_tls_sections_settle then puts [tls]'s own pair first and
 * checks what needs every section (one default, cert and key in each). */
#include "config.h"

#include "sws_tls.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* "tls  NAME" -> "NAME". */
static const char *section_name(const char *section) {
    const char *n = section + 3;
    while (*n == ' ' || *n == '\t')
        n++;
    return n;
}

int sws_tls_section_kv(sws_config *c, const char *section, const char *key, const char *value,
                       const char *path, int section_line, int key_line, char *why, size_t len) {
    const char *name = section_name(section);
    if (!sws_tls_section_name_ok(name)) {
        snprintf(why, len, "bad section name '%s' (letters, digits, '_', '-' and '.', up to %d)",
                 name, SWS_TLS_SECTION_MAX - 1);
        return -EINVAL;
    }
    if (!c->tls_certs && !(c->tls_certs = sws_tls_certs_new()))
        goto nomem;
    if (!c->tls_certs->file && path && !(c->tls_certs->file = strdup(path)))
        goto nomem;
    sws_tls_cert_config *cc = sws_tls_certs_find(c->tls_certs, name);
    if (!cc) {
        if (!(cc = sws_tls_certs_add(c->tls_certs, false)))
            goto nomem;
        snprintf(cc->name, sizeof(cc->name), "%s", name);
        cc->line = (uint32_t)section_line;
    }
    if (sws_tls_cert_config_set(cc, key, value, why, len) < 0)
        return -EINVAL;
    uint32_t *line = !strcmp(key, "cert")   ? &cc->cert_line
                     : !strcmp(key, "key")  ? &cc->key_line
                     : !strcmp(key, "ocsp") ? &cc->ocsp_line
                                            : NULL;
    if (line)
        *line = (uint32_t)key_line;
    return 0;
nomem:
    snprintf(why, len, "out of memory");
    return -ENOMEM;
}

int sws_tls_sections_settle(sws_config *c, const char *file, char *err, size_t errlen) {
    sws_tls_certs *l = c->tls_certs;
    if (c->tls.cert[0] || c->tls.key[0]) {
        if (!l && !(l = c->tls_certs = sws_tls_certs_new()))
            goto nomem;
        if (!l->file && file && !(l->file = strdup(file)))
            goto nomem;
        sws_tls_cert_config *p = sws_tls_certs_add(l, true);
        if (!p)
            goto nomem;
        snprintf(p->cert, sizeof(p->cert), "%s", c->tls.cert);
        snprintf(p->key, sizeof(p->key), "%s", c->tls.key);
        snprintf(p->ocsp, sizeof(p->ocsp), "%s", c->tls.ocsp);
        static const char *const keys[] = {"cert", "key", "ocsp"};
        uint32_t *lines[] = {&p->cert_line, &p->key_line, &p->ocsp_line};
        for (int k = 0; k < 3; k++) {
            int i = sws_config_key_index("tls", keys[k]);
            if (i >= 0 && c->origin[i] == SWS_FROM_FILE)
                *lines[k] = c->origin_line[i];
        }
        if (c->listen_tls && (!c->tls.cert[0] || !c->tls.key[0])) {
            snprintf(err, errlen, "%s: a tls listener needs [tls] cert and key", c->listen_origin);
            return -EINVAL;
        }
    }
    const sws_tls_cert_config *def = NULL;
    for (int i = 0; l && i < l->n; i++) {
        const sws_tls_cert_config *cc = &l->c[i];
        if (!cc->name[0])
            continue;
        if (!cc->cert[0] || !cc->key[0]) {
            snprintf(err, errlen, "%s:%" PRIu32 ": [tls %s] needs cert and key",
                     file ? file : "config", cc->line, cc->name);
            return -EINVAL;
        }
        if (cc->is_default && def) {
            snprintf(err, errlen,
                     "%s:%" PRIu32 ": [tls %s] default = on: [tls %s] is the default already",
                     file ? file : "config", cc->line, cc->name, def->name);
            return -EINVAL;
        }
        if (cc->is_default)
            def = cc;
    }
    if (c->listen_tls && (!l || l->n == 0)) {
        snprintf(err, errlen,
                 "%s: a tls listener needs [tls] cert and key (or [tls NAME] sections)",
                 c->listen_origin);
        return -EINVAL;
    }
    return 0;
nomem:
    snprintf(err, errlen, "out of memory");
    return -ENOMEM;
}

void sws_config_tls_build(const sws_config *c, sws_tls_build *b) {
    const sws_tls_certs *l = c->tls_certs;
    *b = (sws_tls_build){.cfg = &c->tls,
                         .certs = l ? l->c : NULL,
                         .ncerts = l ? l->n : 0,
                         .file = l ? l->file : NULL,
                         .nloops = 1};
}

void sws_tls_describe_line(FILE *f, const char *cert) {
    char d[1024];
    if (sws_tls_cert_describe(cert, d, sizeof(d)) < 0)
        fprintf(f, "; the certificate cannot be read: %s\n", d);
    else
        fprintf(f, "; serves %s\n", d);
}

void sws_tls_sections_print(FILE *f, const sws_config *c) {
    const sws_tls_certs *l = c->tls_certs;
    for (int i = 0; l && i < l->n; i++) {
        const sws_tls_cert_config *cc = &l->c[i];
        if (!cc->name[0] || sws_acme_is_order_cert(c, cc->name))
            continue; /* an [acme NAME]'s pair: printed with its section */
        const char *file = l->file ? l->file : "file";
        fprintf(f, "\n[tls %s] ; %s:%" PRIu32 "\n", cc->name, file, cc->line);
        fprintf(f, "cert = %s\n", cc->cert);
        fprintf(f, "key = %s\n", cc->key);
        fprintf(f, "ocsp = %s\n", cc->ocsp[0] ? cc->ocsp : "off");
        fprintf(f, "default = %s\n", cc->is_default ? "on" : "off");
        sws_tls_describe_line(f, cc->cert);
    }
}

void sws_tls_print_certs(FILE *f, const sws_tls_server *ts) {
    sws_tls_info ti;
    sws_tls_server_info(ts, &ti);
    int n = sws_tls_server_certs(ts);
    const char *def = "";
    for (int i = 0; i < n; i++) {
        sws_tls_cert_info ci;
        sws_tls_server_cert(ts, i, &ci);
        if (ci.is_default)
            def = ci.section;
    }
    fprintf(f, "scalwsd: tls: %d certificate%s for %zu name%s; an unknown or absent name %s%s\n",
            ti.certs, ti.certs == 1 ? "" : "s", ti.names, ti.names == 1 ? "" : "s",
            ti.refuse_unknown ? "is refused" : "gets ", ti.refuse_unknown ? "" : def);
    for (int i = 0; i < n; i++) {
        sws_tls_cert_info ci;
        sws_tls_server_cert(ts, i, &ci);
        if (i == 16) {
            fprintf(f, "scalwsd: tls: and %d more certificates (/status lists them)\n", n - i);
            break;
        }
        fprintf(f, "scalwsd: tls: %s", ci.section);
        for (int k = 0; k < ci.nnames && k < 8; k++)
            fprintf(f, " %s", ci.names[k]);
        if (ci.nnames > 8)
            fprintf(f, " (and %d more)", ci.nnames - 8);
        fprintf(f, " (%s, notAfter %s%s)\n", ci.key_type, ci.not_after,
                ci.is_default ? ", default" : "");
        if (ci.not_after_s && ci.not_after_s < (int64_t)time(NULL))
            fprintf(f, "scalwsd: warning: %s cert %s expired on %s\n", ci.section, ci.file,
                    ci.not_after);
    }
}

int sws_tls_log_refused(FILE *f, const sws_tls_server *ts, const char *what) {
    int n = 0;
    for (int i = 0; i < sws_tls_server_certs(ts); i++) {
        sws_tls_cert_info ci;
        sws_tls_server_cert(ts, i, &ci);
        if (!ci.refused[0])
            continue;
        n++;
        fprintf(f, "scalwsd: %s: certificate refused: %s; %s\n", what, ci.refused,
                ci.served ? "still serving the one loaded before" : "not served");
    }
    return n;
}
