/* Per-route access control and per-client limits (doc/limits.md): the keys
 * of [server] (the default route) and of each [route NAME] that say who may
 * ask (allow, deny, auth_basic_file) and how often (limit_rate, limit_burst,
 * limit_conn). Part of sws_scenario_cfg, read-only once loaded. */
#ifndef SWS_ACCESS_CONFIG_H
#define SWS_ACCESS_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy_config.h"

#define SWS_ACL_MAX 64
#define SWS_REALM_MAX 128

/* An allow or deny list: prefixes of either family. */
typedef struct sws_acl {
    int n;
    sws_cidr e[SWS_ACL_MAX];
} sws_acl;

struct sws_htpasswd;

typedef struct sws_access_config {
    /* limit_rate: one request per emission interval (GCRA), rate_us apart;
     * 0 off. rate_n and rate_per say it as written (10r/s: 10, 1). */
    uint64_t rate_us;
    uint32_t rate_n;
    uint32_t rate_per; /* seconds: 1 (r/s) or 60 (r/m) */
    uint32_t burst;    /* requests beyond the rate a client may send at once */
    uint32_t conn;     /* open connections of one peer address; 0 off */
    uint32_t status;   /* 429 or 503 */
    sws_acl allow, deny;
    char auth_file[256]; /* htpasswd-style; "" none */
    char realm[SWS_REALM_MAX];
    /* auth_file as loaded when the route table was built (route_config.c);
     * owned by the table. NULL in every other copy. */
    struct sws_htpasswd *users;
} sws_access_config;

/* "10r/s", "600r/m" or "off". 0 or -EINVAL with why. */
int sws_rate_parse(sws_access_config *a, const char *v, char *why, size_t len);
void sws_rate_format(const sws_access_config *a, char *out, size_t len);

/* "CIDR[, CIDR...]", "all" (every address of both families), or "" / "off". */
int sws_acl_parse(sws_acl *l, const char *v, char *why, size_t len);
void sws_acl_format(const sws_acl *l, char *out, size_t len);

/* The longest prefix of l that holds the address (family, 4 or 16 bytes),
 * or -1 when none does. */
int sws_acl_longest(const sws_acl *l, int family, const uint8_t *addr);

/* Whether the address may ask: the most specific entry of allow and deny
 * that holds it wins (a tie is deny's); when none holds it, it may unless
 * there is an allow list. */
bool sws_acl_allows(const sws_acl *allow, const sws_acl *deny, int family, const uint8_t *addr);

/* Whether any key of a is set: the route needs the gate (core/gate.c). */
bool sws_access_on(const sws_access_config *a);

#endif
