/* The custom keys of who may ask and what the answers carry, which
 * [server] and [route NAME] share: limits, allow/deny, the Basic realm,
 * error_page and add_header; [admin] allow. The lists and policies
 * themselves are access_config.c's, error_page.c's and header_policy.c's. */
#include "keys.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The access keys ([server] and [route NAME], access_config.h). */
int sws_key_parse_rate(sws_config *c, const char *v, char *why, size_t len) {
    return sws_rate_parse(&c->access, v, why, len);
}
void sws_key_format_rate(const sws_config *c, char *out, size_t len) {
    sws_rate_format(&c->access, out, len);
}
int sws_key_parse_limit_status(sws_config *c, const char *v, char *why, size_t len) {
    if (strcmp(v, "429") != 0 && strcmp(v, "503") != 0) {
        snprintf(why, len, "bad status '%s' (want 429 or 503)", v);
        return -EINVAL;
    }
    c->access.status = v[0] == '5' ? 503 : 429;
    return 0;
}
void sws_key_format_limit_status(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%u", c->access.status);
}
int sws_key_parse_allow(sws_config *c, const char *v, char *why, size_t len) {
    return sws_acl_parse(&c->access.allow, v, why, len);
}
void sws_key_format_allow(const sws_config *c, char *out, size_t len) {
    sws_acl_format(&c->access.allow, out, len);
}
int sws_key_parse_deny(sws_config *c, const char *v, char *why, size_t len) {
    return sws_acl_parse(&c->access.deny, v, why, len);
}
void sws_key_format_deny(const sws_config *c, char *out, size_t len) {
    sws_acl_format(&c->access.deny, out, len);
}
int sws_key_parse_admin_allow(sws_config *c, const char *v, char *why, size_t len) {
    return sws_acl_parse(&c->admin_allow, v, why, len);
}
void sws_key_format_admin_allow(const sws_config *c, char *out, size_t len) {
    sws_acl_format(&c->admin_allow, out, len);
}
/* A realm goes inside a quoted-string (RFC 7235 2.2): printable, no quote
 * or backslash to escape. */
int sws_key_parse_realm(sws_config *c, const char *v, char *why, size_t len) {
    size_t n = strlen(v);
    bool ok = n > 0 && n < sizeof(c->access.realm);
    for (size_t i = 0; ok && i < n; i++)
        ok = (unsigned char)v[i] >= 0x20 && v[i] != 0x7f && v[i] != '"' && v[i] != '\\';
    if (!ok) {
        snprintf(why, len, "bad realm (1..%zu printable characters, no '\"' or '\\')",
                 sizeof(c->access.realm) - 1);
        return -EINVAL;
    }
    memcpy(c->access.realm, v, n + 1);
    return 0;
}
void sws_key_format_realm(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->access.realm);
}

/* [server] error_page and [route NAME] error_page: the syntax now, the files
 * when the configuration is complete (sws_error_pages_load). */
int sws_key_parse_error_page(sws_config *c, const char *v, char *why, size_t len) {
    if (!*v || strcmp(v, "off") == 0) {
        c->error_page[0] = '\0';
        return 0;
    }
    if (sws_error_page_check(v, why, len) < 0)
        return -EINVAL;
    snprintf(c->error_page, sizeof(c->error_page), "%s", v);
    return 0;
}
void sws_key_format_error_page(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->error_page);
}

/* add_header, add_header_always ([server] and [route NAME]): one field a
 * line, lines adding up (header_policy.h). */
int sws_key_parse_add_header(sws_config *c, const char *v, char *why, size_t len) {
    return sws_header_keys_add(&c->hdr, v, false, why, len);
}
int sws_key_parse_add_header_always(sws_config *c, const char *v, char *why, size_t len) {
    return sws_header_keys_add(&c->hdr, v, true, why, len);
}
void sws_key_format_add_header(const sws_config *c, char *out, size_t len) {
    sws_header_keys_format(&c->hdr, false, out, len);
}
void sws_key_format_add_header_always(const sws_config *c, char *out, size_t len) {
    sws_header_keys_format(&c->hdr, true, out, len);
}
