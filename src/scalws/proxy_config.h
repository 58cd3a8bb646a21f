/* The [proxy] section: upstreams (round-robin), the pool (per loop or
 * shared) and its size, and the upstream timeouts. Part of sws_config, read-only once loaded. */
#ifndef SWS_PROXY_CONFIG_H
#define SWS_PROXY_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define SWS_UPSTREAMS_MAX 16

typedef struct sws_upstream_addr {
    char text[128];
    struct sockaddr_storage ss;
    socklen_t len;
} sws_upstream_addr;

enum sws_pool_mode { SWS_POOL_PER_LOOP = 0, SWS_POOL_SHARED };

typedef struct sws_proxy_config {
    int nupstreams;
    uint8_t pool_mode; /* enum sws_pool_mode */
    sws_upstream_addr up[SWS_UPSTREAMS_MAX];
    uint32_t pool_per_loop; /* idle keep-alive connections kept per loop per upstream (shared:
                               that many per loop in the one pool) */
    uint32_t connect_timeout_ms;
    uint32_t read_timeout_ms;
    uint32_t idle_timeout_ms;
} sws_proxy_config;

/* "host:port[, host:port...]" into p->up. 0, or -EINVAL with a reason in err. */
int sws_proxy_parse_upstreams(sws_proxy_config *p, const char *value, char *err, size_t errlen);

#endif
