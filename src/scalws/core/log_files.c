/* The access log files of a configuration (log_files.h). Opened with
 * O_APPEND: every write(2) lands whole at the file's end, whichever loop
 * (or process, across a SIGUSR2 restart) makes it. */
#include "log_files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int find(const sws_log_files *s, const char *path) {
    for (int i = 0; s && i < s->nfiles; i++)
        if (strcmp(s->files[i].path, path) == 0)
            return i;
    return -1;
}

int sws_log_files_open(sws_routes *t, const sws_log_files *prev, int refs, sws_log_files **out,
                       char *why, size_t len) {
    *out = NULL;
    int n = 0;
    for (int i = 0; i < t->n; i++)
        n += t->r[i].log_path[0] != '\0';
    if (n == 0)
        return 0;
    sws_log_files *s = calloc(1, sizeof(*s) + (size_t)n * sizeof(sws_log_file));
    int *route_file = calloc((size_t)t->n, sizeof(int));
    if (!s || !route_file) {
        free(s);
        free(route_file);
        snprintf(why, len, "out of memory");
        return -ENOMEM;
    }
    s->route_file = route_file;
    int rc = 0;
    for (int i = 0; i < t->n; i++) {
        const char *path = t->r[i].log_path;
        int k = path[0] ? find(s, path) : -1;
        if (path[0] && k < 0) {
            k = s->nfiles;
            sws_log_file *f = &s->files[k];
            snprintf(f->path, sizeof(f->path), "%s", path);
            f->fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0644);
            int p = f->fd < 0 ? find(prev, path) : -1;
            if (f->fd < 0 && p >= 0) {
                fprintf(stderr, "scalwsd: access log %s: %s; writing to the one open before\n",
                        path, strerror(errno));
                f->fd = fcntl(prev->files[p].fd, F_DUPFD_CLOEXEC, 3);
            }
            if (f->fd < 0) {
                rc = -errno;
                snprintf(why, len, "%s: %s", path, strerror(errno));
                break;
            }
            s->nfiles++;
        }
        route_file[i] = k;
    }
    if (rc < 0) {
        atomic_init(&s->refs, 1);
        sws_log_files_unref(s);
        return rc;
    }
    sws_routes_ref(t);
    s->routes = t;
    atomic_init(&s->refs, refs);
    *out = s;
    return 0;
}

void sws_log_files_unref(sws_log_files *s) {
    if (!s || atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1)
        return;
    for (int i = 0; i < s->nfiles; i++)
        close(s->files[i].fd);
    sws_routes_unref(s->routes);
    free(s->route_file);
    free(s);
}

int sws_log_files_fd(const sws_log_files *s, const sws_route *r) {
    const sws_routes *t = s->routes;
    int k;
    if (r >= t->r && r < t->r + t->n)
        k = s->route_file[r - t->r];
    else
        k = r->log_path[0] ? find(s, r->log_path) : -1;
    return k < 0 ? -1 : s->files[k].fd;
}
