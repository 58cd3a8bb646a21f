/* The [proxy] keys that are not plain kinds of the key table (config_keys.c):
 * the upstream list, resolved here (at start and on every reload, since a
 * reload builds a new config) to every address a name has, the Host mode,
 * and the protocols a request may Upgrade to. */
#include "proxy_config.h"
#include "config.h" /* SWS_ADDR_MAX */

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* "host:port" or "[v6]:port" into host and port; the port is required. */
static int split_host_port(const char *t, char *host, size_t hcap, const char **port) {
    const char *colon;
    size_t hl;
    if (t[0] == '[') {
        const char *end = strchr(t, ']');
        if (!end || end[1] != ':')
            return -EINVAL;
        hl = (size_t)(end - t - 1);
        t++;
        colon = end + 1;
    } else {
        colon = strrchr(t, ':');
        if (!colon)
            return -EINVAL;
        hl = (size_t)(colon - t);
    }
    if (hl == 0 || hl >= hcap)
        return -EINVAL;
    memcpy(host, t, hl);
    host[hl] = '\0';
    char *e;
    long p = strtol(colon + 1, &e, 10);
    if (!colon[1] || *e || p < 1 || p > 65535)
        return -EINVAL;
    *port = colon + 1;
    return 0;
}

static void numeric_text(const struct sockaddr *sa, char *out, size_t cap) {
    char h[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, h, sizeof h);
        port = ntohs(in->sin_port);
        snprintf(out, cap, "%s:%u", h, port);
    } else {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, h, sizeof h);
        port = ntohs(in6->sin6_port);
        snprintf(out, cap, "[%s]:%u", h, port);
    }
}

static bool have_addr(const sws_proxy_config *p, int n, const struct sockaddr *sa, socklen_t len) {
    for (int i = 0; i < n; i++)
        if (p->up[i].len == len && memcmp(&p->up[i].ss, sa, len) == 0)
            return true;
    return false;
}

/* One entry: "host:port" and options ("weight=N"), resolved into p->up[*n...]. */
static int add_entry(sws_proxy_config *p, int *n, const char *s, size_t len, char *err,
                     size_t errlen) {
    char ent[256];
    if (len >= sizeof ent) {
        snprintf(err, errlen, "upstream entry too long '%.*s'", (int)len, s);
        return -EINVAL;
    }
    memcpy(ent, s, len);
    ent[len] = '\0';
    char *save = NULL, *name = strtok_r(ent, " \t", &save);
    uint32_t weight = 1;
    for (char *o = strtok_r(NULL, " \t", &save); o; o = strtok_r(NULL, " \t", &save)) {
        char *e;
        long w = strncmp(o, "weight=", 7) == 0 ? strtol(o + 7, &e, 10) : -1;
        if (w < 1 || w > SWS_WEIGHT_MAX || *e) {
            snprintf(err, errlen, "bad upstream option '%s' (want weight=1..%d)", o,
                     SWS_WEIGHT_MAX);
            return -EINVAL;
        }
        weight = (uint32_t)w;
    }
    char host[SWS_ADDR_MAX];
    const char *port;
    if (!name || strlen(name) >= sizeof(p->up[0].text) ||
        split_host_port(name, host, sizeof host, &port) < 0) {
        snprintf(err, errlen, "bad upstream '%s' (want host:port [weight=N])", name ? name : "");
        return -EINVAL;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV},
                    *res = NULL;
    int g = getaddrinfo(host, port, &hints, &res);
    if (g != 0 || !res) {
        snprintf(err, errlen, "cannot resolve upstream '%s': %s", name,
                 g ? gai_strerror(g) : "no address");
        return -EINVAL;
    }
    for (const struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        if ((ai->ai_family != AF_INET && ai->ai_family != AF_INET6) ||
            ai->ai_addrlen > sizeof(struct sockaddr_storage) ||
            have_addr(p, *n, ai->ai_addr, ai->ai_addrlen))
            continue;
        if (*n == SWS_UPSTREAMS_MAX) {
            freeaddrinfo(res);
            snprintf(err, errlen, "more than %d upstream addresses (with '%s')", SWS_UPSTREAMS_MAX,
                     name);
            return -EINVAL;
        }
        sws_upstream_addr *a = &p->up[(*n)++];
        memset(a, 0, sizeof *a);
        snprintf(a->text, sizeof a->text, "%s", name);
        memcpy(&a->ss, ai->ai_addr, ai->ai_addrlen);
        a->len = ai->ai_addrlen;
        a->weight = weight;
        numeric_text(ai->ai_addr, a->addr, sizeof a->addr);
    }
    freeaddrinfo(res);
    return 0;
}

int sws_proxy_parse_upstreams(sws_proxy_config *p, const char *v, char *err, size_t errlen) {
    int n = 0;
    const char *s = v;
    while (*s) {
        while (*s == ' ' || *s == ',' || *s == '\t')
            s++;
        if (!*s)
            break;
        /* An entry runs to the next comma; without commas (the old form,
         * "a:1 b:2"), each word that is not an option is an entry. */
        const char *e = s;
        if (strchr(s, ',')) {
            e = strchr(s, ',');
        } else {
            e = strpbrk(s, " \t");
            while (e) {
                const char *o = e + strspn(e, " \t");
                if (strncmp(o, "weight=", 7) != 0)
                    break;
                e = strpbrk(o, " \t");
            }
            if (!e)
                e = s + strlen(s);
        }
        size_t len = (size_t)(e - s);
        while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
            len--;
        if (add_entry(p, &n, s, len, err, errlen) < 0)
            return -EINVAL;
        s = e;
    }
    if (n == 0) {
        snprintf(err, errlen, "no upstream given (want host:port[, host:port...])");
        return -EINVAL;
    }
    p->nupstreams = n;
    return 0;
}

void sws_proxy_format_upstreams(const sws_proxy_config *p, char *out, size_t len) {
    size_t o = 0;
    out[0] = '\0';
    for (int i = 0; i < p->nupstreams && o < len; i++) {
        if (i > 0 && strcmp(p->up[i].text, p->up[i - 1].text) == 0)
            continue; /* another address of the same name */
        o += (size_t)snprintf(out + o, len - o, "%s%s", o ? ", " : "", p->up[i].text);
        if (o < len && p->up[i].weight != 1)
            o += (size_t)snprintf(out + o, len - o, " weight=%u", (unsigned)p->up[i].weight);
    }
}

int sws_proxy_parse_host(sws_proxy_config *p, const char *v, char *err, size_t errlen) {
    if (strcmp(v, "client") == 0) {
        p->host_mode = SWS_HOST_CLIENT;
        return 0;
    }
    if (strcmp(v, "upstream") == 0) {
        p->host_mode = SWS_HOST_UPSTREAM;
        return 0;
    }
    bool ok = *v && strlen(v) < sizeof p->host;
    for (const char *c = v; ok && *c; c++)
        ok = (unsigned char)*c > ' ' && *c != 0x7f;
    if (!ok) {
        snprintf(err, errlen, "bad host '%s' (want client, upstream or a host name)", v);
        return -EINVAL;
    }
    p->host_mode = SWS_HOST_FIXED;
    snprintf(p->host, sizeof p->host, "%s", v);
    return 0;
}

void sws_proxy_format_host(const sws_proxy_config *p, char *out, size_t len) {
    snprintf(out, len, "%s",
             p->host_mode == SWS_HOST_CLIENT     ? "client"
             : p->host_mode == SWS_HOST_UPSTREAM ? "upstream"
                                                 : p->host);
}

/* A token's characters (RFC 9110 5.6.2), which a protocol name is made of. */
static bool tchar(int ch) {
    return isalnum(ch) || (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

int sws_proxy_parse_upgrade(sws_proxy_config *p, const char *v, char *err, size_t errlen) {
    if (strcmp(v, "off") == 0 || !*v) {
        p->upgrade[0] = '\0';
        return 0;
    }
    char out[sizeof p->upgrade];
    size_t o = 0;
    const char *s = v;
    while (*s) {
        while (*s == ' ' || *s == '\t' || *s == ',')
            s++;
        const char *t = s;
        while (tchar((unsigned char)*s))
            s++;
        size_t n = (size_t)(s - t);
        while (*s == ' ' || *s == '\t')
            s++;
        if ((n == 0 && *s) || (*s && *s != ',') || o + n + 2 > sizeof out) {
            snprintf(err, errlen, "bad protocol list '%s' (want tokens such as websocket, or off)",
                     v);
            return -EINVAL;
        }
        if (n == 0)
            break;
        if (o)
            out[o++] = ',';
        for (size_t i = 0; i < n; i++)
            out[o++] = (char)tolower((unsigned char)t[i]);
    }
    out[o] = '\0';
    memcpy(p->upgrade, out, o + 1);
    return 0;
}

/* Whether name[0..n) is one of p->upgrade's tokens. */
static bool upgrade_listed(const sws_proxy_config *p, const char *name, size_t n) {
    for (const char *s = p->upgrade; *s;) {
        const char *e = strchr(s, ',');
        size_t k = e ? (size_t)(e - s) : strlen(s);
        if (k == n && strncasecmp(s, name, n) == 0)
            return true;
        s += k + (e ? 1 : 0);
    }
    return false;
}

bool sws_proxy_upgrade_allowed(const sws_proxy_config *p, const char *v, size_t n) {
    const char *end = v + n;
    bool any = false;
    while (v < end) {
        while (v < end && (*v == ' ' || *v == '\t' || *v == ','))
            v++;
        if (v == end)
            break;
        const char *t = v;
        while (v < end && tchar((unsigned char)*v))
            v++;
        size_t k = (size_t)(v - t);
        if (v < end && *v == '/') { /* protocol-version: the name decides */
            v++;
            while (v < end && tchar((unsigned char)*v))
                v++;
        }
        while (v < end && (*v == ' ' || *v == '\t'))
            v++;
        if (k == 0 || (v < end && *v != ',') || !upgrade_listed(p, t, k))
            return false;
        any = true;
    }
    return any;
}

bool sws_proxy_upstreams_differ(const sws_proxy_config *a, const sws_proxy_config *b) {
    if (a->nupstreams != b->nupstreams)
        return true;
    for (int i = 0; i < a->nupstreams; i++)
        if (a->up[i].len != b->up[i].len || memcmp(&a->up[i].ss, &b->up[i].ss, a->up[i].len) != 0)
            return true;
    return false;
}
