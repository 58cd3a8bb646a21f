/* [server]'s listeners as a list: the checks across its lines (an address
 * bound twice, a name given twice, tls listeners that disagree on HTTP/2,
 * which ALPN cannot tell apart) and how routes and messages name them. */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>

bool sws_listener_h2(const sws_config *c, int i) {
    int8_t h = c->listeners[i].http2;
    return h < 0 ? c->http2 : h != 0;
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

/* The same address and port (port 0 is the kernel's choice: never the same). */
static bool same_addr(const sws_addr *a, const sws_addr *b) {
    if (a->ss.ss_family != b->ss.ss_family)
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

int sws_listeners_settle(sws_config *c, char *err, size_t errlen) {
    int first_tls = -1;
    for (int i = 0; i < c->nlisteners; i++) {
        const sws_listener_cfg *l = &c->listeners[i];
        for (int k = 0; k < i; k++) {
            const sws_listener_cfg *o = &c->listeners[k];
            if (same_addr(&l->addr, &o->addr)) {
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
