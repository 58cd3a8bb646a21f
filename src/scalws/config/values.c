/* Plain values as the ini file writes them: a listener's or a peer's
 * host:port (resolved, numeric port), durations ("10s", "500ms", a bare
 * number is seconds), sizes ("16k", "1m") and bounded counts. Every key kind
 * of the table and the custom parsers read their numbers through these. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int sws_parse_endpoint(const char *text, bool peer, struct sockaddr_storage *ss, socklen_t *len) {
    char host[SWS_ADDR_MAX];
    const char *port;
    if (strlen(text) >= SWS_ADDR_MAX || !*text)
        return -EINVAL;
    if (text[0] == '[') {
        const char *end = strchr(text, ']');
        if (!end || end[1] != ':')
            return -EINVAL;
        size_t hl = (size_t)(end - text - 1);
        memcpy(host, text + 1, hl);
        host[hl] = '\0';
        port = end + 2;
    } else {
        const char *colon = strrchr(text, ':');
        if (colon) {
            size_t hl = (size_t)(colon - text);
            memcpy(host, text, hl);
            host[hl] = '\0';
            port = colon + 1;
        } else {
            host[0] = '\0';
            port = text;
        }
    }
    /* A peer needs a host and a real port; a listener may omit the host
     * (every address) and ask for port 0 (any port). */
    char *e;
    long p = strtol(port, &e, 10);
    if (!*port || *e || p < (peer ? 1 : 0) || p > 65535 || (peer && !host[0]))
        return -EINVAL;
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = (peer ? 0 : AI_PASSIVE) | AI_NUMERICSERV},
                    *res = NULL;
    if (getaddrinfo(host[0] ? host : NULL, port, &hints, &res) != 0 || !res)
        return -EINVAL;
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *len = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

int sws_parse_addr(const char *text, sws_addr *out) {
    int err = sws_parse_endpoint(text, false, &out->ss, &out->len);
    if (err == 0)
        snprintf(out->text, sizeof(out->text), "%s", text);
    return err;
}

/* Unsigned integer with an optional multiplier suffix. */
static int parse_scaled(const char *v, uint64_t *out, const char *const *suffix,
                        const uint64_t *mult, int nsuffix) {
    char *e;
    if (!isdigit((unsigned char)*v))
        return -EINVAL;
    errno = 0;
    unsigned long long n = strtoull(v, &e, 10);
    if (errno)
        return -EINVAL;
    while (*e == ' ')
        e++;
    uint64_t m = 1;
    if (*e) {
        int i;
        for (i = 0; i < nsuffix; i++)
            if (strcasecmp(e, suffix[i]) == 0)
                break;
        if (i == nsuffix)
            return -EINVAL;
        m = mult[i];
    }
    if (m && n > UINT64_MAX / m)
        return -EINVAL;
    *out = n * m;
    return 0;
}

int sws_parse_ms(const char *v, uint64_t *out) {
    static const char *const s[] = {"ms", "s", "m"};
    static const uint64_t m[] = {1, 1000, 60000};
    uint64_t n;
    if (parse_scaled(v, &n, s, m, 3) < 0)
        return -EINVAL;
    if (!strpbrk(v, "msMS")) /* a bare number is seconds, as in nginx */
        n *= 1000;
    *out = n;
    return 0;
}

int sws_parse_size(const char *v, uint64_t *out) {
    static const char *const s[] = {"k", "m", "g", "kb", "mb", "gb", "kib", "mib", "gib"};
    static const uint64_t m[] = {1ull << 10, 1ull << 20, 1ull << 30, 1ull << 10, 1ull << 20,
                                 1ull << 30, 1ull << 10, 1ull << 20, 1ull << 30};
    return parse_scaled(v, out, s, m, 9);
}

int sws_parse_uint(const char *v, uint64_t lo, uint64_t hi, uint64_t *out) {
    char *e;
    if (!isdigit((unsigned char)*v))
        return -EINVAL;
    errno = 0;
    unsigned long long n = strtoull(v, &e, 10);
    if (errno || *e || n < lo || n > hi)
        return -EINVAL;
    *out = n;
    return 0;
}
