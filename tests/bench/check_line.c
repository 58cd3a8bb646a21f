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

/* A --long-lived line: K connections placed somewhere, every request counted
 * on some loop, and the imbalance index what per_loop says it is. With
 * target, the index must be within 1.1x of the best split there is. */
static int check_long_lived(json_t *o, const char *route, long loops, long k, int target) {
    CHECK(strcmp(get_str(o, "mode"), "long-lived") == 0, "mode is not long-lived");
    CHECK(strcmp(get_str(o, "route"), route) == 0, "route is not %s", route);
    CHECK(get_int(o, "loops") == loops, "loops is not %ld", loops);
    CHECK(get_int(o, "long_lived") == k, "long_lived is not %ld", k);
    json_t *per = json_object_get(o, "per_loop");
    json_t *pc = json_object_get(o, "per_loop_connections");
    CHECK(json_is_array(per) && (long)json_array_size(per) == loops,
          "per_loop is not an array of %ld counts", loops);
    CHECK(json_is_array(pc) && (long)json_array_size(pc) == loops,
          "per_loop_connections is not an array of %ld counts", loops);
    json_int_t sum = 0, mx = 0, csum = 0;
    size_t i;
    json_t *v;
    json_array_foreach(per, i, v) {
        json_int_t c = json_integer_value(v);
        sum += c;
        mx = c > mx ? c : mx;
    }
    json_array_foreach(pc, i, v) csum += json_integer_value(v);
    CHECK(csum == k, "per_loop_connections sums to %lld, not %ld", (long long)csum, k);
    CHECK(sum > 0 && sum == get_int(o, "requests"), "per_loop does not sum to requests");
    json_t *imb = json_object_get(o, "imbalance");
    json_t *best = json_object_get(o, "best_imbalance");
    CHECK(json_is_number(imb) && json_is_number(best), "imbalance or best_imbalance missing");
    double mean = (double)sum / (double)loops;
    double want = mean > 0 ? (double)mx / mean : 0;
    CHECK(json_number_value(imb) > want - 1e-6 && json_number_value(imb) < want + 1e-6,
          "imbalance %f is not max/mean %f", json_number_value(imb), want);
    double b = (double)((k + loops - 1) / loops) / ((double)k / (double)loops);
    if (b < 1)
        b = 1;
    CHECK(json_number_value(best) > b - 1e-6 && json_number_value(best) < b + 1e-6,
          "best_imbalance %f is not ceil(K/n)/(K/n) = %f", json_number_value(best), b);
    if (target)
        CHECK(json_number_value(imb) <= 1.1 * b + 1e-9,
              "imbalance %f is not within 1.1x of the best split %f", json_number_value(imb), b);
    json_t *rps = json_object_get(o, "requests_per_second");
    CHECK(json_is_number(rps) && json_number_value(rps) > 0, "requests_per_second not > 0");
    json_decref(o);
    return failures ? 1 : 0;
}

/* usage: check_line FILE ROUTE LOOPS CONNECTIONS [portable]
 *        check_line FILE ROUTE LOOPS long-lived K [target] */
int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: check_line FILE ROUTE LOOPS CONNECTIONS [portable]\n"
                        "       check_line FILE ROUTE LOOPS long-lived K [target]\n");
        return 2;
    }
    int long_lived = strcmp(argv[4], "long-lived") == 0;
    if (long_lived && argc < 6) {
        fprintf(stderr, "check_line: long-lived wants K\n");
        return 2;
    }
    const char *route = argv[2];
    long loops = atol(argv[3]);
    long conns = atol(argv[4]);
    int portable = !long_lived && argc > 5 && strcmp(argv[5], "portable") == 0;

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
    if (long_lived)
        return check_long_lived(o, route, loops, atol(argv[5]),
                                argc > 6 && strcmp(argv[6], "target") == 0);
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

    json_t *acc = json_object_get(o, "acceptors");
    long nacc = json_is_integer(acc) ? (long)json_integer_value(acc) : 1;
    if (strcmp(route, "handoff") == 0 && nacc > 1) {
        /* Several acceptors: each accepted some, together all, and fed only
         * its own loops; round-robin is exact within each subset. */
        json_t *pa = json_object_get(o, "per_acceptor");
        json_t *feeds = json_object_get(o, "feeds");
        CHECK(json_is_array(pa) && (long)json_array_size(pa) == nacc,
              "per_acceptor is not an array of %ld counts", nacc);
        CHECK(json_is_array(feeds) && (long)json_array_size(feeds) == nacc,
              "feeds is not an array of %ld subsets", nacc);
        json_t *pol = json_object_get(o, "policy");
        int rr = json_is_string(pol) && strcmp(json_string_value(pol), "rr") == 0;
        json_int_t asum = 0;
        long covered = 0;
        json_array_foreach(pa, i, v) {
            json_int_t c = json_integer_value(v);
            CHECK(c >= 1, "acceptor %zu accepted %lld, wants >= 1", i, (long long)c);
            asum += c;
            json_t *feed = json_array_get(feeds, i);
            json_int_t fsum = 0, fmn = -1, fmx = 0;
            size_t j;
            json_t *w;
            json_array_foreach(feed, j, w) {
                json_t *cnt = json_array_get(per, (size_t)json_integer_value(w));
                json_int_t x = json_integer_value(cnt);
                CHECK(json_is_integer(cnt), "feeds names loop %lld that is not in per_loop",
                      (long long)json_integer_value(w));
                fsum += x;
                fmn = fmn < 0 || x < fmn ? x : fmn;
                fmx = x > fmx ? x : fmx;
                covered++;
            }
            CHECK(fsum == c, "acceptor %zu accepted %lld but its loops served %lld", i,
                  (long long)c, (long long)fsum);
            if (rr)
                CHECK(fmx - fmn <= 1, "acceptor %zu's round-robin split [%lld..%lld] is not exact",
                      i, (long long)fmn, (long long)fmx);
        }
        CHECK(asum == conns, "per_acceptor sums to %lld, not %ld", (long long)asum, conns);
        CHECK(covered == loops, "feeds cover %ld loops, not %ld", covered, loops);
    } else if (strcmp(route, "handoff") == 0) {
        json_t *pol = json_object_get(o, "policy");
        if (json_is_string(pol) && strcmp(json_string_value(pol), "rr") == 0)
            CHECK(mx - mn <= 1, "handoff round-robin split [%lld..%lld] is not exact",
                  (long long)mn, (long long)mx);
    }
    json_decref(o);
    return failures ? 1 : 0;
}
