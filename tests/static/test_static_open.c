/* Opening below the root: a tree with links inside and out of the root, run
 * through openat2 (where the kernel has it) and through the fallback walk,
 * which must agree on every path, for follow_symlinks off, on and owner. */
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

static void put(const char *rel, const char *text) {
    char p[1024];
    snprintf(p, sizeof(p), "%s/%s", base, rel);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void dir(const char *rel) {
    char p[1024];
    snprintf(p, sizeof(p), "%s/%s", base, rel);
    assert_int_equal(mkdir(p, 0755), 0);
}

static void link_(const char *target, const char *rel) {
    char p[1024];
    snprintf(p, sizeof(p), "%s/%s", base, rel);
    assert_int_equal(symlink(target, p), 0);
}

static int setup(void **state) {
    (void)state;
    const char *tmp = getenv("SWS_TEST_TMP");
    snprintf(base, sizeof(base), "%s/static_open.XXXXXX", tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(base));
    /* base/root is the root; base/outside.txt is beside it. */
    put("outside.txt", "outside");
    dir("root");
    dir("root/sub");
    dir("root/sub/deep");
    put("root/a.txt", "a");
    put("root/sub/b.txt", "b");
    put("root/sub/deep/c.txt", "c");
    link_("a.txt", "root/in_link");          /* stays inside */
    link_("../a.txt", "root/sub/up_link");   /* climbs, still inside */
    link_("sub/deep", "root/dir_link");      /* a directory inside */
    link_("../outside.txt", "root/out_rel"); /* climbs out */
    link_("../../outside.txt", "root/sub/out_deep");
    link_("/etc/passwd", "root/out_abs"); /* absolute */
    link_("loop2", "root/loop1");
    link_("loop1", "root/loop2");
    link_("..", "root/sub/parent");   /* a link to .. inside */
    link_("../..", "root/sub/grand"); /* .. twice: out */
    link_("/proc/self/root/etc/passwd", "root/magic");
    return 0;
}

static int teardown(void **state) {
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
    return system(cmd) == 0 ? 0 : -1;
}

typedef struct ocase {
    const char *rel;
    int off; /* result for follow_symlinks = off: 1 opened (then content), else -errno */
    int on;  /* for on */
    const char *content;
} ocase;

static const ocase cases[] = {
    {"a.txt", 1, 1, "a"},
    {"sub/b.txt", 1, 1, "b"},
    {"sub/deep/c.txt", 1, 1, "c"},
    {"in_link", 1, 1, "a"},
    {"sub/up_link", 1, 1, "a"},
    {"dir_link/c.txt", 1, 1, "c"},
    {"sub/parent/a.txt", 1, 1, "a"},
    {"out_rel", -EXDEV, 1, "outside"},
    {"sub/out_deep", -EXDEV, 1, "outside"},
    {"out_abs", -EXDEV, 1, NULL},
    {"sub/grand/outside.txt", -EXDEV, 1, "outside"},
    {"loop1", -ELOOP, -ELOOP, NULL},
    {"missing", -ENOENT, -ENOENT, NULL},
    {"a.txt/x", -ENOTDIR, -ENOTDIR, NULL},
    {"sub", 1, 1, NULL},
    {"", 1, 1, NULL},
};

static void check(int rootfd, const ocase *c, sws_symlinks mode, bool fallback) {
    int want = mode == SWS_SYMLINKS_ON ? c->on : c->off;
    int fd = sws_static_open(rootfd, c->rel, mode, fallback);
    const char *how = fallback ? "walk" : "openat2";
    if (want == 1) {
        if (fd < 0)
            fail_msg("%s (%s, mode %d): %s", c->rel, how, mode, strerror(-fd));
        if (c->content) {
            char b[64] = {0};
            ssize_t n = read(fd, b, sizeof(b) - 1);
            if (n < 0 || strcmp(b, c->content) != 0)
                fail_msg("%s (%s): read \"%s\"", c->rel, how, b);
        }
        close(fd);
    } else {
        if (fd >= 0)
            close(fd);
        /* A magic or absolute link may be refused with either EXDEV or ELOOP
         * by openat2; we ask for EXDEV from the walk and accept both there. */
        if (fd != want)
            fail_msg("%s (%s, mode %d): %d (%s), want %d (%s)", c->rel, how, mode, fd,
                     fd < 0 ? strerror(-fd) : "opened", want, strerror(-want));
    }
}

static void open_beneath(void **state) {
    (void)state;
    char p[1024];
    snprintf(p, sizeof(p), "%s/root", base);
    int rootfd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_true(rootfd >= 0);
    bool have = sws_static_have_openat2();
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (have)
            check(rootfd, &cases[i], SWS_SYMLINKS_OFF, false);
        check(rootfd, &cases[i], SWS_SYMLINKS_OFF, true);
        check(rootfd, &cases[i], SWS_SYMLINKS_OWNER, true);
        if (strcmp(cases[i].rel, "out_abs") != 0) /* /etc/passwd: contents vary */
            check(rootfd, &cases[i], SWS_SYMLINKS_ON, false);
    }
    close(rootfd);
    if (!have)
        print_message("openat2 absent: only the fallback walk was tested\n");
}

/* The magic link (/proc/self/...) is absolute, so refused either way; with
 * openat2 RESOLVE_NO_MAGICLINKS refuses it before RESOLVE_BENEATH does. */
static void magic_link_refused(void **state) {
    (void)state;
    char p[1024];
    snprintf(p, sizeof(p), "%s/root", base);
    int rootfd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
    for (int fb = 0; fb < 2; fb++) {
        int fd = sws_static_open(rootfd, "magic", SWS_SYMLINKS_OFF, fb);
        if (fd >= 0)
            fail_msg("magic link opened (fallback %d)", fb);
        assert_true(fd == -EXDEV || fd == -ELOOP);
    }
    close(rootfd);
}

/* A FIFO in the tree must not block the open. */
static void fifo_does_not_block(void **state) {
    (void)state;
    char p[1024];
    snprintf(p, sizeof(p), "%s/root/fifo", base);
    assert_int_equal(mkfifo(p, 0644), 0);
    snprintf(p, sizeof(p), "%s/root", base);
    int rootfd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
    for (int fb = 0; fb < 2; fb++) {
        int fd = sws_static_open(rootfd, "fifo", SWS_SYMLINKS_OFF, fb);
        assert_true(fd >= 0);
        struct stat st;
        assert_int_equal(fstat(fd, &st), 0);
        assert_true(S_ISFIFO(st.st_mode));
        close(fd);
    }
    close(rootfd);
}

/* owner: a link whose owner is not its target's is refused (needs root to
 * chown a link; skipped otherwise). off follows the same link. */
static void owner_mismatch_refused(void **state) {
    (void)state;
    char p[1024];
    snprintf(p, sizeof(p), "%s/root/other_owner", base);
    assert_int_equal(symlink("a.txt", p), 0);
    if (lchown(p, 12345, 12345) < 0) {
        print_message("SKIP: lchown to another owner needs root: %s\n", strerror(errno));
        skip();
        return;
    }
    snprintf(p, sizeof(p), "%s/root", base);
    int rootfd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
    assert_int_equal(sws_static_open(rootfd, "other_owner", SWS_SYMLINKS_OWNER, true), -EXDEV);
    assert_int_equal(sws_static_open(rootfd, "in_link", SWS_SYMLINKS_OWNER, true) >= 0, 1);
    int fd = sws_static_open(rootfd, "other_owner", SWS_SYMLINKS_OFF, false);
    assert_true(fd >= 0);
    close(fd);
    close(rootfd);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(open_beneath),
        cmocka_unit_test(magic_link_refused),
        cmocka_unit_test(fifo_does_not_block),
        cmocka_unit_test(owner_mismatch_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
