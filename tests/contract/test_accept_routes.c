/* The accept-route contract tests of seeds/002, under the seed's names, plus
 * the multishot-ceiling test of turnloop#77. Each runs on one backend. */
#include "harness.h"
#include "tests.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

/* Accepts on each listener until `total` connections arrived in all; returns per-listener counts.
 */
static void accept_spread(tl_loop **loops, tl_handle *ls, int n, int total, int *per) {
    memset(per, 0, sizeof(int) * (size_t)n);
    int got = 0;
    for (int i = 0; i < n; i++)
        assert_int_equal(tl_accept(loops[i], ls[i], TL_ACCEPT_MULTISHOT, (uint64_t)i, NULL), 0);
    for (int round = 0; got < total && round < 500; round++) {
        for (int i = 0; i < n; i++) {
            tl_completion c[64];
            int k = tl_loop_turn(loops[i], 5, c, 64);
            assert_true(k >= 0);
            for (int j = 0; j < k; j++) {
                if (c[j].kind == TL_OP_ACCEPT && c[j].res == 0) {
                    per[i]++;
                    got++;
                    assert_int_equal(tl_close(loops[i], c[j].u.accepted, 0), 0);
                }
            }
        }
    }
    assert_int_equal(got, total);
}

static int connect_many(uint16_t port, int n, int *fds) {
    struct sockaddr_in a = loopback_any_port();
    a.sin_port = htons(port);
    for (int i = 0; i < n; i++) {
        fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (connect(fds[i], (struct sockaddr *)&a, sizeof a) < 0)
            return -errno;
    }
    return 0;
}

/* SHARE: the duplicate bind works and every connection is accepted by someone.
 * Deliberately nothing about which listener: SHARE promises nothing there. */
static void reuse_port_share_binds_twice(void **state) {
    tl_loop *loops[2] = {test_loop(0, 0, 0), test_loop(0, 0, 0)};
    tl_handle ls[2];
    struct sockaddr_in a = loopback_any_port();
    tl_listen_options share = {.reuse_port = TL_REUSE_PORT_SHARE};
    assert_int_equal(tl_listen(loops[0], (struct sockaddr *)&a, sizeof a, &share, &ls[0]), 0);
    a.sin_port = htons(handle_port(loops[0], ls[0]));
    assert_int_equal(tl_listen(loops[1], (struct sockaddr *)&a, sizeof a, &share, &ls[1]), 0);

    /* Without a reuse request the same bind is refused: the option is what shares. */
    tl_handle no;
    tl_listen_options plain = {.reuse_port = TL_REUSE_PORT_NO};
    assert_int_equal(tl_listen(loops[1], (struct sockaddr *)&a, sizeof a, &plain, &no),
                     -EADDRINUSE);

    int fds[32], per[2];
    assert_int_equal(connect_many(ntohs(a.sin_port), 32, fds), 0);
    accept_spread(loops, ls, 2, 32, per);
    assert_int_equal(per[0] + per[1], 32);
    for (int i = 0; i < 32; i++)
        close(fds[i]);
    for (int i = 0; i < 2; i++) {
        tl_close(loops[i], ls[i], 0);
        assert_int_equal(drain_loop(loops[i]), 0);
        tl_loop_free(loops[i]);
    }
}

/* No third outcome: the platform distributes (every listener gets a share), or
 * DISTRIBUTE is refused with -EOPNOTSUPP and nothing is left behind. Both
 * branches run here: the refusal on loops that simulate a platform without
 * distribution. */
static void reuse_port_distribution(void **state) {
    /* The distributing branch (Linux). */
    tl_loop *loops[2] = {test_loop(0, 0, 0), test_loop(0, 0, 0)};
    assert_true(tl_loop_can_distribute(loops[0]));
    tl_handle ls[2];
    struct sockaddr_in a = loopback_any_port();
    assert_int_equal(tl_route_reuse_port(loops, 2, (struct sockaddr *)&a, sizeof a, 0, ls), 0);
    uint16_t port = handle_port(loops[0], ls[0]);
    assert_int_equal(handle_port(loops[1], ls[1]), port);
    int fds[64], per[2];
    assert_int_equal(connect_many(port, 64, fds), 0);
    accept_spread(loops, ls, 2, 64, per);
    /* Hash placement of 64 distinct 4-tuples: a listener with none would be the
     * silent one-core server (a 2^-63 chance on a distributing platform). */
    assert_true(per[0] > 0 && per[1] > 0);
    for (int i = 0; i < 64; i++)
        close(fds[i]);
    for (int i = 0; i < 2; i++) {
        tl_close(loops[i], ls[i], 0);
        assert_int_equal(drain_loop(loops[i]), 0);
        tl_loop_free(loops[i]);
    }

    /* The refusing branch: a platform whose SO_REUSEPORT does not distribute. */
    int fds_before = open_fd_count();
    tl_loop *mixed[3] = {test_loop(0, 0, 0), test_loop(0, 0, 0),
                         test_loop(0, 0, TL_LOOP_NO_DISTRIBUTE)};
    int fds_loops = open_fd_count();
    assert_false(tl_loop_can_distribute(mixed[2]));
    tl_handle one;
    tl_listen_options dist = {.reuse_port = TL_REUSE_PORT_DISTRIBUTE};
    a = loopback_any_port();
    assert_int_equal(tl_listen(mixed[2], (struct sockaddr *)&a, sizeof a, &dist, &one),
                     -EOPNOTSUPP);
    tl_handle rl[3] = {0, 0, 0};
    assert_int_equal(tl_route_reuse_port(mixed, 3, (struct sockaddr *)&a, sizeof a, 0, rl),
                     -EOPNOTSUPP);
    /* Nothing behind: no handle on any loop, no descriptor, nothing alive. */
    for (int i = 0; i < 3; i++) {
        assert_int_equal(tl_loop_handles(mixed[i]), 0);
        assert_false(tl_loop_alive(mixed[i]));
    }
    assert_int_equal(open_fd_count(), fds_loops);
    /* SHARE is still allowed there: it promises nothing about delivery. */
    tl_listen_options share = {.reuse_port = TL_REUSE_PORT_SHARE};
    assert_int_equal(tl_listen(mixed[2], (struct sockaddr *)&a, sizeof a, &share, &one), 0);
    tl_close(mixed[2], one, 0);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(drain_loop(mixed[i]), 0);
        tl_loop_free(mixed[i]);
    }
    assert_int_equal(open_fd_count(), fds_before);
}

/* Accept on one loop, drive the I/O on sibling loops on their own threads,
 * round-robin over 4 workers: exact. */
static void accept_handoff_distribution(void **state) {
    serve_config cfg = {.route = SERVE_HANDOFF,
                        .loops = 4,
                        .max_handles = 64,
                        .connections = 40,
                        .client_threads = 4,
                        .policy = TL_HANDOFF_ROUND_ROBIN};
    serve_result r;
    serve_run(&cfg, &r);
    assert_int_equal(r.err, 0);
    assert_int_equal(r.echoed, 40);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(r.handed[i], 10); /* round-robin is exact by construction */
        assert_int_equal(r.served[i], 10);
    }
    assert_false(r.alive_at_end);
}

/* Least-loaded placement still serves every connection exactly once. */
static void accept_handoff_least_loaded(void **state) {
    serve_config cfg = {.route = SERVE_HANDOFF,
                        .loops = 4,
                        .max_handles = 8,
                        .connections = 64,
                        .client_threads = 8,
                        .policy = TL_HANDOFF_LEAST_LOADED};
    serve_result r;
    serve_run(&cfg, &r);
    assert_int_equal(r.err, 0);
    assert_int_equal(r.echoed, 64);
    int sum = 0;
    for (int i = 0; i < 4; i++)
        sum += r.served[i];
    assert_int_equal(sum, 64);
    assert_false(r.alive_at_end);
}

static void check_multi_threaded(const serve_result *r, int loops, int connections) {
    assert_int_equal(r->err, 0);
    assert_int_equal(r->echoed, connections); /* every id came back, exactly */
    int sum = 0;
    for (int i = 0; i < loops; i++)
        sum += r->served[i];
    assert_int_equal(sum, connections); /* served exactly once */
    assert_false(r->alive_at_end);      /* every loop !alive() at shutdown */
}

/* 64 connections, 4 loops on 4 threads, max_handles 8: the orphan gate. */
static void multi_threaded_accept_by_handoff(void **state) {
    serve_config cfg = {.route = SERVE_HANDOFF,
                        .loops = 4,
                        .max_handles = 8,
                        .connections = 64,
                        .client_threads = 8,
                        .policy = TL_HANDOFF_ROUND_ROBIN};
    serve_result r;
    serve_run(&cfg, &r);
    check_multi_threaded(&r, 4, 64);
    for (int i = 0; i < 4; i++)
        assert_int_equal(r.handed[i], 16);
}

static void multi_threaded_accept_by_reuse_port(void **state) {
    serve_config cfg = {.route = SERVE_REUSE_PORT,
                        .loops = 4,
                        .max_handles = 8,
                        .connections = 64,
                        .client_threads = 8};
    serve_result r;
    serve_run(&cfg, &r);
    check_multi_threaded(&r, 4, 64);
}

/* The next move past one saturated acceptor: 2 acceptors, each its own SHARE
 * listener on one port, each feeding its own 2 workers. 64 connections at a
 * ceiling of 8, every id back exactly once, round-robin exact within each
 * subset, every loop not alive at the end. That both acceptors accept is
 * Linux's doing (SO_REUSEPORT hashes SYNs over the group), not SHARE's
 * promise: 64 distinct 4-tuples all on one listener is a 2^-63 chance. */
static void multi_threaded_accept_by_handoff_group(void **state) {
    serve_config cfg = {.route = SERVE_HANDOFF_GROUP,
                        .loops = 4,
                        .acceptors = 2,
                        .max_handles = 8,
                        .connections = 64,
                        .client_threads = 8,
                        .policy = TL_HANDOFF_ROUND_ROBIN};
    serve_result r;
    serve_run(&cfg, &r);
    check_multi_threaded(&r, 4, 64);
    assert_int_equal(r.accepted[0] + r.accepted[1], 64);
    for (int k = 0; k < 2; k++) {
        int first = -1;
        assert_int_equal(tl_handoff_subset(4, 2, k, &first), 2);
        assert_int_equal(first, 2 * k);
        assert_true(r.accepted[k] > 0); /* every acceptor accepted */
        int a = r.handed[first], b = r.handed[first + 1];
        assert_int_equal(a + b, r.accepted[k]); /* fed only its own subset */
        assert_true(a - b == 0 || a - b == 1);  /* round-robin exact within it */
        assert_int_equal(r.served[first], a);
        assert_int_equal(r.served[first + 1], b);
    }
}

/* Subsets cover the workers exactly once and differ by at most one; a group
 * with more acceptors than workers is refused, and leaves nothing behind. */
static void handoff_group_subsets_and_refusal(void **state) {
    for (int n = 1; n <= 9; n++) {
        for (int k = 1; k <= n; k++) {
            int next = 0, mn = n, mx = 0;
            for (int a = 0; a < k; a++) {
                int first;
                int cnt = tl_handoff_subset(n, k, a, &first);
                assert_int_equal(first, next);
                next += cnt;
                mn = cnt < mn ? cnt : mn;
                mx = cnt > mx ? cnt : mx;
            }
            assert_int_equal(next, n);
            assert_true(mn >= 1 && mx - mn <= 1);
        }
    }
    int first;
    assert_int_equal(tl_handoff_subset(2, 3, 0, &first), -EINVAL);
    tl_loop *loops[3] = {test_loop(0, 0, 0), test_loop(0, 0, 0), test_loop(0, 0, 0)};
    tl_handle ls[3] = {0};
    tl_handoff *hos[3] = {0};
    struct sockaddr_in a = loopback_any_port();
    assert_int_equal(tl_route_handoff_group(loops, 3, loops, 2, TL_HANDOFF_ROUND_ROBIN,
                                            (struct sockaddr *)&a, sizeof a, 0, ls, hos),
                     -EINVAL);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(tl_loop_handles(loops[i]), 0);
        assert_null(hos[i]);
        tl_loop_free(loops[i]);
    }
}

/* Pins the calling thread to cpu (the SYN of a loopback connect is processed
 * on the connecting CPU); returns the previous mask through old. */
static int pin_self(int cpu, cpu_set_t *old) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (old && sched_getaffinity(0, sizeof *old, old) < 0)
        return -errno;
    return sched_setaffinity(0, sizeof set, &set) < 0 ? -errno : 0;
}

/* CPU-steered reuse-port, both ways. Where the kernel has the option: a
 * connection made from CPU c lands on the listener of the loop that sits on
 * c, every time, not by hash. Where it does not (simulated per loop, refused
 * at the setsockopt after the binds): -EOPNOTSUPP and nothing behind. */
static void reuse_port_cpu_steering(void **state) {
    cpu_set_t mask;
    assert_int_equal(sched_getaffinity(0, sizeof mask, &mask), 0);
    int cpus[2], ncpu = 0;
    for (int c = 0; c < CPU_SETSIZE && ncpu < 2; c++)
        if (CPU_ISSET(c, &mask))
            cpus[ncpu++] = c;
    if (ncpu == 2) {
        tl_loop *loops[2] = {test_loop(0, 0, 0), test_loop(0, 0, 0)};
        tl_handle ls[2];
        struct sockaddr_in a = loopback_any_port();
        assert_int_equal(
            tl_route_reuse_port_cpu(loops, 2, (struct sockaddr *)&a, sizeof a, 0, cpus, ls), 0);
        uint16_t port = handle_port(loops[0], ls[0]);
        for (int l = 0; l < 2; l++)
            assert_int_equal(tl_accept(loops[l], ls[l], TL_ACCEPT_MULTISHOT, 7, NULL), 0);
        cpu_set_t old;
        for (int i = 0; i < 2; i++) {
            int fds[16], per[2] = {0, 0};
            assert_int_equal(pin_self(cpus[i], &old), 0);
            int rc = connect_many(port, 16, fds);
            sched_setaffinity(0, sizeof old, &old);
            assert_int_equal(rc, 0);
            for (int round = 0; per[0] + per[1] < 16 && round < 500; round++) {
                for (int l = 0; l < 2; l++) {
                    tl_completion c[64];
                    int k = tl_loop_turn(loops[l], 5, c, 64);
                    assert_true(k >= 0);
                    for (int j = 0; j < k; j++)
                        if (c[j].kind == TL_OP_ACCEPT && c[j].res == 0) {
                            per[l]++;
                            assert_int_equal(tl_close(loops[l], c[j].u.accepted, 0), 0);
                        }
                }
            }
            /* All 16 on loop i: a hash would split them (2^-15 chance not to). */
            assert_int_equal(per[i], 16);
            assert_int_equal(per[1 - i], 0);
            for (int j = 0; j < 16; j++)
                close(fds[j]);
        }
        for (int l = 0; l < 2; l++) {
            tl_close(loops[l], ls[l], 0);
            assert_int_equal(drain_loop(loops[l]), 0);
            tl_loop_free(loops[l]);
        }
    } else {
        print_message("one CPU in the affinity mask: steering itself not checked\n");
    }

    /* The refusing branch: nothing left behind on any loop. */
    int fds_before = open_fd_count();
    tl_loop *mixed[2] = {test_loop(0, 0, 0), test_loop(0, 0, TL_LOOP_NO_CPU_STEER)};
    int fds_loops = open_fd_count();
    tl_handle rl[2] = {0, 0};
    struct sockaddr_in a = loopback_any_port();
    assert_int_equal(
        tl_route_reuse_port_cpu(mixed, 2, (struct sockaddr *)&a, sizeof a, 0, NULL, rl),
        -EOPNOTSUPP);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(rl[i], 0);
        assert_int_equal(tl_loop_handles(mixed[i]), 0);
        assert_false(tl_loop_alive(mixed[i]));
    }
    assert_int_equal(open_fd_count(), fds_loops);
    /* Plain reuse-port is still there on those loops. */
    assert_int_equal(tl_route_reuse_port(mixed, 2, (struct sockaddr *)&a, sizeof a, 0, rl), 0);
    for (int i = 0; i < 2; i++) {
        tl_close(mixed[i], rl[i], 0);
        assert_int_equal(drain_loop(mixed[i]), 0);
        tl_loop_free(mixed[i]);
    }
    assert_int_equal(open_fd_count(), fds_before);
}

/* The orphan gate must be able to fail: a host that forgets each handle it
 * served exhausts the ceiling of 8 long before 64 connections, loudly. */
static void leaked_handle_caught_by_ceiling(void **state) {
    serve_config cfg = {.route = SERVE_REUSE_PORT,
                        .loops = 1,
                        .max_handles = 8,
                        .connections = 64,
                        .client_threads = 16,
                        .leak = true};
    serve_result r;
    serve_run(&cfg, &r);
    assert_int_equal(r.err, -EMFILE);
    assert_true(r.served[0] < 64);
    assert_true(r.alive_at_end); /* and the leaked handles keep the loop alive */
}

/* turnloop#77: multishot accept at max_handles 8 against 256 connections;
 * accepting pauses at the ceiling and resumes, and every id comes back. */
static void multishot_accept_honours_ceiling(void **state) {
    serve_config cfg = {.route = SERVE_MULTISHOT,
                        .loops = 1,
                        .max_handles = 8,
                        .connections = 256,
                        .client_threads = 32};
    serve_result r;
    serve_run(&cfg, &r);
    check_multi_threaded(&r, 1, 256);
}

/* The same rule, step by step and without timing: 20 connections queued in the
 * kernel against 7 free slots. Exactly 7 are accepted, accepting pauses (no
 * handle made, no connection reset), and each freed slot lets one more in. */
static void multishot_accept_pauses_and_resumes(void **state) {
    tl_loop *loop = test_loop(8, 0, 0);
    struct sockaddr_in a = loopback_any_port();
    tl_handle ls;
    assert_int_equal(tl_listen(loop, (struct sockaddr *)&a, sizeof a, NULL, &ls), 0);
    int fds[20];
    assert_int_equal(connect_many(handle_port(loop, ls), 20, fds), 0);
    assert_int_equal(tl_accept(loop, ls, TL_ACCEPT_MULTISHOT, 1, NULL), 0);
    tl_completion c[32];
    tl_handle got[20];
    int n = 0;
    for (int spins = 0; spins < 50; spins++) {
        int k = tl_loop_turn(loop, 10, c, 32);
        for (int i = 0; i < k; i++) {
            assert_int_equal(c[i].kind, TL_OP_ACCEPT);
            assert_int_equal(c[i].res, 0);
            assert_false(c[i].flags & TL_CQE_FINAL); /* paused, not ended */
            got[n++] = c[i].u.accepted;
        }
    }
    assert_int_equal(n, 7);
    assert_int_equal(tl_loop_handles(loop), 8);
    tl_loop_stats st;
    tl_loop_get_stats(loop, &st);
    assert_int_equal(st.accept_pauses, 1);
    /* Free three slots: three more come in, and no more. */
    for (int i = 0; i < 3; i++)
        assert_int_equal(tl_close(loop, got[i], 9), 0);
    int closes = 0, more = 0;
    for (int spins = 0; spins < 50; spins++) {
        int k = tl_loop_turn(loop, 10, c, 32);
        for (int i = 0; i < k; i++) {
            if (c[i].kind == TL_OP_CLOSE)
                closes++;
            else
                got[n + more++] = c[i].u.accepted;
        }
    }
    assert_int_equal(closes, 3);
    assert_int_equal(more, 3);
    n += more;
    /* Drain the rest one slot at a time; every queued connection is accepted.
     * A socket is closed once its close is reported (io_uring closes it in the
     * ring, in the next turn's batch): turn until all 20 are. */
    int served = 3;
    for (int spins = 0; (served < 20 || closes < 20) && spins < 2000; spins++) {
        int k = tl_loop_turn(loop, 10, c, 32);
        for (int i = 0; i < k; i++) {
            if (c[i].kind == TL_OP_ACCEPT)
                got[n++] = c[i].u.accepted;
            else if (c[i].kind == TL_OP_CLOSE)
                closes++;
        }
        for (int i = served; i < n; i++)
            tl_close(loop, got[i], 9);
        served = n;
    }
    assert_int_equal(n, 20);
    assert_int_equal(closes, 20);
    for (int i = 0; i < 20; i++) { /* nobody was reset while waiting */
        char ch;
        assert_int_equal(recv(fds[i], &ch, 1, 0), 0);
        close(fds[i]);
    }
    tl_close(loop, ls, 0);
    assert_int_equal(drain_loop(loop), 0);
    tl_loop_free(loop);
}

/* The herd: one listening socket in two loops' wait sets. epoll re-checks
 * readiness before it reports, so a loop woken after the winner has accepted
 * sees nothing (that cost is a context switch, invisible here); what a loop
 * can see is the race: woken while the connection was queued, beaten to it.
 * That counts as spurious; a probe on cached readiness (re-arming) does not.
 * With TL_SHARED_EXCLUSIVE the kernel wakes one loop: nothing to count. */
static void open_shared_pair(int exclusive, int *fd, struct sockaddr_in *a, tl_loop **loops,
                             tl_handle *ls, int *refused) {
    *fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    *a = loopback_any_port();
    assert_int_equal(bind(*fd, (struct sockaddr *)a, sizeof *a), 0);
    assert_int_equal(listen(*fd, 64), 0);
    socklen_t al = sizeof *a;
    getsockname(*fd, (struct sockaddr *)a, &al);
    loops[0] = test_loop(0, 0, 0);
    loops[1] = test_loop(0, 0, 0);
    unsigned fl = exclusive ? TL_SHARED_EXCLUSIVE : 0;
    int err = tl_listen_shared(loops[0], *fd, fl, &ls[0]);
    *refused = exclusive && err == -EOPNOTSUPP; /* a backend without wake-one there */
    if (*refused) {
        print_message("exclusive refused by %s: %s\n", tl_loop_backend(loops[0]), tl_strerror(err));
        return;
    }
    assert_int_equal(err, 0);
    assert_int_equal(tl_listen_shared(loops[1], *fd, fl, &ls[1]), 0);
}

static int accept_all(tl_loop *loop) {
    tl_completion c[4];
    int n = tl_loop_turn(loop, 0, c, 4), accepted = 0;
    for (int j = 0; j < n; j++)
        if (c[j].kind == TL_OP_ACCEPT && c[j].res == 0) {
            accepted++;
            tl_close(loop, c[j].u.accepted, 0);
        }
    return accepted;
}

static void shared_listener_counts_spurious_wakeups(void **state) {
    for (int exclusive = 0; exclusive < 2; exclusive++) {
        int fd, refused;
        struct sockaddr_in a;
        tl_loop *loops[2];
        tl_handle ls[2];
        open_shared_pair(exclusive, &fd, &a, loops, ls, &refused);
        if (!refused) {
            bool epoll = strcmp(tl_loop_backend(loops[0]), "epoll") == 0;
            assert_int_equal(tl_accept(loops[0], ls[0], 0, 1, NULL), 0);
            if (exclusive)
                assert_int_equal(tl_accept(loops[1], ls[1], 0, 1, NULL), 0);
            int cfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
            assert_int_equal(connect(cfd, (struct sockaddr *)&a, sizeof a), 0);
            usleep(20000); /* let the wake reach the wait sets */
            /* Herd: loop 1 is woken with the connection queued, not accepting yet. */
            int accepted = accept_all(loops[1]);
            accepted += accept_all(loops[0]);
            if (!exclusive) {
                assert_int_equal(tl_accept(loops[1], ls[1], 0, 1, NULL), 0);
                accepted += accept_all(loops[1]); /* beaten to it: EAGAIN */
            }
            assert_int_equal(accepted, 1);
            tl_loop_stats st[2];
            tl_loop_get_stats(loops[0], &st[0]);
            tl_loop_get_stats(loops[1], &st[1]);
            if (epoll)
                assert_int_equal(st[0].spurious_wakeups + st[1].spurious_wakeups,
                                 exclusive ? 0 : 1);
            close(cfd);
            for (int i = 0; i < 2; i++)
                tl_close(loops[i], ls[i], 0);
        }
        for (int i = 0; i < 2; i++) {
            assert_int_equal(drain_loop(loops[i]), 0);
            tl_loop_free(loops[i]);
        }
        close(fd);
    }
}

/* Wake-one is an epoll flag. Asked for by name, io_uring refuses an exclusive
 * listener and leaves nothing behind; an AUTO loop that holds nothing yet moves
 * to epoll to serve it (visibly), and one already in use refuses. */
static void shared_exclusive_refused_or_served_by_epoll(void **state) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = loopback_any_port();
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(fd, 64), 0);
    socklen_t al = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &al);

    tl_loop *named = test_loop(0, 0, 0);
    int fds_before = open_fd_count();
    tl_handle ls;
    int err = tl_listen_shared(named, fd, TL_SHARED_EXCLUSIVE, &ls);
    if (test_backend == TL_BACKEND_URING) {
        assert_int_equal(err, -EOPNOTSUPP);
        assert_int_equal(tl_loop_handles(named), 0);
        assert_int_equal(open_fd_count(), fds_before); /* the duplicate is closed */
        assert_string_equal(tl_loop_backend(named), "uring");
    } else {
        assert_int_equal(err, 0);
        tl_close(named, ls, 0);
    }
    assert_int_equal(drain_loop(named), 0);
    tl_loop_free(named);

    /* AUTO, empty: served by epoll, and it really accepts. */
    tl_loop_options o = {.backend = TL_BACKEND_AUTO};
    tl_loop *fresh;
    assert_int_equal(tl_loop_new(&fresh, &o), 0);
    assert_int_equal(tl_listen_shared(fresh, fd, TL_SHARED_EXCLUSIVE, &ls), 0);
    assert_string_equal(tl_loop_backend(fresh), "epoll");
    assert_int_equal(tl_accept(fresh, ls, 0, 1, NULL), 0);
    int cfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_int_equal(connect(cfd, (struct sockaddr *)&a, sizeof a), 0);
    tl_completion c[4];
    assert_int_equal(turn_until(fresh, c, 4, 1), 1);
    assert_int_equal(c[0].kind, TL_OP_ACCEPT);
    assert_int_equal(c[0].res, 0);
    tl_close(fresh, c[0].u.accepted, 0);
    tl_close(fresh, ls, 0);
    assert_int_equal(drain_loop(fresh), 0);
    tl_loop_free(fresh);
    close(cfd);

    /* AUTO, in use: it stays where it is; on io_uring that is a refusal. */
    tl_loop *busy;
    assert_int_equal(tl_loop_new(&busy, &o), 0);
    const char *was = tl_loop_backend(busy);
    tl_op t;
    assert_int_equal(tl_timer(busy, 60000, 0, &t), 0);
    err = tl_listen_shared(busy, fd, TL_SHARED_EXCLUSIVE, &ls);
    assert_string_equal(tl_loop_backend(busy), was);
    if (strcmp(was, "uring") == 0)
        assert_int_equal(err, -EOPNOTSUPP);
    else
        assert_int_equal(err, 0);
    assert_int_equal(tl_cancel(busy, t), 0);
    if (err == 0)
        tl_close(busy, ls, 0);
    assert_int_equal(drain_loop(busy), 0);
    tl_loop_free(busy);
    close(fd);
}

/* Acceptor threads on a listener another holder shares (a re-exec restart's
 * new process, a socket unit): they work on a non-blocking socket, and
 * stopping them leaves it listening, with its queue, for the other holder. */
static void acceptor_stop_leaves_shared_listener(void **state) {
    (void)state;
    tl_loop *loop = test_loop(0, 0, 0);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    struct sockaddr_in a = loopback_any_port();
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(fd, 16), 0);
    socklen_t al = sizeof a;
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &al), 0);
    tl_acceptor *acc;
    assert_int_equal(tl_acceptor_start(&acc, fd, 2, &loop, 1, TL_HANDOFF_ROUND_ROBIN, 7), 0);
    usleep(50 * 1000); /* the threads find the queue empty before anyone connects */
    int c1 = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_int_equal(connect(c1, (struct sockaddr *)&a, sizeof a), 0);
    tl_completion c[4];
    assert_int_equal(turn_until(loop, c, 4, 1), 1);
    assert_int_equal(c[0].kind, TL_OP_ADOPT);
    assert_int_equal(c[0].res, 0);
    assert_int_equal(c[0].token, 7);
    assert_int_equal(tl_close(loop, c[0].u.accepted, 0), 0);
    tl_acceptor_stop(acc);
    /* Still listening: a new connection queues and the other holder accepts it. */
    int c2 = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_int_equal(connect(c2, (struct sockaddr *)&a, sizeof a), 0);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    assert_int_equal(poll(&p, 1, 2000), 1);
    int s2 = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
    assert_true(s2 >= 0);
    close(s2);
    close(c2);
    close(c1);
    close(fd);
    assert_int_equal(drain_loop(loop), 0);
    tl_loop_free(loop);
}

static const struct CMUnitTest accept_route_tests[] = {
    cmocka_unit_test(reuse_port_share_binds_twice),
    cmocka_unit_test(reuse_port_distribution),
    cmocka_unit_test(accept_handoff_distribution),
    cmocka_unit_test(accept_handoff_least_loaded),
    cmocka_unit_test(multi_threaded_accept_by_handoff),
    cmocka_unit_test(multi_threaded_accept_by_reuse_port),
    cmocka_unit_test(multi_threaded_accept_by_handoff_group),
    cmocka_unit_test(handoff_group_subsets_and_refusal),
    cmocka_unit_test(reuse_port_cpu_steering),
    cmocka_unit_test(leaked_handle_caught_by_ceiling),
    cmocka_unit_test(multishot_accept_honours_ceiling),
    cmocka_unit_test(multishot_accept_pauses_and_resumes),
    cmocka_unit_test(shared_listener_counts_spurious_wakeups),
    cmocka_unit_test(shared_exclusive_refused_or_served_by_epoll),
    cmocka_unit_test(acceptor_stop_leaves_shared_listener),
};
const size_t accept_route_test_count = sizeof accept_route_tests / sizeof accept_route_tests[0];
const struct CMUnitTest *const accept_route_tests_p = accept_route_tests;
