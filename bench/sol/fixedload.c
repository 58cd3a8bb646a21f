/* fixedload: a small load client that sends exactly --requests requests and waits for
 * as many "HTTP/1.1 200" answers, over --connections connections, in one shape
 * (keepalive, close, pipeline: --depth requests per write). For profiling runs
 * (callgrind, strace) where the count, not the rate, matters. Bounded by --timeout. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct client {
    int fd;
    uint32_t waiting; /* answers owed to this connection */
    uint8_t match;    /* how much of "HTTP/1.1 200" the last read ended in */
} client;

static const char pat[] = "HTTP/1.1 200";
static struct sockaddr_in to;
static int ep;
static char req_ka[4096], req_cl[128];
static size_t req_ka_len, req_cl_len, one_len;
static long sent, answered, total;
static int depth = 1;
static bool close_shape;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int open_conn(client *c) {
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0)
        return -errno;
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(c->fd, (struct sockaddr *)&to, sizeof to) < 0)
        return -errno; /* blocking connect: loopback answers at once */
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    return epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) < 0 ? -errno : 0;
}

/* Sends the next request (or --depth of them) on c, if any are left to send. */
static int send_next(client *c) {
    if (sent >= total)
        return 0;
    const char *p = close_shape ? req_cl : req_ka;
    uint32_t n = close_shape ? 1 : (uint32_t)depth;
    if (sent + n > total)
        n = (uint32_t)(total - sent);
    size_t len = close_shape ? req_cl_len : n * one_len;
    if (write(c->fd, p, len) != (ssize_t)len) /* small; the socket buffer is empty */
        return -EIO;
    sent += n;
    c->waiting = n;
    return 0;
}

static uint32_t count(client *c, const char *p, size_t n) {
    uint32_t got = 0;
    uint8_t m = c->match;
    for (size_t i = 0; i < n; i++) {
        if (p[i] == pat[m]) {
            if (++m == sizeof pat - 1) {
                got++;
                m = 0;
            }
        } else {
            m = p[i] == pat[0] ? 1 : 0; /* 'H' appears only first in the pattern */
        }
    }
    c->match = m;
    return got;
}

static int usage(void) {
    fprintf(stderr,
            "usage: fixedload --port P --requests N [--connections C]\n"
            "                 [--shape keepalive|close|pipeline] [--depth D] [--timeout S]\n");
    return 2;
}

int main(int argc, char **argv) {
    long port = 0, conns = 10, timeout = 60;
    const char *shape = "keepalive";
    for (int i = 1; i < argc; i++) {
        char *end = NULL;
        long *dst = NULL;
        if (i + 1 >= argc)
            return usage();
        if (strcmp(argv[i], "--port") == 0)
            dst = &port;
        else if (strcmp(argv[i], "--requests") == 0)
            dst = &total;
        else if (strcmp(argv[i], "--connections") == 0)
            dst = &conns;
        else if (strcmp(argv[i], "--timeout") == 0)
            dst = &timeout;
        else if (strcmp(argv[i], "--depth") == 0) {
            depth = (int)strtol(argv[++i], &end, 10);
            if (*end || depth < 1 || depth > 64)
                return usage();
            continue;
        } else if (strcmp(argv[i], "--shape") == 0) {
            shape = argv[++i];
            continue;
        } else
            return usage();
        *dst = strtol(argv[++i], &end, 10);
        if (*end || *dst < 1)
            return usage();
    }
    if (port < 1 || port > 65535 || total < 1 || conns < 1 || conns > 10000 || timeout > 3600)
        return usage();
    if (strcmp(shape, "close") == 0)
        close_shape = true;
    else if (strcmp(shape, "pipeline") == 0) {
        if (depth == 1)
            depth = 16;
    } else if (strcmp(shape, "keepalive") == 0)
        depth = 1;
    else
        return usage();

    const char one[] = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    one_len = sizeof one - 1;
    for (int i = 0; i < depth; i++)
        memcpy(req_ka + (size_t)i * one_len, one, one_len);
    req_ka_len = (size_t)depth * one_len;
    req_cl_len = (size_t)snprintf(req_cl, sizeof req_cl,
                                  "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    (void)req_ka_len;
    to = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    ep = epoll_create1(EPOLL_CLOEXEC);
    client *cs = calloc((size_t)conns, sizeof *cs);
    if (ep < 0 || !cs)
        return 1;
    double t0 = now_s(), deadline = t0 + (double)timeout;
    for (long i = 0; i < conns && sent < total; i++) {
        int err = open_conn(&cs[i]);
        if (err < 0 || send_next(&cs[i]) < 0) {
            fprintf(stderr, "fixedload: connect: %s\n", strerror(err < 0 ? -err : EIO));
            return 1;
        }
    }
    char buf[65536];
    struct epoll_event evs[64];
    while (answered < total) {
        if (now_s() > deadline) {
            fprintf(stderr, "fixedload: timeout: %ld of %ld answered\n", answered, total);
            return 1;
        }
        int n = epoll_wait(ep, evs, 64, 1000);
        for (int k = 0; k < n; k++) {
            client *c = evs[k].data.ptr;
            ssize_t r = read(c->fd, buf, sizeof buf);
            if (r > 0) {
                uint32_t got = count(c, buf, (size_t)r);
                answered += got;
                c->waiting = got > c->waiting ? 0 : c->waiting - got;
                if (c->waiting == 0 && !close_shape && send_next(c) < 0)
                    return 1;
                continue;
            }
            if (r < 0 && errno == EINTR)
                continue;
            close(c->fd); /* EOF: the close shape's end, or the server gave up */
            if (c->waiting > 0) {
                fprintf(stderr, "fixedload: connection closed with %u answers owed\n", c->waiting);
                return 1;
            }
            c->match = 0;
            if (sent < total && (open_conn(c) < 0 || send_next(c) < 0))
                return 1;
        }
    }
    double el = now_s() - t0;
    printf("{\"shape\":\"%s\",\"requests\":%ld,\"connections\":%ld,\"depth\":%d,"
           "\"elapsed_s\":%.3f}\n",
           shape, total, conns, close_shape ? 1 : depth, el);
    for (long i = 0; i < conns; i++)
        if (cs[i].fd > 0)
            close(cs[i].fd);
    free(cs); /* LeakSanitizer runs it in the sanitizer builds */
    close(ep);
    return 0;
}
