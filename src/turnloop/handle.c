/* The handle table: generational slots, the ceiling, and close.
 * A handle counts against max_handles from creation until its TL_OP_CLOSE
 * completion has been delivered (or it was detached), so a leak is visible as
 * an -EMFILE, never as a silent orphan. */
#include "internal.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool tl__handle_room(const tl_loop *loop) {
    return !loop->h_fixed || loop->h_open < loop->h_max;
}

static int grow_handles(tl_loop *loop) {
    uint32_t ncap = loop->h_cap ? loop->h_cap * 2 : 64;
    int err = tl__slots_grow((void **)&loop->h, &loop->h_cap, ncap, sizeof *loop->h);
    return err == -ENOSPC ? -EMFILE : err;
}

int tl__handle_new(tl_loop *loop, int fd, uint8_t type, unsigned shared_flags, uint32_t *index) {
    if (!tl__handle_room(loop)) {
        close(fd);
        return -EMFILE;
    }
    if (loop->h_free == TL_NIL && loop->h_fresh == loop->h_cap) {
        int err = grow_handles(loop);
        if (err < 0) {
            close(fd);
            return err;
        }
    }
    int fit = tl__loop_fit_if_grown(loop);
    if (fit < 0) {
        close(fd);
        return fit;
    }
    uint32_t i = tl__slots_take(loop->h, sizeof *loop->h, offsetof(tl_hslot, free_next),
                                &loop->h_free, &loop->h_fresh, loop->h_cap);
    tl_hslot *h = &loop->h[i];
    uint32_t gen = h->gen;
    uint8_t on_ready = h->on_ready; /* a listing of the old handle counts for the new */
    memset(h, 0, sizeof *h);
    h->gen = gen;
    h->on_ready = on_ready;
    h->state = TL_SLOT_LIVE;
    h->type = type;
    h->fd = fd;
    h->rq_head = h->rq_tail = h->wq_head = h->wq_tail = TL_NIL;
    h->free_next = TL_NIL;
    loop->h_open++;
    if (loop->adopt_load_held)
        loop->adopt_load_held = 0; /* the queued transport's count carries over */
    else
        atomic_fetch_add_explicit(&loop->load, 1, memory_order_relaxed);
    int err = loop->be->handle_add(loop, i, shared_flags);
    if (err < 0) {
        close(fd);
        h->fd = -1;
        tl__handle_release_slot(loop, i);
        return err;
    }
    *index = i;
    return 0;
}

void tl__handle_release_slot(tl_loop *loop, uint32_t hi) {
    tl_hslot *h = &loop->h[hi];
    h->state = TL_SLOT_FREE;
    h->gen++;
    h->fd = -1;
    h->free_next = loop->h_free;
    loop->h_free = hi;
    loop->h_open--;
    atomic_fetch_sub_explicit(&loop->load, 1, memory_order_relaxed);
    /* Room again: paused accepts and waiting transports may go on. */
    if (loop->adopt_len > 0)
        tl__adopt_waiting(loop);
    loop->be->resume_accepts(loop);
}

/* Called when a closing handle's last op has completed: closes the socket (or
 * has the backend close it) and queues the one TL_OP_CLOSE record once it is. */
void tl__handle_finish_close(tl_loop *loop, uint32_t hi) {
    tl_hslot *h = &loop->h[hi];
    if (h->fd >= 0) {
        /* A shared listener's registration outlives our duplicate's close (the
         * open file is still referenced elsewhere): remove it explicitly. */
        if (h->type == TL_H_SHARED_LISTENER)
            loop->be->handle_remove(loop, hi);
        /* The handle stays (and the loop alive) until the backend has closed
         * it: a close reported is a descriptor closed, on every backend. */
        if (h->type == TL_H_STREAM && loop->be->close_fd && loop->be->close_fd(loop, hi) == 0)
            return;
        assert(!h->direct); /* the backend closes its own table's entries */
        close(h->fd);
        h->fd = -1;
    }
    tl__handle_closed(loop, hi);
}

void tl__handle_closed(tl_loop *loop, uint32_t hi) {
    tl_hslot *h = &loop->h[hi];
    tl_completion *c = tl__cq_push(loop);
    c->token = h->close_token;
    c->handle = tl__make_id(loop, h->gen, hi);
    c->kind = TL_OP_CLOSE;
    c->flags = TL_CQE_FINAL;
    h->undelivered++;
}

int tl_close(tl_loop *loop, tl_handle handle, uint64_t token) {
    uint32_t hi;
    int err = tl__handle_lookup(loop, handle, &hi);
    if (err < 0)
        return err;
    tl_hslot *h = &loop->h[hi];
    if (h->closing)
        return -EALREADY;
    h->closing = 1;
    h->close_token = token;
    /* On epoll the cancelled ops complete at once, on io_uring when the kernel
     * answers; the close is reported after the last of them. */
    if (h->nops == 0) {
        tl__handle_finish_close(loop, hi);
        return 0;
    }
    tl__handle_cancel_all(loop, hi); /* the last op to complete reports the close */
    return 0;
}

int tl__handle_real_fd(tl_loop *loop, uint32_t hi) {
    tl_hslot *h = &loop->h[hi];
    if (!h->direct || h->fd < 0)
        return h->fd;
    return loop->be->install_fd(loop, hi);
}

int tl_handle_fd(tl_loop *loop, tl_handle handle) {
    uint32_t hi;
    int err = tl__handle_lookup(loop, handle, &hi);
    return err < 0 ? err : tl__handle_real_fd(loop, hi);
}

static int name_of(tl_loop *loop, tl_handle handle, struct sockaddr_storage *out, socklen_t *len,
                   int peer) {
    uint32_t hi;
    int err = tl__handle_lookup(loop, handle, &hi);
    if (err < 0)
        return err;
    int fd = tl__handle_real_fd(loop, hi);
    if (fd < 0)
        return fd;
    socklen_t l = sizeof *out;
    int r = peer ? getpeername(fd, (struct sockaddr *)out, &l)
                 : getsockname(fd, (struct sockaddr *)out, &l);
    if (r < 0)
        return -errno;
    if (len)
        *len = l;
    return 0;
}

int tl_handle_sockname(tl_loop *loop, tl_handle h, struct sockaddr_storage *out, socklen_t *len) {
    return name_of(loop, h, out, len, 0);
}

int tl_handle_peername(tl_loop *loop, tl_handle h, struct sockaddr_storage *out, socklen_t *len) {
    return name_of(loop, h, out, len, 1);
}
