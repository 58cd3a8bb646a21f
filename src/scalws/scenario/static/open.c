/* Opening a normalised path below the root directory, and never outside it
 * unless the configuration says links may lead out. openat2(RESOLVE_BENEATH)
 * where the kernel has it (5.6+); otherwise a walk that opens one component at
 * a time with O_NOFOLLOW and expands each link itself under the same rules. */
#include "sws_static.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* O_NONBLOCK: a FIFO in the tree must not block the open (it is then refused
 * as not a regular file by the caller's fstat). */
#define FILE_FLAGS (O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
#define MAX_LINKS 40 /* the kernel's own limit */
#define MAX_DEPTH 64

static atomic_int have_openat2 = 0; /* 0 unknown, 1 yes, -1 no */

static int sys_openat2(int dirfd, const char *path, uint64_t resolve) {
    struct open_how how = {.flags = FILE_FLAGS, .resolve = resolve};
    long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
    return fd < 0 ? -errno : (int)fd;
}

bool sws_static_have_openat2(void) {
    int h = atomic_load_explicit(&have_openat2, memory_order_relaxed);
    if (h == 0) {
        int fd = sys_openat2(AT_FDCWD, "/", RESOLVE_NO_MAGICLINKS);
        h = fd == -ENOSYS || fd == -EPERM ? -1 : 1; /* EPERM: a seccomp filter */
        if (fd >= 0)
            close(fd);
        atomic_store_explicit(&have_openat2, h, memory_order_relaxed);
    }
    return h > 0;
}

/* The walk. dirs[0] is rootfd (not ours); dirs[1..d] are O_PATH descriptors of
 * the directories below it on the way, so that ".." inside a link pops one and
 * can never climb past dirs[0]. */
static int walk(int rootfd, const char *rel, bool owner) {
    char buf[2][4096];
    int cur = 0, links = 0, d = 0, rc;
    int dirs[MAX_DEPTH + 1];
    dirs[0] = rootfd;
    size_t n = strlen(rel);
    if (n >= sizeof(buf[0]))
        return -ENAMETOOLONG;
    memcpy(buf[cur], rel, n + 1);
    char *p = buf[cur];
    for (;;) {
        while (*p == '/')
            p++;
        if (*p == '\0') {
            /* The path ended on a directory ("" or a link to one): open it. */
            rc = openat(dirs[d], ".", FILE_FLAGS);
            rc = rc < 0 ? -errno : rc;
            break;
        }
        char *name = p;
        while (*p && *p != '/')
            p++;
        bool had_sep = *p == '/';
        if (had_sep)
            *p++ = '\0';
        while (*p == '/')
            p++;
        bool last = *p == '\0';
        if (strcmp(name, ".") == 0) {
            if (last) {
                rc = openat(dirs[d], ".", FILE_FLAGS);
                rc = rc < 0 ? -errno : rc;
                break;
            }
            continue;
        }
        if (strcmp(name, "..") == 0) {
            if (d == 0) {
                rc = -EXDEV; /* a link climbed out of the root */
                break;
            }
            close(dirs[d--]);
            if (last) {
                rc = openat(dirs[d], ".", FILE_FLAGS);
                rc = rc < 0 ? -errno : rc;
                break;
            }
            continue;
        }
        struct stat lst;
        if (fstatat(dirs[d], name, &lst, AT_SYMLINK_NOFOLLOW) < 0) {
            rc = -errno;
            break;
        }
        if (S_ISLNK(lst.st_mode)) {
            if (++links > MAX_LINKS) {
                rc = -ELOOP;
                break;
            }
            if (owner) {
                /* A target that does not resolve is left to the walk, which
                 * says ENOENT or EXDEV for it as for any other link. */
                struct stat tst;
                if (fstatat(dirs[d], name, &tst, 0) == 0 && tst.st_uid != lst.st_uid) {
                    rc = -EXDEV;
                    break;
                }
            }
            char *nb = buf[cur ^ 1];
            ssize_t ln = readlinkat(dirs[d], name, nb, sizeof(buf[0]) - 1);
            if (ln < 0) {
                rc = -errno;
                break;
            }
            if (ln == 0 || nb[0] == '/') {
                rc = -EXDEV; /* absolute: leaves the root, as RESOLVE_BENEATH says */
                break;
            }
            /* The link's text, then what followed the link's name. */
            size_t rl = strlen(p);
            if ((size_t)ln + 1 + rl + 1 > sizeof(buf[0])) {
                rc = -ENAMETOOLONG;
                break;
            }
            nb[ln] = had_sep ? '/' : '\0';
            memcpy(nb + ln + 1, p, rl + 1);
            if (had_sep && rl == 0)
                nb[ln + 1] = '\0'; /* "link/": the target, as a directory */
            cur ^= 1;
            p = buf[cur];
            continue;
        }
        if (last && !had_sep) {
            rc = openat(dirs[d], name, FILE_FLAGS | O_NOFOLLOW);
            rc = rc < 0 ? -errno : rc;
            break;
        }
        if (d == MAX_DEPTH) {
            rc = -ENAMETOOLONG;
            break;
        }
        int fd = openat(dirs[d], name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            rc = -errno;
            break;
        }
        dirs[++d] = fd;
        if (last) {
            rc = openat(fd, ".", FILE_FLAGS);
            rc = rc < 0 ? -errno : rc;
            break;
        }
    }
    while (d > 0)
        close(dirs[d--]);
    /* A link swapped in between fstatat and openat is refused, not followed. */
    return rc;
}

int sws_static_open(int rootfd, const char *rel, sws_symlinks symlinks, bool fallback) {
    const char *path = rel[0] ? rel : ".";
    if (symlinks == SWS_SYMLINKS_ON) {
        /* rel has no ".." (sws_static_path), so only a link can lead out. */
        int fd = openat(rootfd, path, FILE_FLAGS);
        return fd < 0 ? -errno : fd;
    }
    if (symlinks == SWS_SYMLINKS_OFF && !fallback && sws_static_have_openat2())
        return sys_openat2(rootfd, path, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS);
    return walk(rootfd, rel, symlinks == SWS_SYMLINKS_OWNER);
}
