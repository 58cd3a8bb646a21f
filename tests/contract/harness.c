/* The contract tests' harness: loops on the backend under test, blocking
 * loopback clients that each send a distinct id and require it back, and the
 * id-echo host. The host keeps its own count of live connections and arms a
 * single-shot accept only when that count says there is room, so a handle it
 * forgets (the leak variant) surfaces as -EMFILE from the library. */
#include "harness.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

tl_backend_kind test_backend = TL_BACKEND_EPOLL;

tl_loop *test_loop(uint32_t max_handles, uint32_t max_ops, unsigned flags) {
    tl_loop_options o = {.max_handles = max_handles,
                         .max_operations = max_ops,
                         .backend = test_backend,
                         .flags = flags};
    tl_loop *loop = NULL;
    int err = tl_loop_new(&loop, &o);
    if (err < 0)
        fail_msg("tl_loop_new: %s", tl_strerror(err));
    return loop;
}

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int turn_until(tl_loop *loop, tl_completion *out, int cap, int want) {
    int got = 0;
    uint64_t end = now_ms() + 5000;
    while (got < want && got < cap && now_ms() < end) {
        int n = tl_loop_turn(loop, 50, out + got, cap - got);
        assert_true(n >= 0);
        got += n;
    }
    return got;
}

int drain_loop(tl_loop *loop) {
    tl_completion c[64];
    uint64_t end = now_ms() + 5000;
    while (tl_loop_alive(loop) && now_ms() < end) {
        int n = tl_loop_turn(loop, 20, c, 64);
        assert_true(n >= 0);
        for (int i = 0; i < n; i++)
            if (c[i].flags & TL_CQE_BUFFER)
                tl_buffer_release(loop, c[i].u.buf.id);
    }
    return tl_loop_alive(loop);
}

struct sockaddr_in loopback_any_port(void) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

uint16_t handle_port(tl_loop *loop, tl_handle h) {
    struct sockaddr_storage ss;
    socklen_t l;
    assert_int_equal(tl_handle_sockname(loop, h, &ss, &l), 0);
    return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

int open_fd_count(void) {
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (!d)
        return -1;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

int client_echo_id(uint16_t port, uint64_t id) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    struct timeval tv = {.tv_sec = 5};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = loopback_any_port();
    a.sin_port = htons(port);
    int err = 0;
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0)
        err = -errno;
    if (err == 0 && send(fd, &id, sizeof id, MSG_NOSIGNAL) != (ssize_t)sizeof id)
        err = -EIO;
    uint64_t back = 0;
    size_t got = 0;
    while (err == 0 && got < sizeof back) {
        ssize_t n = recv(fd, (char *)&back + got, sizeof back - got, 0);
        if (n <= 0)
            err = n == 0 ? -EPIPE : -errno;
        else
            got += (size_t)n;
    }
    if (err == 0 && back != id)
        err = -EBADMSG; /* someone else's id: a connection served twice or crossed */
    char c;
    if (err == 0 && recv(fd, &c, 1, 0) != 0)
        err = -EPROTO; /* the server must close after answering */
    close(fd);
    return err;
}

typedef struct client_arg {
    uint16_t port;
    int thread, per_thread;
    atomic_int *ok;
} client_arg;

static void *client_main(void *p) {
    client_arg *a = p;
    for (int j = 0; j < a->per_thread; j++) {
        uint64_t id = 0x1d00000000000000ull | ((uint64_t)a->thread << 20) | (uint64_t)j;
        if (client_echo_id(a->port, id) == 0)
            atomic_fetch_add(a->ok, 1);
    }
    return NULL;
}

int run_clients(uint16_t port, int threads, int per_thread) {
    pthread_t th[64];
    client_arg args[64];
    atomic_int ok = 0;
    assert_true(threads <= 64);
    for (int i = 0; i < threads; i++) {
        args[i] = (client_arg){.port = port, .thread = i, .per_thread = per_thread, .ok = &ok};
        assert_int_equal(pthread_create(&th[i], NULL, client_main, &args[i]), 0);
    }
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    return atomic_load(&ok);
}

/* ---- the id-echo host --------------------------------------------------------- */

#define MAX_CONNS 64
#define TOKEN_ACCEPT (1ull << 40)
#define TOKEN_ADOPT (1ull << 41)
#define TOKEN_LISTENER_CLOSE (1ull << 42)

typedef struct conn {
    tl_handle h;
    uint8_t buf[8];
    uint32_t got;
    bool used;
} conn;

typedef struct shared_run {
    const serve_config *cfg;
    atomic_int served_total;
    atomic_int stop;
    atomic_int err;
    tl_handoff *handoffs[16]; /* one per acceptor (SERVE_HANDOFF: one) */
} shared_run;

typedef struct host {
    shared_run *sh;
    tl_loop *loop;
    tl_handle listener;
    bool acceptor;       /* handoff: accepts and dispatches, serves nothing */
    tl_handoff *handoff; /* the acceptor's own */
    int dispatched;
    bool multishot;
    conn conns[MAX_CONNS];
    int live;
    bool armed, listener_closing;
    bool alive_at_end;
    tl_loop_stats stats;
    int served;
    pthread_t th;
} host;

static void host_fail(host *ho, int err) {
    int zero = 0;
    atomic_compare_exchange_strong(&ho->sh->err, &zero, err);
    atomic_store(&ho->sh->stop, 1);
}

static int conn_new(host *ho, tl_handle h) {
    for (int i = 0; i < MAX_CONNS; i++) {
        if (!ho->conns[i].used) {
            ho->conns[i] = (conn){.h = h, .used = true};
            ho->live++;
            int err = tl_read(ho->loop, h, ho->conns[i].buf, 8, (uint64_t)i, NULL);
            if (err < 0)
                host_fail(ho, err);
            return i;
        }
    }
    host_fail(ho, -ENOSPC);
    tl_close(ho->loop, h, 0);
    return -1;
}

static void conn_served(host *ho, int i) {
    ho->served++;
    int total = atomic_fetch_add(&ho->sh->served_total, 1) + 1;
    if (total >= ho->sh->cfg->connections)
        atomic_store(&ho->sh->stop, 1);
    (void)i;
}

static void host_completion(host *ho, const tl_completion *c) {
    tl_loop *loop = ho->loop;
    if (c->kind == TL_OP_ACCEPT) {
        if (c->flags & TL_CQE_FINAL)
            ho->armed = false;
        if (c->res == -ECANCELED)
            return;
        if (c->res < 0) {
            host_fail(ho, c->res); /* -EMFILE: a handle was leaked */
            return;
        }
        if (ho->acceptor) {
            int w = tl_handoff_dispatch(ho->handoff, loop, c->u.accepted, TOKEN_ADOPT);
            if (w < 0)
                host_fail(ho, w);
            else
                ho->dispatched++;
            return;
        }
        conn_new(ho, c->u.accepted);
        return;
    }
    if (c->kind == TL_OP_ADOPT) {
        if (c->res < 0)
            host_fail(ho, c->res);
        else
            conn_new(ho, c->u.accepted);
        return;
    }
    if (c->kind == TL_OP_CLOSE) {
        if (c->token == TOKEN_LISTENER_CLOSE)
            return;
        conn *cn = &ho->conns[c->token];
        cn->used = false;
        ho->live--;
        conn_served(ho, (int)c->token);
        return;
    }
    conn *cn = &ho->conns[c->token];
    if (c->kind == TL_OP_READ) {
        if (c->res <= 0) {
            tl_close(loop, cn->h, c->token);
            return;
        }
        cn->got += (uint32_t)c->res;
        int err = cn->got < 8 ? tl_read(loop, cn->h, cn->buf + cn->got, 8 - cn->got, c->token, NULL)
                              : tl_write(loop, cn->h, cn->buf, 8, c->token, NULL);
        if (err < 0)
            host_fail(ho, err);
        return;
    }
    if (c->kind == TL_OP_WRITE) {
        if (ho->sh->cfg->leak) { /* forget the handle: an orphan the ceiling must catch */
            cn->used = false;
            ho->live--;
            conn_served(ho, (int)c->token);
            return;
        }
        tl_close(loop, cn->h, c->token);
    }
}

static void host_arm(host *ho) {
    if (!ho->listener || ho->armed || ho->listener_closing || atomic_load(&ho->sh->stop))
        return;
    /* Room by the host's own count: the listener plus its live connections. */
    if (!ho->multishot && (uint32_t)ho->live + 1 >= ho->sh->cfg->max_handles)
        return;
    int err = tl_accept(ho->loop, ho->listener, ho->multishot ? TL_ACCEPT_MULTISHOT : 0,
                        TOKEN_ACCEPT, NULL);
    if (err < 0)
        host_fail(ho, err);
    else
        ho->armed = true;
}

static void *host_main(void *p) {
    host *ho = p;
    tl_completion cq[64];
    uint64_t stop_at = 0;
    for (;;) {
        if (atomic_load(&ho->sh->stop)) {
            if (!stop_at)
                stop_at = now_ms();
            if (ho->listener && !ho->listener_closing) {
                tl_close(ho->loop, ho->listener, TOKEN_LISTENER_CLOSE);
                ho->listener_closing = true;
            }
            /* A leaking host never empties: give up on it after a while. */
            if (!tl_loop_alive(ho->loop) || now_ms() - stop_at > 1500)
                break;
        }
        host_arm(ho);
        int n = tl_loop_turn(ho->loop, 10, cq, 64);
        if (n < 0) {
            host_fail(ho, n);
            continue;
        }
        for (int i = 0; i < n; i++)
            host_completion(ho, &cq[i]);
    }
    /* Judged here, on its own thread; freed by serve_run once every host has
     * stopped: an acceptor still turning may hand this loop one more
     * connection (a post into it), which a loop freed here would take after
     * its free (TSan saw it: multi_threaded_accept_by_handoff_group). */
    ho->alive_at_end = tl_loop_alive(ho->loop);
    tl_loop_get_stats(ho->loop, &ho->stats);
    return NULL;
}

void serve_run(const serve_config *cfg, serve_result *res) {
    memset(res, 0, sizeof *res);
    shared_run sh = {.cfg = cfg};
    int nacc = cfg->route == SERVE_HANDOFF         ? 1
               : cfg->route == SERVE_HANDOFF_GROUP ? cfg->acceptors
                                                   : 0;
    int nhosts = cfg->loops + nacc;
    host *hosts = calloc((size_t)nhosts, sizeof *hosts);
    tl_loop *loops[32];
    assert_non_null(hosts);
    assert_true(cfg->loops <= 16 && nacc <= 16);
    for (int i = 0; i < nhosts; i++) {
        hosts[i].sh = &sh;
        hosts[i].loop = loops[i] = test_loop(cfg->max_handles, 0, 0);
        hosts[i].multishot = cfg->route == SERVE_MULTISHOT;
    }
    struct sockaddr_in a = loopback_any_port();
    uint16_t port;
    if (cfg->route == SERVE_HANDOFF) {
        host *acc = &hosts[cfg->loops];
        acc->acceptor = true;
        tl_listen_options lo = {0};
        assert_int_equal(tl_listen(acc->loop, (struct sockaddr *)&a, sizeof a, &lo, &acc->listener),
                         0);
        port = handle_port(acc->loop, acc->listener);
        assert_int_equal(tl_handoff_new(&sh.handoffs[0], loops, cfg->loops, cfg->policy), 0);
        acc->handoff = sh.handoffs[0];
    } else if (cfg->route == SERVE_HANDOFF_GROUP) {
        tl_handle ls[16];
        assert_int_equal(tl_route_handoff_group(loops + cfg->loops, nacc, loops, cfg->loops,
                                                cfg->policy, (struct sockaddr *)&a, sizeof a, 0, ls,
                                                sh.handoffs),
                         0);
        for (int k = 0; k < nacc; k++) {
            host *acc = &hosts[cfg->loops + k];
            acc->acceptor = true;
            acc->listener = ls[k];
            acc->handoff = sh.handoffs[k];
        }
        port = handle_port(loops[cfg->loops], ls[0]);
    } else {
        tl_handle ls[16];
        assert_int_equal(
            tl_route_reuse_port(loops, cfg->loops, (struct sockaddr *)&a, sizeof a, 0, ls), 0);
        for (int i = 0; i < cfg->loops; i++)
            hosts[i].listener = ls[i];
        port = handle_port(loops[0], ls[0]);
    }
    for (int i = 0; i < nhosts; i++)
        assert_int_equal(pthread_create(&hosts[i].th, NULL, host_main, &hosts[i]), 0);

    int per = cfg->connections / cfg->client_threads;
    res->echoed = run_clients(port, cfg->client_threads, per);
    if (atomic_load(&sh.served_total) < cfg->connections) {
        /* Clients are done; give the hosts a moment to count the last closes. */
        uint64_t end = now_ms() + 3000;
        while (atomic_load(&sh.served_total) < cfg->connections && !atomic_load(&sh.stop) &&
               now_ms() < end)
            usleep(1000);
        atomic_store(&sh.stop, 1);
    }
    for (int i = 0; i < nhosts; i++)
        pthread_join(hosts[i].th, NULL);
    for (int i = 0; i < nhosts; i++) {
        tl_loop_free(hosts[i].loop); /* what a late handoff posted goes with it */
        hosts[i].loop = NULL;
    }
    res->err = atomic_load(&sh.err);
    for (int i = 0; i < cfg->loops; i++)
        res->served[i] = hosts[i].served;
    for (int k = 0; k < nacc; k++) {
        int first = 0;
        int cnt = cfg->route == SERVE_HANDOFF ? cfg->loops
                                              : tl_handoff_subset(cfg->loops, nacc, k, &first);
        for (int j = 0; j < cnt; j++)
            res->handed[first + j] = (int)tl_handoff_count(sh.handoffs[k], j);
        res->accepted[k] = hosts[cfg->loops + k].dispatched;
    }
    for (int i = 0; i < nhosts; i++) {
        res->alive_at_end |= hosts[i].alive_at_end;
        res->accept_pauses += hosts[i].stats.accept_pauses;
    }
    for (int k = 0; k < nacc; k++)
        tl_handoff_free(sh.handoffs[k]);
    free(hosts);
}
