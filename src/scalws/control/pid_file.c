/* [server] pid_file: the pid of the process that serves, for logrotate and
 * scripts. Written whole or not at all (temp file + rename) once the loops
 * serve, so a SIGUSR2's new process replaces the old one's pid as it takes
 * over; removed at exit only while it still names this process, so the old
 * process leaving after a SIGUSR2 leaves its successor's file alone. */
#include "sws.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int sws_pid_file_write(const char *path) {
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid()) >= sizeof(tmp))
        return -ENAMETOOLONG;
    FILE *f = fopen(tmp, "we");
    if (!f)
        return -errno;
    fprintf(f, "%ld\n", (long)getpid());
    return sws_file_commit(f, tmp, path);
}

void sws_pid_file_remove(const char *path) {
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    long pid = 0;
    bool ours = fscanf(f, "%ld", &pid) == 1 && pid == (long)getpid();
    fclose(f);
    /* A successor's (SIGUSR2) or another server's: not ours to remove. */
    if (ours)
        unlink(path);
}
