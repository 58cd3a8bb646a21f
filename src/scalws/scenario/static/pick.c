/* Which file answers a request: the path itself (a directory's index, its
 * listing, or the slash redirect), or try_files' candidates in order. Every
 * candidate is normalised again (without decoding: the request path it is
 * built from is decoded already) and opened below the root by the same
 * sf_lookup as the path itself, so no candidate can leave the root that the
 * path could not. Without try_files, or when its first entry is $uri alone,
 * a request for an existing file costs one lookup, as before. */
#include "static.h"

#include <errno.h>
#include <string.h>

int sf_status_of(int err) {
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

static sf_pick status(int s) {
    return (sf_pick){.kind = SF_PICK_STATUS, .status = s};
}

static sf_pick found(fentry *e, size_t rlen) {
    if (e->err < 0)
        return status(sf_status_of(e->err));
    return (sf_pick){.kind = SF_PICK_FILE, .e = e, .rlen = rlen};
}

/* rel (rlen bytes) is a directory: its index file, else its listing
 * (autoindex) or 403. */
static sf_pick directory(sws_worker *w, sws_static *st, char *rel, size_t rlen) {
    const sws_static_config *cfg = st->cfg;
    if (cfg->index[0]) {
        size_t n = rlen;
        if (n)
            rel[n++] = '/';
        size_t il = strlen(cfg->index);
        memcpy(rel + n, cfg->index, il + 1);
        fentry *e = sf_lookup(w, st, rel, n + il);
        if (!(e->err == -ENOENT || (e->err == 0 && e->dir)))
            return found(e, n + il);
        rel[rlen] = '\0';
    }
    if (cfg->autoindex)
        return (sf_pick){.kind = SF_PICK_LIST, .rlen = rlen};
    return status(403);
}

/* The path itself: a file, or a directory asked for with its slash. */
static sf_pick plain(sws_worker *w, sws_static *st, char *rel, size_t rlen, unsigned flags) {
    fentry *e = sf_lookup(w, st, rel, rlen);
    if (e->err == 0 && e->dir)
        return flags & SWS_PATH_DIR ? directory(w, st, rel, rlen)
                                    : (sf_pick){.kind = SF_PICK_MOVED};
    if (e->err == 0 && (flags & SWS_PATH_DIR) && rlen) {
        sf_release(st, e); /* "/file/": not a directory */
        return status(404);
    }
    return found(e, rlen);
}

/* try_files: the first candidate that exists as what it names (a file, or
 * with a trailing '/' a directory) answers; a missing one (or one of the
 * other kind) lets the next be tried; one that exists but is refused (a link
 * out of the root, a FIFO, no permission) ends the search with that refusal,
 * as the path alone would. "=CODE" answers CODE; after the last, 404. */
static sf_pick try_files(sws_worker *w, sws_static *st, char *rel, size_t rlen, unsigned flags) {
    const sws_static_config *cfg = st->cfg;
    char uri[SWS_HTTP_SF_PATH_MAX + 3]; /* $uri: "/" + the path (+ "/" if asked so) */
    size_t ul = 0;
    uri[ul++] = '/';
    memcpy(uri + ul, rel, rlen);
    ul += rlen;
    if ((flags & SWS_PATH_DIR) && rlen)
        uri[ul++] = '/';
    for (int i = 0; i < cfg->ntry; i++) {
        const sws_try *y = &cfg->try[i];
        if (y->code)
            return status(y->code);
        const char *t = cfg->try_files + y->off;
        size_t n;
        unsigned cf;
        if (y->uri == 1 && y->len == 4) {
            /* "$uri" alone: the path as it is (the common first entry). */
            memcpy(rel, uri + 1, rlen);
            rel[rlen] = '\0';
            n = rlen;
            cf = flags;
        } else {
            char cand[SF_REL_MAX];
            size_t cl = 0, pre = y->uri ? (size_t)y->uri - 1 : y->len;
            memcpy(cand, t, pre);
            cl = pre;
            if (y->uri) {
                memcpy(cand + cl, uri, ul);
                cl += ul;
                memcpy(cand + cl, t + pre + 4, y->len - pre - 4);
                cl += y->len - pre - 4;
            }
            int rc = sws_static_path_plain(cand, cl, rel, &cf);
            if (rc < 0)
                continue; /* it would climb above the root (the config allows none) */
            n = (size_t)rc;
        }
        fentry *e = sf_lookup(w, st, rel, n);
        bool want_dir = (cf & SWS_PATH_DIR) != 0;
        if (e->err == 0 && e->dir && want_dir) {
            /* The path's own directory without its slash: redirected, as
             * without try_files, so that relative links in it work. */
            bool own = n == rlen && memcmp(rel, uri + 1, rlen) == 0;
            if (own && rlen && !(flags & SWS_PATH_DIR))
                return (sf_pick){.kind = SF_PICK_MOVED};
            return directory(w, st, rel, n);
        }
        if (e->err == 0 && !e->dir && !want_dir)
            return found(e, n);
        if (e->err < 0 && e->err != -ENOENT && e->err != -ENOTDIR)
            return status(sf_status_of(e->err));
        sf_release(st, e);
    }
    return status(404);
}

sf_pick sf_pick_path(sws_worker *w, sws_static *st, char *rel, size_t rlen, unsigned flags) {
    return st->cfg->ntry ? try_files(w, st, rel, rlen, flags) : plain(w, st, rel, rlen, flags);
}
