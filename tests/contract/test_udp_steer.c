/* QUIC connection-ID steering: datagrams with crafted DCIDs reach the loop
 * their index byte names; a refused program is reported and forwarding
 * between loops puts each datagram on its loop. */
#include "harness.h"
#include "tests.h"
#include "udp_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#define NLOOPS 4

/* A QUIC-shaped datagram for loop `idx`: short header, or long header with
 * a DCID of the layout's length (16 by default) whose index byte (1 by
 * default) names the loop. */
static size_t quic_packet(uint8_t *p, bool long_header, uint8_t idx, uint8_t seq,
                          const tl_cid_steer *cfg) {
    size_t len = cfg ? cfg->cid_len : TL_CID_STEER_DEFAULT_LEN;
    size_t byte = cfg ? cfg->index_byte : TL_CID_STEER_DEFAULT_BYTE;
    memset(p, 0xee, 64);
    size_t at;
    if (long_header) {
        p[0] = 0xc0;
        p[1] = 0, p[2] = 0, p[3] = 0, p[4] = 1; /* version 1 */
        p[5] = (uint8_t)len;
        at = 6;
    } else {
        p[0] = 0x40;
        at = 1;
    }
    for (size_t i = 0; i < len; i++)
        p[at + i] = (uint8_t)(0x30 + i);
    p[at + byte] = idx;
    p[at + len] = seq;
    return 40;
}

typedef struct steer_run {
    tl_loop *loops[NLOOPS];
    tl_handle h[NLOOPS];
    int per_loop_own[NLOOPS]; /* datagrams whose index named the loop that got them */
    int misrouted;
    int forwarded;
    int hashed;              /* not ours: any loop */
    const tl_cid_steer *cfg; /* the layout; NULL: the default */
    int family;              /* of the group's address: 127.0.0.1 or ::1 */
} steer_run;

static const char *loopback(int family) {
    return family == AF_INET6 ? "::1" : "127.0.0.1";
}

static void steer_turn_all(steer_run *r, bool forward, int want) {
    uint64_t end = ms_now() + 5000;
    int total = 0;
    while (total < want && ms_now() < end) {
        for (int l = 0; l < NLOOPS; l++) {
            tl_completion c[64];
            int k = tl_loop_turn(r->loops[l], 5, c, 64);
            assert_true(k >= 0);
            for (int i = 0; i < k; i++) {
                if (c[i].kind == TL_OP_UDP_FORWARDED) {
                    tl_udp_datagram *d = c[i].u.msg.ptr;
                    assert_int_equal(tl_cid_loop_index(d->data, d->len, r->cfg, NLOOPS), l);
                    assert_true(d->meta.flags & TL_UDP_META_LOCAL);
                    r->per_loop_own[l]++;
                    r->forwarded++;
                    total++;
                    tl_udp_datagram_free(d);
                    continue;
                }
                if (c[i].kind != TL_OP_UDP_RECV || !(c[i].flags & TL_CQE_BUFFER))
                    continue;
                int idx = tl_cid_loop_index(c[i].u.buf.data, (size_t)c[i].res, r->cfg, NLOOPS);
                if (idx < 0) {
                    r->hashed++;
                    total++;
                } else if (idx == l) {
                    r->per_loop_own[l]++;
                    total++;
                } else if (forward) {
                    assert_int_equal(tl_udp_forward(r->loops[l], &c[i], r->loops[idx], 9), 0);
                } else {
                    r->misrouted++;
                    total++;
                }
                tl_buffer_release(r->loops[l], c[i].u.buf.id);
            }
        }
    }
}

static uint16_t route_port(const steer_run *r) {
    struct sockaddr_storage s;
    socklen_t sl;
    assert_int_equal(tl_handle_sockname(r->loops[0], r->h[0], &s, &sl), 0);
    tl_sockaddr a;
    memcpy(&a, &s, sizeof a);
    return ntohs(a.sa.sa_family == AF_INET6 ? a.in6.sin6_port : a.in.sin_port);
}

static void steer_send(const steer_run *r, int fd, int per_loop, int others) {
    uint16_t port = route_port(r);
    tl_sockaddr to = addr_of(r->family, loopback(r->family), port);
    uint8_t p[64];
    for (int l = 0; l < NLOOPS; l++)
        for (int i = 0; i < per_loop; i++) {
            size_t n = quic_packet(p, i % 2 == 1, (uint8_t)l, (uint8_t)i, r->cfg);
            assert_int_equal(sendto(fd, p, n, 0, &to.sa, addr_len(&to)), (ssize_t)n);
        }
    size_t ours = r->cfg ? r->cfg->cid_len : TL_CID_STEER_DEFAULT_LEN;
    for (int i = 0; i < others; i++) { /* a client's Initial: a DCID of its own length */
        memset(p, 0, sizeof p);
        p[0] = 0xc3, p[4] = 1, p[5] = ours == 8 ? 12 : 8;
        p[6] = (uint8_t)i;
        assert_int_equal(sendto(fd, p, 40, 0, &to.sa, addr_len(&to)), 40);
    }
}

/* Returns false (and makes nothing) when the family has no loopback here. */
static bool steer_setup(steer_run *r, unsigned flags, const tl_cid_steer *cfg, int family,
                        int *steer_err) {
    memset(r, 0, sizeof *r);
    r->cfg = cfg;
    r->family = family;
    for (int l = 0; l < NLOOPS; l++)
        r->loops[l] = udp_loop(flags, 64);
    tl_sockaddr a = addr_of(family, loopback(family), 0);
    int err = tl_route_udp_cid(r->loops, NLOOPS, &a.sa, addr_len(&a), cfg, r->h, steer_err);
    if (err == -EADDRNOTAVAIL && family == AF_INET6) {
        for (int l = 0; l < NLOOPS; l++)
            tl_loop_free(r->loops[l]);
        return false;
    }
    assert_int_equal(err, 0);
    for (int l = 0; l < NLOOPS; l++)
        assert_int_equal(tl_udp_recv(r->loops[l], r->h[l], 1, NULL), 0);
    return true;
}

static void steer_teardown(steer_run *r) {
    for (int l = 0; l < NLOOPS; l++) {
        assert_int_equal(tl_close(r->loops[l], r->h[l], 0), 0);
        assert_int_equal(drain_loop(r->loops[l]), 0);
        tl_loop_free(r->loops[l]);
    }
}

static void udp_cid_steering_by_connection_id(void **state) {
    (void)state;
    /* The rule itself, as the program applies it. */
    uint8_t p[64];
    size_t n = quic_packet(p, false, 2, 0, NULL);
    assert_int_equal(tl_cid_loop_index(p, n, NULL, NLOOPS), 2);
    n = quic_packet(p, true, 3, 0, NULL);
    assert_int_equal(tl_cid_loop_index(p, n, NULL, NLOOPS), 3);
    assert_int_equal(tl_cid_loop_index(p, 8, NULL, NLOOPS), -1); /* cut short */
    p[5] = 8;                                                    /* another DCID length */
    assert_int_equal(tl_cid_loop_index(p, n, NULL, NLOOPS), -1);
    n = quic_packet(p, false, 7, 0, NULL); /* an index past the group */
    assert_int_equal(tl_cid_loop_index(p, n, NULL, NLOOPS), -1);
    tl_cid_steer c8 = {.cid_len = 8, .index_byte = 2}; /* another layout: byte 2 of 8 */
    n = quic_packet(p, false, 3, 0, &c8);
    assert_int_equal(tl_cid_loop_index(p, n, &c8, NLOOPS), 3);
    tl_cid_steer bad = {.cid_len = 4, .index_byte = 4};
    tl_loop *one = test_loop(0, 0, 0);
    tl_handle h1;
    int serr;
    tl_sockaddr a = addr_of(AF_INET, "127.0.0.1", 0);
    assert_int_equal(tl_route_udp_cid(&one, 1, &a.sa, sizeof a.in, &bad, &h1, &serr), -EINVAL);
    assert_int_equal(tl_loop_handles(one), 0);
    tl_loop_free(one);

    /* In the kernel: the default layout on both families, and 8-byte IDs with
     * the index in byte 2. */
    const tl_cid_steer *layouts[3] = {NULL, &c8, NULL};
    const int families[3] = {AF_INET, AF_INET, AF_INET6};
    for (int k = 0; k < 3; k++) {
        steer_run r;
        if (!steer_setup(&r, 0, layouts[k], families[k], &serr)) {
            printf("note: no ::1 here; steering on IPv6 is not tested\n");
            continue;
        }
        assert_int_equal(serr, 0); /* every kernel since 4.5 takes it */
        tl_sockaddr peer;
        int fd = peer_on(r.family, loopback(r.family), &peer);
        steer_send(&r, fd, 10, 8);
        steer_turn_all(&r, false, NLOOPS * 10 + 8);
        for (int l = 0; l < NLOOPS; l++) {
            assert_int_equal(r.per_loop_own[l], 10);
            tl_loop_stats st;
            tl_loop_get_stats(r.loops[l], &st);
            assert_true(st.udp_received >= 10); /* its own, and maybe some Initials */
        }
        assert_int_equal(r.misrouted, 0);
        assert_int_equal(r.hashed, 8);
        close(fd);
        steer_teardown(&r);
    }
}

/* A kernel that refuses the program: reported, the sockets stay, the kernel
 * hashes, and forwarding between loops puts every datagram on its loop. */
static void udp_cid_steering_refused_then_forwarded(void **state) {
    (void)state;
    steer_run r;
    int serr = 0;
    assert_true(steer_setup(&r, TL_LOOP_NO_CID_STEER, NULL, AF_INET, &serr));
    assert_int_equal(serr, -EOPNOTSUPP);
    tl_sockaddr peer;
    int fd = peer_on(AF_INET, "127.0.0.1", &peer);
    steer_send(&r, fd, 10, 0);
    steer_turn_all(&r, true, NLOOPS * 10);
    for (int l = 0; l < NLOOPS; l++)
        assert_int_equal(r.per_loop_own[l], 10);
    uint64_t forwarded_in = 0;
    for (int l = 0; l < NLOOPS; l++) {
        tl_loop_stats st;
        tl_loop_get_stats(r.loops[l], &st);
        forwarded_in += st.udp_forwarded_in;
    }
    assert_int_equal(forwarded_in, (uint64_t)r.forwarded);
    /* One client's 4-tuple hashes to one loop: 30 of its 40 belong elsewhere. */
    assert_int_equal(r.forwarded, (NLOOPS - 1) * 10);
    close(fd);
    steer_teardown(&r);

    /* The same refusal asked for by the environment, as a server's test would. */
    setenv("TURNLOOP_UDP_DISABLE", "cid_steer", 1);
    assert_true(steer_setup(&r, 0, NULL, AF_INET, &serr));
    unsetenv("TURNLOOP_UDP_DISABLE");
    assert_int_equal(serr, -EOPNOTSUPP);
    steer_teardown(&r);
}

/* A restart: another set of loops adopts the group's sockets as they are
 * (descriptors passed by exec; dup() here), every index and the program
 * unchanged, and the old handles closed after: datagrams still reach the
 * loop their index names. Then a group of 2 taken by 4 loops: the two new
 * sockets join after the inherited ones and the program covers all 4. */
static void udp_cid_steering_inherited(void **state) {
    (void)state;
    steer_run old, r;
    int serr = -1;
    assert_true(steer_setup(&old, 0, NULL, AF_INET, &serr));
    assert_int_equal(serr, 0);
    int fds[NLOOPS];
    for (int l = 0; l < NLOOPS; l++)
        fds[l] = dup(tl_handle_fd(old.loops[l], old.h[l]));
    memset(&r, 0, sizeof r);
    r.family = AF_INET;
    for (int l = 0; l < NLOOPS; l++)
        r.loops[l] = udp_loop(0, 64);
    serr = -1;
    assert_int_equal(tl_route_udp_cid_adopt(r.loops, NLOOPS, fds, NLOOPS, NULL, r.h, &serr), 0);
    assert_int_equal(serr, 0);
    steer_teardown(&old); /* the parent's copies go: the sockets stay, in their places */
    for (int l = 0; l < NLOOPS; l++)
        assert_int_equal(tl_udp_recv(r.loops[l], r.h[l], 1, NULL), 0);
    tl_sockaddr peer;
    int fd = peer_on(AF_INET, "127.0.0.1", &peer);
    steer_send(&r, fd, 10, 0);
    steer_turn_all(&r, false, NLOOPS * 10);
    for (int l = 0; l < NLOOPS; l++)
        assert_int_equal(r.per_loop_own[l], 10);
    assert_int_equal(r.misrouted, 0);
    steer_teardown(&r);

    /* Two inherited, four loops. */
    tl_loop *two[2] = {udp_loop(0, 64), udp_loop(0, 64)};
    tl_handle h2[2];
    tl_sockaddr a = addr_of(AF_INET, "127.0.0.1", 0);
    assert_int_equal(tl_route_udp_cid(two, 2, &a.sa, sizeof a.in, NULL, h2, &serr), 0);
    for (int l = 0; l < 2; l++)
        fds[l] = dup(tl_handle_fd(two[l], h2[l]));
    memset(&r, 0, sizeof r);
    r.family = AF_INET;
    for (int l = 0; l < NLOOPS; l++)
        r.loops[l] = udp_loop(0, 64);
    serr = -1;
    assert_int_equal(tl_route_udp_cid_adopt(r.loops, NLOOPS, fds, 2, NULL, r.h, &serr), 0);
    assert_int_equal(serr, 0);
    for (int l = 0; l < 2; l++) {
        assert_int_equal(tl_close(two[l], h2[l], 0), 0);
        assert_int_equal(drain_loop(two[l]), 0);
        tl_loop_free(two[l]);
    }
    for (int l = 0; l < NLOOPS; l++)
        assert_int_equal(tl_udp_recv(r.loops[l], r.h[l], 1, NULL), 0);
    steer_send(&r, fd, 10, 0);
    steer_turn_all(&r, false, NLOOPS * 10);
    for (int l = 0; l < NLOOPS; l++)
        assert_int_equal(r.per_loop_own[l], 10);
    assert_int_equal(r.misrouted, 0);
    steer_teardown(&r);
    close(fd);

    /* What is not a bound datagram socket is refused, and closed. */
    tl_loop *one = udp_loop(0, 64);
    tl_handle h;
    int tcp = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_int_equal(tl_udp_adopt(one, tcp, NULL, &h), -ENOTSOCK);
    assert_int_equal(fcntl(tcp, F_GETFD), -1); /* closed */
    int unbound = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    assert_int_equal(tl_udp_adopt(one, unbound, NULL, &h), -ENOTSOCK);
    assert_int_equal(tl_route_udp_cid_adopt(&one, 1, &unbound, 0, NULL, &h, &serr), -EINVAL);
    assert_int_equal(tl_loop_handles(one), 0);
    tl_loop_free(one);
}

static const struct CMUnitTest udp_steer_tests[] = {
    cmocka_unit_test(udp_cid_steering_by_connection_id),
    cmocka_unit_test(udp_cid_steering_refused_then_forwarded),
    cmocka_unit_test(udp_cid_steering_inherited),
};
const size_t udp_steer_test_count = sizeof udp_steer_tests / sizeof udp_steer_tests[0];
const struct CMUnitTest *const udp_steer_tests_p = udp_steer_tests;
