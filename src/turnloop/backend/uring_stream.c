/* A stream's operations on io_uring: receives into the provided-buffer ring
 * (5.19; without it a poll and a read into a loop buffer), idle receives
 * parked on a poll, writes (a sendmsg for several segments), reads and
 * connects. uring.c arms them in its arm phase and hands them their CQEs;
 * accepting is uring_accept.c's, datagrams uring_udp.c's. */
#include "uring.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* A provided-buffer ring of group bgid with room for count buffers (a power
 * of two: it may hold fewer), registered; NULL when the kernel refuses. */
static struct io_uring_buf_ring *ring_new(uring_state *s, uint32_t count, unsigned short bgid,
                                          size_t *bytes, unsigned *mask) {
    unsigned entries = 1;
    while (entries < count)
        entries <<= 1;
    *bytes = (size_t)entries * sizeof(struct io_uring_buf);
    void *mem = mmap(NULL, *bytes, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
    if (mem == MAP_FAILED)
        return NULL;
    struct io_uring_buf_reg reg = {
        .ring_addr = (uint64_t)(uintptr_t)mem, .ring_entries = entries, .bgid = bgid};
    if (io_uring_register_buf_ring(&s->ring, &reg, 0) < 0) {
        munmap(mem, *bytes);
        return NULL;
    }
    struct io_uring_buf_ring *br = mem;
    *mask = (unsigned)io_uring_buf_ring_mask(entries);
    io_uring_buf_ring_init(br);
    return br;
}

/* The datagram pool's ring: its own group, so that a datagram receive takes
 * a buffer sized for GRO and a stream's never does. Ring ids are the pool's
 * (id - buf_count). */
static void udp_ring_setup(tl_loop *loop, uring_state *s) {
    if (loop->ubuf_count == 0 || loop->ubuf_free_len != loop->ubuf_count)
        return;
    s->ubr = ring_new(s, loop->ubuf_count, BUF_GROUP_UDP, &s->ubr_bytes, &s->ubr_mask);
    if (!s->ubr)
        return; /* its datagrams poll and recvmmsg into the pool (uring_udp.c) */
    for (uint32_t i = 0; i < loop->ubuf_count; i++)
        io_uring_buf_ring_add(s->ubr, tl__buffer_data(loop, loop->buf_count + i), loop->ubuf_size,
                              (unsigned short)i, (int)s->ubr_mask, (int)i);
    io_uring_buf_ring_advance(s->ubr, (int)loop->ubuf_count);
    loop->ubuf_free_len = 0; /* the kernel holds them */
}

/* Gives the loop's buffers to the kernel as a provided-buffer ring (5.19+),
 * and the datagram pool's as another. Without it, multishot recv is emulated
 * with a poll and a read. */
void tl__ur_buf_ring_setup(tl_loop *loop, uring_state *s) {
    udp_ring_setup(loop, s);
    if (loop->buf_count == 0 || loop->buf_count > 32768)
        return;
    s->reserve = malloc((size_t)loop->buf_count * sizeof *s->reserve);
    if (!s->reserve)
        return;
    s->br = ring_new(s, loop->buf_count, BUF_GROUP, &s->br_bytes, &s->br_mask);
    if (!s->br)
        return;
    for (uint32_t i = 0; i < loop->buf_count; i++)
        io_uring_buf_ring_add(s->br, tl__buffer_data(loop, i), loop->buf_size, (unsigned short)i,
                              (int)s->br_mask, (int)i);
    io_uring_buf_ring_advance(s->br, (int)loop->buf_count);
    s->br_avail = loop->buf_count;
    loop->buf_free_len = 0; /* the kernel holds every free buffer now */
}

void tl__ur_buf_give(uring_state *s, tl_loop *loop, uint32_t id) {
    if (id >= loop->buf_count) { /* the datagram pool's: not counted in br_avail */
        io_uring_buf_ring_add(s->ubr, tl__buffer_data(loop, id), loop->ubuf_size,
                              (unsigned short)(id - loop->buf_count), (int)s->ubr_mask, 0);
        io_uring_buf_ring_advance(s->ubr, 1);
        return;
    }
    io_uring_buf_ring_add(s->br, tl__buffer_data(loop, id), loop->buf_size, (unsigned short)id,
                          (int)s->br_mask, 0);
    io_uring_buf_ring_advance(s->br, 1);
    s->br_avail++;
}

void tl__ur_buffer_released(tl_loop *loop, uint32_t id) {
    uring_state *s = state(loop);
    if (id >= loop->buf_count && s->ubr) /* the datagram pool's: no stream waits for it */
        tl__ur_buf_give(s, loop, id);
    else if (id >= loop->buf_count)
        tl__udp_pool_untake(loop, id);
    else if (!s->br)
        tl__buffer_untake(loop, id);
    else if (loop->starve_len > 0)
        s->reserve[s->reserve_len++] = id; /* for the waiting receives: see rearm_starved */
    else
        tl__ur_buf_give(s, loop, id);
}

void tl__ur_arm_recv(tl_loop *loop, uint32_t oi) {
    uring_state *s = state(loop);
    tl_oslot *o = &loop->o[oi];
    tl_hslot *h = &loop->h[o->handle];
    struct io_uring_sqe *sqe = tl__ur_op_sqe(loop, oi);
    if (!sqe)
        return;
    bool first = h->fresh;
    h->fresh = 0;
    if (!s->br || (bits(o) & OP_PARKED)) {
        io_uring_prep_poll_add(sqe, h->fd, POLLIN); /* no buffer ring, or parked: poll first */
        fixed_if_direct(sqe, h);
        return;
    }
    set_bits(o, bits(o) | OP_ACTIVE); /* a fresh receive is not idle yet */
    if (s->ms_recv && !first) {
        io_uring_prep_recv_multishot(sqe, h->fd, NULL, 0, 0);
        set_bits(o, bits(o) | OP_MS_SQE);
    } else {
        io_uring_prep_recv(sqe, h->fd, NULL, 0, 0); /* one buffer per SQE, re-armed */
    }
    fixed_if_direct(sqe, h);
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = BUF_GROUP;
}

void tl__ur_arm_write(tl_loop *loop, uint32_t oi) {
    uring_state *s = state(loop);
    tl_oslot *o = &loop->o[oi];
    const tl_hslot *h = &loop->h[o->handle];
    /* Without stable submission the kernel may read the msghdr after the submit
     * returns: send one segment at a time then (all by value). */
    tl_oio *io = tl__op_io(loop, o);
    bool vec = io->iovcnt > 1 && s->stable_submit;
    if (vec && s->msg_used == s->msg_cap) {
        io_uring_submit(&s->ring);
        s->msg_used = 0;
    }
    struct io_uring_sqe *sqe = tl__ur_op_sqe(loop, oi);
    if (!sqe)
        return;
    if (!vec) {
        io_uring_prep_send(sqe, h->fd, io->iov[0].iov_base, io->iov[0].iov_len, MSG_NOSIGNAL);
        fixed_if_direct(sqe, h);
        return;
    }
    struct msghdr *m = &s->msgs[s->msg_used++];
    *m = (struct msghdr){.msg_iov = io->iov, .msg_iovlen = (size_t)io->iovcnt};
    io_uring_prep_sendmsg(sqe, h->fd, m, MSG_NOSIGNAL); /* a vanished peer is EPIPE, not SIGPIPE */
    fixed_if_direct(sqe, h);
}

/* A write that heads its queue and sends one segment goes into the SQ when
 * it is made, not through the arm phase: its SQE holds only the host's
 * buffer, the descriptor and the op id, none of which a table's growth
 * moves. (A sendmsg's header and iovec live in tables that do move: those
 * wait for the arm phase.) Never flushes the SQ here: a single-issuer ring is
 * entered only by its owner in a turn. Returns false when it did not go in. */
bool tl__ur_write_now(tl_loop *loop, uint32_t oi) {
    uring_state *s = state(loop);
    if (tl__op_io(loop, &loop->o[oi])->iovcnt != 1 || io_uring_sq_space_left(&s->ring) == 0)
        return false;
    tl__ur_arm_write(loop, oi);
    return true;
}

/* Drops n written bytes from the front of the op's iovec (its own copy). */
static void iov_advance(tl_oio *io, uint32_t n) {
    int i = 0;
    while (i < io->iovcnt && n >= io->iov[i].iov_len) {
        n -= (uint32_t)io->iov[i].iov_len;
        i++;
    }
    if (i > 0) {
        memmove(io->iov, io->iov + i, (size_t)(io->iovcnt - i) * sizeof io->iov[0]);
        io->iovcnt -= i;
    }
    if (io->iovcnt > 0 && n > 0) {
        io->iov[0].iov_base = (char *)io->iov[0].iov_base + n;
        io->iov[0].iov_len -= n;
    }
}

/* Errors after which the same SQE is simply issued again. A -ECANCELED the host
 * did not ask for is a cancel that outlived its target (see tl__ur_on_accept). */
static bool retry(const tl_oslot *o, int32_t res) {
    return res == -EAGAIN || res == -EINTR || (res == -ECANCELED && !o->cancelling);
}

/* The one answer to a result that is not progress: issue the same SQE again
 * (a transient error, a stray cancel) or end the op with it. */
static void reissue_or_finish(tl_loop *loop, uint32_t oi, int32_t res) {
    if (retry(&loop->o[oi], res))
        tl__ur_want_arm(loop, oi);
    else
        tl__ur_finish(loop, oi, res, NULL);
}

void tl__ur_on_read(tl_loop *loop, uint32_t oi, int32_t res) {
    disarm(&loop->o[oi]);
    reissue_or_finish(loop, oi, res);
}

static void deliver_buffer(tl_loop *loop, uint32_t oi, uint32_t id, int32_t n) {
    uint32_t hi = loop->o[oi].handle;
    loop->o[oi].was_starved = 0;
    set_bits(&loop->o[oi], bits(&loop->o[oi]) | OP_ACTIVE);
    loop->buf_owner[id] = handle_id(loop, hi);
    tl_completion extra = {.flags = TL_CQE_BUFFER,
                           .u.buf = {.data = tl__buffer_data(loop, id), .id = id}};
    tl__op_complete(loop, oi, n, true, &extra);
}

static void on_recv_ring(tl_loop *loop, uint32_t oi, int32_t res, uint32_t flags) {
    uring_state *s = state(loop);
    tl_oslot *o = &loop->o[oi];
    if (flags & IORING_CQE_F_BUFFER) {
        uint32_t id = flags >> IORING_CQE_BUFFER_SHIFT;
        if (res > 0 && id < loop->buf_count)
            deliver_buffer(loop, oi, id, res); /* also when cancelling: the bytes are read */
        else if (id < loop->buf_count)
            tl__ur_buf_give(s, loop, id);
    }
    if (flags & IORING_CQE_F_MORE)
        return;
    uintptr_t was = bits(o);
    disarm(o);
    if (res > 0) { /* the request ended, the stream did not */
        if (o->cancelling)
            tl__ur_finish(loop, oi, -ECANCELED, NULL);
        else
            tl__ur_want_arm(loop, oi);
        return;
    }
    if (res == -EINVAL && (was & OP_MS_SQE) && !o->cancelling) {
        s->ms_recv = false; /* before 6.0: single recvs from the same ring */
        tl__ur_want_arm(loop, oi);
        return;
    }
    if (res == -ENOBUFS) { /* the ring ran dry: wait in line for a buffer */
        if (o->cancelling) {
            tl__ur_finish(loop, oi, -ECANCELED, NULL);
            return;
        }
        loop->stats.recv_buffer_starved++;
        tl__starve_push(loop, oi, o->was_starved);
        return;
    }
    if (res == -ECANCELED && (was & OP_PARK) && !(was & OP_ACTIVE) && !o->cancelling) {
        set_bits(o, bits(o) | OP_PARKED); /* the sweep's cancel, and still idle: park */
        loop->stats.recv_parked++;
        tl__ur_want_arm(loop, oi);
        return;
    }
    if (retry(o, res))
        tl__ur_want_arm(loop, oi);
    else
        tl__ur_finish(loop, oi, res, NULL); /* 0: end of stream; or the error, or -ECANCELED */
}

/* A parked receive's poll fired (readable, end of stream or an error): it is a
 * receive again, which reports whichever it was. */
static void on_park_poll(tl_loop *loop, uint32_t oi) {
    tl_oslot *o = &loop->o[oi];
    disarm(o); /* PARKED goes with it */
    if (o->cancelling) {
        tl__ur_finish(loop, oi, -ECANCELED, NULL);
        return;
    }
    tl__ur_want_arm(loop, oi);
}

/* Once every park_ms: receives armed and fed nothing since the last sweep are
 * cancelled, to be parked on a poll (on_recv_ring). The walk covers the op
 * slots used so far, a few nanoseconds each, once a second. */
void tl__ur_park_sweep(tl_loop *loop) {
    uring_state *s = state(loop);
    if (s->park_cursor == 0 && loop->now_ms < s->park_next)
        return;
    uint32_t oi = s->park_cursor, parked = 0;
    for (; oi < loop->o_fresh && parked < PARK_BATCH; oi++) {
        tl_oslot *o = &loop->o[oi];
        if (o->state != TL_SLOT_LIVE || o->kind != TL_OP_RECV || o->cancelling)
            continue;
        uintptr_t b = bits(o);
        if (!(b & OP_ARMED) || (b & (OP_STOP | OP_PARKED)))
            continue;
        if (b & OP_ACTIVE) {
            set_bits(o, b & ~(uintptr_t)OP_ACTIVE);
            continue;
        }
        tl_hslot *h = &loop->h[o->handle];
        if (h->closing || h->detaching)
            continue;
        set_bits(o, b | OP_PARK | OP_STOP);
        tl__ur_want_arm(loop, oi); /* the arm phase sends the cancel */
        parked++;
    }
    if (oi < loop->o_fresh) {
        s->park_cursor = oi; /* the rest in the next turns */
    } else {
        s->park_cursor = 0;
        s->park_next = loop->now_ms + s->park_ms;
    }
}

/* Without a buffer ring: the poll said readable; read into a loop buffer now, so
 * that an idle connection still holds no buffer. */
static void on_recv_poll(tl_loop *loop, uint32_t oi, int32_t res) {
    tl_oslot *o = &loop->o[oi];
    disarm(o);
    if (res < 0) {
        reissue_or_finish(loop, oi, res);
        return;
    }
    if (o->cancelling) {
        tl__ur_finish(loop, oi, -ECANCELED, NULL);
        return;
    }
    uint32_t hi = o->handle, id;
    /* Receives waiting for a buffer go first; one that was not waiting joins
     * the end of the line rather than take a buffer past them. */
    if ((loop->starve_len > 0 && !o->was_starved) || tl__buffer_take(loop, hi, &id) < 0) {
        loop->stats.recv_buffer_starved++;
        tl__starve_push(loop, oi, o->was_starved);
        return;
    }
    ssize_t n = read(loop->h[hi].fd, tl__buffer_data(loop, id), loop->buf_size);
    if (n > 0) {
        deliver_buffer(loop, oi, id, (int32_t)n);
        tl__ur_want_arm(loop, oi);
        return;
    }
    int e = n < 0 ? errno : 0;
    tl__buffer_untake(loop, id);
    if (e == EAGAIN || e == EWOULDBLOCK || e == EINTR)
        tl__ur_want_arm(loop, oi);
    else
        tl__ur_finish(loop, oi, -e, NULL);
}

void tl__ur_on_recv(tl_loop *loop, uint32_t oi, int32_t res, uint32_t flags) {
    if (bits(&loop->o[oi]) & OP_PARKED)
        on_park_poll(loop, oi);
    else if (state(loop)->br)
        on_recv_ring(loop, oi, res, flags);
    else
        on_recv_poll(loop, oi, res);
}

void tl__ur_on_write(tl_loop *loop, uint32_t oi, int32_t res) {
    tl_oslot *o = &loop->o[oi];
    disarm(o);
    if (res < 0) {
        reissue_or_finish(loop, oi, res);
        return;
    }
    tl_oio *io = tl__op_io(loop, o);
    io->done += (uint32_t)res;
    if (io->done >= io->total) {
        tl__ur_finish(loop, oi, (int32_t)io->total, NULL);
        return;
    }
    if (o->cancelling) {
        tl__ur_finish(loop, oi, -ECANCELED, NULL);
        return;
    }
    iov_advance(io, (uint32_t)res); /* partial: send the rest */
    tl__ur_want_arm(loop, oi);
}

void tl__ur_on_connect(tl_loop *loop, uint32_t oi, int32_t res) {
    tl_oslot *o = &loop->o[oi];
    tl_hslot *h = &loop->h[o->handle];
    disarm(o);
    if (res < 0) {
        reissue_or_finish(loop, oi, res);
        return;
    }
    int soerr = 0;
    socklen_t l = sizeof soerr;
    if (getsockopt(h->fd, SOL_SOCKET, SO_ERROR, &soerr, &l) < 0)
        soerr = errno;
    h->connecting = 0;
    tl__ur_finish(loop, oi, -soerr, NULL);
}
