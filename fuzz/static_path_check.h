/* What the static scenario's path normalisers (sws_static_path and
 * sws_static_path_plain) promise for any input, checked in one place by
 * fuzz_static_path on arbitrary bytes and by tests/static/test_static_path on
 * each of its cases: -EINVAL is the only refusal; a result is relative, has
 * no empty, "." or ".." segment and no NUL (so it never leaves the root), is
 * no longer than the input, and is a fixed point: normalised again (with its
 * leading '/') it is the same, with the same dotfile flag. For the decoding
 * normaliser only when the result holds no byte it would read as an escape or
 * the path's end ('%', '?', '#'). */
#ifndef SWS_STATIC_PATH_CHECK_H
#define SWS_STATIC_PATH_CHECK_H

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sws_static.h"

typedef int (*sws_path_normaliser)(const char *in, size_t len, char *out, unsigned *flags);

/* NULL when the result (rc, out, flags) of fn on in_len bytes keeps the
 * promises above, else which one it broke. */
static inline const char *static_path_broken(sws_path_normaliser fn, int rc, const char *out,
                                             unsigned flags, size_t in_len) {
    if (rc < 0)
        return rc == -EINVAL ? NULL : "refused with another error than -EINVAL";
    if ((size_t)rc > in_len || (int)strlen(out) != rc)
        return "longer than its input, or a NUL in it";
    if (rc > 0 && (out[0] == '/' || out[rc - 1] == '/'))
        return "a '/' at its start or end";
    for (int s = 0; s <= rc;) {
        int e = s;
        while (e < rc && out[e] != '/')
            e++;
        int len = e - s;
        if (len == 0 && rc > 0)
            return "an empty segment";
        if ((len == 1 && out[s] == '.') || (len == 2 && out[s] == '.' && out[s + 1] == '.'))
            return "a dot segment";
        s = e + 1;
    }
    if (fn == sws_static_path && (memchr(out, '%', (size_t)rc) || memchr(out, '?', (size_t)rc) ||
                                  memchr(out, '#', (size_t)rc)))
        return NULL; /* read again, these would be an escape or the path's end */
    char *again = malloc((size_t)rc + 2), *out2 = malloc((size_t)rc + 2);
    again[0] = '/';
    memcpy(again + 1, out, (size_t)rc);
    unsigned f2;
    int m = fn(again, (size_t)rc + 1, out2, &f2);
    bool same = m == rc && memcmp(out, out2, (size_t)rc) == 0 &&
                (f2 & SWS_PATH_DOTFILE) == (flags & SWS_PATH_DOTFILE);
    free(again);
    free(out2);
    return same ? NULL : "not a fixed point";
}

#endif
