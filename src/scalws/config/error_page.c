/* error_page: per route, a file sent as the body of an error answer the
 * server makes itself (a static 404, the proxy's 502). The files are read
 * here, when the configuration is loaded (start, --check-config, SIGHUP), so
 * a missing or oversized one refuses the configuration, and serving a page
 * never touches the disk. Each route's pages are one allocation, owned by the
 * route table, reference-counted for the HTTP/2 streams that send from it. */
#include "config.h"
#include "route.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* One "CODE [CODE...] FILE" group of the value. */
typedef struct group {
    int ncodes;
    uint16_t codes[SWS_ERROR_PAGES_MAX];
    const char *file; /* into the caller's copy of the value */
} group;

/* Splits v (modified: NULs end the files) into groups. 0, or -EINVAL with why. */
static int parse(char *v, group *g, int *ng, char *why, size_t len) {
    int total = 0;
    uint16_t seen[SWS_ERROR_PAGES_MAX];
    *ng = 0;
    for (char *part = v; part;) {
        if (*ng == SWS_ERROR_PAGES_MAX) {
            snprintf(why, len, "more than %d statuses", SWS_ERROR_PAGES_MAX);
            return -EINVAL;
        }
        char *comma = strchr(part, ',');
        if (comma)
            *comma = '\0';
        group *cur = &g[*ng];
        cur->ncodes = 0;
        cur->file = NULL;
        char *save = NULL;
        for (char *tok = strtok_r(part, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
            if (cur->file) {
                snprintf(why, len, "'%s' after the file '%s' (want CODE [CODE...] FILE, ...)", tok,
                         cur->file);
                return -EINVAL;
            }
            char *e;
            long code = strtol(tok, &e, 10);
            if (*e) {
                cur->file = tok; /* not a number: the file */
                continue;
            }
            if (code < 400 || code > 599) {
                snprintf(why, len, "status %s is not an error (want 400..599)", tok);
                return -EINVAL;
            }
            for (int i = 0; i < total; i++) {
                if (seen[i] == code) {
                    snprintf(why, len, "status %ld is given twice", code);
                    return -EINVAL;
                }
            }
            if (total == SWS_ERROR_PAGES_MAX) {
                snprintf(why, len, "more than %d statuses", SWS_ERROR_PAGES_MAX);
                return -EINVAL;
            }
            seen[total++] = (uint16_t)code;
            cur->codes[cur->ncodes++] = (uint16_t)code;
        }
        if (!cur->ncodes || !cur->file) {
            snprintf(why, len, "want CODE [CODE...] FILE, e.g. 404 /srv/errors/404.html");
            return -EINVAL;
        }
        (*ng)++;
        part = comma ? comma + 1 : NULL;
    }
    return 0;
}

int sws_error_page_check(const char *v, char *why, size_t len) {
    char copy[SWS_ERROR_PAGE_SPEC];
    group g[SWS_ERROR_PAGES_MAX];
    int ng;
    if (strlen(v) >= sizeof(copy)) {
        snprintf(why, len, "longer than %d bytes", SWS_ERROR_PAGE_SPEC - 1);
        return -EINVAL;
    }
    strcpy(copy, v);
    return parse(copy, g, &ng, why, len);
}

/* The Content-Type by the file's extension: the few an error page is
 * written in (a page of another kind is a mistake worth hearing about). */
static const char *type_of(const char *file) {
    static const struct {
        const char *ext, *type;
    } types[] = {{".html", "text/html"},      {".htm", "text/html"},
                 {".txt", "text/plain"},      {".json", "application/json"},
                 {".xml", "application/xml"}, {".xhtml", "application/xhtml+xml"},
                 {".svg", "image/svg+xml"}};
    const char *dot = strrchr(file, '.');
    if (!dot || strchr(dot, '/'))
        return NULL;
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        if (strcasecmp(dot, types[i].ext) == 0)
            return types[i].type;
    return NULL;
}

/* Reads file whole into buf (SWS_ERROR_PAGE_MAX bytes). Its length, or a
 * negative errno; -EFBIG when it is larger. */
static ssize_t read_page(const char *file, char *buf) {
    int fd = open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return -errno;
    struct stat sb;
    ssize_t rc = 0;
    if (fstat(fd, &sb) < 0)
        rc = -errno;
    else if (!S_ISREG(sb.st_mode))
        rc = -EISDIR;
    else if (sb.st_size > SWS_ERROR_PAGE_MAX)
        rc = -EFBIG;
    size_t got = 0;
    while (rc == 0) {
        ssize_t n = read(fd, buf + got, SWS_ERROR_PAGE_MAX + 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            rc = -errno;
        else if (n == 0)
            break;
        else if ((got += (size_t)n) > SWS_ERROR_PAGE_MAX)
            rc = -EFBIG; /* it grew since the fstat */
    }
    close(fd);
    return rc < 0 ? rc : (ssize_t)got;
}

/* A route's pages from its value, or NULL with why. The files are read into
 * a scratch buffer first, so that the set holds only their bytes. */
static sws_error_pages *load(const char *spec, char *why, size_t len) {
    char copy[SWS_ERROR_PAGE_SPEC];
    group g[SWS_ERROR_PAGES_MAX];
    ssize_t size[SWS_ERROR_PAGES_MAX];
    int ng;
    snprintf(copy, sizeof(copy), "%s", spec);
    if (parse(copy, g, &ng, why, len) < 0)
        return NULL;
    char *tmp = malloc((size_t)ng * (SWS_ERROR_PAGE_MAX + 1));
    if (!tmp) {
        snprintf(why, len, "out of memory");
        return NULL;
    }
    size_t total = 0;
    for (int i = 0; i < ng; i++) {
        if (!type_of(g[i].file)) {
            snprintf(why, len,
                     "%s: no type for its extension (want .html, .htm, .txt, .json, .xml, "
                     ".xhtml or .svg)",
                     g[i].file);
            free(tmp);
            return NULL;
        }
        ssize_t n = size[i] = read_page(g[i].file, tmp + (size_t)i * (SWS_ERROR_PAGE_MAX + 1));
        if (n < 0) {
            if (n == -EFBIG)
                snprintf(why, len, "%s: larger than %d bytes (a page is kept in memory)", g[i].file,
                         SWS_ERROR_PAGE_MAX);
            else if (n == -EISDIR)
                snprintf(why, len, "%s: not a regular file", g[i].file);
            else
                snprintf(why, len, "%s: %s", g[i].file, strerror((int)-n));
            free(tmp);
            return NULL;
        }
        total += (size_t)n;
    }
    sws_error_pages *p = calloc(1, sizeof(*p) + total);
    if (!p) {
        free(tmp);
        snprintf(why, len, "out of memory");
        return NULL;
    }
    atomic_init(&p->refs, 1);
    char *at = p->data;
    for (int i = 0; i < ng; i++) {
        memcpy(at, tmp + (size_t)i * (SWS_ERROR_PAGE_MAX + 1), (size_t)size[i]);
        for (int k = 0; k < g[i].ncodes; k++)
            p->p[p->n++] = (sws_error_page){.status = g[i].codes[k],
                                            .len = (uint32_t)size[i],
                                            .content_type = type_of(g[i].file),
                                            .body = at};
        if ((uint32_t)size[i] > p->largest)
            p->largest = (uint32_t)size[i];
        at += size[i];
    }
    free(tmp);
    return p;
}

int sws_error_pages_load(sws_config *c, const char *config_file, char *err, size_t errlen) {
    sws_routes *t = c->routes;
    const char *file = config_file ? config_file : "config";
    for (int i = 0; t && i < t->n; i++) {
        sws_route *r = &t->r[i];
        const char *spec = i == 0 ? c->error_page : r->error_page;
        if (!spec[0])
            continue;
        char why[400];
        sws_error_pages *p = load(spec, why, sizeof(why));
        if (!p) {
            if (i == 0) {
                int k = sws_config_key_index("server", "error_page");
                snprintf(err, errlen, "%s:%u: [server] error_page: %s", file,
                         k >= 0 ? (unsigned)c->origin_line[k] : 0u, why);
            } else {
                snprintf(err, errlen, "%s:%u: [route %s] error_page: %s", file,
                         (unsigned)r->error_page_line, r->name, why);
            }
            return -EINVAL;
        }
        r->cfg.pages = p;
    }
    return 0;
}

const sws_error_page *sws_error_page_find(const sws_scenario_cfg *cfg, int status) {
    const sws_error_pages *p = cfg ? cfg->pages : NULL;
    for (int i = 0; p && i < p->n; i++)
        if (p->p[i].status == status)
            return &p->p[i];
    return NULL;
}

uint32_t sws_error_pages_room(const sws_scenario_cfg *cfg) {
    /* The head beside it: status line, Server, Date, the type, the length,
     * Connection, and the fields a route may add. */
    return cfg->pages ? cfg->pages->largest + 1024 : 0;
}

void sws_error_pages_ref(sws_error_pages *p) {
    atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
}

void sws_error_pages_unref(sws_error_pages *p) {
    if (p && atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) == 1)
        free(p);
}
