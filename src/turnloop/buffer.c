/* Loop-owned receive buffers for multishot TL_OP_RECV: one block allocated at
 * creation, handed out by id, returned by the host. Memory follows data in
 * flight, not connections: an idle connection holds no buffer. */
#include "internal.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

int tl__buffers_init(tl_loop *loop, uint32_t count, uint32_t size) {
    loop->buf_mem = malloc((size_t)count * size);
    loop->buf_free = malloc((size_t)count * sizeof *loop->buf_free);
    loop->buf_owner = malloc((size_t)count * sizeof *loop->buf_owner);
    if (!loop->buf_mem || !loop->buf_free || !loop->buf_owner)
        return -ENOMEM;
    loop->buf_count = count;
    loop->buf_size = size;
    for (uint32_t i = 0; i < count; i++) {
        loop->buf_free[i] = count - 1 - i;
        loop->buf_owner[i] = 0;
    }
    loop->buf_free_len = count;
    return 0;
}

void tl__buffers_fini(tl_loop *loop) {
    free(loop->starve);
    free(loop->buf_mem);
    free(loop->buf_free);
    free(loop->buf_owner);
}

int tl__buffer_take(tl_loop *loop, uint32_t hi, uint32_t *id) {
    if (loop->buf_free_len == 0)
        return -ENOBUFS;
    *id = loop->buf_free[--loop->buf_free_len];
    loop->buf_owner[*id] = tl__make_id(loop, loop->h[hi].gen, hi);
    return 0;
}

/* Gives a buffer back without it ever reaching the host (a read that failed). */
void tl__buffer_untake(tl_loop *loop, uint32_t id) {
    loop->buf_owner[id] = 0;
    loop->buf_free[loop->buf_free_len++] = id;
}

void tl_buffer_release(tl_loop *loop, uint32_t id) {
    uint64_t *owner = tl__buffer_owner(loop, id); /* either pool's (udp.c's datagram pool) */
    if (!owner || *owner == 0)
        return;  /* double release: a host bug, but never corrupt the free list */
    uint32_t hi; /* the handle may be closed by now: then nobody counts it */
    if (tl__handle_lookup(loop, *owner, &hi) == 0 && loop->h[hi].bufs_held > 0)
        loop->h[hi].bufs_held--;
    if (loop->be->buffer_released) {
        /* The backend keeps the free buffers (io_uring: in the kernel's ring). */
        *owner = 0;
        loop->be->buffer_released(loop, id);
    } else if (id >= loop->buf_count) {
        tl__udp_pool_untake(loop, id);
    } else {
        tl__buffer_untake(loop, id);
    }
}

/* ---- receives waiting for a buffer, first come first served ---------------- */

static bool starve_live(const tl_loop *loop, uint64_t id, uint32_t *oi) {
    return tl__op_lookup(loop, id, oi) == 0 && loop->o[*oi].state == TL_SLOT_LIVE &&
           loop->o[*oi].starved;
}

/* Copies the live entries in order into a ring of ncap (>= their count). */
static int starve_resize(tl_loop *loop, uint32_t ncap) {
    uint64_t *n = malloc((size_t)ncap * sizeof *n);
    if (!n)
        return -ENOMEM;
    uint32_t len = 0, oi;
    for (uint32_t i = 0; i < loop->starve_len; i++) {
        uint64_t id = loop->starve[(loop->starve_head + i) & (loop->starve_cap - 1)];
        if (starve_live(loop, id, &oi))
            n[len++] = id;
    }
    free(loop->starve);
    loop->starve = n;
    loop->starve_cap = ncap;
    loop->starve_head = 0;
    loop->starve_len = len;
    return 0;
}

/* From tl__loop_fit: room for every op to wait at once, so that a push inside
 * a turn never allocates. */
int tl__starve_fit(tl_loop *loop) {
    uint32_t need = 16;
    while (need < loop->o_cap)
        need <<= 1;
    return need <= loop->starve_cap ? 0 : starve_resize(loop, need);
}

void tl__starve_push(tl_loop *loop, uint32_t oi, bool front) {
    tl_oslot *o = &loop->o[oi];
    if (o->starved)
        return;
    if (loop->starve_len == loop->starve_cap) {
        /* Full of stale ids (live ones are at most o_cap): drop them in place. */
        if (starve_resize(loop, loop->starve_cap) < 0 || loop->starve_len == loop->starve_cap)
            abort(); /* a forgotten receive would never complete */
    }
    o->starved = 1;
    uint64_t id = tl__make_id(loop, o->gen, oi);
    uint32_t mask = loop->starve_cap - 1;
    if (front) {
        loop->starve_head = (loop->starve_head - 1) & mask;
        loop->starve[loop->starve_head] = id;
    } else {
        loop->starve[(loop->starve_head + loop->starve_len) & mask] = id;
    }
    loop->starve_len++;
}

uint32_t tl__starve_pop(tl_loop *loop) {
    while (loop->starve_len > 0) {
        uint64_t id = loop->starve[loop->starve_head];
        loop->starve_head = (loop->starve_head + 1) & (loop->starve_cap - 1);
        loop->starve_len--;
        uint32_t oi;
        if (!starve_live(loop, id, &oi))
            continue; /* cancelled (or its handle closed) while it waited */
        loop->o[oi].starved = 0;
        loop->o[oi].was_starved = 1;
        return oi;
    }
    return TL_NIL;
}
