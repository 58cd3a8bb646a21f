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

/* ---- the fields ------------------------------------------------------------ */

enum { XFF, XFP, XFH, FWD, NOT_OURS };

/* By length first: every field of every request passes here, and almost
 * none is one of ours (one compare at most, no strlen). */
static int which(const sws_head *m, uint32_t i) {
    const char *n = m->f[i].name;
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

bool sws_forwarded_owns(const sws_proxy_config *p, const sws_head *m, uint32_t i) {
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

static void put_value(out *o, const sws_head *m, uint32_t i) {
    put(o, m->f[i].value, m->f[i].value_len);
}

/* The values of every field of kind k, joined by ", "; false when none. */
static bool put_joined(out *o, const sws_head *m, int k) {
    bool any = false;
    for (uint32_t i = 0; i < m->nf; i++) {
        if (which(m, i) != k || m->f[i].value_len == 0)
            continue;
        if (any)
            puts_(o, ", ");
        put_value(o, m, i);
        any = true;
    }
    return any;
}

static int first_of(const sws_head *m, int k) {
    for (uint32_t i = 0; i < m->nf; i++)
        if (which(m, i) == k)
            return (int)i;
    return -1;
}

static int host_field(const sws_head *m) {
    for (uint32_t i = 0; i < m->nf; i++)
        if (m->f[i].name_len == 4 && strncasecmp(m->f[i].name, "host", 4) == 0)
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

int sws_forwarded_build(const sws_proxy_config *p, const sws_head *m, const char *peer, bool tls,
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
        put(&o, m->f[i].name, m->f[i].name_len);
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
            put_param(&o, m->f[host].value, m->f[host].value_len);
        }
        puts_(&o, "\r\n");
    }
    if (o.over)
        return -ENOSPC;
    *len = o.len;
    return 0;
}
