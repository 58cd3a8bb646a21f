/* Every allocation turnloop makes on a connection's way (loop, listener,
 * accept, recv, write, timer, post, detach and attach, close) fails in turn:
 * the run with the Nth allocation refused must see an error from a call or a
 * completion, free everything it holds, and leave no allocation of the
 * library's behind. The library's objects are linked with -Wl,--wrap for
 * malloc, calloc, realloc and free (tests/unit/CMakeLists.txt), so only its
 * own allocations are counted and refused, not libc's or liburing's. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "turnloop.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);

static long fail_at;     /* refuse the allocation with this number; 0 = none */
static long alloc_calls; /* allocations asked for since the run began */
static long faults;      /* allocations refused this run */
static long live;        /* the library's allocations not yet freed */

static int refuse(void) {
    if (fail_at > 0 && ++alloc_calls == fail_at) {
        faults++;
        return 1;
    }
    return 0;
}

void *__wrap_malloc(size_t n) {
    if (refuse())
        return NULL;
    void *p = __real_malloc(n);
    if (p)
        live++;
    return p;
}

void *__wrap_calloc(size_t k, size_t n) {
    if (refuse())
        return NULL;
    void *p = __real_calloc(k, n);
    if (p)
        live++;
    return p;
}

void *__wrap_realloc(void *old, size_t n) {
    if (refuse())
        return NULL; /* old stays valid, as realloc promises */
    void *p = __real_realloc(old, n);
    if (p && !old)
        live++;
    return p;
}

void __wrap_free(void *p) {
    if (p)
        live--;
    __real_free(p);
}

enum { T_ACCEPT = 1, T_RECV, T_WRITE, T_TIMER, T_POST, T_ADOPT, T_CLOSE };

typedef struct run {
    tl_loop *loop, *other;
    tl_handle listener, conn, moved;
    int client;
    int errors; /* calls and completions that reported an error */
    int closes; /* TL_OP_CLOSE completions */
} run;

/* Turns until a completion with token arrives (true) or a bounded number of
 * turns pass (false). Buffers are given back at once; errors are counted. */
static bool turn_until(run *r, tl_loop *loop, uint64_t token, tl_completion *got) {
    tl_completion cq[16];
    for (int turns = 0; turns < 200; turns++) {
        int n = tl_loop_turn(loop, 10, cq, 16);
        if (n < 0) {
            r->errors++;
            return false;
        }
        bool found = false;
        for (int i = 0; i < n; i++) {
            if (cq[i].flags & TL_CQE_BUFFER)
                tl_buffer_release(loop, cq[i].u.buf.id);
            if (cq[i].res < 0 && cq[i].res != -ECANCELED)
                r->errors++;
            if (cq[i].kind == TL_OP_CLOSE)
                r->closes++;
            if (cq[i].token == token && !found) {
                *got = cq[i];
                found = true;
            }
        }
        if (found)
            return true;
    }
    return false;
}

static bool ok(run *r, int rc) {
    if (rc < 0) {
        /* A refused allocation reports -ENOMEM; nothing else may come of it. */
        assert_int_equal(rc, -ENOMEM);
        r->errors++;
        return false;
    }
    return true;
}

/* Closes whatever the run still holds and turns each loop to rest. */
static void finish(run *r) {
    tl_completion c;
    if (r->moved && tl_close(r->other, r->moved, T_CLOSE) == 0)
        turn_until(r, r->other, T_CLOSE, &c);
    if (r->conn && tl_close(r->loop, r->conn, T_CLOSE) == 0)
        turn_until(r, r->loop, T_CLOSE, &c);
    if (r->listener && tl_close(r->loop, r->listener, T_CLOSE) == 0)
        turn_until(r, r->loop, T_CLOSE, &c);
    tl_loop *loops[2] = {r->loop, r->other};
    for (int i = 0; i < 2; i++) {
        if (!loops[i])
            continue;
        for (int t = 0; t < 100 && tl_loop_alive(loops[i]); t++) {
            tl_completion cq[16];
            int n = tl_loop_turn(loops[i], 5, cq, 16);
            for (int k = 0; k < n; k++)
                if (cq[k].flags & TL_CQE_BUFFER)
                    tl_buffer_release(loops[i], cq[k].u.buf.id);
        }
        assert_false(tl_loop_alive(loops[i]));
        tl_loop_free(loops[i]);
    }
    if (r->client >= 0)
        close(r->client);
}

/* One connection's life on a loop that grows its tables as it goes (no fixed
 * ceiling, so every table growth is an allocation that can fail). Returns
 * true when every step succeeded. */
static bool scenario(tl_backend_kind backend, run *r) {
    memset(r, 0, sizeof(*r));
    r->client = -1;
    tl_loop_options o = {.backend = backend, .recv_buffers = 4, .recv_buffer_size = 4096};
    if (!ok(r, tl_loop_new(&r->loop, &o)))
        return r->loop = NULL, false;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (!ok(r, tl_listen(r->loop, (struct sockaddr *)&a, sizeof(a), NULL, &r->listener)))
        return r->listener = 0, false;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    assert_int_equal(tl_handle_sockname(r->loop, r->listener, &ss, &sl), 0);
    r->client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(r->client >= 0);
    assert_int_equal(connect(r->client, (struct sockaddr *)&ss, sl), 0);

    tl_op op;
    tl_completion c;
    if (!ok(r, tl_accept(r->loop, r->listener, 0, T_ACCEPT, &op)))
        return false;
    if (!turn_until(r, r->loop, T_ACCEPT, &c) || c.res < 0)
        return false;
    r->conn = c.u.accepted;

    if (!ok(r, tl_recv(r->loop, r->conn, T_RECV, &op)))
        return false;
    assert_int_equal(write(r->client, "ping", 4), 4);
    if (!turn_until(r, r->loop, T_RECV, &c) || c.res != 4)
        return false;
    tl_cancel(r->loop, op);

    if (!ok(r, tl_write(r->loop, r->conn, "pong", 4, T_WRITE, &op)))
        return false;
    if (!turn_until(r, r->loop, T_WRITE, &c) || c.res != 4)
        return false;
    char buf[4];
    assert_int_equal(read(r->client, buf, 4), 4);

    if (!ok(r, tl_timer(r->loop, 1, T_TIMER, &op)))
        return false;
    if (!turn_until(r, r->loop, T_TIMER, &c) || c.res < 0)
        return false;

    tl_message m = {.value = 7};
    if (!ok(r, tl_loop_post(r->loop, T_POST, &m)))
        return false;
    if (!turn_until(r, r->loop, T_POST, &c) || c.u.msg.value != 7)
        return false;

    /* Move the connection to a second loop, as a host does between threads. */
    if (!ok(r, tl_loop_new(&r->other, &o)))
        return r->other = NULL, false;
    tl_detached d;
    int rc;
    for (int i = 0; i < 100 && (rc = tl_detach(r->loop, r->conn, &d)) == -EAGAIN; i++)
        turn_until(r, r->loop, 0, &c);
    if (!ok(r, rc))
        return false;
    r->conn = 0;
    rc = tl_attach(r->other, &d, &r->moved);
    if (!ok(r, rc))
        return r->moved = 0, false; /* the transport is closed on error, never leaked */
    if (!ok(r, tl_write(r->other, r->moved, "moved", 5, T_WRITE, &op)))
        return false;
    if (!turn_until(r, r->other, T_WRITE, &c) || c.res != 5)
        return false;
    char mb[5];
    assert_int_equal(read(r->client, mb, 5), 5);
    return true;
}

static void every_allocation_failure_is_survived(tl_backend_kind backend) {
    long clean_calls = -1;
    for (fail_at = 1; fail_at < 2000; fail_at++) {
        alloc_calls = 0;
        faults = 0;
        long live0 = live;
        run r;
        bool done = scenario(backend, &r);
        finish(&r);
        assert_int_equal(live, live0); /* nothing of the library's is left behind */
        if (faults == 0) {
            /* The scenario asked for fewer allocations than fail_at: every one
             * of them has been refused once. */
            assert_true(done);
            clean_calls = alloc_calls;
            break;
        }
        /* A refused allocation either surfaced as an error or was absorbed
         * without changing what the host sees (a growth retried later). */
        if (!done)
            assert_true(r.errors > 0);
    }
    assert_true(clean_calls > 0);
    fail_at = 0;
    print_message("%s: %ld allocations, each refused once and survived\n",
                  backend == TL_BACKEND_EPOLL ? "epoll" : "uring", clean_calls);
}

static void epoll_allocation_faults(void **state) {
    (void)state;
    every_allocation_failure_is_survived(TL_BACKEND_EPOLL);
}

static void uring_allocation_faults(void **state) {
    (void)state;
    tl_loop *probe;
    tl_loop_options o = {.backend = TL_BACKEND_URING};
    int rc = tl_loop_new(&probe, &o);
    if (rc < 0) {
        print_message("SKIP: the uring backend cannot run here: %s\n", tl_strerror(rc));
        skip();
    }
    tl_loop_free(probe);
    every_allocation_failure_is_survived(TL_BACKEND_URING);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(epoll_allocation_faults),
        cmocka_unit_test(uring_allocation_faults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
