/* Unit tests of routes (route.h): [route NAME] sections into a table, and a
 * request matched to its route by Host and path: exact and wildcard hosts,
 * case and port in Host, no Host, the absolute-form, exact path against the
 * longest prefix on a segment boundary; strip_prefix's view of the target;
 * and the config errors, each one line naming the route (and, for an overlap,
 * both routes) with file:line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka.h needs the four headers above first. */
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "route.h"
#include "test_ini.h"

static const char *write_ini(const char *text) {
    return test_write_ini("routes_test.ini", text);
}

static sws_config cfg;

/* Builds cfg from text: 0, or the error with its line in err. */
static int build(const char *text, char *err, size_t len) {
    sws_cli cli = {.config = write_ini(text)};
    err[0] = '\0';
    return sws_config_build(&cfg, &cli, err, len);
}

static const char routes_ini[] = "[route health]\n"          /* 1 */
                                 "path = /healthz\n"         /* 2 */
                                 "scenario = respond\n"      /* 3 */
                                 "body = ok\n"               /* 4 */
                                 "[route api]\n"             /* 5 */
                                 "path_prefix = /api\n"      /* 6 */
                                 "scenario = respond\n"      /* 7 */
                                 "strip_prefix = on\n"       /* 8 */
                                 "[route api-v2]\n"          /* 9 */
                                 "path_prefix = /api/v2/\n"  /* 10 */
                                 "scenario = respond\n"      /* 11 */
                                 "[route www]\n"             /* 12 */
                                 "host = WWW.example.com\n"  /* 13 */
                                 "scenario = static\n"       /* 14 */
                                 "root = /srv/www\n"         /* 15 */
                                 "index = home.html\n"       /* 16 */
                                 "[route any-sub]\n"         /* 17 */
                                 "host = *.example.com\n"    /* 18 */
                                 "scenario = respond\n"      /* 19 */
                                 "status = 201\n"            /* 20 */
                                 "[route deep-sub]\n"        /* 21 */
                                 "host = *.eu.example.com\n" /* 22 */
                                 "scenario = respond\n"      /* 23 */
                                 "[route www-api]\n"         /* 24 */
                                 "host = www.example.com\n"  /* 25 */
                                 "path_prefix = /api/\n"     /* 26 */
                                 "scenario = respond\n";     /* 27 */

static const char *match(const char *host, const char *target) {
    const sws_routes *t = cfg.routes;
    int i = sws_route_match(t, 0, host, host ? strlen(host) : 0, target, strlen(target));
    return t->r[i].name;
}

static void sections_become_routes_with_their_own_settings(void **state) {
    (void)state;
    char err[512];
    assert_int_equal(build(routes_ini, err, sizeof err), 0);
    const sws_routes *t = cfg.routes;
    assert_int_equal(t->n, 8);
    assert_true(t->listed);
    /* [server] scenario unset: what no route matches is a 404. */
    assert_string_equal(t->r[0].name, "default");
    assert_int_equal(t->r[0].cfg.status, 404);
    const sws_route *h = sws_routes_find(t, "health");
    assert_non_null(h);
    assert_int_equal(h->cfg.body_len, 2);
    assert_memory_equal(h->cfg.body, "ok", 2);
    const sws_route *w = sws_routes_find(t, "www");
    assert_string_equal(w->cfg.stat.root, "/srv/www");
    assert_string_equal(w->cfg.stat.index, "home.html");
    assert_string_equal(w->hosts, "www.example.com"); /* lowercased */
    /* Each route starts from the key table's defaults, not from another's. */
    assert_string_equal(sws_routes_find(t, "any-sub")->cfg.stat.index, "index.html");
    assert_int_equal(sws_routes_find(t, "api")->cfg.status, 200);
    assert_true(sws_routes_find(t, "api")->cfg.strip_prefix);
    assert_string_equal(w->origin + strlen(w->origin) - 3, ":12");
    sws_config_release(&cfg);
}

static void host_exact_beats_wildcard_beats_any(void **state) {
    (void)state;
    char err[512];
    assert_int_equal(build(routes_ini, err, sizeof err), 0);
    assert_string_equal(match("www.example.com", "/index.html"), "www");
    assert_string_equal(match("WwW.Example.COM", "/"), "www");          /* case */
    assert_string_equal(match("www.example.com:8080", "/"), "www");     /* port */
    assert_string_equal(match("www.example.com.", "/"), "www");         /* trailing dot */
    assert_string_equal(match("a.example.com", "/"), "any-sub");        /* wildcard */
    assert_string_equal(match("x.eu.example.com", "/"), "deep-sub");    /* longer suffix */
    assert_string_equal(match("example.com", "/"), "default");          /* *. needs a label */
    assert_string_equal(match("a.example.com", "/healthz"), "any-sub"); /* host first */
    assert_string_equal(match("other.org", "/healthz"), "health");      /* any host */
    assert_string_equal(match(NULL, "/healthz"), "health");             /* no Host */
    assert_string_equal(match(NULL, "/x"), "default");
    assert_string_equal(match("[::1]:80", "/api"), "api");
    sws_config_release(&cfg);
}

static void exact_path_then_longest_prefix_on_a_segment(void **state) {
    (void)state;
    char err[512];
    assert_int_equal(build(routes_ini, err, sizeof err), 0);
    assert_string_equal(match("h", "/healthz"), "health");
    assert_string_equal(match("h", "/healthz?probe=1"), "health"); /* the query is not matched */
    assert_string_equal(match("h", "/healthz/x"), "default");      /* exact is exact */
    assert_string_equal(match("h", "/api"), "api");
    assert_string_equal(match("h", "/api/x"), "api");
    assert_string_equal(match("h", "/api?q"), "api");
    assert_string_equal(match("h", "/apix"), "default"); /* not on a segment boundary */
    assert_string_equal(match("h", "/api/v2/users"), "api-v2");
    assert_string_equal(match("h", "/api/v2"), "api"); /* "/api/v2/" needs its slash */
    assert_string_equal(match("www.example.com", "/api/v2/x"), "www-api");
    /* absolute-form: its authority wins over Host (RFC 9112 3.2.2) */
    assert_string_equal(match("other.org", "http://www.example.com/api/x"), "www-api");
    assert_string_equal(match("other.org", "HTTP://a.example.com"), "any-sub");
    sws_config_release(&cfg);
}

/* A route's host list: each of its names matches as if the route had been
 * written once per name, in the same ranks (exact, longer wildcard, none). */
static void host_lists_match_every_name(void **state) {
    (void)state;
    char err[512];
    assert_int_equal(build("[route a]\n"
                           "host = a.test, B.test., *.w.test\n"
                           "host = [::1]\n"
                           "scenario = respond\n"
                           "[route b]\n"
                           "host = *.x.w.test, c.test\n"
                           "scenario = respond\n"
                           "[route c]\n"
                           "host = a.test\n"
                           "path = /only\n"
                           "scenario = respond\n"
                           "[route d]\n"
                           "path = /only\n"
                           "scenario = respond\n",
                           err, sizeof err),
                     0);
    const sws_route *a = sws_routes_find(cfg.routes, "a");
    assert_int_equal(a->nhosts, 4);
    assert_memory_equal(a->hosts, "a.test\0b.test\0.w.test\0[::1]", a->hosts_len);
    assert_string_equal(match("a.test", "/"), "a");
    assert_string_equal(match("b.TEST:81", "/"), "a");
    assert_string_equal(match("q.w.test", "/"), "a");
    assert_string_equal(match("[::1]:8080", "/"), "a");
    assert_string_equal(match("q.x.w.test", "/"), "b"); /* the longer suffix */
    assert_string_equal(match("x.w.test", "/"), "a");   /* *.x.w.test needs a label */
    assert_string_equal(match("C.test", "/"), "b");
    assert_string_equal(match("a.test", "/only"), "c"); /* same name: the path decides */
    assert_string_equal(match("b.test", "/only"), "a"); /* a host rank beats no host */
    assert_string_equal(match("zz.test", "/only"), "d");
    assert_string_equal(match("w.test", "/"), "default");
    sws_config_release(&cfg);
}

/* Hundreds of names in a few routes: each is found (the index, not a scan,
 * and not the first route's names only). */
static void many_names_are_each_found(void **state) {
    (void)state;
    size_t cap = 1 << 16, o = 0;
    char *ini = malloc(cap);
    assert_non_null(ini);
    for (int r = 0; r < 4; r++) {
        o += (size_t)snprintf(ini + o, cap - o, "[route r%d]\nscenario = respond\n", r);
        for (int line = 0; line < 25; line++) {
            o += (size_t)snprintf(ini + o, cap - o, "host = ");
            for (int k = 0; k < 8; k++)
                o += (size_t)snprintf(ini + o, cap - o, "%sn%d-%d.test", k ? ", " : "", r,
                                      line * 8 + k);
            o += (size_t)snprintf(ini + o, cap - o, ", *.w%d-%d.test\n", r, line);
        }
    }
    char err[512];
    assert_int_equal(build(ini, err, sizeof err), 0);
    assert_int_equal(cfg.routes->nexact, 800);
    assert_int_equal(cfg.routes->nwild, 100);
    for (int r = 0; r < 4; r++) {
        char want[8], host[64];
        snprintf(want, sizeof want, "r%d", r);
        for (int n = 0; n < 200; n += 7) {
            snprintf(host, sizeof host, "N%d-%d.test", r, n);
            assert_string_equal(match(host, "/"), want);
        }
        snprintf(host, sizeof host, "a.b.w%d-24.test", r);
        assert_string_equal(match(host, "/"), want);
    }
    assert_string_equal(match("n9-0.test", "/"), "default");
    sws_config_release(&cfg);
    free(ini);
}

static void strip_prefix_is_a_view_of_the_target(void **state) {
    (void)state;
    char err[512];
    assert_int_equal(build(routes_ini, err, sizeof err), 0);
    const sws_route *api = sws_routes_find(cfg.routes, "api");
    struct {
        const char *target, *want;
    } cases[] = {
        {"/api/x", "/x"},         {"/api", "/"},  {"/api?q=1", "/?q=1"},
        {"/api/x/y?z", "/x/y?z"}, {"/api/", "/"}, {"http://h/api/x", "/x"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        sws_route_view v = sws_route_target(api, cases[i].target, strlen(cases[i].target));
        char got[64];
        snprintf(got, sizeof got, "%s%.*s", v.lead_slash ? "/" : "", (int)v.len, v.path);
        assert_string_equal(got, cases[i].want);
    }
    /* Without strip_prefix the target is the scenario's unchanged. */
    const sws_route *v2 = sws_routes_find(cfg.routes, "api-v2");
    sws_route_view v = sws_route_target(v2, "/api/v2/a", 9);
    assert_false(v.lead_slash);
    assert_int_equal(v.len, 9);
    sws_config_release(&cfg);
}

static void one_default_route_without_sections(void **state) {
    (void)state;
    char err[512];
    assert_int_equal(build("[respond]\nstatus = 203\n", err, sizeof err), 0);
    assert_int_equal(cfg.routes->n, 1);
    assert_false(cfg.routes->listed);
    assert_int_equal(cfg.routes->r[0].cfg.status, 203);
    assert_string_equal(match("any", "/any"), "default");
    sws_config_release(&cfg);
    /* Routes and [server] scenario set: the top-level scenario is the default. */
    assert_int_equal(build("[server]\nscenario = respond\n[respond]\nstatus = 202\n"
                           "[route a]\npath = /a\nscenario = respond\n",
                           err, sizeof err),
                     0);
    assert_int_equal(cfg.routes->r[0].cfg.status, 202);
    assert_string_equal(match("h", "/b"), "default");
    sws_config_release(&cfg);
}

static void config_errors_name_the_route_and_its_line(void **state) {
    (void)state;
    char err[512];
    static const struct {
        const char *ini, *want;
    } cases[] = {
        {"[route a]\npath_prefix = /x\nscenario = respond\n[route b]\nscenario = respond\n"
         "path_prefix = /x\n",
         ":4: [route b] overlaps [route a] at "},
        {"[route a]\nhost = h.org\npath = /x\nscenario = respond\n[route b]\nhost = H.org\n"
         "path = /x\nscenario = respond\n",
         "[route b] overlaps [route a]"},
        {"[route a]\npath = /x\n", ":1: [route a] needs scenario"},
        /* One name of two lists in common, and the same (no) path. */
        {"[route a]\nhost = a.org, b.org\nscenario = respond\n[route b]\n"
         "host = c.org, *.d.org, B.org\nscenario = respond\n",
         ":4: [route b] overlaps [route a] at "},
        {"[route a]\nhost = *.d.org\nscenario = respond\n[route b]\n"
         "host = c.org, *.D.org\nscenario = respond\n",
         "host *.d.org and no path"},
        {"[route a]\nhost = a.org, A.org\nscenario = respond\n", "is named twice"},
        {"[route a]\nhost = a..org\nscenario = respond\n", "bad host 'a..org'"},
        {"[route a]\nhost = ,\nscenario = respond\n", "no host name"},
        {"[route a]\npath = /x\nscenario = proxy\n", ":1: [route a] scenario proxy needs upstream"},
        {"[route a]\npath = /x\nscenario = proxy\nupstream = 127.0.0.1:1\npool = shared\n",
         ":1: [route a] pool = shared is for a proxy without [route] sections"},
        {"[route a]\npath = /x\nscenario = static\n", "[route a] scenario static needs root"},
        {"[route a]\npath = /x\nstrip_prefix = on\nscenario = respond\n",
         "strip_prefix needs path_prefix"},
        {"[route a]\nscenario = respond\n", "matches every request"},
        {"[route a]\npath = /x\npath_prefix = /y\n", ":3: [route a] path_prefix: a route has one"},
        {"[route a]\npath = x\n", ":2: [route a] path: bad path"},
        {"[route a]\npath = /x?y\n", "bad path"},
        {"[route a]\nhost = a.org:80\n", "bad host"},
        {"[route a]\nbogus = 1\n", ":2: [route a] bogus: unknown key"},
        {"[route a]\npath = /a\nscenario = respond\n[route b]\npath = /b\nscenario = respond\n"
         "[route a]\npath = /c\n",
         ":7: [route a] appears twice (first at "},
        /* Given twice in a row too: not merged into one route. */
        {"[route a]\npath = /a\nscenario = respond\n[route  a]\nhost = b.org\n",
         ":4: [route a] appears twice (first at "},
        /* Two host-only routes share a host and no path: no path_prefix to speak of. */
        {"[route a]\nhost = h.org\nscenario = respond\n[route b]\nhost = h.org\n"
         "scenario = respond\n",
         "[route b] overlaps [route a] at "},
        {"[route a]\npath = /x\nscenario = proxy\nupstrem = 127.0.0.1:1\n",
         ":4: [route a] upstrem: unknown key (did you mean upstream?)"},
        {"[route a]\npath = /x\nscenario = proxy\nupstream = 127.0.0.1:1\n"
         "health_interval = 10ms\n",
         ":5: [route a] health_interval: '10ms' is too short: at least 100ms"},
        {"[route default]\npath = /a\n", "'default' is the top-level"},
        {"[route a b]\npath = /a\n", "bad route name"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int rc = build(cases[i].ini, err, sizeof err);
        if (rc != -EINVAL || !strstr(err, cases[i].want))
            fail_msg("case %zu: rc %d, err '%s', want '%s'", i, rc, err, cases[i].want);
        assert_null(strchr(err, '\n'));
        sws_config_release(&cfg);
    }
    assert_int_equal(build("[route a]\nhost = h.org\nscenario = respond\n[route b]\nhost = h.org\n"
                           "scenario = respond\n",
                           err, sizeof err),
                     -EINVAL);
    assert_non_null(strstr(err, ": host h.org and no path, so one of them can never win"));
    assert_null(strstr(err, "path_prefix"));
}

/* Routes limited to listeners: seen only by their listeners' requests (the
 * others fall through to what else matches), a catch-all per listener, and
 * overlaps judged per listener. */
static void routes_are_limited_to_their_listeners(void **state) {
    (void)state;
    char err[512];
    assert_int_equal(build("[server]\nlisten = 127.0.0.1:0 name=plain\n"
                           "listen = 127.0.0.1:0 tls name=secure\nlisten = [::1]:0\n"
                           "[tls]\ncert = /nonexistent.pem\nkey = /nonexistent.key\n"
                           "[route to-https]\nlisten = plain\nscenario = redirect\n"
                           "to = https://$host$request_uri\nany_host = on\n"
                           "[route site]\nlisten = secure, [::1]:0\nhost = a.org\n"
                           "scenario = respond\n"
                           "[route site-plain]\nlisten = plain\nhost = a.org\nscenario = respond\n"
                           "[route api]\npath_prefix = /api\nscenario = respond\n",
                           err, sizeof err),
                     0);
    const sws_routes *t = cfg.routes;
    assert_int_equal(cfg.nlisteners, 3);
    assert_true(cfg.listen_tls);
    int to_https = 1, site = 2, site_plain = 3, api = 4;
    assert_int_equal(t->r[to_https].listeners, 1u);
    assert_int_equal(t->r[site].listeners, 6u);
    assert_int_equal(t->r[api].listeners, 0u);
#define M(l, h, p) sws_route_match(t, l, h, strlen(h), p, strlen(p))
    assert_int_equal(M(0, "a.org", "/"), site_plain);
    assert_int_equal(M(1, "a.org", "/"), site);
    assert_int_equal(M(2, "a.org", "/"), site);
    assert_int_equal(M(0, "b.org", "/x"), to_https); /* the plain listener's catch-all */
    assert_int_equal(M(1, "b.org", "/x"), 0);        /* not on the others: the default */
    assert_int_equal(M(0, "b.org", "/api/x"), api);  /* a longer path on every listener */
    assert_int_equal(M(1, "b.org", "/api/x"), api);
#undef M
    sws_config_release(&cfg);

    static const struct {
        const char *ini, *want;
    } cases[] = {
        {"[server]\nlisten = 127.0.0.1:0 name=a\n[route r]\nhost = h.org\nlisten = a, b\n"
         "scenario = respond\n",
         ":5: [route r] listen: no listener is named 'b' (the listeners: a)"},
        {"[server]\nlisten = 127.0.0.1:0\nlisten = 127.0.0.1:0\n[route r]\nhost = h.org\n"
         "listen = 127.0.0.1:0\nscenario = respond\n",
         "[route r] listen: two listeners have the address '127.0.0.1:0'"},
        {"[server]\nlisten = 127.0.0.1:0 name=a\nlisten = [::1]:0 name=b\n[route r]\n"
         "host = h.org\nlisten = a\nscenario = respond\n[route s]\nhost = h.org\n"
         "listen = b, a\nscenario = respond\n",
         "[route s] overlaps [route r]"},
        {"[server]\nlisten = 127.0.0.1:8080\nlisten = 127.0.0.1:8080 tls\n",
         ":3: [server] listen: 127.0.0.1:8080 is listened on already ("},
        {"[server]\nlisten = 127.0.0.1:1 name=a\nlisten = 127.0.0.1:2 name=a\n",
         ":3: [server] listen: name=a is another listener's already"},
        {"[server]\nlisten = 127.0.0.1:1 tlss\n", "bad listener option 'tlss'"},
        {"[server]\nlisten = 127.0.0.1:1 tls http2=off\nlisten = 127.0.0.1:2 tls\n",
         ":3: [server] listen: http2 differs from the tls listener of "},
        {"[server]\nlisten = 127.0.0.1:1 name=a:b\n", "bad listener name 'a:b'"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int rc = build(cases[i].ini, err, sizeof err);
        if (rc != -EINVAL || !strstr(err, cases[i].want))
            fail_msg("case %zu: rc %d, err '%s', want '%s'", i, rc, err, cases[i].want);
        sws_config_release(&cfg);
    }
    /* The same routes on listeners that never meet are no overlap. */
    assert_int_equal(build("[server]\nlisten = 127.0.0.1:0 name=a\nlisten = [::1]:0 name=b\n"
                           "[route r]\nhost = h.org\nlisten = a\nscenario = respond\n"
                           "[route s]\nhost = h.org\nlisten = b\nscenario = respond\n",
                           err, sizeof err),
                     0);
    sws_config_release(&cfg);
}

/* A proxy is a route like any other, with its own upstreams; the default
 * may be a proxy beside routes of other scenarios. */
static void proxy_routes_have_their_own_upstreams(void **state) {
    (void)state;
    char err[512];
    assert_int_equal(build("[server]\nscenario = proxy\n[proxy]\nupstream = 127.0.0.1:1\n"
                           "[route api]\npath_prefix = /api/\nscenario = proxy\n"
                           "upstream = 127.0.0.1:2, 127.0.0.1:3 weight=2\nstrip_prefix = on\n"
                           "[route health]\npath = /healthz\nscenario = respond\n",
                           err, sizeof err),
                     0);
    assert_int_equal(cfg.routes->n, 3);
    assert_int_equal(cfg.routes->r[0].cfg.scenario, SWS_SCENARIO_PROXY);
    assert_int_equal(cfg.routes->r[0].cfg.proxy.nupstreams, 1);
    const sws_route *api = sws_routes_find(cfg.routes, "api");
    assert_int_equal(api->cfg.scenario, SWS_SCENARIO_PROXY);
    assert_int_equal(api->cfg.proxy.nupstreams, 2);
    assert_int_equal(api->cfg.proxy.up[1].weight, 2);
    sws_route_view v = sws_route_target(api, "/api/x?y", 8);
    assert_false(v.lead_slash);
    assert_int_equal(v.len, 4);
    assert_memory_equal(v.path, "/x?y", 4);
    sws_config_release(&cfg);
}

static void a_route_takes_scenario_keys_qualified(void **state) {
    (void)state;
    char err[512];
    assert_int_equal(build("[route a]\npath = /a\nscenario = respond\nrespond.status = 418\n"
                           "static.index = x.html\nhost = a.org\nproxy.host = upstream\n",
                           err, sizeof err),
                     0);
    const sws_route *a = sws_routes_find(cfg.routes, "a");
    assert_int_equal(a->cfg.status, 418);
    assert_string_equal(a->cfg.stat.index, "x.html");
    /* host is the route's match; [proxy] host is reached as proxy.host. */
    assert_string_equal(a->hosts, "a.org");
    sws_config_release(&cfg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sections_become_routes_with_their_own_settings),
        cmocka_unit_test(host_exact_beats_wildcard_beats_any),
        cmocka_unit_test(host_lists_match_every_name),
        cmocka_unit_test(many_names_are_each_found),
        cmocka_unit_test(exact_path_then_longest_prefix_on_a_segment),
        cmocka_unit_test(strip_prefix_is_a_view_of_the_target),
        cmocka_unit_test(one_default_route_without_sections),
        cmocka_unit_test(config_errors_name_the_route_and_its_line),
        cmocka_unit_test(proxy_routes_have_their_own_upstreams),
        cmocka_unit_test(routes_are_limited_to_their_listeners),
        cmocka_unit_test(a_route_takes_scenario_keys_qualified),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
