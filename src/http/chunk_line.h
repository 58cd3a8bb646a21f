/* A chunk size line of a chunked request body, read by the request parser
 * itself (parse_cold.c) and not by llhttp: llhttp 8.1 refuses several extensions on
 * one line and quoted-string values with quoted-pairs, both of which RFC 9112
 * 7.1.1 allows (fixed upstream in 9.1.3, not in Debian 12). The scanner
 * validates the whole line, counts its extensions' bytes against a bound, and
 * keeps only "SIZE CR LF", a line every llhttp reads the same way. */
#ifndef SWS_CHUNK_LINE_H
#define SWS_CHUNK_LINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* RFC 9110 5.6.2 tchar: a byte of a token. */
static inline bool sws_http_tchar(unsigned char c) {
    if ((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'))
        return true;
    return c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

#define SWS_CHUNK_DIGITS 16 /* significant hex digits; more is an overflow llhttp refuses */

typedef struct sws_size_line {
    uint8_t state;                   /* where in the line the scan is; 0 at its start */
    uint8_t len;                     /* bytes in size[] */
    char size[SWS_CHUNK_DIGITS + 4]; /* the line as llhttp is fed it: digits, CR LF */
} sws_size_line;

/* Reads a chunk size line from data[0..len), across calls: *at is how many
 * bytes it took and *done whether the line ended (then l->size[0..l->len)
 * holds what llhttp is fed; the caller empties it with l->len = 0). Each
 * extension byte counts in *ext_bytes, over every line of a request, and more
 * than ext_max is refused. Returns 0, or 400 for a line RFC 9112 7.1 does not
 * allow. */
int sws_size_line_scan(sws_size_line *l, uint32_t *ext_bytes, uint32_t ext_max, const char *data,
                       size_t len, size_t *at, bool *done);

#endif
