/* sol_setup.h: the start-up of sol and solproxy. */
#define _GNU_SOURCE
#include "sol_setup.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int sol_parse_addr(const char *s, struct sockaddr_in *sa) {
    char host[64];
    const char *colon = strrchr(s, ':');
    if (!colon || (size_t)(colon - s) >= sizeof host)
        return -1;
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = 0;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    *sa = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    return *end || port < 0 || port > 65535 || inet_pton(AF_INET, host, &sa->sin_addr) != 1 ? -1
                                                                                            : 0;
}

int sol_buf_ring_setup(struct io_uring *ring, unsigned nbuf, unsigned bufsz, unsigned short bgid,
                       struct io_uring_buf_ring **br, char **bufs) {
    size_t bytes = nbuf * sizeof(struct io_uring_buf);
    *br = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
    *bufs = malloc((size_t)nbuf * bufsz);
    if (*br == MAP_FAILED || !*bufs)
        return -ENOMEM;
    struct io_uring_buf_reg reg = {
        .ring_addr = (uint64_t)(uintptr_t)*br, .ring_entries = nbuf, .bgid = bgid};
    int err = io_uring_register_buf_ring(ring, &reg, 0);
    if (err < 0)
        return err;
    io_uring_buf_ring_init(*br);
    int mask = io_uring_buf_ring_mask(nbuf);
    for (unsigned i = 0; i < nbuf; i++)
        io_uring_buf_ring_add(*br, *bufs + (size_t)i * bufsz, bufsz, (unsigned short)i, mask,
                              (int)i);
    io_uring_buf_ring_advance(*br, (int)nbuf);
    return 0;
}

int sol_announce(const char *prog, const char *ready, unsigned port, const char *mode) {
    fprintf(stderr, "%s: listening on 127.0.0.1:%u, ring %s\n", prog, port, mode);
    if (!ready) {
        printf("listen 127.0.0.1:%u\n", port);
        fflush(stdout);
        return 0;
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", ready);
    FILE *f = fopen(tmp, "w");
    if (!f ||
        fprintf(f, "listen 127.0.0.1:%u\nring %s\npid %ld\n", port, mode, (long)getpid()) < 0 ||
        fclose(f) != 0 || rename(tmp, ready) != 0) {
        fprintf(stderr, "%s: ready file: %s\n", prog, strerror(errno));
        return -1;
    }
    return 0;
}
