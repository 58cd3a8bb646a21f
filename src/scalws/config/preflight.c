/* The files and directories a configuration names, checked as the start will
 * use them, so that --check-config refuses what the start would refuse, with
 * the file, line and key (an access log in a missing directory, a root that
 * is not a directory, a certificate that cannot be read), and the start
 * refuses it before any loop exists. Nothing is created or written here. */
#include "config.h"

#include "cpu.h"
#include "route.h"
#include "sws_tls.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Where key's value came from: "file:line: [section] key", "--flag" for the
 * keys flags set, or "[section] key (default)". */
static void where(const sws_config *c, const sws_cli *cli, const char *section, const char *key,
                  const char *flag, char *out, size_t len) {
    int i = sws_config_key_index(section, key);
    uint8_t origin = i >= 0 ? c->origin[i] : SWS_FROM_DEFAULT;
    if (origin == SWS_FROM_FILE)
        snprintf(out, len, "%s:%" PRIu32 ": [%s] %s", cli->config ? cli->config : "file",
                 c->origin_line[i], section, key);
    else if (origin == SWS_FROM_FLAG)
        snprintf(out, len, "%s", flag ? flag : "command line");
    else
        snprintf(out, len, "[%s] %s (default)", section, key);
}

/* A file the start will make in path's directory (an access log, the
 * pid_file's temporary file and its rename). */
static int new_file_why(const char *path, char *why, size_t len) {
    struct stat st;
    char dir[sizeof(((sws_config *)0)->access_log)];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof(dir), ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    if (stat(dir, &st) < 0) {
        int e = errno;
        snprintf(why, len, "cannot create it: directory %s: %s", dir, strerror(e));
        return -e;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(why, len, "cannot create it: %s is not a directory", dir);
        return -ENOTDIR;
    }
    if (faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) < 0) {
        int e = errno;
        snprintf(why, len, "cannot create it in %s: %s", dir, strerror(e));
        return -e;
    }
    return 0;
}

/* The access log as log_files.c opens it (O_APPEND): an existing file must open
 * for appending, else its directory must let a file be made in it. */
static int access_log_why(const char *path, char *why, size_t len) {
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            snprintf(why, len, "is a directory");
            return -EISDIR;
        }
        if (S_ISFIFO(st.st_mode)) /* opening one would wait for its reader */
            return faccessat(AT_FDCWD, path, W_OK, AT_EACCESS) == 0 ? 0 : -errno;
        int fd = open(path, O_WRONLY | O_APPEND | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) {
            int e = errno;
            snprintf(why, len, "cannot open: %s", strerror(e));
            return -e;
        }
        close(fd);
        return 0;
    }
    if (errno != ENOENT) {
        int e = errno;
        snprintf(why, len, "%s", strerror(e));
        return -e;
    }
    return new_file_why(path, why, len);
}

/* The static scenario's root and mime_types as it opens them at start. */
static int static_files(const sws_static_config *st, const char *root_at, const char *mime_at,
                        char *err, size_t errlen) {
    int fd = open(st->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "%s %s: %s", root_at, st->root, strerror(e));
        return -e;
    }
    close(fd);
    FILE *f = fopen(st->mime_types, "re");
    if (!f) {
        int e = errno;
        snprintf(err, errlen, "%s %s: %s", mime_at, st->mime_types, strerror(e));
        return -e;
    }
    fclose(f);
    return 0;
}

int sws_config_preflight(const sws_config *c, const sws_cli *cli, unsigned what, char *err,
                         size_t errlen) {
    char at[400], at2[400], why[400];
    sws_cpus cpus;
    if ((what & SWS_PRE_LOOPS) && c->accept == SWS_ACCEPT_REUSE_PORT_CPU && c->event_loops > 0 &&
        sws_cpus_probe(&cpus) == 0 && c->event_loops > cpus.in_mask) {
        /* balance.c maps a CPU to the loop pinned there: one CPU per loop
         * (inherited sockets aside, which turn the route into exclusive). */
        where(c, cli, "server", "accept", NULL, at, sizeof(at));
        snprintf(err, errlen,
                 "%s = reuse-port-cpu needs one CPU per loop: event_loops = %d, %d CPU%s in the "
                 "affinity mask",
                 at, c->event_loops, cpus.in_mask, cpus.in_mask == 1 ? "" : "s");
        return -EINVAL;
    }
    if ((what & SWS_PRE_LOOPS) && c->accept == SWS_ACCEPT_HANDOFF && c->acceptors > 1) {
        /* The loops as server.c plans them (inherited sockets aside). */
        int loops = c->event_loops;
        if (loops == 0)
            loops = 1;
        else if (loops < 0)
            loops = sws_cpus_probe(&cpus) == 0 ? cpus.available : c->acceptors;
        if (c->acceptors > loops) {
            where(c, cli, "server", "acceptors", NULL, at, sizeof(at));
            snprintf(err, errlen,
                     "%s = %d: more than the %d loop%s (each acceptor feeds one at least)", at,
                     c->acceptors, loops, loops == 1 ? "" : "s");
            return -EINVAL;
        }
    }
    if ((what & SWS_PRE_ACCESS_LOG) && c->access_log[0]) {
        int rc = access_log_why(c->access_log, why, sizeof(why));
        if (rc < 0) {
            where(c, cli, "server", "access_log", NULL, at, sizeof(at));
            snprintf(err, errlen, "%s %s: %s", at, c->access_log, why);
            return rc;
        }
    }
    const sws_routes *t = c->routes;
    for (int i = 1; (what & SWS_PRE_ACCESS_LOG) && t && i < t->n; i++) {
        const sws_route *r = &t->r[i];
        if (!r->own_log || !r->log_path[0])
            continue;
        int rc = access_log_why(r->log_path, why, sizeof(why));
        if (rc < 0) {
            snprintf(err, errlen, "%s:%" PRIu32 ": [route %s] access_log %s: %s",
                     cli->config ? cli->config : "file", r->access_log_line, r->name, r->log_path,
                     why);
            return rc;
        }
    }
    if ((what & SWS_PRE_PID_FILE) && c->pid_file[0]) {
        struct stat st;
        int rc = 0;
        if (stat(c->pid_file, &st) == 0 && S_ISDIR(st.st_mode)) {
            snprintf(why, sizeof(why), "is a directory");
            rc = -EISDIR;
        } else {
            rc = new_file_why(c->pid_file, why, sizeof(why));
        }
        if (rc < 0) {
            where(c, cli, "server", "pid_file", NULL, at, sizeof(at));
            snprintf(err, errlen, "%s %s: %s", at, c->pid_file, why);
            return rc;
        }
    }
    for (int i = 0; (what & SWS_PRE_STATIC) && t && i < t->n; i++) {
        const sws_route *r = &t->r[i];
        if (r->cfg.scenario != SWS_SCENARIO_STATIC)
            continue;
        if (i == 0) {
            where(c, cli, "static", "root", "--root", at, sizeof(at));
            where(c, cli, "static", "mime_types", NULL, at2, sizeof(at2));
        } else {
            /* A route's own keys: named by the route, not by [static]. */
            const char *file = cli->config ? cli->config : "file";
            snprintf(at, sizeof(at), "%s:%" PRIu32 ": [route %s] root", file, r->root_line,
                     r->name);
            if (r->mime_types_line)
                snprintf(at2, sizeof(at2), "%s:%" PRIu32 ": [route %s] mime_types", file,
                         r->mime_types_line, r->name);
            else
                snprintf(at2, sizeof(at2), "%s: [route %s] mime_types (default)", r->origin,
                         r->name);
        }
        int rc = static_files(&r->cfg.stat, at, at2, err, errlen);
        if (rc < 0)
            return rc;
    }
    if ((what & SWS_PRE_TLS) && c->listen_tls) {
        /* As nginx -t: every certificate, key and OCSP file is read and
         * checked, then the contexts are built (ACME's pair is ACME's to make:
         * it may not be there yet). */
        sws_tls_build b;
        sws_config_tls_build(c, &b);
        sws_tls_cert_config *mine = calloc((size_t)b.ncerts + 1, sizeof(*mine));
        if (!mine) {
            snprintf(err, errlen, "out of memory");
            return -ENOMEM;
        }
        int n = 0;
        for (int i = 0; i < b.ncerts; i++) {
            const sws_tls_cert_config *cc = &b.certs[i];
            bool acmes = cc->name[0] ? sws_acme_is_order_cert(c, cc->name) : c->tls_from_acme;
            if (!acmes)
                mine[n++] = *cc;
        }
        b.certs = mine;
        b.ncerts = n;
        if (b.ncerts > 0) {
            sws_tls_keys *k = sws_tls_keys_new();
            b.keys = k;
            sws_tls_server *ts = k ? sws_tls_server_new(&b, err, errlen) : NULL;
            if (!k)
                snprintf(err, errlen, "[tls] cannot make session ticket keys");
            sws_tls_server_free(ts);
            sws_tls_keys_free(k);
            if (!ts) {
                free(mine);
                return -EINVAL;
            }
        }
        free(mine);
    }
    return 0;
}

void sws_config_preflight_notes(FILE *f, const sws_config *c, const sws_cli *cli) {
    if (c->load_note[0])
        fprintf(f, "scalwsd: warning: %s\n", c->load_note);
    if (c->listen_tls)
        return;
    /* [tls] is read for a tls listener only: set without one, it is likely a
     * listen line that lost its "tls". */
    uint32_t first = 0;
    for (int i = 0; i < sws_config_nkeys; i++) {
        const sws_key *k = &sws_config_keys[i];
        if (strcmp(k->section, "tls") != 0 || c->origin[i] != SWS_FROM_FILE)
            continue;
        /* A default written out (as --print-config writes every key) is no
         * sign of a lost "tls". */
        char v[512];
        sws_config_format(c, k, v, sizeof(v));
        if (strcmp(v, k->def ? k->def : "") != 0 && (!first || c->origin_line[i] < first))
            first = c->origin_line[i];
    }
    const char *section = "[tls]";
    char named[SWS_TLS_SECTION_MAX + 8];
    for (int i = 0; c->tls_certs && i < c->tls_certs->n; i++) {
        const sws_tls_cert_config *cc = &c->tls_certs->c[i];
        if (cc->name[0] && cc->line && (!first || cc->line < first)) {
            first = cc->line;
            snprintf(named, sizeof(named), "[tls %s]", cc->name);
            section = named;
        }
    }
    if (first)
        fprintf(f,
                "scalwsd: warning: %s:%" PRIu32 ": %s is not used: no listener is tls "
                "(%s is %s; write \"listen = %s tls\" for HTTPS)\n",
                cli->config ? cli->config : "file", first, section, c->listen_origin,
                c->listeners[0].addr.text, c->listeners[0].addr.text);
}
