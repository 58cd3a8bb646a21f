/* Shared pieces of the UDP contract tests (udp_util.c). */
#ifndef TL_TEST_UDP_UTIL_H
#define TL_TEST_UDP_UTIL_H

#include "turnloop.h"

#include <stdint.h>

/* A loop on the backend under test with flags and `buffers` loop buffers. */
tl_loop *udp_loop(unsigned flags, uint32_t buffers);
tl_sockaddr addr_of(int family, const char *ip, uint16_t port);
socklen_t addr_len(const tl_sockaddr *a);
/* A udp handle on ip:0 (its address in *bound), or 0 when the family has no
 * loopback here. */
tl_handle udp_on(tl_loop *loop, int family, const char *ip, tl_sockaddr *bound);
/* A plain blocking socket bound to ip:0 with a 5 s receive timeout. */
int peer_on(int family, const char *ip, tl_sockaddr *bound);
uint64_t ms_now(void);

#endif
