/* SIGHUP reload. The control thread builds a new config from the same file and
 * flags, refuses what would need new listeners, loops or buffers, and posts the
 * config to every loop; each loop switches inside its own turn. A config is
 * freed once every loop has left it (a count of loops still on it). */
#include "reload.h"

#include "access_log.h"
#include "log_files.h"
#include "quic_host.h"
#include "route.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef SWS_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

typedef struct gen {
    sws_config cfg;   /* first member: a loop's cfg pointer is its gen's address */
    _Atomic int refs; /* loops that will still leave it */
    /* Its access log files, opened anew (a reload reopens them, as nginx's
     * HUP does): a reference per loop, each taken by the loop's switch. */
    sws_log_files *logs;
    unsigned number;
    struct gen *next; /* retired list */
} gen;

/* Control thread only, except initial and initial_refs, which loops read and
 * decrement once they have been posted a reload. */
static struct {
    sws_cli cli;
    const sws_config *initial;
    _Atomic int initial_refs;
    bool initial_retired;
    gen *current; /* NULL while the initial config serves */
    gen *retired;
    unsigned number;
    bool waiting;    /* posted, not yet left by every loop */
    const char *why; /* "SIGHUP" or "acme": what the last posted generation is for */
    uint64_t posted_ms;
} R;

static void notify(const char *state) {
#ifdef SWS_HAVE_SYSTEMD
    if (strcmp(state, "RELOADING=1") == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64,
                   (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u);
    } else {
        sd_notify(0, state);
    }
#else
    (void)state;
#endif
}

void sws_reload_init(const sws_cli *cli, const sws_config *initial) {
    R.cli = *cli;
    R.initial = initial;
}

/* What cannot change without a restart: every key the config table marks so
 * (the listeners, the loops, their handle tables, the admin listener, the
 * proxy's pools), and what the scenario says (reload_refuses: the respond
 * answer's room). NULL if none changed, else the first one, described in buf. */
static const char *fixed_change(const sws_server *s, const sws_config *o, const sws_config *n,
                                char *buf, size_t len) {
    const char *key = sws_config_restart_change(o, n, buf, len);
    if (key)
        return key;
    /* The ACME threads keep the orders they started with, as [acme]'s keys. */
    bool orders = o->nacme_orders != n->nacme_orders;
    for (int i = 0; !orders && i < n->nacme_orders; i++)
        orders = memcmp(&o->acme_orders[i].a, &n->acme_orders[i].a, sizeof(n->acme_orders[i].a));
    if (orders) {
        snprintf(buf, len, "[acme NAME] sections changed");
        return buf;
    }
    /* Routes: a scenario no route served at start found the loops' buffers
     * and handles sized without it; each scenario served checks its routes. */
    unsigned seen = 0;
    for (int i = 0; i < n->routes->n; i++) {
        const sws_route *r = &n->routes->r[i];
        /* An error answer goes out whole: its page within the room of an
         * answer, which the buffers sized at start bound. */
        uint32_t room = s->workers[0].out_cap / 4;
        if (sws_error_pages_room(&r->cfg) > room) {
            snprintf(buf, len,
                     "[%s%s] error_page of %u bytes does not fit the connection buffers sized "
                     "at start (up to %u bytes)",
                     i ? "route " : "server", i ? r->name : "", r->cfg.pages->largest,
                     room - (sws_error_pages_room(&r->cfg) - r->cfg.pages->largest));
            return buf;
        }
        unsigned bit = 1u << r->cfg.scenario;
        if (!(s->kinds_at_start & bit)) {
            snprintf(buf, len,
                     "[route %s] scenario %s: no route served it at start (buffers are sized "
                     "for the scenarios of the start)",
                     r->name, sws_scenario_ops_of(r->cfg.scenario)->name);
            return buf;
        }
        const sws_scenario_ops *ops = sws_scenario_ops_of(r->cfg.scenario);
        if (!(seen & bit) && ops->reload_refuses) {
            const char *why = ops->reload_refuses(s, o, n, buf, len);
            if (why)
                return why;
        }
        seen |= bit;
    }
    /* The loops' handle ceilings were fixed at start (the proxy routes'
     * upstream connections and pools). */
    uint32_t need = sws_scenarios_extra_handles(n), have = s->extra_handles;
    if (need > have) {
        snprintf(buf, len,
                 "the routes need %u upstream handles per loop, the loops were made with %u "
                 "(pool_per_loop x upstreams of each proxy route)",
                 need, have);
        return buf;
    }
    return NULL;
}

static void post_gen(sws_server *s, gen *g, const char *what);

/* g's access log files, with a reference for each loop; a file that cannot
 * be opened again keeps the one open now (log_files.h). */
static int open_logs(sws_server *s, gen *g, char *err, size_t len) {
    char why[400];
    int rc = sws_log_files_open(g->cfg.routes, s->logs, s->nloops, &g->logs, why, sizeof(why));
    if (rc < 0)
        snprintf(err, len, "access log %s", why);
    return rc;
}

void sws_reload_begin(sws_server *s) {
    const char *file = R.cli.config ? R.cli.config : "(no file: defaults and flags)";
    char err[600], why[400];
    notify("RELOADING=1");
    if (atomic_load(&s->drain)) {
        fprintf(stderr, "scalwsd: SIGHUP: draining; reload ignored\n");
        notify("READY=1");
        return;
    }
    gen *g = calloc(1, sizeof(*g));
    if (!g) {
        fprintf(stderr, "scalwsd: SIGHUP: reload failed, still serving the previous "
                        "configuration: out of memory\n");
        notify("READY=1");
        return;
    }
    const char *bad = NULL;
    if (sws_config_build(&g->cfg, &R.cli, err, sizeof(err)) < 0)
        bad = err;
    /* A root or mime_types that cannot be opened, refused as at start (the
     * TLS files below; an access log that cannot be opened leaves the old
     * one in use, see sws_reload_apply). */
    else if (sws_config_preflight(&g->cfg, &R.cli, SWS_PRE_STATIC, err, sizeof(err)) < 0)
        bad = err;
    else if ((bad = fixed_change(s, s->cfg, &g->cfg, why, sizeof(why))) != NULL) {
        snprintf(err, sizeof(err), "%s; that needs a restart", bad);
        bad = err;
    }
    if (!bad && g->cfg.listen_tls) {
        /* Each certificate from its files, for new handshakes: one that is
         * refused here, before any loop sees it, keeps the one it had
         * serving, and the others are reloaded. Settings OpenSSL refuses
         * refuse the reload. */
        sws_tls_build b;
        sws_config_tls_build(&g->cfg, &b);
        b.nloops = s->nloops;
        b.keys = s->tls_keys;
        b.prev = s->cfg->tls_server;
        g->cfg.tls_server = sws_tls_server_new(&b, err, sizeof(err));
        if (!g->cfg.tls_server)
            bad = err;
        else
            sws_tls_log_refused(stderr, g->cfg.tls_server, "SIGHUP");
    }
    if (!bad && sws_route_slots_assign(g->cfg.routes, err, sizeof(err)) < 0)
        bad = err;
    if (!bad && sws_route_health_build(s, g->cfg.routes, err, sizeof(err)) < 0)
        bad = err;
    if (!bad && open_logs(s, g, err, sizeof(err)) < 0)
        bad = err;
    if (bad) {
        fprintf(stderr,
                "scalwsd: SIGHUP: reload refused, still serving the previous configuration: %s\n",
                bad);
        sws_tls_server_free(g->cfg.tls_server);
        sws_config_release(&g->cfg);
        free(g);
        notify("READY=1");
        return;
    }
    sws_config_preflight_notes(stderr, &g->cfg, &R.cli);
    char what[400];
    snprintf(what, sizeof(what), "SIGHUP: reloading %s", file);
    R.why = "SIGHUP";
    post_gen(s, g, what);
}

/* g is checked and complete: it becomes the control thread's config and is
 * posted to every loop, which switches inside its own turn. */
static void post_gen(sws_server *s, gen *g, const char *what) {
    g->number = ++R.number;
    atomic_init(&g->refs, s->nloops);
    /* The control thread's own reads (drain timeout, /status) switch now. */
    if (R.current) {
        R.current->next = R.retired;
        R.retired = R.current;
    } else if (!R.initial_retired) {
        R.initial_retired = true;
        atomic_store(&R.initial_refs, s->nloops);
    }
    R.current = g;
    s->cfg = &g->cfg;
    int failed = 0;
    for (int i = 0; i < s->nloops; i++) {
        tl_message m = {.value = (uint64_t)(uintptr_t)&g->cfg};
        if (tl_loop_post(s->loops[i], sws_token(SWS_POST_RELOAD, SWS_T_POST), &m) < 0) {
            /* That loop stays on its config, which stays alive: it never leaves it. */
            fprintf(stderr, "scalwsd: SIGHUP: cannot post the reload to loop %d\n", i);
            failed++;
        }
    }
    if (failed) {
        atomic_fetch_sub(&g->refs, failed);
        for (int i = 0; i < failed; i++)
            sws_log_files_unref(g->logs); /* those loops never take theirs */
    }
    /* The control thread's reference follows the newest set (SIGUSR1 reopens it). */
    if (g->logs)
        atomic_fetch_add(&g->logs->refs, 1);
    sws_log_files_unref(s->logs);
    s->logs = g->logs;
    R.waiting = true;
    R.posted_ms = sws_now_ms();
    fprintf(stderr, "scalwsd: %s (generation %u)\n", what, g->number);
    sws_reload_poll(s);
}

int sws_reload_tls(sws_server *s, const char *name, char *why, size_t len) {
    if (atomic_load(&s->drain)) {
        snprintf(why, len, "draining");
        return -EAGAIN;
    }
    if (!s->cfg->listen_tls) {
        snprintf(why, len, "no tls listener");
        return -EINVAL;
    }
    gen *g = calloc(1, sizeof(*g));
    if (!g) {
        snprintf(why, len, "out of memory");
        return -ENOMEM;
    }
    /* The same configuration (no file is read again), with the order's pair
     * (NAME's, or [tls]'s for [acme]) loaded from its files as they are now
     * and every other certificate as it was; a bad pair is refused here and
     * the old contexts keep serving. The pair is in the configuration's
     * list, so a SIGHUP reads it again from the same files. */
    g->cfg = *s->cfg;
    sws_routes_ref(g->cfg.routes); /* the copy shares the table */
    sws_tls_certs_ref(g->cfg.tls_certs);
    const sws_tls_cert_config *pair = sws_tls_certs_find(g->cfg.tls_certs, name);
    g->cfg.tls_server = pair ? sws_tls_server_replace(s->cfg->tls_server, pair, why, len) : NULL;
    if (!pair)
        snprintf(why, len, "no certificate %s%s%s in the configuration",
                 name[0] ? "[acme " : "[tls]", name, name[0] ? "]" : "");
    if (!g->cfg.tls_server) {
        sws_config_release(&g->cfg);
        free(g);
        return -EINVAL;
    }
    if (open_logs(s, g, why, len) < 0) {
        sws_tls_server_free(g->cfg.tls_server);
        sws_config_release(&g->cfg);
        free(g);
        return -EIO;
    }
    notify("RELOADING=1");
    R.why = "acme";
    post_gen(s, g, "acme: loading the new certificate");
    return 0;
}

int sws_reload_poll(sws_server *s) {
    (void)s;
    if (!R.waiting)
        return -1;
    bool pending = R.initial_retired && atomic_load(&R.initial_refs) > 0;
    for (gen **p = &R.retired; *p;) {
        gen *g = *p;
        if (atomic_load_explicit(&g->refs, memory_order_acquire) == 0) {
            *p = g->next;
            sws_tls_server_free(g->cfg.tls_server); /* open connections keep their SSL_CTX */
            sws_config_release(&g->cfg);
            free(g);
        } else {
            pending = true;
            p = &g->next;
        }
    }
    if (pending)
        return 20;
    R.waiting = false;
    /* Printed only once every older config is freed: the tests rely on it. */
    fprintf(stderr,
            "scalwsd: %s: every loop serves generation %u; older configurations freed (%" PRIu64
            " ms)\n",
            R.why ? R.why : "SIGHUP", R.current ? R.current->number : 0,
            sws_now_ms() - R.posted_ms);
    notify("READY=1");
    return -1;
}

void sws_reload_free_all(void) {
    while (R.retired) {
        gen *g = R.retired;
        R.retired = g->next;
        sws_tls_server_free(g->cfg.tls_server);
        sws_config_release(&g->cfg);
        free(g);
    }
    if (R.current) {
        sws_tls_server_free(R.current->cfg.tls_server);
        sws_config_release(&R.current->cfg);
    }
    free(R.current);
    R.current = NULL;
}

static void leave(const sws_config *c) {
    if (c == R.initial)
        atomic_fetch_sub_explicit(&R.initial_refs, 1, memory_order_acq_rel);
    else
        atomic_fetch_sub_explicit(&((gen *)(uintptr_t)c)->refs, 1, memory_order_acq_rel);
}

void sws_reload_apply(sws_worker *w, uint64_t value) {
    const sws_config *n = (const sws_config *)(uintptr_t)value;
    const sws_config *old = w->cfg;
    /* The scenario prepares first: if that fails, this loop stays on its
     * config and leaves the new one at once. The control thread checked
     * (reload_refuses) that it fits. */
    if (sws_insts_reload_prepare(w, n) < 0) {
        fprintf(stderr,
                "scalwsd: loop %d: cannot build the reloaded answer; keeping the old "
                "configuration\n",
                w->index);
        sws_log_files_unref(((gen *)(uintptr_t)n)->logs);
        leave(n);
        return;
    }
    /* Every parser points at w->limits: a copy, so this is the only write. */
    w->limits = n->limits;
    w->cfg = n;
    /* Reopened on every reload, so that HUP after a move also rotates the
     * log; between two lines, as every switch. */
    sws_access_log_switch(w, ((gen *)(uintptr_t)n)->logs);
    sws_insts_reload_commit(w, old); /* every route's instance, the default's first */
    /* QUIC's certificate is GnuTLS's, read again here by each loop's
     * endpoint: new connections get the new one (doc/http3.md). */
    sws_quic_reload(w, n);
    leave(old);
}
