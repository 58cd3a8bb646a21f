/* The quic listener's send arena as a ring (src/scalws/server/quic_send.c),
 * against a tl_udp_send of the test's own (linked with --wrap): each send's
 * bytes are read only when the test completes it, as the kernel may read them
 * any time before the completion. 200,000 datagrams of random lengths to two
 * peers, flushed and completed at random moments (in order, and now and then
 * the second oldest first): every datagram the arena took arrives in order,
 * its bytes whole (no later batch was written over a send not yet
 * completed), every GSO send is segments of one size but the last, and the
 * arena refuses (-EAGAIN) only when it is full. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka.h needs the four headers above first. */
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "quic_send.h"
#include "token.h"
#include "turnloop.h"

#define DGRAM 1452
#define MAXQ 4096

/* ---- the fake tl_udp_send: sends queued, read at completion ---------------------- */

typedef struct fake_send {
    const uint8_t *data;
    uint32_t len;
    uint16_t seg;
    uint64_t token;
    struct sockaddr_in dest;
} fake_send;

static fake_send g_q[MAXQ];
static unsigned g_qhead, g_qlen; /* FIFO of sends not completed */
static const uint8_t *g_last;    /* the last send's bytes: below it again is a wrap */
static uint64_t g_wraps;

int __wrap_tl_udp_send(tl_loop *loop, tl_handle h, const tl_udp_send_args *a, uint64_t token,
                       tl_op *out);
int __wrap_tl_udp_send(tl_loop *loop, tl_handle h, const tl_udp_send_args *a, uint64_t token,
                       tl_op *out) {
    (void)loop;
    (void)h;
    (void)out;
    assert_true(g_qlen < MAXQ);
    assert_true(a->len > 0 && a->len <= SWS_QUIC_BATCH_MAX);
    assert_true(a->segment_size == 0 || a->len > a->segment_size);
    assert_true(a->segment_size == 0 ||
                (a->len + a->segment_size - 1) / a->segment_size <= TL_UDP_MAX_SEGMENTS);
    g_wraps += g_last && (const uint8_t *)a->data < g_last;
    g_last = a->data;
    fake_send *f = &g_q[(g_qhead + g_qlen++) % MAXQ];
    *f = (fake_send){.data = a->data, .len = a->len, .seg = a->segment_size, .token = token};
    memcpy(&f->dest, a->dest, sizeof(f->dest));
    return 0;
}

/* ---- what the arena took, in order ------------------------------------------------ */

typedef struct want {
    uint32_t seq, len;
    int peer;
} want;

static want g_w[1 << 16];
static unsigned g_whead, g_wlen;
static struct sockaddr_in g_peer[2];
static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(uint32_t n) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng % n);
}

static void fill(uint8_t *p, uint32_t seq, uint32_t len) {
    for (uint32_t i = 0; i < len; i++)
        p[i] = (uint8_t)(seq * 131 + i * 7 + (seq >> 8));
}

/* Checks one datagram of a send against the next one the arena took. */
static void check_dgram(const fake_send *f, const uint8_t *p, uint32_t len) {
    assert_true(g_wlen > 0);
    want w = g_w[g_whead];
    g_whead = (g_whead + 1) % (1 << 16);
    g_wlen--;
    assert_int_equal(len, w.len);
    assert_memory_equal(&f->dest, &g_peer[w.peer], sizeof(f->dest));
    uint8_t b[DGRAM];
    fill(b, w.seq, w.len);
    assert_memory_equal(p, b, len);
}

/* Reads every datagram of send f (its bytes as they are now) and checks them. */
static void check_send(const fake_send *f) {
    uint32_t seg = f->seg ? f->seg : f->len;
    for (uint32_t off = 0; off < f->len; off += seg)
        check_dgram(f, f->data + off, f->len - off < seg ? f->len - off : seg);
}

/* Completes the oldest send, or with swap the two oldest, the second one's
 * completion first (the arena gives space back in queue order all the same). */
static void complete(sws_quic_tx *tx, bool swap) {
    fake_send *a = &g_q[g_qhead], *b = &g_q[(g_qhead + 1) % MAXQ];
    check_send(a);
    if (swap) {
        check_send(b);
        sws_quic_tx_done(tx, sws_token_index(b->token));
    }
    sws_quic_tx_done(tx, sws_token_index(a->token));
    unsigned n = swap ? 2 : 1;
    g_qhead = (g_qhead + n) % MAXQ;
    g_qlen -= n;
}

static void ring_keeps_every_byte(void **state) {
    (void)state;
    for (int i = 0; i < 2; i++)
        g_peer[i] = (struct sockaddr_in){.sin_family = AF_INET,
                                         .sin_port = htons((uint16_t)(4000 + i)),
                                         .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    sws_quic_tx *tx = sws_quic_tx_new();
    assert_non_null(tx);
    sws_quic_tx_bind(tx, NULL, 0, true);
    uint64_t refused = 0, taken = 0;
    uint8_t b[DGRAM];
    for (uint32_t seq = 0; seq < 200000; seq++) {
        /* Mostly full datagrams to peer 0, as a download's burst. */
        uint32_t r = rnd(100);
        uint32_t len = r < 80 ? DGRAM : r < 90 ? 1 + rnd(DGRAM) : 1200;
        int peer = rnd(100) < 90 ? 0 : 1;
        fill(b, seq, len);
        int rc = sws_quic_tx_send(tx, NULL, 0, (struct sockaddr *)&g_peer[peer], sizeof(g_peer[0]),
                                  2, b, len);
        if (rc == -EAGAIN) {
            /* Only a full arena refuses: something is in flight to give back. */
            assert_true(g_qlen > 0);
            refused++;
        } else {
            assert_int_equal(rc, 0);
            taken++;
            g_w[(g_whead + g_wlen++) % (1 << 16)] = (want){.seq = seq, .len = len, .peer = peer};
        }
        uint32_t act = rnd(100);
        if (act < 5)
            sws_quic_tx_flush(tx); /* a turn's end */
        if (act < 6 && g_qlen) {   /* completions come, a few at a time */
            unsigned n = 1 + rnd(g_qlen < 4 ? g_qlen : 4);
            while (n-- && g_qlen)
                complete(tx, g_qlen >= 2 && rnd(8) == 0);
        }
    }
    sws_quic_tx_flush(tx);
    while (g_qlen)
        complete(tx, false);
    assert_int_equal(g_wlen, 0); /* every datagram taken was sent and checked */
    sws_quic_tx_stats st = sws_quic_tx_stats_of(tx);
    assert_int_equal(st.dropped, refused);
    assert_true(st.batches > 0);
    assert_true(refused > 0); /* the arena did fill */
    print_message("taken %" PRIu64 ", refused %" PRIu64 ", sends %" PRIu64 ", GSO %" PRIu64
                  ", wraps %" PRIu64 "\n",
                  taken, refused, st.sends, st.batches, g_wraps);
    assert_true(taken > 50000);
    assert_true(g_wraps > 10); /* the arena went round */
    sws_quic_tx_free(tx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ring_keeps_every_byte),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
