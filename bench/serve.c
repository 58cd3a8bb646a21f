/* The server side of turnloop-bench: one thread turns one loop and serves each
 * connection it accepts or adopts (read the B-byte payload, echo it, close).
 * A connection counts for its loop only once its close has completed, so
 * per_loop is the number of whole exchanges that loop carried. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "bench.h"

/* Tokens of accepts and adoptions; a connection's token is its conn pointer,
 * which is never this small. */
enum { TOKEN_ACCEPT = 1, TOKEN_ADOPT = 2 };

/* Turn timeout: the stop flag is also delivered with tl_loop_wake(), so this
 * only bounds how long a lost wake could delay shutdown. */
enum { TURN_TIMEOUT_MS = 50, BATCH = 64, DRAIN_MS = 3000 };

typedef struct conn {
    struct conn *next_free;
    tl_handle h;
    uint32_t got;
    int ok;
    unsigned char buf[]; /* payload bytes, echoed back */
} conn;

typedef struct server {
    bench_loop *bl;
    uint32_t payload;
    conn *free_list;
    tl_op accept_op; /* 0 when no accept is pending */
    int miscount_pending;
} server;

static conn *conn_get(server *s) {
    conn *c = s->free_list;
    if (c) {
        s->free_list = c->next_free;
    } else {
        /* Pool growth happens only up to the peak concurrency (about K), so
         * steady state allocates nothing. */
        c = malloc(sizeof(*c) + s->payload);
        if (!c)
            return NULL;
    }
    c->next_free = NULL;
    c->h = 0;
    c->got = 0;
    c->ok = 0;
    return c;
}

static void conn_put(server *s, conn *c) {
    c->next_free = s->free_list;
    s->free_list = c;
}

static void note_error(bench_loop *bl, int err) {
    if (!bl->first_error)
        bl->first_error = err;
}

static void arm_accept(server *s) {
    bench_loop *bl = s->bl;
    if (!bl->accepting || !bl->listener || atomic_load(bl->stop) || s->accept_op)
        return;
    int rc = tl_accept(bl->loop, bl->listener, 0, TOKEN_ACCEPT, &s->accept_op);
    if (rc < 0) {
        s->accept_op = 0;
        bl->setup_errors++;
        note_error(bl, rc);
    }
}

/* Closing is the one path that ends a connection, so a failure to start an
 * operation lands here too; the conn is recycled on the TL_OP_CLOSE record. */
static void conn_close(server *s, conn *c) {
    bench_loop *bl = s->bl;
    int rc = tl_close(bl->loop, c->h, (uint64_t)(uintptr_t)c);
    if (rc < 0) {
        bl->setup_errors++;
        note_error(bl, rc);
        if (!c->ok)
            bl->failed++;
        conn_put(s, c);
    }
}

static void conn_fail(server *s, conn *c, int err) {
    s->bl->failed++;
    note_error(s->bl, err);
    c->ok = 0;
    conn_close(s, c);
}

static void conn_read_more(server *s, conn *c) {
    tl_op op;
    int rc = tl_read(s->bl->loop, c->h, c->buf + c->got, s->payload - c->got,
                     (uint64_t)(uintptr_t)c, &op);
    if (rc < 0)
        conn_fail(s, c, rc);
}

static void conn_begin(server *s, tl_handle h) {
    conn *c = conn_get(s);
    if (!c) {
        s->bl->failed++;
        note_error(s->bl, -ENOMEM);
        tl_close(s->bl->loop, h, 0);
        return;
    }
    c->h = h;
    conn_read_more(s, c);
}

static void on_conn(server *s, const tl_completion *cq) {
    conn *c = (conn *)(uintptr_t)cq->token;
    bench_loop *bl = s->bl;
    switch (cq->kind) {
    case TL_OP_READ:
        if (cq->res == 0 && bl->cfg->long_lived && c->got == 0 && c->ok) {
            conn_close(s, c); /* the client's clean end, between requests */
            return;
        }
        if (cq->res <= 0) {
            conn_fail(s, c, cq->res == 0 ? -ECONNRESET : cq->res);
            return;
        }
        c->got += (uint32_t)cq->res;
        if (c->got < s->payload) {
            conn_read_more(s, c);
            return;
        }
        tl_op op;
        int rc = tl_write(bl->loop, c->h, c->buf, s->payload, cq->token, &op);
        if (rc < 0)
            conn_fail(s, c, rc);
        return;
    case TL_OP_WRITE:
        if (cq->res != (int32_t)s->payload) {
            conn_fail(s, c, cq->res < 0 ? cq->res : -EIO);
            return;
        }
        c->ok = 1;
        if (bl->cfg->long_lived) { /* keep-alive: the next request on the same connection */
            atomic_fetch_add_explicit(&bl->requests, 1, memory_order_relaxed);
            c->got = 0;
            conn_read_more(s, c);
            return;
        }
        conn_close(s, c);
        return;
    case TL_OP_CLOSE:
        if (c->ok) {
            if (s->miscount_pending)
                s->miscount_pending = 0;
            else
                atomic_fetch_add_explicit(&bl->served, 1, memory_order_relaxed);
        }
        conn_put(s, c);
        return;
    default:
        return;
    }
}

static void handle(server *s, const tl_completion *cq) {
    bench_loop *bl = s->bl;
    if (cq->kind == TL_OP_ACCEPT && cq->token == TOKEN_ACCEPT) {
        if (cq->flags & TL_CQE_FINAL)
            s->accept_op = 0;
        if (cq->res < 0) {
            if (cq->res != -ECANCELED) {
                bl->accept_errors++;
                note_error(bl, cq->res);
            }
            arm_accept(s);
            return;
        }
        arm_accept(s);
        if (bl->handoff) {
            int w = tl_handoff_dispatch(bl->handoff, bl->loop, cq->u.accepted, TOKEN_ADOPT);
            if (w < 0) {
                bl->failed++;
                note_error(bl, w);
            } else {
                bl->dispatched++;
            }
            return;
        }
        conn_begin(s, cq->u.accepted);
        return;
    }
    if (cq->kind == TL_OP_ADOPT) {
        if (cq->res < 0 || !cq->u.accepted) {
            bl->failed++;
            note_error(bl, cq->res < 0 ? cq->res : -EBADF);
            return;
        }
        conn_begin(s, cq->u.accepted);
        return;
    }
    if (cq->kind == TL_OP_CLOSE && cq->token == 0)
        return; /* a listener, or a connection closed before it had a conn */
    if (cq->kind == TL_OP_POST || cq->kind == TL_OP_TIMER)
        return;
    on_conn(s, cq);
}

static uint64_t thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void thread_csw(uint64_t *vol, uint64_t *invol) {
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) < 0)
        memset(&ru, 0, sizeof(ru));
    *vol = (uint64_t)ru.ru_nvcsw;
    *invol = (uint64_t)ru.ru_nivcsw;
}

static void *loop_main(void *arg) {
    bench_loop *bl = arg;
    server s = {.bl = bl, .payload = bl->cfg->payload};
    s.miscount_pending = bl->cfg->test_miscount && bl->index == 0;
    tl_completion out[BATCH];
    uint64_t cpu0 = thread_cpu_ns();
    uint64_t vcsw0, ivcsw0;
    thread_csw(&vcsw0, &ivcsw0);

    arm_accept(&s);
    int stopping = 0;
    uint64_t drain_deadline = 0;
    for (;;) {
        if (!stopping && atomic_load(bl->stop)) {
            /* Closing the listener cancels its accept; what is in flight is
             * still served, then the loop must come to rest by itself. */
            stopping = 1;
            if (bl->listener) {
                tl_close(bl->loop, bl->listener, 0);
                bl->listener = 0;
            }
            drain_deadline = bench_now_ns() + (uint64_t)DRAIN_MS * 1000000ull;
        }
        if (stopping && (!tl_loop_alive(bl->loop) || bench_now_ns() > drain_deadline))
            break;
        int n = tl_loop_turn(bl->loop, TURN_TIMEOUT_MS, out, BATCH);
        if (n < 0) {
            note_error(bl, n);
            bl->setup_errors++;
            if (stopping)
                break;
            continue;
        }
        for (int i = 0; i < n; i++)
            handle(&s, &out[i]);
    }
    bl->alive_at_end = tl_loop_alive(bl->loop);
    tl_loop_get_stats(bl->loop, &bl->stats);
    bl->cpu_ns = thread_cpu_ns() - cpu0;
    thread_csw(&bl->vcsw, &bl->ivcsw);
    bl->vcsw -= vcsw0;
    bl->ivcsw -= ivcsw0;
    while (s.free_list) {
        conn *c = s.free_list;
        s.free_list = c->next_free;
        free(c);
    }
    return NULL;
}

int bench_loop_start(bench_loop *bl) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    if (bl->cpu >= 0) { /* pinned from its first instruction, not moved later */
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(bl->cpu, &set);
        pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
    }
    int rc = pthread_create(&bl->thread, &attr, loop_main, bl);
    pthread_attr_destroy(&attr);
    return rc ? -rc : 0;
}

void bench_loop_join(bench_loop *bl) {
    pthread_join(bl->thread, NULL);
}
