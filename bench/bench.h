/* turnloop-bench internals: the run's configuration and results, shared by the
 * command line (turnloop-bench.c), the server loops (serve.c), the clients
 * (clients.c) and the measure (measure.c). Nothing here is library API. */
#ifndef TURNLOOP_BENCH_H
#define TURNLOOP_BENCH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "turnloop.h"

typedef enum bench_route {
    ROUTE_HANDOFF = 0,
    ROUTE_REUSE_PORT,
    ROUTE_EXCLUSIVE,
    ROUTE_ACCEPTOR,
    ROUTE_HERD,
    ROUTE_REUSE_PORT_CPU, /* reuse-port with the CPU-steering BPF program; loops pinned */
} bench_route;

typedef struct bench_config {
    bench_route route;
    int loops;
    uint64_t connections;
    int clients;
    uint32_t payload;
    int portable;
    tl_backend_kind backend;
    tl_handoff_policy policy;
    uint32_t watchdog_ms;
    /* Test-only: the last loop is created and turned but given no listener and
     * no share of any handoff, so the "every loop served" rule really fires. */
    int test_idle_loop;
    /* Test-only: loop 0 leaves its first served connection out of per_loop, so
     * the "counts sum to the budget" rule really fires. */
    int test_miscount;
    /* Test-only: loops are made with TL_LOOP_NO_DISTRIBUTE, the library's stand-in
     * for a platform that cannot distribute, so reuse-port's exit 2 is exercised. */
    int test_no_distribute;
    /* Test-only: loops are made with TL_LOOP_NO_CPU_STEER, a kernel without
     * SO_ATTACH_REUSEPORT_CBPF, so reuse-port-cpu's exit 2 is exercised. */
    int test_no_cpu_steer;
    /* Test-only: the last acceptor's listener is closed before the run (so the
     * kernel routes nothing to it), so "every acceptor accepted" really fires. */
    int test_idle_acceptor;
    int acceptors; /* handoff: accepting loops, each feeding a subset (default 1) */
    int pin;       /* pin loop i to the i-th CPU of the affinity mask */
    /* Pin client i to the (i mod M)-th of the mask's M CPUs: on loopback the
     * SYN is processed on the connecting CPU, so this spreads SYNs over CPUs
     * the way RSS spreads a NIC's flows over its receive queues. */
    int pin_clients;
    /* --long-lived K: K clients, one keep-alive connection each, requests
     * back to back until requests_per_client or seconds, whichever first. */
    int long_lived;
    uint64_t requests_per_client;
    uint32_t seconds;
} bench_config;

/* One server loop on its own thread. Counters written by that thread only;
 * served is read by the main thread while the run is going. */
typedef struct bench_loop {
    tl_loop *loop;
    int index;
    int accepting; /* arms tl_accept on listener (reuse-port, exclusive, herd, handoff's acceptor)
                    */
    tl_handle listener;  /* 0 when this loop has none */
    tl_handoff *handoff; /* set on the handoff route's accepting loop only */
    const bench_config *cfg;
    _Atomic int *stop;
    pthread_t thread;
    _Atomic uint64_t served;
    _Atomic uint64_t requests; /* --long-lived: echoes completed on this loop */
    int cpu;                   /* pinned to this CPU, or -1 */
    uint64_t failed;           /* connections that ended without a full exchange */
    uint64_t setup_errors;     /* an operation the library refused to start */
    uint64_t accept_errors;    /* accept completions with an error other than cancel */
    uint64_t dispatched;       /* handoff accepting loop: connections handed on */
    int first_error;           /* negative errno of the first failure, for the message */
    tl_loop_stats stats;       /* read on the loop's own thread at the end */
    int alive_at_end;          /* tl_loop_alive() when the thread gave up draining */
    uint64_t cpu_ns;           /* CLOCK_THREAD_CPUTIME_ID of the loop thread */
    /* Context switches of the loop thread (getrusage RUSAGE_THREAD): the herd's
     * real cost is every loop woken per connection, and a loop that wakes to
     * find nothing does not always count as a spurious wakeup. */
    uint64_t vcsw, ivcsw;
} bench_loop;

/* serve.c */
int bench_loop_start(bench_loop *bl);
void bench_loop_join(bench_loop *bl);

/* clients.c: K synchronous client threads sharing one ticket counter. */
typedef struct bench_clients bench_clients;
int bench_clients_start(bench_clients **out, int k, uint16_t port, uint32_t payload,
                        uint64_t connections);
void bench_clients_go(bench_clients *c);
/* --long-lived: k clients, one connection each, up to per_client requests or
 * until deadline_ns (monotonic). */
int bench_long_clients_start(bench_clients **out, int k, uint16_t port, uint32_t payload,
                             uint64_t per_client, uint64_t deadline_ns);
/* Requests completed by all clients (long-lived), and whether the deadline cut any. */
uint64_t bench_clients_requests(const bench_clients *c, int *timed_out);
/* Pins client i to cpus[i % n]; call before bench_clients_go(). */
int bench_clients_pin(bench_clients *c, const int *cpus, int n);
/* Joins every client; returns the monotonic ns at which the last one finished. */
uint64_t bench_clients_join(bench_clients *c);
uint64_t bench_clients_errors(const bench_clients *c, int *first_error, const char **stage);
uint64_t bench_clients_cpu_ns(const bench_clients *c);
void bench_clients_free(bench_clients *c);

/* measure.c */
uint64_t bench_now_ns(void);
uint64_t bench_process_cpu_ns(void);
typedef struct bench_counter {
    int fd;            /* -1 when the counter is not in use */
    const char *scope; /* "user+kernel" or "user" */
    char fallback[96]; /* why the counter is not used, e.g. "perf_event_open: ENOENT" */
} bench_counter;
/* Opens an instruction counter that threads created afterwards inherit. */
void bench_counter_open(bench_counter *c);
void bench_counter_start(bench_counter *c);
/* Stops the counter and reads it (threads must have exited to be summed). */
int bench_counter_read(bench_counter *c, uint64_t *instructions);
void bench_counter_close(bench_counter *c);

#endif
