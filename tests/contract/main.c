/* Runs the contract tests on one backend: `contract BACKEND [TEST]`. A backend
 * this machine cannot run is reported as skipped with the kernel's reason
 * (exit 77, which ctest shows as "Skipped"), never silently absent. */
#include "harness.h"
#include "tests.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s epoll|uring [TEST]\n", argv[0]);
        return 2;
    }
    if (strcmp(argv[1], "epoll") == 0)
        test_backend = TL_BACKEND_EPOLL;
    else if (strcmp(argv[1], "uring") == 0)
        test_backend = TL_BACKEND_URING;
    else {
        fprintf(stderr, "unknown backend %s\n", argv[1]);
        return 2;
    }
    tl_loop *probe;
    tl_loop_options o = {.backend = test_backend};
    int err = tl_loop_new(&probe, &o);
    if (err < 0) {
        printf("SKIP: the %s backend cannot run here: %s\n", argv[1], tl_strerror(err));
        return 77;
    }
    tl_loop_free(probe);
    if (argc > 2)
        cmocka_set_test_filter(argv[2]);
    int failed = 0;
    failed += _cmocka_run_group_tests("accept_routes", accept_route_tests_p,
                                      accept_route_test_count, NULL, NULL);
    failed +=
        _cmocka_run_group_tests("contracts", contract_tests_p, contract_test_count, NULL, NULL);
    failed += _cmocka_run_group_tests("direct", direct_tests_p, direct_test_count, NULL, NULL);
    failed += _cmocka_run_group_tests("udp", udp_tests_p, udp_test_count, NULL, NULL);
    failed +=
        _cmocka_run_group_tests("udp_steer", udp_steer_tests_p, udp_steer_test_count, NULL, NULL);
    failed +=
        _cmocka_run_group_tests("udp_pool", udp_pool_tests_p, udp_pool_test_count, NULL, NULL);
    return failed ? 1 : 0;
}
