/* Directory listings (autoindex): the page for one directory below the root.
 * A file name is any bytes but '/' and NUL, so every name is hostile: in
 * text it is HTML-escaped with bytes that are not UTF-8 (and controls) shown
 * as U+FFFD, in a link it is percent-encoded except for the unreserved
 * characters, so that neither a quote nor a ':' (a scheme) nor a '?' or '#'
 * can change what the link means. Blocking: run by the loop's helper. */
#include "sws_static.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct entry {
    char *name;
    bool dir;
    uint64_t size;
    time_t mtime;
} entry;

/* The length of the UTF-8 sequence at s (n bytes left) when it is valid and
 * not a control character, else 0 (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF). */
static size_t utf8_char(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    if (c < 0x20 || c == 0x7f)
        return 0;
    if (c < 0x80)
        return 1;
    size_t k;
    unsigned min, cp;
    if ((c & 0xe0) == 0xc0)
        k = 2, min = 0x80, cp = c & 0x1f;
    else if ((c & 0xf0) == 0xe0)
        k = 3, min = 0x800, cp = c & 0x0f;
    else if ((c & 0xf8) == 0xf0)
        k = 4, min = 0x10000, cp = c & 0x07;
    else
        return 0;
    if (k > n)
        return 0;
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp < 0xa0))
        return 0; /* overlong, out of range, a surrogate, a C1 control */
    return k;
}

static void put_text(FILE *f, const char *name) {
    const unsigned char *s = (const unsigned char *)name;
    size_t n = strlen(name);
    for (size_t i = 0; i < n;) {
        size_t k = utf8_char(s + i, n - i);
        if (k == 0) {
            fputs("&#xFFFD;", f);
            i++;
            continue;
        }
        switch (s[i]) {
        case '&':
            fputs("&amp;", f);
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        case '\'':
            fputs("&#39;", f);
            break;
        default:
            fwrite(s + i, 1, k, f);
        }
        i += k;
    }
}

/* RFC 3986 2.3's unreserved characters stay; every other byte is %XX. */
static void put_href(FILE *f, const char *name) {
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *s = (const unsigned char *)name; *s; s++) {
        unsigned c = *s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_' || c == '~')
            fputc((int)c, f);
        else
            fprintf(f, "%%%c%c", hex[c >> 4], hex[c & 15]);
    }
}

static int by_kind_then_name(const void *a, const void *b) {
    const entry *x = a, *y = b;
    if (x->dir != y->dir)
        return x->dir ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* What a link in the listing leads to, under the rule that serving it would
 * apply: a link the rule refuses is not listed. */
static int link_stat(int rootfd, const char *rel, const char *name, sws_symlinks symlinks,
                     bool fallback, struct stat *sb) {
    char path[4096];
    int n = snprintf(path, sizeof(path), "%s%s%s", rel, *rel ? "/" : "", name);
    if (n < 0 || (size_t)n >= sizeof(path))
        return -ENAMETOOLONG;
    int fd = sws_static_open(rootfd, path, symlinks, fallback);
    if (fd < 0)
        return fd;
    int rc = fstat(fd, sb) < 0 ? -errno : 0;
    close(fd);
    return rc;
}

static void put_row(FILE *f, const entry *e) {
    fputs("<tr><td><a href=\"", f);
    put_href(f, e->name);
    fputs(e->dir ? "/\">" : "\">", f);
    put_text(f, e->name);
    fputs(e->dir ? "/</a></td><td>-</td><td>" : "</a></td><td>", f);
    if (!e->dir)
        fprintf(f, "%" PRIu64 "</td><td>", e->size);
    struct tm tm;
    char when[32] = "";
    if (gmtime_r(&e->mtime, &tm))
        strftime(when, sizeof(when), "%Y-%m-%d %H:%M", &tm);
    fprintf(f, "%s</td></tr>\n", when);
}

int sws_static_listing(int rootfd, const char *rel, sws_symlinks symlinks, bool fallback,
                       bool dotfiles, char **out, size_t *len) {
    int fd = sws_static_open(rootfd, rel, symlinks, fallback);
    if (fd < 0)
        return fd;
    DIR *d = fdopendir(fd);
    if (!d) {
        int rc = -errno; /* ENOTDIR: a file */
        close(fd);
        return rc;
    }
    entry *v = NULL;
    size_t n = 0, cap = 0, more = 0;
    int rc = 0;
    struct dirent *de;
    while (rc == 0 && (errno = 0, de = readdir(d)) != NULL) {
        const char *name = de->d_name;
        if (name[0] == '.' && (!dotfiles || !name[1] || (name[1] == '.' && !name[2])))
            continue; /* ".", "..", and dotfiles unless they are served */
        struct stat sb;
        if (fstatat(dirfd(d), name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
            continue; /* gone since readdir */
        if (S_ISLNK(sb.st_mode) && link_stat(rootfd, rel, name, symlinks, fallback, &sb) < 0)
            continue;
        if (!S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode))
            continue; /* a FIFO, a socket, a device: never served */
        if (n == SWS_LISTING_MAX) {
            more++;
            continue;
        }
        if (n == cap) {
            size_t c2 = cap ? cap * 2 : 64;
            entry *v2 = realloc(v, c2 * sizeof(*v));
            if (!v2) {
                rc = -ENOMEM;
                break;
            }
            v = v2;
            cap = c2;
        }
        v[n] = (entry){.name = strdup(name),
                       .dir = S_ISDIR(sb.st_mode),
                       .size = (uint64_t)sb.st_size,
                       .mtime = sb.st_mtime};
        if (!v[n].name)
            rc = -ENOMEM;
        else
            n++;
    }
    if (rc == 0 && errno)
        rc = -errno;
    closedir(d);
    FILE *f = rc == 0 ? open_memstream(out, len) : NULL;
    if (rc == 0 && !f)
        rc = -ENOMEM;
    if (f) {
        if (n) /* v is NULL for an empty directory */
            qsort(v, n, sizeof(*v), by_kind_then_name);
        /* The title is the directory's path below the root, as a name. */
        char title[4096];
        snprintf(title, sizeof(title), "/%s%s", rel, *rel ? "/" : "");
        fputs("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Index of ", f);
        put_text(f, title);
        fputs("</title></head>\n<body><h1>Index of ", f);
        put_text(f, title);
        fputs("</h1>\n<table>\n<tr><th>Name</th><th>Size</th><th>Modified (UTC)</th></tr>\n", f);
        if (*rel)
            fputs("<tr><td><a href=\"../\">../</a></td><td>-</td><td></td></tr>\n", f);
        for (size_t i = 0; i < n; i++)
            put_row(f, &v[i]);
        fputs("</table>\n", f);
        if (more)
            fprintf(f, "<p>%zu more entries are not listed (the first %d read are).</p>\n", more,
                    SWS_LISTING_MAX);
        fputs("</body></html>\n", f);
        if (fclose(f) != 0) {
            rc = -ENOMEM;
            free(*out);
            *out = NULL;
        }
    }
    for (size_t i = 0; i < n; i++)
        free(v[i].name);
    free(v);
    return rc;
}
