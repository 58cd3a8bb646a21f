/* Writing HTTP/1.1 text into a bounded buffer: the server's answer heads and
 * chunked bodies (server.c), the proxy's request heads for its upstreams. */
#ifndef SWS_H1_WRITE_H
#define SWS_H1_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Appending into a bounded buffer whose length lives elsewhere (an exchange's
 * or a connection's): what does not fit sets `over` and is not written. */
typedef struct sws_wbuf {
    char *p;
    uint32_t *len;
    uint32_t cap;
    bool over;
} sws_wbuf;

static inline void sws_wbuf_put(sws_wbuf *b, const char *d, size_t n) {
    if (b->over || *b->len + n > b->cap) {
        b->over = true;
        return;
    }
    memcpy(b->p + *b->len, d, n);
    *b->len += (uint32_t)n;
}

static inline void sws_wbuf_puts(sws_wbuf *b, const char *s) {
    sws_wbuf_put(b, s, strlen(s));
}

/* "%zx\r\n" without snprintf: a chunk's size line into out (at least 18
 * bytes). Returns its length. */
static inline size_t sws_chunk_line(char *out, size_t n) {
    char tmp[16];
    size_t k = 0;
    do {
        tmp[k++] = "0123456789abcdef"[n & 15];
        n >>= 4;
    } while (n);
    for (size_t i = 0; i < k; i++)
        out[i] = tmp[k - 1 - i];
    out[k] = '\r';
    out[k + 1] = '\n';
    return k + 2;
}

/* d as one chunk of a chunked body: its size line, d and CRLF. */
static inline void sws_wbuf_chunk(sws_wbuf *b, const char *d, size_t n) {
    char hdr[24];
    sws_wbuf_put(b, hdr, sws_chunk_line(hdr, n));
    sws_wbuf_put(b, d, n);
    sws_wbuf_put(b, "\r\n", 2);
}

/* A decimal number. */
static inline void sws_wbuf_u64(sws_wbuf *b, uint64_t v) {
    char t[24];
    int i = sizeof(t);
    do {
        t[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    sws_wbuf_put(b, t + i, sizeof(t) - (size_t)i);
}

#endif
