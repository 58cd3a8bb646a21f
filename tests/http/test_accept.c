/* Accept-Encoding (src/http/accept.c): the coding chosen for what clients
 * send (RFC 9110 12.5.3), q-values well-formed and not, "*" and identity. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "sws_accept.h"

#define BOTH (SWS_AE_GZIP | SWS_AE_BR)

static unsigned choose(const char *v, unsigned offered) {
    sws_ae q;
    sws_ae_parse(v, strlen(v), &q);
    return sws_ae_choose(&q, offered);
}

static void q_values(void **state) {
    (void)state;
    assert_int_equal(choose("gzip", BOTH), SWS_AE_GZIP);
    assert_int_equal(choose("x-gzip", BOTH), SWS_AE_GZIP);
    assert_int_equal(choose("GZIP", BOTH), SWS_AE_GZIP);
    assert_int_equal(choose("br", BOTH), SWS_AE_BR);
    assert_int_equal(choose("gzip, deflate, br", BOTH), SWS_AE_BR); /* a tie: br */
    assert_int_equal(choose("gzip, br", SWS_AE_GZIP), SWS_AE_GZIP); /* br not offered */
    assert_int_equal(choose("br;q=0.5, gzip", BOTH), SWS_AE_GZIP);
    assert_int_equal(choose("br;q=0.8, gzip;q=0.799", BOTH), SWS_AE_BR);
    assert_int_equal(choose("gzip;q=0.5,br;q=0.501", BOTH), SWS_AE_BR);
    assert_int_equal(choose("gzip ; q=1.000", BOTH), SWS_AE_GZIP);
    assert_int_equal(choose("gzip;Q=0.3", BOTH), SWS_AE_GZIP);
    assert_int_equal(choose("gzip;q=0", BOTH), 0);
    assert_int_equal(choose("gzip;q=0.000, br;q=0.", BOTH), 0);
    assert_int_equal(choose("br;q=0, gzip;q=0.001", BOTH), SWS_AE_GZIP);
    assert_int_equal(choose("gzip;level=1;q=0.2", BOTH), SWS_AE_GZIP); /* other parameters */
    assert_int_equal(choose("gzip;q=0.5, gzip;q=0", BOTH), 0);         /* the last one */
    assert_int_equal(choose("deflate, compress", BOTH), 0);
    assert_int_equal(choose("", BOTH), 0);
}

static void star_and_identity(void **state) {
    (void)state;
    assert_int_equal(choose("*", BOTH), SWS_AE_BR);
    assert_int_equal(choose("*", SWS_AE_GZIP), SWS_AE_GZIP);
    assert_int_equal(choose("*;q=0, gzip", BOTH), SWS_AE_GZIP);
    assert_int_equal(choose("br;q=0, *", BOTH), SWS_AE_GZIP);
    assert_int_equal(choose("*;q=0", BOTH), 0); /* nothing acceptable: identity anyway */
    assert_int_equal(choose("identity", BOTH), 0);
    assert_int_equal(choose("identity;q=0", BOTH), 0);
    assert_int_equal(choose("identity;q=0, gzip", BOTH), SWS_AE_GZIP);
    /* identity named with a higher q wins; with an equal one the coding does. */
    assert_int_equal(choose("br;q=0.5, identity", BOTH), 0);
    assert_int_equal(choose("gzip;q=0.5, identity;q=0.5", BOTH), SWS_AE_GZIP);
    assert_int_equal(choose("gzip;q=0.5, *;q=0.9", BOTH), SWS_AE_BR); /* br through "*" */
    assert_int_equal(choose("gzip;q=0.5, br;q=0, *;q=0.9", BOTH), 0); /* identity through "*" */
}

/* A malformed q counts as 0 (the coding is not sent); the rest is read on. */
static void malformed(void **state) {
    (void)state;
    assert_int_equal(choose("gzip;q=2", BOTH), 0);
    assert_int_equal(choose("gzip;q=1.5", BOTH), 0);
    assert_int_equal(choose("gzip;q=0.1234", BOTH), 0);
    assert_int_equal(choose("gzip;q=x", BOTH), 0);
    assert_int_equal(choose("gzip;q=", BOTH), 0);
    assert_int_equal(choose("gzip;q", BOTH), 0);
    assert_int_equal(choose("gzip;q=-1", BOTH), 0);
    assert_int_equal(choose("gzip;q=0.5x, br", BOTH), SWS_AE_BR);
    assert_int_equal(choose(",,, ;;, gzip , ,", BOTH), SWS_AE_GZIP);
    assert_int_equal(choose(";q=1, gzipx, brotli, g zip", BOTH), 0);
    assert_int_equal(choose("gzip;;;q=0.5", BOTH), SWS_AE_GZIP);
    /* Not NUL-terminated: nothing past len is read. */
    sws_ae q;
    sws_ae_parse("gzip;q=0.5, br", 10, &q);
    assert_int_equal(q.gzip, 500);
    assert_int_equal(q.br, -1);
}

static void acceptable(void **state) {
    (void)state;
    sws_ae q;
    sws_ae_parse("br;q=0.1, *;q=0", strlen("br;q=0.1, *;q=0"), &q);
    assert_int_equal(sws_ae_acceptable(&q, BOTH), SWS_AE_BR);
    sws_ae_parse("*", 1, &q);
    assert_int_equal(sws_ae_acceptable(&q, BOTH), BOTH);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(q_values),
        cmocka_unit_test(star_and_identity),
        cmocka_unit_test(malformed),
        cmocka_unit_test(acceptable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
