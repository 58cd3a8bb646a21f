/* The values of the access keys (access_config.h): a rate as nginx writes
 * it, address lists, and the allow/deny decision. Pure functions: no I/O,
 * no state. */
#include "access_config.h"
#include "trusted.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sws_rate_parse(sws_access_config *a, const char *v, char *why, size_t len) {
    if (strcmp(v, "off") == 0 || !*v) {
        a->rate_us = 0;
        a->rate_n = 0;
        a->rate_per = 1;
        return 0;
    }
    char *e;
    unsigned long n = strtoul(v, &e, 10);
    uint32_t per = strcmp(e, "r/s") == 0 ? 1 : strcmp(e, "r/m") == 0 ? 60 : 0;
    if (e == v || v[0] == '-' || per == 0 || n == 0 || n > 1000000) {
        snprintf(why, len, "bad rate '%s' (want N r/s or N r/m, 1..1000000, or off)", v);
        return -EINVAL;
    }
    a->rate_n = (uint32_t)n;
    a->rate_per = per;
    a->rate_us = (uint64_t)per * 1000000u / n;
    if (a->rate_us == 0)
        a->rate_us = 1;
    return 0;
}

void sws_rate_format(const sws_access_config *a, char *out, size_t len) {
    if (!a->rate_us)
        snprintf(out, len, "off");
    else
        snprintf(out, len, "%ur/%s", a->rate_n, a->rate_per == 60 ? "m" : "s");
}

int sws_acl_parse(sws_acl *l, const char *v, char *why, size_t len) {
    sws_acl t = {0};
    if (strcmp(v, "off") == 0)
        v = "";
    for (const char *s = v; *s;) {
        s += strspn(s, ", \t");
        if (!*s)
            break;
        size_t n = strcspn(s, ", \t");
        bool all = n == 3 && strncmp(s, "all", 3) == 0;
        if (t.n + (all ? 2 : 1) > SWS_ACL_MAX) {
            snprintf(why, len, "more than %d entries", SWS_ACL_MAX);
            return -EINVAL;
        }
        if (all) {
            t.e[t.n++] = (sws_cidr){.family = AF_INET, .bits = 0};
            t.e[t.n++] = (sws_cidr){.family = AF_INET6, .bits = 0};
        } else if (sws_cidr_parse(s, n, &t.e[t.n++]) < 0) {
            snprintf(why, len, "bad address '%.*s' (want 10.0.0.0/8, ::1, 2001:db8::/32 or all)",
                     (int)n, s);
            return -EINVAL;
        }
        s += n;
    }
    *l = t;
    return 0;
}

void sws_acl_format(const sws_acl *l, char *out, size_t len) {
    sws_cidr_list_format(l->e, l->n, out, len);
}

int sws_acl_longest(const sws_acl *l, int family, const uint8_t *addr) {
    int best = -1;
    for (int i = 0; i < l->n; i++) {
        const sws_cidr *c = &l->e[i];
        if (c->family == family && (int)c->bits > best && sws_prefix_eq(addr, c->addr, c->bits))
            best = c->bits;
    }
    return best;
}

bool sws_acl_allows(const sws_acl *allow, const sws_acl *deny, int family, const uint8_t *addr) {
    int a = sws_acl_longest(allow, family, addr), d = sws_acl_longest(deny, family, addr);
    if (a < 0 && d < 0)
        return allow->n == 0;
    return a > d;
}

bool sws_access_on(const sws_access_config *a) {
    return a->rate_us || a->conn || a->allow.n || a->deny.n || a->auth_file[0];
}
