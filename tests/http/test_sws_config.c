/* Unit tests of scalwsd's config loader: defaults with no file, every error is
 * one line naming file, line and key, and the cgroup cpu.max rounding. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka.h needs the four headers above first: a block of its own, so that
 * clang-format's include sorting keeps it after them. */
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "cpu.h"
#include "route.h"
#include "test_ini.h"

static const char *write_ini(const char *text) {
    return test_write_ini("sws_config_test.ini", text);
}

static void config_defaults_serve_respond_on_8080(void **state) {
    (void)state;
    static sws_config c;
    sws_config_defaults(&c);
    assert_int_equal(c.event_loops, -1);
    assert_int_equal(c.accept, SWS_ACCEPT_REUSE_PORT);
    assert_int_equal(c.status, 200);
    assert_true(c.body_len > 0);
    assert_int_equal(c.nlisteners, 1);
    struct sockaddr_in *a = (struct sockaddr_in *)&c.listeners[0].addr.ss;
    assert_int_equal(a->sin_family, AF_INET);
    assert_int_equal(ntohs(a->sin_port), 8080);
    assert_int_equal(ntohl(a->sin_addr.s_addr), 0x7f000001);
    assert_int_equal(c.limits.header_bytes, 16384);
    assert_int_equal(c.limits.header_count, 100);
    assert_int_equal(c.limits.uri_length, 8192);
    assert_int_equal(c.limits.chunk_ext_bytes, 4096);
    assert_int_equal(c.drain_idle_grace_ms, 1000);
    assert_false(c.admin_enabled);
}

static void config_file_sets_every_section(void **state) {
    (void)state;
    static sws_config c;
    char err[512] = "";
    sws_config_defaults(&c);
    const char *p = write_ini("[server]\nlisten = 127.0.0.1:9999\nevent_loops = 3\n"
                              "accept = handoff\nbackend = epoll\ndrain_timeout = 500ms\n"
                              "[respond]\nstatus = 201\nbody = hi\\n\ncontent_type = text/x\n"
                              "[limits]\nheader_bytes = 4k\nbody_size = 1m\n"
                              "keepalive_timeout = 5\n[admin]\nlisten = 127.0.0.1:9998\n");
    assert_int_equal(sws_config_load(&c, p, err, sizeof(err)), 0);
    assert_int_equal(c.event_loops, 3);
    assert_int_equal(c.accept, SWS_ACCEPT_HANDOFF);
    assert_int_equal(c.backend, SWS_BACKEND_EPOLL);
    assert_int_equal(c.drain_timeout_ms, 500);
    assert_int_equal(c.status, 201);
    assert_int_equal(c.body_len, 3);
    assert_memory_equal(c.body, "hi\n", 3);
    assert_int_equal(c.limits.header_bytes, 4096);
    assert_int_equal(c.limits.body_size, 1 << 20);
    assert_int_equal(c.keepalive_timeout_ms, 5000);
    assert_true(c.admin_enabled);
    assert_non_null(strstr(c.listeners[0].origin, ":2: [server] listen"));
}

/* listen lines add up, the first replacing the default; --listen's list
 * replaces the file's. */
static void config_listen_lines_add_up_and_flag_replaces(void **state) {
    (void)state;
    static sws_config c;
    char err[512] = "";
    const char *p = write_ini("[server]\nlisten = 127.0.0.1:0 name=a\nlisten = [::1]:0 tls\n"
                              "[tls]\ncert = /x.pem\nkey = /x.key\n");
    sws_cli cli = {.config = p};
    assert_int_equal(sws_config_build(&c, &cli, err, sizeof(err)), 0);
    assert_int_equal(c.nlisteners, 2);
    assert_string_equal(c.listeners[0].name, "a");
    assert_false(c.listeners[0].tls);
    assert_true(c.listeners[1].tls);
    assert_true(c.listen_tls);
    assert_non_null(strstr(c.listen_origin, ":3: [server] listen"));
    sws_config_release(&c);
    cli.listen = "127.0.0.1:0 name=x http2=off, 127.0.0.1:0";
    assert_int_equal(sws_config_build(&c, &cli, err, sizeof(err)), 0);
    assert_int_equal(c.nlisteners, 2);
    assert_string_equal(c.listeners[0].name, "x");
    assert_false(sws_listener_h2(&c, 0));
    assert_true(sws_listener_h2(&c, 1));
    assert_false(c.listen_tls);
    assert_string_equal(c.listeners[1].origin, "--listen");
    sws_config_release(&c);
}

/* A quic listener: beside a TCP one on the same address (UDP and TCP ports
 * are apart), not a tls one, not HTTP/2, not counted as plain or tls; refused
 * without [tls] cert and key, twice, alone, or with tls. */
static void config_quic_listener(void **state) {
    (void)state;
    static sws_config c;
    char err[512] = "";
    const char *p = write_ini("[server]\nlisten = 127.0.0.1:8443 tls\n"
                              "listen = 127.0.0.1:8443 quic name=h3\n"
                              "[tls]\ncert = /x.pem\nkey = /x.key\n");
    sws_cli cli = {.config = p};
    assert_int_equal(sws_config_build(&c, &cli, err, sizeof(err)), 0);
    assert_int_equal(c.nlisteners, 2);
    assert_true(c.listeners[1].quic);
    assert_false(c.listeners[1].tls);
    assert_false(sws_listener_h2(&c, 1));
    assert_int_equal(sws_listener_quic(&c), 1);
    assert_int_equal(sws_listener_find(&c, "h3"), 1);
    assert_true(c.alt_svc);
    sws_config_release(&c);
    static const struct {
        const char *ini, *want;
    } bad[] = {
        {"[server]\nlisten = 127.0.0.1:0\nlisten = 127.0.0.1:0 quic\n",
         ":3: [server] listen: a quic listener needs [tls] cert and key"},
        {"[server]\nlisten = 127.0.0.1:0 quic\n[tls]\ncert = /x.pem\nkey = /x.key\n",
         "a quic listener needs a TCP listener beside it"},
        {"[server]\nlisten = 127.0.0.1:0\nlisten = 127.0.0.1:0 quic http2=on\n"
         "[tls]\ncert = /x.pem\nkey = /x.key\n",
         ":3: [server] listen: quic is TLS 1.3 and HTTP/3 already"},
        {"[server]\nlisten = 127.0.0.1:0\nlisten = 127.0.0.1:0 quic\nlisten = 127.0.0.1:0 quic\n"
         "[tls]\ncert = /x.pem\nkey = /x.key\n",
         ":4: [server] listen: one quic listener at most"},
        {"[server]\nlisten = 127.0.0.1:0\nlisten = 127.0.0.1:443 quic\n"
         "listen = 127.0.0.1:443 quic name=b\n"
         "[tls]\ncert = /x.pem\nkey = /x.key\n",
         "is listened on already"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cli.config = write_ini(bad[i].ini);
        err[0] = '\0';
        assert_int_equal(sws_config_build(&c, &cli, err, sizeof(err)), -EINVAL);
        if (!strstr(err, bad[i].want))
            fail_msg("%s: said '%s', want '%s'", bad[i].ini, err, bad[i].want);
        sws_config_release(&c);
    }
}

static void config_unknown_key_names_file_line_key(void **state) {
    (void)state;
    static sws_config c;
    char err[512] = "";
    sws_config_defaults(&c);
    const char *p = write_ini("[server]\nlisten = 127.0.0.1:1\n\nevnt_loops = 2\n");
    assert_int_equal(sws_config_load(&c, p, err, sizeof(err)), -EINVAL);
    char want[600];
    snprintf(want, sizeof(want),
             "%s:4: [server] evnt_loops: unknown key (did you mean event_loops?)", p);
    assert_string_equal(err, want);
    /* Nothing near: no guess. A key of another section: that section. */
    p = write_ini("[server]\nfrobnicate = 2\n");
    assert_int_equal(sws_config_load(&c, p, err, sizeof(err)), -EINVAL);
    snprintf(want, sizeof(want), "%s:2: [server] frobnicate: unknown key", p);
    assert_string_equal(err, want);
    p = write_ini("[server]\nroot = /srv\n");
    assert_int_equal(sws_config_load(&c, p, err, sizeof(err)), -EINVAL);
    snprintf(want, sizeof(want), "%s:2: [server] root: unknown key (root is a key of [static])", p);
    assert_string_equal(err, want);
    p = write_ini("[sever]\nlisten = 127.0.0.1:1\n");
    assert_int_equal(sws_config_load(&c, p, err, sizeof(err)), -EINVAL);
    snprintf(want, sizeof(want), "%s:2: [sever] listen: unknown section (did you mean [server]?)",
             p);
    assert_string_equal(err, want);
}

/* A duration under its key's minimum says the minimum, not "bad duration". */
static void config_short_duration_says_the_minimum(void **state) {
    (void)state;
    static sws_config c;
    char err[512] = "";
    sws_config_defaults(&c);
    const char *p = write_ini("[proxy]\nhealth_interval = 10ms\n");
    assert_int_equal(sws_config_load(&c, p, err, sizeof(err)), -EINVAL);
    char want[600];
    snprintf(want, sizeof(want),
             "%s:2: [proxy] health_interval: '10ms' is too short: at least 100ms", p);
    assert_string_equal(err, want);
    p = write_ini("[server]\nrestart_timeout = 500ms\n");
    assert_int_equal(sws_config_load(&c, p, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "'500ms' is too short: at least 1s"));
}

/* A plain section given twice is read as one, with a warning naming both
 * lines; the later value of a key wins. */
static void config_section_twice_is_noted(void **state) {
    (void)state;
    static sws_config c;
    char err[512] = "";
    sws_config_defaults(&c);
    const char *p = write_ini("[respond]\nstatus = 201\n[server]\n[respond]\nstatus = 202\n");
    assert_int_equal(sws_config_load(&c, p, err, sizeof(err)), 0);
    assert_int_equal(c.status, 202);
    char want[600];
    snprintf(want, sizeof(want), "%s:4: [respond] appears twice (first at line 1)", p);
    assert_non_null(strstr(c.load_note, want));
}

static void config_bad_value_names_file_line_key(void **state) {
    (void)state;
    static sws_config c;
    char err[512] = "";
    sws_config_defaults(&c);
    const char *p = write_ini("[server]\naccept = round-robin\n");
    assert_int_equal(sws_config_load(&c, p, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, ":2: [server] accept: bad value 'round-robin'"));
    sws_config_defaults(&c);
    p = write_ini("[limits]\nheader_count = many\n");
    assert_int_equal(sws_config_load(&c, p, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, ":2: [limits] header_count:"));
    sws_config_defaults(&c);
    p = write_ini("[nope]\nx = 1\n");
    assert_int_equal(sws_config_load(&c, p, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, ":2: [nope] x: unknown section"));
    sws_config_defaults(&c);
    p = write_ini("[server]\nthis is not ini\n");
    assert_int_equal(sws_config_load(&c, p, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, ":2: syntax error"));
    assert_null(strchr(err, '\n'));
}

/* try_files is parsed once, at load: each entry's place, its $uri and its
 * =CODE; what could climb out of the root or never be reached is refused. */
static void config_try_files_parsed_and_checked(void **state) {
    (void)state;
    static sws_config c;
    char err[512] = "";
    sws_config_defaults(&c);
    assert_int_equal(c.stat.ntry, 0);
    assert_int_equal(sws_config_set(&c, "static", "try_files",
                                    "$uri /en$uri.html  /index.html =404", err, sizeof(err)),
                     0);
    assert_int_equal(c.stat.ntry, 4);
    const sws_try *t = c.stat.try;
    assert_int_equal(t[0].uri, 1);
    assert_int_equal(t[0].len, 4);
    assert_int_equal(t[1].uri, 4); /* "$uri" after "/en" */
    assert_memory_equal(c.stat.try_files + t[1].off, "/en$uri.html", 12);
    assert_int_equal(t[2].uri, 0);
    assert_int_equal(t[3].code, 404);
    static const char *const bad[] = {"$uri /../x", "$uri/../..", "=404 $uri",
                                      "$uri $args", "$uri$uri",   "index.html",
                                      "$uri =200",  "$uri =",     "a b c d e f g h i"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        if (sws_config_set(&c, "static", "try_files", bad[i], err, sizeof(err)) != -EINVAL)
            fail_msg("try_files = %s accepted", bad[i]);
        assert_true(err[0] != '\0');
    }
    assert_int_equal(c.stat.ntry, 4); /* a refused value changes nothing */
    assert_int_equal(sws_config_set(&c, "static", "try_files", "off", err, sizeof(err)), 0);
    assert_int_equal(c.stat.ntry, 0);
}

/* error_page: the files are read when the configuration is built, one set
 * per route, found by status; a missing one names file, line and route. */
static void config_error_pages_loaded(void **state) {
    (void)state;
    static sws_config c;
    char err[512] = "";
    const char *dir = getenv("SWS_TEST_TMP");
    char page[600], ini[2048];
    snprintf(page, sizeof(page), "%s/sws_config_404.html", dir ? dir : "/tmp");
    FILE *f = fopen(page, "w");
    assert_non_null(f);
    fputs("<p>gone</p>", f);
    fclose(f);
    snprintf(ini, sizeof(ini),
             "[server]\nerror_page = 404 410 %s\n[route r]\npath = /r\nscenario = respond\n"
             "error_page = 502 %s\n",
             page, page);
    sws_cli cli = {.config = test_write_ini("sws_config_test.ini", ini)};
    assert_int_equal(sws_config_build(&c, &cli, err, sizeof(err)), 0);
    const sws_error_page *p = sws_error_page_find(&c.routes->r[0].cfg, 410);
    assert_non_null(p);
    assert_int_equal(p->len, 11);
    assert_memory_equal(p->body, "<p>gone</p>", 11);
    assert_string_equal(p->content_type, "text/html");
    assert_null(sws_error_page_find(&c.routes->r[0].cfg, 502));
    assert_non_null(sws_error_page_find(&c.routes->r[1].cfg, 502));
    assert_null(sws_error_page_find(&c.routes->r[1].cfg, 404)); /* not inherited */
    assert_int_equal(sws_error_pages_room(&c.routes->r[1].cfg), 11 + 1024);
    sws_config_release(&c);
    snprintf(
        ini, sizeof(ini),
        "[server]\n[route r]\npath = /r\nscenario = respond\n\nerror_page = 502 %s-none.html\n",
        page);
    cli.config = test_write_ini("sws_config_test.ini", ini);
    assert_int_equal(sws_config_build(&c, &cli, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, ":6: [route r] error_page: "));
    assert_non_null(strstr(err, "-none.html: No such file or directory"));
    sws_config_release(&c);
    /* Seventeen statuses, each its own group: one more than a route keeps. */
    char many[600] = "";
    for (int code = 400; code <= 416; code++)
        snprintf(many + strlen(many), sizeof(many) - strlen(many), "%s%d x.html",
                 code > 400 ? ", " : "", code);
    sws_config_defaults(&c);
    assert_int_equal(sws_config_set(&c, "server", "error_page", many, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "more than 16 statuses"));
}

/* [tls NAME] sections: their keys and lines, [tls]'s pair put first by the
 * build (the default unless a section is marked), the checks across them. */
static void config_tls_sections(void **state) {
    (void)state;
    static sws_config c;
    char err[512] = "";
    const char *p = write_ini("[server]\nlisten = 127.0.0.1:0 tls\n"
                              "[tls  b]\ncert = /b.pem\nkey = /b.key\nocsp = /b.der\n"
                              "[tls]\ncert = /t.pem\nkey = /t.key\nunknown_name = refuse\n"
                              "[tls a]\ncert = /a.pem\nkey = /a.key\ndefault = on\n");
    sws_cli cli = {.config = p};
    assert_int_equal(sws_config_build(&c, &cli, err, sizeof(err)), 0);
    assert_true(c.tls.refuse_unknown);
    const sws_tls_certs *l = c.tls_certs;
    assert_non_null(l);
    assert_int_equal(l->n, 3);
    assert_string_equal(l->c[0].name, ""); /* [tls]'s pair first */
    assert_string_equal(l->c[0].cert, "/t.pem");
    assert_int_equal(l->c[0].cert_line, 8);
    assert_string_equal(l->c[1].name, "b");
    assert_int_equal(l->c[1].line, 3);
    assert_int_equal(l->c[1].key_line, 5);
    assert_string_equal(l->c[1].ocsp, "/b.der");
    assert_string_equal(l->c[2].name, "a");
    assert_true(l->c[2].is_default);
    sws_config_release(&c);
    static const struct {
        const char *ini, *want;
    } bad[] = {
        {"[tls a]\ncert = /a.pem\n", ":3: [tls a] needs cert and key"},
        {"[tls a]\ncert = /a.pem\nkey = /a.key\ndefault = on\n[tls b]\ncert = /b.pem\nkey = "
         "/b.key\ndefault = on\n",
         ":7: [tls b] default = on: [tls a] is the default already"},
        {"[tls a]\nnames = a.test\n", ":4: [tls a] names: unknown key"},
        {"[tls a]\ndefault = maybe\n", ":4: [tls a] default: bad value 'maybe'"},
        {"[tls a/b]\ncert = /a.pem\n", ":4: [tls a/b] cert: bad section name"},
        {"[tls a]\ncert = /a.pem\nkey = /a.key\n[tls a]\nocsp = off\n",
         ":6: [tls a] appears twice (first at"},
        {"[tls]\nunknown_name = drop\n", ":4: [tls] unknown_name: bad value 'drop'"},
        {"", "a tls listener needs [tls] cert and key (or [tls NAME] sections)"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char text[512];
        snprintf(text, sizeof(text), "[server]\nlisten = 127.0.0.1:0 tls\n%s", bad[i].ini);
        p = write_ini(text);
        cli.config = p;
        err[0] = '\0';
        assert_true(sws_config_build(&c, &cli, err, sizeof(err)) < 0);
        if (!strstr(err, bad[i].want))
            fail_msg("case %zu: '%s', want '%s'", i, err, bad[i].want);
        sws_config_release(&c);
    }
}

static void config_missing_file_is_an_error(void **state) {
    (void)state;
    static sws_config c;
    char err[512] = "";
    sws_config_defaults(&c);
    assert_int_equal(sws_config_load(&c, "/nonexistent/scalwsd.ini", err, sizeof(err)), -ENOENT);
    assert_non_null(strstr(err, "/nonexistent/scalwsd.ini: cannot open"));
}

static void config_addresses(void **state) {
    (void)state;
    sws_addr a;
    assert_int_equal(sws_parse_addr("[::1]:80", &a), 0);
    assert_int_equal(a.ss.ss_family, AF_INET6);
    assert_int_equal(sws_parse_addr(":8080", &a), 0);
    assert_int_equal(sws_parse_addr("8080", &a), 0);
    assert_int_equal(sws_parse_addr("127.0.0.1:99999", &a), -EINVAL);
    assert_int_equal(sws_parse_addr("127.0.0.1:", &a), -EINVAL);
}

static void cpu_max_quota_rounds_up(void **state) {
    (void)state;
    assert_int_equal(sws_cpu_max_parse("max 100000\n"), 0);
    assert_int_equal(sws_cpu_max_parse("150000 100000\n"), 2);
    assert_int_equal(sws_cpu_max_parse("100000 100000\n"), 1);
    assert_int_equal(sws_cpu_max_parse("50000 100000\n"), 1);
    assert_int_equal(sws_cpu_max_parse("300001 100000\n"), 4);
    sws_cpus cpus;
    assert_int_equal(sws_cpus_probe(&cpus), 0);
    assert_true(cpus.available >= 1 && cpus.available <= cpus.in_mask);
}

/* Every key of the table: its default parses, is written back in a form that
 * parses to the same value, and --print-config's output read back as a file
 * gives the same configuration. */
static void config_table_round_trips(void **state) {
    (void)state;
    static sws_config c, d;
    sws_config_defaults(&c);
    char err[400];
    assert_int_equal(sws_config_load(&c,
                                     write_ini("[server]\nevent_loops = 3\naccept = handoff\n"
                                               "[respond]\nbody = a;b\\n\n"
                                               "[proxy]\nupstream = 127.0.0.1:9, 127.0.0.1:10\n"
                                               "[limits]\nbody_size = 1000\n"),
                                     err, sizeof(err)),
                     0);
    for (int i = 0; i < sws_config_nkeys; i++) {
        const sws_key *k = &sws_config_keys[i];
        char v[1024], w[1024];
        sws_config_format(&c, k, v, sizeof v);
        if (!*v && !k->def)
            continue; /* unset */
        d = c;
        assert_int_equal(sws_config_set(&d, k->section, k->name, v, err, sizeof(err)), 0);
        sws_config_format(&d, k, w, sizeof w);
        assert_string_equal(v, w);
    }
    const char *path = test_write_ini("sws_config_test.ini", "");
    const sws_cli cli = {.config = path};
    char out[512 + 16];
    snprintf(out, sizeof(out), "%s.printed", path);
    FILE *f = fopen(out, "w");
    assert_non_null(f);
    sws_config_print(f, &c, &cli);
    fclose(f);
    sws_config_defaults(&d);
    assert_int_equal(sws_config_load(&d, out, err, sizeof(err)), 0);
    assert_null(sws_config_restart_change(&c, &d, err, sizeof(err)));
    assert_int_equal(d.body_len, 4);
    assert_memory_equal(d.body, "a;b\n", 4);
    assert_int_equal(d.limits.body_size, 1000);
    assert_int_equal(d.proxy.nupstreams, 2);
    remove(out);
}

/* A key that SIGHUP cannot change is named with both values; one it can is not. */
static void config_restart_change_names_the_key(void **state) {
    (void)state;
    static sws_config a, b;
    char buf[300];
    sws_config_defaults(&a);
    b = a;
    assert_int_equal(sws_config_set(&b, "limits", "keepalive_timeout", "5s", buf, sizeof(buf)), 0);
    assert_null(sws_config_restart_change(&a, &b, buf, sizeof(buf)));
    assert_int_equal(sws_config_set(&b, "server", "accept", "herd", buf, sizeof(buf)), 0);
    const char *why = sws_config_restart_change(&a, &b, buf, sizeof(buf));
    assert_non_null(why);
    assert_string_equal(why, "[server] accept changed (reuse-port -> herd)");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(config_defaults_serve_respond_on_8080),
        cmocka_unit_test(config_file_sets_every_section),
        cmocka_unit_test(config_listen_lines_add_up_and_flag_replaces),
        cmocka_unit_test(config_quic_listener),
        cmocka_unit_test(config_unknown_key_names_file_line_key),
        cmocka_unit_test(config_short_duration_says_the_minimum),
        cmocka_unit_test(config_section_twice_is_noted),
        cmocka_unit_test(config_bad_value_names_file_line_key),
        cmocka_unit_test(config_try_files_parsed_and_checked),
        cmocka_unit_test(config_error_pages_loaded),
        cmocka_unit_test(config_missing_file_is_an_error),
        cmocka_unit_test(config_tls_sections),
        cmocka_unit_test(config_addresses),
        cmocka_unit_test(config_table_round_trips),
        cmocka_unit_test(config_restart_change_names_the_key),
        cmocka_unit_test(cpu_max_quota_rounds_up),
    };
    return cmocka_run_group_tests_name("sws_config", tests, NULL, NULL);
}
