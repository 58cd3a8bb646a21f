/* The [acme] keys: one table with the defaults and help, and the parser of
 * each key's value. Durations take s, m, h or d (renew_before = 30d). */
#include "acme_config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const sws_acme_key sws_acme_keys[] = {
    {"directory", "", "the CA's ACME directory URL; unset: no ACME"},
    {"email", "", "the account's contact address"},
    {"domains", "", "names on the certificate, comma or space separated (up to 8)"},
    {"state_dir", "/var/lib/scalwsd/acme", "account key, certificate, key and renewal state"},
    {"renew_before", "30d", "renew when the certificate expires within this"},
    {"challenge", "http-01", "the challenge type: http-01 or tls-alpn-01"},
    {"ca_file", "", "PEM roots trusted for the CA's HTTPS instead of the system's"},
    {"http_listen", "", "a plaintext listener for HTTP-01 alone, for a tls [server] listen"},
    {"retry_min", "60s", "first retry after a failure; doubles up to retry_max"},
    {"retry_max", "6h", "longest wait between retries (a CA's Retry-After wins)"},
    {NULL, NULL, NULL},
};

/* "90", "90s", "15m", "2h", "30d" into seconds. */
static int parse_secs(const char *v, uint32_t *out) {
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno || end == v)
        return -EINVAL;
    unsigned long long mul = 1;
    if (*end == 's')
        end++;
    else if (*end == 'm')
        mul = 60, end++;
    else if (*end == 'h')
        mul = 3600, end++;
    else if (*end == 'd')
        mul = 86400, end++;
    if (*end || n > UINT32_MAX / mul)
        return -EINVAL;
    *out = (uint32_t)(n * mul);
    return 0;
}

void sws_acme_config_defaults(sws_acme_config *a) {
    memset(a, 0, sizeof(*a));
    for (const sws_acme_key *k = sws_acme_keys; k->key; k++) {
        char err[8];
        (void)sws_acme_config_set(a, k->key, k->def, err, sizeof(err));
    }
}

#define BAD(...)                                                                                   \
    do {                                                                                           \
        snprintf(err, errlen, __VA_ARGS__);                                                        \
        return -EINVAL;                                                                            \
    } while (0)

/* Zero-filled past the string, so two configs built from the same text
 * compare equal byte for byte (reload.c compares them whole). */
static int copy(char *dst, size_t cap, const char *v) {
    if (strlen(v) >= cap)
        return -EINVAL;
    memset(dst, 0, cap);
    memcpy(dst, v, strlen(v));
    return 0;
}

static bool domain_ok(const char *d) {
    size_t n = strlen(d);
    if (n == 0 || n > 253 || d[0] == '.' || d[0] == '-')
        return false;
    for (const char *p = d; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '.')
            return false;
    return true;
}

int sws_acme_config_set(sws_acme_config *a, const char *key, const char *v, char *err,
                        size_t errlen) {
    if (strcmp(key, "directory") == 0) {
        if (*v && strncmp(v, "https://", 8) != 0 && strncmp(v, "http://", 7) != 0)
            BAD("bad URL '%s' (want https://...)", v);
        if (copy(a->directory, sizeof(a->directory), v) < 0)
            BAD("URL too long");
    } else if (strcmp(key, "email") == 0) {
        if (copy(a->email, sizeof(a->email), v) < 0 || strpbrk(v, " \t\"<>,"))
            BAD("bad address '%s'", v);
    } else if (strcmp(key, "domains") == 0) {
        char tmp[2048];
        if (copy(tmp, sizeof(tmp), v) < 0)
            BAD("too long");
        /* Parsed aside: a refused value leaves the old list. */
        char doms[SWS_ACME_DOMAINS_MAX][256] = {{0}};
        int n = 0;
        for (char *save, *d = strtok_r(tmp, ", \t", &save); d; d = strtok_r(NULL, ", \t", &save)) {
            if (n == SWS_ACME_DOMAINS_MAX)
                BAD("more than %d domains", SWS_ACME_DOMAINS_MAX);
            if (!domain_ok(d) || copy(doms[n], sizeof(doms[0]), d) < 0)
                BAD("bad domain '%s' (letters, digits, '-' and '.'; no wildcard without dns-01)",
                    d);
            n++;
        }
        memcpy(a->domains, doms, sizeof(doms));
        a->ndomains = n;
    } else if (strcmp(key, "state_dir") == 0) {
        if (!*v || v[0] != '/' || copy(a->state_dir, sizeof(a->state_dir), v) < 0)
            BAD("bad directory '%s' (want an absolute path)", v);
    } else if (strcmp(key, "renew_before") == 0) {
        if (parse_secs(v, &a->renew_before_s) < 0 || a->renew_before_s == 0)
            BAD("bad duration '%s' (e.g. 30d)", v);
    } else if (strcmp(key, "challenge") == 0) {
        if (strcmp(v, "http-01") != 0 && strcmp(v, "tls-alpn-01") != 0)
            BAD("bad value '%s' (want http-01 or tls-alpn-01)", v);
        copy(a->challenge, sizeof(a->challenge), v);
    } else if (strcmp(key, "ca_file") == 0) {
        if (copy(a->ca_file, sizeof(a->ca_file), v) < 0)
            BAD("path too long");
    } else if (strcmp(key, "http_listen") == 0) {
        if (copy(a->http_listen, sizeof(a->http_listen), strcmp(v, "off") == 0 ? "" : v) < 0)
            BAD("address too long");
    } else if (strcmp(key, "retry_min") == 0) {
        if (parse_secs(v, &a->retry_min_s) < 0 || a->retry_min_s == 0)
            BAD("bad duration '%s' (e.g. 60s)", v);
    } else if (strcmp(key, "retry_max") == 0) {
        if (parse_secs(v, &a->retry_max_s) < 0 || a->retry_max_s == 0)
            BAD("bad duration '%s' (e.g. 6h)", v);
    } else {
        BAD("unknown key");
    }
    return 0;
}

int sws_acme_config_check(const sws_acme_config *a, int orders, char *err, size_t errlen) {
    if (!sws_acme_enabled(a))
        return 0;
    if (a->ndomains == 0 && orders == 0)
        BAD("[acme] directory is set but domains is empty");
    if (a->retry_max_s < a->retry_min_s)
        BAD("[acme] retry_max is shorter than retry_min");
    return 0;
}
