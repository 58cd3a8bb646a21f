/* exchange.c's sws_head_from_fields: the head HTTP/2 and HTTP/3 give a
 * scenario that takes the request, from the fields a stream kept. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "exchange.h"

static void assert_field(const sws_field *f, const char *name, const char *value) {
    assert_int_equal(f->name_len, strlen(name));
    assert_memory_equal(f->name, name, f->name_len);
    assert_int_equal(f->value_len, strlen(value));
    assert_memory_equal(f->value, value, f->value_len);
}

/* The pseudo-fields go: :path is the target, :authority a Host at the end,
 * the regular fields stay in their order. */
static void pseudo_fields_become_the_target_and_host(void **state) {
    (void)state;
    sws_field f[6] = {SWS_FIELD_LIT(":method", "POST"),
                      SWS_FIELD_LIT(":scheme", "https"),
                      SWS_FIELD_LIT(":authority", "a.test:8443"),
                      SWS_FIELD_LIT(":path", "/up?x=1"),
                      SWS_FIELD_LIT("accept", "*/*"),
                      SWS_FIELD_LIT("content-type", "text/plain")};
    sws_head h = {0};
    sws_head_from_fields(&h, f, 6, 6);
    assert_ptr_equal(h.f, f);
    assert_int_equal(h.nf, 3);
    assert_field(&h.f[0], "accept", "*/*");
    assert_field(&h.f[1], "content-type", "text/plain");
    assert_field(&h.f[2], "host", "a.test:8443");
    assert_int_equal(h.target_len, 7);
    assert_memory_equal(h.target, "/up?x=1", 7);
    assert_null(h.protocol);
}

/* A Host that came is kept as it came, and no second one is made. */
static void a_host_that_came_is_the_only_one(void **state) {
    (void)state;
    sws_field f[4] = {SWS_FIELD_LIT(":authority", "a.test"), SWS_FIELD_LIT(":path", "/"),
                      SWS_FIELD_LIT("host", "a.test"), SWS_FIELD_LIT("x-y", "z")};
    sws_head h = {0};
    sws_head_from_fields(&h, f, 4, 4);
    assert_int_equal(h.nf, 2);
    assert_field(&h.f[0], "host", "a.test");
    assert_field(&h.f[1], "x-y", "z");
}

/* An extended CONNECT (RFC 8441): :protocol is the protocol; no :authority,
 * no Host made. */
static void protocol_is_taken_out(void **state) {
    (void)state;
    sws_field f[4] = {SWS_FIELD_LIT(":method", "CONNECT"), SWS_FIELD_LIT(":protocol", "websocket"),
                      SWS_FIELD_LIT(":path", "/chat"),
                      SWS_FIELD_LIT("sec-websocket-version", "13")};
    sws_head h = {0};
    sws_head_from_fields(&h, f, 4, 4);
    assert_int_equal(h.nf, 1);
    assert_field(&h.f[0], "sec-websocket-version", "13");
    assert_int_equal(h.protocol_len, 9);
    assert_memory_equal(h.protocol, "websocket", 9);
    assert_memory_equal(h.target, "/chat", 5);
}

/* No fields at all: an empty head, nothing read past the array. */
static void no_fields_no_head_fields(void **state) {
    (void)state;
    sws_field f[1] = {SWS_FIELD_LIT("unused", "")};
    sws_head h = {0};
    sws_head_from_fields(&h, f, 0, 1);
    assert_int_equal(h.nf, 0);
    assert_null(h.target);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pseudo_fields_become_the_target_and_host),
        cmocka_unit_test(a_host_that_came_is_the_only_one),
        cmocka_unit_test(protocol_is_taken_out),
        cmocka_unit_test(no_fields_no_head_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
