/* Datagrams on io_uring. A receive is one multishot recvmsg on the loop's
 * provided-buffer ring (6.0), or on the datagram pool's own ring where the
 * loop has one (BUF_GROUP_UDP): the kernel writes each datagram as
 * io_uring_recvmsg_out | name | control | payload into one buffer, sized so
 * that the payload starts at TL_UDP_HEADROOM, and the metadata is then written
 * over the head, the layout the epoll backend makes too. Without a buffer
 * ring, a poll and a recvmmsg batch (udp.c). Sends are the shared send step,
 * with a poll for writable when the socket is full: a sendmsg SQE would need
 * its control bytes kept stable until its CQE. */
#include "uring.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/mman.h>

/* Room for the sender's address, rounded up so that the control messages the
 * kernel writes after it start 8-byte aligned, as struct cmsghdr needs. */
#define NAME_ROOM 32
_Static_assert(NAME_ROOM >= sizeof(struct sockaddr_in6), "an IPv6 sender fits");
_Static_assert((sizeof(struct io_uring_recvmsg_out) + NAME_ROOM) % 8 == 0, "aligned cmsgs");
_Static_assert(TL_UDP_HEADROOM - sizeof(struct io_uring_recvmsg_out) - NAME_ROOM >=
                   TL_UDP_CONTROL_LEN,
               "the kernel's recvmsg header, name and control fit the headroom");

/* The ring datagrams are received from: the datagram pool's where the loop
 * has the pool (NULL if the kernel refused its ring: never the streams'
 * buffers, too small for what the pool was made for), else the loop's. */
static struct io_uring_buf_ring *dgram_ring(const tl_loop *loop, const uring_state *s) {
    return loop->ubuf_count ? s->ubr : s->br;
}

void tl__ur_udp_init(tl_loop *loop, uring_state *s) {
    memset(&s->dgram_msg, 0, sizeof s->dgram_msg);
    s->dgram_msg.msg_namelen = NAME_ROOM;
    s->dgram_msg.msg_controllen = TL_UDP_HEADROOM - sizeof(struct io_uring_recvmsg_out) - NAME_ROOM;
    s->ms_recvmsg = dgram_ring(loop, s) != NULL;
    loop->udp_ring_recv = s->ms_recvmsg;
}

void tl__ur_udp_fini(tl_loop *loop, uring_state *s) {
    if (!s->ubr)
        return;
    munmap(s->ubr, s->ubr_bytes);
    s->ubr = NULL;
    loop->ubuf_free_len = 0;
    for (uint32_t i = loop->ubuf_count; i-- > 0;)
        if (loop->ubuf_owner[i] == 0)
            loop->ubuf_free[loop->ubuf_free_len++] = loop->buf_count + i;
}

void tl__ur_udp_arm(tl_loop *loop, uint32_t oi) {
    uring_state *s = state(loop);
    tl_oslot *o = &loop->o[oi];
    int fd = loop->h[o->handle].fd;
    if (o->kind == TL_OP_UDP_SEND) {
        int r = tl__udp_send_step(loop, oi);
        if (r != -EAGAIN) {
            tl__ur_finish(loop, oi, r, NULL);
            return;
        }
        struct io_uring_sqe *sqe = tl__ur_op_sqe(loop, oi);
        if (sqe) /* full: go on when it drains */
            io_uring_prep_poll_add(sqe, fd, POLLOUT);
        return;
    }
    struct io_uring_buf_ring *ring = dgram_ring(loop, s);
    if (ring && !s->ms_recvmsg) {
        /* The free buffers are in the kernel's ring, and only a multishot
         * recvmsg takes datagrams from there: a kernel before 6.0. */
        tl__ur_finish(loop, oi, -EOPNOTSUPP, NULL);
        return;
    }
    struct io_uring_sqe *sqe = tl__ur_op_sqe(loop, oi);
    if (!sqe)
        return;
    if (!ring) {
        io_uring_prep_poll_add(sqe, fd, POLLIN); /* then a recvmmsg batch */
        return;
    }
    io_uring_prep_recvmsg_multishot(sqe, fd, &s->dgram_msg, 0);
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = loop->ubuf_count ? BUF_GROUP_UDP : BUF_GROUP;
    set_bits(o, bits(o) | OP_MS_SQE);
}

/* One datagram the kernel wrote into buffer id (res bytes in all). */
static void deliver_ring(tl_loop *loop, uint32_t oi, uint32_t id, int32_t res) {
    uring_state *s = state(loop);
    struct msghdr mh = s->dgram_msg;
    struct io_uring_recvmsg_out *out =
        io_uring_recvmsg_validate(tl__buffer_data(loop, id), res, &mh);
    if (!out) {
        tl__ur_buf_give(s, loop, id);
        return;
    }
    void *name = io_uring_recvmsg_name(out);
    struct msghdr cm = {.msg_control = (char *)name + mh.msg_namelen,
                        .msg_controllen = out->controllen};
    socklen_t namelen = out->namelen < mh.msg_namelen ? out->namelen : mh.msg_namelen;
    uint32_t len = io_uring_recvmsg_payload_length(out, res, &mh);
    tl__udp_deliver(loop, oi, id, name, namelen, &cm, (int)out->flags, len);
}

static void finish_or_retry(tl_loop *loop, uint32_t oi, int32_t res) {
    tl_oslot *o = &loop->o[oi];
    if (o->cancelling)
        tl__ur_finish(loop, oi, -ECANCELED, NULL);
    else if (res >= 0 || res == -EAGAIN || res == -ECANCELED || tl__udp_soft_error(-res))
        tl__ur_want_arm(loop, oi); /* a stray cancel, or a transient error: again */
    else
        tl__ur_finish(loop, oi, res, NULL);
}

void tl__ur_udp_on_cqe(tl_loop *loop, uint32_t oi, int32_t res, uint32_t flags) {
    uring_state *s = state(loop);
    tl_oslot *o = &loop->o[oi];
    uintptr_t was = bits(o);
    if (o->kind == TL_OP_UDP_SEND || !(was & OP_MS_SQE)) { /* a poll answered */
        disarm(o);
        if (o->kind == TL_OP_UDP_SEND || res < 0 || o->cancelling) {
            finish_or_retry(loop, oi, res);
            return;
        }
        bool drained;
        int n = tl__udp_recv_batch(loop, oi, &drained);
        if (n < 0)
            tl__ur_finish(loop, oi, n, NULL);
        else
            tl__ur_want_arm(loop, oi); /* polled again: answers at once while more wait */
        return;
    }
    if (flags & IORING_CQE_F_BUFFER) {
        uint32_t bid = flags >> IORING_CQE_BUFFER_SHIFT;
        uint32_t id = bid, count = loop->buf_count;
        if (loop->ubuf_count) { /* the pool's ring: its ids follow the loop's */
            id = loop->buf_count + bid;
            count = loop->buf_count + loop->ubuf_count;
            if (s->br)
                s->br_avail++; /* uring.c took it off the loop's ring's count */
        }
        if (id < count && res >= 0)
            deliver_ring(loop, oi, id, res); /* also when cancelling: it was received */
        else if (id < count)
            tl__ur_buf_give(s, loop, id);
    }
    if (flags & IORING_CQE_F_MORE)
        return;
    disarm(o);
    if (res == -EINVAL && !o->cancelling) {
        s->ms_recvmsg = false; /* before 6.0: no multishot recvmsg */
        loop->udp_ring_recv = false;
        tl__ur_finish(loop, oi, -EOPNOTSUPP, NULL);
        return;
    }
    if (res == -ENOBUFS) { /* every buffer is with the host: end, as on epoll */
        loop->stats.recv_buffer_starved++;
        tl__ur_finish(loop, oi, -ENOBUFS, NULL);
        return;
    }
    finish_or_retry(loop, oi, res);
}
