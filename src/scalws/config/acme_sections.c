/* [acme NAME] sections: one ACME order each, for a certificate of its own.
 * The account ([acme] directory, email, ca_file, http_listen) is [acme]'s; a
 * section gives its domains and may set its challenge, renew_before and
 * retry_min/retry_max (unset: [acme]'s). Its files live in [acme]
 * state_dir/NAME, and on a tls listener its pair is the certificate NAME of
 * the listener's list, chosen by SNI like a [tls NAME] section's. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* The keys a section may set, and the bit that says it did. */
static const char *const order_keys[] = {"domains", "challenge", "renew_before", "retry_min",
                                         "retry_max"};
#define NKEYS (int)(sizeof(order_keys) / sizeof(order_keys[0]))

/* "acme  NAME" -> "NAME". */
static const char *section_name(const char *section) {
    const char *n = section + 4;
    while (*n == ' ' || *n == '\t')
        n++;
    return n;
}

int sws_acme_section_kv(sws_config *c, const char *section, const char *key, const char *value,
                        int section_line, int key_line, char *why, size_t len) {
    const char *name = section_name(section);
    if (!sws_tls_section_name_ok(name)) {
        snprintf(why, len, "bad section name '%s' (letters, digits, '_', '-' and '.', up to %d)",
                 name, SWS_TLS_SECTION_MAX - 1);
        return -EINVAL;
    }
    int k = 0;
    while (k < NKEYS && strcmp(order_keys[k], key) != 0)
        k++;
    if (k == NKEYS) {
        snprintf(why, len,
                 "not a key of an order (domains, challenge, renew_before, retry_min, "
                 "retry_max; the account's keys are [acme]'s)");
        return -EINVAL;
    }
    sws_acme_order *o = NULL;
    for (int i = 0; i < c->nacme_orders; i++)
        if (strcmp(c->acme_orders[i].a.name, name) == 0)
            o = &c->acme_orders[i];
    if (!o) {
        if (c->nacme_orders == SWS_ACME_ORDERS_MAX) {
            snprintf(why, len, "more than %d [acme NAME] sections", SWS_ACME_ORDERS_MAX);
            return -EINVAL;
        }
        o = &c->acme_orders[c->nacme_orders++];
        memset(o, 0, sizeof(*o));
        sws_acme_config_defaults(&o->a);
        snprintf(o->a.name, sizeof(o->a.name), "%s", name);
        o->line = (uint32_t)section_line;
    }
    if (sws_acme_config_set(&o->a, key, value, why, len) < 0)
        return -EINVAL;
    o->set |= 1u << k;
    o->key_line[k] = (uint32_t)key_line;
    return 0;
}

/* An order's own keys over [acme]'s; false when state_dir/NAME is too long. */
static bool inherit(sws_acme_order *o, const sws_acme_config *base) {
    sws_acme_config a = *base;
    memcpy(a.name, o->a.name, sizeof(a.name));
    memset(a.domains, 0, sizeof(a.domains));
    a.ndomains = 0;
    if (o->set & 1) {
        memcpy(a.domains, o->a.domains, sizeof(a.domains));
        a.ndomains = o->a.ndomains;
    }
    if (o->set & 2)
        memcpy(a.challenge, o->a.challenge, sizeof(a.challenge));
    if (o->set & 4)
        a.renew_before_s = o->a.renew_before_s;
    if (o->set & 8)
        a.retry_min_s = o->a.retry_min_s;
    if (o->set & 16)
        a.retry_max_s = o->a.retry_max_s;
    memset(a.state_dir, 0, sizeof(a.state_dir));
    memset(a.account_dir, 0, sizeof(a.account_dir));
    /* Room for "/cert.pem" after it, in a certificate's path. */
    int n = snprintf(a.state_dir, sizeof(a.state_dir) - 10, "%s/%s", base->state_dir, o->a.name);
    if (n < 0 || (size_t)n >= sizeof(a.state_dir) - 10)
        return false;
    memcpy(a.account_dir, base->state_dir, sizeof(a.account_dir));
    o->a = a;
    return true;
}

int sws_acme_sections_settle(sws_config *c, const char *file, char *err, size_t errlen) {
    const char *f = file ? file : "config";
    for (int i = 0; i < c->nacme_orders; i++) {
        sws_acme_order *o = &c->acme_orders[i];
        if (!sws_acme_enabled(&c->acme)) {
            snprintf(err, errlen, "%s:%" PRIu32 ": [acme %s] needs [acme] directory (the account)",
                     f, o->line, o->a.name);
            return -EINVAL;
        }
        if (!inherit(o, &c->acme)) {
            snprintf(err, errlen, "%s:%" PRIu32 ": [acme %s]: [acme] state_dir/%s is too long", f,
                     o->line, o->a.name, o->a.name);
            return -EINVAL;
        }
        if (o->a.ndomains == 0) {
            snprintf(err, errlen, "%s:%" PRIu32 ": [acme %s] needs domains", f, o->line, o->a.name);
            return -EINVAL;
        }
        if (o->a.retry_max_s < o->a.retry_min_s) {
            snprintf(err, errlen, "%s:%" PRIu32 ": [acme %s] retry_max is shorter than retry_min",
                     f, o->line, o->a.name);
            return -EINVAL;
        }
        /* A name on two orders: two certificates would claim it. */
        for (int d = 0; d < o->a.ndomains; d++) {
            const char *dom = o->a.domains[d], *other = NULL;
            for (int k = 0; k < c->acme.ndomains && !other; k++)
                if (strcasecmp(c->acme.domains[k], dom) == 0)
                    other = "[acme]";
            for (int j = 0; j < i && !other; j++)
                for (int k = 0; k < c->acme_orders[j].a.ndomains && !other; k++)
                    if (strcasecmp(c->acme_orders[j].a.domains[k], dom) == 0)
                        other = c->acme_orders[j].a.name;
            if (other) {
                snprintf(err, errlen,
                         "%s:%" PRIu32 ": [acme %s] domains: %s is ordered by %s%s%s already", f,
                         o->key_line[0], o->a.name, dom, other[0] == '[' ? "" : "[acme ", other,
                         other[0] == '[' ? "" : "]");
                return -EINVAL;
            }
        }
        if (sws_acme_tls_alpn(&o->a) && !c->listen_tls) {
            snprintf(err, errlen,
                     "%s:%" PRIu32 ": [acme %s] challenge: tls-alpn-01 is answered on a tls "
                     "listener, and %s is plain",
                     f, o->key_line[1] ? o->key_line[1] : o->line, o->a.name, c->listen_origin);
            return -EINVAL;
        }
        if (!c->listen_tls)
            continue;
        if (c->tls_certs && sws_tls_certs_find(c->tls_certs, o->a.name)) {
            snprintf(err, errlen,
                     "%s:%" PRIu32 ": [acme %s]: a [tls %s] section has that name already (the "
                     "order's certificate takes it)",
                     f, o->line, o->a.name, o->a.name);
            return -EINVAL;
        }
        if (!c->tls_certs && !(c->tls_certs = sws_tls_certs_new()))
            goto nomem;
        if (!c->tls_certs->file && file && !(c->tls_certs->file = strdup(file)))
            goto nomem;
        sws_tls_cert_config *cc = sws_tls_certs_add(c->tls_certs, false);
        if (!cc)
            goto nomem;
        snprintf(cc->name, sizeof(cc->name), "%s", o->a.name);
        snprintf(cc->cert, sizeof(cc->cert), "%s/cert.pem", o->a.state_dir);
        snprintf(cc->key, sizeof(cc->key), "%s/key.pem", o->a.state_dir);
        cc->line = o->line;
    }
    return 0;
nomem:
    snprintf(err, errlen, "out of memory");
    return -ENOMEM;
}

bool sws_acme_any_http01(const sws_config *c) {
    if (sws_acme_enabled(&c->acme) && c->acme.ndomains && !sws_acme_tls_alpn(&c->acme))
        return true;
    for (int i = 0; i < c->nacme_orders; i++)
        if (!sws_acme_tls_alpn(&c->acme_orders[i].a))
            return true;
    return false;
}

bool sws_acme_is_order_cert(const sws_config *c, const char *name) {
    for (int i = 0; i < c->nacme_orders; i++)
        if (strcmp(c->acme_orders[i].a.name, name) == 0)
            return true;
    return false;
}

void sws_acme_sections_print(FILE *f, const sws_config *c) {
    for (int i = 0; i < c->nacme_orders; i++) {
        const sws_acme_order *o = &c->acme_orders[i];
        fprintf(f, "\n[acme %s] ; line %" PRIu32 "; files in %s\n", o->a.name, o->line,
                o->a.state_dir);
        fprintf(f, "domains = ");
        for (int d = 0; d < o->a.ndomains; d++)
            fprintf(f, "%s%s", d ? ", " : "", o->a.domains[d]);
        fprintf(f, "\nchallenge = %s%s\n", o->a.challenge, (o->set & 2) ? "" : " ; [acme]'s");
        fprintf(f, "renew_before = %" PRIu32 "s%s\n", o->a.renew_before_s,
                (o->set & 4) ? "" : " ; [acme]'s");
        fprintf(f, "retry_min = %" PRIu32 "s%s\n", o->a.retry_min_s,
                (o->set & 8) ? "" : " ; [acme]'s");
        fprintf(f, "retry_max = %" PRIu32 "s%s\n", o->a.retry_max_s,
                (o->set & 16) ? "" : " ; [acme]'s");
    }
}
