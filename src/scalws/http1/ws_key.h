/* The WebSocket opening handshake's key and its proof (RFC 6455 4.1, 4.2.2),
 * for the proxy that turns an HTTP/2 extended CONNECT (RFC 8441) into an
 * HTTP/1.1 upgrade: it asks the upstream with a key of its own and checks
 * the upstream's answer against it. Pure functions, any thread. */
#ifndef SWS_WS_KEY_H
#define SWS_WS_KEY_H

#include <stdbool.h>
#include <stddef.h>

/* base64 of 16 bytes, and its NUL */
#define SWS_WS_KEY_LEN 24
/* base64 of a SHA-1 digest (20 bytes) */
#define SWS_WS_ACCEPT_LEN 28

/* A fresh Sec-WebSocket-Key: 16 random bytes, base64, NUL-terminated into
 * out. 0, or -EIO when no random bytes could be had. */
int sws_ws_key_new(char out[SWS_WS_KEY_LEN + 1]);
/* The Sec-WebSocket-Accept an upstream owes for key (base64 of the SHA-1
 * of the key and RFC 6455's GUID), NUL-terminated into out. */
void sws_ws_accept_of(const char *key, char out[SWS_WS_ACCEPT_LEN + 1]);
/* Whether value[0..n) is that answer for key (surrounding blanks allowed). */
bool sws_ws_accept_matches(const char *key, const char *value, size_t n);

#endif
