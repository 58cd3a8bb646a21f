/* The gate's pure parts: the address lists (CIDR parsing and matching, the
 * most specific of allow and deny), the rate format, the shared limiter
 * (GCRA rate and burst, connection counts, a full window) and the htpasswd
 * file (formats taken and refused, constant-time check). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <cmocka.h>
#include <errno.h>
#include <unistd.h>

#include "access_config.h"
#include "htpasswd.h"
#include "limiter.h"
#include "trusted.h"

static int addr(const char *text, uint8_t out[16]) {
    memset(out, 0, 16);
    return sws_addr_parse(text, out);
}

static bool allows(const char *allow, const char *deny, const char *who) {
    sws_acl a, d;
    char why[200];
    assert_int_equal(sws_acl_parse(&a, allow, why, sizeof why), 0);
    assert_int_equal(sws_acl_parse(&d, deny, why, sizeof why), 0);
    uint8_t x[16];
    int fam = addr(who, x);
    assert_true(fam);
    return sws_acl_allows(&a, &d, fam, x);
}

static void cidr_matching(void **st) {
    (void)st;
    sws_acl l;
    char why[200];
    uint8_t x[16];
    assert_int_equal(
        sws_acl_parse(&l, "10.0.0.0/8, 192.168.1.7, 2001:db8::/32, ::1", why, sizeof why), 0);
    assert_int_equal(l.n, 4);
    assert_int_equal(sws_acl_longest(&l, addr("10.200.3.4", x), x), 8);
    assert_int_equal(sws_acl_longest(&l, addr("11.0.0.1", x), x), -1);
    assert_int_equal(sws_acl_longest(&l, addr("192.168.1.7", x), x), 32);
    assert_int_equal(sws_acl_longest(&l, addr("192.168.1.8", x), x), -1);
    assert_int_equal(sws_acl_longest(&l, addr("2001:db8:ffff::1", x), x), 32);
    assert_int_equal(sws_acl_longest(&l, addr("2001:db9::1", x), x), -1);
    assert_int_equal(sws_acl_longest(&l, addr("::1", x), x), 128);
    assert_int_equal(sws_acl_longest(&l, addr("::2", x), x), -1);
    /* An IPv4-mapped IPv6 peer is the IPv4 address. */
    assert_int_equal(sws_acl_longest(&l, addr("::ffff:10.1.2.3", x), x), 8);
    /* Prefixes that do not end on a byte. */
    assert_int_equal(sws_acl_parse(&l, "172.16.0.0/12", why, sizeof why), 0);
    assert_int_equal(sws_acl_longest(&l, addr("172.31.255.255", x), x), 12);
    assert_int_equal(sws_acl_longest(&l, addr("172.32.0.0", x), x), -1);
    /* "all": both families. */
    assert_int_equal(sws_acl_parse(&l, "all", why, sizeof why), 0);
    assert_int_equal(sws_acl_longest(&l, addr("8.8.8.8", x), x), 0);
    assert_int_equal(sws_acl_longest(&l, addr("2a00::1", x), x), 0);
    char out[200];
    sws_acl_format(&l, out, sizeof out);
    assert_string_equal(out, "0.0.0.0/0, ::/0");
    assert_int_equal(sws_acl_parse(&l, "off", why, sizeof why), 0);
    assert_int_equal(l.n, 0);
}

static void cidr_refused(void **st) {
    (void)st;
    sws_acl l = {0};
    char why[200];
    const char *bad[] = {"10.0.0.0/33", "::/129",      "10.0.0.0/",   "10.0.0.0/-1",
                         "300.1.1.1",   "example.com", "10.0.0.0/8x", "1.2.3.4/8/8"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(sws_acl_parse(&l, bad[i], why, sizeof why), -EINVAL);
        assert_non_null(strstr(why, "bad address"));
    }
    char many[4096] = "";
    for (int i = 0; i <= SWS_ACL_MAX; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), "10.0.%d.0/24,", i);
    assert_int_equal(sws_acl_parse(&l, many, why, sizeof why), -EINVAL);
}

static void allow_deny_most_specific_wins(void **st) {
    (void)st;
    assert_true(allows("off", "off", "1.2.3.4"));
    assert_false(allows("10.0.0.0/8", "off", "1.2.3.4")); /* an allow list: the rest denied */
    assert_true(allows("10.0.0.0/8", "off", "10.9.9.9"));
    assert_false(allows("off", "10.0.0.0/8", "10.9.9.9"));
    assert_true(allows("off", "10.0.0.0/8", "11.0.0.1")); /* only a deny list: the rest allowed */
    /* nginx's "allow 10.1.2.3; deny 10.0.0.0/8; allow all" in either order. */
    assert_true(allows("10.1.2.3, all", "10.0.0.0/8", "10.1.2.3"));
    assert_false(allows("10.1.2.3, all", "10.0.0.0/8", "10.1.2.4"));
    assert_true(allows("10.1.2.3, all", "10.0.0.0/8", "192.0.2.1"));
    /* A tie is deny's. */
    assert_false(allows("10.0.0.0/8", "10.0.0.0/8", "10.0.0.1"));
    assert_true(allows("::1", "off", "::1"));
    assert_false(allows("::1", "off", "127.0.0.1"));
    assert_false(allows("off", "2001:db8::/32", "2001:db8::5"));
}

static void rate_values(void **st) {
    (void)st;
    sws_access_config a = {0};
    char why[200], out[64];
    assert_int_equal(sws_rate_parse(&a, "10r/s", why, sizeof why), 0);
    assert_int_equal(a.rate_us, 100000);
    sws_rate_format(&a, out, sizeof out);
    assert_string_equal(out, "10r/s");
    assert_int_equal(sws_rate_parse(&a, "30r/m", why, sizeof why), 0);
    assert_int_equal(a.rate_us, 2000000);
    sws_rate_format(&a, out, sizeof out);
    assert_string_equal(out, "30r/m");
    assert_int_equal(sws_rate_parse(&a, "off", why, sizeof why), 0);
    assert_int_equal(a.rate_us, 0);
    const char *bad[] = {"10", "10r/h", "0r/s", "-1r/s", "r/s", "10 r/s", "2000000r/s"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(sws_rate_parse(&a, bad[i], why, sizeof why), -EINVAL);
}

static uint64_t key(sws_limiter *l, const char *who, uint32_t route) {
    uint8_t x[16];
    int fam = addr(who, x);
    return sws_limit_key(l, fam, x, route);
}

static void gcra_rate_and_burst(void **st) {
    (void)st;
    sws_limiter *l = sws_limiter_new();
    assert_non_null(l);
    uint64_t k = key(l, "192.0.2.1", 0), t = 1000000000; /* 10 r/s, burst 3 */
    for (int i = 0; i < 4; i++)
        assert_int_equal(sws_limit_rate(l, k, t, 100000, 3), 0);
    uint64_t wait = sws_limit_rate(l, k, t, 100000, 3);
    assert_int_equal(wait, 100000); /* the next one is owed in one interval */
    assert_int_equal(sws_limit_rate(l, k, t + 99999, 100000, 3), 1);
    assert_int_equal(sws_limit_rate(l, k, t + 100000, 100000, 3), 0);
    /* Held to the rate: one per interval, whatever is asked in between. */
    int passed = 0;
    for (uint64_t now = t + 100001; now < t + 10200000; now += 10000)
        passed += sws_limit_rate(l, k, now, 100000, 3) == 0;
    assert_int_equal(passed, 100);
    /* Another address, and the same one on another route, are not touched. */
    assert_int_equal(sws_limit_rate(l, key(l, "192.0.2.2", 0), t + 10200000, 100000, 0), 0);
    assert_int_equal(sws_limit_rate(l, key(l, "192.0.2.1", 1), t + 10200000, 100000, 0), 0);
    /* An idle client's entry is worth a fresh burst. */
    for (int i = 0; i < 4; i++)
        assert_int_equal(sws_limit_rate(l, k, t + 60000000, 100000, 3), 0);
    assert_true(sws_limit_rate(l, k, t + 60000000, 100000, 3) > 0);
    /* Across the wrap of the 40-bit clock. */
    uint64_t wrap = (UINT64_C(1) << 40) - 50000;
    uint64_t k2 = key(l, "192.0.2.3", 0);
    assert_int_equal(sws_limit_rate(l, k2, wrap, 100000, 0), 0);
    assert_true(sws_limit_rate(l, k2, wrap + 60000, 100000, 0) > 0);
    assert_int_equal(sws_limit_rate(l, k2, wrap + 100000, 100000, 0), 0);
    free(l);
}

static void full_window_evicts_the_longest_idle(void **st) {
    (void)st;
    sws_limiter *l = sws_limiter_new();
    /* Three times more clients than the table holds, each within its rate:
     * a new one takes the slot of the one idle longest, so each passes;
     * memory stays the table's. A key whose 24-bit tag meets another's in
     * its window shares that one's entry: one lookup in ~2 million with
     * every window full (doc/limits.md), so a few of 196608 at most. */
    uint64_t t = 5000000;
    uint32_t refused = 0;
    for (uint32_t i = 0; i < 3 * SWS_LIMIT_SLOTS; i++)
        refused += sws_limit_rate(l, sws_limit_key(l, 2, (uint8_t *)&i, 7), t + i, 1000000, 0) != 0;
    assert_true(refused <= 5);
    free(l);
}

static void connection_counts(void **st) {
    (void)st;
    sws_limiter *l = sws_limiter_new();
    uint64_t a = key(l, "198.51.100.1", UINT32_MAX), b = key(l, "198.51.100.2", UINT32_MAX);
    uint32_t at_a = 0, at_b = 0, at2 = 0;
    assert_int_equal(sws_limit_conn_count(l, a, 0), 0);
    assert_int_equal(sws_limit_conn_open(l, a, &at_a), 1);
    assert_int_equal(sws_limit_conn_open(l, a, &at2), 2);
    assert_int_equal(at2, at_a); /* one count per address */
    assert_int_equal(sws_limit_conn_open(l, b, &at_b), 1);
    assert_int_equal(sws_limit_conn_count(l, a, at_a), 2);
    assert_int_equal(sws_limit_conn_count(l, a, at_a + 3), 2); /* a stale place: looked for */
    sws_limit_conn_close(l, a);
    assert_int_equal(sws_limit_conn_count(l, a, at_a), 1);
    sws_limit_conn_close(l, a);
    assert_int_equal(sws_limit_conn_count(l, a, at_a), 0);
    assert_int_equal(sws_limit_conn_count(l, b, at_b), 1);
    /* A window full of other addresses' open connections: not counted. */
    sws_limiter *m = sws_limiter_new();
    uint64_t home = 12345;
    uint32_t at;
    for (int i = 0; i < SWS_LIMIT_PROBE; i++)
        assert_int_equal(sws_limit_conn_open(m, home | (uint64_t)(i + 1) << 32, &at), 1);
    assert_int_equal(sws_limit_conn_open(m, home | (uint64_t)100 << 32, &at), 0);
    sws_limit_conn_close(m, home | (uint64_t)1 << 32); /* a slot frees: taken again */
    assert_int_equal(sws_limit_conn_open(m, home | (uint64_t)100 << 32, &at), 1);
    free(l);
    free(m);
}

static const char *write_file(const char *text) {
    static char path[64];
    strcpy(path, "/tmp/test_limits.XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

/* "pw" hashed: bcrypt at cost 4 and SHA-512 crypt (crypt(3) made them). */
#define BCRYPT_PW "$2y$04$JINoL6EYC1ZjssJyRXe2KeMjHSVr9qDhzdqsPEj3zzYaesHNMuJrS"
#define SHA512_HUNTER2                                                                             \
    "$6$1Yx8C.lh2Ui8B9we$yJK.SMy0U5Y64oSGyTUbBt3FkrYjL1DmNJ7AlUjy/k4w7i8Lg4Ns5.OuCK9Kz9Ma4p3x1GM"  \
    "dF5C9WpQIU2A031"

static void htpasswd_formats(void **st) {
    (void)st;
    char err[400];
    struct crypt_data *cd = malloc(sizeof *cd);
    const char *p = write_file("# users\nalice:" BCRYPT_PW "\r\n\nbob:" SHA512_HUNTER2 "\n");
    sws_htpasswd *h = sws_htpasswd_load(p, err, sizeof err);
    assert_non_null(h);
    assert_int_equal(sws_htpasswd_count(h), 2);
    assert_true(sws_htpasswd_check(h, "alice", 5, "secret", 6, cd));
    assert_false(sws_htpasswd_check(h, "alice", 5, "secreT", 6, cd));
    assert_false(sws_htpasswd_check(h, "alice", 5, "secret\0x", 8, cd));
    assert_true(sws_htpasswd_check(h, "bob", 3, "hunter2", 7, cd));
    assert_false(sws_htpasswd_check(h, "bob", 3, "secret", 6, cd));
    assert_false(sws_htpasswd_check(h, "carol", 5, "secret", 6, cd));
    assert_false(sws_htpasswd_check(h, "alic", 4, "secret", 6, cd));
    uint64_t gen = sws_htpasswd_gen(h);
    sws_htpasswd_free(h);
    h = sws_htpasswd_load(p, err, sizeof err);
    assert_true(sws_htpasswd_gen(h) != gen);
    sws_htpasswd_free(h);
    unlink(p);
    struct {
        const char *text, *why;
    } bad[] = {
        {"alice:secret\n", "plaintext"},
        {"alice:$apr1$abc$0123456789012345678901\n", "MD5"},
        {"alice:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\n", "SHA-1"},
        {"alice:$2y$04$short\n", "malformed bcrypt"},
        {"alice:$6$salt$short\n", "malformed SHA-512"},
        {"no colon here\n", "want user:hash"},
        {":" BCRYPT_PW "\n", "want user:hash"},
        {"# nothing\n", "no users"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        p = write_file(bad[i].text);
        assert_null(sws_htpasswd_load(p, err, sizeof err));
        assert_non_null(strstr(err, bad[i].why));
        assert_non_null(strstr(err, p)); /* the file is named, and the line */
        unlink(p);
    }
    assert_null(sws_htpasswd_load("/nonexistent/htpasswd", err, sizeof err));
    assert_non_null(strstr(err, "No such file"));
    free(cd);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cidr_matching),
        cmocka_unit_test(cidr_refused),
        cmocka_unit_test(allow_deny_most_specific_wins),
        cmocka_unit_test(rate_values),
        cmocka_unit_test(gcra_rate_and_burst),
        cmocka_unit_test(full_window_evicts_the_longest_idle),
        cmocka_unit_test(connection_counts),
        cmocka_unit_test(htpasswd_formats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
