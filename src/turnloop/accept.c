/* Accept routes that hand connections across loops: the handoff (one
 * accepting loop, detach + post to a sibling) and acceptor threads (yahns:
 * blocking accept4 in dedicated threads). Placement policies live here so
 * that both routes pick workers the same way. */
#include "internal.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
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
         * the contract. Close it rather than leak it. */
        if (err == -EAGAIN)
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

struct tl_acceptor {
    placement place;
    int fd;
    uint64_t token;
    int nthreads;
    pthread_t *threads;
    atomic_int stopping;
};

static void *acceptor_main(void *arg) {
    tl_acceptor *a = arg;
    while (!atomic_load_explicit(&a->stopping, memory_order_acquire)) {
        /* Blocking accept: the kernel queues waiters exclusively and FIFO, so it
         * wakes exactly one thread per connection, in turn. */
        int fd = accept4(a->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
                continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                usleep(100 * 1000); /* out of descriptors: back off, do not spin */
                continue;
            }
            break; /* EINVAL after shutdown(): we are stopping */
        }
        tl_detached d = {.fd = fd, .kind = TL_H_STREAM};
        placement_send(&a->place, placement_pick(&a->place), &d, a->token); /* closes on error */
    }
    return NULL;
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
    tl__listener_nodelay(fd);
    atomic_init(&a->stopping, 0);
    a->threads = calloc((size_t)nthreads, sizeof *a->threads);
    if (!a->threads) {
        placement_fini(&a->place);
        free(a);
        return -ENOMEM;
    }
    for (; a->nthreads < nthreads; a->nthreads++) {
        err = -pthread_create(&a->threads[a->nthreads], NULL, acceptor_main, a);
        if (err < 0) {
            tl_acceptor_stop(a);
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
    /* shutdown() on a listening socket wakes every thread blocked in accept4
     * (EINVAL); it also ends the listener, which is what stopping means. */
    shutdown(a->fd, SHUT_RDWR);
    for (int i = 0; i < a->nthreads; i++)
        pthread_join(a->threads[i], NULL);
    free(a->threads);
    placement_fini(&a->place);
    free(a);
}

uint64_t tl_acceptor_count(const tl_acceptor *a, int loop_index) {
    if (loop_index < 0 || loop_index >= a->place.n)
        return 0;
    return atomic_load_explicit(&a->place.count[loop_index], memory_order_relaxed);
}
