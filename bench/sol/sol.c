/* sol: the speed-of-light arm of scripts/bench-vs-nginx, a naive io_uring responder.
 * One thread, multishot accept, multishot recv into a provided-buffer ring; for every
 * "\r\n\r\n" in a read one fixed answer, all of a read's answers in one send. No
 * parsing: the cost floor of a naive ring design, not a server. Bench only.
 * SOL_BETTER=1 is the better floor (issue 34 point 7): direct descriptors (multishot
 * accept into a sparse table, fixed-file recv and send, cancel + close_direct instead
 * of shutdown + close) and a min-wait on busy turns, each gated on the kernel. */
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
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "sol_setup.h"

#define NBUF 1024 /* provided buffers, a power of two */
#define BUFSZ 4096
#define OUTCAP 16384 /* answers per send: as many as fit */
#define BGID 7
#define MAXFD 65536

enum { UD_ACCEPT = 1, UD_RECV = 2, UD_SEND = 3, UD_IGNORE = 4 };
/* kind | generation | fd (or direct index): a direct index is reused as soon as
 * it is closed, so a late CQE of its last owner must be told apart. */
#define UD(kind, fd)                                                                               \
    (((uint64_t)(kind) << 56) | ((uint64_t)(conns[fd].gen & 0xffffff) << 32) | (uint32_t)(fd))
#ifndef IORING_FEAT_MIN_TIMEOUT
#define IORING_FEAT_MIN_TIMEOUT (1U << 15)
#endif
#define MIN_WAIT_USEC 50
#define MIN_WAIT_NR 32
#define MIN_WAIT_BUSY 8

/* What one connection owes: answers not yet sent, and whether it asked to close. */
typedef struct conn {
    char *out; /* OUTCAP bytes, taken on first answer and kept (bench only) */
    uint32_t owed, sending, sent, len;
    uint32_t gen;  /* bumped at every accept into this slot */
    uint8_t match; /* how much of "\r\n\r\n" the last read ended in */
    bool in_send, closing, recv_done, closed;
} conn;

static conn *conns;
static struct io_uring ring;
static struct io_uring_buf_ring *br;
static char *bufs;
static char ka[512], cl[512];
static size_t ka_len, cl_len;
static time_t date_sec;
static volatile sig_atomic_t stop;
/* SOL_BETTER: the "fd" of a connection is its direct index */
static bool direct, min_wait;

static const char body[] = "Hello from scalwsd\n";

/* The same bytes as scalwsd's respond answer (src/http/response.c), Date included. */
static void build_answers(time_t now) {
    char date[64];
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    const char *fmt = "HTTP/1.1 200 OK\r\nServer: scalwsd\r\nDate: %s\r\nContent-Type: "
                      "text/plain\r\nContent-Length: %zu\r\nConnection: %s\r\n\r\n%s";
    ka_len = (size_t)snprintf(ka, sizeof ka, fmt, date, sizeof body - 1, "keep-alive", body);
    cl_len = (size_t)snprintf(cl, sizeof cl, fmt, date, sizeof body - 1, "close", body);
    date_sec = now;
}

static struct io_uring_sqe *sqe_get(void) {
    struct io_uring_sqe *s = io_uring_get_sqe(&ring);
    if (!s) {
        io_uring_submit(&ring);
        s = io_uring_get_sqe(&ring);
    }
    return s; /* never NULL right after a submit */
}

static void arm_accept(int lfd) {
    struct io_uring_sqe *s = sqe_get();
    if (direct) /* into the sparse table, a free slot each (IORING_FILE_INDEX_ALLOC) */
        io_uring_prep_multishot_accept_direct(s, lfd, NULL, NULL, 0);
    else
        io_uring_prep_multishot_accept(s, lfd, NULL, NULL, 0);
    io_uring_sqe_set_data64(s, ((uint64_t)UD_ACCEPT << 56) | (uint32_t)lfd);
}

static void arm_recv(int fd) {
    struct io_uring_sqe *s = sqe_get();
    io_uring_prep_recv_multishot(s, fd, NULL, 0, 0);
    if (direct)
        s->flags |= IOSQE_FIXED_FILE;
    s->flags |= IOSQE_BUFFER_SELECT;
    s->buf_group = BGID;
    io_uring_sqe_set_data64(s, UD(UD_RECV, fd));
}

static void push_send(int fd, conn *c) {
    if (c->in_send || c->owed == 0)
        return;
    if (!c->out && !(c->out = malloc(OUTCAP)))
        abort();
    const char *a = c->closing ? cl : ka;
    size_t alen = c->closing ? cl_len : ka_len;
    uint32_t n = c->owed, fit = (uint32_t)(OUTCAP / alen);
    if (n > fit)
        n = fit;
    for (uint32_t i = 0; i < n; i++)
        memcpy(c->out + i * alen, a, alen);
    c->sending = n;
    c->len = (uint32_t)(n * alen);
    c->sent = 0;
    c->in_send = true;
    struct io_uring_sqe *s = sqe_get();
    io_uring_prep_send(s, fd, c->out, c->len, MSG_NOSIGNAL);
    if (direct)
        s->flags |= IOSQE_FIXED_FILE;
    io_uring_sqe_set_data64(s, UD(UD_SEND, fd));
}

static void conn_reset(conn *c) {
    uint32_t gen = c->gen;
    free(c->out);
    memset(c, 0, sizeof *c);
    c->gen = gen;
}

/* The direct close: the receive is cancelled (it holds the file, so the socket
 * would not close under it) and the slot closed, both in the ring, no syscall.
 * close_direct goes without IOSQE_FIXED_FILE (with it the kernel says -EBADF). */
static void close_direct_now(int idx, conn *c) {
    struct io_uring_sqe *s = sqe_get();
    io_uring_prep_cancel_fd(s, idx, IORING_ASYNC_CANCEL_FD_FIXED | IORING_ASYNC_CANCEL_ALL);
    io_uring_sqe_set_data64(s, (uint64_t)UD_IGNORE << 56);
    s = sqe_get();
    io_uring_prep_close_direct(s, (unsigned)idx);
    io_uring_sqe_set_data64(s, (uint64_t)UD_IGNORE << 56);
    conn_reset(c);    /* the slot may be handed out again from here: gen tells the CQEs apart */
    c->closed = true; /* and until its next accept, late CQEs are dropped */
}

static void conn_end(int fd, conn *c) {
    if (c->recv_done && !c->in_send) {
        if (direct) {
            close_direct_now(fd, c);
            return;
        }
        close(fd);
        conn_reset(c);
    }
}

/* Counts request ends in a read, carrying a partial "\r\n\r\n" across reads. */
static uint32_t count_ends(conn *c, const char *p, size_t n) {
    static const char pat[4] = {'\r', '\n', '\r', '\n'};
    uint32_t ends = 0;
    uint8_t m = c->match;
    for (size_t i = 0; i < n; i++) {
        char ch = p[i];
        if (ch == pat[m]) {
            if (++m == 4) {
                ends++;
                m = 0;
            }
        } else {
            m = ch == '\r' ? 1 : 0;
        }
    }
    c->match = m;
    return ends;
}

static void on_recv(int fd, int res, unsigned flags) {
    conn *c = &conns[fd];
    if (flags & IORING_CQE_F_BUFFER) {
        unsigned id = flags >> IORING_CQE_BUFFER_SHIFT;
        char *p = bufs + (size_t)id * BUFSZ;
        if (res > 0) {
            uint32_t e = count_ends(c, p, (size_t)res);
            /* "Connection: close" is looked for only so that the close shape closes. */
            if (e && !c->closing && memmem(p, (size_t)res, "Connection: close", 17))
                c->closing = true;
            c->owed += e;
        }
        io_uring_buf_ring_add(br, p, BUFSZ, (unsigned short)id, NBUF - 1, 0);
        io_uring_buf_ring_advance(br, 1);
    }
    if (res > 0) {
        push_send(fd, c);
        if (!(flags & IORING_CQE_F_MORE))
            arm_recv(fd); /* the multishot ended (buffers ran out): go on */
        return;
    }
    if (res == -ENOBUFS) {
        arm_recv(fd);
        return;
    }
    if (flags & IORING_CQE_F_MORE)
        return;
    c->recv_done = true; /* EOF or an error */
    conn_end(fd, c);
}

static void on_send(int fd, int res) {
    conn *c = &conns[fd];
    c->in_send = false;
    if (res <= 0) {
        c->owed = 0;
        if (direct) {
            close_direct_now(fd, c);
            return;
        }
        shutdown(fd, SHUT_RDWR); /* the recv ends with 0, then the fd is closed */
        conn_end(fd, c);
        return;
    }
    c->sent += (uint32_t)res;
    if (c->sent < c->len) { /* partial: the rest */
        c->in_send = true;
        struct io_uring_sqe *s = sqe_get();
        io_uring_prep_send(s, fd, c->out + c->sent, c->len - c->sent, MSG_NOSIGNAL);
        if (direct)
            s->flags |= IOSQE_FIXED_FILE;
        io_uring_sqe_set_data64(s, UD(UD_SEND, fd));
        return;
    }
    c->owed -= c->sending;
    if (c->closing && c->owed == 0) {
        if (direct) { /* the close sends the FIN: no shutdown first */
            close_direct_now(fd, c);
            return;
        }
        shutdown(fd, SHUT_RDWR);
        conn_end(fd, c);
        return;
    }
    push_send(fd, c);
    conn_end(fd, c);
}

static int setup_ring(const char **mode) {
    struct io_uring_params p = {0};
    const char *env = getenv("SOL_FLAGS"); /* "plain" or "coop": to measure the fallbacks */
    if (!env || strcmp(env, "full") == 0) {
        p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN |
                  IORING_SETUP_SUBMIT_ALL | IORING_SETUP_CQSIZE;
        p.cq_entries = 8192;
        if (io_uring_queue_init_params(1024, &ring, &p) == 0) {
            *mode = "single_issuer+defer_taskrun";
            return 0;
        }
    }
    if (!env || strcmp(env, "plain") != 0) {
        p = (struct io_uring_params){.flags = IORING_SETUP_COOP_TASKRUN | IORING_SETUP_CQSIZE,
                                     .cq_entries = 8192};
        if (io_uring_queue_init_params(1024, &ring, &p) == 0) {
            *mode = "coop_taskrun";
            return 0;
        }
    }
    p = (struct io_uring_params){.flags = IORING_SETUP_CQSIZE, .cq_entries = 8192};
    *mode = "plain";
    return io_uring_queue_init_params(1024, &ring, &p);
}

/* One enter: publish the SQ tail (as liburing 2.3's submit does; its SQ index
 * array is identity) and wait for MIN_WAIT_NR, returning after MIN_WAIT_USEC
 * with what there is (EXT_ARG's min_wait_usec, 2.3's "pad"). */
static int enter_min_wait(struct __kernel_timespec *ts) {
    unsigned tail = ring.sq.sqe_tail;
    if (ring.sq.sqe_head != tail) {
        ring.sq.sqe_head = tail;
        io_uring_smp_store_release(ring.sq.ktail, tail);
    }
    unsigned submit = tail - io_uring_smp_load_acquire(ring.sq.khead);
    struct io_uring_getevents_arg arg = {
        .sigmask_sz = _NSIG / 8, .pad = MIN_WAIT_USEC, .ts = (uint64_t)(uintptr_t)ts};
    int r = io_uring_enter2((unsigned)ring.ring_fd, submit, MIN_WAIT_NR,
                            IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG, (sigset_t *)&arg,
                            sizeof arg);
    if (r == -EINVAL)
        min_wait = false;
    return r;
}

static void on_term(int sig) {
    (void)sig;
    stop = 1;
}

static int usage(void) {
    fprintf(stderr, "usage: sol [--listen 127.0.0.1:PORT] [--ready-file FILE]\n"
                    "  binds 127.0.0.1:0 unless told; the ready file (or stdout) names the port\n"
                    "  SOL_FLAGS=plain|coop runs without SINGLE_ISSUER|DEFER_TASKRUN\n"
                    "  SOL_BETTER=1: direct descriptors and min-wait (the better floor)\n");
    return 2;
}

int main(int argc, char **argv) {
    const char *ready = NULL, *listen_at = "127.0.0.1:0";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--ready-file") == 0 && i + 1 < argc)
            ready = argv[++i];
        else if (strcmp(argv[i], "--listen") == 0 && i + 1 < argc)
            listen_at = argv[++i];
        else
            return usage();
    }
    struct sockaddr_in sa;
    if (sol_parse_addr(listen_at, &sa) < 0)
        return usage();

    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, defer = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    /* nginx's "deferred" and scalwsd's defer_accept: connections arrive with their request. */
    setsockopt(lfd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &defer, sizeof defer);
    if (bind(lfd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(lfd, 4096) < 0) {
        perror("sol: bind/listen");
        return 1;
    }
    socklen_t sl = sizeof sa;
    getsockname(lfd, (struct sockaddr *)&sa, &sl);

    const char *mode;
    int err = setup_ring(&mode);
    if (err < 0 || (err = sol_buf_ring_setup(&ring, NBUF, BUFSZ, BGID, &br, &bufs)) < 0) {
        fprintf(stderr, "sol: io_uring: %s\n", strerror(-err));
        return 1;
    }
    conns = calloc(MAXFD, sizeof *conns);
    if (!conns)
        return 1;
    const char *better = getenv("SOL_BETTER");
    if (better && strcmp(better, "0") != 0) {
        /* each technique only where the kernel has it (5.19 sparse tables and
         * FILE_INDEX_ALLOC; 6.12 min-wait) */
        struct rlimit rl; /* the kernel caps a file table at RLIMIT_NOFILE */
        unsigned slots = MAXFD;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < slots)
            slots = (unsigned)rl.rlim_cur;
        direct = io_uring_register_files_sparse(&ring, slots) == 0;
        min_wait = (ring.features & IORING_FEAT_MIN_TIMEOUT) != 0;
    }
    build_answers(time(NULL));
    signal(SIGPIPE, SIG_IGN);
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);

    char ringdesc[128];
    snprintf(ringdesc, sizeof ringdesc, "%s%s%s", mode, direct ? "+direct" : "",
             min_wait ? "+min_wait" : "");
    if (sol_announce("sol", ready, ntohs(sa.sin_port), ringdesc) < 0)
        return 1;

    arm_accept(lfd);
    unsigned last = 0;
    while (!stop) {
        struct __kernel_timespec ts = {.tv_sec = 1};
        struct io_uring_cqe *cqe;
        int r;
        if (min_wait && last >= MIN_WAIT_BUSY)
            r = enter_min_wait(&ts);
        else
            r = io_uring_submit_and_wait_timeout(&ring, &cqe, 1, &ts, NULL);
        if (r < 0 && r != -ETIME && r != -EINTR)
            break;
        struct timespec now;
        clock_gettime(CLOCK_REALTIME_COARSE, &now);
        if (now.tv_sec != date_sec)
            build_answers(now.tv_sec);
        unsigned head, n = 0;
        io_uring_for_each_cqe(&ring, head, cqe) {
            n++;
            int fd = (int)(uint32_t)cqe->user_data;
            unsigned kind = (unsigned)(cqe->user_data >> 56);
            if ((kind == UD_RECV || kind == UD_SEND) &&
                (((cqe->user_data >> 32) & 0xffffff) != (conns[fd].gen & 0xffffff) ||
                 conns[fd].closed)) {
                /* a late CQE of a closed connection whose slot was reused */
                if (cqe->flags & IORING_CQE_F_BUFFER) {
                    unsigned id = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
                    io_uring_buf_ring_add(br, bufs + (size_t)id * BUFSZ, BUFSZ, (unsigned short)id,
                                          NBUF - 1, 0);
                    io_uring_buf_ring_advance(br, 1);
                }
                continue;
            }
            switch (kind) {
            case UD_ACCEPT:
                if (cqe->res >= 0 && cqe->res < MAXFD) {
                    conns[cqe->res].gen++;
                    conns[cqe->res].closed = false;
                    arm_recv(cqe->res);
                } else if (cqe->res >= 0 && !direct) {
                    close(cqe->res);
                }
                if (!(cqe->flags & IORING_CQE_F_MORE))
                    arm_accept(fd);
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
        last = n;
    }
    io_uring_queue_exit(&ring);
    return 0;
}
