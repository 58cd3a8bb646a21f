/* The one-pass request head reader: the common request read once, with no
 * callbacks, before (and instead of) the reference path in parse_cold.c (scan_head,
 * then llhttp over the same bytes).
 *
 * It is a sound subset of the reference path, not a second opinion: it accepts
 * only heads it is sure the reference path accepts, and produces what the
 * reference path's callbacks produce for them (same sws_http_request, same
 * keep-alive, same Content-Length). Anything else -- a head not whole in this
 * read, any fault, any limit reached, a method, target byte, field byte or
 * framing field it does not handle -- is handed back (false), and the
 * reference path reads it from its first byte. So every refusal, and its
 * status, stays the reference path's, whatever the split. The fuzz_request
 * target and test_oneparse run both paths on the same bytes and require the
 * same results.
 *
 * What it takes (RFC 9112): method SP origin-form SP HTTP/1.x CRLF, fields
 * "token ':' OWS value OWS CRLF" with visible ASCII, SP and HTAB in values,
 * then CRLF. Framing: at most one Content-Length of digits; no
 * Transfer-Encoding (chunked bodies are the reference path's). Routing: exactly
 * one Host of uri-host bytes in HTTP/1.1, at most one in HTTP/1.0. Connection:
 * "close" or "keep-alive" (what llhttp's keep-alive rule reads). Not taken:
 * Expect, Upgrade, Proxy-Connection, empty Host, obs-text, leading blank
 * lines, the absolute- and asterisk-forms, methods other than the seven below. */
#include "head.h"

#include <string.h>

/* SSE2 is x86-64's baseline: no run-time check. SWS_HTTP_SCALAR (CMake's
 * SWS_HTTP_SIMD=OFF, and the scalar twins of the parser's tests) keeps the
 * portable scan, which every other architecture builds. */
#if defined(__x86_64__) && defined(__SSE2__) && !defined(SWS_HTTP_SCALAR)
#define SWS_HEAD_SIMD 1
#include <emmintrin.h>
#endif

enum {
    C_T = 1, /* tchar (RFC 9110 5.6.2) */
    C_U = 2, /* a byte of an origin-form target llhttp takes as it is */
    C_V = 4, /* field value: visible ASCII, SP, HTAB */
    C_H = 8, /* uri-host [ ":" port ], as parse_cold.c's host_char */
};
#define C_ALNUM (C_T | C_U | C_V | C_H)
#define C_TUVH (C_T | C_U | C_V | C_H)

static const uint8_t cls[256] = {
    ['\t'] = C_V,
    [' '] = C_V,
    ['!'] = C_TUVH,
    ['"'] = C_V,
    ['#'] = C_T | C_V, /* a fragment: llhttp's URL states, not ours */
    ['$'] = C_TUVH,
    ['%'] = C_TUVH,
    ['&'] = C_TUVH,
    ['\''] = C_TUVH,
    ['('] = C_U | C_V | C_H,
    [')'] = C_U | C_V | C_H,
    ['*'] = C_TUVH,
    ['+'] = C_TUVH,
    [','] = C_U | C_V | C_H,
    ['-'] = C_TUVH,
    ['.'] = C_TUVH,
    ['/'] = C_U | C_V,
    ['0' ... '9'] = C_ALNUM,
    [':'] = C_U | C_V | C_H,
    [';'] = C_U | C_V | C_H,
    ['<'] = C_V,
    ['='] = C_U | C_V | C_H,
    ['>'] = C_V,
    ['?'] = C_U | C_V,
    ['@'] = C_U | C_V,
    ['A' ... 'Z'] = C_ALNUM,
    ['['] = C_V | C_H,
    ['\\'] = C_V,
    [']'] = C_V | C_H,
    ['^'] = C_T | C_V,
    ['_'] = C_TUVH,
    ['`'] = C_T | C_V,
    ['a' ... 'z'] = C_ALNUM,
    ['{'] = C_V,
    ['|'] = C_T | C_V,
    ['}'] = C_V,
    ['~'] = C_TUVH,
};

static inline bool is(unsigned char c, uint8_t k) {
    return (cls[c] & k) != 0;
}

/* The end of a run of bytes of class k from s, byte by byte, four at a time
 * while there is room: one bound check per four. The portable scan, and the
 * SIMD scan's when the whole head is shorter than a block. */
static inline __attribute__((always_inline)) const char *skip_bytes(const char *s, const char *end,
                                                                    uint8_t k) {
    while (end - s >= 4) {
        if (!is((unsigned char)s[0], k))
            return s;
        if (!is((unsigned char)s[1], k))
            return s + 1;
        if (!is((unsigned char)s[2], k))
            return s + 2;
        if (!is((unsigned char)s[3], k))
            return s + 3;
        s += 4;
    }
    while (s < end && is((unsigned char)*s, k))
        s++;
    return s;
}

#ifdef SWS_HEAD_SIMD
/* x's bytes in [a, b] (unsigned, a <= b): moved so that a is -128, then one
 * signed compare (SSE2 has no unsigned one). */
static inline __m128i in_range(__m128i x, unsigned char a, unsigned char b) {
    __m128i y = _mm_add_epi8(x, _mm_set1_epi8((char)(0x80 - a)));
    return _mm_cmplt_epi8(y, _mm_set1_epi8((char)(0x80 + b - a + 1)));
}

static inline __m128i is_letter(__m128i x) {
    return in_range(_mm_or_si128(x, _mm_set1_epi8(0x20)), 'a', 'z');
}

static inline __m128i is_byte(__m128i x, char c) {
    return _mm_cmpeq_epi8(x, _mm_set1_epi8(c));
}

/* A bit for each of the 16 bytes at s outside the common part of class k: a
 * byte whose bit is clear is of class k; one whose bit is set may still be
 * (skip_class asks the table). Field values (C_V) are exact: a byte below SP
 * but HTAB, or above '~' (below zero as a signed byte). */
static inline unsigned outside(const char *s, uint8_t k) {
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)s), in;
    switch (k) {
    case C_V: {
        __m128i bad = _mm_or_si128(_mm_cmplt_epi8(x, _mm_set1_epi8(' ')), is_byte(x, 0x7f));
        return (unsigned)_mm_movemask_epi8(_mm_andnot_si128(is_byte(x, '\t'), bad));
    }
    case C_T: /* field names: letters, digits, '-' */
        in = _mm_or_si128(_mm_or_si128(is_letter(x), in_range(x, '0', '9')), is_byte(x, '-'));
        break;
    case C_U: /* targets: "$%&'()*+,-./", digits, ":;", '?', '@', letters */
        in = _mm_or_si128(_mm_or_si128(in_range(x, '$', ';'), in_range(x, '?', 'Z')),
                          in_range(x, 'a', 'z'));
        break;
    default: /* C_H, hosts: letters, digits and "-.:" ('/' between them is not) */
        in = _mm_or_si128(is_letter(x), _mm_andnot_si128(is_byte(x, '/'), in_range(x, '-', ':')));
        break;
    }
    return (unsigned)_mm_movemask_epi8(in) ^ 0xffffu;
}
#endif

/* The end of a run of bytes of class k from s. vec: SIMD may load any 16
 * bytes of the head that end by end. The first two bytes are asked of the
 * table (a target of "/" or a short token ends there); then 16 at a time, and
 * at the end the 16 bytes that end at end (those before s masked off), so that
 * no load reaches past end or before the head. A byte outside the class's
 * common part is asked of the table, and the run goes on past it when it is of
 * the class. */
static inline __attribute__((always_inline)) const char *skip_class(const char *s, const char *end,
                                                                    bool vec, uint8_t k) {
#ifdef SWS_HEAD_SIMD
    if (vec && end - s >= 2) {
        if (!is((unsigned char)s[0], k))
            return s;
        if (!is((unsigned char)s[1], k))
            return s + 1;
        s += 2;
        for (;;) {
            unsigned m;
            if (end - s >= 16) {
                m = outside(s, k);
                if (!m) {
                    s += 16;
                    continue;
                }
            } else {
                if (s >= end)
                    return s;
                m = outside(end - 16, k) >> (16 - (end - s));
                if (!m)
                    return end;
            }
            s += __builtin_ctz(m);
            if (!is((unsigned char)*s, k))
                return s;
            s++;
        }
    }
#else
    (void)vec;
#endif
    return skip_bytes(s, end, k);
}

/* n bytes at s equal the lowercase lit (n >= 4 when they are), ASCII letters
 * case-insensitively, by words with each byte | 0x20. Only tchars and field
 * value bytes reach here, and of those only a letter's case partner turns into
 * a letter under | 0x20, and only CR (never here) into '-'. */
static inline uint32_t lower4(const char *s) {
    uint32_t x;
    memcpy(&x, s, 4);
    return x | 0x20202020u;
}
static inline uint64_t lower8(const char *s) {
    uint64_t x;
    memcpy(&x, s, 8);
    return x | 0x2020202020202020ull;
}
static inline bool name_eq(const char *s, size_t n, const char *lit, size_t litn) {
    if (n != litn)
        return false;
    uint32_t l4;
    uint64_t l8;
    if (n < 8) {
        memcpy(&l4, lit, 4);
        if (lower4(s) != l4)
            return false;
        memcpy(&l4, lit + n - 4, 4);
        return lower4(s + n - 4) == l4;
    }
    for (size_t i = 0; i + 8 < n; i += 8) {
        memcpy(&l8, lit + i, 8);
        if (lower8(s + i) != l8)
            return false;
    }
    memcpy(&l8, lit + n - 8, 8);
    return lower8(s + n - 8) == l8;
}
#define NAME_IS(s, n, lit) name_eq(s, n, lit, sizeof(lit) - 1)

/* The methods taken, as llhttp numbers them. */
static int method_of(const char *m, size_t n) {
    switch (n) {
    case 3:
        if (memcmp(m, "GET", 3) == 0)
            return HTTP_GET;
        if (memcmp(m, "PUT", 3) == 0)
            return HTTP_PUT;
        return -1;
    case 4:
        if (memcmp(m, "HEAD", 4) == 0)
            return HTTP_HEAD;
        if (memcmp(m, "POST", 4) == 0)
            return HTTP_POST;
        return -1;
    case 5:
        return memcmp(m, "PATCH", 5) == 0 ? HTTP_PATCH : -1;
    case 6:
        return memcmp(m, "DELETE", 6) == 0 ? HTTP_DELETE : -1;
    case 7:
        return memcmp(m, "OPTIONS", 7) == 0 ? HTTP_OPTIONS : -1;
    }
    return -1;
}

/* The static scenario's fields, as parse_cold.c's sf_field and value callbacks keep
 * them: raw is the value as llhttp hands it (leading OWS gone, trailing OWS
 * kept), trimmed after it is stored, so that a value cut by its room trims the
 * same way. */
static void keep_sf(sws_http_request *r, int k, const char *raw, size_t rawn) {
    uint16_t *n = &r->sf_len[k];
    if (*n > 0 && *n <= SWS_HTTP_SF_VALUE_MAX) {
        if (SWS_HTTP_SF_LIST(k) && *n < SWS_HTTP_SF_VALUE_MAX)
            r->sf_fields[k * SWS_HTTP_SF_VALUE_MAX + (*n)++] = ',';
        else
            *n = SWS_HTTP_SF_VALUE_MAX + 1;
    }
    if (*n > SWS_HTTP_SF_VALUE_MAX)
        return;
    if (rawn > (size_t)(SWS_HTTP_SF_VALUE_MAX - *n)) {
        *n = SWS_HTTP_SF_VALUE_MAX + 1;
        return;
    }
    char *v = r->sf_fields + k * SWS_HTTP_SF_VALUE_MAX;
    memcpy(v + *n, raw, rawn);
    *n += (uint16_t)rawn;
    while (*n && (v[*n - 1] == ' ' || v[*n - 1] == '\t'))
        (*n)--;
}

static int sf_index(const char *name, size_t n) {
    switch (n) {
    case 5:
        return NAME_IS(name, n, "range") ? SWS_HTTP_SF_RANGE : -1;
    case 8:
        return NAME_IS(name, n, "if-range") ? SWS_HTTP_SF_IF_RANGE : -1;
    case 13:
        return NAME_IS(name, n, "if-none-match")   ? SWS_HTTP_SF_INM
               : NAME_IS(name, n, "authorization") ? SWS_HTTP_SF_AUTH
                                                   : -1;
    case 15:
        return NAME_IS(name, n, "accept-encoding")   ? SWS_HTTP_SF_AE
               : NAME_IS(name, n, "x-forwarded-for") ? SWS_HTTP_SF_XFF
                                                     : -1;
    case 17:
        return NAME_IS(name, n, "if-modified-since") ? SWS_HTTP_SF_IMS : -1;
    }
    return -1;
}

/* Referer and User-Agent for the log: the first line's value, cut at its room,
 * then trimmed (parse_cold.c's order). */
static void keep_log(char *dst, uint16_t *n, const char *raw, size_t rawn) {
    size_t k = rawn < SWS_HTTP_LOG_FIELD_MAX ? rawn : SWS_HTTP_LOG_FIELD_MAX;
    memcpy(dst, raw, k);
    while (k && (dst[k - 1] == ' ' || dst[k - 1] == '\t'))
        k--;
    *n = (uint16_t)k;
}

/* What the fields said that is judged when the head is over. */
typedef struct head_facts {
    uint32_t hosts;
    uint32_t lengths;
    uint64_t content_length;
    bool conn_close, conn_keep_alive;
} head_facts;

/* One field line's name and value (value: leading OWS gone, trailing kept),
 * Host apart (read in the loop). Returns false when the reference path must
 * read the head. */
static bool take_field(sws_http_parser *p, head_facts *f, const char *name, size_t nn,
                       const char *val, size_t vn) {
    sws_http_request *r = &p->req;
    size_t tn = vn; /* trimmed */
    while (tn && (val[tn - 1] == ' ' || val[tn - 1] == '\t'))
        tn--;
    switch (nn) {
    case 6:
        if (NAME_IS(name, nn, "expect"))
            return false;
        break;
    case 7:
        if (NAME_IS(name, nn, "upgrade"))
            return false;
        if (r->log_fields && r->referer_len == 0 && NAME_IS(name, nn, "referer")) {
            keep_log(r->log_fields + SWS_HTTP_LOG_REFERER, &r->referer_len, val, vn);
            return true;
        }
        break;
    case 10:
        if (NAME_IS(name, nn, "early-data"))
            return false; /* rare: the reference path judges it (425) */
        if (NAME_IS(name, nn, "connection")) {
            /* llhttp 8.1 knows its tokens before SP, CR or ',' only: with an
             * HTAB after "close" or "keep-alive" it sets no flag, so trailing
             * HTAB is not trimmed here (found by fuzz_head_llhttp: an HTTP/1.0
             * "keep-alive<HTAB>" kept alive here and closed by llhttp). */
            tn = vn;
            while (tn && val[tn - 1] == ' ')
                tn--;
            if (NAME_IS(val, tn, "close"))
                f->conn_close = true;
            else if (NAME_IS(val, tn, "keep-alive"))
                f->conn_keep_alive = true;
            else
                return false; /* a list, or upgrade: llhttp's token reader */
            return true;
        }
        if (r->log_fields && r->user_agent_len == 0 && NAME_IS(name, nn, "user-agent")) {
            keep_log(r->log_fields + SWS_HTTP_LOG_UA, &r->user_agent_len, val, vn);
            return true;
        }
        break;
    case 14:
        if (NAME_IS(name, nn, "content-length")) {
            /* 18 digits cannot overflow llhttp's 64 bits; more goes its way.
             * llhttp 8.1 takes trailing SP after the digits, not HTAB. */
            tn = vn;
            while (tn && val[tn - 1] == ' ')
                tn--;
            if (tn == 0 || tn > 18 || ++f->lengths > 1)
                return false;
            uint64_t v = 0;
            for (size_t i = 0; i < tn; i++) {
                unsigned d = (unsigned char)val[i] - '0';
                if (d > 9)
                    return false;
                v = v * 10 + d;
            }
            f->content_length = v;
            return true;
        }
        break;
    case 16:
        if (NAME_IS(name, nn, "proxy-connection"))
            return false; /* llhttp reads it as Connection */
        break;
    case 17:
        if (NAME_IS(name, nn, "transfer-encoding"))
            return false;
        break;
    }
    if (r->sf_fields) {
        int k = sf_index(name, nn);
        if (k >= 0)
            keep_sf(r, k, val, vn);
    }
    return true;
}

/* n bytes of the head from src to dst, which has room for 16 at least: most
 * targets and hosts are 16 bytes or less, copied as 16 when the head has them
 * (the bytes past n are never read), without a library call. */
static inline void copy_run(char *dst, const char *src, size_t n, const char *end) {
    if (n <= 16 && end - src >= 16) {
        uint64_t a, b;
        memcpy(&a, src, 8);
        memcpy(&b, src + 8, 8);
        memcpy(dst, &a, 8);
        memcpy(dst + 8, &b, 8);
    } else {
        memcpy(dst, src, n);
    }
}

static void keep_target(sws_http_request *r, const char *t, size_t n, const char *end) {
    size_t k = n < SWS_HTTP_PATH_MAX - 1 ? n : SWS_HTTP_PATH_MAX - 1;
    copy_run(r->path, t, k, end);
    r->path[k] = '\0';
    r->path_len = (uint16_t)k;
    r->path_truncated = k < n;
    if (r->sf_fields) {
        if (n > SWS_HTTP_SF_PATH_MAX) {
            r->sf_path_len = SWS_HTTP_SF_PATH_MAX + 1;
        } else {
            memcpy(r->sf_fields + SWS_HTTP_SF_PATH, t, n);
            r->sf_path_len = (uint16_t)n;
        }
    }
}

/* Clears what a failed attempt may have written, as on_message_begin would. */
static bool give_up(sws_http_request *r) {
    r->path_len = 0;
    r->path[0] = '\0';
    r->path_truncated = false;
    r->referer_len = r->user_agent_len = r->line_len = 0;
    memset(r->sf_len, 0, sizeof(r->sf_len));
    r->sf_path_len = 0;
    r->host_len = 0;
    return false;
}

bool sws_http_head_fast(sws_http_parser *p, const char *d, size_t len, size_t *head_len,
                        uint64_t *content_length) {
    const sws_http_limits *lim = p->limits;
    sws_http_request *r = &p->req;
    r->host_len = 0; /* no Host (HTTP/1.0): routes without a host only */
    /* Past header_bytes is 431, the reference path's to say. */
    const char *end = d + (len < lim->header_bytes ? len : lim->header_bytes);
    const char *s = d;
#ifdef SWS_HEAD_SIMD
    const bool vec = end - d >= 16 && !p->portable_scan;
#else
    const bool vec = false;
#endif

    /* Request line: GET first, in one word, then the other methods taken. */
    int method;
    uint32_t w4;
    if (len < 16)
        return false; /* no head taken here is shorter: "GET / HTTP/1.0" CR LF CR LF */
    memcpy(&w4, d, 4);
    static const char get[4] = "GET ";
    if (memcmp(&w4, get, 4) == 0) {
        method = HTTP_GET;
        s += 3;
    } else {
        s = skip_class(s, end, vec, C_T);
        method = method_of(d, (size_t)(s - d));
        if (method < 0 || s >= end || *s != ' ')
            return false;
    }
    const char *t = ++s;
    if (s >= end || *s != '/')
        return false;
    s = skip_class(s, end, vec, C_U);
    size_t tn = (size_t)(s - t);
    /* " HTTP/1.0" or " HTTP/1.1" and CR LF, as two words: the second's byte
     * of the minor version with its low bit set ('0' | 1 is '1', and only
     * '0' and '1' give it). */
    static const char ver[8] = " HTTP/1.", tail[8] = "TP/1.1\r\n", low[8] = {[5] = 1};
    uint64_t w, want, bit;
    if (tn > lim->uri_length || end - s < 11)
        return false;
    memcpy(&w, s, 8);
    memcpy(&want, ver, 8);
    if (w != want)
        return false;
    memcpy(&w, s + 3, 8);
    memcpy(&want, tail, 8);
    memcpy(&bit, low, 8);
    if ((w | bit) != want)
        return false;
    uint8_t minor = (uint8_t)(s[8] - '0');
    size_t line = (size_t)(s + 9 - d);
    s += 11;

    r->referer_len = r->user_agent_len = 0;
    memset(r->sf_len, 0, sizeof(r->sf_len));
    head_facts f = {0};
    uint32_t count = 0, host4;
    memcpy(&host4, "host", 4);
    for (;;) {
        if (s >= end)
            return give_up(r);
        if (*s == '\r') {
            if (end - s < 2 || s[1] != '\n')
                return give_up(r);
            s += 2;
            break;
        }
        if (++count > lim->header_count)
            return give_up(r);
        /* Host, the one field every HTTP/1.1 request has, by its name first:
         * five bytes that equal "host:" are a token and its colon. */
        if (end - s >= 5 && lower4(s) == host4 && s[4] == ':') {
            s += 5;
            while (s < end && (*s == ' ' || *s == '\t'))
                s++;
            /* Read as uri-host bytes at once: anything else is the reference
             * path's (a space inside, a byte no host holds: 400 there). */
            const char *val = s;
            s = skip_class(s, end, vec, C_H);
            if (s == val || ++f.hosts > 1)
                return give_up(r);
            /* Kept for routing, as parse_cold.c keeps it (cut at SWS_HTTP_HOST_MAX). */
            size_t hl =
                (size_t)(s - val) < SWS_HTTP_HOST_MAX ? (size_t)(s - val) : SWS_HTTP_HOST_MAX;
            copy_run(r->host, val, hl, end);
            r->host_len = (uint16_t)hl;
            while (s < end && (*s == ' ' || *s == '\t'))
                s++;
            if (end - s < 2 || s[0] != '\r' || s[1] != '\n')
                return give_up(r);
            s += 2;
            continue;
        }
        const char *name = s;
        s = skip_class(s, end, vec, C_T);
        size_t nn = (size_t)(s - name);
        if (nn == 0 || s >= end || *s != ':')
            return give_up(r);
        s++;
        while (s < end && (*s == ' ' || *s == '\t'))
            s++;
        const char *val = s;
        s = skip_class(s, end, vec, C_V);
        if (end - s < 2 || s[0] != '\r' || s[1] != '\n')
            return give_up(r);
        if (!take_field(p, &f, name, nn, val, (size_t)(s - val)))
            return give_up(r);
        s += 2;
    }
    if (f.content_length > lim->body_size || f.hosts > 1 || (minor == 1 && f.hosts == 0))
        return give_up(r);

    keep_target(r, t, tn, end);
    if (r->log_fields) {
        size_t k = line < SWS_HTTP_LOG_FIELD_MAX ? line : SWS_HTTP_LOG_FIELD_MAX;
        memcpy(r->log_fields + SWS_HTTP_LOG_LINE, d, k);
        r->line_len = (uint16_t)k;
    } else {
        r->line_len = 0; /* the reference path keeps none without storage either */
    }
    r->method = (uint8_t)method;
    r->http_major = 1;
    r->http_minor = minor;
    r->head = method == HTTP_HEAD;
    /* llhttp_should_keep_alive's rule. */
    r->keep_alive = minor == 1 ? !f.conn_close : f.conn_keep_alive;
    *head_len = (size_t)(s - d);
    *content_length = f.content_length;
    return true;
}
