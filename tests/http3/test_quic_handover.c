/* Which process a datagram is for across a SIGUSR2 (server/quic_handover.c):
 * a DCID of ours names its generation at byte 0; an older one's goes to the
 * predecessor, unless it is an Initial (a client's own DCID, a new
 * connection) or not of a version we speak. */
#include "quic_handover.h"

#include "http3.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

/* A datagram of 60 bytes whose DCID (16 bytes) starts with gen. type: -1
 * a short header, else a v1 long header of that type (0 Initial, 2
 * Handshake). */
static size_t packet(uint8_t *p, int type, uint8_t gen, uint32_t version) {
    memset(p, 0x5a, 60);
    size_t at = 1;
    if (type < 0) {
        p[0] = 0x40;
    } else {
        p[0] = (uint8_t)(0xc0 | type << 4);
        p[1] = (uint8_t)(version >> 24), p[2] = (uint8_t)(version >> 16);
        p[3] = (uint8_t)(version >> 8), p[4] = (uint8_t)version;
        p[5] = SWS_H3_CID_LEN;
        at = 6;
    }
    p[at + SWS_QUIC_CID_GEN_BYTE] = gen;
    p[at + SWS_H3_CID_LOOP_BYTE] = 1;
    return 60;
}

static void older_generations_go_to_the_predecessor(void **state) {
    (void)state;
    uint8_t p[60];
    size_t n = packet(p, -1, 7, 1);
    assert_false(sws_quic_older_generation(p, n, 7)); /* ours */
    assert_true(sws_quic_older_generation(p, n, 8));  /* the predecessor's */
    n = packet(p, 2, 7, 1);                           /* a Handshake packet */
    assert_true(sws_quic_older_generation(p, n, 8));
    assert_false(sws_quic_older_generation(p, n, 7));
    n = packet(p, 0, 7, 1); /* an Initial: whatever its DCID, a new connection here */
    assert_false(sws_quic_older_generation(p, n, 8));
    n = packet(p, 2, 7, 0x6b3343cf); /* another version: negotiated here */
    assert_false(sws_quic_older_generation(p, n, 8));
    n = packet(p, 2, 7, 1);
    p[5] = 8; /* a DCID of another length: none of ours */
    assert_false(sws_quic_older_generation(p, n, 8));
    n = packet(p, -1, 7, 1);
    assert_false(sws_quic_older_generation(p, 16, 8)); /* too short for our DCID */
    assert_true(sws_quic_older_generation(p, 17, 8));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(older_generations_go_to_the_predecessor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
