/* The access log's line from its ops (log_render.h). The compiler checked
 * that the longest value of every op fits SWS_LOG_LINE_MAX; each value is
 * cut at its variable's longest here, so no write needs a bound check. */
#include "log_render.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const char hex[] = "0123456789abcdef";
static const char HEX[] = "0123456789ABCDEF";

/* The bytes a text value writes as they are: 0x20..0x7e but '"' and '\\'. */
static const uint64_t plain_bits[4] = {0xfffffffb00000000u, 0x7fffffffefffffffu, 0, 0};
static bool plain(unsigned char ch) {
    return (plain_bits[ch >> 6] >> (ch & 63)) & 1;
}

/* As nginx escapes log variables in text. Runs of plain bytes (nearly every
 * value) are copied whole. */
static char *esc_text(char *o, const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        size_t run = i;
        while (run < n && plain(s[run]))
            run++;
        memcpy(o, s + i, run - i);
        o += run - i;
        if (run == n)
            break;
        unsigned char ch = s[run];
        *o++ = '\\';
        *o++ = 'x';
        *o++ = HEX[ch >> 4];
        *o++ = HEX[ch & 15];
        i = run + 1;
    }
    return o;
}

/* The length of the valid UTF-8 sequence at s (RFC 3629: no overlongs, no
 * surrogates, nothing past U+10FFFF), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n) {
    unsigned char c = s[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xbf; /* the second byte's range */
    if (c >= 0xc2 && c <= 0xdf)
        len = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0)
            lo = 0xa0;
        else if (c == 0xed)
            hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0)
            lo = 0x90;
        else if (c == 0xf4)
            hi = 0x8f;
    } else {
        return 0;
    }
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return len;
}

/* A JSON string's contents: every byte of the result is printable ASCII or
 * valid UTF-8. An invalid byte becomes U+FFFD (6 bytes escaped, as the
 * compiler counts for every byte). */
static char *esc_json(char *o, const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned char ch = s[i];
        if (ch == '"' || ch == '\\') {
            *o++ = '\\';
            *o++ = (char)ch;
            i++;
        } else if (ch < 0x20 || ch == 0x7f) {
            memcpy(o, "\\u00", 4);
            o[4] = hex[ch >> 4];
            o[5] = hex[ch & 15];
            o += 6;
            i++;
        } else if (ch < 0x80) {
            *o++ = (char)ch;
            i++;
        } else {
            size_t k = utf8_len(s + i, n - i);
            if (k) {
                memcpy(o, s + i, k);
                o += k;
                i += k;
            } else {
                memcpy(o, "\\ufffd", 6);
                o += 6;
                i++;
            }
        }
    }
    return o;
}

/* A text value: "-" (null in JSON) when absent. */
static char *str(char *o, bool json, sws_log_var v, const char *s, size_t n) {
    if (!s || n == 0) {
        if (json) {
            memcpy(o, "null", 4);
            return o + 4;
        }
        *o = '-';
        return o + 1;
    }
    if (n > sws_log_vars[v].max)
        n = sws_log_vars[v].max;
    if (!json)
        return esc_text(o, (const unsigned char *)s, n);
    *o++ = '"';
    o = esc_json(o, (const unsigned char *)s, n);
    *o++ = '"';
    return o;
}

/* A value of our own making (an address, a date, a route's name): nothing
 * to escape, in text or JSON. */
static char *ours(char *o, bool json, const char *s) {
    size_t n = strlen(s);
    if (json)
        *o++ = '"';
    memcpy(o, s, n);
    o += n;
    if (json)
        *o++ = '"';
    return o;
}

static char *absent(char *o, bool json) {
    return str(o, json, SWS_LV_ROUTE, NULL, 0);
}

static char *u64(char *o, uint64_t n) {
    char tmp[20];
    int k = 0;
    do
        tmp[k++] = (char)('0' + n % 10);
    while ((n /= 10) != 0);
    while (k)
        *o++ = tmp[--k];
    return o;
}

/* Milliseconds as seconds: "0.004", as nginx's $request_time. */
static char *secs(char *o, uint64_t ms) {
    o = u64(o, ms / 1000);
    *o++ = '.';
    *o++ = (char)('0' + ms % 1000 / 100);
    *o++ = (char)('0' + ms % 100 / 10);
    *o++ = (char)('0' + ms % 10);
    return o;
}

/* The request line's three parts: method, target, protocol (any of them
 * absent in a line that was refused before it was whole). */
static void split_line(const sws_log_line *l, const char *part[3], size_t plen[3]) {
    const char *s = l->request;
    if (!s)
        return; /* all three absent; stepping a null pointer, even by 0, is undefined */
    size_t n = l->request_len;
    for (int i = 0; i < 3; i++) {
        const char *sp = i < 2 && n ? memchr(s, ' ', n) : NULL;
        size_t k = sp ? (size_t)(sp - s) : n;
        part[i] = s;
        plen[i] = k;
        s += k + (sp ? 1 : 0);
        n -= k + (sp ? 1 : 0);
    }
}

size_t sws_log_render(const sws_log_format *f, const sws_log_line *l, char *out) {
    char *o = out;
    bool json = f->json;
    const char *part[3] = {NULL, NULL, NULL};
    size_t plen[3] = {0, 0, 0};
    if (f->uses & ((1u << SWS_LV_METHOD) | (1u << SWS_LV_URI) | (1u << SWS_LV_PROTOCOL)))
        split_line(l, part, plen);
    for (unsigned i = 0; i < f->nops; i++) {
        const sws_log_op *op = &f->ops[i];
        sws_log_var v = (sws_log_var)op->var;
        switch (op->var) {
        case SWS_LOG_OP_LIT:
            memcpy(o, f->lit + op->off, op->len);
            o += op->len;
            break;
        case SWS_LV_REMOTE_ADDR:
            o = l->peer && l->peer[0] ? ours(o, json, l->peer) : absent(o, json);
            break;
        case SWS_LV_TIME_LOCAL:
            o = ours(o, json, l->time_local);
            break;
        case SWS_LV_TIME_ISO8601:
            o = ours(o, json, l->time_iso8601);
            break;
        case SWS_LV_MSEC:
            o = secs(o, l->now_ms);
            break;
        case SWS_LV_REQUEST:
            o = str(o, json, v, l->request, l->request_len);
            break;
        case SWS_LV_METHOD:
        case SWS_LV_URI:
        case SWS_LV_PROTOCOL: {
            int k = op->var - SWS_LV_METHOD;
            o = str(o, json, v, part[k], plen[k]);
            break;
        }
        case SWS_LV_SCHEME:
            o = ours(o, json, l->secure ? "https" : "http");
            break;
        case SWS_LV_HOST:
            o = str(o, json, v, l->host, l->host_len);
            break;
        case SWS_LV_STATUS:
            o = u64(o, l->status > 0 ? (uint64_t)l->status : 0);
            break;
        case SWS_LV_BYTES:
            o = u64(o, l->bytes);
            break;
        case SWS_LV_REFERER:
            o = str(o, json, v, l->referer, l->referer_len);
            break;
        case SWS_LV_USER_AGENT:
            o = str(o, json, v, l->user_agent, l->user_agent_len);
            break;
        case SWS_LV_REQUEST_TIME:
        case SWS_LV_REQUEST_MS:
            if (l->elapsed_ms < 0)
                o = absent(o, json);
            else if (op->var == SWS_LV_REQUEST_TIME)
                o = secs(o, (uint64_t)l->elapsed_ms);
            else
                o = u64(o, (uint64_t)l->elapsed_ms);
            break;
        case SWS_LV_ROUTE:
            o = ours(o, json, l->route ? l->route : "-");
            break;
        case SWS_LV_UPSTREAM_ADDR:
            o = l->upstream ? ours(o, json, l->upstream) : absent(o, json);
            break;
        case SWS_LV_UPSTREAM_TIME:
        case SWS_LV_UPSTREAM_MS:
            if (l->upstream_us < 0)
                o = absent(o, json);
            else if (op->var == SWS_LV_UPSTREAM_TIME)
                o = secs(o, (uint64_t)l->upstream_us / 1000);
            else
                o = u64(o, (uint64_t)l->upstream_us / 1000);
            break;
        default:
            break;
        }
    }
    *o++ = '\n';
    return (size_t)(o - out);
}
