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

#include "proxy_config.h"
#include "sws_msg.h"

/* "CIDR[, CIDR...]" ("10.0.0.0/8, ::1, 2001:db8::/32"; a bare address is a
 * /32 or /128; "" or "off" none) into p->trusted. 0 or -EINVAL with a reason. */
int sws_trusted_parse(sws_proxy_config *p, const char *value, char *err, size_t errlen);
void sws_trusted_format(const sws_proxy_config *p, char *out, size_t len);

/* Whether the numeric address text (as sws_peer_name writes it) is in the
 * list. An IPv4-mapped IPv6 address matches the IPv4 entries. */
bool sws_trusted_has(const sws_proxy_config *p, const char *peer);

/* Whether request field i is one the builder writes (or drops): the head
 * rewrite leaves those fields to sws_forwarded_build. */
bool sws_forwarded_owns(const sws_proxy_config *p, const sws_msg *m, uint32_t i);

/* Appends the forwarding fields of request m, from the client at peer
 * (numeric text, "-" when unknown) on a TLS listener or not, to out[*len..cap),
 * each ending in CRLF. 0, or -ENOSPC with *len unchanged. */
int sws_forwarded_build(const sws_proxy_config *p, const sws_msg *m, const char *peer, bool tls,
                        char *out, size_t cap, size_t *len);

#endif
