/* The [proxy] upstream list, the one proxy key that is not a plain kind of the
 * key table (config_keys.c): comma- or space-separated host:port entries. */
#include "proxy_config.h"
#include "config.h" /* sws_parse_endpoint */

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* host:port with a numeric or resolvable host; the port is required. */
static int parse_upstream(const char *s, size_t n, sws_upstream_addr *out) {
    if (n == 0 || n >= sizeof(out->text))
        return -EINVAL;
    memcpy(out->text, s, n);
    out->text[n] = '\0';
    return sws_parse_endpoint(out->text, true, &out->ss, &out->len);
}

int sws_proxy_parse_upstreams(sws_proxy_config *p, const char *v, char *err, size_t errlen) {
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
    return 0;
}
