/* Timers: a binary min-heap of op slots ordered by deadline. Each timer op
 * knows its heap position, so cancelling is O(log n) removal rather than a
 * tombstone that would pile up under per-request idle timers. */
#include "internal.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>

static bool earlier(const tl_loop *loop, uint32_t a, uint32_t b) {
    return loop->o[a].deadline < loop->o[b].deadline;
}

static void place(tl_loop *loop, uint32_t pos, uint32_t oi) {
    loop->heap[pos] = oi;
    loop->o[oi].heap_pos = pos;
}

static void sift_up(tl_loop *loop, uint32_t pos) {
    uint32_t oi = loop->heap[pos];
    while (pos > 0) {
        uint32_t parent = (pos - 1) / 2;
        if (!earlier(loop, oi, loop->heap[parent]))
            break;
        place(loop, pos, loop->heap[parent]);
        pos = parent;
    }
    place(loop, pos, oi);
}

static void sift_down(tl_loop *loop, uint32_t pos) {
    uint32_t oi = loop->heap[pos];
    for (;;) {
        uint32_t child = 2 * pos + 1;
        if (child >= loop->heap_len)
            break;
        if (child + 1 < loop->heap_len && earlier(loop, loop->heap[child + 1], loop->heap[child]))
            child++;
        if (!earlier(loop, loop->heap[child], oi))
            break;
        place(loop, pos, loop->heap[child]);
        pos = child;
    }
    place(loop, pos, oi);
}

void tl__timer_insert(tl_loop *loop, uint32_t oi) {
    assert(loop->heap_len < loop->heap_cap); /* tl__loop_fit: one entry per op slot */
    loop->heap[loop->heap_len++] = oi;
    sift_up(loop, loop->heap_len - 1);
}

void tl__timer_remove(tl_loop *loop, uint32_t oi) {
    uint32_t pos = loop->o[oi].heap_pos;
    if (pos == TL_NIL)
        return;
    loop->o[oi].heap_pos = TL_NIL;
    uint32_t last = loop->heap[--loop->heap_len];
    if (pos == loop->heap_len)
        return;
    place(loop, pos, last);
    sift_up(loop, pos);
    sift_down(loop, loop->o[last].heap_pos);
}

void tl__timers_expire(tl_loop *loop) {
    while (loop->heap_len > 0) {
        uint32_t oi = loop->heap[0];
        if (loop->o[oi].deadline > loop->now_ms)
            break;
        tl__timer_remove(loop, oi);
        tl__op_complete(loop, oi, 0, false, NULL);
    }
}

int tl__timers_timeout(const tl_loop *loop, int timeout_ms) {
    int t = timeout_ms;
    if (loop->backoff_listeners > 0 && (t < 0 || t > 100))
        t = 100; /* an accept backing off after EMFILE looks again soon */
    if (loop->heap_len == 0)
        return t;
    uint64_t d = loop->o[loop->heap[0]].deadline;
    uint64_t wait = d > loop->now_ms ? d - loop->now_ms : 0;
    if (t < 0 || wait < (uint64_t)t)
        t = wait > INT32_MAX ? INT32_MAX : (int)wait;
    return t;
}

int tl_timer(tl_loop *loop, uint64_t timeout_ms, uint64_t token, tl_op *out) {
    uint32_t oi; /* taking the op slot sizes the heap for it (tl__loop_fit) */
    int err = tl__op_new(loop, TL_OP_TIMER, TL_NIL, token, &oi);
    if (err < 0)
        return err;
    loop->o[oi].deadline = tl__clock_ms() + timeout_ms;
    tl__timer_insert(loop, oi);
    if (out)
        *out = tl__make_id(loop, loop->o[oi].gen, oi);
    return 0;
}
