/* Fuzz target for the HTTP/3 engine's datagram input: the input is a run
 * of datagrams, each a 2-byte big-endian length and its bytes, fed to one
 * endpoint (sws_h3_input) from one of four client addresses (the length's
 * top two bits pick it), on a clock that moves 10 ms per datagram, with
 * the respond scenario behind it. The endpoint lives for the process (its
 * certificate is made once); each input ends with its timers run an hour
 * on, so that every connection it opened has ended before the next.
 * What must hold: no crash, no sanitizer report, no leak; no datagram the
 * engine writes is larger than SWS_H3_MAX_DATAGRAM or empty; no more
 * connections open than the endpoint allows; none left open after the
 * idle timeout; every stream back in the table. Seeds (corpus/h3): real
 * clients' first flights (an Initial with a ClientHello, decryptable by
 * anyone: its keys come from its own DCID), a version negotiation trigger,
 * short headers for unknown connections, and junk. */
#include "http3.h"
#include "sws.h"
#include "tls_test_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static sws_h3_endpoint *ep;
static sws_worker *w;
static sws_scenario_cfg cfg;
static sws_scenario sc;
static uint64_t clock_ns = 1000000000ull;
static char dir[] = "/tmp/sws-fuzz-h3-XXXXXX";
static char cert[64], key[64];

static void check(bool ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "fuzz_h3: %s\n", what);
        abort();
    }
}

static int sink(void *ud, const struct sockaddr *local, socklen_t local_len,
                const struct sockaddr *remote, socklen_t remote_len, unsigned ecn, const uint8_t *d,
                size_t len) {
    (void)ud;
    (void)local;
    (void)local_len;
    (void)remote;
    (void)remote_len;
    (void)ecn;
    (void)d;
    check(len > 0 && len <= SWS_H3_MAX_DATAGRAM, "a datagram out of bounds");
    return 0;
}

static sws_scenario *route(void *ud, sws_exchange *x, const sws_http_request *req) {
    (void)ud;
    (void)x;
    (void)req;
    return &sc;
}

static void cleanup(void) {
    sws_h3_endpoint_free(ep);
    sws_respond_ops.free(w, &sc);
    free(w);
    unlink(cert);
    unlink(key);
    rmdir(dir);
}

static void setup(void) {
    check(mkdtemp(dir) != NULL, "mkdtemp");
    snprintf(cert, sizeof(cert), "%s/cert.pem", dir);
    snprintf(key, sizeof(key), "%s/key.pem", dir);
    check(tt_make_cert(TT_EC, cert, key) == 0, "no certificate");
    w = calloc(1, sizeof(*w));
    cfg.scenario = SWS_SCENARIO_RESPOND;
    cfg.status = 200;
    cfg.body = "fuzz\n";
    cfg.body_len = 5;
    sc.ops = &sws_respond_ops;
    sc.cfg = &cfg;
    check(sws_respond_ops.init(w, &sc) == 0, "respond init");
    sws_h3_params p;
    sws_h3_params_default(&p);
    p.max_connections = 8;
    sws_h3_settings s = {.cert_file = cert,
                         .key_file = key,
                         .send = sink,
                         .w = w,
                         .route = route,
                         .limits = SWS_HTTP_DEFAULT_LIMITS,
                         .params = &p,
                         .max_streams = 64};
    char err[256];
    check(sws_h3_endpoint_new(&ep, &s, err, sizeof(err)) == 0, err);
    atexit(cleanup);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!ep)
        setup();
    struct sockaddr_in local = {
        .sin_family = AF_INET, .sin_port = htons(443), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    while (size >= 2) {
        size_t len = ((size_t)(data[0] & 0x3f) << 8) | data[1];
        struct sockaddr_in peer = {.sin_family = AF_INET,
                                   .sin_port = htons((uint16_t)(50000 + (data[0] >> 6))),
                                   .sin_addr.s_addr = htonl(0x7f000002)};
        data += 2;
        size -= 2;
        if (len > size)
            len = size;
        clock_ns += 10000000ull;
        sws_h3_input(ep, data, len, (struct sockaddr *)&peer, sizeof(peer),
                     (struct sockaddr *)&local, sizeof(local), 0, clock_ns);
        check(sws_h3_stats_of(ep).open_connections <= 8, "past max_connections");
        if (sws_h3_next_expiry(ep) <= clock_ns)
            sws_h3_on_timer(ep, clock_ns);
        data += len;
        size -= len;
    }
    /* An hour on: every connection has timed out (idle, or its closing
     * period), whatever state the input left it in. */
    for (int i = 0; i < 16 && sws_h3_stats_of(ep).open_connections; i++) {
        clock_ns += 3600ull * 1000000000ull;
        sws_h3_on_timer(ep, clock_ns);
    }
    check(sws_h3_stats_of(ep).open_connections == 0, "a connection outlived its idle timeout");
    check(sws_h3_stats_of(ep).open_streams == 0, "a stream outlived its connection");
    return 0;
}
