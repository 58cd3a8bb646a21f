/* For the proxy's unit tests: a head parsed by sws_msg, as the proxy parses
 * it, with callbacks that accept everything. Include after cmocka.h. */
#ifndef SWS_TEST_MSG_PARSE_H
#define SWS_TEST_MSG_PARSE_H

#include <string.h>

#include "client_head.h"
#include "sws_msg.h"

static int test_on_head(void *u, sws_msg *m) {
    (void)u;
    (void)m;
    return 0;
}
static int test_on_body(void *u, const char *d, size_t n) {
    (void)u;
    (void)d;
    (void)n;
    return 0;
}
static int test_on_done(void *u, sws_msg *m) {
    (void)u;
    (void)m;
    return 0;
}

/* head parsed into a static message (the previous one is gone). A message
 * with a body to come (chunked, a length) is returned once its head is in. */
static inline const sws_msg *test_parse(llhttp_type_t type, const char *head) {
    static const sws_msg_cb cb = {test_on_head, test_on_body, test_on_done};
    static sws_msg msg;
    sws_msg_init(&msg, type, &cb, NULL);
    size_t used;
    assert_true(sws_msg_feed(&msg, head, strlen(head), &used) >= 0);
    return &msg;
}

/* m's head as the protocol-neutral view (client_head.h), in static storage
 * (the previous one is gone). */
static inline const sws_head *test_head(const sws_msg *m) {
    static sws_field f[SWS_MSG_FIELDS_MAX];
    static sws_head h;
    sws_h1_msg_head(m, f, SWS_MSG_FIELDS_MAX, &h);
    return &h;
}

#endif
