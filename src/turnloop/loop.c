/* The loop: creation, the turn, and delivery of completions to the host.
 * A turn makes at most one OS wait, and none when the host's array would be
 * filled by what is already queued. Slots are freed only on delivery, so a
 * final completion holds its operation slot until the host has received it. */
#include "internal.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

uint64_t tl__clock_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* A per-loop tag from the loop's address: ids of different loops differ in it
 * (up to a 1 in 65535 coincidence), without any process-wide counter. */
static uint16_t tag_for(const void *p) {
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    uint16_t t = (uint16_t)x;
    return t ? t : 1;
}

static int select_backend(tl_loop *loop, tl_backend_kind kind) {
    switch (kind) {
    case TL_BACKEND_EPOLL:
        loop->be = &tl__backend_epoll;
        return 0;
    case TL_BACKEND_URING:
#ifdef TL_HAVE_URING
        loop->be = &tl__backend_uring;
        return 0;
#else
        return -EOPNOTSUPP; /* not built: liburing was absent at build time */
#endif
    case TL_BACKEND_AUTO: {
        loop->be_auto = true;
        /* An operator's switch, like libuv's UV_USE_IO_URING=0: run a host
         * that asks for auto on epoll without rebuilding or reconfiguring it. */
        const char *env = getenv("TURNLOOP_BACKEND");
        if (env && strcmp(env, "epoll") == 0) {
            loop->be = &tl__backend_epoll;
            return 0;
        }
#ifdef TL_HAVE_URING
        loop->be = tl__uring_probe() == 0 ? &tl__backend_uring : &tl__backend_epoll;
#else
        loop->be = &tl__backend_epoll;
#endif
        return 0;
    }
    }
    return -EINVAL;
}

/* An operator's (or an end-to-end test's) switch for the UDP kernel features,
 * as TURNLOOP_URING_DISABLE is for io_uring's: TURNLOOP_UDP_DISABLE=cid_steer,gso,gro
 * (or all) makes every loop behave as on a kernel without them, through the
 * same per-loop flags the contract tests set. */
static unsigned udp_disabled_by_env(void) {
    const char *off = getenv("TURNLOOP_UDP_DISABLE");
    if (!off)
        return 0;
    bool all = strstr(off, "all") != NULL;
    return (all || strstr(off, "cid_steer") ? TL_LOOP_NO_CID_STEER : 0) |
           (all || strstr(off, "gso") ? TL_LOOP_NO_UDP_GSO : 0) |
           (all || strstr(off, "gro") ? TL_LOOP_NO_UDP_GRO : 0);
}

int tl_loop_new(tl_loop **out, const tl_loop_options *opts) {
    tl_loop_options o = {0};
    if (opts)
        o = *opts;
    o.flags |= udp_disabled_by_env();
    if (o.max_handles >= TL_ID_MAX_SLOTS || o.max_operations >= TL_ID_MAX_SLOTS)
        return -EINVAL;
    tl_loop *loop = calloc(1, sizeof *loop);
    if (!loop)
        return -ENOMEM;
    loop->tag = tag_for(loop);
    loop->flags = o.flags;
    loop->wake_fd = -1;
    loop->h_free = loop->o_free = loop->io_free = TL_NIL;
    loop->h_max = o.max_handles;
    loop->h_fixed = o.max_handles != 0;
    loop->o_max = o.max_operations;
    loop->o_fixed = o.max_operations != 0;
    loop->now_ms = tl__clock_ms();
    tl__inbox_init(&loop->inbox);

    int err = select_backend(loop, o.backend);
    /* A fixed ceiling is preallocated whole: no allocation on the way to it. */
    if (err == 0 && loop->h_fixed)
        err = tl__slots_grow((void **)&loop->h, &loop->h_cap, loop->h_max, sizeof *loop->h);
    if (err == 0 && loop->o_fixed)
        err = tl__ops_grow(loop, loop->o_max);
    if (err == 0)
        err = tl__buffers_init(loop, o.recv_buffers ? o.recv_buffers : 64,
                               o.recv_buffer_size ? o.recv_buffer_size : 16384);
    if (err == 0 && o.udp_recv_buffers)
        err = tl__udp_pool_init(loop, o.udp_recv_buffers,
                                o.udp_recv_buffer_size ? o.udp_recv_buffer_size
                                                       : TL_UDP_HEADROOM + 65535);
    if (err == 0)
        err = loop->be->init(loop);
    if (err == 0) {
        err = tl__loop_fit(loop);
        if (err < 0)
            loop->be->fini(loop); /* init succeeded: its state must go */
    }
    if (err < 0) {
        loop->be = NULL;
        tl_loop_free(loop);
        return err;
    }
    *out = loop;
    return 0;
}

int tl__loop_fall_back_to_epoll(tl_loop *loop) {
    if (!loop->be_auto || loop->be == &tl__backend_epoll)
        return -EOPNOTSUPP;
    if (loop->h_open > 0 || loop->o_live > 0 || loop->cq.len > 0 || loop->adopt_len > 0)
        return -EOPNOTSUPP; /* something is in flight on the first backend */
    /* The wake descriptor stays: other threads may be writing to it right now. */
    int wake = loop->wake_fd;
    loop->wake_fd = -1;
    loop->be->fini(loop);
    loop->wake_fd = wake;
    loop->be = &tl__backend_epoll;
    int err = loop->be->init(loop);
    return err < 0 ? err : tl__loop_fit(loop);
}

void tl_loop_free(tl_loop *loop) {
    if (!loop)
        return;
    for (uint32_t i = 0; i < loop->h_cap; i++)
        if (loop->h[i].state == TL_SLOT_LIVE && loop->h[i].fd >= 0 && !loop->h[i].direct)
            close(loop->h[i].fd); /* direct ones go with the ring's table (fini) */
    for (uint32_t i = 0; i < loop->adopt_len; i++)
        close(loop->adopt_wait[i].transport.fd);
    tl__inbox_discard(loop); /* closes transports still queued: the loop is going */
    tl__udp_free_forwarded(loop);
    if (loop->be)
        loop->be->fini(loop);
    tl__inbox_fini(&loop->inbox);
    tl__buffers_fini(loop);
    tl__udp_pool_fini(loop);
    free(loop->adopt_wait);
    free(loop->heap);
    free(loop->ready);
    free(loop->ready_spare);
    free(loop->cq.rec);
    tl__slots_free(loop->h, loop->h_cap, sizeof *loop->h);
    tl__slots_free(loop->o, loop->o_cap, sizeof *loop->o);
    tl__slots_free(loop->io, loop->io_cap, sizeof *loop->io);
    free(loop);
}

/* Bookkeeping when the host receives a record: the moment slots become free. */
static void delivered(tl_loop *loop, const tl_completion *c) {
    uint32_t hi = TL_NIL;
    if (c->handle && tl__handle_lookup(loop, c->handle, &hi) == 0) {
        tl_hslot *h = &loop->h[hi];
        h->undelivered--;
        if (c->flags & TL_CQE_BUFFER)
            h->bufs_held++;
    }
    if (c->op && (c->flags & TL_CQE_FINAL)) {
        uint32_t oi = (uint32_t)(c->op & (TL_ID_MAX_SLOTS - 1));
        tl_oslot *o = &loop->o[oi];
        tl__op_io_release(loop, o);
        o->state = TL_SLOT_FREE;
        o->gen++;
        o->next = loop->o_free;
        loop->o_free = oi;
        loop->o_live--;
    }
    if (c->kind == TL_OP_CLOSE && hi != TL_NIL)
        tl__handle_release_slot(loop, hi);
    if (c->kind == TL_OP_POST || c->kind == TL_OP_ADOPT || c->kind == TL_OP_UDP_FORWARDED)
        loop->cq_extra--;
}

/* A turn that fails after completions were written into the host's array
 * queues them again, ahead of any queued behind them: the host gets them next
 * turn, as if they had been queued all along. */
static void out_requeue(tl_loop *loop) {
    tl_cqueue *q = &loop->cq;
    for (uint32_t i = loop->out_len; i-- > 0;) {
        q->head = (q->head - 1) & (q->cap - 1);
        q->rec[q->head] = loop->out[i];
        q->len++;
    }
    loop->out_len = 0;
}

int tl_loop_turn(tl_loop *loop, int timeout_ms, tl_completion *out, int cap) {
    if (cap <= 0 || !out)
        return -EINVAL;
    loop->stats.turns++;
    loop->now_ms = tl__clock_ms();
    int n = 0;
    if (loop->cq.len < (uint32_t)cap) {
        bool busy = loop->cq.len > 0 || loop->ready_len > 0 ||
                    atomic_load_explicit(&loop->inbox.count, memory_order_acquire) > 0;
        int t = busy ? 0 : tl__timers_timeout(loop, timeout_ms);
        loop->stats.waits++;
        if (loop->cq.len == 0) {
            loop->out = out;
            loop->out_cap = (uint32_t)cap;
        }
        int err = loop->be->wait(loop, t);
        if (err < 0 && err != -EINTR) {
            out_requeue(loop);
            loop->out_cap = 0;
            return err;
        }
        loop->now_ms = tl__clock_ms();
        tl__timers_expire(loop);
        if (atomic_load_explicit(&loop->inbox.count, memory_order_acquire) > 0)
            tl__inbox_drain(loop);
        n = (int)loop->out_len;
        loop->out_len = loop->out_cap = 0;
        for (int i = 0; i < n; i++)
            delivered(loop, &out[i]);
    }
    while (n < cap && loop->cq.len > 0) {
        tl_cqueue *q = &loop->cq;
        out[n] = q->rec[q->head];
        q->head = (q->head + 1) & (q->cap - 1);
        q->len--;
        delivered(loop, &out[n]);
        n++;
    }
    if (loop->cq.len == 0)
        loop->cq.head = 0; /* the queue is sized for the worst case: touch only its start */
    return n;
}

int tl_loop_alive(const tl_loop *loop) {
    return loop->h_open > 0 || loop->o_live > 0 || loop->cq.len > 0 || loop->adopt_len > 0 ||
           atomic_load_explicit(&((tl_loop *)loop)->inbox.count, memory_order_acquire) > 0;
}

uint32_t tl_loop_handles(const tl_loop *loop) {
    return loop->h_open;
}
uint32_t tl_loop_max_handles(const tl_loop *loop) {
    return loop->h_fixed ? loop->h_max : 0;
}
const char *tl_loop_backend(const tl_loop *loop) {
    return loop->be->name;
}
void tl_loop_get_stats(const tl_loop *loop, tl_loop_stats *out) {
    *out = loop->stats;
}
uint64_t tl_loop_now(const tl_loop *loop) {
    return loop->now_ms;
}

uint32_t tl_loop_load(const tl_loop *loop) {
    return atomic_load_explicit(&((tl_loop *)loop)->load, memory_order_relaxed);
}

void tl__ready_push(tl_loop *loop, uint32_t hi) {
    tl_hslot *h = &loop->h[hi];
    if (h->on_ready)
        return;
    assert(loop->ready_len < loop->ready_cap); /* tl__loop_fit: h_cap entries */
    h->on_ready = 1;
    loop->ready[loop->ready_len++] = hi;
}

uint32_t *tl__ready_take(tl_loop *loop, uint32_t *len) {
    uint32_t *list = loop->ready;
    uint32_t cap = loop->ready_cap;
    *len = loop->ready_len;
    loop->ready = loop->ready_spare;
    loop->ready_cap = loop->ready_spare_cap;
    loop->ready_len = 0;
    loop->ready_spare = list;
    loop->ready_spare_cap = cap;
    return list;
}

/* What the completion queue must hold besides the inbox's completions: a final
 * completion per op slot (a slot is free only once its final is delivered), a
 * close and an accepted connection per handle slot, and a received buffer per
 * loop buffer of either pool (a buffer is back only once the host releases it). */
static uint32_t cq_bound(const tl_loop *loop) {
    return loop->o_cap + 2 * loop->h_cap + loop->buf_count + loop->ubuf_count;
}

static int cq_grow(tl_loop *loop, uint64_t need) {
    tl_cqueue *q = &loop->cq;
    if (need <= q->cap)
        return 0;
    if (need > (1u << 31))
        return -ENOMEM;
    uint32_t ncap = q->cap ? q->cap : 256;
    while (ncap < need)
        ncap *= 2;
    tl_completion *n = malloc((size_t)ncap * sizeof *n);
    if (!n)
        return -ENOMEM;
    for (uint32_t i = 0; i < q->len; i++)
        n[i] = q->rec[(q->head + i) & (q->cap - 1)];
    free(q->rec);
    q->rec = n;
    q->cap = ncap;
    q->head = 0;
    return 0;
}

static int grow_u32(uint32_t **arr, uint32_t *cap, uint32_t need) {
    if (need <= *cap)
        return 0;
    uint32_t *n = realloc(*arr, (size_t)need * sizeof *n);
    if (!n)
        return -ENOMEM;
    *arr = n;
    *cap = need;
    return 0;
}

/* The timer heap copies its heap_len entries only, not its old capacity (as
 * realloc would): sized for every op, it touches what timers have used. */
static int grow_heap(tl_loop *loop) {
    if (loop->o_cap <= loop->heap_cap)
        return 0;
    uint32_t *n = malloc((size_t)loop->o_cap * sizeof *n);
    if (!n)
        return -ENOMEM;
    if (loop->heap_len)
        memcpy(n, loop->heap, (size_t)loop->heap_len * sizeof *n);
    free(loop->heap);
    loop->heap = n;
    loop->heap_cap = loop->o_cap;
    return 0;
}

int tl__loop_fit(tl_loop *loop) {
    int err = cq_grow(loop, (uint64_t)cq_bound(loop) + loop->cq_extra);
    if (err == 0)
        err = grow_u32(&loop->ready, &loop->ready_cap, loop->h_cap);
    if (err == 0)
        err = grow_u32(&loop->ready_spare, &loop->ready_spare_cap, loop->h_cap);
    if (err == 0)
        err = grow_heap(loop); /* timers are ops */
    if (err == 0)
        err = tl__starve_fit(loop);
    if (err == 0 && loop->be && loop->be->fit)
        err = loop->be->fit(loop);
    if (err < 0)
        return err;
    loop->fit_h = loop->h_cap;
    loop->fit_o = loop->o_cap;
    return 0;
}

int tl__cq_reserve_extra(tl_loop *loop, uint32_t n) {
    return cq_grow(loop, (uint64_t)cq_bound(loop) + loop->cq_extra + n);
}

tl_completion *tl__cq_queue_slot(tl_loop *loop) {
    tl_cqueue *q = &loop->cq;
    /* Never grows here, inside a turn: tl__loop_fit and tl__cq_reserve_extra
     * made the room before the op, handle or inbox item that completes. */
    assert(q->len < q->cap);
    if (q->len == q->cap)
        abort(); /* a broken bound; losing a completion would break exactly-once */
    tl_completion *c = &q->rec[(q->head + q->len) & (q->cap - 1)];
    q->len++;
    return c;
}

tl_completion *tl__cq_push(tl_loop *loop) {
    tl_completion *c = tl__cq_slot(loop);
    memset(c, 0, sizeof *c);
    return c;
}

const char *tl_strerror(int err) {
    switch (err) {
    case 0:
        return "success";
    case -EMFILE:
        return "handle ceiling reached (max_handles)";
    case -ENOSPC:
        return "operation ceiling reached (max_operations)";
    case -EAGAIN:
        return "would block: try again after a turn";
    case -EOPNOTSUPP:
        return "unsupported on this platform or backend";
    case -ENOENT:
        return "stale id: the handle or operation is gone";
    case -EINVAL:
        return "invalid argument, or an id of another loop";
    case -ECANCELED:
        return "operation cancelled";
    case -ENOBUFS:
        return "no loop buffer free";
    case -EALREADY:
        return "already asked: the close or cancel in progress completes once";
    case -EBADF:
        return "the handle is closing or detaching";
    default:
        return err < 0 ? strerror(-err) : "not an error code";
    }
}

unsigned tl_version(void) {
    return (TL_VERSION_MAJOR << 16) | (TL_VERSION_MINOR << 8) | TL_VERSION_PATCH;
}

const char *tl_version_string(void) {
    return TL_VERSION_STRING;
}
