/* Cross-thread entry: the wake (an eventfd) and the inbox of posted messages
 * and transports. These are the only paths other threads take into a loop;
 * everything here is either under the inbox mutex or an atomic. A posted
 * transport is adopted only when the loop has a free handle slot, so a full
 * loop delays a connection instead of dropping it. */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

void tl__inbox_init(tl_inbox *ib) {
    pthread_mutex_init(&ib->mu, NULL);
    ib->items = NULL;
    ib->len = ib->cap = 0;
    atomic_init(&ib->count, 0);
}

void tl__inbox_fini(tl_inbox *ib) {
    free(ib->items);
    pthread_mutex_destroy(&ib->mu);
}

void tl_loop_wake(tl_loop *loop) {
    /* Coalesced: one eventfd write per sleep, however many threads wake it. */
    if (atomic_exchange_explicit(&loop->wake_pending, 1, memory_order_acq_rel) == 0) {
        uint64_t one = 1;
        ssize_t r = write(loop->wake_fd, &one, sizeof one);
        (void)r; /* EAGAIN only when the counter is already non-zero: awake anyway */
    }
}

void tl__wake_consume(tl_loop *loop) {
    uint64_t v;
    ssize_t r = read(loop->wake_fd, &v, sizeof v);
    (void)r;
    atomic_store_explicit(&loop->wake_pending, 0, memory_order_release);
}

static int inbox_push(tl_loop *loop, const tl_inbox_item *item) {
    tl_inbox *ib = &loop->inbox;
    pthread_mutex_lock(&ib->mu);
    if (ib->len == ib->cap) {
        uint32_t ncap = ib->cap ? ib->cap * 2 : 64;
        tl_inbox_item *n = realloc(ib->items, (size_t)ncap * sizeof *n);
        if (!n) {
            pthread_mutex_unlock(&ib->mu);
            return -ENOMEM;
        }
        ib->items = n;
        ib->cap = ncap;
    }
    ib->items[ib->len++] = *item;
    atomic_store_explicit(&ib->count, ib->len, memory_order_release);
    pthread_mutex_unlock(&ib->mu);
    tl_loop_wake(loop);
    return 0;
}

int tl_loop_post(tl_loop *loop, uint64_t token, const tl_message *msg) {
    tl_inbox_item it = {.is_transport = 0, .token = token};
    if (msg)
        it.msg = *msg;
    return inbox_push(loop, &it);
}

int tl__loop_post_datagram(tl_loop *loop, uint64_t token, void *datagram) {
    tl_inbox_item it = {.is_datagram = 1, .token = token, .msg.ptr = datagram};
    int err = inbox_push(loop, &it);
    if (err < 0)
        free(datagram);
    return err;
}

int tl_loop_post_transport(tl_loop *loop, const tl_detached *d, uint64_t token) {
    tl_inbox_item it = {.is_transport = 1, .token = token, .transport = *d};
    atomic_fetch_add_explicit(&loop->load, 1, memory_order_relaxed);
    int err = inbox_push(loop, &it);
    if (err < 0) {
        atomic_fetch_sub_explicit(&loop->load, 1, memory_order_relaxed);
        close(d->fd);
    }
    return err;
}

/* Attaches one transport now; the caller made sure there is room. */
static void adopt(tl_loop *loop, const tl_inbox_item *it) {
    tl_handle h = 0;
    loop->adopt_load_held = 1;
    int err = tl_attach(loop, &it->transport, &h);
    if (loop->adopt_load_held) { /* refused before a handle existed: the transport is gone */
        loop->adopt_load_held = 0;
        atomic_fetch_sub_explicit(&loop->load, 1, memory_order_relaxed);
    }
    tl_completion *c = tl__cq_push(loop);
    loop->cq_extra++;
    c->token = it->token;
    c->kind = TL_OP_ADOPT;
    c->flags = TL_CQE_FINAL;
    c->res = err;
    if (err == 0) {
        uint32_t hi;
        c->handle = h;
        c->u.accepted = h;
        if (tl__handle_lookup(loop, h, &hi) == 0) /* always: h was made just now */
            loop->h[hi].undelivered++;
        loop->stats.adopted++;
    }
}

static void wait_for_room(tl_loop *loop, const tl_inbox_item *it) {
    if (loop->adopt_len == loop->adopt_cap) {
        uint32_t ncap = loop->adopt_cap ? loop->adopt_cap * 2 : 16;
        tl_inbox_item *n = realloc(loop->adopt_wait, (size_t)ncap * sizeof *n);
        if (!n) {
            /* Cannot even remember it: say so, rather than lose it silently. */
            atomic_fetch_sub_explicit(&loop->load, 1, memory_order_relaxed);
            close(it->transport.fd);
            tl_completion *c = tl__cq_push(loop);
            loop->cq_extra++;
            c->token = it->token;
            c->kind = TL_OP_ADOPT;
            c->flags = TL_CQE_FINAL;
            c->res = -ENOMEM;
            return;
        }
        loop->adopt_wait = n;
        loop->adopt_cap = ncap;
    }
    loop->adopt_wait[loop->adopt_len++] = *it;
}

void tl__adopt_waiting(tl_loop *loop) {
    uint32_t i = 0;
    while (i < loop->adopt_len && tl__handle_room(loop) && tl__cq_reserve_extra(loop, 1) == 0)
        adopt(loop, &loop->adopt_wait[i++]);
    if (i == 0)
        return;
    for (uint32_t j = i; j < loop->adopt_len; j++)
        loop->adopt_wait[j - i] = loop->adopt_wait[j];
    loop->adopt_len -= i;
}

void tl__inbox_drain(tl_loop *loop) {
    tl_inbox *ib = &loop->inbox;
    /* Swap the array out under the lock; handle the items without it. */
    pthread_mutex_lock(&ib->mu);
    /* Room for every item's completion first: without it the items stay
     * queued (the loop stays busy) and the next turn tries again. Growing
     * under the lock is rare, and amortised like the inbox itself. */
    if (tl__cq_reserve_extra(loop, ib->len) < 0) {
        pthread_mutex_unlock(&ib->mu);
        return;
    }
    tl_inbox_item *items = ib->items;
    uint32_t len = ib->len;
    uint32_t cap = ib->cap;
    ib->items = NULL;
    ib->len = ib->cap = 0;
    atomic_store_explicit(&ib->count, 0, memory_order_release);
    pthread_mutex_unlock(&ib->mu);

    for (uint32_t i = 0; i < len; i++) {
        const tl_inbox_item *it = &items[i];
        if (!it->is_transport) {
            tl_completion *c = tl__cq_push(loop);
            loop->cq_extra++;
            c->token = it->token;
            c->kind = it->is_datagram ? TL_OP_UDP_FORWARDED : TL_OP_POST;
            c->flags = TL_CQE_FINAL;
            c->u.msg = it->msg;
            if (it->is_datagram) {
                c->res = (int32_t)((const tl_udp_datagram *)it->msg.ptr)->len;
                loop->stats.udp_forwarded_in++;
            }
        } else if (loop->adopt_len == 0 && tl__handle_room(loop)) {
            adopt(loop, it);
        } else {
            wait_for_room(loop, it); /* keeps arrival order behind those already waiting */
        }
    }
    /* Give the array back for reuse if nobody pushed meanwhile: no allocation
     * per post in the steady state. */
    pthread_mutex_lock(&ib->mu);
    if (ib->items == NULL) {
        ib->items = items;
        ib->cap = cap;
        items = NULL;
    }
    pthread_mutex_unlock(&ib->mu);
    free(items);
}

void tl__inbox_discard(tl_loop *loop) {
    tl_inbox *ib = &loop->inbox;
    pthread_mutex_lock(&ib->mu);
    for (uint32_t i = 0; i < ib->len; i++)
        if (ib->items[i].is_transport)
            close(ib->items[i].transport.fd);
        else if (ib->items[i].is_datagram)
            free(ib->items[i].msg.ptr);
    ib->len = 0;
    atomic_store_explicit(&ib->count, 0, memory_order_release);
    pthread_mutex_unlock(&ib->mu);
}
