/* [redirect] to and code (redirect_config.h): the template cut into text and
 * variables, and checked for the shape of a Location that cannot send a
 * client to a host the configuration did not name (or $host). */
#include "redirect_config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static const struct {
    const char *name;
    uint8_t kind;
    uint16_t max; /* bytes it may make */
} vars[] = {
    {"scheme", SWS_RV_SCHEME, 5},
    {"host", SWS_RV_HOST, 255},
    {"request_uri", SWS_RV_REQUEST_URI, 1024},
    {"uri", SWS_RV_URI, 1024},
    {"args", SWS_RV_ARGS, 1024},
    {"is_args", SWS_RV_IS_ARGS, 1},
};

static bool hex(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* RFC 3986 2: unreserved, reserved, and '%' (checked for its two digits). */
static bool uri_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("-._~:/?#[]@!$&'()*+,;=%", c));
}

static int add_part(sws_redirect_config *r, uint8_t kind, size_t off, size_t len, char *why,
                    size_t wlen) {
    if (kind == SWS_RV_TEXT && len == 0)
        return 0;
    if (r->nparts == SWS_REDIRECT_PARTS_MAX) {
        snprintf(why, wlen, "more than %d parts (text and variables)", SWS_REDIRECT_PARTS_MAX);
        return -EINVAL;
    }
    r->part[r->nparts].kind = kind;
    r->part[r->nparts].off = (uint16_t)off;
    r->part[r->nparts].len = (uint16_t)len;
    r->nparts++;
    return 0;
}

/* Text and variables, each character of the text one a URI may hold. */
static int cut(sws_redirect_config *r, const char *v, char *why, size_t wlen) {
    size_t n = strlen(v), text = 0;
    for (size_t i = 0; i < n;) {
        if (v[i] != '$') {
            if (!uri_char(v[i]) || (v[i] == '%' && !(hex(v[i + 1]) && hex(v[i + 2])))) {
                snprintf(why, wlen, "'%c' at %zu cannot be in a URI (RFC 3986; %%XX for others)",
                         v[i], i + 1);
                return -EINVAL;
            }
            i++;
            continue;
        }
        if (v[i + 1] == '$') { /* "$$": the text keeps one '$' */
            if (add_part(r, SWS_RV_TEXT, text, i + 1 - text, why, wlen) < 0)
                return -EINVAL;
            i += 2;
            text = i;
            continue;
        }
        bool brace = v[i + 1] == '{';
        size_t s = i + 1 + brace, e = s;
        while ((v[e] >= 'a' && v[e] <= 'z') || (v[e] >= 'A' && v[e] <= 'Z') ||
               (v[e] >= '0' && v[e] <= '9') || v[e] == '_')
            e++;
        if (e == s || (brace && v[e] != '}')) {
            snprintf(why, wlen, "a '$' at %zu names no variable (write $$ for a '$')", i + 1);
            return -EINVAL;
        }
        int k = -1;
        for (size_t j = 0; j < sizeof(vars) / sizeof(vars[0]); j++)
            if (strlen(vars[j].name) == e - s && strncmp(vars[j].name, v + s, e - s) == 0)
                k = (int)j;
        if (k < 0) {
            snprintf(why, wlen,
                     "unknown variable $%.*s (want $scheme, $host, $request_uri, $uri, $args or "
                     "$is_args)",
                     (int)(e - s), v + s);
            return -EINVAL;
        }
        if (add_part(r, SWS_RV_TEXT, text, i - text, why, wlen) < 0 ||
            add_part(r, vars[k].kind, 0, 0, why, wlen) < 0)
            return -EINVAL;
        i = e + brace;
        text = i;
    }
    return add_part(r, SWS_RV_TEXT, text, n - text, why, wlen);
}

/* The target's shape: scheme "://" authority, where the authority is text
 * and $host only and ends at a '/', '?', '#' or a path variable; or a path
 * that begins with '/' and a character that is not a second '/'. */
static int shape(sws_redirect_config *r, char *why, size_t wlen) {
    const char *t = r->to;
    uint32_t p = 0;
    size_t at = 0; /* in the text part p */
    if (r->part[0].kind == SWS_RV_TEXT && t[0] == '/') {
        if (r->part[0].len < 2) {
            snprintf(why, wlen,
                     "a relative target needs text after its first '/' (\"/$uri\" makes "
                     "\"//host/...\", another host)");
            return -EINVAL;
        }
        if (t[1] == '/') {
            snprintf(why, wlen, "\"//\" names another host: write https://host/...");
            return -EINVAL;
        }
        return 0;
    }
    if (r->part[0].kind == SWS_RV_TEXT && strncasecmp(t, "https://", 8) == 0)
        at = 8;
    else if (r->part[0].kind == SWS_RV_TEXT && strncasecmp(t, "http://", 7) == 0)
        at = 7;
    else if (r->part[0].kind == SWS_RV_SCHEME && r->nparts > 1 && r->part[1].kind == SWS_RV_TEXT &&
             strncmp(t + r->part[1].off, "://", 3) == 0)
        p = 1, at = 3;
    else {
        snprintf(why, wlen, "want an absolute target (https://host/...) or a path (/...)");
        return -EINVAL;
    }
    bool host = false;
    for (; p < r->nparts; p++, at = 0) {
        uint8_t k = r->part[p].kind;
        if (k == SWS_RV_HOST) {
            host = r->host_from_request = true;
            continue;
        }
        if (k == SWS_RV_REQUEST_URI || k == SWS_RV_URI)
            break; /* they begin with '/' */
        if (k != SWS_RV_TEXT) {
            snprintf(why, wlen,
                     "$%s in the host part: only text and $host may be there (a client's "
                     "query would choose the host)",
                     k == SWS_RV_SCHEME ? "scheme"
                     : k == SWS_RV_ARGS ? "args"
                                        : "is_args");
            return -EINVAL;
        }
        const char *s = t + r->part[p].off;
        for (; at < r->part[p].len; at++) {
            if (s[at] == '/' || s[at] == '?' || s[at] == '#')
                goto end;
            if (s[at] == '@') {
                snprintf(why, wlen, "no user information ('@') in the host part");
                return -EINVAL;
            }
            host = true;
        }
    }
end:
    if (!host) {
        snprintf(why, wlen, "no host after \"://\"");
        return -EINVAL;
    }
    return 0;
}

int sws_redirect_parse_to(sws_redirect_config *r, const char *v, char *why, size_t len) {
    sws_redirect_config n = *r;
    n.nparts = 0;
    n.host_from_request = false;
    n.max_len = 0;
    if (strlen(v) >= sizeof(n.to)) {
        snprintf(why, len, "longer than %d bytes", SWS_REDIRECT_TO_MAX - 1);
        return -EINVAL;
    }
    strcpy(n.to, v);
    if (*v && (cut(&n, v, why, len) < 0 || shape(&n, why, len) < 0))
        return -EINVAL;
    size_t max = 0;
    for (uint32_t i = 0; i < n.nparts; i++) {
        uint8_t k = n.part[i].kind;
        for (size_t j = 0; k != SWS_RV_TEXT && j < sizeof(vars) / sizeof(vars[0]); j++)
            if (vars[j].kind == k)
                max += vars[j].max;
        max += k == SWS_RV_TEXT ? n.part[i].len : 0;
    }
    if (max > SWS_REDIRECT_LOCATION_MAX) {
        snprintf(why, len, "can make a Location of %zu bytes (at most %d)", max,
                 SWS_REDIRECT_LOCATION_MAX);
        return -EINVAL;
    }
    n.max_len = (uint16_t)max;
    *r = n;
    return 0;
}

int sws_redirect_parse_code(sws_redirect_config *r, const char *v, char *why, size_t len) {
    static const char *const codes[] = {"301", "302", "303", "307", "308"};
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        if (strcmp(v, codes[i]) == 0) {
            r->code = (uint32_t)(300 + (v[2] - '0'));
            return 0;
        }
    }
    snprintf(why, len, "bad code '%s' (want 301, 302, 303, 307 or 308)", v);
    return -EINVAL;
}
