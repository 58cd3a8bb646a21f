/* The request-path normaliser: decoding once, dot segments, merged slashes,
 * refusals (400) for a bad escape, a NUL and ".." above the root, and the
 * directory and dotfile flags. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "static_path_check.h" /* fuzz/: what every result must be */

typedef struct pcase {
    const char *in;
    int rc; /* -EINVAL, or the result's length */
    const char *out;
    unsigned flags;
} pcase;

/* Each case's result as written, and within what the fuzz target checks of
 * every input. */
static void check_cases(sws_path_normaliser fn, const pcase *cases, size_t n) {
    for (size_t i = 0; i < n; i++) {
        char out[256];
        unsigned flags = 99;
        int rc = fn(cases[i].in, strlen(cases[i].in), out, &flags);
        if (rc != cases[i].rc)
            fail_msg("%s: rc %d, want %d", cases[i].in, rc, cases[i].rc);
        const char *why = static_path_broken(fn, rc, out, flags, strlen(cases[i].in));
        if (why)
            fail_msg("%s: %s", cases[i].in, why);
        if (rc >= 0) {
            if (strcmp(out, cases[i].out) != 0)
                fail_msg("%s: \"%s\", want \"%s\"", cases[i].in, out, cases[i].out);
            if (flags != cases[i].flags)
                fail_msg("%s: flags %u, want %u", cases[i].in, flags, cases[i].flags);
        }
    }
}

static void normalises(void **state) {
    (void)state;
    static const pcase cases[] = {
        {"/", 0, "", SWS_PATH_DIR},
        {"/a", 1, "a", 0},
        {"/a/", 1, "a", SWS_PATH_DIR},
        {"/a/b/c.txt", 9, "a/b/c.txt", 0},
        {"//a///b", 3, "a/b", 0},
        {"/a/./b", 3, "a/b", 0},
        {"/a/.", 1, "a", SWS_PATH_DIR},
        {"/a/b/..", 1, "a", SWS_PATH_DIR},
        {"/a/b/../c", 3, "a/c", 0},
        {"/a/../../b", -EINVAL, NULL, 0},
        {"/..", -EINVAL, NULL, 0},
        {"/../etc/passwd", -EINVAL, NULL, 0},
        {"/%2e%2e/etc/passwd", -EINVAL, NULL, 0},
        {"/%2E%2E/x", -EINVAL, NULL, 0},
        {"/a/%2e%2e/b", 1, "b", 0},
        {"/a%2f..%2fb", 1, "b", 0}, /* %2F is a separator, as nginx */
        {"/a%2F%2E%2E%2F..%2F", -EINVAL, NULL, 0},
        {"/%252e%252e/x", 8, "%2e%2e/x", 0}, /* decoded once */
        {"/a%00b", -EINVAL, NULL, 0},
        {"/a%0", -EINVAL, NULL, 0},
        {"/a%zz", -EINVAL, NULL, 0},
        {"/a%", -EINVAL, NULL, 0},
        {"/a%20b", 3, "a b", 0},
        {"/a?x=../../", 1, "a", 0},
        {"/a#frag", 1, "a", 0},
        {"/?q", 0, "", SWS_PATH_DIR},
        {"/.git/config", 11, ".git/config", SWS_PATH_DOTFILE},
        {"/a/.htaccess", 11, "a/.htaccess", SWS_PATH_DOTFILE},
        {"/a/...", 5, "a/...", SWS_PATH_DOTFILE},
        {"/.git/../a", 1, "a", 0},
        {"/a..b", 4, "a..b", 0},
        {"a", -EINVAL, NULL, 0},
        {"", -EINVAL, NULL, 0},
        {"http://x/a", -EINVAL, NULL, 0},
        {"/a\\..\\b", 6, "a\\..\\b", 0}, /* backslash is a byte on Linux */
    };
    check_cases(sws_static_path, cases, sizeof(cases) / sizeof(cases[0]));
}

/* A NUL byte in the raw target (the parser lets none through, but this
 * function must not rely on it). */
static void raw_nul_refused(void **state) {
    (void)state;
    char out[16];
    unsigned flags;
    assert_int_equal(sws_static_path("/a\0b", 4, out, &flags), -EINVAL);
}

/* A path already decoded (try_files' candidates): no escape is read and '?'
 * and '#' are bytes of names, so nothing is decoded twice; the dot segments
 * and the refusals are the same. */
static void plain_does_not_decode(void **state) {
    (void)state;
    static const pcase cases[] = {
        {"/%2e%2e/x", 8, "%2e%2e/x", 0},
        {"/a%2f..%2fb", 10, "a%2f..%2fb", 0},
        {"/a?x=../../", 0, "", SWS_PATH_DIR}, /* "a?x=.." is a name, the last ".." drops it */
        {"/a#frag.html", 11, "a#frag.html", 0},
        {"/a/b/../c.html", 8, "a/c.html", 0},
        {"/docs//", 4, "docs", SWS_PATH_DIR},
        {"/..", -EINVAL, NULL, 0},
        {"/a/../../x", -EINVAL, NULL, 0},
        {"/.html", 5, ".html", SWS_PATH_DOTFILE},
        {"a", -EINVAL, NULL, 0},
    };
    check_cases(sws_static_path_plain, cases, sizeof(cases) / sizeof(cases[0]));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(normalises),
        cmocka_unit_test(raw_nul_refused),
        cmocka_unit_test(plain_does_not_decode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
