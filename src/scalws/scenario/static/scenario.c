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
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "compress.h"
#include "conn.h"
#include "exchange.h"
#include "pagecache.h"
#include "route.h"
#include "scenario.h"
#include "static.h"
#include "sws.h"
#include "sws_static.h"

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
    st->files = calloc(w->nexchanges, sizeof(*st->files));
    if (!st->files)
        return -ENOMEM;
    const char *fb = getenv("SWS_STATIC_OPEN_FALLBACK");
    st->fallback = fb && strcmp(fb, "1") == 0;
    const char *sfv = getenv("SWS_STATIC_SENDFILE");
    st->sendfile = !(sfv && strcmp(sfv, "0") == 0);
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
    st->scfg = cfg;
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
    st->scfg = sc->cfg;
    st->symlinks = (sws_symlinks)st->cfg->follow_symlinks;
    /* Every cached type and descriptor belongs to the old root and map. The
     * size of the cache stays the start's (a resize would move entries). */
    if (st->cache)
        sf_cache_clear(st);
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
        sf_job_free(j);
    }
    if (st->cache) {
        sf_cache_clear(st);
        free(st->cache);
    }
    if (st->files) {
        for (uint32_t i = 0; i < w->nexchanges; i++)
            if (st->files[i].on && !st->files[i].job)
                sf_body_done(&st->files[i]);
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

/* ---- answers --------------------------------------------------------------- */

typedef struct answer_ctx {
    sws_worker *w;
    sws_exchange *x;
    const sws_scenario_cfg *cfg; /* its route's: the error pages */
    bool head;                   /* HEAD: no body */
} answer_ctx;

static void count_error(sws_worker *w, int status) {
    if (status == 400)
        SWS_ADD(w->ctr.errors[SWS_ST_400], 1);
    else if (status == 414)
        SWS_ADD(w->ctr.errors[SWS_ST_414], 1);
}

/* An answer with a short text body naming the status (as the error pages of
 * other scenarios), or the route's error page for it, extra fields before
 * it. last: the connection ends after it (a request refused as malformed, or
 * a fault of ours). */
static int answer_short(answer_ctx *a, int status, const sws_field *extra, uint32_t nextra,
                        bool last) {
    char text[64];
    const char *body = text;
    int bl = snprintf(text, sizeof(text), "%d %s\n", status, sws_http_reason(status));
    sws_answer ans = {.status = status,
                      .content_type = "text/plain",
                      .length = (uint64_t)bl,
                      .last = last,
                      .whole_body = true,
                      .fields = extra,
                      .nfields = nextra};
    const sws_error_page *page = sws_error_page_find(a->cfg, status);
    if (page) {
        body = page->body;
        bl = (int)page->len;
        ans.content_type = page->content_type;
        ans.length = page->len;
    }
    count_error(a->w, status);
    if (a->w->logs)
        sws_ex_log(a->w, a->x, status, a->head ? 0 : (uint64_t)bl);
    int rc = sws_ex_head(a->w, a->x, &ans);
    if (rc < 0)
        return rc;
    rc = sws_ex_body(a->w, a->x, body, (size_t)bl);
    return rc < 0 ? rc : SWS_ANSWER_DONE;
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
/* Whether every page of [off, off + len) is in the page cache, so that
 * sendfile will not wait on the disk. A kernel that cannot say: never (and
 * st->sendfile goes off). */
static bool resident(sws_static *st, int fd, uint64_t off, uint64_t len) {
    int r = sws_pagecache_resident(fd, off, len);
    if (r < 0)
        st->sendfile = false;
    return r > 0;
}

/* Up to this much per sendfile, so that one connection's large file does not
 * hold the loop for long (the socket buffer usually takes less anyway). */
#define SENDFILE_MAX (1u << 20)

static int fill(sws_worker *w, sws_static *st, sws_exchange *x) {
    sfile *f = &st->files[sws_ex_id(x)];
    /* Zero copy while the protocol can (plaintext HTTP/1.1 with nothing
     * queued: never over TLS, where the engine must seal every byte), the
     * socket takes bytes and the pages are resident: the loop never waits in
     * sendfile, on the socket (non-blocking) or on the disk (cachestat said
     * the pages are there). */
    while (f->on && !f->job && !f->mem && st->sendfile) {
        uint64_t want = f->end - f->off;
        if (want > SENDFILE_MAX)
            want = SENDFILE_MAX;
        if (!resident(st, f->fd, f->off, want))
            break;
        int n = sws_ex_sendfile(w, x, f->fd, &f->off, (size_t)want);
        if (n == -EAGAIN || n == -EOPNOTSUPP)
            break; /* the socket is full, or the bytes must be copied */
        if (n < 0)
            return n;
        if (f->off == f->end) {
            sf_body_done(f);
            return SWS_ANSWER_DONE;
        }
    }
    size_t room;
    char *at;
    while (f->on && !f->job && (at = sws_ex_room(w, x, &room)) && room > 0) {
        uint64_t want = f->end - f->off;
        if (want > room)
            want = room;
        if (f->mem) {
            /* A listing's page, in memory: no disk to wait on. */
            memcpy(at, f->mem + f->off, (size_t)want);
            sws_ex_commit(w, x, (size_t)want);
            f->off += want;
            if (f->off == f->end)
                sf_body_done(f);
            continue;
        }
        struct iovec v = {at, (size_t)want};
        ssize_t n = preadv2(f->fd, &v, 1, (off_t)f->off, RWF_NOWAIT);
        if (n < 0 && errno == EAGAIN) {
            /* Not in the page cache. With bytes queued in the way of what is
             * left, write those first; the read is tried again when they are
             * gone (it may be warm by then). A small body's buffer (HTTP/2,
             * whole_body) has room for all of it, never for out_cap. */
            if (room < w->out_cap && room < f->end - f->off)
                return SWS_ANSWER_PENDING;
            int rc = sf_submit(w, st, x, (uint32_t)want);
            return rc < 0 ? rc : SWS_ANSWER_PENDING;
        }
        if (n <= 0) {
            /* An error, or the file shrank under us: the length announced
             * cannot be kept, and only a close tells the client so. */
            return n < 0 ? -errno : -EIO;
        }
        sws_ex_commit(w, x, (size_t)n);
        f->off += (uint64_t)n;
        if (f->off == f->end)
            sf_body_done(f);
    }
    return f->on ? SWS_ANSWER_PENDING : SWS_ANSWER_DONE;
}

/* A file this small is read in one go after its head (body_start), so its
 * answer says whole_body. */
#define SMALL_BODY 8192

/* Starts the body after the head. */
static int body_start(answer_ctx *a, sws_static *st, fentry *e, uint64_t first, uint64_t len) {
    sws_worker *w = a->w;
    sws_exchange *x = a->x;
    if (a->head || len == 0)
        return SWS_ANSWER_DONE;
    size_t room = 0;
    char *at = len <= w->out_cap ? sws_ex_room(w, x, &room) : NULL;
    if (at && len <= room && (!st->sendfile || len <= 16384)) {
        /* The common small file: one read from the page cache, one write. */
        struct iovec v = {at, (size_t)len};
        ssize_t n = preadv2(e->fd, &v, 1, (off_t)first, RWF_NOWAIT);
        if (n == (ssize_t)len) {
            sws_ex_commit(w, x, (size_t)n);
            return SWS_ANSWER_DONE;
        }
        if (n > 0) {
            sws_ex_commit(w, x, (size_t)n);
            first += (uint64_t)n;
            len -= (uint64_t)n;
        }
    }
    int fd = fcntl(e->fd, F_DUPFD_CLOEXEC, 0); /* the cache may drop e->fd meanwhile */
    if (fd < 0)
        return -errno;
    /* HTTP/2 reads a cached range into its frames itself: handed over whole. */
    if (sws_ex_file(w, x, fd, first, len) == 0)
        return SWS_ANSWER_DONE;
    st->files[sws_ex_id(x)] = (sfile){.on = true, .fd = fd, .off = first, .end = first + len};
    /* With sendfile the head goes alone and more() sends the body after it. */
    return st->sendfile ? SWS_ANSWER_PENDING : fill(w, st, x);
}

static void static_more(sws_worker *w, sws_scenario *sc, sws_exchange *x) {
    int rc = fill(w, sc->state, x);
    if (rc < 0)
        sws_ex_close(w, x);
    else if (rc == SWS_ANSWER_DONE)
        sws_ex_end(w, x);
}

/* A listing the helper rendered (or could not), answered on the loop: the
 * page goes from memory through the output as a file's bytes would. */
static void list_done(sws_worker *w, sws_static *st, sws_exchange *x, job *j) {
    answer_ctx a = {.w = w, .x = x, .cfg = st->scfg, .head = j->head};
    st->files[sws_ex_id(x)].on = false;
    int rc;
    if (j->res < 0) {
        int status = sf_status_of((int)j->res);
        rc = answer_short(&a, status, NULL, 0, status == 500);
    } else {
        sws_answer ans = {
            .status = 200, .content_type = "text/html; charset=utf-8", .length = j->html_len};
        rc = sws_ex_head(w, x, &ans);
        if (rc == 0 && w->logs)
            sws_ex_log(w, x, 200, a.head ? 0 : j->html_len);
        if (rc == 0 && !a.head && j->html_len) {
            st->files[sws_ex_id(x)] =
                (sfile){.on = true, .mem = j->html, .fd = -1, .end = j->html_len};
            j->html = NULL;
            rc = fill(w, st, x);
        } else if (rc == 0) {
            rc = SWS_ANSWER_DONE;
        }
    }
    sf_job_free(j);
    if (rc < 0) {
        sws_ex_close(w, x);
        return;
    }
    if (rc == SWS_ANSWER_DONE)
        sws_ex_end(w, x);
    sws_ex_more(w, x);
}

/* A cold read the helper did, on the loop again. */
static void on_file_read(sws_worker *w, sws_static *st, const tl_completion *e) {
    job *j = e->u.msg.ptr;
    st->inflight--;
    uint32_t i = sws_token_index(e->token);
    sfile *f = i < w->nexchanges ? &st->files[i] : NULL;
    sws_exchange *x = j->x;
    if (!f || !f->job || !sws_ex_marked(x, j->mark)) {
        /* The connection went away meanwhile (conn_end left fd to the job), or
         * its slot serves another one now, whose state is not this job's. */
        sf_job_free(j);
        return;
    }
    f->job = false;
    if (j->list) {
        list_done(w, st, x, j);
        return;
    }
    size_t room;
    char *at = sws_ex_room(w, x, &room);
    if (j->res <= 0 || !at || room < (size_t)j->res) {
        close(j->fd); /* the job's; f->fd is the same descriptor */
        f->on = false;
        free(j);
        sws_ex_close(w, x);
        return;
    }
    /* The helper read into its own buffer; the output had room for it when
     * the read was handed over, and nothing is added while it runs. */
    uint32_t n = (uint32_t)j->res;
    memcpy(at, j->buf, n);
    sws_ex_commit(w, x, n);
    f->off += n;
    free(j);
    if (f->off == f->end) {
        close(f->fd);
        f->on = false;
        sws_ex_end(w, x);
    }
    sws_ex_more(w, x);
}

static void static_dispatch(sws_worker *w, sws_scenario *sc, const tl_completion *e) {
    if (sws_token_tag(e->token) == SWS_T_FILE_READ)
        on_file_read(w, sc->state, e);
    else
        sws_conn_dispatch(w, sc, e);
}

static void static_conn_end(sws_worker *w, sws_scenario *sc, sws_exchange *x) {
    (void)w;
    sws_static *st = sc->state;
    sfile *f = &st->files[sws_ex_id(x)];
    /* With a job out, its post closes the descriptor (on_file_read), and the
     * slot is free for the next connection at once. */
    if (f->on && !f->job)
        sf_body_done(f);
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

static int static_answer(sws_worker *w, sws_scenario *sc, sws_exchange *x) {
    sws_static *st = sc->state;
    const sws_http_request *r = sws_ex_request(x);
    answer_ctx a = {.w = w, .x = x, .cfg = sc->cfg, .head = r->head};
    /* resp_max (OUT_CAP / 4) bytes are free: far more than any head. */
    if (!r->sf_fields) /* the slot's field storage could not be allocated */
        return answer_short(&a, 500, NULL, 0, true);
    if (r->method != HTTP_GET && r->method != HTTP_HEAD) {
        sws_field allow = SWS_FIELD_LIT("Allow", "GET, HEAD");
        return answer_short(&a, 405, &allow, 1, false);
    }
    if (r->sf_path_len > SWS_HTTP_SF_PATH_MAX)
        return answer_short(&a, 414, NULL, 0, true);
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
    char rel[SF_REL_MAX];
    unsigned flags;
    int n = sws_static_path(target, tlen, rel, &flags);
    if (n < 0)
        return answer_short(&a, 400, NULL, 0, true);
    if ((flags & SWS_PATH_DOTFILE) && !st->cfg->dotfiles)
        return answer_short(&a, 404, NULL, 0, false);
    sf_pick p = sf_pick_path(w, st, rel, (size_t)n, flags);
    if (p.kind == SF_PICK_MOVED) {
        /* "/dir" to "/dir/", the query kept, as nginx. */
        char loc[SWS_HTTP_SF_PATH_MAX + 32];
        size_t q = 0;
        while (q < tlen && target[q] != '?')
            q++;
        size_t ln = 0;
        memcpy(loc + ln, target, q);
        ln += q;
        loc[ln++] = '/';
        memcpy(loc + ln, target + q, tlen - q);
        ln += tlen - q;
        sws_field where = sws_field_str("Location", 8, loc, (uint32_t)ln);
        return answer_short(&a, 301, &where, 1, false);
    }
    if (p.kind == SF_PICK_STATUS)
        return answer_short(&a, p.status, NULL, 0, p.status == 500);
    if (p.kind == SF_PICK_LIST) {
        /* The helper reads the directory; the answer follows (list_done). */
        int rc = sf_submit_list(w, st, x, rel, p.rlen);
        return rc < 0 ? answer_short(&a, 500, NULL, 0, true) : SWS_ANSWER_PENDING;
    }
    fentry *e = p.e;
    size_t rlen = p.rlen;

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
            fentry *z = sf_lookup(w, st, rel, rlen + 3);
            rel[rlen] = '\0';
            if (z->err == 0 && !z->dir) {
                if (z == &st->tmp) {
                    /* A sibling name too long to cache: serve the plain file. */
                    sf_release(st, z);
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
    sws_field fl[8];
    uint32_t nf = 0;
    char crange[96];
    if (status != 416) {
        fl[nf++] =
            sws_field_str("Last-Modified", 13, body->lastmod, (uint32_t)strlen(body->lastmod));
        fl[nf++] = sws_field_str("ETag", 4, body->etag, (uint32_t)body->etag_len);
    }
    if (st->cfg->cache_control[0])
        fl[nf++] = sws_field_str("Cache-Control", 13, st->cfg->cache_control,
                                 (uint32_t)strlen(st->cfg->cache_control));
    if (st->cfg->precompressed)
        fl[nf++] = SWS_FIELD_LIT("Vary", "Accept-Encoding");
    sws_answer ans = {.status = status, .fields = fl};
    uint64_t blen = 0;
    if (status == 416) {
        int k = snprintf(crange, sizeof(crange), "bytes */%" PRIu64, body->size);
        fl[nf++] = sws_field_str("Content-Range", 13, crange, (uint32_t)k);
    } else if (status != 304) {
        blen = last - first + 1;
        if (body->size == 0)
            blen = 0;
        ans.content_type = body->type;
        if (encoding)
            fl[nf++] = sws_field_str("Content-Encoding", 16, encoding, (uint32_t)strlen(encoding));
        fl[nf++] = SWS_FIELD_LIT("Accept-Ranges", "bytes");
        if (status == 206) {
            int k = snprintf(crange, sizeof(crange), "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64,
                             first, last, body->size);
            fl[nf++] = sws_field_str("Content-Range", 13, crange, (uint32_t)k);
        }
    }
    ans.nfields = nf;
    ans.length = blen;
    ans.whole_body = blen <= SMALL_BODY;
    /* Compressed on the fly where its route says so (core/compress.c),
     * unless a precompressed sibling is what goes. A 304 names the type and
     * length its 200 would have, so that its ETag and Vary are that 200's. */
    int rc = encoding ? sws_ex_head(w, x, &ans)
                      : sws_compress_head(w, sc, x, &ans, status == 304 ? body->type : NULL,
                                          status == 304 ? body->size : SWS_BODY_STREAM);
    if (rc == 0 && w->logs)
        sws_ex_log(w, x, status, a.head ? 0 : blen);
    if (rc == 0 && blen)
        rc = body_start(&a, st, body, first, blen);
    else if (rc == 0)
        rc = SWS_ANSWER_DONE;
    sf_release(st, body);
    if (body != e)
        sf_release(st, e);
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
