/* The contract test tables, one per file, run by main.c on one backend. */
#ifndef TL_TEST_TESTS_H
#define TL_TEST_TESTS_H
#include <stddef.h>
struct CMUnitTest;
extern const struct CMUnitTest *const accept_route_tests_p;
extern const size_t accept_route_test_count;
extern const struct CMUnitTest *const contract_tests_p;
extern const size_t contract_test_count;
extern const struct CMUnitTest *const direct_tests_p;
extern const size_t direct_test_count;
extern const struct CMUnitTest *const udp_tests_p;
extern const size_t udp_test_count;
extern const struct CMUnitTest *const udp_steer_tests_p;
extern const size_t udp_steer_test_count;
extern const struct CMUnitTest *const udp_pool_tests_p;
extern const size_t udp_pool_test_count;
#endif
