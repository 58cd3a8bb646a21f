/* Directory listings: hostile names escaped in text and percent-encoded in
 * links, directories first and names sorted, dotfiles only when asked, what
 * is neither a file nor a directory left out, and links under the serving
 * rule (one leaving the root is not listed: its size would leak). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sws_static.h"

static char base[512];
static int rootfd = -1;

static void put(const char *rel) {
    char p[1024];
    snprintf(p, sizeof(p), "%s/root/%s", base, rel);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("12345", f);
    fclose(f);
}

static int setup(void **state) {
    (void)state;
    const char *tmp = getenv("SWS_TEST_TMP");
    char p[1024];
    snprintf(base, sizeof(base), "%s/static_listing.XXXXXX", tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(base));
    snprintf(p, sizeof(p), "%s/root", base);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof(p), "%s/root/zdir", base);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof(p), "%s/root/.git", base);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof(p), "%s/root/fifo", base);
    assert_int_equal(mkfifo(p, 0644), 0);
    snprintf(p, sizeof(p), "%s/root/out", base);
    assert_int_equal(symlink("/etc/passwd", p), 0);
    snprintf(p, sizeof(p), "%s/root/in", base);
    assert_int_equal(symlink("b.txt", p), 0);
    put("<img src=x onerror=alert(1)>");
    put("q\"uote");
    put("b.txt");
    put("\xc3\xa9t\xc3\xa9");      /* "été", valid UTF-8: kept */
    put("\xc0\xaf-overlong");      /* an overlong '/': not UTF-8 */
    put("\xed\xa0\x80-surrogate"); /* a surrogate: not UTF-8 */
    put(".env");
    snprintf(p, sizeof(p), "%s/root", base);
    rootfd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_true(rootfd >= 0);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    close(rootfd);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
    return system(cmd) == 0 ? 0 : -1;
}

static char *listing(bool dotfiles) {
    char *page = NULL;
    size_t len = 0;
    assert_int_equal(sws_static_listing(rootfd, "", SWS_SYMLINKS_OFF, false, dotfiles, &page, &len),
                     0);
    assert_int_equal(strlen(page), len);
    return page;
}

static void escapes_and_sorts(void **state) {
    (void)state;
    char *page = listing(false);
    static const char *const want[] = {
        "href=\"zdir/\">zdir/</a>",
        "href=\"%3Cimg%20src%3Dx%20onerror%3Dalert%281%29%3E\">&lt;img src=x "
        "onerror=alert(1)&gt;</a>",
        "href=\"q%22uote\">q&quot;uote</a>",
        "href=\"%C3%A9t%C3%A9\">\xc3\xa9t\xc3\xa9</a>",
        ">&#xFFFD;&#xFFFD;-overlong</a>",
        ">&#xFFFD;&#xFFFD;&#xFFFD;-surrogate</a>",
        "href=\"in\">in</a></td><td>5</td>", /* a link inside: its target's size */
        "<title>Index of /</title>",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (!strstr(page, want[i]))
            fail_msg("no '%s' in:\n%s", want[i], page);
    static const char *const never[] = {"<img", "q\"uote", ".env",        ".git",
                                        "fifo", "\"out\"", "href=\"../\""};
    for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++)
        if (strstr(page, never[i]))
            fail_msg("'%s' in:\n%s", never[i], page);
    /* The directory before every file; files in byte order. */
    const char *d = strstr(page, "zdir/"), *a = strstr(page, "%3Cimg"), *b = strstr(page, "b.txt"),
               *q = strstr(page, "q%22uote");
    assert_true(d && a && b && q && d < a && a < b && b < q);
    free(page);
}

static void dotfiles_when_asked(void **state) {
    (void)state;
    char *page = listing(true);
    assert_non_null(strstr(page, "href=\".env\""));
    assert_non_null(strstr(page, "href=\".git/\""));
    assert_null(strstr(page, "href=\".\""));
    assert_null(strstr(page, "href=\"..\""));
    free(page);
}

static void not_a_directory(void **state) {
    (void)state;
    char *page = NULL;
    size_t len;
    assert_int_equal(
        sws_static_listing(rootfd, "b.txt", SWS_SYMLINKS_OFF, false, false, &page, &len), -ENOTDIR);
    assert_int_equal(
        sws_static_listing(rootfd, "nope", SWS_SYMLINKS_OFF, false, false, &page, &len), -ENOENT);
    assert_null(page);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(escapes_and_sorts),
        cmocka_unit_test(dotfiles_when_asked),
        cmocka_unit_test(not_a_directory),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
