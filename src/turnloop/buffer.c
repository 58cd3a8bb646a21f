/* Loop-owned receive buffers for multishot TL_OP_RECV: one block allocated at
 * creation, handed out by id, returned by the host. Memory follows data in
 * flight, not connections: an idle connection holds no buffer. */
#include "internal.h"

#include <errno.h>
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
    if (id >= loop->buf_count || loop->buf_owner[id] == 0)
        return;  /* double release: a host bug, but never corrupt the free list */
    uint32_t hi; /* the handle may be closed by now: then nobody counts it */
    if (tl__handle_lookup(loop, loop->buf_owner[id], &hi) == 0 && loop->h[hi].bufs_held > 0)
        loop->h[hi].bufs_held--;
    if (loop->be->buffer_released) {
        /* The backend keeps the free buffers (io_uring: in the kernel's ring). */
        loop->buf_owner[id] = 0;
        loop->be->buffer_released(loop, id);
    } else {
        tl__buffer_untake(loop, id);
    }
}
