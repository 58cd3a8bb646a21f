/* The heads the proxy writes: the request head that goes upstream (the
 * client's, rewritten) and the end-to-end fields of an answer's head that go
 * back to the client. Hop-by-hop fields (RFC 9110 7.6.1: Connection, those it
 * names, Keep-Alive, TE, Trailer, Transfer-Encoding, Upgrade,
 * Proxy-Connection) never cross. Pure functions over a parsed sws_msg: no
 * I/O, no state, unit-tested in tests/unit/test_proxy_head.c. */
#ifndef SWS_PROXY_HEAD_H
#define SWS_PROXY_HEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "proxy_config.h"
#include "route.h"
#include "sws_msg.h"

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
size_t sws_chunk_line(char *out, size_t n);

/* d as one chunk of a chunked body: its size line, d and CRLF. */
void sws_wbuf_chunk(sws_wbuf *b, const char *d, size_t n);

/* Every end-to-end field of m, as it came, each ending in CRLF. */
void sws_px_end_to_end_fields(sws_wbuf *b, const sws_msg *m);

/* What the request head going upstream is made of. */
typedef struct sws_px_request {
    const sws_msg *m;            /* the client's request, parsed */
    const sws_proxy_config *cfg; /* the route's [proxy] keys */
    const sws_route *route;      /* its strip_prefix; NULL: none */
    const char *peer;            /* the client's address text, "" when unknown */
    const char *upstream;        /* the upstream as configured ("backend:8080") */
    bool client_tls;             /* the client came on a TLS listener */
    bool chunked;                /* the body goes up chunked */
} sws_px_request;

/* The head for the upstream into out[0..cap): the request line (HTTP/1.1,
 * the route's prefix off with strip_prefix), the client's end-to-end fields
 * but Expect (the connection answered it) and the forwarding fields
 * (forwarded.c writes those), Via, Host as [proxy] host says (the
 * upstream's name also for a request without one) and Transfer-Encoding for
 * a chunked body. Returns its length, 0 when it does not fit. *names_up:
 * the head's Host is the upstream's own name, so it cannot be retried on
 * another upstream. */
size_t sws_px_request_head(const sws_px_request *in, char *out, size_t cap, bool *names_up);

#endif
