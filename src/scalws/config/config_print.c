/* The configuration written out: --print-config (every key of the table in
 * its order, where each value came from, then the [tls NAME], [acme NAME]
 * and [route NAME] sections) and --help's list of keys with their defaults. */
#include "config.h"

#include "route.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* The value as a file line: ';' after a space would start an inline comment
 * for inih, so it is escaped (the loaders read "\;" as ';'). A value of
 * several lines (add_header's) is that many lines of the key. */
static void print_value(FILE *f, const char *key, const char *v) {
    for (const char *s = v; *s; s++) {
        if (*s == '\n') {
            fprintf(f, "\n%s = ", key);
            continue;
        }
        if (*s == ';')
            fputc('\\', f);
        fputc(*s, f);
    }
}

void sws_config_print(FILE *f, const sws_config *c, const sws_cli *cli) {
    fprintf(f, "; the effective configuration: defaults, then %s, then flags\n",
            cli->config ? cli->config : "no file");
    const char *section = "";
    for (int i = 0; i < sws_config_nkeys; i++) {
        const sws_key *k = &sws_config_keys[i];
        if (strcmp(k->section, section) != 0) {
            section = k->section;
            fprintf(f, "\n[%s]\n", section);
        }
        char v[SWS_BODY_MAX * 2 + 1];
        sws_config_format(c, k, v, sizeof v);
        if (!*v && !k->def) { /* unset: shown commented out, as the example file does */
            fprintf(f, ";%s =\n", k->name);
            continue;
        }
        /* Values that mean something else once a file sets them, shown
         * commented out so that the print reads back to this configuration:
         * with routes, an unset scenario makes the default route a 404 (set,
         * even to respond, it answers); with ACME, cert and key are its own
         * files, which a set cert and key would replace. */
        bool routes_404 = c->routes && c->routes->listed && c->origin[i] == SWS_FROM_DEFAULT &&
                          strcmp(k->section, "server") == 0 && strcmp(k->name, "scenario") == 0;
        bool acme_pair = c->tls_from_acme && c->origin[i] == SWS_FROM_DEFAULT &&
                         strcmp(k->section, "tls") == 0 &&
                         (strcmp(k->name, "cert") == 0 || strcmp(k->name, "key") == 0);
        if (routes_404) {
            fprintf(f, ";%s = %s ; default: unset, what no route matches is 404\n", k->name, v);
            continue;
        }
        if (acme_pair) {
            fprintf(f, ";%s = %s ; [acme] state_dir's, while [tls] cert and key are unset\n",
                    k->name, v);
            continue;
        }
        fprintf(f, "%s = ", k->name);
        print_value(f, k->name, v);
        switch (c->origin[i]) {
        case SWS_FROM_FILE:
            fprintf(f, " ; %s:%" PRIu32 "\n", cli->config ? cli->config : "file",
                    c->origin_line[i]);
            break;
        case SWS_FROM_FLAG:
            fprintf(f, " ; command line\n");
            break;
        default:
            fprintf(f, " ; default\n");
        }
        if (strcmp(k->section, "tls") == 0 && strcmp(k->name, "cert") == 0 && *v)
            sws_tls_describe_line(f, v);
    }
    sws_tls_sections_print(f, c);
    sws_acme_sections_print(f, c);
    sws_routes_print(f, c);
}

static void usage_keys(FILE *f, const sws_key *keys, int n) {
    for (int i = 0; i < n; i++) {
        const sws_key *k = &keys[i];
        char sk[64];
        snprintf(sk, sizeof sk, "[%s] %s", k->section, k->name);
        fprintf(f, "  %-26s %-18s %s%s\n", sk, k->def ? (*k->def ? k->def : "\"\"") : "(unset)",
                k->help, k->restart ? " (restart)" : "");
    }
}

void sws_config_usage(FILE *f) {
    usage_keys(f, sws_config_keys, sws_config_nkeys);
    usage_keys(f, sws_route_key_table, sws_route_nkeys);
    fprintf(f,
            "  (a [route NAME] section also takes every key of [respond], [static] and [proxy])\n");
    /* [tls NAME]: one more certificate each, parsed by src/tls/tls_config.c. */
    static const char *const tls_named[][3] = {
        {"cert", "(unset)", "PEM certificate (leaf, chain); serves the names it holds"},
        {"key", "(unset)", "PEM private key of that certificate"},
        {"ocsp", "off", "DER OCSP response to staple with it, or off"},
        {"default", "off", "served for an unknown or absent SNI (else [tls]'s, else the first)"},
    };
    for (size_t i = 0; i < sizeof(tls_named) / sizeof(tls_named[0]); i++) {
        char sk[64];
        snprintf(sk, sizeof sk, "[tls NAME] %s", tls_named[i][0]);
        fprintf(f, "  %-26s %-18s %s\n", sk, tls_named[i][1], tls_named[i][2]);
    }
}
