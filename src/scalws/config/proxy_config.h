/* The [proxy] section: upstreams (names resolved to every address, with a
 * weight each), how one is picked, the Host and forwarding fields sent, upstream
 * health, the pool (per loop or shared) and its size, and the upstream
 * timeouts. Part of sws_config, read-only once loaded. */
#ifndef SWS_PROXY_CONFIG_H
#define SWS_PROXY_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define SWS_UPSTREAMS_MAX 16
#define SWS_TRUSTED_MAX 16
#define SWS_WEIGHT_MAX 100

/* One upstream address. A name with several addresses gives several of
 * these, each with the same text (the name as written, sent as Host with
 * host = upstream) and weight. */
typedef struct sws_upstream_addr {
    char text[128]; /* "host:port" as written */
    char addr[64];  /* the resolved address, numeric ("127.0.0.1:9001", "[::1]:9001") */
    struct sockaddr_storage ss;
    socklen_t len;
    uint32_t weight; /* 1..SWS_WEIGHT_MAX */
} sws_upstream_addr;

/* A trusted_proxies entry: an address and a prefix length. */
typedef struct sws_cidr {
    uint8_t family; /* AF_INET or AF_INET6 */
    uint8_t bits;
    uint8_t addr[16];
} sws_cidr;

enum sws_pool_mode { SWS_POOL_PER_LOOP = 0, SWS_POOL_SHARED };
enum sws_balance { SWS_BALANCE_ROUND_ROBIN = 0, SWS_BALANCE_LEAST_CONN, SWS_BALANCE_P2C };
enum sws_host_mode { SWS_HOST_CLIENT = 0, SWS_HOST_UPSTREAM, SWS_HOST_FIXED };
enum sws_forwarded { SWS_FWD_X_FORWARDED = 0, SWS_FWD_RFC7239, SWS_FWD_OFF };

typedef struct sws_proxy_config {
    int nupstreams;
    uint8_t pool_mode; /* enum sws_pool_mode */
    uint8_t balance;   /* enum sws_balance */
    uint8_t host_mode; /* enum sws_host_mode */
    uint8_t forwarded; /* enum sws_forwarded */
    sws_upstream_addr up[SWS_UPSTREAMS_MAX];
    char host[128]; /* host_mode FIXED: the value sent */
    int ntrusted;
    sws_cidr trusted[SWS_TRUSTED_MAX];
    uint32_t pool_per_loop; /* idle keep-alive connections kept per loop per upstream (shared:
                               that many per loop in the one pool) */
    uint32_t connect_timeout_ms;
    uint32_t read_timeout_ms;
    uint32_t idle_timeout_ms;
    /* Upgrade tunnels (scenario/proxy/tunnel.c): the protocols a client may
     * upgrade to through the proxy, lowercase, comma separated ("" off); and
     * how long a tunnel may carry no byte either way before it is closed. */
    char upgrade[128];
    uint32_t tunnel_idle_timeout_ms;
    /* Passive health (nginx): max_fails failures within fail_timeout skip the
     * upstream for fail_timeout; 0 disables. */
    uint32_t max_fails;
    uint32_t fail_timeout_ms;
    /* Active health (HAProxy): GET health_check every health_interval; rise
     * passes in a row bring it up, fall failures in a row take it down. */
    char health_check[256]; /* "" off */
    uint32_t health_interval_ms;
    uint32_t health_rise;
    uint32_t health_fall;
    /* Upstream TLS (upstream_tls.h): the route's client context is built from
     * tls_ca and tls_verify when the configuration is checked (route.h). */
    bool tls;
    bool tls_verify;    /* on by default: the certificate must chain to tls_ca and name tls_name */
    char tls_ca[256];   /* PEM roots; "" the system's */
    char tls_name[256]; /* SNI and the name verified; "" each upstream's host as written */
} sws_proxy_config;

/* "host:port [weight=N][, host:port [weight=N]...]" into p->up, every address
 * of a name in turn. 0, or -EINVAL with a reason in err. */
int sws_proxy_parse_upstreams(sws_proxy_config *p, const char *value, char *err, size_t errlen);

/* The list as the file writes it: each name once, with its weight when not 1. */
void sws_proxy_format_upstreams(const sws_proxy_config *p, char *out, size_t len);

/* "client", "upstream" or a fixed value (one field value: no controls). */
int sws_proxy_parse_host(sws_proxy_config *p, const char *value, char *err, size_t errlen);
void sws_proxy_format_host(const sws_proxy_config *p, char *out, size_t len);

/* "websocket[, token...]" or off into p->upgrade. 0, or -EINVAL with a reason. */
int sws_proxy_parse_upgrade(sws_proxy_config *p, const char *value, char *err, size_t errlen);
/* Whether every protocol a request's Upgrade value lists (its name, before any
 * "/version") is one p->upgrade allows; false for an empty list or off. */
bool sws_proxy_upgrade_allowed(const sws_proxy_config *p, const char *v, size_t n);

/* Whether the resolved addresses differ (a reload cannot change them). */
bool sws_proxy_upstreams_differ(const sws_proxy_config *a, const sws_proxy_config *b);

#endif
