/* [server]'s listeners as a list: the checks across its lines (an address
 * bound twice, a name given twice, tls listeners that disagree on HTTP/2,
 * which ALPN cannot tell apart, a quic listener's needs) and how routes and
 * messages name them. */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>

bool sws_listener_h2(const sws_config *c, int i) {
    if (c->listeners[i].quic)
        return false; /* HTTP/3 is its own protocol, not a TCP connection's */
    int8_t h = c->listeners[i].http2;
    return h < 0 ? c->http2 : h != 0;
}

int sws_listener_quic(const sws_config *c) {
    for (int i = 0; i < c->nlisteners; i++)
        if (c->listeners[i].quic)
            return i;
    return -1;
}

const char *sws_listener_label(const sws_config *c, int i) {
    const sws_listener_cfg *l = &c->listeners[i];
    return l->name[0] ? l->name : l->addr.text;
}

int sws_listener_find(const sws_config *c, const char *text) {
    int found = -1;
    for (int i = 0; i < c->nlisteners; i++) {
        const sws_listener_cfg *l = &c->listeners[i];
        if (strcmp(l->name, text) == 0)
            return i; /* names are unique */
        if (strcmp(l->addr.text, text) == 0)
            found = found == -1 ? i : -2;
    }
    return found;
}

/* The same protocol (TCP or UDP), address and port (port 0 is the kernel's
 * choice: never the same). */
static bool same_addr(const sws_listener_cfg *la, const sws_listener_cfg *lb) {
    const sws_addr *a = &la->addr, *b = &lb->addr;
    if (la->quic != lb->quic || a->ss.ss_family != b->ss.ss_family)
        return false;
    if (a->ss.ss_family == AF_INET) {
        const struct sockaddr_in *x = (const void *)&a->ss, *y = (const void *)&b->ss;
        return x->sin_port && x->sin_port == y->sin_port &&
               x->sin_addr.s_addr == y->sin_addr.s_addr;
    }
    const struct sockaddr_in6 *x = (const void *)&a->ss, *y = (const void *)&b->ss;
    return x->sin6_port && x->sin6_port == y->sin6_port &&
           memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr)) == 0;
}

/* A quic listener is TLS 1.3 through GnuTLS on [tls]'s files and the [tls
 * NAME] sections' (chosen by SNI as over TCP); one for now
 * (each loop has one endpoint and one UDP socket), beside a TCP listener
 * (which advertises it with Alt-Svc, and which the server's start needs). */
static int quic_check(const sws_config *c, const sws_listener_cfg *l, int i, char *err,
                      size_t errlen) {
    if (l->tls || l->http2 >= 0) {
        snprintf(err, errlen, "%s: quic is TLS 1.3 and HTTP/3 already (no tls or http2= with it)",
                 l->origin);
        return -EINVAL;
    }
    /* [tls NAME] sections are read by now; [tls]'s pair joins them later. */
    if ((!c->tls.cert[0] || !c->tls.key[0]) && !(c->tls_certs && c->tls_certs->n)) {
        snprintf(err, errlen,
                 "%s: a quic listener needs [tls] cert and key (or [tls NAME] sections)",
                 l->origin);
        return -EINVAL;
    }
    if (sws_listener_quic(c) != i) {
        snprintf(err, errlen, "%s: one quic listener at most (%s is one)", l->origin,
                 c->listeners[sws_listener_quic(c)].origin);
        return -EINVAL;
    }
    bool tcp = false;
    for (int k = 0; k < c->nlisteners; k++)
        tcp = tcp || !c->listeners[k].quic;
    if (!tcp) {
        snprintf(err, errlen, "%s: a quic listener needs a TCP listener beside it", l->origin);
        return -EINVAL;
    }
    return 0;
}

int sws_listeners_settle(sws_config *c, char *err, size_t errlen) {
    int first_tls = -1;
    for (int i = 0; i < c->nlisteners; i++) {
        const sws_listener_cfg *l = &c->listeners[i];
        for (int k = 0; k < i; k++) {
            const sws_listener_cfg *o = &c->listeners[k];
            if (same_addr(l, o)) {
                snprintf(err, errlen, "%s: %s is listened on already (%s)", l->origin, l->addr.text,
                         o->origin);
                return -EINVAL;
            }
            if (l->name[0] && strcmp(l->name, o->name) == 0) {
                snprintf(err, errlen, "%s: name=%s is another listener's already (%s)", l->origin,
                         l->name, o->origin);
                return -EINVAL;
            }
        }
        if (l->quic) {
            int rc = quic_check(c, l, i, err, errlen);
            if (rc < 0)
                return rc;
            continue;
        }
        if (!l->tls)
            continue;
        if (first_tls < 0) {
            first_tls = i;
        } else if (sws_listener_h2(c, i) != sws_listener_h2(c, first_tls)) {
            snprintf(err, errlen,
                     "%s: http2 differs from the tls listener of %s: ALPN offers h2 on every "
                     "tls listener or on none ([tls] is one for all)",
                     l->origin, c->listeners[first_tls].origin);
            return -EINVAL;
        }
    }
    c->listen_tls = first_tls >= 0;
    snprintf(c->listen_origin, sizeof(c->listen_origin), "%s",
             c->listeners[first_tls >= 0 ? first_tls : 0].origin);
    return 0;
}
