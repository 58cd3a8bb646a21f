/* The WebSocket handshake's key and accept value (ws_key.h), on OpenSSL's
 * SHA-1, base64 and random generator, which the server links for TLS. */
#include "ws_key.h"

#include <errno.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

static const char ws_guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

int sws_ws_key_new(char out[SWS_WS_KEY_LEN + 1]) {
    unsigned char raw[16];
    if (RAND_bytes(raw, sizeof(raw)) != 1)
        return -EIO;
    EVP_EncodeBlock((unsigned char *)out, raw, sizeof(raw));
    return 0;
}

void sws_ws_accept_of(const char *key, char out[SWS_WS_ACCEPT_LEN + 1]) {
    unsigned char in[SWS_WS_KEY_LEN + sizeof(ws_guid)];
    size_t kl = strnlen(key, SWS_WS_KEY_LEN);
    memcpy(in, key, kl);
    memcpy(in + kl, ws_guid, sizeof(ws_guid) - 1);
    unsigned char md[SHA_DIGEST_LENGTH];
    SHA1(in, kl + sizeof(ws_guid) - 1, md);
    EVP_EncodeBlock((unsigned char *)out, md, sizeof(md));
}

bool sws_ws_accept_matches(const char *key, const char *value, size_t n) {
    while (n && (*value == ' ' || *value == '\t')) {
        value++;
        n--;
    }
    while (n && (value[n - 1] == ' ' || value[n - 1] == '\t'))
        n--;
    char want[SWS_WS_ACCEPT_LEN + 1];
    sws_ws_accept_of(key, want);
    return n == SWS_WS_ACCEPT_LEN && memcmp(want, value, n) == 0;
}
