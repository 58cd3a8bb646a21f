/* The HTTP/1.1 client (the proxy's upstream side): the heads the proxy writes: the request head
 * that goes upstream (the client's, rewritten) and the end-to-end fields of an answer's head that
 * go back to the client. Hop-by-hop fields (RFC 9110 7.6.1: Connection, those it names, Keep-Alive,
 * TE, Transfer-Encoding, Upgrade, Proxy-Connection) never cross; a client's "TE: trailers" is
 * asked again upstream in the proxy's own name, since it relays trailers. Pure functions over a
 * message head (sws_head): no I/O, no state, unit-tested in tests/unit/test_proxy_head.c. */
#ifndef SWS_PROXY_HEAD_H
#define SWS_PROXY_HEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "exchange.h"
#include "h1_write.h"
#include "proxy_config.h"
#include "route.h"
#include "sws_msg.h"

/* Every end-to-end field of m, as it came, into out[0..cap): the answer's
 * fields, but Content-Length, which frames it (the answer's length). Returns
 * how many. The fields point where m's do; out may be m->f itself. */
uint32_t sws_px_end_to_end_fields(const sws_head *m, sws_field *out, uint32_t cap);

/* What the request head going upstream is made of. */
typedef struct sws_px_request {
    const sws_head *m;           /* the client's request, parsed */
    const sws_proxy_config *cfg; /* the route's [proxy] keys */
    const sws_route *route;      /* its strip_prefix; NULL: none */
    const char *peer;            /* the client's address text, "" when unknown */
    const char *upstream;        /* the upstream as configured ("backend:8080") */
    bool client_tls;             /* the client came on a TLS listener */
    bool streams;                /* the body's length is not known: it goes up chunked */
    bool upgrade;                /* the client's Upgrade goes on, with Connection: upgrade */
    /* An HTTP/2 extended CONNECT (RFC 8441) asked upstream as an HTTP/1.1
     * upgrade: GET, Upgrade: protocol, and ws_key (when not NULL) as
     * Sec-WebSocket-Key instead of any the client sent. NULL: none. */
    const char *protocol;
    uint32_t protocol_len;
    const char *ws_key;
} sws_px_request;

/* The head for the upstream into out[0..cap): the request line (HTTP/1.1,
 * the route's prefix off with strip_prefix), the client's end-to-end fields
 * but Expect (the connection answered it) and the forwarding fields
 * (forwarded.c writes those), Via, Host as [proxy] host says (the
 * upstream's name also for a request without one) and Transfer-Encoding for
 * a chunked body, "TE: trailers" when the client's TE has it, and with
 * upgrade the client's Upgrade field (a tunnel asked for); with protocol, an
 * extended CONNECT as a GET that asks for that upgrade (RFC 8441 5); Connection
 * names the upgrade and TE it sends; Early-Data: 1 for a request taken in
 * early data (m->early, RFC 8470 5.1) that does not carry it. Returns its
 * length, 0 when it does not fit. *names_up: the head's Host is the
 * upstream's own name, so it cannot be retried on another upstream. */
size_t sws_px_request_head(const sws_px_request *in, char *out, size_t cap, bool *names_up);

/* The body of a request going upstream, through put (the exchange's
 * output; put returns 0 or -1): as it is when its length is known, else in
 * chunks (streams), ended by the last chunk. -1 when put refused. */
int sws_h1c_body(bool streams, int (*put)(void *u, const char *d, size_t n), void *u, const char *d,
                 size_t n);
int sws_h1c_body_end(bool streams, int (*put)(void *u, const char *d, size_t n), void *u);

/* An active health check's request for path on the upstream host (its
 * Host), closing the connection after the answer: its length into out, or
 * -1 when it does not fit. */
int sws_h1c_probe_head(char *out, size_t cap, const char *path, const char *host);
/* The status of an answer whose first n bytes are at got: 0 until the
 * status line's code is in, -1 when it is not an HTTP/1.x status line. */
int sws_h1c_status(const char *got, size_t n);

/* sws_h1_msg_head and then sws_px_end_to_end_fields of an upstream's answer
 * m in one pass: its end-to-end fields but Content-Length, pointing into m. */
uint32_t sws_h1c_answer_fields(const sws_msg *m, sws_field *out, uint32_t cap);

/* The trailer fields of an upstream's chunked answer m (read after its
 * head, m->f[head_nf..nf)) that may go on to the client, pointing into m:
 * not those that frame, route or control a message or describe its content
 * (RFC 9110 6.5.1: Content-Length, Transfer-Encoding, Host, Content-Type,
 * Set-Cookie, Cache-Control, ...), nor hop-by-hop ones, which a recipient
 * must not take from a trailer section. Returns how many. */
uint32_t sws_h1c_trailer_fields(const sws_msg *m, sws_field *out, uint32_t cap);

/* The head of a message an HTTP/1.1 reader parsed (a request, or an
 * upstream's answer), as the protocol-neutral view: out->f points at f,
 * which gets up to cap fields pointing into m. */
void sws_h1_msg_head(const sws_msg *m, sws_field *f, uint32_t cap, sws_head *out);

/* How the upstream's answer m is framed, for the answer given to the
 * client. req_head: the request was HEAD (no body follows whatever m says). */
typedef struct sws_h1c_framing {
    bool no_body;    /* HEAD, 204, 304 */
    bool has_length; /* Content-Length: length */
    bool to_close;   /* the body ends with the upstream's close */
    uint64_t length;
} sws_h1c_framing;
sws_h1c_framing sws_h1c_response_framing(const sws_msg *m, bool req_head);

#endif
