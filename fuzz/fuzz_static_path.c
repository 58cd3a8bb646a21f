/* Fuzz target for the static scenario's path normaliser: whatever the bytes,
 * a result that is not refused is relative, has no empty, "." or ".." segment
 * and no NUL (so it never leaves the root), is no longer than the input, and
 * is a fixed point: normalising it again changes nothing (when it holds no
 * byte that would be read as an escape or the end of the path). The same for
 * sws_static_path_plain, the variant for paths already decoded. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sws_static.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const char *out, int n, size_t in_len) {
    if ((size_t)n > in_len || (int)strlen(out) != n)
        abort();
    if (n > 0 && (out[0] == '/' || out[n - 1] == '/'))
        abort();
    for (int s = 0; s <= n;) {
        int e = s;
        while (e < n && out[e] != '/')
            e++;
        int len = e - s;
        if (len == 0 && n > 0)
            abort(); /* an empty segment: "//" */
        if ((len == 1 && out[s] == '.') || (len == 2 && out[s] == '.' && out[s + 1] == '.'))
            abort();
        s = e + 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 4096)
        return 0;
    char *out = malloc(size + 1);
    unsigned flags;
    int n = sws_static_path((const char *)data, size, out, &flags);
    if (n >= 0) {
        check(out, n, size);
        if (!memchr(out, '%', (size_t)n) && !memchr(out, '?', (size_t)n) &&
            !memchr(out, '#', (size_t)n)) {
            char *again = malloc((size_t)n + 2), *out2 = malloc((size_t)n + 2);
            again[0] = '/';
            memcpy(again + 1, out, (size_t)n);
            unsigned f2;
            int m = sws_static_path(again, (size_t)n + 1, out2, &f2);
            if (m != n || memcmp(out, out2, (size_t)n) != 0 ||
                (f2 & SWS_PATH_DOTFILE) != (flags & SWS_PATH_DOTFILE))
                abort();
            free(again);
            free(out2);
        }
    } else if (n != -22) {
        abort(); /* -EINVAL is the only refusal */
    }
    /* The same bytes as an already decoded path (a try_files candidate): the
     * same invariant, and a fixed point without exception, since nothing in
     * it is read as an escape or an end. */
    n = sws_static_path_plain((const char *)data, size, out, &flags);
    if (n >= 0) {
        check(out, n, size);
        char *again = malloc((size_t)n + 2), *out2 = malloc((size_t)n + 2);
        again[0] = '/';
        memcpy(again + 1, out, (size_t)n);
        unsigned f2;
        int m = sws_static_path_plain(again, (size_t)n + 1, out2, &f2);
        if (m != n || memcmp(out, out2, (size_t)n) != 0 ||
            (f2 & SWS_PATH_DOTFILE) != (flags & SWS_PATH_DOTFILE))
            abort();
        free(again);
        free(out2);
    } else if (n != -22) {
        abort();
    }
    free(out);
    return 0;
}
