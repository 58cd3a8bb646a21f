/* proxy_head.c: the request head the proxy sends upstream and the answer's
 * fields it sends back. Heads are parsed by sws_msg as the proxy parses them,
 * and the whole written head is compared, so a field that appears, moves or
 * goes is seen. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "client_head.h"
#include "msg_parse.h"

static sws_proxy_config cfg(int host_mode, const char *host, int forwarded) {
    sws_proxy_config p;
    memset(&p, 0, sizeof p);
    p.host_mode = (uint8_t)host_mode;
    p.forwarded = (uint8_t)forwarded;
    snprintf(p.host, sizeof p.host, "%s", host);
    return p;
}

/* The head for request `head` as a string; names_up in *up. */
static const char *request(const sws_proxy_config *p, const sws_route *r, const char *head,
                           bool chunked, bool *up) {
    static char out[4096];
    sws_px_request in = {.m = test_head(test_parse(HTTP_REQUEST, head)),
                         .cfg = p,
                         .route = r,
                         .peer = "192.0.2.7",
                         .upstream = "backend.internal:8080",
                         .client_tls = false,
                         .streams = chunked};
    size_t n = sws_px_request_head(&in, out, sizeof out - 1, up);
    assert_true(n > 0);
    out[n] = '\0';
    return out;
}

static void hop_by_hop_fields_never_go_upstream(void **st) {
    (void)st;
    sws_proxy_config p = cfg(SWS_HOST_CLIENT, "", SWS_FWD_OFF);
    bool up;
    assert_string_equal(request(&p, NULL,
                                "GET /a?b=1 HTTP/1.1\r\nHost: example.com\r\n"
                                "Connection: keep-alive, X-Secret\r\nKeep-Alive: timeout=5\r\n"
                                "TE: trailers\r\nUpgrade: h2c\r\nProxy-Connection: keep-alive\r\n"
                                "X-Secret: named by Connection\r\nX-Kept: 1\r\n"
                                "Expect: 100-continue\r\nContent-Length: 0\r\n\r\n",
                                false, &up),
                        "GET /a?b=1 HTTP/1.1\r\nHost: example.com\r\nX-Kept: 1\r\n"
                        "Content-Length: 0\r\nVia: 1.1 scalwsd\r\n"
                        "TE: trailers\r\nConnection: te\r\n\r\n");
    assert_false(up);
}

/* The client's TE goes no further, but its "trailers" is asked again in the
 * proxy's name (it relays trailers), named by Connection; other codings are
 * not. Trailer is end-to-end (RFC 9110 6.6.2) and goes on. */
static void te_trailers_is_asked_again_and_trailer_goes_on(void **st) {
    (void)st;
    sws_proxy_config p = cfg(SWS_HOST_CLIENT, "", SWS_FWD_OFF);
    bool up;
    assert_string_equal(request(&p, NULL,
                                "POST /rpc HTTP/1.1\r\nHost: a\r\nTE: gzip;q=0.5, Trailers\r\n"
                                "Trailer: X-Sum\r\nContent-Length: 0\r\n\r\n",
                                false, &up),
                        "POST /rpc HTTP/1.1\r\nHost: a\r\nTrailer: X-Sum\r\nContent-Length: 0\r\n"
                        "Via: 1.1 scalwsd\r\nTE: trailers\r\nConnection: te\r\n\r\n");
    assert_string_equal(
        request(&p, NULL, "GET / HTTP/1.1\r\nHost: a\r\nTE: gzip\r\n\r\n", false, &up),
        "GET / HTTP/1.1\r\nHost: a\r\nVia: 1.1 scalwsd\r\n\r\n");
    /* With a tunnel asked for, Connection names both. */
    const sws_head *m = test_head(test_parse(HTTP_REQUEST, "GET /chat HTTP/1.1\r\nHost: a\r\n"
                                                           "Connection: upgrade\r\nUpgrade: "
                                                           "websocket\r\nTE: trailers\r\n\r\n"));
    static char out[1024];
    sws_px_request in = {.m = m, .cfg = &p, .peer = "", .upstream = "b:1", .upgrade = true};
    size_t n = sws_px_request_head(&in, out, sizeof out - 1, &up);
    out[n] = '\0';
    assert_non_null(strstr(out, "TE: trailers\r\nConnection: upgrade, te\r\n\r\n"));
}

/* A tunnel asked for: the client's Upgrade goes on with Connection: upgrade
 * of our own; fields its Connection named still do not; Sec-WebSocket-* are
 * end-to-end. The request's head says upgrade, which a plain one does not. */
static void an_upgrade_goes_on_when_tunnelled(void **st) {
    (void)st;
    sws_proxy_config p = cfg(SWS_HOST_CLIENT, "", SWS_FWD_OFF);
    const char *head = "GET /chat HTTP/1.1\r\nHost: example.com\r\n"
                       "Connection: Upgrade, X-Secret\r\nUpgrade: websocket\r\n"
                       "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                       "Sec-WebSocket-Version: 13\r\nX-Secret: 1\r\n\r\n";
    const sws_head *m = test_head(test_parse(HTTP_REQUEST, head));
    assert_true(m->upgrade);
    static char out[4096];
    bool up;
    sws_px_request in = {
        .m = m, .cfg = &p, .peer = "192.0.2.7", .upstream = "b:1", .upgrade = true};
    size_t n = sws_px_request_head(&in, out, sizeof out - 1, &up);
    assert_true(n > 0);
    out[n] = '\0';
    assert_string_equal(out, "GET /chat HTTP/1.1\r\nHost: example.com\r\nUpgrade: websocket\r\n"
                             "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                             "Sec-WebSocket-Version: 13\r\nVia: 1.1 scalwsd\r\n"
                             "Connection: upgrade\r\n\r\n");
    /* Not tunnelled (upgrade = off, say): no Upgrade, no Connection. */
    in.upgrade = false;
    n = sws_px_request_head(&in, out, sizeof out - 1, &up);
    out[n] = '\0';
    assert_null(strstr(out, "pgrade"));
    /* HTTP/1.0's Upgrade is ignored (RFC 9110 7.8), and so is one on a
     * connection that closes after the answer. */
    assert_false(test_head(test_parse(HTTP_REQUEST, "GET / HTTP/1.0\r\nConnection: upgrade, "
                                                    "keep-alive\r\nUpgrade: websocket\r\n\r\n"))
                     ->upgrade);
    assert_false(test_head(test_parse(HTTP_REQUEST, "GET / HTTP/1.1\r\nHost: a\r\nConnection: "
                                                    "upgrade, close\r\nUpgrade: websocket\r\n\r\n"))
                     ->upgrade);
    /* Upgrade without Connection: upgrade is no upgrade (RFC 9110 7.8). */
    assert_false(test_head(test_parse(HTTP_REQUEST, "GET / HTTP/1.1\r\nHost: a\r\n"
                                                    "Upgrade: websocket\r\n\r\n"))
                     ->upgrade);
}

/* An HTTP/2 extended CONNECT (RFC 8441) asked upstream: GET, the client's
 * end-to-end fields but a Sec-WebSocket-Key of its own (ours replaces it),
 * Upgrade: the :protocol, our key, Connection: upgrade. */
static void an_extended_connect_goes_up_as_an_upgrade(void **st) {
    (void)st;
    sws_proxy_config p = cfg(SWS_HOST_CLIENT, "", SWS_FWD_OFF);
    sws_field f[] = {SWS_FIELD_LIT("sec-websocket-version", "13"),
                     SWS_FIELD_LIT("sec-websocket-protocol", "chat"),
                     SWS_FIELD_LIT("sec-websocket-key", "c2VudCBieSB0aGUgY2xpZW50"),
                     SWS_FIELD_LIT("host", "example.com")};
    sws_head m = {.f = f,
                  .nf = 4,
                  .target = "/chat",
                  .target_len = 5,
                  .method = HTTP_CONNECT,
                  .http_major = 2,
                  .protocol = "websocket",
                  .protocol_len = 9};
    static char out[4096];
    bool up;
    sws_px_request in = {.m = &m,
                         .cfg = &p,
                         .peer = "192.0.2.7",
                         .upstream = "b:1",
                         .upgrade = true,
                         .protocol = m.protocol,
                         .protocol_len = m.protocol_len,
                         .ws_key = "dGhlIHNhbXBsZSBub25jZQ=="};
    size_t n = sws_px_request_head(&in, out, sizeof out - 1, &up);
    assert_true(n > 0);
    out[n] = '\0';
    assert_string_equal(out, "GET /chat HTTP/1.1\r\nsec-websocket-version: 13\r\n"
                             "sec-websocket-protocol: chat\r\nhost: example.com\r\n"
                             "Via: 2 scalwsd\r\nUpgrade: websocket\r\n"
                             "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                             "Connection: upgrade\r\n\r\n");
}

/* RFC 8470 5.1: a request taken in early data (HTTP/3's 0-RTT) goes up
 * with Early-Data: 1, once, whether a hop before marked it or not; one not
 * taken so carries only what the client sent. */
static void early_data_is_marked_once(void **st) {
    (void)st;
    sws_proxy_config p = cfg(SWS_HOST_CLIENT, "", SWS_FWD_OFF);
    static char out[4096];
    bool up;
    sws_head m = *test_head(test_parse(HTTP_REQUEST, "GET /e HTTP/1.1\r\nHost: a\r\n\r\n"));
    m.early = true;
    sws_px_request in = {.m = &m, .cfg = &p, .peer = "", .upstream = "b:1"};
    size_t n = sws_px_request_head(&in, out, sizeof out - 1, &up);
    out[n] = '\0';
    assert_string_equal(out, "GET /e HTTP/1.1\r\nHost: a\r\nVia: 1.1 scalwsd\r\n"
                             "Early-Data: 1\r\n\r\n");
    m = *test_head(test_parse(HTTP_REQUEST, "GET /e HTTP/1.1\r\nHost: a\r\nEarly-Data: 1\r\n\r\n"));
    m.early = true;
    n = sws_px_request_head(&in, out, sizeof out - 1, &up);
    out[n] = '\0';
    assert_string_equal(out, "GET /e HTTP/1.1\r\nHost: a\r\nEarly-Data: 1\r\n"
                             "Via: 1.1 scalwsd\r\n\r\n");
    m.early = false;
    n = sws_px_request_head(&in, out, sizeof out - 1, &up);
    out[n] = '\0';
    assert_string_equal(out, "GET /e HTTP/1.1\r\nHost: a\r\nEarly-Data: 1\r\n"
                             "Via: 1.1 scalwsd\r\n\r\n");
    m = *test_head(test_parse(HTTP_REQUEST, "GET /e HTTP/1.1\r\nHost: a\r\n\r\n"));
    n = sws_px_request_head(&in, out, sizeof out - 1, &up);
    out[n] = '\0';
    assert_null(strstr(out, "Early-Data"));
}

/* [proxy] upgrade: tokens, lowercased; off; and the protocols a request may name. */
static void upgrade_key_and_the_protocols_it_allows(void **st) {
    (void)st;
    sws_proxy_config p;
    memset(&p, 0, sizeof p);
    char err[200];
    assert_int_equal(sws_proxy_parse_upgrade(&p, "WebSocket, h2c", err, sizeof err), 0);
    assert_string_equal(p.upgrade, "websocket,h2c");
    assert_true(sws_proxy_upgrade_allowed(&p, "websocket", 9));
    assert_true(sws_proxy_upgrade_allowed(&p, "WebSocket/13, h2c", 17));
    assert_false(sws_proxy_upgrade_allowed(&p, "websocket, foo", 14)); /* every one, or none */
    assert_false(sws_proxy_upgrade_allowed(&p, "", 0));
    assert_false(sws_proxy_upgrade_allowed(&p, "web", 3));
    assert_false(sws_proxy_upgrade_allowed(&p, "websocket;x", 11));
    assert_int_equal(sws_proxy_parse_upgrade(&p, "off", err, sizeof err), 0);
    assert_string_equal(p.upgrade, "");
    assert_false(sws_proxy_upgrade_allowed(&p, "websocket", 9));
    assert_int_equal(sws_proxy_parse_upgrade(&p, "web socket", err, sizeof err), -EINVAL);
    assert_int_equal(sws_proxy_parse_upgrade(&p, "websocket,,", err, sizeof err), 0);
    assert_string_equal(p.upgrade, "websocket");
    assert_int_equal(sws_proxy_parse_upgrade(&p, "a/b", err, sizeof err), -EINVAL);
}

static void host_as_configured(void **st) {
    (void)st;
    bool up;
    sws_proxy_config p = cfg(SWS_HOST_UPSTREAM, "", SWS_FWD_OFF);
    assert_string_equal(
        request(&p, NULL, "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n", false, &up),
        "GET / HTTP/1.1\r\nVia: 1.1 scalwsd\r\nHost: backend.internal:8080\r\n\r\n");
    assert_true(up); /* its Host names this upstream: no retry on another */
    p = cfg(SWS_HOST_FIXED, "app.example", SWS_FWD_OFF);
    assert_string_equal(
        request(&p, NULL, "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n", false, &up),
        "GET / HTTP/1.1\r\nVia: 1.1 scalwsd\r\nHost: app.example\r\n\r\n");
    assert_false(up);
    /* HTTP/1.0 without Host goes up as HTTP/1.1, which needs one; Via says
     * the protocol the request came with (RFC 9110 7.6.3). */
    p = cfg(SWS_HOST_CLIENT, "", SWS_FWD_OFF);
    assert_string_equal(
        request(&p, NULL, "GET /old HTTP/1.0\r\n\r\n", false, &up),
        "GET /old HTTP/1.1\r\nVia: 1.0 scalwsd\r\nHost: backend.internal:8080\r\n\r\n");
    assert_true(up);
}

static void forwarding_fields_and_chunked_body(void **st) {
    (void)st;
    bool up;
    sws_proxy_config p = cfg(SWS_HOST_CLIENT, "", SWS_FWD_X_FORWARDED);
    assert_string_equal(
        request(&p, NULL,
                "POST /f HTTP/1.1\r\nHost: h\r\nX-Forwarded-For: 6.6.6.6\r\n"
                "Transfer-Encoding: chunked\r\n\r\n",
                true, &up),
        "POST /f HTTP/1.1\r\nHost: h\r\nX-Forwarded-For: 192.0.2.7\r\nX-Forwarded-Proto: http\r\n"
        "X-Forwarded-Host: h\r\nVia: 1.1 scalwsd\r\nTransfer-Encoding: chunked\r\n\r\n");
}

static void strip_prefix_takes_the_route_off(void **st) {
    (void)st;
    static sws_route r;
    memset(&r, 0, sizeof r);
    strcpy(r.path, "/api/");
    r.path_len = 5;
    r.cfg.strip_prefix = true;
    bool up;
    sws_proxy_config p = cfg(SWS_HOST_CLIENT, "", SWS_FWD_OFF);
    assert_string_equal(request(&p, &r, "GET /api/x?q=1 HTTP/1.1\r\nHost: h\r\n\r\n", false, &up),
                        "GET /x?q=1 HTTP/1.1\r\nHost: h\r\nVia: 1.1 scalwsd\r\n\r\n");
    r.cfg.strip_prefix = false;
    assert_string_equal(request(&p, &r, "GET /api/x HTTP/1.1\r\nHost: h\r\n\r\n", false, &up),
                        "GET /api/x HTTP/1.1\r\nHost: h\r\nVia: 1.1 scalwsd\r\n\r\n");
}

static void a_head_that_does_not_fit_is_refused(void **st) {
    (void)st;
    sws_proxy_config p = cfg(SWS_HOST_CLIENT, "", SWS_FWD_X_FORWARDED);
    char out[64];
    bool up;
    sws_px_request in = {
        .m = test_head(test_parse(HTTP_REQUEST,
                                  "GET /a-long-enough-path HTTP/1.1\r\nHost: example.com\r\n\r\n")),
        .cfg = &p,
        .peer = "",
        .upstream = "u:1"};
    assert_int_equal(sws_px_request_head(&in, out, sizeof out, &up), 0);
}

static void answer_fields_and_chunks(void **st) {
    (void)st;
    const sws_head *m =
        test_head(test_parse(HTTP_RESPONSE, "HTTP/1.1 200 OK\r\nConnection: close\r\n"
                                            "Transfer-Encoding: chunked\r\nX-A: 1\r\n"
                                            "Set-Cookie: s=1\r\n\r\n"));
    sws_field f[8];
    uint32_t nf = sws_px_end_to_end_fields(m, f, 8);
    assert_int_equal(nf, 2);
    char out[256];
    uint32_t len = 0;
    sws_wbuf b = {out, &len, sizeof out - 1, false};
    for (uint32_t i = 0; i < nf; i++) {
        sws_wbuf_put(&b, f[i].name, f[i].name_len);
        sws_wbuf_put(&b, ": ", 2);
        sws_wbuf_put(&b, f[i].value, f[i].value_len);
        sws_wbuf_put(&b, "\r\n", 2);
    }
    sws_wbuf_chunk(&b, "hello", 5);
    sws_wbuf_chunk(&b, "", 0);
    assert_false(b.over);
    out[len] = '\0';
    assert_string_equal(out, "X-A: 1\r\nSet-Cookie: s=1\r\n5\r\nhello\r\n0\r\n\r\n");
    char line[24];
    assert_int_equal(sws_chunk_line(line, 0x1ff0a), 7);
    assert_memory_equal(line, "1ff0a\r\n", 7);
    /* What does not fit is not written, and says so. */
    uint32_t small = 0;
    sws_wbuf t = {out, &small, 4, false};
    sws_wbuf_puts(&t, "hello");
    assert_true(t.over);
    assert_int_equal(small, 0);
    /* Content-Length frames the answer (the protocol writes it from the
     * answer's length): it is not among the fields. */
    const sws_head *cl =
        test_head(test_parse(HTTP_RESPONSE, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
                                            "X-B: 2\r\n\r\n"));
    sws_field g[8];
    assert_int_equal(sws_px_end_to_end_fields(cl, g, 8), 1);
    assert_memory_equal(g[0].name, "X-B", 3);
}

/* An upstream's trailer section: read after the head into the same message,
 * and only the fields a trailer may carry go on (RFC 9110 6.5.1). */
static void trailer_fields_that_may_go_on(void **st) {
    (void)st;
    const sws_msg *m = test_parse(HTTP_RESPONSE, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
                                                 "X-Head: 1\r\n\r\n"
                                                 "3\r\nabc\r\n0\r\n"
                                                 "X-Checksum: sha256=abc\r\nContent-Length: 99\r\n"
                                                 "set-cookie: a=b\r\nConnection: close\r\n"
                                                 "Transfer-Encoding: gzip\r\nHost: evil\r\n"
                                                 "X-Timing: 12ms\r\n\r\n");
    assert_int_equal(m->head_nf, 2);
    assert_int_equal(m->nf, 9);
    sws_field f[SWS_MSG_FIELDS_MAX];
    assert_int_equal(sws_h1c_trailer_fields(m, f, SWS_MSG_FIELDS_MAX), 2);
    assert_int_equal(f[0].name_len, 10);
    assert_memory_equal(f[0].name, "X-Checksum", 10);
    assert_memory_equal(f[0].value, "sha256=abc", 10);
    assert_memory_equal(f[1].name, "X-Timing", 8);
    /* The head's own fields are never taken for trailers. */
    m = test_parse(HTTP_RESPONSE, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
                                  "X-Head: 1\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
    assert_int_equal(sws_h1c_trailer_fields(m, f, SWS_MSG_FIELDS_MAX), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hop_by_hop_fields_never_go_upstream),
        cmocka_unit_test(an_upgrade_goes_on_when_tunnelled),
        cmocka_unit_test(an_extended_connect_goes_up_as_an_upgrade),
        cmocka_unit_test(early_data_is_marked_once),
        cmocka_unit_test(upgrade_key_and_the_protocols_it_allows),
        cmocka_unit_test(host_as_configured),
        cmocka_unit_test(forwarding_fields_and_chunked_body),
        cmocka_unit_test(strip_prefix_takes_the_route_off),
        cmocka_unit_test(a_head_that_does_not_fit_is_refused),
        cmocka_unit_test(answer_fields_and_chunks),
        cmocka_unit_test(trailer_fields_that_may_go_on),
        cmocka_unit_test(te_trailers_is_asked_again_and_trailer_goes_on),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
