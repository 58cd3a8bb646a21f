/* Address lists ([proxy] trusted_proxies): CIDR prefixes parsed from the
 * config, printed back, and matched against a peer's numeric address. Pure
 * functions: no I/O, no state. */
#include "trusted.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sws_cidr_parse(const char *s, size_t n, sws_cidr *out) {
    char t[INET6_ADDRSTRLEN + 8];
    if (n == 0 || n >= sizeof t)
        return -EINVAL;
    memcpy(t, s, n);
    t[n] = '\0';
    char *slash = strchr(t, '/');
    long bits = -1;
    if (slash) {
        char *e;
        *slash = '\0';
        bits = strtol(slash + 1, &e, 10);
        if (!slash[1] || *e || bits < 0)
            return -EINVAL;
    }
    memset(out, 0, sizeof *out);
    if (inet_pton(AF_INET, t, out->addr) == 1) {
        out->family = AF_INET;
        if (bits > 32)
            return -EINVAL;
        out->bits = (uint8_t)(bits < 0 ? 32 : bits);
    } else if (inet_pton(AF_INET6, t, out->addr) == 1) {
        out->family = AF_INET6;
        if (bits > 128)
            return -EINVAL;
        out->bits = (uint8_t)(bits < 0 ? 128 : bits);
    } else {
        return -EINVAL;
    }
    return 0;
}

int sws_trusted_parse(sws_proxy_config *p, const char *v, char *err, size_t errlen) {
    int n = 0;
    if (strcmp(v, "off") == 0)
        v = "";
    for (const char *s = v; *s;) {
        s += strspn(s, ", \t");
        if (!*s)
            break;
        size_t len = strcspn(s, ", \t");
        if (n == SWS_TRUSTED_MAX) {
            snprintf(err, errlen, "more than %d trusted_proxies entries", SWS_TRUSTED_MAX);
            return -EINVAL;
        }
        if (sws_cidr_parse(s, len, &p->trusted[n]) < 0) {
            snprintf(err, errlen, "bad CIDR '%.*s' (want 10.0.0.0/8, ::1 or 2001:db8::/32)",
                     (int)len, s);
            return -EINVAL;
        }
        n++;
        s += len;
    }
    p->ntrusted = n;
    return 0;
}

void sws_cidr_list_format(const sws_cidr *e, int n, char *out, size_t len) {
    size_t o = 0;
    out[0] = '\0';
    for (int i = 0; i < n && o < len; i++) {
        char a[INET6_ADDRSTRLEN];
        inet_ntop(e[i].family, e[i].addr, a, sizeof a);
        o += (size_t)snprintf(out + o, len - o, "%s%s/%u", i ? ", " : "", a, (unsigned)e[i].bits);
    }
    if (n == 0)
        snprintf(out, len, "off");
}

void sws_trusted_format(const sws_proxy_config *p, char *out, size_t len) {
    sws_cidr_list_format(p->trusted, p->ntrusted, out, len);
}

bool sws_prefix_eq(const uint8_t *a, const uint8_t *b, unsigned bits) {
    unsigned whole = bits / 8, rest = bits % 8;
    if (memcmp(a, b, whole) != 0)
        return false;
    if (rest == 0)
        return true;
    uint8_t mask = (uint8_t)(0xffu << (8 - rest));
    return (a[whole] & mask) == (b[whole] & mask);
}

/* The peer's binary address: family and 4 or 16 bytes; a mapped IPv4 is IPv4. */
int sws_addr_parse(const char *peer, uint8_t out[16]) {
    if (inet_pton(AF_INET, peer, out) == 1)
        return AF_INET;
    if (inet_pton(AF_INET6, peer, out) != 1)
        return 0;
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (memcmp(out, mapped, 12) == 0) {
        memmove(out, out + 12, 4);
        return AF_INET;
    }
    return AF_INET6;
}

bool sws_trusted_has(const sws_proxy_config *p, const char *peer) {
    if (p->ntrusted == 0)
        return false;
    uint8_t a[16];
    int fam = sws_addr_parse(peer, a);
    for (int i = 0; fam && i < p->ntrusted; i++)
        if (p->trusted[i].family == fam && sws_prefix_eq(a, p->trusted[i].addr, p->trusted[i].bits))
            return true;
    return false;
}
