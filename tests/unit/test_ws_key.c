/* ws_key.c: the WebSocket handshake's key and its proof (RFC 6455 4.1, 4.2.2),
 * which the proxy checks on an upstream's 101 to an extended CONNECT. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ws_key.h"

/* RFC 6455 1.3's example: the key and the accept value it asks for. */
static void the_rfc_example_is_proved(void **st) {
    (void)st;
    char acc[SWS_WS_ACCEPT_LEN + 1];
    sws_ws_accept_of("dGhlIHNhbXBsZSBub25jZQ==", acc);
    assert_string_equal(acc, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    const char *v = " s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\t";
    assert_true(sws_ws_accept_matches("dGhlIHNhbXBsZSBub25jZQ==", v, strlen(v)));
    /* Another key's, a truncated one, a case changed, none: no proof. */
    v = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";
    assert_false(sws_ws_accept_matches("AAAAAAAAAAAAAAAAAAAAAA==", v, strlen(v)));
    assert_false(sws_ws_accept_matches("dGhlIHNhbXBsZSBub25jZQ==", v, strlen(v) - 1));
    v = "S3pPLMBiTxaQ9kYGzzhZRbK+xOo=";
    assert_false(sws_ws_accept_matches("dGhlIHNhbXBsZSBub25jZQ==", v, strlen(v)));
    assert_false(sws_ws_accept_matches("dGhlIHNhbXBsZSBub25jZQ==", "", 0));
}

/* A fresh key: 16 bytes in base64 (24 characters, "==" at the end), a new
 * one each time. */
static void keys_are_fresh(void **st) {
    (void)st;
    char a[SWS_WS_KEY_LEN + 1], b[SWS_WS_KEY_LEN + 1];
    assert_int_equal(sws_ws_key_new(a), 0);
    assert_int_equal(sws_ws_key_new(b), 0);
    assert_int_equal(strlen(a), SWS_WS_KEY_LEN);
    assert_memory_equal(a + 22, "==", 2);
    assert_string_not_equal(a, b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_rfc_example_is_proved),
        cmocka_unit_test(keys_are_fresh),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
