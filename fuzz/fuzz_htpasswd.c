/* Fuzz target for the htpasswd file reader (config/htpasswd.c): the input is
 * written to a memfd and loaded by path, as a file would be. What must hold:
 * a refused file says why; an accepted one has a user for each line that is
 * neither blank nor a comment, and each of those lines, read here on its own,
 * is "user:hash" with a hash of a form libcrypt computes slowly (bcrypt
 * $2y$/$2b$ of 60 characters, SHA-512 crypt $6$ with its 86), so that no
 * line is ever taken as a plaintext, MD5, SHA-1 or DES password. No password
 * is checked: a fuzzed bcrypt cost would take minutes. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_file.h"
#include "htpasswd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool crypt64(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '/';
}

static bool all_crypt64(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!crypt64(s[i]))
            return false;
    return true;
}

/* Whether h (n bytes) is a slow hash: the oracle, written apart from the
 * reader's checks. */
static bool slow_hash(const char *h, size_t n) {
    if (n == 60 && (memcmp(h, "$2y$", 4) == 0 || memcmp(h, "$2b$", 4) == 0))
        return h[4] >= '0' && h[4] <= '3' && h[5] >= '0' && h[5] <= '9' && h[6] == '$' &&
               all_crypt64(h + 7, 53);
    if (n >= 3 + 1 + 86 && memcmp(h, "$6$", 3) == 0) /* "$6$" [salt] "$" hash */
        return h[n - 87] == '$' && all_crypt64(h + n - 86, 86);
    return false;
}

/* The users an accepted file must have, or -1 when a line is no user:hash
 * of a slow hash (then the reader must have refused the file). */
static int users_of(const uint8_t *data, size_t size) {
    int users = 0;
    for (size_t at = 0; at < size;) {
        const uint8_t *nl = memchr(data + at, '\n', size - at);
        size_t n = nl ? (size_t)(nl - (data + at)) : size - at;
        const char *s = (const char *)data + at;
        at += n + 1;
        if (n && s[n - 1] == '\r')
            n--;
        if (n == 0 || s[0] == '#')
            continue;
        const char *colon = memchr(s, ':', n);
        if (!colon || colon == s || !slow_hash(colon + 1, n - (size_t)(colon + 1 - s)))
            return -1;
        users++;
    }
    return users;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_file("fuzz_htpasswd", data, size);
    char err[512] = "";
    sws_htpasswd *h = sws_htpasswd_load(path, err, sizeof err);
    int want = memchr(data, '\0', size) ? -1 : users_of(data, size);
    if (!h) {
        if (err[0] == '\0' || (want > 0 && !strstr(err, "out of memory")))
            abort(); /* refused without a reason, or a sound file refused */
        return 0;
    }
    if (want <= 0 || sws_htpasswd_count(h) != want) {
        fprintf(stderr, "fuzz_htpasswd: accepted %d users, want %d\n", sws_htpasswd_count(h), want);
        abort();
    }
    sws_htpasswd_free(h);
    return 0;
}
