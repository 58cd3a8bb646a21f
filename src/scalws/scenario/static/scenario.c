/* The static scenario: a complete request in, an answer from a file below the
 * root out. Bodies go through the connection's one output buffer, read with
 * preadv2(RWF_NOWAIT) so that the loop never waits on a disk: a read the page
 * cache cannot answer goes to this loop's helper thread, which posts it back. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "access_log.h"
#include "conn.h"
#include "route.h"
#include "scenario.h"
#include "sws.h"
#include "sws_static.h"

/* The connection's output buffer (four times resp_max, serve.c): what a slow
 * reader of a large file holds. */
#define OUT_CAP 65536

/* Paths longer than this are opened every time, not cached. */
#define CACHE_PATH 200
#define CACHE_WAYS 4

typedef struct fentry {
    bool used;
    bool dir;
    uint16_t plen;
    int err; /* 0, or the negative errno the open gave (cached too, as nginx's
              * open_file_cache_errors: a missing .gz sibling costs no open) */
    int fd;  /* a regular file's, else -1 */
    uint64_t hash;
    uint64_t checked; /* loop ms of the open */
    uint64_t size;
    time_t mtime;
    const char *type; /* into the type map, or the default */
    uint8_t etag_len;
    char etag[40];
    char lastmod[32];
    char path[CACHE_PATH];
} fentry;

/* The file a connection is sending, by slot. */
typedef struct sfile {
    bool on;  /* a body is being sent from fd */
    bool job; /* the helper is reading it; the job owns fd until it posts */
    int fd;
    uint64_t off, end;
} sfile;

typedef struct job {
    struct job *next;
    sws_worker *w;
    uint32_t idx;
    tl_handle h;
    uint64_t served;
    int fd;
    uint64_t off;
    uint32_t len;
    ssize_t res;
    char buf[];
} job;

typedef struct sws_static {
    sfile *files;      /* one per connection slot */
    uint32_t inflight; /* jobs not yet posted back: the loop is not finished */
    int rootfd;
    int next_rootfd; /* reload_prepare's, until reload_commit */
    sws_mime *next_mime;
    sws_symlinks symlinks;
    bool fallback; /* SWS_STATIC_OPEN_FALLBACK=1: the walk even where openat2 exists */
    bool sendfile; /* page-cache-resident parts go by sendfile (SWS_STATIC_SENDFILE=0: never) */
    long page;     /* the page size, for cachestat's count */
    const sws_static_config *cfg;
    uint32_t inst; /* its scenario instance: the helper's posts name it (token.h) */
    sws_mime *mime;
    /* Tables replaced by reloads, freed with the loop: a reload is rare and a
     * table small, and nothing else may still point into one. */
    sws_mime *retired[16];
    int nretired;
    fentry *cache; /* cache_entries slots, CACHE_WAYS per set */
    uint32_t nsets;
    fentry tmp; /* for a path not cached */
    /* The helper for cold reads, started at the first. */
    pthread_t helper;
    bool helper_on;
    bool stop;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    job *head, **tail;
} sws_static;

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
        j->res = pread(j->fd, j->buf, j->len, (off_t)j->off);
        if (j->res < 0)
            j->res = -errno;
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

static int submit(sws_worker *w, sws_static *st, sws_conn *c, uint32_t len) {
    sfile *f = &st->files[c->index];
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
    /* Allocated on the cold path only, where a disk read dwarfs it. */
    job *j = malloc(sizeof(*j) + len);
    if (!j)
        return -ENOMEM;
    *j = (job){.w = w,
               .idx = c->index,
               .h = c->h,
               .served = c->served,
               .fd = f->fd,
               .off = f->off,
               .len = len};
    f->job = true;
    st->inflight++;
    SWS_ADD(w->ctr.file_cold_reads, 1);
    pthread_mutex_lock(&st->lock);
    *st->tail = j;
    st->tail = &j->next;
    pthread_cond_signal(&st->cond);
    pthread_mutex_unlock(&st->lock);
    return 0;
}

/* ---- set-up ---------------------------------------------------------------- */

static int open_root(const sws_static_config *cfg) {
    int fd = open(cfg->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

static int static_init(sws_worker *w, sws_scenario *sc) {
    const sws_scenario_cfg *cfg = sc->cfg; /* its route's [static] keys */
    sws_static *st = calloc(1, sizeof(*st));
    if (!st)
        return -ENOMEM;
    sc->state = st;
    st->inst = sc->id;
    st->rootfd = -1;
    st->next_rootfd = -1;
    st->tmp.fd = -1;
    st->tail = &st->head;
    pthread_mutex_init(&st->lock, NULL);
    pthread_cond_init(&st->cond, NULL);
    /* calloc: the pages of slots never used are never touched. */
    st->files = calloc(w->nslots, sizeof(*st->files));
    if (!st->files)
        return -ENOMEM;
    const char *fb = getenv("SWS_STATIC_OPEN_FALLBACK");
    st->fallback = fb && strcmp(fb, "1") == 0;
    const char *sfv = getenv("SWS_STATIC_SENDFILE");
    st->sendfile = !(sfv && strcmp(sfv, "0") == 0);
    st->page = sysconf(_SC_PAGESIZE);
    if (st->page <= 0)
        st->page = 4096;
    int rc = open_root(&cfg->stat);
    if (rc < 0) {
        fprintf(stderr, "scalwsd: [static] root %s: %s\n", cfg->stat.root, strerror(-rc));
        return rc;
    }
    st->rootfd = rc;
    st->mime = sws_mime_load(cfg->stat.mime_types, &rc);
    if (!st->mime) {
        fprintf(stderr, "scalwsd: [static] mime_types %s: %s\n", cfg->stat.mime_types,
                strerror(-rc));
        return rc;
    }
    st->cfg = &cfg->stat;
    st->symlinks = (sws_symlinks)cfg->stat.follow_symlinks;
    uint32_t n = cfg->stat.cache_entries;
    if (n) {
        st->nsets = (n + CACHE_WAYS - 1) / CACHE_WAYS;
        st->cache = calloc((size_t)st->nsets * CACHE_WAYS, sizeof(fentry));
        if (!st->cache)
            return -ENOMEM;
    }
    /* serve.c sizes the output buffer at four times resp_max: OUT_CAP. */
    w->resp_max = OUT_CAP / 4;
    w->lend_sf = true;
    return 0;
}

static void entry_drop(fentry *e) {
    if (e->fd >= 0)
        close(e->fd);
    e->fd = -1;
    e->used = false;
}

static void cache_clear(sws_static *st) {
    for (size_t i = 0; i < (size_t)st->nsets * CACHE_WAYS; i++)
        if (st->cache[i].used)
            entry_drop(&st->cache[i]);
}

static int static_reload_prepare(sws_worker *w, sws_scenario *sc, const sws_config *n) {
    (void)n;
    const sws_scenario_cfg *next = sc->next_cfg; /* its route's, in the new config */
    sws_static *st = sc->state;
    /* What an abandoned reload prepared (another instance refused it). */
    if (st->next_rootfd >= 0)
        close(st->next_rootfd);
    st->next_rootfd = -1;
    sws_mime_free(st->next_mime);
    st->next_mime = NULL;
    int rc = open_root(&next->stat);
    if (rc < 0) {
        fprintf(stderr, "scalwsd: loop %d: [static] root %s: %s; keeping the old configuration\n",
                w->index, next->stat.root, strerror(-rc));
        return rc;
    }
    int err;
    sws_mime *m = sws_mime_load(next->stat.mime_types, &err);
    if (!m) {
        fprintf(stderr,
                "scalwsd: loop %d: [static] mime_types %s: %s; keeping the old configuration\n",
                w->index, next->stat.mime_types, strerror(-err));
        close(rc);
        return err;
    }
    st->next_rootfd = rc;
    st->next_mime = m;
    return 0;
}

static void static_reload_commit(sws_worker *w, sws_scenario *sc) {
    sws_conn_reload_commit(w, sc); /* the access log's fields, as respond */
    sws_static *st = sc->state;
    if (st->next_rootfd < 0)
        return;
    close(st->rootfd);
    st->rootfd = st->next_rootfd;
    st->next_rootfd = -1;
    if (st->nretired < (int)(sizeof(st->retired) / sizeof(st->retired[0])))
        st->retired[st->nretired++] = st->mime;
    else
        sws_mime_free(st->mime); /* the entries that point into it are cleared below */
    st->mime = st->next_mime;
    st->next_mime = NULL;
    st->cfg = &sc->cfg->stat;
    st->symlinks = (sws_symlinks)st->cfg->follow_symlinks;
    /* Every cached type and descriptor belongs to the old root and map. The
     * size of the cache stays the start's (a resize would move entries). */
    if (st->cache)
        cache_clear(st);
    w->resp_max = OUT_CAP / 4;
}

static void static_free(sws_worker *w, sws_scenario *sc) {
    sws_static *st = sc->state;
    if (!st)
        return;
    if (st->helper_on) {
        pthread_mutex_lock(&st->lock);
        st->stop = true;
        pthread_cond_signal(&st->cond);
        pthread_mutex_unlock(&st->lock);
        pthread_join(st->helper, NULL);
    }
    while (st->head) {
        job *j = st->head;
        st->head = j->next;
        close(j->fd);
        free(j);
    }
    if (st->cache) {
        cache_clear(st);
        free(st->cache);
    }
    if (st->files) {
        for (uint32_t i = 0; i < w->nslots; i++)
            if (st->files[i].on && !st->files[i].job)
                close(st->files[i].fd);
        free(st->files);
    }
    if (st->rootfd >= 0)
        close(st->rootfd);
    if (st->next_rootfd >= 0)
        close(st->next_rootfd);
    sws_mime_free(st->next_mime);
    sws_mime_free(st->mime);
    for (int i = 0; i < st->nretired; i++)
        sws_mime_free(st->retired[i]);
    pthread_mutex_destroy(&st->lock);
    pthread_cond_destroy(&st->cond);
    free(st);
    sc->state = NULL;
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
static fentry *lookup(sws_worker *w, sws_static *st, const char *rel, size_t len) {
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

static void release(sws_static *st, fentry *e) {
    if (e == &st->tmp && e->fd >= 0) {
        close(e->fd);
        e->fd = -1;
    }
}

/* ---- answers --------------------------------------------------------------- */

typedef struct out {
    char *p;
    size_t n, cap;
    bool full;
} out;

static void put(out *o, const char *s, size_t n) {
    if (n == 0)
        return; /* s may be NULL (no extra fields) */
    if (o->n + n > o->cap) {
        o->full = true;
        return;
    }
    memcpy(o->p + o->n, s, n);
    o->n += n;
}
#define PUTS(o, lit) put(o, lit, sizeof(lit) - 1)

static void put_str(out *o, const char *s) {
    put(o, s, strlen(s));
}

static void put_u64(out *o, uint64_t v) {
    char b[24];
    int i = sizeof(b);
    do {
        b[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    put(o, b + i, sizeof(b) - (size_t)i);
}

/* Status line and the fields every answer has. */
static void head_start(sws_worker *w, out *o, int status) {
    PUTS(o, "HTTP/1.1 ");
    put_u64(o, (uint64_t)status);
    PUTS(o, " ");
    put_str(o, sws_http_reason(status));
    PUTS(o, "\r\nServer: " SWS_HTTP_SERVER "\r\nDate: ");
    put_str(o, w->date.str);
    PUTS(o, "\r\n");
}

static void head_end(out *o, bool ka) {
    if (!ka)
        PUTS(o, "Connection: close\r\n");
    PUTS(o, "\r\n");
}

typedef struct answer_ctx {
    sws_worker *w;
    sws_conn *c;
    bool ka;
    bool head; /* HEAD: no body */
} answer_ctx;

static void finish(answer_ctx *a, out *o, int status, uint64_t body) {
    sws_conn *c = a->c;
    sws_worker *w = a->w;
    c->olen = (uint32_t)o->n;
    if (status == 400)
        SWS_ADD(w->ctr.errors[SWS_ST_400], 1);
    else if (status == 414)
        SWS_ADD(w->ctr.errors[SWS_ST_414], 1);
    if (w->access_log)
        sws_conn_log(w, c, status, a->head ? 0 : body);
}

/* An answer with a short text body naming the status (as the error pages of
 * other scenarios), extra fields before it. */
static void answer_short(answer_ctx *a, out *o, int status, const char *extra, size_t extra_len) {
    head_start(a->w, o, status);
    put(o, extra, extra_len);
    char body[64];
    int bl = snprintf(body, sizeof(body), "%d %s\n", status, sws_http_reason(status));
    PUTS(o, "Content-Type: text/plain\r\nContent-Length: ");
    put_u64(o, (uint64_t)bl);
    PUTS(o, "\r\n");
    head_end(o, a->ka);
    if (!a->head)
        put(o, body, (size_t)bl);
    finish(a, o, status, (uint64_t)bl);
}

static int status_of(int err) {
    switch (err) {
    case -ENOENT:
    case -ENOTDIR:
    case -ENAMETOOLONG:
        return 404;
    case -EACCES:
    case -EPERM:
    case -EXDEV: /* a link out of the root, or to another owner */
    case -ELOOP:
        return 403;
    default:
        return 500;
    }
}

static const char *sf(const sws_http_request *r, int k, size_t *len) {
    *len = r->sf_len[k];
    if (*len == 0 || *len > SWS_HTTP_SF_VALUE_MAX)
        return NULL;
    return r->sf_fields + k * SWS_HTTP_SF_VALUE_MAX;
}

/* Reads what fits of the file into c->out. Returns SWS_ANSWER_DONE once the
 * body is complete, SWS_ANSWER_PENDING while more follows (or the helper was
 * given a cold read), or a negative errno that closes the connection. */
#ifndef SYS_cachestat
#define SYS_cachestat 451 /* Linux 6.5; Debian 12's headers predate it */
#endif

/* Whether every page of [off, off + len) is in the page cache (cachestat,
 * Linux 6.5), so that sendfile will not wait on the disk. No cachestat: never
 * (and st->sendfile goes off). */
static bool resident(sws_static *st, int fd, uint64_t off, uint64_t len) {
    struct {
        uint64_t off, len;
    } range = {off, len};
    struct {
        uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
    } cs;
    if (syscall(SYS_cachestat, fd, &range, &cs, 0) < 0) {
        if (errno == ENOSYS || errno == EPERM)
            st->sendfile = false;
        return false;
    }
    uint64_t pg = (uint64_t)st->page;
    uint64_t pages = (off + len + pg - 1) / pg - off / pg;
    return cs.nr_cache >= pages;
}

/* Up to this much per sendfile, so that one connection's large file does not
 * hold the loop for long (the socket buffer usually takes less anyway). */
#define SENDFILE_MAX (1u << 20)

static int fill(sws_worker *w, sws_static *st, sws_conn *c) {
    sfile *f = &st->files[c->index];
    /* Never on a tls connection: sendfile would put the file's plaintext on
     * the wire beside the engine's records (kTLS is not used), so over TLS
     * every byte is copied into c->out, which the connection seals. */
    while (f->on && !f->job && c->olen == 0 && st->sendfile && !c->tls) {
        /* Zero copy while the socket takes bytes and the pages are resident:
         * the loop never waits in sendfile, on the socket (non-blocking) or
         * on the disk (cachestat said the pages are there). */
        uint64_t want = f->end - f->off;
        if (want > SENDFILE_MAX)
            want = SENDFILE_MAX;
        if (!resident(st, f->fd, f->off, want))
            break;
        int sock = tl_handle_fd(w->loop, c->h);
        off_t o = (off_t)f->off;
        ssize_t n = sock < 0 ? -1 : sendfile(sock, f->fd, &o, (size_t)want);
        if (n < 0 && errno == EAGAIN)
            break; /* the socket is full: a copied part's write waits for room */
        if (n <= 0)
            return n < 0 ? -errno : -EIO;
        f->off += (uint64_t)n;
        SWS_ADD(w->ctr.bytes_out, (uint64_t)n);
        if (f->off == f->end) {
            close(f->fd);
            f->on = false;
            return SWS_ANSWER_DONE;
        }
    }
    while (f->on && !f->job && c->olen < w->out_cap) {
        uint64_t want = f->end - f->off;
        if (want > w->out_cap - c->olen)
            want = w->out_cap - c->olen;
        struct iovec v = {c->out + c->olen, (size_t)want};
        ssize_t n = preadv2(f->fd, &v, 1, (off_t)f->off, RWF_NOWAIT);
        if (n < 0 && errno == EAGAIN) {
            /* Not in the page cache. With bytes queued, write those first; the
             * read is tried again when they are gone (it may be warm by then). */
            if (c->olen > 0)
                return SWS_ANSWER_PENDING;
            int rc = submit(w, st, c, (uint32_t)want);
            return rc < 0 ? rc : SWS_ANSWER_PENDING;
        }
        if (n <= 0) {
            /* An error, or the file shrank under us: the length announced
             * cannot be kept, and only a close tells the client so. */
            return n < 0 ? -errno : -EIO;
        }
        c->olen += (uint32_t)n;
        f->off += (uint64_t)n;
        if (f->off == f->end) {
            close(f->fd);
            f->on = false;
        }
    }
    return f->on ? SWS_ANSWER_PENDING : SWS_ANSWER_DONE;
}

/* Starts the body after the head in c->out. */
static int body_start(answer_ctx *a, sws_static *st, fentry *e, uint64_t first, uint64_t len) {
    sws_conn *c = a->c;
    sws_worker *w = a->w;
    if (a->head || len == 0)
        return SWS_ANSWER_DONE;
    uint32_t room = w->out_cap - c->olen;
    if (len <= room && (!st->sendfile || len <= 16384)) {
        /* The common small file: one read from the page cache, one write. */
        struct iovec v = {c->out + c->olen, (size_t)len};
        ssize_t n = preadv2(e->fd, &v, 1, (off_t)first, RWF_NOWAIT);
        if (n == (ssize_t)len) {
            c->olen += (uint32_t)n;
            return SWS_ANSWER_DONE;
        }
        if (n > 0) {
            c->olen += (uint32_t)n;
            first += (uint64_t)n;
            len -= (uint64_t)n;
        }
    }
    int fd = fcntl(e->fd, F_DUPFD_CLOEXEC, 0); /* the cache may drop e->fd meanwhile */
    if (fd < 0)
        return -errno;
    st->files[c->index] = (sfile){.on = true, .fd = fd, .off = first, .end = first + len};
    /* With sendfile the head goes alone and more() sends the body after it. */
    return st->sendfile ? SWS_ANSWER_PENDING : fill(w, st, c);
}

static void static_more(sws_worker *w, sws_scenario *sc, sws_conn *c) {
    int rc = fill(w, sc->state, c);
    if (rc < 0)
        sws_conn_close(w, c);
    else if (rc == SWS_ANSWER_DONE)
        sws_conn_answer_end(w, c);
}

/* A cold read the helper did, on the loop again. */
static void on_file_read(sws_worker *w, sws_static *st, const tl_completion *e) {
    job *j = e->u.msg.ptr;
    st->inflight--;
    uint32_t i = sws_token_index(e->token);
    sws_conn *c = i < w->nslots ? &w->slots[i] : NULL;
    sfile *f = i < w->nslots ? &st->files[i] : NULL;
    if (!c || sws_phase_gone(c->phase) || !f->job || c->h != j->h || c->served != j->served) {
        /* The connection went away meanwhile (conn_end left fd to the job), or
         * its slot serves another one now, whose state is not this job's. */
        close(j->fd);
        free(j);
        return;
    }
    f->job = false;
    if (j->res <= 0 || c->olen != 0 || !c->out) {
        close(j->fd); /* the job's; f->fd is the same descriptor */
        f->on = false;
        free(j);
        sws_conn_close(w, c);
        return;
    }
    /* The helper read into its own buffer; c->out is empty (the read was
     * handed over only then, and nothing is appended while it runs). */
    uint32_t n = (uint32_t)j->res;
    memcpy(c->out, j->buf, n);
    c->olen = n;
    f->off += n;
    free(j);
    if (f->off == f->end) {
        close(f->fd);
        f->on = false;
        sws_conn_answer_end(w, c);
    }
    sws_conn_more(w, c);
}

static void static_dispatch(sws_worker *w, sws_scenario *sc, const tl_completion *e) {
    if (sws_token_tag(e->token) == SWS_T_FILE_READ)
        on_file_read(w, sc->state, e);
    else
        sws_conn_dispatch(w, sc, e);
}

static void static_conn_end(sws_worker *w, sws_scenario *sc, sws_conn *c) {
    (void)w;
    sws_static *st = sc->state;
    sfile *f = &st->files[c->index];
    /* With a job out, its post closes the descriptor (on_file_read), and the
     * slot is free for the next connection at once. */
    if (f->on && !f->job)
        close(f->fd);
    f->on = f->job = false;
}

static bool static_finished(const sws_worker *w, const sws_scenario *sc) {
    const sws_static *st = sc->state;
    return sws_conn_finished(w, sc) && st->inflight == 0;
}

static void static_metrics(const sws_server *s, FILE *f) {
    static const struct {
        const char *name, *help;
        size_t off;
    } m[] = {
        {"scalwsd_file_cache_hits_total", "Static lookups answered by the open-file cache.",
         offsetof(sws_counters, file_cache_hits)},
        {"scalwsd_file_cache_misses_total",
         "Static lookups that opened the file (absent, expired or uncacheable).",
         offsetof(sws_counters, file_cache_misses)},
        {"scalwsd_file_cold_reads_total",
         "Static file reads not in the page cache, done by the loop's helper thread.",
         offsetof(sws_counters, file_cold_reads)},
    };
    for (size_t k = 0; k < sizeof(m) / sizeof(m[0]); k++) {
        fprintf(f, "# HELP %s %s\n# TYPE %s counter\n", m[k].name, m[k].help, m[k].name);
        for (int i = 0; i < s->nloops; i++)
            fprintf(f, "%s{loop=\"%d\"} %" PRIu64 "\n", m[k].name, i,
                    atomic_load_explicit((sws_ctr *)((char *)&s->workers[i].ctr + m[k].off),
                                         memory_order_relaxed));
    }
}

static int static_answer(sws_worker *w, sws_scenario *sc, sws_conn *c, bool keep_alive) {
    sws_static *st = sc->state;
    const sws_http_request *r = &c->parser->req;
    answer_ctx a = {.w = w, .c = c, .ka = keep_alive, .head = r->head};
    int rc = SWS_ANSWER_DONE;
    /* resp_max (OUT_CAP / 4) bytes are free: far more than any head. */
    out o = {.p = c->out, .n = c->olen, .cap = w->out_cap};
    if (!r->sf_fields) {
        a.ka = false; /* the slot's field storage could not be allocated */
        answer_short(&a, &o, 500, NULL, 0);
        goto done;
    }
    if (r->method != HTTP_GET && r->method != HTTP_HEAD) {
        answer_short(&a, &o, 405, "Allow: GET, HEAD\r\n", 18);
        goto done;
    }
    if (r->sf_path_len > SWS_HTTP_SF_PATH_MAX) {
        a.ka = false;
        answer_short(&a, &o, 414, NULL, 0);
        goto done;
    }
    const char *target = r->sf_fields + SWS_HTTP_SF_PATH;
    size_t tlen = r->sf_path_len;
    char stripped[SWS_HTTP_SF_PATH_MAX + 1];
    if (sc->cfg->strip_prefix) {
        /* Under its route's path_prefix: the file is found without it (as
         * nginx's alias): "/assets/a.css" under "/assets/" is root/a.css. */
        sws_route_view v = sws_route_target(sc->route, target, tlen);
        if (v.lead_slash) {
            stripped[0] = '/';
            memcpy(stripped + 1, v.path, v.len);
            target = stripped;
            tlen = v.len + 1;
        } else {
            target = v.path;
            tlen = v.len;
        }
    }
    /* absolute-form (RFC 9112 3.2.2: a server must accept it): the path is
     * what follows the authority; the Host field was checked by the parser. */
    for (size_t k = 0; k < 2; k++) {
        static const char *const schemes[] = {"http://", "https://"};
        size_t sl = strlen(schemes[k]);
        if (tlen >= sl && strncasecmp(target, schemes[k], sl) == 0) {
            size_t p = sl;
            while (p < tlen && target[p] != '/' && target[p] != '?')
                p++;
            target += p;
            tlen -= p;
            if (tlen == 0 || target[0] == '?') {
                target = "/"; /* "http://host" or "http://host?q": the root */
                tlen = 1;
            }
            break;
        }
    }
    char rel[SWS_HTTP_SF_PATH_MAX + 1 + 64 + 4]; /* the path, "/", an index, ".gz" */
    unsigned flags;
    int n = sws_static_path(target, tlen, rel, &flags);
    if (n < 0) {
        a.ka = false;
        answer_short(&a, &o, 400, NULL, 0);
        goto done;
    }
    if ((flags & SWS_PATH_DOTFILE) && !st->cfg->dotfiles) {
        answer_short(&a, &o, 404, NULL, 0);
        goto done;
    }
    size_t rlen = (size_t)n;
    fentry *e = lookup(w, st, rel, rlen);
    if (e->err == 0 && e->dir) {
        if (!(flags & SWS_PATH_DIR)) {
            /* "/dir" to "/dir/", the query kept, as nginx. */
            char loc[SWS_HTTP_SF_PATH_MAX + 32];
            size_t q = 0;
            while (q < tlen && target[q] != '?')
                q++;
            size_t ln = 0;
            memcpy(loc, "Location: ", 10);
            ln = 10;
            memcpy(loc + ln, target, q);
            ln += q;
            loc[ln++] = '/';
            memcpy(loc + ln, target + q, tlen - q);
            ln += tlen - q;
            memcpy(loc + ln, "\r\n", 2);
            ln += 2;
            answer_short(&a, &o, 301, loc, ln);
            goto done;
        }
        if (!st->cfg->index[0]) {
            answer_short(&a, &o, 403, NULL, 0);
            goto done;
        }
        if (rlen)
            rel[rlen++] = '/';
        size_t il = strlen(st->cfg->index);
        memcpy(rel + rlen, st->cfg->index, il + 1);
        rlen += il;
        e = lookup(w, st, rel, rlen);
        if (e->err == -ENOENT || (e->err == 0 && e->dir)) {
            answer_short(&a, &o, 403, NULL, 0); /* no index: no listing either */
            goto done;
        }
    } else if (e->err == 0 && (flags & SWS_PATH_DIR) && rlen) {
        /* "/file/": not a directory. */
        answer_short(&a, &o, 404, NULL, 0);
        release(st, e);
        goto done;
    }
    if (e->err < 0) {
        int status = status_of(e->err);
        if (status == 500)
            a.ka = false;
        answer_short(&a, &o, status, NULL, 0);
        goto done;
    }

    /* A precompressed sibling, when the client takes it (gzip_static). */
    const char *encoding = NULL;
    fentry *body = e;
    size_t vlen;
    const char *v;
    /* (Not for a path too long to cache: e would be st->tmp, which the
     * sibling's lookup would overwrite.) */
    if (st->cfg->precompressed && e != &st->tmp && (v = sf(r, SWS_HTTP_SF_AE, &vlen))) {
        unsigned ok = sws_static_accept_encoding(v, vlen);
        static const struct {
            unsigned bit;
            const char *ext, *name;
        } encs[] = {{SWS_ENC_BR, ".br", "br"}, {SWS_ENC_GZIP, ".gz", "gzip"}};
        for (size_t k = 0; k < 2 && !encoding; k++) {
            if (!(ok & encs[k].bit))
                continue;
            const char *type = e->type;
            memcpy(rel + rlen, encs[k].ext, 4);
            fentry *z = lookup(w, st, rel, rlen + 3);
            rel[rlen] = '\0';
            if (z->err == 0 && !z->dir) {
                if (z == &st->tmp) {
                    /* A sibling name too long to cache: serve the plain file. */
                    release(st, z);
                    break;
                }
                z->type = type; /* the original's type, not application/gzip */
                encoding = encs[k].name;
                body = z;
            }
        }
    }

    /* Validators (RFC 9110 13.2.2): If-None-Match, else If-Modified-Since. */
    bool not_modified = false;
    if ((v = sf(r, SWS_HTTP_SF_INM, &vlen))) {
        not_modified = sws_static_inm_match(v, vlen, body->etag);
    } else if ((v = sf(r, SWS_HTTP_SF_IMS, &vlen))) {
        time_t t = sws_static_parse_date(v, vlen);
        not_modified = t >= 0 && body->mtime <= t;
    }
    uint64_t first = 0, last = body->size ? body->size - 1 : 0;
    int range = SWS_RANGE_NONE;
    if (!not_modified && (v = sf(r, SWS_HTTP_SF_RANGE, &vlen))) {
        const char *ir;
        size_t irl;
        if (!(ir = sf(r, SWS_HTTP_SF_IF_RANGE, &irl)) ||
            sws_static_if_range(ir, irl, body->etag, body->mtime))
            range = sws_static_range(v, vlen, body->size, &first, &last);
    }
    int status = not_modified                       ? 304
                 : range == SWS_RANGE_ONE           ? 206
                 : range == SWS_RANGE_UNSATISFIABLE ? 416
                                                    : 200;
    head_start(w, &o, status);
    if (status != 416) {
        PUTS(&o, "Last-Modified: ");
        put_str(&o, body->lastmod);
        PUTS(&o, "\r\nETag: ");
        put(&o, body->etag, body->etag_len);
        PUTS(&o, "\r\n");
    }
    if (st->cfg->cache_control[0]) {
        PUTS(&o, "Cache-Control: ");
        put_str(&o, st->cfg->cache_control);
        PUTS(&o, "\r\n");
    }
    if (st->cfg->precompressed)
        PUTS(&o, "Vary: Accept-Encoding\r\n");
    uint64_t blen = 0;
    if (status == 304) {
        head_end(&o, a.ka);
    } else if (status == 416) {
        PUTS(&o, "Content-Range: bytes */");
        put_u64(&o, body->size);
        PUTS(&o, "\r\nContent-Length: 0\r\n");
        head_end(&o, a.ka);
    } else {
        blen = last - first + 1;
        if (body->size == 0)
            blen = 0;
        PUTS(&o, "Content-Type: ");
        put_str(&o, body->type);
        PUTS(&o, "\r\n");
        if (encoding) {
            PUTS(&o, "Content-Encoding: ");
            put_str(&o, encoding);
            PUTS(&o, "\r\n");
        }
        PUTS(&o, "Accept-Ranges: bytes\r\n");
        if (status == 206) {
            PUTS(&o, "Content-Range: bytes ");
            put_u64(&o, first);
            PUTS(&o, "-");
            put_u64(&o, last);
            PUTS(&o, "/");
            put_u64(&o, body->size);
            PUTS(&o, "\r\n");
        }
        PUTS(&o, "Content-Length: ");
        put_u64(&o, blen);
        PUTS(&o, "\r\n");
        head_end(&o, a.ka);
    }
    finish(&a, &o, status, blen);
    if (blen)
        rc = body_start(&a, st, body, first, blen);
    release(st, body);
    if (body != e)
        release(st, e);
done:
    if (!a.ka && keep_alive)
        sws_conn_last(w, c); /* a status that ends the connection (400, 414, 500) */
    return rc;
}

const sws_scenario_ops sws_static_ops = {
    .name = "static",
    .init = static_init,
    .free = static_free,
    .open = sws_conn_open,
    .dispatch = static_dispatch,
    .answer = static_answer,
    .more = static_more,
    .conn_end = static_conn_end,
    .turn_done = sws_conn_turn_done,
    .sweep = sws_conn_sweep,
    .drain = sws_conn_drain,
    .finished = static_finished,
    .reload_prepare = static_reload_prepare,
    .reload_commit = static_reload_commit,
    .metrics = static_metrics,
};
