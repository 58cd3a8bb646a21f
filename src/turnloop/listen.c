/* Listening sockets: binding with the ReusePort mapping, sharing one socket
 * between loops (the exclusive and herd baselines), adopting descriptors, and
 * the kernel-distribution route. Every failure leaves nothing behind: no
 * socket and no handle. */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <unistd.h>

/* Linux distributes with plain SO_REUSEPORT (since 3.9). FreeBSD would need
 * SO_REUSEPORT_LB here; other platforms refuse DISTRIBUTE. */
static int platform_can_distribute(void) {
#if defined(__linux__) && defined(SO_REUSEPORT)
    return 1;
#else
    return 0;
#endif
}

int tl_loop_can_distribute(const tl_loop *loop) {
    return platform_can_distribute() && !(loop->flags & TL_LOOP_NO_DISTRIBUTE);
}

/* Accepted TCP sockets inherit TCP_NODELAY from their listener (Linux copies
 * it in the clone), so one setsockopt here saves one per connection, which is
 * a measurable share of a short connection's cost. Not TCP: nothing to do. */
void tl__listener_nodelay(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static int set_reuse_port(tl_loop *loop, int fd, tl_reuse_port rp) {
    int one = 1;
    switch (rp) {
    case TL_REUSE_PORT_NO:
        return 0;
    case TL_REUSE_PORT_DISTRIBUTE:
        if (!tl_loop_can_distribute(loop))
            return -EOPNOTSUPP;
        __attribute__((fallthrough)); /* on Linux the same option is both */
    case TL_REUSE_PORT_SHARE:
#ifdef SO_REUSEPORT
        if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) < 0)
            return -errno;
        return 0;
#else
        return -EOPNOTSUPP;
#endif
    }
    return -EINVAL;
}

int tl_listen(tl_loop *loop, const struct sockaddr *addr, socklen_t addrlen,
              const tl_listen_options *opts, tl_handle *out) {
    tl_listen_options o = {0};
    if (opts)
        o = *opts;
    if (o.reuse_port > TL_REUSE_PORT_DISTRIBUTE)
        return -EINVAL;
    /* Refuse before making anything, so a refusal leaves nothing behind. */
    if (o.reuse_port == TL_REUSE_PORT_DISTRIBUTE && !tl_loop_can_distribute(loop))
        return -EOPNOTSUPP;
    if (!tl__handle_room(loop))
        return -EMFILE;
    int fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1;
    int err = 0;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0)
        err = -errno;
    if (err == 0)
        err = set_reuse_port(loop, fd, o.reuse_port);
    if (err == 0 && addr->sa_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (err == 0 && (addr->sa_family == AF_INET || addr->sa_family == AF_INET6))
        tl__listener_nodelay(fd);
    if (err == 0 && bind(fd, addr, addrlen) < 0)
        err = -errno;
    if (err == 0 && listen(fd, o.backlog > 0 ? o.backlog : SOMAXCONN) < 0)
        err = -errno;
    if (err < 0) {
        close(fd);
        return err;
    }
    uint32_t hi;
    err = tl__handle_new(loop, fd, TL_H_LISTENER, 0, &hi);
    if (err < 0)
        return err;
    *out = tl__make_id(loop, loop->h[hi].gen, hi);
    return 0;
}

int tl_listen_shared(tl_loop *loop, int fd, unsigned flags, tl_handle *out) {
    if (flags & ~TL_SHARED_EXCLUSIVE)
        return -EINVAL;
    if (!tl__handle_room(loop))
        return -EMFILE;
    /* Wake-one exists only as an epoll flag. A loop that AUTO put on io_uring
     * and that holds nothing yet goes to epoll for it (tl_loop_backend() says
     * so); one asked for io_uring by name, or already in use, refuses it. */
    if ((flags & TL_SHARED_EXCLUSIVE) && loop->be_auto && loop->be != &tl__backend_epoll) {
        int err = tl__loop_fall_back_to_epoll(loop);
        if (err < 0 && err != -EOPNOTSUPP)
            return err;
    }
    int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (dup_fd < 0)
        return -errno;
    int fl = fcntl(dup_fd, F_GETFL);
    if (fl < 0 || fcntl(dup_fd, F_SETFL, fl | O_NONBLOCK) < 0) {
        int err = -errno;
        close(dup_fd);
        return err;
    }
    tl__listener_nodelay(dup_fd);
    uint32_t hi;
    int err = tl__handle_new(loop, dup_fd, TL_H_SHARED_LISTENER, flags, &hi);
    if (err < 0)
        return err;
    *out = tl__make_id(loop, loop->h[hi].gen, hi);
    return 0;
}

int tl_adopt_fd(tl_loop *loop, int fd, tl_handle *out) {
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
        int err = -errno;
        close(fd);
        return err;
    }
    int type = 0;
    socklen_t tl = sizeof type;
    int listening = 0;
    socklen_t ll = sizeof listening;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 || type != SOCK_STREAM) {
        close(fd);
        return -ENOTSOCK;
    }
    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ll);
    if (listening)
        tl__listener_nodelay(fd);
    uint32_t hi;
    int err = tl__handle_new(loop, fd, listening ? TL_H_LISTENER : TL_H_STREAM, 0, &hi);
    if (err < 0)
        return err;
    *out = tl__make_id(loop, loop->h[hi].gen, hi);
    return 0;
}

int tl_route_reuse_port(tl_loop **loops, int n, const struct sockaddr *addr, socklen_t addrlen,
                        int backlog, tl_handle *out) {
    if (n <= 0 || addrlen > sizeof(struct sockaddr_storage))
        return -EINVAL;
    for (int i = 0; i < n; i++)
        if (!tl_loop_can_distribute(loops[i]))
            return -EOPNOTSUPP; /* no silent one-core server */
    struct sockaddr_storage a;
    memcpy(&a, addr, addrlen);
    tl_listen_options o = {.reuse_port = TL_REUSE_PORT_DISTRIBUTE, .backlog = backlog};
    int err = 0;
    int made = 0;
    for (; made < n; made++) {
        err = tl_listen(loops[made], (struct sockaddr *)&a, addrlen, &o, &out[made]);
        if (err < 0)
            break;
        if (made == 0) { /* port 0: the others join the port the first one got */
            struct sockaddr_storage got;
            socklen_t gl;
            if (tl_handle_sockname(loops[0], out[0], &got, &gl) == 0 && gl == addrlen)
                memcpy(&a, &got, addrlen);
        }
    }
    if (err == 0)
        return 0;
    /* Undo: close the listeners made so far, fd and slot alike. */
    for (int i = 0; i < made; i++) {
        uint32_t hi;
        if (tl__handle_lookup(loops[i], out[i], &hi) == 0) {
            loops[i]->be->handle_remove(loops[i], hi);
            close(loops[i]->h[hi].fd);
            loops[i]->h[hi].fd = -1;
            tl__handle_release_slot(loops[i], hi);
        }
        out[i] = 0;
    }
    return err;
}
