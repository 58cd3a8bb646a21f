/* The quic host's cut of a GRO payload into datagrams (server/quic_gro.c):
 * exact cuts with an odd last segment, no coalescing (segment size 0), and
 * a few thousand random payloads and segment sizes, garbage ones included
 * (0, 1, the length, past it), whose cuts must cover every byte once, in
 * order, in datagrams of the segment size but the last, and end. */
#include "quic_gro.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

/* Cuts (len, seg) and checks the rules; returns how many datagrams. */
static size_t cut_and_check(const uint8_t *data, size_t len, uint16_t seg) {
    sws_gro_cut c;
    sws_gro_cut_init(&c, data, len, seg);
    const uint8_t *p;
    size_t n, at = 0, count = 0;
    size_t want_seg = seg && seg < len ? seg : len;
    while (sws_gro_cut_next(&c, &p, &n)) {
        assert_ptr_equal(p, data + at); /* in order, none skipped or twice */
        assert_true(n <= want_seg);
        at += n;
        count++;
        if (at < len)
            assert_int_equal(n, want_seg); /* all but the last are whole */
        assert_true(count <= len + 1);     /* it ends */
    }
    assert_int_equal(at, len);
    assert_false(sws_gro_cut_next(&c, &p, &n)); /* and stays ended */
    return count;
}

static void gro_cut_odd_last_segment(void **state) {
    (void)state;
    static uint8_t buf[65535];
    assert_int_equal(cut_and_check(buf, 3 * 1200 + 77, 1200), 4);
    assert_int_equal(cut_and_check(buf, 3 * 1200, 1200), 3); /* the last one whole */
    assert_int_equal(cut_and_check(buf, 1201, 1200), 2);     /* a last of one byte */
    assert_int_equal(cut_and_check(buf, 64 * 1024 - 1, 1024), 64);
}

static void gro_cut_no_or_garbage_segment_size(void **state) {
    (void)state;
    static uint8_t buf[4096];
    assert_int_equal(cut_and_check(buf, 1350, 0), 1);     /* not coalesced */
    assert_int_equal(cut_and_check(buf, 1350, 1350), 1);  /* the size of the payload */
    assert_int_equal(cut_and_check(buf, 1350, 65535), 1); /* past it */
    assert_int_equal(cut_and_check(buf, 0, 0), 1);        /* an empty datagram stays one */
    assert_int_equal(cut_and_check(buf, 0, 1200), 1);
    assert_int_equal(cut_and_check(buf, 10, 1), 10); /* tiny, but still a cut */
}

static void gro_cut_random_payloads(void **state) {
    (void)state;
    static uint8_t buf[65535];
    srand(33);
    for (int i = 0; i < 5000; i++) {
        size_t len = (size_t)rand() % (sizeof buf + 1);
        uint16_t seg;
        switch (rand() % 4) {
        case 0:
            seg = 0;
            break;
        case 1:
            seg = (uint16_t)(rand() % 65536);
            break;
        case 2:
            seg = (uint16_t)(1 + rand() % 1500);
            break;
        default:
            seg = (uint16_t)(len ? len - (size_t)rand() % (len < 8 ? len : 8) : 0);
            break;
        }
        size_t n = cut_and_check(buf, len, seg);
        size_t s = seg && seg < len ? seg : len;
        assert_int_equal(n, s ? (len + s - 1) / s : 1);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gro_cut_odd_last_segment),
        cmocka_unit_test(gro_cut_no_or_garbage_segment_size),
        cmocka_unit_test(gro_cut_random_payloads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
