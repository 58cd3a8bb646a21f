/* The epoll backend: readiness turned into completions. Every descriptor is
 * added once, edge-triggered, and never modified: readiness is cached per
 * handle, and the queued ops run while it lasts. The event's data is the full
 * generational handle id, so an event for a slot closed and reused inside one
 * batch is recognised as stale and dropped (nginx's instance bit, widened). */
#include "../internal.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define EVENTS_PER_WAIT 256
#define ACCEPTS_PER_WAKE 64 /* then yield to the rest of the loop, and go on next turn */
#define ACCEPT_BACKOFF_MS 100

typedef struct parked {
    tl_handle id;    /* a listener that stopped accepting: at the ceiling, or backing off */
    uint8_t backoff; /* counted in loop->backoff_listeners */
} parked;

typedef struct epoll_state {
    int epfd;
    struct epoll_event events[EVENTS_PER_WAIT];
    parked *parked;
    uint32_t parked_len, parked_cap;
} epoll_state;

static epoll_state *state(tl_loop *loop) {
    return loop->be_state;
}

static void ep_fini(tl_loop *loop);

static int ep_init(tl_loop *loop) {
    epoll_state *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (s->epfd < 0) {
        int err = -errno;
        free(s);
        return err;
    }
    loop->be_state = s;
    if (loop->wake_fd < 0) /* kept when an AUTO loop moves here from io_uring */
        loop->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 0}; /* 0 is never a handle id */
    if (loop->wake_fd < 0 || epoll_ctl(s->epfd, EPOLL_CTL_ADD, loop->wake_fd, &ev) < 0) {
        int err = -errno;
        ep_fini(loop); /* a failed init cleans up after itself: the core will not call fini */
        return err;
    }
    return 0;
}

static void ep_fini(tl_loop *loop) {
    epoll_state *s = state(loop);
    if (loop->wake_fd >= 0)
        close(loop->wake_fd);
    loop->wake_fd = -1;
    if (!s)
        return;
    close(s->epfd);
    free(s->parked);
    free(s);
    loop->be_state = NULL;
}

static int ep_handle_add(tl_loop *loop, uint32_t hi, unsigned shared_flags) {
    tl_hslot *h = &loop->h[hi];
    struct epoll_event ev = {.data.u64 = tl__make_id(loop, h->gen, hi)};
    if (h->type == TL_H_STREAM) {
        ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
        h->ready = TL_READY_OUT; /* a connected socket can take bytes at once */
    } else if (h->type == TL_H_DGRAM) {
        ev.events = EPOLLIN | EPOLLOUT | EPOLLET;
        h->ready = TL_READY_OUT;
    } else {
        ev.events = EPOLLIN | EPOLLET;
        if (shared_flags & TL_SHARED_EXCLUSIVE)
            ev.events |= EPOLLEXCLUSIVE;
    }
    if (epoll_ctl(state(loop)->epfd, EPOLL_CTL_ADD, h->fd, &ev) < 0)
        return -errno;
    return 0;
}

static void ep_handle_remove(tl_loop *loop, uint32_t hi) {
    epoll_ctl(state(loop)->epfd, EPOLL_CTL_DEL, loop->h[hi].fd, NULL);
}

static void park(tl_loop *loop, uint32_t hi) {
    epoll_state *s = state(loop);
    if (loop->h[hi].paused) { /* listed already: only its reason may change */
        tl_handle id = tl__make_id(loop, loop->h[hi].gen, hi);
        for (uint32_t i = 0; i < s->parked_len; i++)
            if (s->parked[i].id == id)
                s->parked[i].backoff |= loop->h[hi].backoff_until != 0;
        return;
    }
    if (s->parked_len == s->parked_cap) {
        uint32_t ncap = s->parked_cap ? s->parked_cap * 2 : 8;
        parked *n = realloc(s->parked, (size_t)ncap * sizeof *n);
        if (!n)
            return; /* stays paused until its next readiness edge */
        s->parked = n;
        s->parked_cap = ncap;
    }
    s->parked[s->parked_len].id = tl__make_id(loop, loop->h[hi].gen, hi);
    s->parked[s->parked_len++].backoff = loop->h[hi].backoff_until != 0;
    loop->h[hi].paused = 1;
}

/* Moves parked listeners that may go on (room again, backoff over) to the ready list. */
static void unpark(tl_loop *loop) {
    epoll_state *s = state(loop);
    uint32_t keep = 0;
    for (uint32_t i = 0; i < s->parked_len; i++) {
        uint32_t hi;
        if (tl__handle_lookup(loop, s->parked[i].id, &hi) < 0) {
            if (s->parked[i].backoff) /* closed while backing off */
                loop->backoff_listeners--;
            continue;
        }
        tl_hslot *h = &loop->h[hi];
        bool backoff = h->backoff_until > loop->now_ms;
        if (backoff || !tl__handle_room(loop)) {
            s->parked[keep++] = s->parked[i];
            continue;
        }
        if (h->backoff_until) {
            h->backoff_until = 0;
            loop->backoff_listeners--;
        }
        h->paused = 0;
        tl__ready_push(loop, hi);
    }
    s->parked_len = keep;
}

static void ep_resume_accepts(tl_loop *loop) {
    if (state(loop)->parked_len > 0)
        unpark(loop);
}

static void run_accepts(tl_loop *loop, uint32_t hi) {
    int budget = ACCEPTS_PER_WAKE;
    bool got_one = false;
    uint32_t oi;
    while ((oi = loop->h[hi].rq_head) != TL_NIL) {
        tl_oslot *o = &loop->o[oi];
        if (loop->h[hi].backoff_until > loop->now_ms)
            return; /* parked until the backoff is over */
        if (!tl__handle_room(loop)) {
            if (!o->multishot) { /* single-shot: the seed's ResourceLimit, loud */
                tl__op_complete(loop, oi, -EMFILE, false, NULL);
                continue;
            }
            if (!loop->h[hi].paused) /* turnloop#77: pause, keep the kernel's queue */
                loop->stats.accept_pauses++;
            park(loop, hi);
            return;
        }
        int fd = accept4(loop->h[hi].fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            int e = errno;
            if (e == EAGAIN || e == EWOULDBLOCK) {
                loop->h[hi].ready &= ~TL_READY_IN;
                /* Spurious: the kernel woke us for this listener and another loop
                 * took the connection. A probe on cached readiness is no wake. */
                if (!got_one && loop->h[hi].woken && loop->h[hi].type == TL_H_SHARED_LISTENER)
                    loop->stats.spurious_wakeups++;
                loop->h[hi].woken = 0;
                return;
            }
            if (e == EINTR || e == ECONNABORTED || e == EPROTO)
                continue;
            if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
                loop->stats.accept_errors++;
                if (o->multishot) { /* out of descriptors: back off, do not spin */
                    loop->h[hi].backoff_until = loop->now_ms + ACCEPT_BACKOFF_MS;
                    loop->backoff_listeners++;
                    park(loop, hi);
                    return;
                }
            }
            tl__op_complete(loop, oi, -e, false, NULL);
            continue;
        }
        got_one = true;
        loop->h[hi].woken = 0; /* TCP_NODELAY is inherited from the listener */
        uint32_t ci;
        int err = tl__handle_new(loop, fd, TL_H_STREAM, 0, &ci); /* may move loop->h */
        if (err < 0) {
            tl__op_complete(loop, oi, err, false, NULL);
            continue;
        }
        loop->stats.accepted++;
        tl_completion extra = {.u.accepted = tl__make_id(loop, loop->h[ci].gen, ci)};
        tl__op_complete(loop, oi, 0, loop->o[oi].multishot, &extra);
        if (--budget == 0) {
            tl__ready_push(loop, hi); /* more may be queued: go on next turn */
            return;
        }
    }
}

static void run_reads(tl_loop *loop, uint32_t hi) {
    tl_hslot *h = &loop->h[hi];
    uint32_t oi;
    while ((h->ready & TL_READY_IN) && (oi = h->rq_head) != TL_NIL) {
        tl_oslot *o = &loop->o[oi];
        if (o->kind == TL_OP_READ) {
            const tl_oio *io = tl__op_io(loop, o);
            ssize_t n = read(h->fd, io->iov[0].iov_base, io->iov[0].iov_len);
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                h->ready &= ~TL_READY_IN;
                return;
            }
            if (n < 0 && errno == EINTR)
                continue;
            /* Edge-triggered: a short read means the socket was drained, and any
             * later arrival raises a new edge. End of stream stays readable. */
            if (n > 0 && (size_t)n < io->iov[0].iov_len && !(h->ready & TL_READY_EOF))
                h->ready &= ~TL_READY_IN;
            tl__op_complete(loop, oi, n < 0 ? -errno : (int32_t)n, false, NULL);
            continue;
        }
        /* TL_OP_RECV: multishot into a loop buffer. One waiting for a buffer
         * runs when its turn in the queue comes (ep_wait), not before, and
         * while any wait, one that was not waiting joins the end of the line:
         * a connection that happens to be ready when a buffer is free must not
         * overtake those that were there first. */
        if (o->starved)
            return;
        uint32_t id;
        if ((loop->starve_len > 0 && !o->was_starved) || tl__buffer_take(loop, hi, &id) < 0) {
            loop->stats.recv_buffer_starved++;
            tl__starve_push(loop, oi, o->was_starved); /* IN stays: the bytes wait */
            return;
        }
        o->was_starved = 0;
        ssize_t n = read(h->fd, tl__buffer_data(loop, id), loop->buf_size);
        if (n <= 0) {
            int e = n < 0 ? errno : 0;
            tl__buffer_untake(loop, id);
            if (e == EAGAIN || e == EWOULDBLOCK) {
                h->ready &= ~TL_READY_IN;
                return;
            }
            if (e == EINTR)
                continue;
            tl__op_complete(loop, oi, -e, false, NULL);
            continue;
        }
        tl_completion extra = {.flags = TL_CQE_BUFFER,
                               .u.buf = {.data = tl__buffer_data(loop, id), .id = id}};
        tl__op_complete(loop, oi, (int32_t)n, true, &extra);
        if ((uint32_t)n < loop->buf_size && !(h->ready & TL_READY_EOF))
            h->ready &= ~TL_READY_IN;
        else
            tl__ready_push(loop, hi); /* a full buffer: more is likely; others first */
        return;
    }
}

static void run_writes(tl_loop *loop, uint32_t hi) {
    tl_hslot *h = &loop->h[hi];
    uint32_t oi;
    while ((h->ready & TL_READY_OUT) && (oi = h->wq_head) != TL_NIL) {
        tl_oslot *o = &loop->o[oi];
        if (o->kind == TL_OP_CONNECT) {
            int soerr = 0;
            socklen_t l = sizeof soerr;
            if (h->connecting && getsockopt(h->fd, SOL_SOCKET, SO_ERROR, &soerr, &l) < 0)
                soerr = errno;
            h->connecting = 0;
            tl__op_complete(loop, oi, -soerr, false, NULL);
            continue;
        }
        /* Skip what is written already, then send the rest in one call. */
        tl_oio *io = tl__op_io(loop, o);
        struct iovec iov[TL_MAX_IOV];
        int cnt = 0;
        uint32_t skip = io->done;
        for (int i = 0; i < io->iovcnt; i++) {
            size_t len = io->iov[i].iov_len;
            if (skip >= len) {
                skip -= (uint32_t)len;
                continue;
            }
            iov[cnt].iov_base = (char *)io->iov[i].iov_base + skip;
            iov[cnt].iov_len = len - skip;
            skip = 0;
            cnt++;
        }
        struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)cnt};
        ssize_t n = sendmsg(h->fd, &msg, MSG_NOSIGNAL); /* a vanished peer is EPIPE, not SIGPIPE */
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                h->ready &= ~TL_READY_OUT;
                return;
            }
            if (errno == EINTR)
                continue;
            tl__op_complete(loop, oi, -errno, false, NULL);
            continue;
        }
        io->done += (uint32_t)n;
        if (io->done < io->total) {
            h->ready &= ~TL_READY_OUT; /* the socket buffer is full: wait for the edge */
            return;
        }
        tl__op_complete(loop, oi, (int32_t)io->total, false, NULL);
    }
}

/* Datagrams: a recvmmsg batch per turn and handle, then the next batch on the
 * next turn while the socket has more (other handles go first meanwhile). */
static void run_dgram_recv(tl_loop *loop, uint32_t hi) {
    uint32_t oi = loop->h[hi].rq_head;
    if (!(loop->h[hi].ready & TL_READY_IN) || oi == TL_NIL)
        return;
    bool drained;
    int n = tl__udp_recv_batch(loop, oi, &drained);
    if (n < 0) {
        tl__op_complete(loop, oi, n, false, NULL); /* -ENOBUFS: readiness stays for a re-arm */
        return;
    }
    if (drained)
        loop->h[hi].ready &= ~TL_READY_IN; /* the next datagram raises a new edge */
    else
        tl__ready_push(loop, hi);
}

static void run_dgram_sends(tl_loop *loop, uint32_t hi) {
    uint32_t oi;
    while ((loop->h[hi].ready & TL_READY_OUT) && (oi = loop->h[hi].wq_head) != TL_NIL) {
        int r = tl__udp_send_step(loop, oi);
        if (r == -EAGAIN) {
            loop->h[hi].ready &= ~TL_READY_OUT; /* the socket buffer is full: wait for the edge */
            return;
        }
        tl__op_complete(loop, oi, r, false, NULL);
    }
}

static void run_handle(tl_loop *loop, uint32_t hi) {
    if (loop->h[hi].type == TL_H_DGRAM) {
        run_dgram_recv(loop, hi);
        run_dgram_sends(loop, hi);
        return;
    }
    if (loop->h[hi].type != TL_H_STREAM) {
        if (loop->h[hi].ready & TL_READY_IN)
            run_accepts(loop, hi);
        return;
    }
    run_reads(loop, hi);
    run_writes(loop, hi);
}

static void ep_submit(tl_loop *loop, uint32_t oi) {
    tl_oslot *o = &loop->o[oi];
    uint32_t hi = o->handle;
    tl_hslot *h = &loop->h[hi];
    switch (o->kind) {
    case TL_OP_CONNECT:
        if (!h->connecting)
            tl__op_complete(loop, oi, 0, false, NULL); /* connected at once (loopback) */
        else
            h->ready &= ~TL_READY_OUT; /* writable means connected: wait for that edge */
        return;
    case TL_OP_WRITE:
        /* Most writes fit the socket buffer: try now, saving a turn. */
        if (h->wq_head == oi && (h->ready & TL_READY_OUT))
            run_writes(loop, hi);
        return;
    case TL_OP_UDP_SEND:
        if (h->wq_head == oi && (h->ready & TL_READY_OUT))
            run_dgram_sends(loop, hi);
        return;
    default:
        if (h->ready & TL_READY_IN)
            tl__ready_push(loop, hi);
        return;
    }
}

static void ep_cancel(tl_loop *loop, uint32_t oi) {
    /* Nothing is in flight in the kernel on epoll: the op ends now. */
    tl__op_complete(loop, oi, -ECANCELED, false, NULL);
}

static int ep_wait(tl_loop *loop, int timeout_ms) {
    epoll_state *s = state(loop);
    /* Receives waiting for a buffer run first, oldest first, as many as there
     * are free buffers (they are still readable: their edge was not used). */
    for (uint32_t avail = loop->buf_free_len; avail > 0 && loop->starve_len > 0; avail--) {
        uint32_t oi = tl__starve_pop(loop);
        if (oi == TL_NIL)
            break;
        tl__ready_push(loop, loop->o[oi].handle);
        timeout_ms = 0;
    }
    int n = epoll_wait(s->epfd, s->events, EVENTS_PER_WAIT, timeout_ms);
    if (n < 0)
        return errno == EINTR ? 0 : -errno;
    loop->now_ms = tl__clock_ms();
    for (int i = 0; i < n; i++) {
        struct epoll_event *ev = &s->events[i];
        if (ev->data.u64 == 0) {
            tl__wake_consume(loop);
            continue;
        }
        uint32_t hi;
        if (tl__handle_lookup(loop, ev->data.u64, &hi) < 0)
            continue; /* stale: the slot was closed (and maybe reused) */
        tl_hslot *h = &loop->h[hi];
        if (ev->events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
            h->ready |= TL_READY_IN;
            h->woken = 1;
        }
        if (ev->events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
            h->ready |= TL_READY_EOF;
        if (ev->events & (EPOLLOUT | EPOLLHUP | EPOLLERR))
            h->ready |= TL_READY_OUT;
        if (h->rq_head != TL_NIL || h->wq_head != TL_NIL)
            tl__ready_push(loop, hi);
    }
    if (loop->backoff_listeners > 0)
        unpark(loop);
    /* Run the handles that are ready now; those that ask to go on (a budget
     * spent, a full buffer) join a fresh list for the next turn. */
    uint32_t len;
    uint32_t *list = tl__ready_take(loop, &len);
    for (uint32_t i = 0; i < len; i++) {
        uint32_t hi = list[i];
        loop->h[hi].on_ready = 0;
        if (loop->h[hi].state != TL_SLOT_LIVE)
            continue; /* closed since it was listed */
        run_handle(loop, hi);
    }
    return 0;
}

const tl_backend_ops tl__backend_epoll = {
    .name = "epoll",
    .init = ep_init,
    .fini = ep_fini,
    .handle_add = ep_handle_add,
    .handle_remove = ep_handle_remove,
    .submit = ep_submit,
    .cancel = ep_cancel,
    .wait = ep_wait,
    .resume_accepts = ep_resume_accepts,
    .buffer_released = NULL,
};
