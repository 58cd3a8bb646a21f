/* The [redirect] section (issue 31, item 4): the redirect scenario's status
 * and its target template, `to`, with nginx's variables: $scheme, $host,
 * $request_uri, $uri, $args and $is_args ("$$" is a '$'). The template is
 * checked and cut into parts when it is read, so that an answer only copies
 * them; what it can never make safely is refused then: a target whose host
 * part holds anything but literal text and $host (a query in the authority
 * is an open redirect), a relative target that could begin with "//" (a
 * network-path reference is another host), characters no URI holds. Part of
 * sws_config and of each route's settings (a value), read-only once loaded. */
#ifndef SWS_REDIRECT_CONFIG_H
#define SWS_REDIRECT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SWS_REDIRECT_TO_MAX 512
#define SWS_REDIRECT_PARTS_MAX 32
/* The longest Location a template may make: its text, 255 bytes per $host
 * and the request-target's bytes the parsers keep (1024) per path variable. */
#define SWS_REDIRECT_LOCATION_MAX 4096

enum sws_redirect_part {
    SWS_RV_TEXT = 0,
    SWS_RV_SCHEME,      /* http or https */
    SWS_RV_HOST,        /* the request's host, lowercased, without its port */
    SWS_RV_REQUEST_URI, /* the request-target's path and query, as sent */
    SWS_RV_URI,         /* its path (without the route's prefix under strip_prefix) */
    SWS_RV_ARGS,        /* its query, without '?' */
    SWS_RV_IS_ARGS,     /* "?" when there is a query, else nothing */
};

typedef struct sws_redirect_config {
    char to[SWS_REDIRECT_TO_MAX]; /* the template as written ("" unset) */
    uint32_t code;                /* 301, 302, 303, 307 or 308 */
    bool any_host;                /* a $host target is allowed without the route's host names */
    bool host_from_request;       /* $host is in the target's host part */
    uint8_t nparts;
    uint16_t max_len; /* the longest Location it can make */
    struct {
        uint8_t kind;      /* enum sws_redirect_part */
        uint16_t off, len; /* SWS_RV_TEXT: its bytes in to */
    } part[SWS_REDIRECT_PARTS_MAX];
} sws_redirect_config;

/* The [redirect] keys: 0, or -EINVAL with why. */
int sws_redirect_parse_to(sws_redirect_config *r, const char *v, char *why, size_t len);
int sws_redirect_parse_code(sws_redirect_config *r, const char *v, char *why, size_t len);

#endif
