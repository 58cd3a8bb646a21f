/* The custom keys of the scenarios' sections, which a [route NAME] takes
 * too: [respond] body, [static] index and try_files, [compress]
 * compress_types, [redirect] and [proxy]. The parsing that other code also
 * needs lives beside it (proxy_config.c, trusted.c, redirect_config.c); here
 * is what the key table calls. */
#include "keys.h"
#include "trusted.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The body may carry \n, \r, \t and \\ escapes (ini values are one line); any
 * other escaped character stands for itself ("\;" for a ';'). */
int sws_key_parse_body(sws_config *c, const char *v, char *why, size_t len) {
    size_t n = 0;
    for (const char *s = v; *s; s++) {
        char ch = *s;
        if (ch == '\\' && s[1]) {
            s++;
            ch = *s == 'n' ? '\n' : *s == 'r' ? '\r' : *s == 't' ? '\t' : *s;
        }
        if (n >= SWS_BODY_MAX) {
            snprintf(why, len, "body longer than %d bytes", SWS_BODY_MAX);
            return -EINVAL;
        }
        c->body[n++] = ch;
    }
    c->body_len = n;
    return 0;
}
void sws_key_format_body(const sws_config *c, char *out, size_t len) {
    size_t o = 0;
    for (size_t i = 0; i < c->body_len && o + 3 < len; i++) {
        char ch = c->body[i];
        const char *esc = ch == '\n'   ? "\\n"
                          : ch == '\r' ? "\\r"
                          : ch == '\t' ? "\\t"
                          : ch == '\\' ? "\\\\"
                                       : NULL;
        if (esc) {
            memcpy(out + o, esc, 2);
            o += 2;
        } else {
            out[o++] = ch;
        }
    }
    out[o] = '\0';
}

/* A file name: no '/', not "." or "..". */
int sws_key_parse_index(sws_config *c, const char *v, char *why, size_t len) {
    if (strlen(v) >= sizeof(c->stat.index) || strchr(v, '/') || strcmp(v, ".") == 0 ||
        strcmp(v, "..") == 0 || strpbrk(v, "\r\n")) {
        snprintf(why, len, "bad index '%s' (want a file name, or empty for none)", v);
        return -EINVAL;
    }
    strcpy(c->stat.index, v);
    return 0;
}
void sws_key_format_index(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->stat.index);
}

/* Whether the text [s, s + n) has a ".." segment. */
static bool dotdot(const char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        size_t e = i;
        while (e < n && s[e] != '/')
            e++;
        if (e - i == 2 && s[i] == '.' && s[i + 1] == '.')
            return true;
        i = e + 1;
    }
    return false;
}

/* try_files: paths below the root, each '/'-first or "$uri"-first with at
 * most one $uri and no ".." (nothing may climb out of the root), and at the
 * end "=CODE" if wanted; parsed once here, so a request reads offsets. */
int sws_key_parse_try_files(sws_config *c, const char *v, char *why, size_t len) {
    sws_static_config *st = &c->stat;
    if (strlen(v) >= sizeof(st->try_files) || strpbrk(v, "\r\n")) {
        snprintf(why, len, "longer than %zu bytes", sizeof(st->try_files) - 1);
        return -EINVAL;
    }
    sws_static_config t = {0};
    strcpy(t.try_files, strcmp(v, "off") == 0 ? "" : v);
    const char *s = t.try_files;
    for (size_t i = 0; s[i];) {
        if (s[i] == ' ' || s[i] == '\t') {
            i++;
            continue;
        }
        size_t e = i;
        while (s[e] && s[e] != ' ' && s[e] != '\t')
            e++;
        size_t n = e - i;
        if (t.ntry && t.try[t.ntry - 1].code) {
            snprintf(why, len, "'%.*s' after '=%u': a status ends the list", (int)n, s + i,
                     t.try[t.ntry - 1].code);
            return -EINVAL;
        }
        if (t.ntry == SWS_TRY_MAX) {
            snprintf(why, len, "more than %d entries", SWS_TRY_MAX);
            return -EINVAL;
        }
        sws_try *y = &t.try[t.ntry++];
        *y = (sws_try){.off = (uint8_t)i, .len = (uint8_t)n};
        if (s[i] == '=') {
            uint64_t code;
            char num[8];
            snprintf(num, sizeof(num), "%.*s", (int)(n - 1), s + i + 1);
            if (n > 4 || sws_parse_uint(num, 400, 599, &code) < 0) {
                snprintf(why, len, "bad status '%.*s' (want =400..=599)", (int)n, s + i);
                return -EINVAL;
            }
            y->code = (uint16_t)code;
        } else {
            const char *u = strstr(s + i, "$uri");
            if (u && u >= s + e)
                u = NULL;
            size_t at = u ? (size_t)(u - s) : e; /* the literal before $uri */
            const char *rest = u ? u + 4 : s + e;
            bool ok = (s[i] == '/' || u == s + i) && !memchr(rest, '$', (size_t)(s + e - rest)) &&
                      !memchr(s + i, '$', at - i) && !dotdot(s + i, at - i) &&
                      !dotdot(rest, (size_t)(s + e - rest));
            for (size_t k = i; ok && k < e; k++)
                ok = (unsigned char)s[k] >= 0x20 && s[k] != 0x7f;
            if (!ok) {
                snprintf(why, len,
                         "bad entry '%.*s' (want /path or $uri with text around it, one $uri, no "
                         "'..', or =CODE last)",
                         (int)n, s + i);
                return -EINVAL;
            }
            y->uri = u ? (uint8_t)(u - (s + i) + 1) : 0;
        }
        i = e;
    }
    memcpy(st->try_files, t.try_files, sizeof(st->try_files));
    st->ntry = t.ntry;
    memcpy(st->try, t.try, sizeof(st->try));
    return 0;
}
void sws_key_format_try_files(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->stat.try_files[0] ? c->stat.try_files : "off");
}

/* compress_types: media types ("text/html") or every subtype of one
 * ("text/" then "*"), separated by spaces or commas; kept lowercased, one space
 * apart, for core/compress.c's match. */
int sws_key_parse_compress_types(sws_config *c, const char *v, char *why, size_t len) {
    char out[SWS_COMPRESS_TYPES_MAX];
    size_t n = 0;
    const char *p = v;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        if (!*p)
            break;
        const char *s = p;
        while (*p && *p != ' ' && *p != '\t' && *p != ',')
            p++;
        size_t tl = (size_t)(p - s);
        const char *slash = memchr(s, '/', tl);
        bool ok = slash && slash > s && slash < s + tl - 1 &&
                  !memchr(slash + 1, '/', (size_t)(s + tl - slash - 1));
        for (size_t i = 0; ok && i < tl; i++)
            ok = s[i] > ' ' && s[i] < 127 && !strchr("\"(),:;<=>?@[\\]{}", s[i]);
        if (!ok) {
            snprintf(why, len, "bad media type '%.*s' (want type/subtype or type/*)", (int)tl, s);
            return -EINVAL;
        }
        if (n + tl + 1 >= sizeof(out)) {
            snprintf(why, len, "too long (%zu bytes of types at most)", sizeof(out) - 1);
            return -EINVAL;
        }
        if (n)
            out[n++] = ' ';
        for (size_t i = 0; i < tl; i++)
            out[n++] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
    }
    out[n] = '\0';
    memcpy(c->comp.types, out, n + 1);
    return 0;
}
void sws_key_format_compress_types(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->comp.types);
}

/* [proxy] (proxy_config.c, trusted.c). */
int sws_key_parse_upstream(sws_config *c, const char *v, char *why, size_t len) {
    return sws_proxy_parse_upstreams(&c->proxy, v, why, len);
}
void sws_key_format_upstream(const sws_config *c, char *out, size_t len) {
    sws_proxy_format_upstreams(&c->proxy, out, len);
}
int sws_key_parse_host(sws_config *c, const char *v, char *why, size_t len) {
    return sws_proxy_parse_host(&c->proxy, v, why, len);
}
void sws_key_format_host(const sws_config *c, char *out, size_t len) {
    sws_proxy_format_host(&c->proxy, out, len);
}
int sws_key_parse_trusted(sws_config *c, const char *v, char *why, size_t len) {
    return sws_trusted_parse(&c->proxy, v, why, len);
}
void sws_key_format_trusted(const sws_config *c, char *out, size_t len) {
    sws_trusted_format(&c->proxy, out, len);
}
int sws_key_parse_upgrade(sws_config *c, const char *v, char *why, size_t len) {
    return sws_proxy_parse_upgrade(&c->proxy, v, why, len);
}
void sws_key_format_upgrade(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->proxy.upgrade[0] ? c->proxy.upgrade : "off");
}

/* An origin-form path ("/healthz"), or off. */
int sws_key_parse_health_check(sws_config *c, const char *v, char *why, size_t len) {
    if (!*v || strcmp(v, "off") == 0) {
        c->proxy.health_check[0] = '\0';
        return 0;
    }
    bool ok = v[0] == '/' && strlen(v) < sizeof(c->proxy.health_check);
    for (const char *s = v; ok && *s; s++)
        ok = (unsigned char)*s > ' ' && *s != 0x7f;
    if (!ok) {
        snprintf(why, len, "bad path '%s' (want /path or off)", v);
        return -EINVAL;
    }
    strcpy(c->proxy.health_check, v);
    return 0;
}
void sws_key_format_health_check(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->proxy.health_check[0] ? c->proxy.health_check : "off");
}

/* [redirect] (redirect_config.c). */
int sws_key_parse_redirect_to(sws_config *c, const char *v, char *why, size_t len) {
    return sws_redirect_parse_to(&c->redirect, v, why, len);
}
void sws_key_format_redirect_to(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->redirect.to);
}
int sws_key_parse_redirect_code(sws_config *c, const char *v, char *why, size_t len) {
    return sws_redirect_parse_code(&c->redirect, v, why, len);
}
void sws_key_format_redirect_code(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%u", (unsigned)c->redirect.code);
}
