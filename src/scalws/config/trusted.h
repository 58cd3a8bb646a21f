/* Address lists: [proxy] trusted_proxies (trusted.c). */
#ifndef SWS_TRUSTED_H
#define SWS_TRUSTED_H

#include <stdbool.h>
#include <stddef.h>

#include "proxy_config.h"

/* "CIDR[, CIDR...]" ("10.0.0.0/8, ::1, 2001:db8::/32"; a bare address is a
 * /32 or /128; "" or "off" none) into p->trusted. 0 or -EINVAL with a reason. */
int sws_trusted_parse(sws_proxy_config *p, const char *value, char *err, size_t errlen);
void sws_trusted_format(const sws_proxy_config *p, char *out, size_t len);

/* Whether the numeric address text (as sws_peer_name writes it) is in the
 * list. An IPv4-mapped IPv6 address matches the IPv4 entries. */
bool sws_trusted_has(const sws_proxy_config *p, const char *peer);

#endif
