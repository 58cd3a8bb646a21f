/* Chunk size lines (chunk_line.h). */
#include "chunk_line.h"

/* Scanner states (sws_size_line.state), RFC 9112 7.1 and 7.1.1:
 *   chunk-size [ chunk-ext ] CRLF
 *   chunk-ext = *( BWS ";" BWS name [ BWS "=" BWS ( token / quoted-string ) ] ) */
enum {
    C_SIZE0 = 0, /* the first hex digit */
    C_SIZE,      /* more digits, or the end of the size */
    C_SEMI,      /* BWS before a ";" */
    C_NAME0,     /* BWS after ";", then the name's first tchar */
    C_NAME,      /* in the name */
    C_EQ,        /* BWS after the name: "=", ";" */
    C_VAL0,      /* BWS after "=", then a token or a DQUOTE */
    C_TOKEN,     /* in a token value */
    C_QUOTED,    /* in a quoted-string */
    C_PAIR,      /* after a backslash in a quoted-string */
    C_AFTER,     /* after a value: ";" or the CR (no whitespace before it) */
    C_LF,        /* after the CR */
};

static bool is_hex(unsigned char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Leading zeros are dropped, so that a size llhttp can hold never looks like
 * an overflow here. */
int sws_size_line_scan(sws_size_line *l, uint32_t *ext_bytes, uint32_t ext_max, const char *data,
                       size_t len, size_t *at, bool *done) {
    uint8_t s = l->state;
    size_t i;
    *done = false;
    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char)data[i];
        bool ws = c == ' ' || c == '\t';
        if (s >= C_SEMI && s <= C_AFTER && ++*ext_bytes > ext_max)
            return 400;
        switch (s) {
        case C_SIZE0:
        case C_SIZE:
            if (is_hex(c)) {
                if (l->len == 1 && l->size[0] == '0')
                    l->len = 0; /* a leading zero */
                if (l->len >= SWS_CHUNK_DIGITS)
                    return 400;
                l->size[l->len++] = (char)c;
                s = C_SIZE;
                break;
            }
            if (s == C_SIZE0)
                return 400;
            if (c == '\r') {
                s = C_LF;
            } else if (c == ';') {
                s = C_NAME0;
                (*ext_bytes)++;
            } else if (ws) {
                s = C_SEMI;
                (*ext_bytes)++;
            } else {
                return 400;
            }
            break;
        case C_SEMI:
            if (c == ';')
                s = C_NAME0;
            else if (!ws)
                return 400;
            break;
        case C_NAME0:
            if (sws_http_tchar(c))
                s = C_NAME;
            else if (!ws)
                return 400;
            break;
        case C_NAME:
            if (sws_http_tchar(c))
                break;
            __attribute__((fallthrough)); /* the name ended: what may follow it */
        case C_EQ:
            if (c == '=')
                s = C_VAL0;
            else if (c == ';')
                s = C_NAME0;
            else if (c == '\r' && s == C_NAME)
                s = C_LF;
            else if (ws)
                s = C_EQ;
            else
                return 400;
            break;
        case C_VAL0:
            if (c == '"')
                s = C_QUOTED;
            else if (sws_http_tchar(c))
                s = C_TOKEN;
            else if (!ws)
                return 400;
            break;
        case C_TOKEN:
            if (sws_http_tchar(c))
                break;
            __attribute__((fallthrough));
        case C_AFTER:
            if (c == ';')
                s = C_NAME0;
            else if (c == '\r') /* whitespace went to C_SEMI: none before the CR */
                s = C_LF;
            else if (ws)
                s = C_SEMI;
            else
                return 400;
            break;
        case C_QUOTED:
            /* qdtext: HTAB, SP, VCHAR but DQUOTE and backslash, obs-text */
            if (c == '"')
                s = C_AFTER;
            else if (c == '\\')
                s = C_PAIR;
            else if (!(ws || (c >= 0x21 && c != 0x7f)))
                return 400;
            break;
        case C_PAIR:
            if (!(ws || (c >= 0x21 && c != 0x7f)))
                return 400;
            s = C_QUOTED;
            break;
        case C_LF:
            if (c != '\n')
                return 400;
            l->size[l->len++] = '\r';
            l->size[l->len++] = '\n';
            l->state = C_SIZE0;
            *at = i + 1;
            *done = true;
            return 0;
        }
    }
    l->state = s;
    *at = i;
    return 0;
}
