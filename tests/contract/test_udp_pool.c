/* The datagram pool (tl_loop_options.udp_recv_buffers): GRO's 64 KiB buffers
 * for the loop's UDP receives alone. Coalesced datagrams arrive with their
 * segment size in the pool's buffers, a stream on the same loop keeps the
 * loop's own, the pool's exhaustion ends the receive with -ENOBUFS and loses
 * nothing, and a kernel without UDP_GRO (TL_LOOP_NO_UDP_GRO) is refused and
 * served one datagram per receive. */
#include "harness.h"
#include "tests.h"
#include "udp_util.h"

#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#define STREAM_BUFFERS 8
#define GRO_ROOM (TL_UDP_HEADROOM + 65535)

/* A loop with STREAM_BUFFERS 16 KiB buffers and a datagram pool of `pool`. */
static tl_loop *pool_loop(unsigned flags, uint32_t pool) {
    tl_loop_options o = {.backend = test_backend,
                         .flags = flags,
                         .recv_buffers = STREAM_BUFFERS,
                         .udp_recv_buffers = pool};
    tl_loop *loop = NULL;
    int err = tl_loop_new(&loop, &o);
    if (err < 0)
        fail_msg("tl_loop_new: %s", tl_strerror(err));
    return loop;
}

typedef struct dgram {
    uint32_t id, len;
    tl_udp_meta meta;
    char head;
} dgram;

/* Turns until n datagrams (each released after it is read) or a final. */
static int recv_n(tl_loop *loop, dgram *out, int n, int *final_res) {
    int got = 0;
    uint64_t end = ms_now() + 5000;
    while (got < n && ms_now() < end) {
        tl_completion c[16];
        int k = tl_loop_turn(loop, 50, c, 16);
        assert_true(k >= 0);
        for (int i = 0; i < k; i++) {
            if (c[i].kind != TL_OP_UDP_RECV)
                continue;
            if (c[i].flags & TL_CQE_BUFFER) {
                assert_true(got < n);
                out[got].id = c[i].u.buf.id;
                out[got].len = (uint32_t)c[i].res;
                out[got].head = c[i].res > 0 ? *(const char *)c[i].u.buf.data : 0;
                assert_int_equal(tl_udp_meta_get(loop, &c[i], &out[got].meta), 0);
                tl_buffer_release(loop, c[i].u.buf.id);
                got++;
            }
            if ((c[i].flags & TL_CQE_FINAL) && final_res) {
                *final_res = c[i].res;
                return got;
            }
        }
    }
    return got;
}

static tl_sockaddr sockname_of(tl_loop *loop, tl_handle h) {
    struct sockaddr_storage ss;
    socklen_t l = sizeof ss;
    assert_int_equal(tl_handle_sockname(loop, h, &ss, &l), 0);
    tl_sockaddr a;
    memcpy(&a, &ss, l < sizeof a ? l : sizeof a);
    return a;
}

static void gso_send(tl_loop *loop, tl_handle from, const tl_sockaddr *to, const void *p,
                     uint32_t len, uint16_t seg) {
    tl_udp_send_args s = {
        .data = p, .len = len, .segment_size = seg, .dest = &to->sa, .dest_len = sizeof to->in};
    assert_int_equal(tl_udp_send(loop, from, &s, 9, NULL), 0);
}

/* GRO turned on by tl_udp_gro on an open socket (as a host does for the
 * sockets of tl_route_udp_cid): a GSO send stays one payload, in a buffer of
 * the pool, with its segment size; the streams' 16 KiB buffers alone could
 * not take it, and GRO is refused on a loop without the pool. */
static void udp_pool_gro_receives_coalesced_datagrams(void **state) {
    (void)state;
    tl_loop *loop = pool_loop(0, 4);
    tl_sockaddr sa;
    tl_handle a = udp_on(loop, AF_INET, "127.0.0.1", &sa);
    tl_handle b = udp_on(loop, AF_INET, "127.0.0.1", &sa);
    tl_sockaddr sb = sockname_of(loop, b);
    assert_int_equal(tl_udp_gro(loop, b, 1), 0);
    assert_int_equal(tl_udp_recv(loop, b, 1, NULL), 0);
    static char payload[5 * 1200 + 77]; /* an odd last segment */
    for (size_t i = 0; i < sizeof payload; i++)
        payload[i] = (char)('a' + i / 1200);
    gso_send(loop, a, &sb, payload, sizeof payload, 1200);
    dgram d[6];
    tl_loop_stats st;
    if (tl_loop_features(loop) & TL_FEATURE_UDP_GSO) {
        assert_int_equal(recv_n(loop, d, 1, NULL), 1);
        assert_int_equal(d[0].len, sizeof payload);
        assert_int_equal(d[0].meta.segment_size, 1200);
        assert_true(d[0].id >= STREAM_BUFFERS); /* the pool's ids follow the loop's */
        assert_false(d[0].meta.flags & TL_UDP_META_TRUNCATED);
    } else {
        assert_int_equal(recv_n(loop, d, 6, NULL), 6);
    }
    tl_loop_get_stats(loop, &st);
    assert_int_equal(st.udp_received, 6);
    /* Off again: one datagram per receive, still in the pool. */
    assert_int_equal(tl_udp_gro(loop, b, 0), 0);
    gso_send(loop, a, &sb, payload, 2400, 1200);
    assert_int_equal(recv_n(loop, d, 2, NULL), 2);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(d[i].len, 1200);
        assert_int_equal(d[i].meta.segment_size, 0);
        assert_true(d[i].id >= STREAM_BUFFERS);
    }
    assert_int_equal(tl_close(loop, a, 0), 0);
    assert_int_equal(tl_close(loop, b, 0), 0);
    assert_int_equal(drain_loop(loop), 0);
    tl_loop_free(loop);

    tl_loop *plain = udp_loop(0, 8); /* 16 KiB buffers, no pool */
    tl_handle c = udp_on(plain, AF_INET, "127.0.0.1", &sa);
    assert_int_equal(tl_udp_gro(plain, c, 1), -EINVAL);
    assert_int_equal(tl_udp_gro(plain, c, 0), 0);
    assert_int_equal(tl_close(plain, c, 0), 0);
    assert_int_equal(drain_loop(plain), 0);
    tl_loop_free(plain);
}

/* A stream on the same loop receives in the loop's buffers while the
 * datagrams take the pool's: neither takes from the other. */
static void udp_pool_leaves_streams_their_buffers(void **state) {
    (void)state;
    tl_loop *loop = pool_loop(0, 4);
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    tl_handle s;
    assert_int_equal(tl_adopt_fd(loop, sv[0], &s), 0);
    assert_int_equal(tl_recv(loop, s, 3, NULL), 0);
    tl_sockaddr sa;
    tl_handle u = udp_on(loop, AF_INET, "127.0.0.1", &sa);
    assert_int_equal(tl_udp_gro(loop, u, 1), 0);
    assert_int_equal(tl_udp_recv(loop, u, 1, NULL), 0);
    int peer = peer_on(AF_INET, "127.0.0.1", &(tl_sockaddr){0});
    /* More datagrams than the pool holds, and more stream data than one
     * buffer: both are received whole, each in its own pool. */
    for (int i = 0; i < 6; i++) {
        char m[100];
        memset(m, 'A' + i, sizeof m);
        assert_int_equal(sendto(peer, m, sizeof m, 0, &sa.sa, sizeof sa.in), (ssize_t)sizeof m);
    }
    static char bulk[40000];
    memset(bulk, 's', sizeof bulk);
    assert_int_equal(write(sv[1], bulk, sizeof bulk), (ssize_t)sizeof bulk);
    size_t stream_bytes = 0;
    int dgrams = 0;
    bool udp_armed = true;
    uint64_t end = ms_now() + 5000;
    while ((stream_bytes < sizeof bulk || dgrams < 6) && ms_now() < end) {
        tl_completion c[16];
        int k = tl_loop_turn(loop, 50, c, 16);
        assert_true(k >= 0);
        for (int i = 0; i < k; i++) {
            if (c[i].kind == TL_OP_RECV && (c[i].flags & TL_CQE_BUFFER)) {
                assert_true(c[i].u.buf.id < STREAM_BUFFERS);
                assert_true(c[i].res <= 16384);
                stream_bytes += (size_t)c[i].res;
                tl_buffer_release(loop, c[i].u.buf.id);
            } else if (c[i].kind == TL_OP_UDP_RECV && (c[i].flags & TL_CQE_BUFFER)) {
                assert_true(c[i].u.buf.id >= STREAM_BUFFERS);
                assert_int_equal(c[i].res, 100);
                assert_int_equal(*(const char *)c[i].u.buf.data, 'A' + dgrams);
                dgrams++;
                tl_buffer_release(loop, c[i].u.buf.id);
            }
            if (c[i].kind == TL_OP_UDP_RECV && (c[i].flags & TL_CQE_FINAL))
                udp_armed = false;
        }
        if (!udp_armed) /* the pool ran dry in a turn: ask again, as a host does */
            udp_armed = tl_udp_recv(loop, u, 1, NULL) == 0;
    }
    assert_int_equal(stream_bytes, sizeof bulk);
    assert_int_equal(dgrams, 6);
    close(peer);
    close(sv[1]);
    assert_int_equal(tl_close(loop, s, 0), 0);
    assert_int_equal(tl_close(loop, u, 0), 0);
    assert_int_equal(drain_loop(loop), 0);
    tl_loop_free(loop);
}

/* Out of pool buffers, the receive ends with -ENOBUFS and the handle stays;
 * the loop's own buffers are not taken instead, and after releasing, a new
 * receive gets the datagrams that waited in the socket. */
static void udp_pool_exhaustion_keeps_the_handle(void **state) {
    (void)state;
    tl_loop *loop = pool_loop(0, 4);
    tl_sockaddr me, peer;
    tl_handle h = udp_on(loop, AF_INET, "127.0.0.1", &me);
    int fd = peer_on(AF_INET, "127.0.0.1", &peer);
    for (int i = 0; i < 6; i++) {
        char m = (char)('0' + i);
        assert_int_equal(sendto(fd, &m, 1, 0, &me.sa, sizeof me.in), 1);
    }
    assert_int_equal(tl_udp_recv(loop, h, 1, NULL), 0);
    uint32_t ids[4];
    char seen[6];
    int held = 0, total = 0;
    bool ended = false;
    uint64_t end = ms_now() + 5000;
    while (!ended && ms_now() < end) {
        tl_completion c[16];
        int k = tl_loop_turn(loop, 50, c, 16);
        for (int i = 0; i < k; i++) {
            if (c[i].kind != TL_OP_UDP_RECV)
                continue;
            if (c[i].flags & TL_CQE_BUFFER) {
                assert_true(held < 4);
                assert_true(c[i].u.buf.id >= STREAM_BUFFERS);
                seen[total++] = *(const char *)c[i].u.buf.data;
                ids[held++] = c[i].u.buf.id;
            }
            if (c[i].flags & TL_CQE_FINAL) {
                assert_int_equal(c[i].res, -ENOBUFS);
                ended = true;
            }
        }
    }
    assert_true(ended);
    assert_int_equal(held, 4);
    assert_true(tl_handle_fd(loop, h) >= 0);
    for (int i = 0; i < held; i++)
        tl_buffer_release(loop, ids[i]);
    tl_buffer_release(loop, ids[0]); /* twice: ignored */
    assert_int_equal(tl_udp_recv(loop, h, 2, NULL), 0);
    dgram d[2];
    assert_int_equal(recv_n(loop, d, 2, NULL), 2);
    seen[total++] = d[0].head;
    seen[total++] = d[1].head;
    assert_memory_equal(seen, "012345", 6); /* none lost, none twice */
    close(fd);
    assert_int_equal(tl_close(loop, h, 0), 0);
    assert_int_equal(drain_loop(loop), 0);
    tl_loop_free(loop);
}

/* A kernel without UDP_GRO (simulated by TL_LOOP_NO_UDP_GRO, which
 * TURNLOOP_UDP_DISABLE=gro sets): GRO is refused with -EOPNOTSUPP, turning
 * it off is fine, and the pool serves one datagram per receive. A pool with
 * a wrong size is refused at the loop's creation. */
static void udp_pool_without_kernel_gro_falls_back(void **state) {
    (void)state;
    tl_loop *loop = pool_loop(TL_LOOP_NO_UDP_GRO, 4);
    tl_sockaddr sa;
    tl_handle a = udp_on(loop, AF_INET, "127.0.0.1", &sa);
    tl_handle b = udp_on(loop, AF_INET, "127.0.0.1", &sa);
    tl_sockaddr sb = sockname_of(loop, b);
    assert_int_equal(tl_udp_gro(loop, b, 1), -EOPNOTSUPP);
    assert_int_equal(tl_udp_gro(loop, b, 0), 0);
    tl_udp_options gro = {.flags = TL_UDP_GRO};
    tl_sockaddr any = addr_of(AF_INET, "127.0.0.1", 0);
    tl_handle x;
    uint32_t before = tl_loop_handles(loop);
    assert_int_equal(tl_udp_open(loop, &any.sa, sizeof any.in, &gro, &x), -EOPNOTSUPP);
    assert_int_equal(tl_loop_handles(loop), before);
    assert_int_equal(tl_udp_recv(loop, b, 1, NULL), 0);
    static char payload[3 * 1200];
    memset(payload, 'f', sizeof payload);
    gso_send(loop, a, &sb, payload, sizeof payload, 1200);
    dgram d[3];
    assert_int_equal(recv_n(loop, d, 3, NULL), 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(d[i].len, 1200);
        assert_int_equal(d[i].meta.segment_size, 0);
    }
    assert_int_equal(tl_close(loop, a, 0), 0);
    assert_int_equal(tl_close(loop, b, 0), 0);
    assert_int_equal(drain_loop(loop), 0);
    tl_loop_free(loop);

    tl_loop_options bad = {.backend = test_backend, .udp_recv_buffers = 40000};
    tl_loop *l = NULL;
    assert_int_equal(tl_loop_new(&l, &bad), -EINVAL);
    bad = (tl_loop_options){
        .backend = test_backend, .udp_recv_buffers = 4, .udp_recv_buffer_size = GRO_ROOM + 1};
    assert_int_equal(tl_loop_new(&l, &bad), -EINVAL);
}

static const struct CMUnitTest udp_pool_tests[] = {
    cmocka_unit_test(udp_pool_gro_receives_coalesced_datagrams),
    cmocka_unit_test(udp_pool_leaves_streams_their_buffers),
    cmocka_unit_test(udp_pool_exhaustion_keeps_the_handle),
    cmocka_unit_test(udp_pool_without_kernel_gro_falls_back),
};
const struct CMUnitTest *const udp_pool_tests_p = udp_pool_tests;
const size_t udp_pool_test_count = sizeof udp_pool_tests / sizeof udp_pool_tests[0];
