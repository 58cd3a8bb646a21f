/* Config loading with inih, driven by the key table of config_keys.c: each
 * key's kind says how its value is parsed and written back. A wrong key or bad
 * value is reported as one line, "file:line: [section] key: why", and the
 * loader stops at the first error (inih reports its line). */
#include "config.h"

#include "route.h"

#include <assert.h>
#include <errno.h>
#include <ini.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *field(sws_config *c, const sws_key *k) {
    return (char *)c + k->off;
}
static const void *cfield(const sws_config *c, const sws_key *k) {
    return (const char *)c + k->off;
}

static void store_uint(sws_config *c, const sws_key *k, uint64_t n) {
    switch (k->width) {
    case 1:
        *(uint8_t *)field(c, k) = (uint8_t)n;
        break;
    case 4:
        *(uint32_t *)field(c, k) = (uint32_t)n;
        break;
    default:
        *(uint64_t *)field(c, k) = n;
    }
}

static uint64_t load_uint(const sws_config *c, const sws_key *k) {
    switch (k->width) {
    case 1:
        return *(const uint8_t *)cfield(c, k);
    case 4:
        return *(const uint32_t *)cfield(c, k);
    default:
        return *(const uint64_t *)cfield(c, k);
    }
}

/* "a, b or c" from a NULL-terminated list. */
static void join_names(const char *const *names, char *out, size_t len) {
    size_t n = 0, used = 0;
    while (names[n])
        n++;
    out[0] = '\0';
    for (size_t i = 0; i < n && used < len; i++)
        used += (size_t)snprintf(out + used, len - used, "%s%s",
                                 i == 0       ? ""
                                 : i + 1 == n ? " or "
                                              : ", ",
                                 names[i]);
}

static const char *bool_on[] = {"on", "true", "1"};
static const char *bool_off[] = {"off", "false", "0"};

int sws_config_set_key(sws_config *c, const sws_key *k, const char *v, char *why, size_t len) {
    uint64_t n;
    switch (k->kind) {
    case SWS_KEY_UINT:
        if (sws_parse_uint(v, k->lo, k->hi, &n) < 0)
            goto bad_range;
        store_uint(c, k, n);
        return 0;
    case SWS_KEY_SIZE:
        if (sws_parse_size(v, &n) < 0 || n < k->lo || n > k->hi) {
            snprintf(why, len, "bad size '%s' (e.g. 8k, 1m; %" PRIu64 "..%" PRIu64 " bytes)", v,
                     k->lo, k->hi);
            return -EINVAL;
        }
        store_uint(c, k, n);
        return 0;
    case SWS_KEY_MS:
        if (sws_parse_ms(v, &n) < 0 || (n > k->hi && k->hi == UINT32_MAX)) {
            snprintf(why, len, "bad duration '%s' (e.g. 10s, 500ms)", v);
            return -EINVAL;
        }
        if (n > k->hi) {
            snprintf(why, len, "'%s' is too long: at most %" PRIu64 "s", v, k->hi / 1000);
            return -EINVAL;
        }
        if (n < k->lo) {
            /* The minimum as a file writes it: "bad duration" would send the
             * reader looking for a syntax fault in a well-formed value. */
            if (k->lo % 1000 == 0)
                snprintf(why, len, "'%s' is too short: at least %" PRIu64 "s", v, k->lo / 1000);
            else
                snprintf(why, len, "'%s' is too short: at least %" PRIu64 "ms", v, k->lo);
            return -EINVAL;
        }
        store_uint(c, k, n);
        return 0;
    case SWS_KEY_BOOL:
        for (int i = 0; i < 3; i++) {
            if (strcmp(v, bool_on[i]) == 0 || strcmp(v, bool_off[i]) == 0) {
                *(bool *)field(c, k) = strcmp(v, bool_on[i]) == 0;
                return 0;
            }
        }
        snprintf(why, len, "bad value '%s' (want on or off)", v);
        return -EINVAL;
    case SWS_KEY_ENUM:
        for (int i = 0; k->names[i]; i++) {
            if (strcmp(v, k->names[i]) == 0) {
                if (k->width == 1)
                    *(uint8_t *)field(c, k) = (uint8_t)i;
                else
                    *(int *)field(c, k) = i;
                return 0;
            }
        }
        char names[200];
        join_names(k->names, names, sizeof names);
        snprintf(why, len, "bad value '%s' (want %s)", v, names);
        return -EINVAL;
    case SWS_KEY_STRING:
        if (strlen(v) >= k->width || strpbrk(v, "\r\n")) {
            snprintf(why, len, "bad value (one line, up to %zu bytes)", k->width - 1);
            return -EINVAL;
        }
        strcpy(field(c, k), v);
        return 0;
    case SWS_KEY_CUSTOM:
        return k->parse(c, v, why, len);
    }
bad_range:
    snprintf(why, len, "bad value '%s' (want %" PRIu64 "..%" PRIu64 ")", v, k->lo, k->hi);
    return -EINVAL;
}

void sws_config_format(const sws_config *c, const sws_key *k, char *out, size_t len) {
    uint64_t n;
    switch (k->kind) {
    case SWS_KEY_UINT:
        snprintf(out, len, "%" PRIu64, load_uint(c, k));
        return;
    case SWS_KEY_SIZE:
        n = load_uint(c, k);
        if (n && n % (1u << 20) == 0)
            snprintf(out, len, "%" PRIu64 "m", n >> 20);
        else if (n && n % 1024 == 0)
            snprintf(out, len, "%" PRIu64 "k", n >> 10);
        else
            snprintf(out, len, "%" PRIu64, n);
        return;
    case SWS_KEY_MS:
        n = load_uint(c, k);
        if (n % 1000 == 0)
            snprintf(out, len, "%" PRIu64 "s", n / 1000);
        else
            snprintf(out, len, "%" PRIu64 "ms", n);
        return;
    case SWS_KEY_BOOL:
        snprintf(out, len, "%s", *(const bool *)cfield(c, k) ? "on" : "off");
        return;
    case SWS_KEY_ENUM:
        n = k->width == 1 ? *(const uint8_t *)cfield(c, k) : (uint64_t) * (const int *)cfield(c, k);
        snprintf(out, len, "%s", k->names[n]);
        return;
    case SWS_KEY_STRING:
        snprintf(out, len, "%s", (const char *)cfield(c, k));
        return;
    case SWS_KEY_CUSTOM:
        k->format(c, out, len);
        return;
    }
}

static int key_index(const char *section, const char *key, bool *section_known) {
    *section_known = false;
    for (int i = 0; i < sws_config_nkeys; i++) {
        if (strcmp(sws_config_keys[i].section, section) != 0)
            continue;
        *section_known = true;
        if (strcmp(sws_config_keys[i].name, key) == 0)
            return i;
    }
    return -1;
}

int sws_config_key_index(const char *section, const char *key) {
    bool known;
    return key_index(section, key, &known);
}

void sws_config_release(sws_config *c) {
    sws_tls_certs_unref(c->tls_certs);
    c->tls_certs = NULL;
    sws_route_load_free(c);
    sws_routes_unref(c->routes);
    c->routes = NULL;
}

/* Edit distance (insertions, deletions, substitutions) of two short words,
 * capped at 9: only "is it one or two typos away" is asked of it. */
static unsigned edit_distance(const char *a, const char *b) {
    size_t na = strlen(a), nb = strlen(b);
    if (na > 63 || nb > 63)
        return 9;
    unsigned row[64];
    for (size_t j = 0; j <= nb; j++)
        row[j] = (unsigned)j;
    for (size_t i = 1; i <= na; i++) {
        unsigned diag = row[0];
        row[0] = (unsigned)i;
        for (size_t j = 1; j <= nb; j++) {
            unsigned up = row[j];
            unsigned best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[nb] > 9 ? 9 : row[nb];
}

bool sws_config_near(const char *typed, const char *known, unsigned *best) {
    unsigned d = edit_distance(typed, known);
    /* Two edits at most, and fewer than half the word: "evnt_loops" is
     * event_loops, "tls" is not "ttl". */
    if (d == 0 || d > 2 || 2 * d >= strlen(typed) || d >= *best)
        return false;
    *best = d;
    return true;
}

/* "unknown key" with the nearest key of the section, or the section that has
 * the key ("[server] root" is [static]'s); "unknown section" likewise. */
static void unknown(const char *section, const char *key, bool section_known, char *err,
                    size_t errlen) {
    unsigned best = 9;
    const char *near = NULL, *elsewhere = NULL;
    for (int i = 0; i < sws_config_nkeys; i++) {
        const sws_key *k = &sws_config_keys[i];
        if (!section_known) {
            if ((!near || strcmp(near, k->section) != 0) &&
                sws_config_near(section, k->section, &best))
                near = k->section;
            continue;
        }
        if (strcmp(k->section, section) != 0) {
            if (!elsewhere && strcmp(k->name, key) == 0)
                elsewhere = k->section;
            continue;
        }
        if (sws_config_near(key, k->name, &best))
            near = k->name;
    }
    if (!section_known && near)
        snprintf(err, errlen, "unknown section (did you mean [%s]?)", near);
    else if (!section_known)
        snprintf(err, errlen, "unknown section");
    else if (near)
        snprintf(err, errlen, "unknown key (did you mean %s?)", near);
    else if (elsewhere)
        snprintf(err, errlen, "unknown key (%s is a key of [%s])", key, elsewhere);
    else
        snprintf(err, errlen, "unknown key");
}

static int set_from(sws_config *c, const char *section, const char *key, const char *v,
                    uint8_t origin, uint32_t line, char *err, size_t errlen) {
    bool known;
    int i = key_index(section, key, &known);
    if (i < 0) {
        unknown(section, key, known, err, errlen);
        return -EINVAL;
    }
    int rc = sws_config_set_key(c, &sws_config_keys[i], v, err, errlen);
    if (rc == 0) {
        c->origin[i] = origin;
        c->origin_line[i] = line;
    }
    return rc;
}

int sws_config_set(sws_config *c, const char *section, const char *key, const char *v, char *err,
                   size_t errlen) {
    return set_from(c, section, key, v, SWS_FROM_FILE, 0, err, errlen);
}

void sws_config_defaults(sws_config *c) {
    _Static_assert(sizeof(c->origin) / sizeof(c->origin[0]) == SWS_CONFIG_KEYS_MAX, "origin");
    assert(sws_config_nkeys <= SWS_CONFIG_KEYS_MAX);
    memset(c, 0, sizeof(*c));
    for (int i = 0; i < sws_config_nkeys; i++) {
        const sws_key *k = &sws_config_keys[i];
        char why[200];
        if (k->def && sws_config_set_key(c, k, k->def, why, sizeof why) < 0)
            assert(!"a default of the key table does not parse");
    }
    /* The default listener stands until a file's (or --listen's) first line. */
    snprintf(c->listeners[0].origin, sizeof(c->listeners[0].origin), "[server] listen (default)");
    c->listen_fresh = true;
}

struct load_ctx {
    sws_config *c;
    FILE *f;
    const char *path;
    int line;         /* counted by the reader: Debian's inih has no line numbers in handlers */
    int section_line; /* of the last "[section]" line: where a route is said to be */
    char why[256];
    char section[64];
    char key[64];
    bool failed;
    int fail_line; /* of a fault the reader found (a section given twice); 0 none */
    /* The sections seen so far and their lines: inih merges a section given
     * twice, so that the second silently overrides keys of the first. */
    int nseen;
    struct {
        char name[80];
        int line;
    } seen[SWS_CONFIG_SECTIONS_MAX];
};

/* Whether section is "KIND NAME" (inih keeps the blanks between them). */
static bool is_named(const char *section, const char *kind) {
    size_t n = strlen(kind);
    return strncmp(section, kind, n) == 0 && (section[n] == ' ' || section[n] == '\t');
}

static int on_kv(void *user, const char *section, const char *key, const char *value) {
    struct load_ctx *l = user;
    if (l->failed)
        return 0;
    /* [server] quic_gso became [http3] gso: a file that says it still means
     * it (a restart onto this version must not fail on it), and is told. */
    if (strcmp(section, "server") == 0 && strcmp(key, "quic_gso") == 0) {
        if (!l->c->load_note[0])
            snprintf(l->c->load_note, sizeof(l->c->load_note),
                     "%s:%d: [server] quic_gso is deprecated: it is [http3] gso now (taken as it)",
                     l->path, l->line);
        section = "http3";
        key = "gso";
    }
    int r;
    if (is_named(section, "route"))
        r = sws_route_load_kv(l->c, section, key, value, l->path, l->section_line, l->line, l->why,
                              sizeof(l->why));
    else if (is_named(section, "acme"))
        r = sws_acme_section_kv(l->c, section, key, value, l->section_line, l->line, l->why,
                                sizeof(l->why));
    else if (is_named(section, "tls"))
        r = sws_tls_section_kv(l->c, section, key, value, l->path, l->section_line, l->line, l->why,
                               sizeof(l->why));
    else
        r = set_from(l->c, section, key, value, SWS_FROM_FILE, (uint32_t)l->line, l->why,
                     sizeof(l->why));
    if (r < 0) { /* the message names them (l->why says why) */
        snprintf(l->section, sizeof(l->section), "%s", section);
        snprintf(l->key, sizeof(l->key), "%s", key);
        l->failed = true;
        return 0;
    }
    if (strcmp(section, "server") == 0 && strcmp(key, "listen") == 0)
        snprintf(l->c->listeners[l->c->nlisteners - 1].origin, sizeof(l->c->listeners[0].origin),
                 "%s:%d: [server] listen", l->path, l->line);
    return 1;
}

/* A "[section]" line's name as the loader keys it: inih's (the text up to
 * ']'), with "route   NAME" and "tls   NAME" spaced as "route NAME". */
static bool section_name(const char *s, char *out, size_t len) {
    const char *end = strchr(s, ']');
    if (!end)
        return false; /* inih's syntax error */
    size_t n = (size_t)(end - s - 1);
    const char *name = s + 1;
    static const char *const named[] = {"route", "tls", "acme"};
    for (int k = 0; k < 3; k++) {
        size_t kl = strlen(named[k]);
        if (n > kl && strncmp(name, named[k], kl) == 0 && (name[kl] == ' ' || name[kl] == '\t')) {
            const char *r = name + kl;
            while (r < end && (*r == ' ' || *r == '\t'))
                r++;
            snprintf(out, len, "%s %.*s", named[k], (int)(end - r), r);
            return true;
        }
    }
    snprintf(out, len, "%.*s", (int)n, name);
    return true;
}

static char *read_line(char *str, int num, void *stream) {
    struct load_ctx *l = stream;
    if (l->failed)
        return NULL; /* the end, for inih: the fault is reported after it */
    char *r = fgets(str, num, l->f);
    if (r) {
        l->line++;
        size_t n = strlen(r);
        if (n == (size_t)num - 1 && r[n - 1] != '\n' && !feof(l->f)) {
            /* inih would read the rest as a line of its own: a long
             * log_format cut in two, its tail taken for a key. */
            snprintf(l->why, sizeof(l->why), "line longer than %d characters", num - 2);
            l->fail_line = l->line;
            l->failed = true;
            return NULL;
        }
        const char *s = r;
        while (*s == ' ' || *s == '\t')
            s++;
        char name[80];
        if (*s == '[' && section_name(s, name, sizeof(name))) {
            l->section_line = l->line;
            for (int i = 0; i < l->nseen; i++) {
                if (strcmp(l->seen[i].name, name) != 0)
                    continue;
                if (strncmp(name, "route ", 6) == 0 || strncmp(name, "tls ", 4) == 0 ||
                    strncmp(name, "acme ", 5) == 0) {
                    /* Two routes (certificates) of one name: which one is meant? */
                    snprintf(l->why, sizeof(l->why), "[%s] appears twice (first at %s:%d)", name,
                             l->path, l->seen[i].line);
                    l->fail_line = l->line;
                    l->failed = true;
                    return NULL;
                }
                /* inih reads both as one section, the later value of a key
                 * winning: valid, and said (files that include others in
                 * this way exist), but likely a slip. */
                if (!l->c->load_note[0])
                    snprintf(l->c->load_note, sizeof(l->c->load_note),
                             "%s:%d: [%s] appears twice (first at line %d): its keys are read "
                             "as one section, a key given in both takes the later value",
                             l->path, l->line, name, l->seen[i].line);
                break;
            }
            if (l->nseen < SWS_CONFIG_SECTIONS_MAX) {
                snprintf(l->seen[l->nseen].name, sizeof(l->seen[0].name), "%s", name);
                l->seen[l->nseen++].line = l->line;
            }
        }
    }
    return r;
}

int sws_config_load(sws_config *c, const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "r");
    if (!f) {
        int e = errno;
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(e));
        return -e;
    }
    struct load_ctx l = {.c = c, .f = f, .path = path};
    int line = ini_parse_stream(read_line, &l, on_kv, &l);
    fclose(f);
    if (line == 0 && !l.failed)
        return 0;
    sws_route_load_free(c);
    if (l.fail_line)
        snprintf(err, errlen, "%s:%d: %s", path, l.fail_line, l.why);
    else if (l.failed)
        snprintf(err, errlen, "%s:%d: [%s] %s: %s", path, line, l.section, l.key, l.why);
    else
        snprintf(err, errlen, "%s:%d: syntax error (want [section] or key = value)", path, line);
    return -EINVAL;
}

/* A flag sets a key as the file would, and wins over it. */
static int set_flag(sws_config *c, const char *flag, const char *section, const char *key,
                    const char *v, char *err, size_t errlen) {
    char why[400];
    if (set_from(c, section, key, v, SWS_FROM_FLAG, 0, why, sizeof(why)) < 0) {
        snprintf(err, errlen, "%s: %s", flag, why);
        return -EINVAL;
    }
    return 0;
}

/* [acme] with the rest: a tls listener without [tls] cert and key serves
 * what ACME keeps in state_dir; HTTP-01 needs a plaintext listener, the
 * server's own or [acme] http_listen. */
static int acme_settle(sws_config *c, char *err, size_t errlen) {
    const sws_acme_config *a = &c->acme;
    if (sws_acme_config_check(a, c->nacme_orders, err, errlen) < 0)
        return -EINVAL;
    if (a->http_listen[0] && sws_parse_addr(a->http_listen, &c->acme_http) < 0) {
        snprintf(err, errlen, "[acme] http_listen: bad address '%s' (want host:port)",
                 a->http_listen);
        return -EINVAL;
    }
    if (sws_acme_tls_alpn(a) && a->ndomains && !c->listen_tls) {
        snprintf(err, errlen,
                 "[acme] challenge: tls-alpn-01 is answered on a tls listener, and %s is plain",
                 c->listen_origin);
        return -EINVAL;
    }
    bool plain = false; /* HTTP-01 is answered on any plaintext listener too */
    for (int i = 0; i < c->nlisteners; i++)
        plain = plain || (!c->listeners[i].tls && !c->listeners[i].quic);
    if (!plain && !a->http_listen[0] && sws_acme_any_http01(c)) {
        snprintf(err, errlen,
                 "%s: [acme] answers HTTP-01 on plaintext HTTP: with only tls listeners set "
                 "[acme] http_listen (e.g. 0.0.0.0:80), or challenge = tls-alpn-01, or add a "
                 "plain listen line",
                 c->listen_origin);
        return -EINVAL;
    }
    /* [acme] without domains of its own orders nothing: its [acme NAME]s do. */
    if (c->listen_tls && a->ndomains && !c->tls.cert[0] && !c->tls.key[0]) {
        /* Served as [tls]'s pair: the default, unless a [tls NAME] is marked. */
        snprintf(c->tls.cert, sizeof(c->tls.cert), "%s/cert.pem", a->state_dir);
        snprintf(c->tls.key, sizeof(c->tls.key), "%s/key.pem", a->state_dir);
        c->tls_from_acme = true;
    }
    return 0;
}

int sws_config_build(sws_config *c, const sws_cli *cli, char *err, size_t errlen) {
    sws_config_defaults(c);
    if (cli->config) {
        int rc = sws_config_load(c, cli->config, err, errlen);
        if (rc < 0)
            return rc;
    }
    if (cli->listen) {
        /* The flag's list replaces the file's: "ADDR [opts], ADDR [opts]". */
        c->listen_fresh = true;
        for (const char *v = cli->listen; *v;) {
            size_t n = strcspn(v, ",");
            char one[400];
            snprintf(one, sizeof(one), "%.*s", (int)n, v);
            char *t = one + strspn(one, " \t");
            if (set_flag(c, "--listen", "server", "listen", t, err, errlen) < 0)
                return -EINVAL;
            snprintf(c->listeners[c->nlisteners - 1].origin, sizeof(c->listeners[0].origin),
                     "--listen");
            v += n + (v[n] == ',');
        }
    }
    if (sws_listeners_settle(c, err, errlen) < 0)
        return -EINVAL;
    if (cli->threads) {
        const char *key = c->event_loops == 0 ? "worker_threads" : "event_loops";
        if (set_flag(c, "--worker-threads", "server", key, cli->threads, err, errlen) < 0 ||
            strcmp(cli->threads, "auto") == 0 || atoi(cli->threads) < 1) {
            snprintf(err, errlen, "--worker-threads: bad value '%s' (want 1..1024)", cli->threads);
            return -EINVAL;
        }
    }
    if (cli->scenario &&
        set_flag(c, "--scenario", "server", "scenario", cli->scenario, err, errlen) < 0)
        return -EINVAL;
    if (cli->upstream &&
        set_flag(c, "--upstream", "proxy", "upstream", cli->upstream, err, errlen) < 0)
        return -EINVAL;
    if (sws_acme_sections_settle(c, cli->config, err, errlen) < 0)
        return -EINVAL;
    if (sws_acme_enabled(&c->acme)) {
        int rc = acme_settle(c, err, errlen);
        if (rc < 0)
            return rc;
    }
    int rc = sws_tls_sections_settle(c, cli->config, err, errlen);
    if (rc < 0)
        return rc;
    /* ALPN is one per [tls]: the tls listeners agree on http2 (listeners.c). */
    for (int i = 0; i < c->nlisteners; i++)
        if (c->listeners[i].tls)
            c->tls.alpn_h2 = sws_listener_h2(c, i);
    if (c->acceptors > 1 && c->accept != SWS_ACCEPT_HANDOFF) {
        snprintf(err, errlen, "%s: [server] acceptors = %d needs accept = handoff (not %s)",
                 cli->config ? cli->config : "config", c->acceptors, sws_accept_name(c->accept));
        return -EINVAL;
    }
    if (cli->root) {
        /* --root DIR: the one line it takes to serve a directory. */
        if (set_flag(c, "--root", "static", "root", cli->root, err, errlen) < 0)
            return -EINVAL;
        if (!cli->scenario &&
            set_flag(c, "--root", "server", "scenario", "static", err, errlen) < 0)
            return -EINVAL;
    }
    if (c->scenario == SWS_SCENARIO_STATIC && !c->stat.root[0]) {
        snprintf(err, errlen, "%s: scenario static needs [static] root (or --root)",
                 cli->config ? cli->config : "--scenario");
        return -EINVAL;
    }
    if (c->scenario == SWS_SCENARIO_PROXY && c->proxy.nupstreams == 0) {
        snprintf(err, errlen, "%s: scenario proxy needs [proxy] upstream (or --upstream)",
                 cli->config ? cli->config : "--scenario");
        return -EINVAL;
    }
    rc = sws_routes_build(c, err, errlen);
    if (rc < 0)
        return rc;
    /* The default route's scenario, as a route's is checked (route_config.c). */
    char why[300];
    const sws_route *d = &c->routes->r[0];
    const char *bad = sws_scenario_cfg_check(&d->cfg, false, why, sizeof why);
    if (bad) {
        const char *key = d->cfg.scenario == SWS_SCENARIO_RESPOND ? "respond" : "redirect";
        snprintf(err, errlen, "%s: [server] scenario = %s: %s",
                 cli->config ? cli->config : "config", key, bad);
        sws_routes_unref(c->routes);
        c->routes = NULL;
        return -EINVAL;
    }
    return sws_error_pages_load(c, cli->config, err, errlen);
}

const char *sws_config_restart_change(const sws_config *o, const sws_config *n, char *buf,
                                      size_t len) {
    for (int i = 0; i < sws_config_nkeys; i++) {
        const sws_key *k = &sws_config_keys[i];
        if (!k->restart)
            continue;
        char a[512], b[512];
        sws_config_format(o, k, a, sizeof a);
        sws_config_format(n, k, b, sizeof b);
        if (strcmp(a, b) != 0) {
            snprintf(buf, len, "[%s] %s changed (%s -> %s)", k->section, k->name, *a ? a : "unset",
                     *b ? b : "unset");
            return buf;
        }
    }
    /* The same names may resolve to other addresses now: the pools, the
     * health records and the check thread are built for the ones at start. */
    if (o->scenario == SWS_SCENARIO_PROXY && sws_proxy_upstreams_differ(&o->proxy, &n->proxy)) {
        snprintf(buf, len, "[proxy] upstream resolves to other addresses now (%d -> %d)",
                 o->proxy.nupstreams, n->proxy.nupstreams);
        return buf;
    }
    return NULL;
}
