/* The parsers and formatters of the key table's custom keys (config_keys.c),
 * defined by theme in keys_*.c. Each key has both: parse takes the value as
 * written (0, or -EINVAL with why filled), format writes it back as
 * --print-config shows it ("" when unset). Called by the loader alone. */
#ifndef SWS_CONFIG_KEYS_H
#define SWS_CONFIG_KEYS_H

#include "config.h"

#define SWS_KEY_FUNCS(name)                                                                        \
    int sws_key_parse_##name(sws_config *c, const char *v, char *why, size_t len);                 \
    void sws_key_format_##name(const sws_config *c, char *out, size_t len)

/* keys_scenario.c: [respond], [static], [compress], [redirect] and [proxy],
 * which a [route NAME] takes too. */
SWS_KEY_FUNCS(body);
SWS_KEY_FUNCS(index);
SWS_KEY_FUNCS(try_files);
SWS_KEY_FUNCS(compress_types);
SWS_KEY_FUNCS(redirect_to);
SWS_KEY_FUNCS(redirect_code);
SWS_KEY_FUNCS(upstream);
SWS_KEY_FUNCS(host);
SWS_KEY_FUNCS(trusted);
SWS_KEY_FUNCS(upgrade);
SWS_KEY_FUNCS(health_check);

/* keys_policy.c: who may ask and what answers carry, in [server] and
 * [route NAME] alike ([admin] allow too). */
SWS_KEY_FUNCS(rate);
SWS_KEY_FUNCS(limit_status);
SWS_KEY_FUNCS(allow);
SWS_KEY_FUNCS(deny);
SWS_KEY_FUNCS(admin_allow);
SWS_KEY_FUNCS(realm);
SWS_KEY_FUNCS(error_page);
SWS_KEY_FUNCS(add_header);
SWS_KEY_FUNCS(add_header_always);

/* keys_logs.c: the access log and pid files, log_format; a route's own. */
SWS_KEY_FUNCS(access_log);
SWS_KEY_FUNCS(pid_file);
SWS_KEY_FUNCS(log_format);
SWS_KEY_FUNCS(route_access_log);
SWS_KEY_FUNCS(route_log_format);

/* keys_route.c: [route NAME]'s host, path and path_prefix. */
SWS_KEY_FUNCS(route_host);
SWS_KEY_FUNCS(route_path);
SWS_KEY_FUNCS(route_prefix);

/* keys_tls.c: [tls] and [acme]. */
SWS_KEY_FUNCS(tls_cert);
SWS_KEY_FUNCS(tls_key);
SWS_KEY_FUNCS(tls_ocsp);
SWS_KEY_FUNCS(tls_protocols);
SWS_KEY_FUNCS(tls_ciphers);
SWS_KEY_FUNCS(tls_ciphersuites);
SWS_KEY_FUNCS(tls_groups);
SWS_KEY_FUNCS(tls_tickets);
SWS_KEY_FUNCS(tls_rotate);
SWS_KEY_FUNCS(tls_cache);
SWS_KEY_FUNCS(tls_ktls);
SWS_KEY_FUNCS(tls_unknown);
SWS_KEY_FUNCS(acme_directory);
SWS_KEY_FUNCS(acme_email);
SWS_KEY_FUNCS(acme_domains);
SWS_KEY_FUNCS(acme_state_dir);
SWS_KEY_FUNCS(acme_renew_before);
SWS_KEY_FUNCS(acme_challenge);
SWS_KEY_FUNCS(acme_ca_file);
SWS_KEY_FUNCS(acme_http_listen);
SWS_KEY_FUNCS(acme_retry_min);
SWS_KEY_FUNCS(acme_retry_max);

#endif
