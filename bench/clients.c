/* The load side of turnloop-bench: K synchronous threads, each looping connect,
 * write B bytes, read B bytes back, close, over 127.0.0.1 only. Tickets come
 * from one shared counter, so exactly the budget is attempted; each payload
 * carries its ticket and the echo must bring that exact ticket back. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

typedef struct client {
    struct bench_clients *all;
    pthread_t thread;
    int started;
    uint64_t cpu_ns;
    unsigned char *out;
    unsigned char *in;
} client;

struct bench_clients {
    int k;
    uint16_t port;
    uint32_t payload;
    uint64_t connections;
    _Atomic uint64_t next_ticket;
    _Atomic uint64_t errors;
    _Atomic int first_error;
    _Atomic(const char *) first_stage;
    _Atomic uint64_t last_done_ns;
    int long_lived;
    uint64_t per_client;
    uint64_t deadline_ns;
    _Atomic uint64_t requests;
    _Atomic int timed_out;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int go;
    client *c;
};

static void record_error(bench_clients *all, const char *stage, int err) {
    if (atomic_fetch_add(&all->errors, 1) == 0) {
        atomic_store(&all->first_error, err);
        atomic_store(&all->first_stage, stage);
    }
}

static void fill(unsigned char *p, uint32_t len, uint64_t ticket) {
    for (uint32_t i = 0; i < len; i++)
        p[i] = (unsigned char)(ticket >> (8 * (i % 8)) ^ (i / 8));
}

/* One exchange; returns 0 or a negative errno with *stage naming the step. */
static int exchange(bench_clients *all, client *cl, uint64_t ticket, const char **stage) {
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(all->port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    *stage = "socket";
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    int rc = 0;
    *stage = "connect";
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        rc = -errno;
        goto out;
    }
    fill(cl->out, all->payload, ticket);
    *stage = "write";
    for (uint32_t off = 0; off < all->payload;) {
        ssize_t w = write(fd, cl->out + off, all->payload - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            rc = -errno;
            goto out;
        }
        off += (uint32_t)w;
    }
    *stage = "read";
    for (uint32_t off = 0; off < all->payload;) {
        ssize_t r = read(fd, cl->in + off, all->payload - off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            rc = r == 0 ? -ECONNRESET : -errno;
            goto out;
        }
        off += (uint32_t)r;
    }
    *stage = "echo";
    if (memcmp(cl->in, cl->out, all->payload) != 0)
        rc = -EBADMSG;
out:
    close(fd);
    return rc;
}

static int write_all(int fd, const unsigned char *p, uint32_t len) {
    for (uint32_t off = 0; off < len;) {
        ssize_t w = write(fd, p + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -errno;
        off += (uint32_t)w;
    }
    return 0;
}

static int read_all(int fd, unsigned char *p, uint32_t len) {
    for (uint32_t off = 0; off < len;) {
        ssize_t r = read(fd, p + off, len - off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r == 0 ? -ECONNRESET : -errno;
        off += (uint32_t)r;
    }
    return 0;
}

/* One keep-alive connection for the whole run: request after request, each
 * with its own ticket, until the count or the deadline. Ends with a clean
 * close, which the server counts as a whole connection. */
static void long_lived(bench_clients *all, client *cl, uint64_t index) {
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(all->port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        record_error(all, "socket", -errno);
        return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        record_error(all, "connect", -errno);
        close(fd);
        return;
    }
    uint64_t done = 0;
    for (; done < all->per_client; done++) {
        if ((done & 63) == 0 && bench_now_ns() > all->deadline_ns) {
            atomic_store(&all->timed_out, 1);
            break;
        }
        fill(cl->out, all->payload, index << 32 | done);
        int rc = write_all(fd, cl->out, all->payload);
        const char *stage = "write";
        if (rc == 0) {
            stage = "read";
            rc = read_all(fd, cl->in, all->payload);
        }
        if (rc == 0 && memcmp(cl->in, cl->out, all->payload) != 0) {
            stage = "echo";
            rc = -EBADMSG;
        }
        if (rc < 0) {
            record_error(all, stage, rc);
            break;
        }
    }
    atomic_fetch_add(&all->requests, done);
    close(fd);
}

static void *client_main(void *arg) {
    client *cl = arg;
    bench_clients *all = cl->all;
    pthread_mutex_lock(&all->mu);
    while (!all->go)
        pthread_cond_wait(&all->cv, &all->mu);
    pthread_mutex_unlock(&all->mu);

    struct timespec t0, t1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    if (all->long_lived)
        long_lived(all, cl, (uint64_t)(cl - all->c));
    for (; !all->long_lived;) {
        uint64_t ticket = atomic_fetch_add(&all->next_ticket, 1);
        if (ticket >= all->connections)
            break;
        const char *stage = "";
        int rc = exchange(all, cl, ticket, &stage);
        if (rc < 0)
            record_error(all, stage, rc);
    }
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    cl->cpu_ns = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000ull + (uint64_t)t1.tv_nsec -
                 (uint64_t)t0.tv_nsec;
    /* The last finisher's clock ends the measured interval. */
    uint64_t now = bench_now_ns();
    uint64_t prev = atomic_load(&all->last_done_ns);
    while (now > prev && !atomic_compare_exchange_weak(&all->last_done_ns, &prev, now))
        ;
    return NULL;
}

int bench_clients_start(bench_clients **out, int k, uint16_t port, uint32_t payload,
                        uint64_t connections) {
    bench_clients *all = calloc(1, sizeof(*all));
    if (!all)
        return -ENOMEM;
    all->k = k;
    all->port = port;
    all->payload = payload;
    all->connections = connections;
    pthread_mutex_init(&all->mu, NULL);
    pthread_cond_init(&all->cv, NULL);
    all->c = calloc((size_t)k, sizeof(client));
    if (!all->c) {
        free(all);
        return -ENOMEM;
    }
    for (int i = 0; i < k; i++) {
        client *cl = &all->c[i];
        cl->all = all;
        cl->out = malloc(payload);
        cl->in = malloc(payload);
        if (!cl->out || !cl->in) {
            *out = all;
            return -ENOMEM;
        }
        /* Small stacks: K may be a few hundred threads. */
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 256 * 1024);
        int rc = pthread_create(&cl->thread, &attr, client_main, cl);
        pthread_attr_destroy(&attr);
        if (rc) {
            *out = all;
            return -rc;
        }
        cl->started = 1;
    }
    *out = all;
    return 0;
}

int bench_long_clients_start(bench_clients **out, int k, uint16_t port, uint32_t payload,
                             uint64_t per_client, uint64_t deadline_ns) {
    int rc = bench_clients_start(out, k, port, payload, 0);
    if (*out) {
        /* Read by the clients only after the go, which orders these writes. */
        (*out)->long_lived = 1;
        (*out)->per_client = per_client;
        (*out)->deadline_ns = deadline_ns;
    }
    return rc;
}

int bench_clients_pin(bench_clients *all, const int *cpus, int n) {
    for (int i = 0; i < all->k; i++) {
        if (!all->c[i].started)
            continue;
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpus[i % n], &set);
        int rc = pthread_setaffinity_np(all->c[i].thread, sizeof(set), &set);
        if (rc)
            return -rc;
    }
    return 0;
}

uint64_t bench_clients_requests(const bench_clients *all, int *timed_out) {
    *timed_out = atomic_load(&all->timed_out);
    return atomic_load(&all->requests);
}

void bench_clients_go(bench_clients *all) {
    pthread_mutex_lock(&all->mu);
    all->go = 1;
    pthread_cond_broadcast(&all->cv);
    pthread_mutex_unlock(&all->mu);
}

uint64_t bench_clients_join(bench_clients *all) {
    bench_clients_go(all); /* a partial start still lets the started ones finish */
    for (int i = 0; i < all->k; i++)
        if (all->c[i].started)
            pthread_join(all->c[i].thread, NULL);
    return atomic_load(&all->last_done_ns);
}

uint64_t bench_clients_errors(const bench_clients *all, int *first_error, const char **stage) {
    *first_error = atomic_load(&all->first_error);
    *stage = atomic_load(&all->first_stage);
    return atomic_load(&all->errors);
}

uint64_t bench_clients_cpu_ns(const bench_clients *all) {
    uint64_t sum = 0;
    for (int i = 0; i < all->k; i++)
        sum += all->c[i].cpu_ns;
    return sum;
}

void bench_clients_free(bench_clients *all) {
    if (!all)
        return;
    for (int i = 0; i < all->k; i++) {
        free(all->c[i].out);
        free(all->c[i].in);
    }
    free(all->c);
    pthread_mutex_destroy(&all->mu);
    pthread_cond_destroy(&all->cv);
    free(all);
}
