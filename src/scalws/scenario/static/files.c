/* The static scenario's files: the per-loop open-file cache (a set-
 * associative table of descriptors, validators and types, re-checked after
 * its lifetime; errors cached too) and the helper thread that reads what is
 * not in the page cache, so that no loop waits on a disk. */
#include "static.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- the helper ------------------------------------------------------------ */

static void *helper_main(void *arg) {
    sws_static *st = arg;
    pthread_mutex_lock(&st->lock);
    for (;;) {
        while (!st->head && !st->stop)
            pthread_cond_wait(&st->cond, &st->lock);
        if (!st->head)
            break;
        job *j = st->head;
        st->head = j->next;
        if (!st->head)
            st->tail = &st->head;
        pthread_mutex_unlock(&st->lock);
        if (j->list) {
            j->res = sws_static_listing(j->fd, j->buf, j->symlinks, j->fallback, j->dotfiles,
                                        &j->html, &j->html_len);
        } else {
            j->res = pread(j->fd, j->buf, j->len, (off_t)j->off);
            if (j->res < 0)
                j->res = -errno;
        }
        tl_message m = {.value = 0, .ptr = j};
        while (tl_loop_post(j->w->loop, sws_token_of(st->inst, j->idx, SWS_T_FILE_READ), &m) < 0) {
            /* -ENOMEM: the loop waits for every job it handed out (finished
             * says so), so one is never dropped; try again shortly. */
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
        pthread_mutex_lock(&st->lock);
    }
    pthread_mutex_unlock(&st->lock);
    return NULL;
}

static int helper_start(sws_static *st) {
    if (!st->helper_on) {
        /* Not on the loop's CPU (a thread inherits its creator's pinning):
         * anywhere the process may run, as the control thread. */
        pthread_attr_t attr;
        cpu_set_t set;
        pthread_attr_init(&attr);
        if (sched_getaffinity(getpid(), sizeof(set), &set) == 0)
            pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
        int rc = pthread_create(&st->helper, &attr, helper_main, st);
        pthread_attr_destroy(&attr);
        if (rc != 0)
            return -EAGAIN;
        st->helper_on = true;
    }
    return 0;
}

static void enqueue(sws_static *st, job *j) {
    st->inflight++;
    pthread_mutex_lock(&st->lock);
    *st->tail = j;
    st->tail = &j->next;
    pthread_cond_signal(&st->cond);
    pthread_mutex_unlock(&st->lock);
}

int sf_submit(sws_worker *w, sws_static *st, sws_exchange *x, uint32_t len) {
    sfile *f = &st->files[sws_ex_id(x)];
    if (helper_start(st) < 0)
        return -EAGAIN;
    /* Allocated on the cold path only, where a disk read dwarfs it. */
    job *j = malloc(sizeof(*j) + len);
    if (!j)
        return -ENOMEM;
    *j = (job){.w = w,
               .idx = sws_ex_id(x),
               .x = x,
               .mark = sws_ex_mark_of(x),
               .fd = f->fd,
               .off = f->off,
               .len = len};
    f->job = true;
    SWS_ADD(w->ctr.file_cold_reads, 1);
    enqueue(st, j);
    return 0;
}

/* The helper reads the directory and the status of each entry: a directory
 * of a million names, or one on a cold disk, never holds the loop. It works
 * below a duplicate of the root's descriptor, which a reload cannot close
 * under it. */
int sf_submit_list(sws_worker *w, sws_static *st, sws_exchange *x, const char *rel, size_t len) {
    sfile *f = &st->files[sws_ex_id(x)];
    if (helper_start(st) < 0)
        return -EAGAIN;
    job *j = malloc(sizeof(*j) + len + 1);
    if (!j)
        return -ENOMEM;
    *j = (job){.w = w,
               .idx = sws_ex_id(x),
               .x = x,
               .mark = sws_ex_mark_of(x),
               .list = true,
               .head = sws_ex_request(x)->head,
               .dotfiles = st->cfg->dotfiles,
               .symlinks = st->symlinks,
               .fallback = st->fallback,
               .fd = fcntl(st->rootfd, F_DUPFD_CLOEXEC, 0),
               .len = (uint32_t)len};
    if (j->fd < 0) {
        int rc = -errno;
        free(j);
        return rc;
    }
    memcpy(j->buf, rel, len);
    j->buf[len] = '\0';
    /* On, with a job: `more` waits for the job (fill sends nothing). */
    *f = (sfile){.on = true, .job = true, .fd = -1};
    enqueue(st, j);
    return 0;
}

void sf_job_free(job *j) {
    close(j->fd);
    free(j->html);
    free(j);
}

void sf_body_done(sfile *f) {
    if (f->mem)
        free(f->mem);
    else
        close(f->fd);
    f->mem = NULL;
    f->fd = -1;
    f->on = false;
}

static void entry_drop(fentry *e) {
    if (e->fd >= 0)
        close(e->fd);
    e->fd = -1;
    e->used = false;
}

void sf_cache_clear(sws_static *st) {
    for (size_t i = 0; i < (size_t)st->nsets * CACHE_WAYS; i++)
        if (st->cache[i].used)
            entry_drop(&st->cache[i]);
}

/* ---- the open-file cache --------------------------------------------------- */

static uint64_t fnv(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

/* Opens rel into e (whose old contents are gone). */
static void entry_open(sws_worker *w, sws_static *st, fentry *e, const char *rel, size_t len,
                       uint64_t now) {
    e->used = true;
    e->checked = now;
    e->dir = false;
    e->fd = -1;
    int fd = sws_static_open(st->rootfd, rel, st->symlinks, st->fallback);
    if (fd < 0) {
        e->err = fd;
        return;
    }
    struct stat sb;
    if (fstat(fd, &sb) < 0) {
        e->err = -errno;
        close(fd);
        return;
    }
    e->err = 0;
    if (S_ISDIR(sb.st_mode)) {
        e->dir = true;
        close(fd);
        return;
    }
    if (!S_ISREG(sb.st_mode)) {
        e->err = -EACCES; /* a FIFO, a device: never read from the loop */
        close(fd);
        return;
    }
    e->fd = fd;
    e->size = (uint64_t)sb.st_size;
    e->mtime = sb.st_mtime;
    e->etag_len = (uint8_t)sws_static_etag(e->etag, e->mtime, e->size);
    sws_date_format(e->mtime, e->lastmod);
    e->type = sws_mime_lookup(st->mime, rel, len);
    if (!e->type)
        e->type = st->cfg->default_type;
}

/* The entry for rel: from the cache when it was checked within
 * open_file_cache_valid, else opened now. A path too long to cache uses
 * st->tmp, which the caller closes (release) after the answer. */
fentry *sf_lookup(sws_worker *w, sws_static *st, const char *rel, size_t len) {
    uint64_t now = tl_loop_now(w->loop);
    if (!st->cache || len >= CACHE_PATH) {
        SWS_ADD(w->ctr.file_cache_misses, 1);
        entry_open(w, st, &st->tmp, rel, len, now);
        return &st->tmp;
    }
    uint64_t h = fnv(rel, len);
    fentry *set = st->cache + (h % st->nsets) * CACHE_WAYS;
    fentry *victim = NULL;
    for (int k = 0; k < CACHE_WAYS; k++) {
        fentry *e = &set[k];
        if (e->used && e->hash == h && e->plen == len && memcmp(e->path, rel, len) == 0) {
            if (now - e->checked < st->cfg->cache_valid_ms) {
                SWS_ADD(w->ctr.file_cache_hits, 1);
                return e;
            }
            victim = e; /* stale: opened again, so a replaced file is seen */
            break;
        }
        if (!victim || !e->used || (victim->used && e->checked < victim->checked))
            victim = e;
    }
    SWS_ADD(w->ctr.file_cache_misses, 1);
    if (victim->used)
        entry_drop(victim);
    victim->hash = h;
    victim->plen = (uint16_t)len;
    memcpy(victim->path, rel, len);
    victim->path[len] = '\0';
    entry_open(w, st, victim, rel, len, now);
    return victim;
}

void sf_release(sws_static *st, fentry *e) {
    if (e == &st->tmp && e->fd >= 0) {
        close(e->fd);
        e->fd = -1;
    }
}
