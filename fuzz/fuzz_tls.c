/* Arbitrary bytes as a client's first flight into a server TLS engine on
 * memory BIOs (src/tls): whatever arrives, the engine answers WANT, plaintext
 * or a classified failure, never crashes, and leaves OpenSSL's error queue
 * empty. The first byte picks where the input is cut in two feeds. */
#include "sws_tls.h"
#include "tls_test_util.h"

#include <openssl/err.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sws_tls_server *srv;

static void setup(void) {
    static char dir[] = "/tmp/sws-fuzz-tls-XXXXXX";
    char cert[64], key[64], err[256];
    if (!mkdtemp(dir))
        abort();
    snprintf(cert, sizeof(cert), "%s/c.pem", dir);
    snprintf(key, sizeof(key), "%s/k.pem", dir);
    if (tt_make_cert(TT_EC, cert, key) < 0)
        abort();
    sws_tls_config t;
    sws_tls_config_defaults(&t);
    snprintf(t.cert, sizeof(t.cert), "%s", cert);
    snprintf(t.key, sizeof(t.key), "%s", key);
    srv = tt_server_new(&t, 1, sws_tls_keys_new(), err, sizeof(err));
    if (!srv) {
        fprintf(stderr, "fuzz_tls: %s\n", err);
        abort();
    }
    remove(cert);
    remove(key);
    remove(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!srv)
        setup();
    sws_tls_conn t;
    if (sws_tls_conn_init(&t, srv, 0) < 0)
        return 0;
    size_t cut = size ? (data[0] * size) / 256 : 0;
    char buf[16384];
    const uint8_t *parts[2] = {data, data + cut};
    size_t lens[2] = {cut, size - cut};
    for (int i = 0; i < 2; i++) {
        sws_tls_feed(&t, parts[i], lens[i]);
        int r;
        for (int k = 0; k < 64 && (r = sws_tls_read(&t, buf, sizeof(buf))) > 0; k++)
            ;
        while (sws_tls_take(&t, buf, sizeof(buf)) > 0)
            ;
    }
    sws_tls_write(&t, "HTTP/1.1 200 OK\r\n\r\n", 19);
    sws_tls_close_notify(&t);
    sws_tls_peer_eof(&t);
    while (sws_tls_take(&t, buf, sizeof(buf)) > 0)
        ;
    if (t.failed && (t.fail == SWS_TLS_FAIL_NONE || t.fail >= SWS_TLS_FAIL_N))
        abort();
    if (ERR_peek_error() != 0)
        abort(); /* the queue is per thread: a leftover would blame the next connection */
    sws_tls_conn_free(&t);
    return 0;
}
