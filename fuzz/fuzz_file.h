/* For targets whose code under test reads a file by its path (the config
 * loader, the htpasswd reader): the input written to a memfd, so no file is
 * made on disk and each input costs one write. */
#ifndef SWS_FUZZ_FILE_H
#define SWS_FUZZ_FILE_H

/* _GNU_SOURCE (memfd_create) comes with sws_core. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* A path whose file holds exactly data: the same memfd for every input of
 * the process, named name. */
static inline const char *fuzz_file(const char *name, const uint8_t *data, size_t size) {
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create(name, 0);
        if (fd < 0)
            abort();
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) < 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
        abort();
    return path;
}

#endif
