/* scalwsd's entry: command line, config, then the server's loops on their own
 * threads while this thread becomes the control thread (signals, admin, drain).
 * Signals are blocked before any thread starts, so only signalfd sees them. */
#include "sws.h"

#include "acme_run.h"
#include "acme_store.h"
#include "reexec.h"
#include "reload.h"
#include "route.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>
#ifdef SWS_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

static void usage(FILE *f) {
    fprintf(f,
            "usage: scalwsd [options]\n"
            "  -c, --config FILE        ini file ([section] key = value); every key has a\n"
            "                           default, so none is needed\n"
            "  -l, --listen LIST        listen on host:port [tls] [name=NAME] [http2=off],\n"
            "                           comma separated (replaces [server] listen's lines)\n"
            "  -w, --worker-threads N   number of event loops (overrides [server] event_loops);\n"
            "                           with event_loops = 0, threads of the shared loop\n"
            "  -s, --scenario NAME      respond, proxy, static or redirect (overrides [server]\n"
            "                           scenario)\n"
            "  -r, --root DIR           serve the files below DIR (sets [static] root; implies\n"
            "                           --scenario static)\n"
            "  -u, --upstream LIST      host:port[,host:port...] (overrides [proxy] upstream)\n"
            "      --ready-file FILE    once every listener is bound, write FILE (atomically):\n"
            "                           a 'listen ADDR [tls] [name=NAME]' line per listener,\n"
            "                           'admin ADDR', then 'pid N'\n"
            "  -t, --check-config       validate the configuration and exit\n"
            "  -T, --print-config       print the effective configuration (every key, its\n"
            "                           value and where it came from) and exit\n"
            "  -h, --help               this text\n"
            "  -V, --version            print the version\n"
            "Without options it serves the respond scenario on 127.0.0.1:8080. Port 0 (as in\n"
            "127.0.0.1:0) lets the kernel choose; the start line, /status and --ready-file\n"
            "name the port bound.\n"
            "SIGTERM/SIGINT drain gracefully; a second signal exits at once.\n"
            "SIGHUP reads the configuration again (listeners kept; see scalwsd(8)).\n"
            "SIGUSR1 reopens the access logs (rotation: move the files, then signal).\n"
            "SIGUSR2 starts a new scalwsd on the same listening sockets (zero-loss restart);\n"
            "the old one drains by itself once the new one serves on every loop.\n"
            "Configuration keys, their defaults ((restart): SIGHUP cannot change it):\n");
    sws_config_usage(f);
}

/* Long options without a short form. */
enum { OPT_READY_FILE = 256 };

/* The ACME thread asks for its certificate to be loaded (acme_run.h). */
static void acme_install(void *ctx) {
    sws_server *s = ctx;
    uint64_t one = 1;
    if (write(s->acme_fd, &one, sizeof(one)) < 0)
        fprintf(stderr, "scalwsd: acme: cannot wake the control thread\n");
}

/* [acme]: the challenge listener (for a tls server listener) and the ACME
 * thread, once the loops serve. */
static int start_acme(sws_server *s, const sws_config *cfg, char *err, size_t errlen) {
    if (cfg->acme_http.len) {
        /* Shared with a SIGUSR2 successor while both run (each answers the
         * tokens it published; a miss is a failed challenge, retried). */
        s->acme_http_fd =
            sws_admin_listen(&cfg->acme_http, "[acme] http_listen", true, err, errlen);
        if (s->acme_http_fd < 0)
            return s->acme_http_fd;
        fprintf(stderr, "scalwsd: acme: HTTP-01 challenges on %s\n", cfg->acme_http.text);
    }
    if (cfg->listen_tls) {
        s->acme_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (s->acme_fd < 0) {
            snprintf(err, errlen, "acme: eventfd: %s", strerror(errno));
            return -errno;
        }
    }
    /* A thread per order: one that waits on a CA never holds back another. */
    void (*install)(void *) = cfg->listen_tls ? acme_install : NULL;
    if (cfg->acme.ndomains &&
        !(s->acme[s->nacme++] = sws_acme_start(&cfg->acme, install, s, err, errlen)))
        return -EINVAL;
    for (int i = 0; i < cfg->nacme_orders; i++)
        if (!(s->acme[s->nacme++] =
                  sws_acme_start(&cfg->acme_orders[i].a, install, s, err, errlen)))
            return -EINVAL;
    return 0;
}

/* Every order's state_dir holds a pair before the TLS listener reads them
 * (a placeholder until the first issue). */
static int prepare_acme(const sws_config *cfg, char *err, size_t errlen) {
    if (sws_acme_store_open(cfg->acme.state_dir, err, errlen) < 0)
        return -EINVAL;
    /* The account key, made here once: the orders' threads share it. */
    EVP_PKEY *account = sws_acme_store_account_key(cfg->acme.state_dir, err, errlen);
    if (!account)
        return -EINVAL;
    EVP_PKEY_free(account);
    if (cfg->acme.ndomains && sws_acme_store_prepare(&cfg->acme, err, errlen) < 0)
        return -EINVAL;
    for (int i = 0; i < cfg->nacme_orders; i++)
        if (sws_acme_store_prepare(&cfg->acme_orders[i].a, err, errlen) < 0)
            return -EINVAL;
    return 0;
}

int main(int argc, char **argv) {
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},
        {"listen", required_argument, NULL, 'l'},
        {"worker-threads", required_argument, NULL, 'w'},
        {"scenario", required_argument, NULL, 's'},
        {"upstream", required_argument, NULL, 'u'},
        {"root", required_argument, NULL, 'r'},
        {"ready-file", required_argument, NULL, OPT_READY_FILE},
        {"check-config", no_argument, NULL, 't'},
        {"print-config", no_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    const char *config = NULL, *listen = NULL, *threads = NULL, *scenario = NULL, *upstream = NULL;
    const char *root = NULL;
    const char *ready_file = NULL;
    bool check = false, print = false;
    int ch;
    while ((ch = getopt_long(argc, argv, "c:l:w:s:u:r:tThV", opts, NULL)) != -1) {
        switch (ch) {
        case 'c':
            config = optarg;
            break;
        case 'l':
            listen = optarg;
            break;
        case 'w':
            threads = optarg;
            break;
        case 's':
            scenario = optarg;
            break;
        case 'u':
            upstream = optarg;
            break;
        case 'r':
            root = optarg;
            break;
        case OPT_READY_FILE:
            ready_file = optarg;
            break;
        case 't':
            check = true;
            break;
        case 'T':
            print = true;
            break;
        case 'h':
            usage(stdout);
            return 0;
        case 'V':
            printf("scalwsd %s (turnloop %s)\n", SWS_VERSION, TL_VERSION_STRING);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "scalwsd: unexpected argument '%s' (see --help)\n", argv[optind]);
        return 2;
    }

    static sws_config cfg; /* large (the body); static keeps it off the stack */
    char err[512];
    const sws_cli cli = {.config = config,
                         .listen = listen,
                         .threads = threads,
                         .scenario = scenario,
                         .upstream = upstream,
                         .root = root};
    if (sws_config_build(&cfg, &cli, err, sizeof(err)) < 0) {
        fprintf(stderr, "scalwsd: %s\n", err);
        return 2;
    }
    if (print) {
        sws_config_print(stdout, &cfg, &cli);
        return 0;
    }
    if (!check && sws_acme_enabled(&cfg.acme) && prepare_acme(&cfg, err, sizeof(err)) < 0) {
        /* state_dir with a pair in it (a placeholder until the first issue). */
        fprintf(stderr, "scalwsd: %s\n", err);
        return 2;
    }
    /* The same checks for -t and the start: what the start would refuse in
     * the files the configuration names is refused here, with file:line. */
    sws_config_preflight_notes(stderr, &cfg, &cli);
    if (sws_config_preflight(&cfg, &cli, SWS_PRE_ALL, err, sizeof(err)) < 0) {
        fprintf(stderr, "scalwsd: %s\n", err);
        return 2;
    }
    sws_routes_notes(stderr, &cfg);
    if (check) {
        printf("scalwsd: configuration ok (%s)\n", config ? config : "defaults");
        return 0;
    }

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);  /* reload (reload.c), never the default action (exit) */
    sigaddset(&set, SIGUSR1); /* reopen the access logs (log_reopen.c) */
    sigaddset(&set, SIGUSR2); /* re-exec on the same sockets (reexec.c) */
    sigaddset(&set, SIGCHLD); /* how that new process ended, if it did */
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    int sigfd = signalfd(-1, &set, SFD_CLOEXEC);
    if (sigfd < 0) {
        fprintf(stderr, "scalwsd: signalfd: %s\n", strerror(errno));
        return 1;
    }

    sws_inherit_parse();
    sws_reexec_init(argv);
    int admin_fd = -1;
    if (cfg.admin_enabled && sws_inherited_admin() >= 0) {
        /* A SIGUSR2 re-exec passed the admin socket with the others. */
        admin_fd = sws_inherited_admin();
        fcntl(admin_fd, F_SETFL, fcntl(admin_fd, F_GETFL) | O_NONBLOCK);
    } else if (cfg.admin_enabled) {
        admin_fd = sws_admin_open(&cfg, err, sizeof(err));
        if (admin_fd < 0) {
            fprintf(stderr, "scalwsd: %s\n", err);
            return 2;
        }
    }

    static sws_server srv;
    srv.ninherited = sws_inherited_http(&srv.inherited_fds, &srv.inherited_of);
    srv.ninherited_named = sws_inherited_named(&srv.inherited_named);
    srv.reload_apply = sws_reload_apply;
    int rc = sws_server_start(&srv, &cfg, err, sizeof(err));
    if (rc < 0) {
        fprintf(stderr, "scalwsd: %s\n", err);
        return rc == -ENOMEM ? 1 : 2;
    }
    if (admin_fd >= 0) {
        if (sws_sockname_text(admin_fd, srv.admin_text, sizeof(srv.admin_text)) < 0)
            snprintf(srv.admin_text, sizeof(srv.admin_text), "%s", cfg.admin.text);
        fprintf(stderr, "scalwsd: admin on %s (/metrics, /status)\n", srv.admin_text);
    }
    /* A SIGUSR2 restart: the old process drains once every loop turns here
     * (its threads were started by sws_server_start; 5 s at most, then it is
     * told anyway: the listeners are bound and queue connections). */
    for (int i = 0; i < 5000 && atomic_load(&srv.turning) < srv.nthreads; i++)
        nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
    sws_reexec_tell_ready();
    /* Once it serves: a SIGUSR2's new process takes the file over here. */
    if (cfg.pid_file[0] && (rc = sws_pid_file_write(cfg.pid_file)) < 0)
        fprintf(stderr, "scalwsd: pid_file %s: %s\n", cfg.pid_file, strerror(-rc));
    /* The ready file last: when it appears, the pid file is there too (a
     * script that reads one after the other never races the other's write). */
    if (ready_file && (rc = sws_ready_write(ready_file, &srv)) < 0)
        /* Serving already; whoever waits for the file will say it is missing. */
        fprintf(stderr, "scalwsd: --ready-file %s: %s\n", ready_file, strerror(-rc));
#ifdef SWS_HAVE_SYSTEMD
    sd_notify(0, "READY=1");
#endif
    sws_reload_init(&cli, &cfg);
    if (sws_acme_enabled(&cfg.acme) && start_acme(&srv, &cfg, err, sizeof(err)) < 0) {
        fprintf(stderr, "scalwsd: %s\n", err);
        return 2;
    }
    int status = sws_control_run(&srv, sigfd, admin_fd);
    if (cfg.pid_file[0])
        sws_pid_file_remove(cfg.pid_file);
    for (int i = 0; i < srv.nacme; i++)
        sws_acme_stop(srv.acme[i]);
    if (srv.acme_fd >= 0)
        close(srv.acme_fd);
    if (srv.acme_http_fd >= 0)
        close(srv.acme_http_fd);
    sws_server_free(&srv);
    sws_reload_free_all();
    sws_tls_server_free(cfg.tls_server);
    sws_config_release(&cfg);
    if (admin_fd >= 0)
        close(admin_fd);
    close(sigfd);
    return status;
}
