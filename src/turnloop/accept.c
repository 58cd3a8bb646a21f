/* Accept routes that hand connections across loops: the handoff (one
 * accepting loop, detach + post to a sibling) and acceptor threads (yahns:
 * blocking accept4 in dedicated threads). Placement policies live here so
 * that both routes pick workers the same way. */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

typedef struct placement {
    tl_loop **loops;
    int n;
    tl_handoff_policy policy;
    atomic_uint_fast64_t next; /* round-robin cursor */
    atomic_uint_fast64_t *count;
} placement;

static int placement_init(placement *p, tl_loop **loops, int n, tl_handoff_policy policy) {
    if (n <= 0 || (policy != TL_HANDOFF_ROUND_ROBIN && policy != TL_HANDOFF_LEAST_LOADED))
        return -EINVAL;
    p->loops = malloc((size_t)n * sizeof *p->loops);
    p->count = calloc((size_t)n, sizeof *p->count);
    if (!p->loops || !p->count) {
        free(p->loops);
        free(p->count);
        return -ENOMEM;
    }
    memcpy(p->loops, loops, (size_t)n * sizeof *loops);
    p->n = n;
    p->policy = policy;
    atomic_init(&p->next, 0);
    for (int i = 0; i < n; i++)
        atomic_init(&p->count[i], 0);
    return 0;
}

static void placement_fini(placement *p) {
    free(p->loops);
    free(p->count);
}

/* Round-robin is exact by construction. Least-loaded scans every worker's
 * load (handles + queued transports) starting at the round-robin cursor, so
 * ties rotate instead of piling onto worker 0. */
static int placement_pick(placement *p) {
    uint64_t start = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
    int first = (int)(start % (uint64_t)p->n);
    if (p->policy == TL_HANDOFF_ROUND_ROBIN)
        return first;
    int best = first;
    uint32_t best_load = tl_loop_load(p->loops[first]);
    for (int k = 1; k < p->n && best_load > 0; k++) {
        int i = (first + k) % p->n;
        uint32_t l = tl_loop_load(p->loops[i]);
        if (l < best_load) {
            best = i;
            best_load = l;
        }
    }
    return best;
}

static int placement_send(placement *p, int i, const tl_detached *d, uint64_t token) {
    int err = tl_loop_post_transport(p->loops[i], d, token);
    if (err < 0)
        return err;
    atomic_fetch_add_explicit(&p->count[i], 1, memory_order_relaxed);
    return i;
}

/* ---- handoff ------------------------------------------------------------ */

struct tl_handoff {
    placement place;
};

int tl_handoff_new(tl_handoff **out, tl_loop **workers, int n, tl_handoff_policy policy) {
    tl_handoff *ho = calloc(1, sizeof *ho);
    if (!ho)
        return -ENOMEM;
    int err = placement_init(&ho->place, workers, n, policy);
    if (err < 0) {
        free(ho);
        return err;
    }
    *out = ho;
    return 0;
}

void tl_handoff_free(tl_handoff *ho) {
    if (!ho)
        return;
    placement_fini(&ho->place);
    free(ho);
}

int tl_handoff_dispatch(tl_handoff *ho, tl_loop *acceptor, tl_handle accepted, uint64_t token) {
    tl_detached d;
    int err = tl_detach(acceptor, accepted, &d);
    if (err < 0) {
        /* A fresh connection has nothing outstanding; if it does, the host broke
         * the contract. Close it rather than leak it; and one that could not be
         * given a real descriptor (direct, out of descriptors) too. */
        if (err == -EAGAIN || err == -EMFILE || err == -ENFILE)
            tl_close(acceptor, accepted, 0);
        return err;
    }
    return placement_send(&ho->place, placement_pick(&ho->place), &d, token);
}

uint64_t tl_handoff_count(const tl_handoff *ho, int worker) {
    if (worker < 0 || worker >= ho->place.n)
        return 0;
    return atomic_load_explicit(&ho->place.count[worker], memory_order_relaxed);
}

/* ---- acceptor threads (yahns) ---------------------------------------------- */

/* Each thread waits in its own epoll set, on the listener with EPOLLEXCLUSIVE
 * (the kernel wakes one waiter per connection, as a blocking accept4 would)
 * and on a stop eventfd. Stopping never touches the listener: it may be
 * shared with another process (a re-exec restart, socket activation), where a
 * shutdown() would end it for that process too and reset its queue. */
struct tl_acceptor {
    placement place;
    int fd;
    int stop_fd;
    uint64_t token;
    int nthreads;
    pthread_t *threads;
    int *epfd;
    atomic_int stopping;
};

typedef struct acceptor_arg {
    tl_acceptor *a;
    int epfd;
} acceptor_arg;

static void *acceptor_main(void *arg) {
    tl_acceptor *a = ((acceptor_arg *)arg)->a;
    int epfd = ((acceptor_arg *)arg)->epfd;
    free(arg);
    while (!atomic_load_explicit(&a->stopping, memory_order_acquire)) {
        int fd = accept4(a->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            int e = errno;
            if (e == EAGAIN || e == EWOULDBLOCK) {
                struct epoll_event ev[2];
                if (epoll_wait(epfd, ev, 2, -1) < 0 && errno != EINTR)
                    break;
                continue;
            }
            if (e == EINTR || e == ECONNABORTED || e == EPROTO)
                continue;
            if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
                /* Out of descriptors: back off, do not spin; still stoppable. */
                struct pollfd p = {.fd = a->stop_fd, .events = POLLIN};
                poll(&p, 1, 100);
                continue;
            }
            break; /* the listener is gone */
        }
        tl_detached d = {.fd = fd, .kind = TL_H_STREAM};
        placement_send(&a->place, placement_pick(&a->place), &d, a->token); /* closes on error */
    }
    return NULL;
}

static void acceptor_free(tl_acceptor *a) {
    for (int i = 0; i < a->nthreads; i++)
        pthread_join(a->threads[i], NULL);
    for (int i = 0; a->epfd && i < a->nthreads + 1; i++)
        if (a->epfd[i] >= 0)
            close(a->epfd[i]);
    if (a->stop_fd >= 0)
        close(a->stop_fd);
    free(a->epfd);
    free(a->threads);
    placement_fini(&a->place);
    free(a);
}

int tl_acceptor_start(tl_acceptor **out, int fd, int nthreads, tl_loop **loops, int nloops,
                      tl_handoff_policy policy, uint64_t token) {
    if (nthreads <= 0 || fd < 0)
        return -EINVAL;
    tl_acceptor *a = calloc(1, sizeof *a);
    if (!a)
        return -ENOMEM;
    int err = placement_init(&a->place, loops, nloops, policy);
    if (err < 0) {
        free(a);
        return err;
    }
    a->fd = fd;
    a->token = token;
    atomic_init(&a->stopping, 0);
    a->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    a->threads = calloc((size_t)nthreads, sizeof *a->threads);
    a->epfd = malloc(((size_t)nthreads + 1) * sizeof *a->epfd);
    /* A thread woken with another must not block in accept4 where stop
     * cannot reach it: the listener is made non-blocking. */
    int fl = fcntl(fd, F_GETFL);
    err = a->stop_fd < 0 || fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ? -errno : 0;
    if (err == 0 && (!a->threads || !a->epfd))
        err = -ENOMEM;
    for (int i = 0; a->epfd && i <= nthreads; i++)
        a->epfd[i] = -1;
    if (err < 0) {
        acceptor_free(a);
        return err;
    }
    tl__listener_nodelay(fd);
    for (; a->nthreads < nthreads; a->nthreads++) {
        int ep = epoll_create1(EPOLL_CLOEXEC);
        a->epfd[a->nthreads] = ep;
        struct epoll_event lev = {.events = EPOLLIN | EPOLLEXCLUSIVE};
        struct epoll_event sev = {.events = EPOLLIN};
        acceptor_arg *arg = malloc(sizeof *arg);
        err = 0;
        if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &lev) < 0 ||
            epoll_ctl(ep, EPOLL_CTL_ADD, a->stop_fd, &sev) < 0)
            err = -errno;
        else if (!arg)
            err = -ENOMEM;
        if (err == 0) {
            *arg = (acceptor_arg){.a = a, .epfd = ep};
            err = -pthread_create(&a->threads[a->nthreads], NULL, acceptor_main, arg);
        }
        if (err < 0) {
            free(arg);
            tl_acceptor_stop(a); /* closes epfd[0..nthreads], this one's included */
            return err;
        }
    }
    *out = a;
    return 0;
}

void tl_acceptor_stop(tl_acceptor *a) {
    if (!a)
        return;
    atomic_store_explicit(&a->stopping, 1, memory_order_release);
    /* Level-triggered and never read: every thread sees it, now or later. */
    uint64_t one = 1;
    if (write(a->stop_fd, &one, sizeof one) < 0) {
        /* an eventfd write of 1 cannot fail short of overflow */
    }
    acceptor_free(a);
}

uint64_t tl_acceptor_count(const tl_acceptor *a, int loop_index) {
    if (loop_index < 0 || loop_index >= a->place.n)
        return 0;
    return atomic_load_explicit(&a->place.count[loop_index], memory_order_relaxed);
}
