/* Forwarding fields: which incoming ones to trust, and the ones sent
 * upstream. X-Forwarded-For is a list (the client's address appended);
 * -Proto and -Host name the first hop, so a trusted proxy's value is kept and
 * anyone else's is replaced. Forwarded (RFC 7239) is one list of elements;
 * an IPv6 node and any value that is not a token are quoted (sections 4, 6). */
#include "forwarded.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- trusted_proxies ----------------------------------------------------- */

static int parse_cidr(const char *s, size_t n, sws_cidr *out) {
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
        if (parse_cidr(s, len, &p->trusted[n]) < 0) {
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

void sws_trusted_format(const sws_proxy_config *p, char *out, size_t len) {
    size_t o = 0;
    out[0] = '\0';
    for (int i = 0; i < p->ntrusted && o < len; i++) {
        char a[INET6_ADDRSTRLEN];
        const sws_cidr *c = &p->trusted[i];
        inet_ntop(c->family, c->addr, a, sizeof a);
        o += (size_t)snprintf(out + o, len - o, "%s%s/%u", i ? ", " : "", a, (unsigned)c->bits);
    }
    if (p->ntrusted == 0)
        snprintf(out, len, "off");
}

static bool prefix_eq(const uint8_t *a, const uint8_t *b, unsigned bits) {
    unsigned whole = bits / 8, rest = bits % 8;
    if (memcmp(a, b, whole) != 0)
        return false;
    if (rest == 0)
        return true;
    uint8_t mask = (uint8_t)(0xffu << (8 - rest));
    return (a[whole] & mask) == (b[whole] & mask);
}

/* The peer's binary address: family and 4 or 16 bytes; a mapped IPv4 is IPv4. */
static int peer_addr(const char *peer, uint8_t out[16]) {
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
    int fam = peer_addr(peer, a);
    for (int i = 0; fam && i < p->ntrusted; i++)
        if (p->trusted[i].family == fam && prefix_eq(a, p->trusted[i].addr, p->trusted[i].bits))
            return true;
    return false;
}

/* ---- the fields ------------------------------------------------------------ */

enum { XFF, XFP, XFH, FWD, NOT_OURS };

/* By length first: every field of every request passes here, and almost
 * none is one of ours (one compare at most, no strlen). */
static int which(const sws_msg *m, uint32_t i) {
    const char *n = m->buf + m->f[i].name_off;
    switch (m->f[i].name_len) {
    case 15:
        return strncasecmp(n, "x-forwarded-for", 15) == 0 ? XFF : NOT_OURS;
    case 17:
        return strncasecmp(n, "x-forwarded-proto", 17) == 0 ? XFP : NOT_OURS;
    case 16:
        return strncasecmp(n, "x-forwarded-host", 16) == 0 ? XFH : NOT_OURS;
    case 9:
        return strncasecmp(n, "forwarded", 9) == 0 ? FWD : NOT_OURS;
    default:
        return NOT_OURS;
    }
}

bool sws_forwarded_owns(const sws_proxy_config *p, const sws_msg *m, uint32_t i) {
    return p->forwarded != SWS_FWD_OFF && which(m, i) != NOT_OURS;
}

typedef struct out {
    char *p;
    size_t len, cap;
    bool over;
} out;

static void put(out *o, const char *d, size_t n) {
    if (o->over || o->len + n > o->cap) {
        o->over = true;
        return;
    }
    memcpy(o->p + o->len, d, n);
    o->len += n;
}

static void puts_(out *o, const char *s) {
    put(o, s, strlen(s));
}

static void put_value(out *o, const sws_msg *m, uint32_t i) {
    put(o, m->buf + m->f[i].val_off, m->f[i].val_len);
}

/* The values of every field of kind k, joined by ", "; false when none. */
static bool put_joined(out *o, const sws_msg *m, int k) {
    bool any = false;
    for (uint32_t i = 0; i < m->nf; i++) {
        if (which(m, i) != k || m->f[i].val_len == 0)
            continue;
        if (any)
            puts_(o, ", ");
        put_value(o, m, i);
        any = true;
    }
    return any;
}

static int first_of(const sws_msg *m, int k) {
    for (uint32_t i = 0; i < m->nf; i++)
        if (which(m, i) == k)
            return (int)i;
    return -1;
}

static int host_field(const sws_msg *m) {
    for (uint32_t i = 0; i < m->nf; i++)
        if (m->f[i].name_len == 4 && strncasecmp(m->buf + m->f[i].name_off, "host", 4) == 0)
            return (int)i;
    return -1;
}

/* The client's address as a list entry: a mapped IPv4 written as IPv4;
 * quoted and in brackets for Forwarded's IPv6 (RFC 7239 section 6). The
 * peer text is inet_ntop's (sws_peer_name), already canonical: it is only
 * checked for its characters, never converted back and forth per request. */
static void put_node(out *o, const char *peer, bool rfc7239) {
    size_t n = strlen(peer);
    bool v6 = false, ok = n > 0 && n < INET6_ADDRSTRLEN;
    for (size_t i = 0; ok && i < n; i++) {
        char c = peer[i];
        v6 = v6 || c == ':';
        ok = (c >= '0' && c <= '9') || c == '.' || c == ':' || (c >= 'a' && c <= 'f') ||
             (c >= 'A' && c <= 'F');
    }
    if (!ok) {
        puts_(o, "unknown");
        return;
    }
    if (v6 && strncasecmp(peer, "::ffff:", 7) == 0 && strchr(peer + 7, '.')) {
        puts_(o, peer + 7);
    } else if (v6 && rfc7239) {
        puts_(o, "\"[");
        put(o, peer, n);
        puts_(o, "]\"");
    } else {
        put(o, peer, n);
    }
}

static bool tchar(unsigned char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* A Forwarded value: a token as it is, anything else a quoted-string. */
static void put_param(out *o, const char *v, size_t n) {
    bool token = n > 0;
    for (size_t i = 0; i < n && token; i++)
        token = tchar((unsigned char)v[i]);
    if (token) {
        put(o, v, n);
        return;
    }
    put(o, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        if (v[i] == '"' || v[i] == '\\')
            put(o, "\\", 1);
        put(o, v + i, 1);
    }
    put(o, "\"", 1);
}

int sws_forwarded_build(const sws_proxy_config *p, const sws_msg *m, const char *peer, bool tls,
                        char *buf, size_t cap, size_t *len) {
    if (p->forwarded == SWS_FWD_OFF)
        return 0;
    out o = {buf, *len, cap, false};
    bool trusted = sws_trusted_has(p, peer);
    const char *proto = tls ? "https" : "http";
    int host = host_field(m);
    /* From a trusted proxy, the other scheme's fields pass as they came. */
    for (uint32_t i = 0; trusted && i < m->nf; i++) {
        int k = which(m, i);
        bool mine = p->forwarded == SWS_FWD_RFC7239 ? k == FWD : k == XFF || k == XFP || k == XFH;
        if (k == NOT_OURS || mine)
            continue;
        put(&o, m->buf + m->f[i].name_off, m->f[i].name_len);
        puts_(&o, ": ");
        put_value(&o, m, i);
        puts_(&o, "\r\n");
    }
    if (p->forwarded == SWS_FWD_X_FORWARDED) {
        puts_(&o, "X-Forwarded-For: ");
        if (trusted && put_joined(&o, m, XFF))
            puts_(&o, ", ");
        put_node(&o, peer, false);
        puts_(&o, "\r\nX-Forwarded-Proto: ");
        int i = trusted ? first_of(m, XFP) : -1;
        if (i >= 0)
            put_value(&o, m, (uint32_t)i);
        else
            puts_(&o, proto);
        puts_(&o, "\r\n");
        i = trusted ? first_of(m, XFH) : -1;
        if (i < 0)
            i = host;
        if (i >= 0) {
            puts_(&o, "X-Forwarded-Host: ");
            put_value(&o, m, (uint32_t)i);
            puts_(&o, "\r\n");
        }
    } else {
        puts_(&o, "Forwarded: ");
        if (trusted && put_joined(&o, m, FWD))
            puts_(&o, ", ");
        puts_(&o, "for=");
        put_node(&o, peer, true);
        puts_(&o, ";proto=");
        puts_(&o, proto);
        if (host >= 0) {
            puts_(&o, ";host=");
            put_param(&o, m->buf + m->f[host].val_off, m->f[host].val_len);
        }
        puts_(&o, "\r\n");
    }
    if (o.over)
        return -ENOSPC;
    *len = o.len;
    return 0;
}
