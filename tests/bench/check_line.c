/* Checks one turnloop-bench JSON line (read from a file) against the harness's
 * invariants: the fields the seed and issue 5 require, per_loop summing to the
 * budget with every loop served, spurious wakeups per loop for the shared
 * routes, and an exact split for handoff round-robin. Exit 0 when all hold. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "check_line: ");                                                       \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static json_int_t get_int(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    CHECK(json_is_integer(v), "'%s' is missing or not an integer", key);
    return json_is_integer(v) ? json_integer_value(v) : -1;
}

static const char *get_str(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    CHECK(json_is_string(v), "'%s' is missing or not a string", key);
    return json_is_string(v) ? json_string_value(v) : "";
}

/* usage: check_line FILE ROUTE LOOPS CONNECTIONS [portable] */
int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: check_line FILE ROUTE LOOPS CONNECTIONS [portable]\n");
        return 2;
    }
    const char *route = argv[2];
    long loops = atol(argv[3]);
    long conns = atol(argv[4]);
    int portable = argc > 5 && strcmp(argv[5], "portable") == 0;

    FILE *f = fopen(argv[1], "r");
    if (!f) {
        perror("check_line: open");
        return 2;
    }
    char *line = NULL;
    size_t cap = 0;
    int lines = 0;
    char *first = NULL;
    while (getline(&line, &cap, f) >= 0) {
        if (lines++ == 0)
            first = strdup(line);
    }
    free(line);
    fclose(f);
    CHECK(lines == 1, "stdout has %d lines, wants exactly one", lines);
    if (!first)
        return 1;

    json_error_t err;
    json_t *o = json_loads(first, 0, &err);
    free(first);
    if (!json_is_object(o)) {
        fprintf(stderr, "check_line: not a JSON object: %s\n", err.text);
        return 1;
    }
    CHECK(strcmp(get_str(o, "route"), route) == 0, "route is not %s", route);
    const char *backend = get_str(o, "backend");
    CHECK(strcmp(backend, "epoll") == 0 || strcmp(backend, "uring") == 0,
          "backend '%s' is neither epoll nor uring", backend);
    CHECK(get_int(o, "loops") == loops, "loops is not %ld", loops);
    CHECK(get_int(o, "connections") == conns, "connections is not %ld", conns);
    CHECK(get_int(o, "clients") >= 1, "clients < 1");
    CHECK(get_int(o, "payload") >= 1, "payload < 1");
    json_t *cps = json_object_get(o, "connections_per_second");
    CHECK(json_is_number(cps) && json_number_value(cps) > 0, "connections_per_second not > 0");

    json_t *per = json_object_get(o, "per_loop");
    CHECK(json_is_array(per) && (long)json_array_size(per) == loops,
          "per_loop is not an array of %ld counts", loops);
    json_int_t sum = 0, mn = -1, mx = 0;
    size_t i;
    json_t *v;
    json_array_foreach(per, i, v) {
        json_int_t c = json_integer_value(v);
        CHECK(json_is_integer(v) && c >= 1, "loop %zu served %lld, wants >= 1", i, (long long)c);
        sum += c;
        mn = mn < 0 || c < mn ? c : mn;
        mx = c > mx ? c : mx;
    }
    CHECK(sum == conns, "per_loop sums to %lld, not %ld", (long long)sum, conns);

    const char *measure = get_str(o, "measure");
    CHECK(strcmp(measure, "elapsed_ns") == 0 || strcmp(measure, "instructions") == 0,
          "measure '%s' is neither elapsed_ns nor instructions", measure);
    CHECK(get_int(o, "elapsed_ns") > 0, "elapsed_ns not > 0");
    if (portable)
        CHECK(strcmp(measure, "elapsed_ns") == 0, "--portable must measure elapsed_ns");
    if (strcmp(measure, "instructions") == 0)
        CHECK(get_int(o, "instructions") > 0, "instructions not > 0");
    else if (!portable)
        CHECK(json_is_string(json_object_get(o, "measure_fallback")),
              "elapsed without --portable must say why in measure_fallback");

    int shared = strcmp(route, "exclusive") == 0 || strcmp(route, "herd") == 0;
    json_t *sp = json_object_get(o, "spurious_wakeups");
    if (shared)
        CHECK(json_is_array(sp) && (long)json_array_size(sp) == loops,
              "spurious_wakeups is not an array of %ld counts", loops);
    else
        CHECK(sp == NULL, "spurious_wakeups only belongs to exclusive and herd");

    if (strcmp(route, "handoff") == 0) {
        json_t *pol = json_object_get(o, "policy");
        if (json_is_string(pol) && strcmp(json_string_value(pol), "rr") == 0)
            CHECK(mx - mn <= 1, "handoff round-robin split [%lld..%lld] is not exact",
                  (long long)mn, (long long)mx);
    }
    json_decref(o);
    return failures ? 1 : 0;
}
