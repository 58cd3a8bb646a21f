/* Listening sockets: binding with the ReusePort mapping, sharing one socket
 * between loops (the exclusive and herd baselines), adopting descriptors, and
 * the kernel-distribution route. Every failure leaves nothing behind: no
 * socket and no handle. */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
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

/* Closes the sockets a route made so far, fd and slot alike: a refused
 * route leaves nothing behind. */
void tl__undo_handles(tl_loop **loops, int made, tl_handle *out) {
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
}

/* One listener per loop on one address, made in loop order: the kernel's
 * reuseport group then holds them in that order too (a listener joins the
 * group when it starts listening), which the CPU-steered route relies on. */
static int listen_group(tl_loop **loops, int n, const struct sockaddr *addr, socklen_t addrlen,
                        tl_reuse_port rp, int backlog, tl_handle *out) {
    if (n <= 0 || addrlen > sizeof(struct sockaddr_storage))
        return -EINVAL;
    struct sockaddr_storage a;
    memcpy(&a, addr, addrlen);
    tl_listen_options o = {.reuse_port = rp, .backlog = backlog};
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
    if (err < 0)
        tl__undo_handles(loops, made, out);
    return err;
}

int tl_route_reuse_port(tl_loop **loops, int n, const struct sockaddr *addr, socklen_t addrlen,
                        int backlog, tl_handle *out) {
    if (n <= 0)
        return -EINVAL;
    for (int i = 0; i < n; i++)
        if (!tl_loop_can_distribute(loops[i]))
            return -EOPNOTSUPP; /* no silent one-core server */
    return listen_group(loops, n, addr, addrlen, TL_REUSE_PORT_DISTRIBUTE, backlog, out);
}

/* The classic BPF program the kernel runs per SYN to pick a listener of the
 * group (its return value is the index; out of range falls back to the hash).
 * A: the CPU that processes the SYN; then one compare per loop's CPU; then
 * A % n for a CPU no loop sits on. The shape of the kernel's own
 * tools/testing/selftests/net/reuseport_bpf_cpu.c, plus the table. */
#define TL_CPU_STEER_MAX 1024
static int attach_cpu_steer(tl_loop **loops, int n, const int *cpus, int fd) {
#if defined(SO_ATTACH_REUSEPORT_CBPF)
    for (int i = 0; i < n; i++)
        if (loops[i]->flags & TL_LOOP_NO_CPU_STEER)
            return -EOPNOTSUPP; /* what a kernel without the option answers */
    struct sock_filter *code = malloc((size_t)(2 * n + 3) * sizeof *code);
    if (!code)
        return -ENOMEM;
    int len = 0;
    code[len++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, SKF_AD_OFF + SKF_AD_CPU);
    for (int i = 0; cpus && i < n; i++) {
        code[len++] =
            (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)cpus[i], 0, 1);
        code[len++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, (uint32_t)i);
    }
    code[len++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_MOD | BPF_K, (uint32_t)n);
    code[len++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_A, 0);
    struct sock_fprog prog = {.len = (unsigned short)len, .filter = code};
    int err =
        setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &prog, sizeof prog) < 0 ? -errno : 0;
    free(code);
    /* ENOPROTOOPT: a kernel that does not know the option. */
    return err == -ENOPROTOOPT ? -EOPNOTSUPP : err;
#else
    (void)loops;
    (void)n;
    (void)cpus;
    (void)fd;
    return -EOPNOTSUPP;
#endif
}

int tl_route_reuse_port_cpu(tl_loop **loops, int n, const struct sockaddr *addr, socklen_t addrlen,
                            int backlog, const int *cpus, tl_handle *out) {
    if (n <= 0 || n > TL_CPU_STEER_MAX)
        return -EINVAL;
    for (int i = 0; cpus && i < n; i++)
        if (cpus[i] < 0)
            return -EINVAL;
#if !defined(SO_ATTACH_REUSEPORT_CBPF)
    return -EOPNOTSUPP; /* refused before anything is made */
#endif
    int err = tl_route_reuse_port(loops, n, addr, addrlen, backlog, out);
    if (err < 0)
        return err;
    /* Attached once, to any member, after all are bound: the program belongs
     * to the group, and every index it can return exists by now. */
    uint32_t hi;
    err = tl__handle_lookup(loops[0], out[0], &hi);
    if (err == 0)
        err = attach_cpu_steer(loops, n, cpus, loops[0]->h[hi].fd);
    if (err < 0)
        tl__undo_handles(loops, n, out);
    return err;
}

int tl_handoff_subset(int n, int k, int a, int *first) {
    if (k <= 0 || n < k || a < 0 || a >= k)
        return -EINVAL;
    int lo = (int)((long)a * n / k);
    int hi = (int)((long)(a + 1) * n / k);
    *first = lo;
    return hi - lo;
}

int tl_route_handoff_group(tl_loop **acceptors, int k, tl_loop **workers, int n,
                           tl_handoff_policy policy, const struct sockaddr *addr, socklen_t addrlen,
                           int backlog, tl_handle *listeners, tl_handoff **handoffs) {
    if (k <= 0 || n < k)
        return -EINVAL;
    for (int a = 0; a < k; a++)
        handoffs[a] = NULL;
    int err = 0;
    for (int a = 0; a < k && err == 0; a++) {
        int first;
        int cnt = tl_handoff_subset(n, k, a, &first);
        err = tl_handoff_new(&handoffs[a], workers + first, cnt, policy);
    }
    /* SHARE, not DISTRIBUTE: what is asked of the kernel is the duplicate
     * bind; the balance is the handoffs' job. On Linux the kernel still
     * spreads SYNs over the listeners by hash, which is what keeps every
     * acceptor busy; a platform whose SHARE is last-binder-wins would starve
     * all acceptors but one, and then one acceptor serves them all. */
    if (err == 0)
        err = listen_group(acceptors, k, addr, addrlen, TL_REUSE_PORT_SHARE, backlog, listeners);
    if (err < 0) {
        for (int a = 0; a < k; a++) {
            tl_handoff_free(handoffs[a]);
            handoffs[a] = NULL;
        }
    }
    return err;
}
