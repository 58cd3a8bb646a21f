/* Datagram sockets: opening one, the receive and send ops, and the parts both
 * backends share: a send step (sendmsg with pktinfo, ECN and GSO control
 * messages, or one sendmsg per segment), a recvmmsg batch, the metadata
 * written at the head of each receive buffer, and the loop's datagram pool.
 * Invariant: a datagram's buffer is [tl_udp_meta | ... ] and its payload
 * starts at TL_UDP_HEADROOM, on both backends, so the host reads every
 * datagram the same way; it comes from the datagram pool when the loop has
 * one, else from the loop's buffers. */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

_Static_assert(sizeof(tl_udp_meta) <= TL_UDP_HEADROOM, "the metadata fits the headroom");

#define UDP_DEFAULT_SEND_QUEUE 256
#define UDP_MAX_PAYLOAD 65535u

/* ---- the datagram pool ------------------------------------------------------ */

int tl__udp_pool_init(tl_loop *loop, uint32_t count, uint32_t size) {
    /* io_uring names a buffer by 16 bits; a payload's buffer needs room past the headroom */
    if (count > 32768 || size <= TL_UDP_HEADROOM || size > TL_UDP_HEADROOM + UDP_MAX_PAYLOAD)
        return -EINVAL;
    /* The default size (headroom + 65535) is odd: each buffer starts on a cache line. */
    uint32_t stride = (size + 63u) & ~63u;
    loop->ubuf_mem = malloc((size_t)count * stride);
    loop->ubuf_free = malloc((size_t)count * sizeof *loop->ubuf_free);
    loop->ubuf_owner = calloc(count, sizeof *loop->ubuf_owner);
    if (!loop->ubuf_mem || !loop->ubuf_free || !loop->ubuf_owner)
        return -ENOMEM; /* tl_loop_free frees what was had */
    loop->ubuf_count = count;
    loop->ubuf_size = size;
    loop->ubuf_stride = stride;
    for (uint32_t i = 0; i < count; i++)
        loop->ubuf_free[i] = loop->buf_count + count - 1 - i;
    loop->ubuf_free_len = count;
    return 0;
}

void tl__udp_pool_fini(tl_loop *loop) {
    free(loop->ubuf_mem);
    free(loop->ubuf_free);
    free(loop->ubuf_owner);
}

void tl__udp_pool_untake(tl_loop *loop, uint32_t id) {
    loop->ubuf_owner[id - loop->buf_count] = 0;
    loop->ubuf_free[loop->ubuf_free_len++] = id;
}

/* The bytes of each buffer a datagram lands in: the pool's, or the loop's. */
static uint32_t dgram_buf_size(const tl_loop *loop) {
    return loop->ubuf_count ? loop->ubuf_size : loop->buf_size;
}

static uint32_t dgram_buf_free(const tl_loop *loop) {
    return loop->ubuf_count ? loop->ubuf_free_len : loop->buf_free_len;
}

/* A free buffer for handle hi's next datagram (the caller checked there is one). */
static uint32_t dgram_buf_take(tl_loop *loop, uint32_t hi) {
    uint32_t id;
    if (!loop->ubuf_count) {
        tl__buffer_take(loop, hi, &id);
        return id;
    }
    id = loop->ubuf_free[--loop->ubuf_free_len];
    loop->ubuf_owner[id - loop->buf_count] = tl__make_id(loop, loop->h[hi].gen, hi);
    return id;
}

static void dgram_buf_untake(tl_loop *loop, uint32_t id) {
    if (id >= loop->buf_count)
        tl__udp_pool_untake(loop, id);
    else
        tl__buffer_untake(loop, id);
}

/* ---- sockets ------------------------------------------------------------------ */

void tl__udp_handle_init(tl_loop *loop, uint32_t hi, uint32_t send_queue) {
    tl_hslot *h = &loop->h[hi];
    h->udp_queued = 0;
    h->udp_queue_max = (uint16_t)(send_queue ? send_queue : UDP_DEFAULT_SEND_QUEUE);
    tl_sockaddr a;
    socklen_t l = sizeof a;
    h->udp_port = 0;
    if (getsockname(h->fd, &a.sa, &l) == 0)
        h->udp_port = a.sa.sa_family == AF_INET6 ? a.in6.sin6_port : a.in.sin_port;
}

/* Asks the kernel for each datagram's destination address and TOS byte. */
static int want_metadata(int fd, int family) {
    int one = 1;
    int r;
    if (family == AF_INET6) {
        r = setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
        if (r == 0)
            r = setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof one);
        if (r == 0)
            r = setsockopt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, &one, sizeof one);
    } else {
        r = setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof one);
        if (r == 0)
            r = setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof one);
    }
    return r < 0 ? -errno : 0;
}

int tl_udp_open(tl_loop *loop, const struct sockaddr *addr, socklen_t addrlen,
                const tl_udp_options *opts, tl_handle *out) {
    tl_udp_options o = {0};
    if (opts)
        o = *opts;
    if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)
        return -EINVAL;
    if (o.reuse_port > TL_REUSE_PORT_DISTRIBUTE || o.send_queue > UINT16_MAX ||
        (o.flags & ~TL_UDP_GRO))
        return -EINVAL;
    /* A coalesced payload cut short would lose datagrams without a trace. */
    if ((o.flags & TL_UDP_GRO) && dgram_buf_size(loop) < TL_UDP_HEADROOM + UDP_MAX_PAYLOAD)
        return -EINVAL;
    if ((o.flags & TL_UDP_GRO) && (loop->flags & TL_LOOP_NO_UDP_GRO))
        return -EOPNOTSUPP;
    if (o.reuse_port == TL_REUSE_PORT_DISTRIBUTE && !tl_loop_can_distribute(loop))
        return -EOPNOTSUPP;
    if (!tl__handle_room(loop))
        return -EMFILE;
    int fd = socket(addr->sa_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1;
    int err = want_metadata(fd, addr->sa_family);
    if (err == 0 && (o.flags & TL_UDP_GRO) &&
        setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof one) < 0)
        err = errno == ENOPROTOOPT ? -EOPNOTSUPP : -errno;
    if (err == 0 && o.reuse_port != TL_REUSE_PORT_NO &&
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) < 0)
        err = -errno;
    if (err == 0 && bind(fd, addr, addrlen) < 0)
        err = -errno;
    if (err < 0) {
        close(fd);
        return err;
    }
    uint32_t hi;
    err = tl__handle_new(loop, fd, TL_H_DGRAM, 0, &hi);
    if (err < 0)
        return err;
    tl__udp_handle_init(loop, hi, o.send_queue);
    *out = tl__make_id(loop, loop->h[hi].gen, hi);
    return 0;
}

int tl_udp_adopt(tl_loop *loop, int fd, const tl_udp_options *opts, tl_handle *out) {
    tl_udp_options o = {0};
    if (opts)
        o = *opts;
    tl_sockaddr a;
    socklen_t al = sizeof a;
    int type = 0;
    socklen_t tl = sizeof type;
    int err = 0;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 || type != SOCK_DGRAM ||
        getsockname(fd, &a.sa, &al) < 0 ||
        (a.sa.sa_family == AF_INET    ? a.in.sin_port
         : a.sa.sa_family == AF_INET6 ? a.in6.sin6_port
                                      : 0) == 0)
        err = -ENOTSOCK; /* not an IP datagram socket, or not bound */
    else if (o.reuse_port != TL_REUSE_PORT_NO || o.send_queue > UINT16_MAX || o.flags)
        err = -EINVAL; /* bound already: its reuse-port group and GRO are the parent's */
    else if (!tl__handle_room(loop))
        err = -EMFILE;
    int fl = err == 0 ? fcntl(fd, F_GETFL) : 0;
    if (err == 0 &&
        (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0))
        err = -errno;
    /* IPV6_V6ONLY cannot change once bound: the parent set it (tl_udp_open). */
    int one = 1;
    if (err == 0 && a.sa.sa_family == AF_INET6 &&
        (setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof one) < 0 ||
         setsockopt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, &one, sizeof one) < 0))
        err = -errno;
    if (err == 0 && a.sa.sa_family == AF_INET &&
        (setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof one) < 0 ||
         setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof one) < 0))
        err = -errno;
    if (err < 0) {
        close(fd);
        return err;
    }
    uint32_t hi;
    err = tl__handle_new(loop, fd, TL_H_DGRAM, 0, &hi);
    if (err < 0)
        return err;
    tl__udp_handle_init(loop, hi, o.send_queue);
    *out = tl__make_id(loop, loop->h[hi].gen, hi);
    return 0;
}

int tl_udp_gro(tl_loop *loop, tl_handle h, int on) {
    uint32_t hi;
    int err = tl__handle_lookup(loop, h, &hi);
    if (err < 0)
        return err;
    if (loop->h[hi].type != TL_H_DGRAM)
        return -EINVAL;
    if (on && dgram_buf_size(loop) < TL_UDP_HEADROOM + UDP_MAX_PAYLOAD)
        return -EINVAL; /* as tl_udp_open: a payload cut short loses datagrams */
    if (on && (loop->flags & TL_LOOP_NO_UDP_GRO))
        return -EOPNOTSUPP;
    int v = on ? 1 : 0;
    if (setsockopt(loop->h[hi].fd, SOL_UDP, UDP_GRO, &v, sizeof v) < 0)
        return errno != ENOPROTOOPT ? -errno : on ? -EOPNOTSUPP : 0; /* before 5.0: never on */
    return 0;
}

int tl_udp_recv(tl_loop *loop, tl_handle h, uint64_t token, tl_op *out) {
    if (dgram_buf_size(loop) <= TL_UDP_HEADROOM)
        return -EINVAL;
    uint32_t hi, oi;
    int err = tl__op_start(loop, h, TL_OP_UDP_RECV, token, &hi, &oi);
    if (err < 0)
        return err;
    loop->o[oi].multishot = 1;
    return tl__op_submit(loop, oi, out);
}

static int copy_addr(tl_sockaddr *dst, const struct sockaddr *src, socklen_t len) {
    socklen_t need = src->sa_family == AF_INET    ? sizeof(struct sockaddr_in)
                     : src->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                  : 0;
    if (need == 0 || len < need)
        return -EINVAL;
    memset(dst, 0, sizeof *dst);
    memcpy(dst, src, need);
    return (int)need;
}

int tl_udp_send(tl_loop *loop, tl_handle h, const tl_udp_send_args *a, uint64_t token, tl_op *out) {
    if (!a || !a->data || a->len == 0 || a->len > UDP_MAX_PAYLOAD || a->ecn > 3 || !a->dest)
        return -EINVAL;
    if (a->segment_size && (a->len + a->segment_size - 1) / a->segment_size > TL_UDP_MAX_SEGMENTS)
        return -EINVAL;
    tl_odgram dg = {.data = a->data, .segment_size = a->segment_size, .ecn = a->ecn};
    int len = copy_addr(&dg.dest, a->dest, a->dest_len);
    if (len < 0)
        return len;
    dg.dest_len = (socklen_t)len;
    if (a->source) {
        if (a->source->sa_family != a->dest->sa_family ||
            copy_addr(&dg.source, a->source, a->source_len) < 0)
            return -EINVAL;
        dg.has_source = 1;
    }
    uint32_t hi;
    int err = tl__handle_lookup(loop, h, &hi);
    if (err < 0)
        return err;
    if (loop->h[hi].type == TL_H_DGRAM && loop->h[hi].udp_queued >= loop->h[hi].udp_queue_max)
        return -EAGAIN; /* back-pressure: the host waits for a send to complete */
    uint32_t oi;
    err = tl__op_start(loop, h, TL_OP_UDP_SEND, token, &hi, &oi);
    if (err < 0)
        return err;
    tl_oio *io = tl__op_io_take(loop, &loop->o[oi]);
    io->dg = dg;
    io->total = a->len;
    io->done = 0;
    loop->h[hi].udp_queued++;
    return tl__op_submit(loop, oi, out);
}

/* ---- GSO ------------------------------------------------------------------- */

static bool gso_works(tl_loop *loop) {
    if (loop->flags & TL_LOOP_NO_UDP_GSO)
        return false;
    if (loop->udp_gso == 0) { /* once per loop: the option exists from 4.18 */
        int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        int v = 0;
        socklen_t l = sizeof v;
        loop->udp_gso = fd >= 0 && getsockopt(fd, SOL_UDP, UDP_SEGMENT, &v, &l) == 0 ? 1 : 2;
        if (fd >= 0)
            close(fd);
    }
    return loop->udp_gso == 1;
}

unsigned tl_loop_features(tl_loop *loop) {
    unsigned f = gso_works(loop) ? TL_FEATURE_UDP_GSO : 0;
    if (loop->udp_ring_recv)
        f |= TL_FEATURE_UDP_RECVMSG_MULTISHOT;
    return f;
}

/* ---- sending ------------------------------------------------------------------ */

static void *cmsg_put(struct msghdr *m, size_t *used, int level, int type, const void *data,
                      size_t len) {
    struct cmsghdr *c = (struct cmsghdr *)((char *)m->msg_control + *used);
    c->cmsg_level = level;
    c->cmsg_type = type;
    c->cmsg_len = CMSG_LEN(len);
    memcpy(CMSG_DATA(c), data, len);
    *used += CMSG_SPACE(len);
    return c;
}

/* One sendmsg of len bytes at p: to dest, from source (pktinfo), with the ECN
 * codepoint, and cut into gso-byte datagrams by the kernel when gso > 0. */
static ssize_t send_one(int fd, const tl_odgram *dg, const void *p, size_t len, uint16_t gso) {
    struct iovec iov = {.iov_base = (void *)p, .iov_len = len};
    union {
        char buf[CMSG_SPACE(sizeof(struct in6_pktinfo)) + CMSG_SPACE(sizeof(int)) +
                 CMSG_SPACE(sizeof(uint16_t))];
        struct cmsghdr align;
    } ctl;
    memset(&ctl, 0, sizeof ctl);
    struct msghdr m = {.msg_name = (void *)&dg->dest,
                       .msg_namelen = dg->dest_len,
                       .msg_iov = &iov,
                       .msg_iovlen = 1,
                       .msg_control = ctl.buf};
    size_t used = 0;
    bool v6 = dg->dest.sa.sa_family == AF_INET6;
    if (dg->has_source && v6) {
        struct in6_pktinfo pi = {.ipi6_addr = dg->source.in6.sin6_addr,
                                 .ipi6_ifindex = dg->source.in6.sin6_scope_id};
        cmsg_put(&m, &used, IPPROTO_IPV6, IPV6_PKTINFO, &pi, sizeof pi);
    } else if (dg->has_source) {
        struct in_pktinfo pi = {.ipi_spec_dst = dg->source.in.sin_addr};
        cmsg_put(&m, &used, IPPROTO_IP, IP_PKTINFO, &pi, sizeof pi);
    }
    if (dg->ecn) {
        int tos = dg->ecn;
        cmsg_put(&m, &used, v6 ? IPPROTO_IPV6 : IPPROTO_IP, v6 ? IPV6_TCLASS : IP_TOS, &tos,
                 sizeof tos);
    }
    if (gso)
        cmsg_put(&m, &used, SOL_UDP, UDP_SEGMENT, &gso, sizeof gso);
    m.msg_controllen = used;
    if (used == 0)
        m.msg_control = NULL;
    return sendmsg(fd, &m, MSG_NOSIGNAL);
}

int tl__udp_send_step(tl_loop *loop, uint32_t oi) {
    tl_oslot *o = &loop->o[oi];
    tl_oio *io = tl__op_io(loop, o);
    const tl_odgram *dg = &io->dg;
    int fd = loop->h[o->handle].fd;
    uint32_t seg = dg->segment_size;
    if (seg && seg < io->total && io->done == 0 && gso_works(loop)) {
        for (;;) {
            ssize_t n = send_one(fd, dg, dg->data, io->total, (uint16_t)seg);
            if (n >= 0) {
                io->done = io->total;
                loop->stats.udp_sent += (io->total + seg - 1) / seg;
                return (int)io->total;
            }
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return -EAGAIN;
            if (errno != EIO)
                return -errno;
            /* EIO: the device cannot checksum segments; per segment from now on. */
            loop->udp_gso = 2;
            break;
        }
    }
    uint32_t step = seg ? seg : io->total;
    while (io->done < io->total) {
        uint32_t chunk = io->total - io->done < step ? io->total - io->done : step;
        ssize_t n = send_one(fd, dg, (const char *)dg->data + io->done, chunk, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return -EAGAIN; /* done says where to go on */
            return -errno;
        }
        io->done += chunk;
        loop->stats.udp_sent++;
    }
    return (int)io->total;
}

/* ---- receiving ------------------------------------------------------------------ */

void tl__udp_deliver(tl_loop *loop, uint32_t oi, uint32_t id, const void *name, socklen_t namelen,
                     struct msghdr *cm, int msg_flags, uint32_t len) {
    uint32_t hi = loop->o[oi].handle;
    tl_udp_meta m;
    memset(&m, 0, sizeof m); /* parsed whole before the buffer's head is written */
    memcpy(&m.peer, name, namelen < sizeof m.peer ? namelen : sizeof m.peer);
    for (struct cmsghdr *c = CMSG_FIRSTHDR(cm); c; c = CMSG_NXTHDR(cm, c)) {
        if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
            struct in_pktinfo pi;
            memcpy(&pi, CMSG_DATA(c), sizeof pi);
            m.local.in.sin_family = AF_INET;
            m.local.in.sin_addr = pi.ipi_addr; /* the header's destination */
            m.local.in.sin_port = loop->h[hi].udp_port;
            m.ifindex = (uint32_t)pi.ipi_ifindex;
            m.flags |= TL_UDP_META_LOCAL;
        } else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) {
            m.ecn = *(const uint8_t *)CMSG_DATA(c) & 3;
        } else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
            struct in6_pktinfo pi;
            memcpy(&pi, CMSG_DATA(c), sizeof pi);
            m.local.in6.sin6_family = AF_INET6;
            m.local.in6.sin6_addr = pi.ipi6_addr;
            m.local.in6.sin6_port = loop->h[hi].udp_port;
            if (IN6_IS_ADDR_LINKLOCAL(&pi.ipi6_addr))
                m.local.in6.sin6_scope_id = pi.ipi6_ifindex;
            m.ifindex = pi.ipi6_ifindex;
            m.flags |= TL_UDP_META_LOCAL;
        } else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS) {
            int tclass;
            memcpy(&tclass, CMSG_DATA(c), sizeof tclass);
            m.ecn = (uint8_t)(tclass & 3);
        } else if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
            int seg;
            memcpy(&seg, CMSG_DATA(c), sizeof seg);
            m.segment_size = seg > 0 && seg < (int)len ? (uint16_t)seg : 0;
        }
    }
    if (msg_flags & MSG_TRUNC) {
        m.flags |= TL_UDP_META_TRUNCATED;
        loop->stats.udp_truncated++;
    }
    uint8_t *buf = tl__buffer_data(loop, id);
    memcpy(buf, &m, sizeof m);
    *tl__buffer_owner(loop, id) = tl__make_id(loop, loop->h[hi].gen, hi);
    loop->stats.udp_received += m.segment_size ? (len + m.segment_size - 1) / m.segment_size : 1;
    tl_completion extra = {.flags = TL_CQE_BUFFER,
                           .u.buf = {.data = buf + TL_UDP_HEADROOM, .id = id}};
    tl__op_complete(loop, oi, (int32_t)len, true, &extra);
}

int tl__udp_recv_batch(tl_loop *loop, uint32_t oi, bool *drained) {
    uint32_t hi = loop->o[oi].handle;
    *drained = false;
    uint32_t avail = dgram_buf_free(loop);
    uint32_t want = avail < TL_UDP_BATCH ? avail : TL_UDP_BATCH;
    if (want == 0) {
        loop->stats.recv_buffer_starved++;
        return -ENOBUFS;
    }
    struct mmsghdr mm[TL_UDP_BATCH];
    struct iovec iov[TL_UDP_BATCH];
    tl_sockaddr names[TL_UDP_BATCH];
    union {
        char buf[TL_UDP_CONTROL_LEN];
        struct cmsghdr align;
    } ctl[TL_UDP_BATCH];
    uint32_t ids[TL_UDP_BATCH];
    for (uint32_t i = 0; i < want; i++) {
        ids[i] = dgram_buf_take(loop, hi); /* cannot fail: want <= avail */
        iov[i].iov_base = tl__buffer_data(loop, ids[i]) + TL_UDP_HEADROOM;
        iov[i].iov_len = dgram_buf_size(loop) - TL_UDP_HEADROOM;
        mm[i].msg_hdr = (struct msghdr){.msg_name = &names[i],
                                        .msg_namelen = sizeof names[i],
                                        .msg_iov = &iov[i],
                                        .msg_iovlen = 1,
                                        .msg_control = ctl[i].buf,
                                        .msg_controllen = sizeof ctl[i].buf};
        mm[i].msg_len = 0;
    }
    int n;
    int soft = 0;
    do { /* an ICMP error for an earlier send is consumed by the call that reports it */
        n = recvmmsg(loop->h[hi].fd, mm, want, MSG_DONTWAIT, NULL);
    } while (n < 0 && tl__udp_soft_error(errno) && ++soft < 16);
    int e = n < 0 ? errno : 0;
    for (uint32_t i = want; i-- > (n > 0 ? (uint32_t)n : 0);)
        dgram_buf_untake(loop, ids[i]);
    if (n < 0) {
        if (e == EAGAIN || e == EWOULDBLOCK || tl__udp_soft_error(e)) {
            *drained = e != EINTR && !tl__udp_soft_error(e);
            return 0;
        }
        return -e;
    }
    for (int i = 0; i < n; i++)
        tl__udp_deliver(loop, oi, ids[i], &names[i], mm[i].msg_hdr.msg_namelen, &mm[i].msg_hdr,
                        mm[i].msg_hdr.msg_flags, mm[i].msg_len);
    *drained = (uint32_t)n < want;
    return n;
}

int tl_udp_meta_get(const tl_loop *loop, const tl_completion *c, tl_udp_meta *out) {
    if (c->kind == TL_OP_UDP_FORWARDED && c->u.msg.ptr) {
        *out = ((const tl_udp_datagram *)c->u.msg.ptr)->meta;
        return 0;
    }
    if (c->kind != TL_OP_UDP_RECV || !(c->flags & TL_CQE_BUFFER))
        return -EINVAL;
    uint32_t id = c->u.buf.id;
    const uint64_t *owner = tl__buffer_owner(loop, id);
    if (!owner || *owner == 0)
        return -EINVAL;
    memcpy(out, tl__buffer_data(loop, id), sizeof *out);
    return 0;
}
