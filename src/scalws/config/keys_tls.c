/* The key table's side of [tls] and [acme]: each key handed to the parser
 * the unit tests also drive (src/tls/tls_config.c, src/acme/acme_config.c),
 * and its value written back for --print-config. */
#include "keys.h"

#include <stdio.h>
#include <string.h>

/* [tls]: parsed by src/tls/tls_config.c, which the unit tests also drive. */
#define TLS_PARSE(name, key)                                                                       \
    int sws_key_parse_tls_##name(sws_config *c, const char *v, char *why, size_t len) {            \
        return sws_tls_config_set(&c->tls, key, v, why, len);                                      \
    }
TLS_PARSE(cert, "cert")
TLS_PARSE(key, "key")
TLS_PARSE(ocsp, "ocsp")
TLS_PARSE(protocols, "protocols")
TLS_PARSE(ciphers, "ciphers")
TLS_PARSE(ciphersuites, "ciphersuites")
TLS_PARSE(groups, "groups")
TLS_PARSE(tickets, "session_tickets")
TLS_PARSE(rotate, "ticket_key_rotate")
TLS_PARSE(cache, "session_cache")
TLS_PARSE(ktls, "ktls")
TLS_PARSE(unknown, "unknown_name")
void sws_key_format_tls_cert(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->tls.cert);
}
void sws_key_format_tls_key(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->tls.key);
}
void sws_key_format_tls_ocsp(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->tls.ocsp[0] ? c->tls.ocsp : "off");
}
void sws_key_format_tls_protocols(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", sws_tls_protocols_name(c->tls.protocols));
}
/* The profile is longer than an ini line (inih reads 200 characters). */
void sws_key_format_tls_ciphers(const sws_config *c, char *out, size_t len) {
    bool def = strcmp(c->tls.ciphers, SWS_TLS_DEFAULT_CIPHERS) == 0;
    snprintf(out, len, "%s", def ? "intermediate" : c->tls.ciphers);
}
void sws_key_format_tls_ciphersuites(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->tls.ciphersuites);
}
void sws_key_format_tls_groups(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->tls.groups);
}
void sws_key_format_tls_tickets(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->tls.tickets ? "on" : "off");
}
void sws_key_format_tls_rotate(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%us", (unsigned)(c->tls.ticket_key_rotate_ms / 1000u));
}
void sws_key_format_tls_cache(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%u", (unsigned)c->tls.session_cache);
}
void sws_key_format_tls_ktls(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->tls.ktls ? "on" : "off");
}
void sws_key_format_tls_unknown(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->tls.refuse_unknown ? "refuse" : "default");
}

/* [acme]: parsed by src/acme/acme_config.c, which the unit tests also drive
 * (its sws_acme_keys holds the same defaults for them). */
#define ACME_PARSE(name, key)                                                                      \
    int sws_key_parse_acme_##name(sws_config *c, const char *v, char *why, size_t len) {           \
        return sws_acme_config_set(&c->acme, key, v, why, len);                                    \
    }
#define ACME_TEXT(name, field)                                                                     \
    ACME_PARSE(name, #name)                                                                        \
    void sws_key_format_acme_##name(const sws_config *c, char *out, size_t len) {                  \
        snprintf(out, len, "%s", c->acme.field);                                                   \
    }
#define ACME_SECS(name, field)                                                                     \
    ACME_PARSE(name, #name)                                                                        \
    void sws_key_format_acme_##name(const sws_config *c, char *out, size_t len) {                  \
        snprintf(out, len, "%us", (unsigned)c->acme.field);                                        \
    }
ACME_TEXT(directory, directory)
ACME_TEXT(email, email)
ACME_TEXT(state_dir, state_dir)
ACME_TEXT(challenge, challenge)
ACME_TEXT(ca_file, ca_file)
ACME_TEXT(http_listen, http_listen)
ACME_SECS(renew_before, renew_before_s)
ACME_SECS(retry_min, retry_min_s)
ACME_SECS(retry_max, retry_max_s)
ACME_PARSE(domains, "domains")
void sws_key_format_acme_domains(const sws_config *c, char *out, size_t len) {
    size_t o = 0;
    out[0] = '\0';
    for (int i = 0; i < c->acme.ndomains && o < len; i++)
        o += (size_t)snprintf(out + o, len - o, "%s%s", i ? ", " : "", c->acme.domains[i]);
}
