/* The content-type map from a mime.types file (Debian's media-types): built
 * once at start and at reload into one sorted array, then read-only, so that a
 * lookup is a binary search with no lock and no allocation. */
#include "sws_static.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define EXT_MAX 15

typedef struct entry {
    char ext[EXT_MAX + 1]; /* lowercased */
    const char *type;      /* into types */
} entry;

struct sws_mime {
    entry *e;
    size_t n;
    char *types; /* every type once, NUL-separated */
};

/* By extension, then by line (types is in file order), so that an extension
 * two lines name resolves to the first, whatever qsort does with ties. */
static int cmp(const void *a, const void *b) {
    const entry *x = a, *y = b;
    int c = strcmp(x->ext, y->ext);
    return c ? c : (x->type > y->type) - (x->type < y->type);
}

sws_mime *sws_mime_load(const char *path, int *err) {
    FILE *f = fopen(path ? path : "/etc/mime.types", "re");
    if (!f) {
        *err = -errno;
        return NULL;
    }
    sws_mime *m = calloc(1, sizeof(*m));
    size_t ecap = 0, tlen = 0, tcap = 0;
    size_t *toff = NULL; /* type offset per entry until types stops moving */
    char line[1024];
    *err = -ENOMEM;
    if (!m)
        goto fail;
    while (fgets(line, sizeof(line), f)) {
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *save, *type = strtok_r(line, " \t\r\n", &save);
        if (!type)
            continue;
        size_t tl = strlen(type) + 1, off = tlen;
        bool used = false;
        for (char *ext; (ext = strtok_r(NULL, " \t\r\n", &save));) {
            if (strlen(ext) > EXT_MAX)
                continue;
            if (m->n == ecap) {
                ecap = ecap ? 2 * ecap : 256;
                entry *ne = realloc(m->e, ecap * sizeof(*ne));
                size_t *nt = realloc(toff, ecap * sizeof(*nt));
                if (ne)
                    m->e = ne;
                if (nt)
                    toff = nt;
                if (!ne || !nt)
                    goto fail;
            }
            size_t k = 0;
            for (; ext[k]; k++)
                m->e[m->n].ext[k] = (char)tolower((unsigned char)ext[k]);
            m->e[m->n].ext[k] = '\0';
            toff[m->n++] = off;
            used = true;
        }
        if (!used)
            continue;
        if (tlen + tl > tcap) {
            tcap = tcap ? 2 * tcap + tl : 4096 + tl;
            char *nt = realloc(m->types, tcap);
            if (!nt)
                goto fail;
            m->types = nt;
        }
        memcpy(m->types + tlen, type, tl);
        tlen += tl;
    }
    fclose(f);
    f = NULL;
    for (size_t i = 0; i < m->n; i++)
        m->e[i].type = m->types + toff[i];
    free(toff);
    qsort(m->e, m->n, sizeof(entry), cmp);
    *err = 0;
    return m;
fail:
    if (f)
        fclose(f);
    free(toff);
    sws_mime_free(m);
    return NULL;
}

void sws_mime_free(sws_mime *m) {
    if (!m)
        return;
    free(m->e);
    free(m->types);
    free(m);
}

size_t sws_mime_count(const sws_mime *m) {
    return m ? m->n : 0;
}

const char *sws_mime_lookup(const sws_mime *m, const char *name, size_t len) {
    if (!m)
        return NULL;
    size_t dot = len;
    while (dot > 0 && name[dot - 1] != '.' && name[dot - 1] != '/')
        dot--;
    if (dot == 0 || name[dot - 1] != '.' || len - dot > EXT_MAX || len == dot)
        return NULL;
    char key[EXT_MAX + 1];
    size_t k = 0;
    for (size_t i = dot; i < len; i++)
        key[k++] = (char)tolower((unsigned char)name[i]);
    key[k] = '\0';
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(key, m->e[mid].ext);
        if (c == 0) {
            /* The first line that named it sorts first among equals. */
            while (mid > 0 && strcmp(m->e[mid - 1].ext, key) == 0)
                mid--;
            return m->e[mid].type;
        }
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}
