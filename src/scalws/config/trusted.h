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
/* n addresses and prefixes as "10.0.0.0/8, ::1/128", or "off" for none. */
void sws_cidr_list_format(const sws_cidr *e, int n, char *out, size_t len);

/* Whether the numeric address text (as sws_peer_name writes it) is in the
 * list. An IPv4-mapped IPv6 address matches the IPv4 entries. */
bool sws_trusted_has(const sws_proxy_config *p, const char *peer);

/* One "10.0.0.0/8", "::1" or "2001:db8::/32" of n bytes (a bare address is
 * a /32 or /128). 0 or -EINVAL. */
int sws_cidr_parse(const char *s, size_t n, sws_cidr *out);
/* Whether the first bits of a and b agree. */
bool sws_prefix_eq(const uint8_t *a, const uint8_t *b, unsigned bits);
/* Numeric address text into out (4 or 16 bytes): AF_INET (an IPv4-mapped
 * IPv6 address too), AF_INET6, or 0 when it is not an address. */
int sws_addr_parse(const char *text, uint8_t out[16]);

#endif
