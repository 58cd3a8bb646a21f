/* What turnloop-bench measures with: the monotonic clock always, and, unless
 * --portable, a hardware instruction counter from perf_event_open that every
 * server thread created after it inherits. When the counter cannot be had the
 * reason is kept so the JSON line can say what it fell back from. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

uint64_t bench_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Includes threads that have already exited, which is what the server side's
 * CPU time needs (the library's acceptor threads are gone by then). */
uint64_t bench_process_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int open_counter(int exclude_kernel) {
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.size = sizeof(attr);
    attr.type = PERF_TYPE_HARDWARE;
    attr.config = PERF_COUNT_HW_INSTRUCTIONS;
    attr.disabled = 1;
    attr.inherit = 1; /* counts the threads started after it, summed when they exit */
    attr.exclude_kernel = (unsigned)exclude_kernel;
    attr.exclude_hv = 1;
    long fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    return fd < 0 ? -errno : (int)fd;
}

static void set_fallback(bench_counter *c, int err) {
    const char *name = strerrorname_np(-err);
    snprintf(c->fallback, sizeof(c->fallback), "perf_event_open: %s", name ? name : "error");
}

void bench_counter_open(bench_counter *c) {
    c->fd = -1;
    c->scope = NULL;
    c->fallback[0] = 0;
    int fd = open_counter(0);
    c->scope = "user+kernel";
    if (fd == -EACCES || fd == -EPERM) {
        /* perf_event_paranoid >= 2 still allows counting our own user space. */
        fd = open_counter(1);
        c->scope = "user";
    }
    if (fd < 0) {
        set_fallback(c, fd);
        c->scope = NULL;
        return;
    }
    c->fd = fd;
}

void bench_counter_start(bench_counter *c) {
    if (c->fd < 0)
        return;
    if (ioctl(c->fd, PERF_EVENT_IOC_RESET, 0) < 0 || ioctl(c->fd, PERF_EVENT_IOC_ENABLE, 0) < 0) {
        set_fallback(c, -errno);
        bench_counter_close(c);
    }
}

int bench_counter_read(bench_counter *c, uint64_t *instructions) {
    if (c->fd < 0)
        return -ENOENT;
    ioctl(c->fd, PERF_EVENT_IOC_DISABLE, 0);
    uint64_t v = 0;
    ssize_t n = read(c->fd, &v, sizeof(v));
    if (n != (ssize_t)sizeof(v)) {
        set_fallback(c, n < 0 ? -errno : -EIO);
        bench_counter_close(c);
        return -EIO;
    }
    if (v == 0) {
        /* A counter that opens but never counts (some virtual machines) is
         * no measure at all. */
        snprintf(c->fallback, sizeof(c->fallback), "perf_event_open: counter read 0");
        bench_counter_close(c);
        return -ENODATA;
    }
    *instructions = v;
    return 0;
}

void bench_counter_close(bench_counter *c) {
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}
