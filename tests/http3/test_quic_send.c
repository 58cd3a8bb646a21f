/* The quic listener's send arena alone (src/scalws/server/quic_send.c) on a
 * real loop and UDP socket, its datagrams read back from a plain socket on
 * 127.0.0.1: a burst to one peer leaves as one GSO send and arrives as the
 * same datagrams in order; a change of peer, a longer datagram or one after a
 * shorter one ends a run; with GSO off every datagram is a send; a full
 * arena drops (-EAGAIN) and takes datagrams again once its sends complete.
 * Run on every backend (TURNLOOP_BACKEND), with and without GSO in the
 * kernel (TL_LOOP_NO_UDP_GSO). Every wait is bounded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka.h needs the four headers above first. */
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "quic_send.h"
#include "token.h"
#include "turnloop.h"

#define DGRAM 1452

typedef struct fixture {
    tl_loop *loop;
    tl_handle udp;
    sws_quic_tx *tx;
    int peer[2]; /* plain sockets the datagrams go to */
    struct sockaddr_in peer_addr[2];
    bool kernel_gso;
    uint64_t completed; /* sends completed so far */
} fixture;

static int open_peer(struct sockaddr_in *a) {
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    *a = (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)a, sizeof(*a)), 0);
    socklen_t l = sizeof(*a);
    assert_int_equal(getsockname(fd, (struct sockaddr *)a, &l), 0);
    return fd;
}

static fixture *setup(unsigned loop_flags, bool gso) {
    fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    tl_loop_options o = {.flags = loop_flags};
    assert_int_equal(tl_loop_new(&f->loop, &o), 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(tl_udp_open(f->loop, (struct sockaddr *)&a, sizeof(a), NULL, &f->udp), 0);
    f->kernel_gso = tl_loop_features(f->loop) & TL_FEATURE_UDP_GSO;
    assert_non_null(f->tx = sws_quic_tx_new());
    sws_quic_tx_bind(f->tx, f->loop, f->udp, gso && f->kernel_gso);
    for (int i = 0; i < 2; i++)
        f->peer[i] = open_peer(&f->peer_addr[i]);
    return f;
}

static void teardown(fixture *f) {
    sws_quic_tx_free(f->tx);
    tl_loop_free(f->loop);
    close(f->peer[0]);
    close(f->peer[1]);
    free(f);
}

/* The datagram numbered n: its length and bytes, each one its own. */
static size_t make(uint8_t *p, unsigned n, size_t len) {
    for (size_t i = 0; i < len; i++)
        p[i] = (uint8_t)(n * 31 + i);
    return len;
}

static int send_to(fixture *f, int peer, unsigned n, size_t len) {
    uint8_t b[DGRAM];
    make(b, n, len);
    return sws_quic_tx_send(f->tx, NULL, 0, (struct sockaddr *)&f->peer_addr[peer],
                            sizeof(f->peer_addr[peer]), 2, b, len);
}

/* Flushes, then turns until every send made has completed (bounded). */
static void complete(fixture *f) {
    sws_quic_tx_flush(f->tx);
    tl_completion cq[64];
    uint64_t want = sws_quic_tx_stats_of(f->tx).sends;
    for (int turns = 0; turns < 1000 && f->completed < want; turns++) {
        int n = tl_loop_turn(f->loop, 10, cq, 64);
        assert_true(n >= 0);
        for (int i = 0; i < n; i++) {
            assert_int_equal(cq[i].kind, TL_OP_UDP_SEND);
            assert_int_equal(sws_token_tag(cq[i].token), SWS_T_UDP_SEND);
            assert_true(cq[i].res > 0);
            sws_quic_tx_done(f->tx, sws_token_index(cq[i].token));
            f->completed++;
        }
    }
    assert_int_equal(f->completed, want);
}

/* Reads datagram n of length len from peer (within 5 s) and checks it. */
static void expect(fixture *f, int peer, unsigned n, size_t len) {
    struct pollfd p = {.fd = f->peer[peer], .events = POLLIN};
    assert_int_equal(poll(&p, 1, 5000), 1);
    uint8_t got[DGRAM + 1], want[DGRAM];
    ssize_t r = recv(f->peer[peer], got, sizeof(got), 0);
    assert_int_equal(r, (ssize_t)len);
    make(want, n, len);
    assert_memory_equal(got, want, len);
}

static void burst_is_one_send(void **state) {
    (void)state;
    fixture *f = setup(0, true);
    for (unsigned i = 0; i < 20; i++)
        assert_int_equal(send_to(f, 0, i, DGRAM), 0);
    assert_int_equal(send_to(f, 0, 20, 700), 0); /* the last of a burst, shorter */
    complete(f);
    for (unsigned i = 0; i < 20; i++)
        expect(f, 0, i, DGRAM);
    expect(f, 0, 20, 700);
    sws_quic_tx_stats st = sws_quic_tx_stats_of(f->tx);
    assert_int_equal(st.dropped, 0);
    assert_int_equal(st.sends, f->kernel_gso ? 1 : 21);
    assert_int_equal(st.batches, f->kernel_gso ? 1 : 0);
    teardown(f);
}

static void runs_end_where_they_must(void **state) {
    (void)state;
    fixture *f = setup(0, true);
    /* A, A, then B (another peer), then A: three runs. Then on A: 1000, 1000,
     * 800, 1000 (after a shorter one) and 1200 (longer): three more. */
    unsigned n = 0;
    assert_int_equal(send_to(f, 0, n++, 1000), 0);
    assert_int_equal(send_to(f, 0, n++, 1000), 0);
    assert_int_equal(send_to(f, 1, n++, 1000), 0);
    assert_int_equal(send_to(f, 0, n++, 1000), 0);
    assert_int_equal(send_to(f, 0, n++, 1000), 0);
    assert_int_equal(send_to(f, 0, n++, 800), 0);
    assert_int_equal(send_to(f, 0, n++, 1000), 0);
    assert_int_equal(send_to(f, 0, n++, 1200), 0);
    complete(f);
    static const struct {
        int peer;
        size_t len;
    } want[] = {{0, 1000}, {0, 1000}, {1, 1000}, {0, 1000},
                {0, 1000}, {0, 800},  {0, 1000}, {0, 1200}};
    for (unsigned i = 0; i < 8; i++)
        expect(f, want[i].peer, i, want[i].len);
    sws_quic_tx_stats st = sws_quic_tx_stats_of(f->tx);
    /* GSO: [0 1] [2] [3 4 5] [6] [7]; else one each. */
    assert_int_equal(st.sends, f->kernel_gso ? 5 : 8);
    assert_int_equal(st.batches, f->kernel_gso ? 2 : 0);
    teardown(f);
}

static void gso_off_sends_each(void **state) {
    (void)state;
    fixture *f = setup(0, false);
    for (unsigned i = 0; i < 10; i++)
        assert_int_equal(send_to(f, 0, i, DGRAM), 0);
    complete(f);
    for (unsigned i = 0; i < 10; i++)
        expect(f, 0, i, DGRAM);
    sws_quic_tx_stats st = sws_quic_tx_stats_of(f->tx);
    assert_int_equal(st.sends, 10);
    assert_int_equal(st.batches, 0);
    teardown(f);
}

/* Without completions the arena fills: datagrams are dropped, never written
 * over bytes still queued; once the sends complete it takes as many again. */
static void full_arena_drops_then_recovers(void **state) {
    (void)state;
    fixture *f = setup(0, true);
    unsigned taken[2] = {0, 0};
    for (int round = 0; round < 2; round++) {
        for (unsigned i = 0; i < 2000; i++) {
            int rc = send_to(f, 0, i, DGRAM);
            if (rc == -EAGAIN)
                break;
            assert_int_equal(rc, 0);
            taken[round]++;
            if (i % 40 == 39) /* a turn's end: what it gathered goes out */
                sws_quic_tx_flush(f->tx);
        }
        assert_true(taken[round] < 2000);
        complete(f);
        uint8_t buf[DGRAM + 1]; /* what the receiver's small queue kept */
        while (recv(f->peer[0], buf, sizeof(buf), MSG_DONTWAIT) > 0)
            ;
    }
    assert_int_equal(taken[0], taken[1]);
    assert_true(sws_quic_tx_stats_of(f->tx).dropped >= 2);
    teardown(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(burst_is_one_send),
        cmocka_unit_test(runs_end_where_they_must),
        cmocka_unit_test(gso_off_sends_each),
        cmocka_unit_test(full_arena_drops_then_recovers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
