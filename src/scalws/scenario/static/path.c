/* The request-path normaliser: the one place a target becomes a file name.
 * Invariant (fuzz/fuzz_static_path.c checks it on every input): the result is
 * relative, has no empty, "." or ".." segment and no NUL, so that opening it
 * below the root can only leave the root through a symbolic link. */
#include "sws_static.h"

#include <errno.h>

static int hex(unsigned char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    c |= 0x20;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* decode: a request target (%-escapes decoded once, '?' or '#' ends the
 * path); else a path already decoded (try_files' candidates), whose every
 * byte is a byte of a name. */
static int normalise(const char *target, size_t len, char *out, unsigned *flags, bool decode) {
    *flags = 0;
    if (len == 0 || target[0] != '/')
        return -EINVAL;
    size_t o = 0;   /* bytes of out */
    size_t seg = 0; /* where the current segment starts in out */
    for (size_t i = 1;; i++) {
        int c;
        bool end = i >= len || (decode && (target[i] == '?' || target[i] == '#'));
        if (end) {
            c = '/';
        } else if (decode && target[i] == '%') {
            int h = i + 2 < len ? hex((unsigned char)target[i + 1]) : -1;
            int l = h >= 0 ? hex((unsigned char)target[i + 2]) : -1;
            if (l < 0)
                return -EINVAL;
            c = h << 4 | l;
            if (c == 0)
                return -EINVAL;
            i += 2; /* decoded once: "%252e" is the three bytes "%2e" */
        } else {
            c = (unsigned char)target[i];
            if (c == 0)
                return -EINVAL;
        }
        if (c != '/') {
            out[o++] = (char)c;
            continue;
        }
        /* The segment out[seg, o) is over. An empty, "." or ".." last segment
         * names a directory: "/a/", "/a/." and "/a/b/.." all ask for "a/". */
        size_t n = o - seg;
        bool dir = true;
        if (n == 0) {
            /* "//": merged. */
        } else if (n == 1 && out[seg] == '.') {
            o = seg;
        } else if (n == 2 && out[seg] == '.' && out[seg + 1] == '.') {
            if (seg == 0)
                return -EINVAL; /* above the root, as nginx: 400 */
            /* Drop the segment before; out[seg - 1] is its '/'. */
            size_t k = seg - 1;
            while (k > 0 && out[k - 1] != '/')
                k--;
            o = seg = k;
        } else {
            out[o++] = '/';
            seg = o;
            dir = false;
        }
        if (end) {
            if (dir)
                *flags |= SWS_PATH_DIR;
            break;
        }
    }
    /* Every kept segment has a '/' after it: drop the last. */
    if (o > 0)
        o--;
    out[o] = '\0';
    /* Judged on the result: "/.git/../a" is "a", no dotfile. */
    for (size_t k = 0; k < o; k++)
        if (out[k] == '.' && (k == 0 || out[k - 1] == '/')) {
            *flags |= SWS_PATH_DOTFILE;
            break;
        }
    return (int)o;
}

int sws_static_path(const char *target, size_t len, char *out, unsigned *flags) {
    return normalise(target, len, out, flags, true);
}

int sws_static_path_plain(const char *path, size_t len, char *out, unsigned *flags) {
    return normalise(path, len, out, flags, false);
}
