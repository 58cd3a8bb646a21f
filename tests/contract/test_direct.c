/* Accepted connections and the descriptor the host sees. On io_uring with
 * TURNLOOP_URING_ENABLE=direct a multishot accept puts each connection in the
 * ring's own file table (a direct descriptor); whatever needs a real one
 * (tl_handle_fd for sendfile, the peer's address, a detach to another loop)
 * gets it on demand, and the connection is served on either way. Elsewhere
 * the same must hold with nothing installed. */
#include "harness.h"
#include "tests.h"

#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

static bool direct_expected(tl_loop *loop) {
    const char *on = getenv("TURNLOOP_URING_ENABLE");
    const char *off = getenv("TURNLOOP_URING_DISABLE");
    return strcmp(tl_loop_backend(loop), "uring") == 0 && on && strstr(on, "direct") &&
           !(off && (strstr(off, "all") || strstr(off, "direct") || strstr(off, "buf_ring") ||
                     strstr(off, "multishot_accept")));
}

static int client_to(uint16_t port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct timeval tv = {.tv_sec = 5};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = loopback_any_port();
    a.sin_port = htons(port);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    return fd;
}

static void expect_bytes(int fd, const char *want) {
    size_t n = strlen(want), got = 0;
    char buf[64];
    while (got < n) {
        ssize_t r = recv(fd, buf + got, n - got, 0);
        assert_true(r > 0);
        got += (size_t)r;
    }
    assert_memory_equal(buf, want, n);
}

/* The next accepted connection on the loop's multishot accept. */
static tl_handle next_accepted(tl_loop *loop) {
    tl_completion c[4];
    assert_int_equal(turn_until(loop, c, 4, 1), 1);
    assert_int_equal(c[0].kind, TL_OP_ACCEPT);
    assert_int_equal(c[0].res, 0);
    return c[0].u.accepted;
}

/* One receive of want, then one write of reply, through the loop. */
static void serve_once(tl_loop *loop, tl_handle h, int cli, const char *want, const char *reply) {
    assert_int_equal(send(cli, want, strlen(want), 0), (ssize_t)strlen(want));
    tl_op op;
    assert_int_equal(tl_recv(loop, h, 2, &op), 0);
    tl_completion c[4];
    assert_int_equal(turn_until(loop, c, 4, 1), 1);
    assert_int_equal(c[0].res, (int)strlen(want));
    assert_memory_equal(c[0].u.buf.data, want, strlen(want));
    tl_buffer_release(loop, c[0].u.buf.id);
    assert_int_equal(tl_cancel(loop, op), 0);
    assert_int_equal(turn_until(loop, c, 4, 1), 1);
    assert_int_equal(c[0].res, -ECANCELED);
    assert_int_equal(tl_write(loop, h, reply, (uint32_t)strlen(reply), 3, NULL), 0);
    assert_int_equal(turn_until(loop, c, 4, 1), 1);
    assert_int_equal(c[0].res, (int)strlen(reply));
    expect_bytes(cli, reply);
}

static void accepted_stream_gives_a_real_descriptor(void **state) {
    (void)state;
    /* A ceiling: without one no table can hold every connection (uring.h) */
    tl_loop *a = test_loop(64, 0, 0), *b = test_loop(64, 0, 0);
    struct sockaddr_in addr = loopback_any_port();
    tl_handle lh;
    assert_int_equal(tl_listen(a, (struct sockaddr *)&addr, sizeof addr, NULL, &lh), 0);
    uint16_t port = handle_port(a, lh);
    tl_op acc;
    assert_int_equal(tl_accept(a, lh, TL_ACCEPT_MULTISHOT, 1, &acc), 0);

    /* One: served in the ring, then its peer's address and a sendfile on its
     * descriptor, and served in the ring again. */
    int cli = client_to(port);
    tl_handle h = next_accepted(a);
    serve_once(a, h, cli, "ping", "pong");
    struct sockaddr_storage peer, mine;
    socklen_t ml = sizeof mine;
    assert_int_equal(tl_handle_peername(a, h, &peer, NULL), 0);
    assert_int_equal(getsockname(cli, (struct sockaddr *)&mine, &ml), 0);
    assert_int_equal(((struct sockaddr_in *)&peer)->sin_port,
                     ((struct sockaddr_in *)&mine)->sin_port);
    int fd = tl_handle_fd(a, h);
    assert_true(fd >= 0);
    assert_int_equal(tl_handle_fd(a, h), fd); /* installed once, then kept */
    int mfd = memfd_create("body", MFD_CLOEXEC);
    assert_true(mfd >= 0);
    assert_int_equal(write(mfd, "file-bytes", 10), 10);
    off_t off = 0;
    assert_int_equal(sendfile(fd, mfd, &off, 10), 10);
    close(mfd);
    expect_bytes(cli, "file-bytes");
    serve_once(a, h, cli, "again", "still");
    /* An idle connection's receive stays armed while the first one closes: the
     * close must send its FIN now, not when that receive ends. */
    int idle = client_to(port);
    tl_handle ih = next_accepted(a);
    tl_completion c[8];
    assert_int_equal(tl_recv(a, ih, 5, NULL), 0);
    assert_int_equal(tl_loop_turn(a, 0, c, 8), 0); /* armed */
    assert_int_equal(tl_close(a, h, 9), 0);
    assert_int_equal(turn_until(a, c, 8, 1), 1);
    assert_int_equal(c[0].kind, TL_OP_CLOSE);
    char eof;
    assert_int_equal(recv(cli, &eof, 1, 0), 0); /* the FIN, within SO_RCVTIMEO */
    close(cli);
    assert_int_equal(tl_close(a, ih, 10), 0);
    assert_int_equal(turn_until(a, c, 8, 2), 2); /* its receive's -ECANCELED, its close */
    assert_int_equal(recv(idle, &eof, 1, 0), 0);
    close(idle);

    /* Two: detached straight from the ring to loop b, which serves it on. */
    cli = client_to(port);
    h = next_accepted(a);
    serve_once(a, h, cli, "ping", "pong");
    tl_detached d;
    assert_int_equal(tl_detach(a, h, &d), 0);
    assert_true(d.fd >= 0);
    tl_handle h2;
    assert_int_equal(tl_attach(b, &d, &h2), 0);
    serve_once(b, h2, cli, "moved", "served");
    close(cli);
    assert_int_equal(tl_recv(b, h2, 4, NULL), 0);
    assert_int_equal(turn_until(b, c, 8, 1), 1);
    assert_int_equal(c[0].res, 0); /* end of stream */
    assert_int_equal(tl_close(b, h2, 0), 0);
    assert_int_equal(drain_loop(b), 0);

    tl_loop_stats st;
    tl_loop_get_stats(a, &st);
    assert_int_equal(st.fd_installs, direct_expected(a) ? 2 : 0);
    assert_int_equal(tl_close(a, lh, 0), 0);
    assert_int_equal(drain_loop(a), 0);
    tl_loop_free(a);
    tl_loop_free(b);
}

/* The table has room for DIRECT_LISTENERS (4) listeners' accept queues beside
 * every handle (backend/uring.h): a fifth listener accepts plain descriptors.
 * Once one of the four is closed there is room, and the fifth moves into the
 * table by its next connection; a multishot accept never ends by itself, so
 * without the switch it would stay plain. Its connections are served either
 * way; only whether tl_handle_fd had to install one tells them apart. */
static void plain_listener_moves_into_the_table(void **state) {
    (void)state;
    tl_loop *a = test_loop(64, 0, 0);
    enum { N = 5 };
    tl_handle lh[N];
    uint16_t port[N];
    for (int i = 0; i < N; i++) {
        struct sockaddr_in addr = loopback_any_port();
        assert_int_equal(tl_listen(a, (struct sockaddr *)&addr, sizeof addr, NULL, &lh[i]), 0);
        port[i] = handle_port(a, lh[i]);
        assert_int_equal(tl_accept(a, lh[i], TL_ACCEPT_MULTISHOT, 1, NULL), 0);
    }
    tl_completion c[8];
    assert_int_equal(tl_loop_turn(a, 0, c, 8), 0); /* every accept armed, in order */
    bool direct = direct_expected(a);
    tl_loop_stats st;

    int cli = client_to(port[N - 1]);
    tl_handle h = next_accepted(a);
    serve_once(a, h, cli, "ping", "pong");
    assert_true(tl_handle_fd(a, h) >= 0);
    tl_loop_get_stats(a, &st);
    assert_int_equal(st.fd_installs, 0); /* plain: the table had no room for its queue */
    assert_int_equal(tl_close(a, h, 0), 0);
    assert_int_equal(turn_until(a, c, 8, 1), 1);
    close(cli);

    assert_int_equal(tl_close(a, lh[0], 0), 0);  /* room in the table now */
    assert_int_equal(turn_until(a, c, 8, 2), 2); /* its accept's -ECANCELED, its close */

    /* The first connection after that still comes plain (it is what moves the
     * listener); the next ones come from the table. */
    int cli2 = client_to(port[N - 1]);
    tl_handle h2 = next_accepted(a);
    /* The switch's cancel and the accept re-armed into the table: a few turns
     * that report nothing (the cancel's completion is the backend's own). */
    for (int i = 0; i < 5; i++)
        assert_int_equal(tl_loop_turn(a, 10, c, 8), 0);
    int cli3 = client_to(port[N - 1]);
    tl_handle h3 = next_accepted(a);
    serve_once(a, h3, cli3, "ping", "pong");
    serve_once(a, h2, cli2, "ping", "pong");
    assert_true(tl_handle_fd(a, h3) >= 0);
    tl_loop_get_stats(a, &st);
    assert_int_equal(st.fd_installs, direct ? 1 : 0);
    close(cli2);
    close(cli3);
    assert_int_equal(tl_close(a, h2, 0), 0);
    assert_int_equal(tl_close(a, h3, 0), 0);
    for (int i = 1; i < N; i++)
        assert_int_equal(tl_close(a, lh[i], 0), 0);
    assert_int_equal(drain_loop(a), 0);
    tl_loop_free(a);
}

static const struct CMUnitTest direct_tests[] = {
    cmocka_unit_test(accepted_stream_gives_a_real_descriptor),
    cmocka_unit_test(plain_listener_moves_into_the_table),
};
const size_t direct_test_count = sizeof direct_tests / sizeof direct_tests[0];
const struct CMUnitTest *const direct_tests_p = direct_tests;
