/* Operations: the op table, the per-handle queues, starting, cancelling and
 * completing. tl__op_complete is the one place an op becomes DONE, which is
 * what makes "exactly one final completion" checkable by reading one function. */
#include "internal.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int tl__ops_grow(tl_loop *loop, uint32_t ncap) {
    int err = 0;
    if (loop->io_cap < ncap)
        err = tl__slots_grow((void **)&loop->io, &loop->io_cap, ncap, sizeof *loop->io);
    return err < 0 ? err : tl__slots_grow((void **)&loop->o, &loop->o_cap, ncap, sizeof *loop->o);
}

/* The arguments of a read, a write or a datagram send (every op slot has room for one). */
tl_oio *tl__op_io_take(tl_loop *loop, tl_oslot *o) {
    o->io = tl__slots_take(loop->io, sizeof *loop->io, offsetof(tl_oio, next), &loop->io_free,
                           &loop->io_fresh, loop->o_cap);
    assert(o->io != TL_NIL);
    return tl__op_io(loop, o);
}

void tl__op_io_release(tl_loop *loop, tl_oslot *o) {
    if ((o->kind != TL_OP_READ && o->kind != TL_OP_WRITE && o->kind != TL_OP_UDP_SEND) ||
        o->io == TL_NIL)
        return;
    loop->io[o->io].next = loop->io_free;
    loop->io_free = o->io;
    o->io = TL_NIL;
}

int tl__op_new(tl_loop *loop, uint8_t kind, uint32_t hi, uint64_t token, uint32_t *index) {
    if (loop->o_fixed && loop->o_live >= loop->o_max)
        return -ENOSPC;
    if (loop->o_free == TL_NIL && loop->o_fresh == loop->o_cap) {
        int err = tl__ops_grow(loop, loop->o_cap ? loop->o_cap * 2 : 128);
        if (err < 0)
            return err;
    }
    int err = tl__loop_fit_if_grown(loop);
    if (err < 0)
        return err;
    uint32_t i = tl__slots_take(loop->o, sizeof *loop->o, offsetof(tl_oslot, next), &loop->o_free,
                                &loop->o_fresh, loop->o_cap);
    tl_oslot *o = &loop->o[i];
    uint32_t gen = o->gen;
    memset(o, 0, sizeof *o);
    o->gen = gen;
    o->state = TL_SLOT_LIVE;
    o->kind = kind;
    o->handle = hi;
    o->token = token;
    o->prev = o->next = TL_NIL;
    o->io = TL_NIL; /* and heap_pos */
    loop->o_live++;
    if (hi != TL_NIL)
        loop->h[hi].nops++;
    *index = i;
    return 0;
}

void tl__op_link(tl_loop *loop, uint32_t oi) {
    tl_oslot *o = &loop->o[oi];
    tl_hslot *h = &loop->h[o->handle];
    bool rq = tl__op_on_read_queue(o->kind);
    uint32_t *head = rq ? &h->rq_head : &h->wq_head;
    uint32_t *tail = rq ? &h->rq_tail : &h->wq_tail;
    o->prev = *tail;
    o->next = TL_NIL;
    if (*tail != TL_NIL)
        loop->o[*tail].next = oi;
    else
        *head = oi;
    *tail = oi;
}

void tl__op_unlink(tl_loop *loop, uint32_t oi) {
    tl_oslot *o = &loop->o[oi];
    tl_hslot *h = &loop->h[o->handle];
    bool rq = tl__op_on_read_queue(o->kind);
    uint32_t *head = rq ? &h->rq_head : &h->wq_head;
    uint32_t *tail = rq ? &h->rq_tail : &h->wq_tail;
    if (o->prev != TL_NIL)
        loop->o[o->prev].next = o->next;
    else
        *head = o->next;
    if (o->next != TL_NIL)
        loop->o[o->next].prev = o->prev;
    else
        *tail = o->prev;
    o->prev = o->next = TL_NIL;
}

void tl__op_complete(tl_loop *loop, uint32_t oi, int32_t res, bool more,
                     const tl_completion *extra) {
    tl_oslot *o = &loop->o[oi];
    /* Every field written once, straight into the host's array when it has
     * room (no zeroing, no copy of extra's whole record, no copy out). */
    tl_completion *c = tl__cq_slot(loop);
    c->token = o->token;
    c->op = tl__make_id(loop, o->gen, oi);
    c->res = res;
    c->kind = o->kind;
    c->flags = (uint16_t)((extra ? extra->flags & TL_CQE_BUFFER : 0) | (more ? 0 : TL_CQE_FINAL));
    if (extra)
        c->u = extra->u;
    else
        memset(&c->u, 0, sizeof c->u);
    c->handle = 0;
    if (o->handle != TL_NIL) {
        tl_hslot *h = &loop->h[o->handle];
        c->handle = tl__make_id(loop, h->gen, o->handle);
        h->undelivered++;
    }
    if (more)
        return;
    o->state = TL_SLOT_DONE;
    if (o->handle != TL_NIL) {
        uint32_t hi = o->handle;
        tl__op_unlink(loop, oi);
        tl_hslot *h = &loop->h[hi];
        if (o->kind == TL_OP_UDP_SEND)
            h->udp_queued--; /* room in the send queue again */
        if (--h->nops == 0 && h->closing)
            tl__handle_finish_close(loop, hi);
    }
}

void tl__handle_cancel_all(tl_loop *loop, uint32_t hi) {
    tl_hslot *h = &loop->h[hi];
    uint32_t queues[2] = {h->rq_head, h->wq_head};
    for (int q = 0; q < 2; q++) {
        for (uint32_t oi = queues[q]; oi != TL_NIL;) {
            uint32_t next = loop->o[oi].next; /* cancel may unlink oi */
            if (!loop->o[oi].cancelling) {
                loop->o[oi].cancelling = 1;
                loop->be->cancel(loop, oi);
            }
            oi = next;
        }
    }
}

/* Which ops a handle of each type takes: accepts on listeners, datagram ops on
 * datagram sockets, byte-stream ops on streams. */
static bool op_fits_handle(uint8_t type, uint8_t kind) {
    switch (type) {
    case TL_H_STREAM:
        return kind == TL_OP_READ || kind == TL_OP_RECV || kind == TL_OP_WRITE;
    case TL_H_DGRAM:
        return kind == TL_OP_UDP_RECV || kind == TL_OP_UDP_SEND;
    default:
        return kind == TL_OP_ACCEPT;
    }
}

int tl__op_start(tl_loop *loop, tl_handle handle, uint8_t kind, uint64_t token, uint32_t *hi,
                 uint32_t *oi) {
    int err = tl__handle_lookup(loop, handle, hi);
    if (err < 0)
        return err;
    tl_hslot *h = &loop->h[*hi];
    if (h->closing || h->detaching)
        return -EBADF;
    if (!op_fits_handle(h->type, kind))
        return -EINVAL;
    err = tl__op_new(loop, kind, *hi, token, oi);
    if (err < 0)
        return err;
    tl__op_link(loop, *oi);
    return 0;
}

int tl__op_submit(tl_loop *loop, uint32_t oi, tl_op *out) {
    if (out)
        *out = tl__make_id(loop, loop->o[oi].gen, oi);
    loop->be->submit(loop, oi);
    return 0;
}

int tl_accept(tl_loop *loop, tl_handle listener, unsigned flags, uint64_t token, tl_op *out) {
    uint32_t hi, oi;
    int err = tl__op_start(loop, listener, TL_OP_ACCEPT, token, &hi, &oi);
    if (err < 0)
        return err;
    loop->o[oi].multishot = (flags & TL_ACCEPT_MULTISHOT) != 0;
    return tl__op_submit(loop, oi, out);
}

int tl_read(tl_loop *loop, tl_handle h, void *buf, uint32_t len, uint64_t token, tl_op *out) {
    if (!buf || len == 0)
        return -EINVAL;
    uint32_t hi, oi;
    int err = tl__op_start(loop, h, TL_OP_READ, token, &hi, &oi);
    if (err < 0)
        return err;
    tl_oio *io = tl__op_io_take(loop, &loop->o[oi]);
    io->iov[0].iov_base = buf;
    io->iov[0].iov_len = len;
    io->iovcnt = 1;
    io->total = len;
    io->done = 0;
    return tl__op_submit(loop, oi, out);
}

int tl_recv(tl_loop *loop, tl_handle h, uint64_t token, tl_op *out) {
    uint32_t hi, oi;
    int err = tl__op_start(loop, h, TL_OP_RECV, token, &hi, &oi);
    if (err < 0)
        return err;
    loop->o[oi].multishot = 1;
    return tl__op_submit(loop, oi, out);
}

int tl_writev(tl_loop *loop, tl_handle h, const struct iovec *iov, int iovcnt, uint64_t token,
              tl_op *out) {
    if (iovcnt <= 0 || iovcnt > TL_MAX_IOV)
        return -EINVAL;
    uint64_t total = 0;
    for (int i = 0; i < iovcnt; i++)
        total += iov[i].iov_len;
    if (total == 0 || total > INT32_MAX)
        return -EINVAL;
    uint32_t hi, oi;
    int err = tl__op_start(loop, h, TL_OP_WRITE, token, &hi, &oi);
    if (err < 0)
        return err;
    tl_oio *io = tl__op_io_take(loop, &loop->o[oi]);
    memcpy(io->iov, iov, (size_t)iovcnt * sizeof *iov);
    io->iovcnt = iovcnt;
    io->total = (uint32_t)total;
    io->done = 0;
    return tl__op_submit(loop, oi, out);
}

int tl_write(tl_loop *loop, tl_handle h, const void *buf, uint32_t len, uint64_t token,
             tl_op *out) {
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    return tl_writev(loop, h, &iov, 1, token, out);
}

int tl_connect(tl_loop *loop, const struct sockaddr *addr, socklen_t addrlen, uint64_t token,
               tl_handle *out_handle, tl_op *out) {
    if (loop->o_fixed && loop->o_live >= loop->o_max)
        return -ENOSPC;
    if (!tl__handle_room(loop))
        return -EMFILE;
    int fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    if (addr->sa_family == AF_INET || addr->sa_family == AF_INET6) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    int r = connect(fd, addr, addrlen);
    int cerr = r == 0 ? 0 : errno;
    if (r < 0 && cerr != EINPROGRESS) {
        close(fd);
        return -cerr;
    }
    uint32_t hi, oi;
    int err = tl__handle_new(loop, fd, TL_H_STREAM, 0, &hi);
    if (err < 0)
        return err;
    err = tl__op_new(loop, TL_OP_CONNECT, hi, token, &oi);
    if (err < 0) { /* cannot happen: room was checked above */
        close(loop->h[hi].fd);
        tl__handle_release_slot(loop, hi);
        return err;
    }
    tl__op_link(loop, oi);
    loop->h[hi].connecting = r < 0;
    *out_handle = tl__make_id(loop, loop->h[hi].gen, hi);
    return tl__op_submit(loop, oi, out);
}

int tl_cancel(tl_loop *loop, tl_op op) {
    uint32_t oi;
    int err = tl__op_lookup(loop, op, &oi);
    if (err < 0)
        return err;
    tl_oslot *o = &loop->o[oi];
    if (o->cancelling)
        return -EALREADY;
    if (o->state != TL_SLOT_LIVE)
        return -ENOENT; /* finished; its final completion is on its way */
    o->cancelling = 1;
    if (o->kind == TL_OP_TIMER) {
        tl__timer_remove(loop, oi);
        tl__op_complete(loop, oi, -ECANCELED, false, NULL);
        return 0;
    }
    loop->be->cancel(loop, oi);
    return 0;
}
