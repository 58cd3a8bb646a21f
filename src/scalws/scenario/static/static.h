/* The static scenario's parts shared by its files (scenario.c: the
 * answers and hooks; files.c: the open-file cache and the helper thread for
 * cold reads). Loop thread only, but the helper's queue. */
#ifndef SWS_STATIC_STATE_H
#define SWS_STATIC_STATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "exchange.h"
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

/* A path below the root as the scenario builds it: the request's (or a
 * try_files candidate: a template around it), "/", an index, ".gz". */
#define SF_REL_MAX (SWS_HTTP_SF_PATH_MAX + 3 + 256 + 1 + 64 + 4)

/* The body a connection is sending, by slot: a file, or a listing's page. */
typedef struct sfile {
    bool on;   /* a body is being sent from fd (or mem) */
    bool job;  /* the helper works for it; the job owns fd until it posts */
    char *mem; /* a directory listing's page (owned), sent instead of fd */
    int fd;
    uint64_t off, end;
} sfile;

typedef struct job {
    struct job *next;
    sws_worker *w;
    uint32_t idx;    /* the exchange's id: its sfile */
    sws_exchange *x; /* valid for the loop's life; its request only while mark holds */
    sws_ex_mark mark;
    bool list; /* a directory listing: fd is the root's (a duplicate), buf the directory */
    bool head; /* its request is HEAD (the request is not kept while the helper works) */
    bool dotfiles;
    sws_symlinks symlinks;
    bool fallback;
    char *html; /* the listing's page, malloc'd (the job's until it is taken) */
    size_t html_len;
    int fd;
    uint64_t off;
    uint32_t len;
    ssize_t res;
    char buf[];
} job;

/* What answers a request (pick.c). */
typedef enum sf_pick_kind {
    SF_PICK_FILE,   /* e, whose path is rel (rlen bytes) */
    SF_PICK_STATUS, /* an error status: 403, 404, 500, or try_files' =CODE */
    SF_PICK_MOVED,  /* the path is a directory asked for without its slash: 301 */
    SF_PICK_LIST,   /* the directory rel (rlen bytes) is listed (autoindex) */
} sf_pick_kind;

typedef struct sf_pick {
    sf_pick_kind kind;
    int status;
    fentry *e;
    size_t rlen;
} sf_pick;

typedef struct sws_static {
    sfile *files;      /* one per connection slot */
    uint32_t inflight; /* jobs not yet posted back: the loop is not finished */
    int rootfd;
    int next_rootfd; /* reload_prepare's, until reload_commit */
    sws_mime *next_mime;
    sws_symlinks symlinks;
    bool fallback; /* SWS_STATIC_OPEN_FALLBACK=1: the walk even where openat2 exists */
    bool sendfile; /* page-cache-resident parts go by sendfile (SWS_STATIC_SENDFILE=0: never) */
    const sws_static_config *cfg;
    const sws_scenario_cfg *scfg; /* its route's whole settings: the error pages */
    uint32_t inst;                /* its scenario instance: the helper's posts name it (token.h) */
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

/* pick.c: rel (SF_REL_MAX bytes) holds the request's normalised path
 * (rlen bytes, flags SWS_PATH_*) and gets the chosen one. */
sf_pick sf_pick_path(sws_worker *w, sws_static *st, char *rel, size_t rlen, unsigned flags);
/* The status for an open's error: 404, 403 or 500. */
int sf_status_of(int err);

/* files.c */
int sf_submit(sws_worker *w, sws_static *st, sws_exchange *x, uint32_t len);
/* A listing of the directory rel for the helper to render. */
int sf_submit_list(sws_worker *w, sws_static *st, sws_exchange *x, const char *rel, size_t len);
void sf_job_free(job *j);
/* Ends what the slot sends (its descriptor closed, its page freed). */
void sf_body_done(sfile *f);
fentry *sf_lookup(sws_worker *w, sws_static *st, const char *rel, size_t len);
void sf_release(sws_static *st, fentry *e);
void sf_cache_clear(sws_static *st);

#endif
