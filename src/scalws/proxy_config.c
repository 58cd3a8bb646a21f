/* Parsing of the [proxy] section, kept out of config.c so the proxy's keys
 * live beside the proxy. Same rules as config.c: one reason per bad value. */
#include "proxy_config.h"
#include "config.h" /* sws_parse_endpoint */

#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sws_proxy_config_defaults(sws_proxy_config *p) {
    memset(p, 0, sizeof(*p));
    p->pool_per_loop = 32;
    p->connect_timeout_ms = 5000;
    p->read_timeout_ms = 60000;
    p->idle_timeout_ms = 60000;
}

/* host:port with a numeric or resolvable host; the port is required. */
static int parse_upstream(const char *s, size_t n, sws_upstream_addr *out) {
    if (n == 0 || n >= sizeof(out->text))
        return -EINVAL;
    memcpy(out->text, s, n);
    out->text[n] = '\0';
    return sws_parse_endpoint(out->text, true, &out->ss, &out->len);
}

static int parse_ms(const char *v, uint32_t *out) {
    char *e;
    if (!isdigit((unsigned char)*v))
        return -EINVAL;
    unsigned long long n = strtoull(v, &e, 10);
    if (strcmp(e, "ms") == 0)
        ;
    else if (*e == '\0' || strcmp(e, "s") == 0)
        n *= 1000; /* a bare number is seconds, as elsewhere in the file */
    else if (strcmp(e, "m") == 0)
        n *= 60000;
    else
        return -EINVAL;
    if (n == 0 || n > UINT32_MAX)
        return -EINVAL;
    *out = (uint32_t)n;
    return 0;
}

int sws_proxy_config_set(sws_proxy_config *p, const char *key, const char *v, char *err,
                         size_t errlen) {
    if (strcmp(key, "upstream") == 0) {
        int n = 0;
        const char *s = v;
        while (*s) {
            while (*s == ' ' || *s == ',')
                s++;
            if (!*s)
                break;
            const char *e = s;
            while (*e && *e != ',' && *e != ' ')
                e++;
            if (n == SWS_UPSTREAMS_MAX) {
                snprintf(err, errlen, "more than %d upstreams", SWS_UPSTREAMS_MAX);
                return -EINVAL;
            }
            if (parse_upstream(s, (size_t)(e - s), &p->up[n]) < 0) {
                snprintf(err, errlen, "bad upstream '%.*s' (want host:port)", (int)(e - s), s);
                return -EINVAL;
            }
            n++;
            s = e;
        }
        if (n == 0) {
            snprintf(err, errlen, "no upstream given (want host:port[, host:port...])");
            return -EINVAL;
        }
        p->nupstreams = n;
    } else if (strcmp(key, "pool") == 0) {
        if (strcmp(v, "per_loop") == 0) {
            p->pool_mode = SWS_POOL_PER_LOOP;
        } else if (strcmp(v, "shared") == 0) {
            p->pool_mode = SWS_POOL_SHARED;
        } else {
            snprintf(err, errlen, "bad value '%s' (want per_loop or shared)", v);
            return -EINVAL;
        }
    } else if (strcmp(key, "pool_per_loop") == 0) {
        char *e;
        unsigned long n = strtoul(v, &e, 10);
        if (!isdigit((unsigned char)*v) || *e || n > 100000) {
            snprintf(err, errlen, "bad count '%s' (want 0..100000)", v);
            return -EINVAL;
        }
        p->pool_per_loop = (uint32_t)n;
    } else if (strcmp(key, "connect_timeout") == 0 || strcmp(key, "read_timeout") == 0 ||
               strcmp(key, "idle_timeout") == 0) {
        uint32_t *dst = key[0] == 'c'   ? &p->connect_timeout_ms
                        : key[0] == 'r' ? &p->read_timeout_ms
                                        : &p->idle_timeout_ms;
        if (parse_ms(v, dst) < 0) {
            snprintf(err, errlen, "bad duration '%s' (e.g. 5s, 500ms)", v);
            return -EINVAL;
        }
    } else {
        snprintf(err, errlen, "unknown key");
        return -EINVAL;
    }
    return 0;
}
