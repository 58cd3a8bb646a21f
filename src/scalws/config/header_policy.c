/* Header policy lines into what the protocols copy (header_policy.h): each
 * line checked as it is read, the whole list built once per route in its
 * HTTP/1.1 text and its HTTP/2 fields, one allocation that the route table
 * frees. */
#include "header_policy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* RFC 9110 5.6.2: tchar. */
static bool tchar(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Fields a policy may not add, and why: they frame the message or belong to
 * one connection (RFC 9110 7.6.1, RFC 9113 8.2.2), or the server or the
 * scenario writes them for each answer. */
static const char *refused(const char *name, size_t n) {
    static const char *const framing[] = {"connection", "keep-alive",    "proxy-connection",
                                          "te",         "trailer",       "transfer-encoding",
                                          "upgrade",    "content-length"};
    static const char *const own[] = {
        "date", "server", "content-type", "content-range", "content-encoding", "location", "host"};
    for (size_t i = 0; i < sizeof(framing) / sizeof(framing[0]); i++)
        if (strlen(framing[i]) == n && strncasecmp(name, framing[i], n) == 0)
            return "frames the message or belongs to one connection";
    for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
        if (strlen(own[i]) == n && strncasecmp(name, own[i], n) == 0)
            return "is written by the server or the scenario for each answer";
    return NULL;
}

int sws_header_keys_add(sws_header_keys *k, const char *v, bool always, char *why, size_t len) {
    k->set = true;
    while (*v == ' ' || *v == '\t')
        v++;
    if (!*v)
        return 0; /* the section's own list, empty: nothing inherited */
    const char *colon = strchr(v, ':');
    size_t nl = colon ? (size_t)(colon - v) : 0;
    for (size_t i = 0; i < nl; i++)
        if (!tchar((unsigned char)v[i]))
            nl = 0;
    if (!nl) {
        snprintf(why, len, "bad field '%s' (want Name: value, the name a token)", v);
        return -EINVAL;
    }
    const char *r = refused(v, nl);
    if (r) {
        snprintf(why, len, "%.*s %s: it cannot be added", (int)nl, v, r);
        return -EINVAL;
    }
    /* The value without the whitespace around it; "\;" is ';' (an inline
     * comment for inih otherwise, as --print-config writes it). */
    const char *s = colon + 1;
    while (*s == ' ' || *s == '\t')
        s++;
    char value[SWS_HEADERS_TEXT_MAX];
    size_t vl = 0;
    for (; *s && vl < sizeof(value); s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\\' && s[1] == ';')
            c = (unsigned char)*++s;
        /* RFC 9110 5.5: VCHAR, obs-text, SP and HTAB; never CR, LF or NUL. */
        if ((c < 0x20 && c != '\t') || c == 0x7f) {
            snprintf(why, len, "%.*s: the value holds a control character", (int)nl, v);
            return -EINVAL;
        }
        value[vl++] = (char)c;
    }
    while (vl && (value[vl - 1] == ' ' || value[vl - 1] == '\t'))
        vl--;
    if (!vl) {
        snprintf(why, len, "%.*s has no value (want Name: value)", (int)nl, v);
        return -EINVAL;
    }
    size_t need = nl + 2 + vl + 2;
    if (k->n >= SWS_HEADERS_MAX || k->len + need > sizeof(k->text)) {
        snprintf(why, len, "more than %d fields or %d bytes in one section", SWS_HEADERS_MAX,
                 SWS_HEADERS_TEXT_MAX);
        return -EINVAL;
    }
    char *o = k->text + k->len;
    memcpy(o, v, nl);
    memcpy(o + nl, ": ", 2);
    memcpy(o + nl + 2, value, vl);
    memcpy(o + nl + 2 + vl, "\r\n", 2);
    k->len = (uint16_t)(k->len + need);
    if (always)
        k->always |= 1u << k->n;
    k->n++;
    return 0;
}

/* The next "Name: value\r\n" line of text from *at: its length without CRLF. */
static size_t next_line(const char *text, size_t len, size_t *at) {
    const char *s = text + *at;
    const char *e = memchr(s, '\r', len - *at);
    size_t n = e ? (size_t)(e - s) : len - *at;
    *at += n + 2;
    return n;
}

void sws_header_keys_format(const sws_header_keys *k, bool always, char *out, size_t len) {
    size_t o = 0, at = 0;
    out[0] = '\0';
    for (uint32_t i = 0; i < k->n && o < len; i++) {
        const char *line = k->text + at;
        size_t n = next_line(k->text, k->len, &at);
        if (((k->always >> i) & 1) != always)
            continue;
        o += (size_t)snprintf(out + o, len - o, "%s%.*s", o ? "\n" : "", (int)n, line);
    }
}

sws_header_policy *sws_header_policy_build(const sws_header_keys *k, int *rc) {
    *rc = 0;
    if (!k->n)
        return NULL;
    /* One block: the struct, the fields, then the text twice (every field
     * as given, the always ones alone) and the lowercased names. */
    size_t size = sizeof(sws_header_policy) + k->n * sizeof(sws_header_field) + 2u * k->len;
    sws_header_policy *p = calloc(1, size + k->len);
    if (!p) {
        *rc = -ENOMEM;
        return NULL;
    }
    sws_header_field *f = (sws_header_field *)(p + 1);
    char *all = (char *)(f + k->n), *alw = all + k->len, *low = alw + k->len;
    memcpy(all, k->text, k->len);
    uint32_t alen = 0;
    size_t at = 0;
    for (uint32_t i = 0; i < k->n; i++) {
        size_t start = at, n = next_line(all, k->len, &at);
        const char *line = all + start;
        size_t nl = (size_t)((const char *)memchr(line, ':', n) - line);
        for (size_t j = 0; j < nl; j++)
            low[j] = (char)(line[j] >= 'A' && line[j] <= 'Z' ? line[j] + 32 : line[j]);
        f[i] = (sws_header_field){low, line + nl + 2, (uint32_t)nl, (uint32_t)(n - nl - 2)};
        low += nl;
        if (k->always & (1u << i)) {
            memcpy(alw + alen, line, n + 2);
            alen += (uint32_t)(n + 2);
        }
    }
    p->n = k->n;
    p->always = k->always;
    p->h2 = f;
    p->h1[0] = alw;
    p->h1_len[0] = alen;
    p->h1[1] = all;
    p->h1_len[1] = k->len;
    return p;
}

void sws_header_policy_free(sws_header_policy *p) {
    free(p);
}

void sws_header_policy_keys(const sws_header_policy *p, sws_header_keys *k) {
    memset(k, 0, sizeof(*k));
    if (!p)
        return;
    memcpy(k->text, p->h1[1], p->h1_len[1]);
    k->len = (uint16_t)p->h1_len[1];
    k->n = (uint8_t)p->n;
    k->always = p->always;
    k->set = true;
}
