/* Shared pieces of the UDP contract tests: loops with chosen buffers,
 * addresses by value, datagram handles and plain peer sockets on loopback. */
#include "udp_util.h"

#include "harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

tl_loop *udp_loop(unsigned flags, uint32_t buffers) {
    tl_loop_options o = {.backend = test_backend, .flags = flags, .recv_buffers = buffers};
    tl_loop *loop = NULL;
    int err = tl_loop_new(&loop, &o);
    if (err < 0)
        fail_msg("tl_loop_new: %s", tl_strerror(err));
    return loop;
}

tl_sockaddr addr_of(int family, const char *ip, uint16_t port) {
    tl_sockaddr a;
    memset(&a, 0, sizeof a);
    if (family == AF_INET) {
        a.in.sin_family = AF_INET;
        a.in.sin_port = htons(port);
        inet_pton(AF_INET, ip, &a.in.sin_addr);
    } else {
        a.in6.sin6_family = AF_INET6;
        a.in6.sin6_port = htons(port);
        inet_pton(AF_INET6, ip, &a.in6.sin6_addr);
    }
    return a;
}

socklen_t addr_len(const tl_sockaddr *a) {
    return a->sa.sa_family == AF_INET6 ? sizeof a->in6 : sizeof a->in;
}

/* A udp handle on ip:0, or 0 when the family has no loopback here. */
tl_handle udp_on(tl_loop *loop, int family, const char *ip, tl_sockaddr *bound) {
    tl_sockaddr a = addr_of(family, ip, 0);
    tl_handle h = 0;
    int err = tl_udp_open(loop, &a.sa, addr_len(&a), NULL, &h);
    if (err == -EADDRNOTAVAIL || err == -EAFNOSUPPORT)
        return 0;
    assert_int_equal(err, 0);
    struct sockaddr_storage got;
    socklen_t gl;
    assert_int_equal(tl_handle_sockname(loop, h, &got, &gl), 0);
    memcpy(bound, &got, gl);
    return h;
}

/* A plain blocking socket bound to ip:0 with a 5 s receive timeout. */
int peer_on(int family, const char *ip, tl_sockaddr *bound) {
    int fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    tl_sockaddr a = addr_of(family, ip, 0);
    assert_int_equal(bind(fd, &a.sa, addr_len(&a)), 0);
    socklen_t l = sizeof *bound;
    assert_int_equal(getsockname(fd, &bound->sa, &l), 0);
    struct timeval tv = {.tv_sec = 5};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

/* What a receive gathered: payloads (their first 64 bytes), metadata, the end. */
uint64_t ms_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Turns until g holds want datagrams, the receive ended, or 5 s passed;
 * other completions go to other[] (up to 16) when given. */
