/* solproxy: the speed-of-light proxy arm of scripts/bench-proxy-vs-nginx (issue 34
 * point 6). One thread, one io_uring (SINGLE_ISSUER | DEFER_TASKRUN where the
 * kernel has it), multishot accept, multishot recv into a provided-buffer ring on
 * both sides, and every received buffer sent as it is to the other side: client
 * bytes to its upstream connection, upstream bytes back. No parsing at all, so the
 * bench runs it with keep-alive clients only: each client is paired with one
 * upstream connection from a pool (connected once, kept when its client goes) for
 * as long as it stays. The floor of a proxy on this ring design, not a proxy.
 * Bench only. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sol_setup.h"

#define NBUF 4096 /* provided buffers, a power of two */
#define BUFSZ 4096
#define BGID 3
#define MAXFD 65536
#define NIL 0xffffu

enum { UD_ACCEPT = 1, UD_RECV = 2, UD_SEND = 3 };
/* kind | generation | fd: a descriptor number is reused once closed */
#define UD(kind, fd)                                                                               \
    (((uint64_t)(kind) << 56) | ((uint64_t)(fds[fd].gen & 0xffffff) << 32) | (uint32_t)(fd))

/* One descriptor, either side: its peer, and the buffers waiting to be sent
 * to it, a FIFO linked through next_buf[]. */
typedef struct side {
    int peer;     /* the other side, or -1 (an idle pooled upstream) */
    uint32_t gen; /* bumped when the descriptor number is taken anew */
    uint16_t head, tail;
    uint32_t off; /* bytes of the head buffer already sent */
    bool upstream, in_send, recv_done, dead, closed;
} side;

static side *fds;
static uint16_t next_buf[NBUF];
static uint32_t buf_len[NBUF];
static struct io_uring ring;
static struct io_uring_buf_ring *br;
static char *bufs;
static int *pool; /* idle upstream descriptors */
static int pool_len;
static struct sockaddr_in upstream;
static volatile sig_atomic_t stop;

static struct io_uring_sqe *sqe_get(void) {
    struct io_uring_sqe *s = io_uring_get_sqe(&ring);
    if (!s) {
        io_uring_submit(&ring);
        s = io_uring_get_sqe(&ring);
    }
    return s;
}

static void buf_give(unsigned id) {
    io_uring_buf_ring_add(br, bufs + (size_t)id * BUFSZ, BUFSZ, (unsigned short)id, NBUF - 1, 0);
    io_uring_buf_ring_advance(br, 1);
}

static void arm_recv(int fd) {
    struct io_uring_sqe *s = sqe_get();
    io_uring_prep_recv_multishot(s, fd, NULL, 0, 0);
    s->flags |= IOSQE_BUFFER_SELECT;
    s->buf_group = BGID;
    io_uring_sqe_set_data64(s, UD(UD_RECV, fd));
}

static void push_send(int fd) {
    side *d = &fds[fd];
    if (d->in_send || d->head == NIL || d->dead)
        return;
    d->in_send = true;
    struct io_uring_sqe *s = sqe_get();
    io_uring_prep_send(s, fd, bufs + (size_t)d->head * BUFSZ + d->off, buf_len[d->head] - d->off,
                       MSG_NOSIGNAL);
    io_uring_sqe_set_data64(s, UD(UD_SEND, fd));
}

static void drop_queue(side *d) {
    while (d->head != NIL) {
        uint16_t b = d->head;
        d->head = next_buf[b];
        buf_give(b);
    }
    d->tail = NIL;
    d->off = 0;
}

/* Ends one side: the close waits for its receive's last CQE and any send. */
static void side_end(int fd) {
    side *d = &fds[fd];
    if (d->closed)
        return;
    if (!d->dead) {
        d->dead = true;
        drop_queue(d);
        shutdown(fd, SHUT_RDWR); /* the multishot recv ends with 0 */
    }
    if (d->recv_done && !d->in_send) {
        close(fd);
        d->closed = true;
        d->peer = -1;
    }
}

/* An upstream is gone: so is its client (or its place in the pool). */
static void upstream_gone(int u) {
    int c = fds[u].peer;
    fds[u].peer = -1;
    side_end(u);
    if (c >= 0) {
        fds[c].peer = -1;
        side_end(c);
        return;
    }
    for (int i = 0; i < pool_len; i++)
        if (pool[i] == u) {
            pool[i] = pool[--pool_len];
            break;
        }
}

/* A client is gone: its upstream goes back to the pool when nothing of this
 * exchange is in flight on it, else it goes too. */
static void client_gone(int c) {
    int u = fds[c].peer;
    fds[c].peer = -1;
    side_end(c);
    if (u < 0)
        return;
    side *du = &fds[u];
    du->peer = -1;
    if (!du->dead && !du->in_send && du->head == NIL)
        pool[pool_len++] = u;
    else
        side_end(u);
}

static int upstream_take(void) {
    while (pool_len > 0) {
        int u = pool[--pool_len];
        if (!fds[u].dead)
            return u;
    }
    int u = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (u < 0 || u >= MAXFD) {
        if (u >= 0)
            close(u);
        return -1;
    }
    setsockopt(u, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    /* Blocking: on loopback the handshake completes inside connect(), and a
     * pool connects only while it grows. */
    if (connect(u, (struct sockaddr *)&upstream, sizeof upstream) < 0) {
        close(u);
        return -1;
    }
    fds[u] = (side){.peer = -1, .gen = fds[u].gen + 1, .head = NIL, .tail = NIL, .upstream = true};
    arm_recv(u);
    return u;
}

static void on_accept(int c) {
    if (c >= MAXFD) {
        close(c);
        return;
    }
    int u = upstream_take();
    if (u < 0) {
        close(c);
        return;
    }
    fds[c] = (side){.peer = u, .gen = fds[c].gen + 1, .head = NIL, .tail = NIL};
    fds[u].peer = c;
    arm_recv(c);
}

static void on_recv(int fd, int res, unsigned flags) {
    side *d = &fds[fd];
    if (flags & IORING_CQE_F_BUFFER) {
        unsigned id = flags >> IORING_CQE_BUFFER_SHIFT;
        int to = d->peer;
        if (res > 0 && to >= 0 && !d->dead && !fds[to].dead) {
            buf_len[id] = (uint32_t)res; /* relayed as it is, no copy */
            next_buf[id] = NIL;
            side *o = &fds[to];
            if (o->tail == NIL)
                o->head = (uint16_t)id;
            else
                next_buf[o->tail] = (uint16_t)id;
            o->tail = (uint16_t)id;
            push_send(to);
        } else {
            buf_give(id); /* a pooled upstream's stray bytes, or a side going away */
        }
    }
    if (flags & IORING_CQE_F_MORE)
        return;
    if (res > 0 || res == -ENOBUFS) {
        if (!d->dead)
            arm_recv(fd); /* the multishot ended (buffers ran out): go on */
        else {
            d->recv_done = true;
            side_end(fd);
        }
        return;
    }
    d->recv_done = true; /* end of stream or an error */
    if (d->upstream)
        upstream_gone(fd);
    else
        client_gone(fd);
}

static void on_send(int fd, int res) {
    side *d = &fds[fd];
    d->in_send = false;
    if (d->dead) {
        side_end(fd);
        return;
    }
    if (res <= 0) {
        if (d->upstream)
            upstream_gone(fd);
        else
            client_gone(fd);
        return;
    }
    d->off += (uint32_t)res;
    if (d->off >= buf_len[d->head]) {
        uint16_t b = d->head;
        d->head = next_buf[b];
        if (d->head == NIL)
            d->tail = NIL;
        d->off = 0;
        buf_give(b);
    }
    push_send(fd);
}

static int setup_ring(const char **mode) {
    struct io_uring_params p = {.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN |
                                         IORING_SETUP_SUBMIT_ALL | IORING_SETUP_CQSIZE,
                                .cq_entries = 16384};
    if (io_uring_queue_init_params(2048, &ring, &p) == 0) {
        *mode = "single_issuer+defer_taskrun";
        return 0;
    }
    p = (struct io_uring_params){.flags = IORING_SETUP_COOP_TASKRUN | IORING_SETUP_CQSIZE,
                                 .cq_entries = 16384};
    *mode = "coop_taskrun";
    return io_uring_queue_init_params(2048, &ring, &p);
}

static void on_term(int sig) {
    (void)sig;
    stop = 1;
}

int main(int argc, char **argv) {
    const char *ready = NULL, *up = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--ready-file") == 0 && i + 1 < argc)
            ready = argv[++i];
        else if (strcmp(argv[i], "--upstream") == 0 && i + 1 < argc)
            up = argv[++i];
        else
            up = NULL, i = argc;
    }
    struct sockaddr_in sa = {.sin_family = AF_INET};
    if (!up || sol_parse_addr(up, &upstream) < 0) {
        fprintf(stderr, "usage: solproxy --upstream 127.0.0.1:PORT [--ready-file FILE]\n"
                        "  listens on 127.0.0.1:0; the ready file (or stdout) names the port\n");
        return 2;
    }
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    setsockopt(lfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* inherited by accepted ones */
    if (bind(lfd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(lfd, 4096) < 0) {
        perror("solproxy: bind/listen");
        return 1;
    }
    socklen_t sl = sizeof sa;
    getsockname(lfd, (struct sockaddr *)&sa, &sl);
    const char *mode;
    int err = setup_ring(&mode);
    if (err < 0 || (err = sol_buf_ring_setup(&ring, NBUF, BUFSZ, BGID, &br, &bufs)) < 0) {
        fprintf(stderr, "solproxy: io_uring: %s\n", strerror(-err));
        return 1;
    }
    fds = calloc(MAXFD, sizeof *fds);
    pool = calloc(MAXFD, sizeof *pool);
    if (!fds || !pool)
        return 1;
    signal(SIGPIPE, SIG_IGN);
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    if (sol_announce("solproxy", ready, ntohs(sa.sin_port), mode) < 0)
        return 1;
    struct io_uring_sqe *s = sqe_get();
    io_uring_prep_multishot_accept(s, lfd, NULL, NULL, SOCK_CLOEXEC);
    io_uring_sqe_set_data64(s, (uint64_t)UD_ACCEPT << 56);
    while (!stop) {
        struct __kernel_timespec ts = {.tv_sec = 1};
        struct io_uring_cqe *cqe;
        int r = io_uring_submit_and_wait_timeout(&ring, &cqe, 1, &ts, NULL);
        if (r < 0 && r != -ETIME && r != -EINTR)
            break;
        unsigned head, n = 0;
        io_uring_for_each_cqe(&ring, head, cqe) {
            n++;
            int fd = (int)(uint32_t)cqe->user_data;
            unsigned kind = (unsigned)(cqe->user_data >> 56);
            if (kind != UD_ACCEPT &&
                ((cqe->user_data >> 32) & 0xffffff) != (fds[fd].gen & 0xffffff)) {
                if (cqe->flags & IORING_CQE_F_BUFFER)
                    buf_give(cqe->flags >> IORING_CQE_BUFFER_SHIFT);
                continue;
            }
            switch (kind) {
            case UD_ACCEPT:
                if (cqe->res >= 0)
                    on_accept(cqe->res);
                if (!(cqe->flags & IORING_CQE_F_MORE)) {
                    s = sqe_get();
                    io_uring_prep_multishot_accept(s, lfd, NULL, NULL, SOCK_CLOEXEC);
                    io_uring_sqe_set_data64(s, (uint64_t)UD_ACCEPT << 56);
                }
                break;
            case UD_RECV:
                on_recv(fd, cqe->res, cqe->flags);
                break;
            case UD_SEND:
                on_send(fd, cqe->res);
                break;
            }
        }
        io_uring_cq_advance(&ring, n);
    }
    io_uring_queue_exit(&ring);
    return 0;
}
