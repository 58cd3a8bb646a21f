/* The forwarding fields the proxy sends upstream: X-Forwarded-For, -Proto and
 * -Host, or RFC 7239 Forwarded, or none ([proxy] forwarded). A client's own
 * forwarding fields are kept (and appended to) only when its address is in
 * trusted_proxies; from anyone else they are dropped and written anew, so a
 * client cannot pass for another address. Pure functions: no I/O, no state. */
#ifndef SWS_FORWARDED_H
#define SWS_FORWARDED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exchange.h"
#include "proxy_config.h"
#include "sws_msg.h"
#include "trusted.h"

/* Whether request field i is one the builder writes (or drops): the head
 * rewrite leaves those fields to sws_forwarded_build. */
bool sws_forwarded_owns(const sws_proxy_config *p, const sws_head *m, uint32_t i);

/* Appends the forwarding fields of request m, from the client at peer
 * (numeric text, "-" when unknown) on a TLS listener or not, to out[*len..cap),
 * each ending in CRLF. 0, or -ENOSPC with *len unchanged. */
int sws_forwarded_build(const sws_proxy_config *p, const sws_head *m, const char *peer, bool tls,
                        char *out, size_t cap, size_t *len);

#endif
