/* Fuzz target for the static scenario's path normalisers: whatever the bytes,
 * the request's (sws_static_path) and try_files' for paths already decoded
 * (sws_static_path_plain) keep the promises static_path_check.h states: never
 * out of the root, and fixed points. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "static_path_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(sws_path_normaliser fn, const char *name, const uint8_t *data, size_t size,
                  char *out) {
    unsigned flags;
    int n = fn((const char *)data, size, out, &flags);
    const char *why = static_path_broken(fn, n, out, flags, size);
    if (why) {
        fprintf(stderr, "fuzz_static_path: %s: %s\n", name, why);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 4096)
        return 0;
    char *out = malloc(size + 1);
    check(sws_static_path, "sws_static_path", data, size, out);
    check(sws_static_path_plain, "sws_static_path_plain", data, size, out);
    free(out);
    return 0;
}
