/* turnloop-bench --accept-scaling: N loops on N threads serve one loopback port by
 * one accept route of DESIGN.md, K synchronous clients drive a fixed budget of
 * connections, and one JSON line reports the rate and the per-loop counts. It
 * prints nothing unless the subject demonstrably ran (the seed's refusals). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

/* Exit codes: 2 is the caller's mistake or a route/backend this machine cannot
 * run; 3 a refused run (a rule of the seed failed); 1 anything else. */
enum { EXIT_SETUP = 1, EXIT_USAGE = 2, EXIT_REFUSED = 3 };

static const char *const route_names[] = {
    [ROUTE_HANDOFF] = "handoff",     [ROUTE_REUSE_PORT] = "reuse-port",
    [ROUTE_EXCLUSIVE] = "exclusive", [ROUTE_ACCEPTOR] = "acceptor",
    [ROUTE_HERD] = "herd",           [ROUTE_REUSE_PORT_CPU] = "reuse-port-cpu",
};

static void usage(FILE *f) {
    fprintf(
        f,
        "usage: turnloop-bench --accept-scaling --route "
        "handoff|reuse-port|reuse-port-cpu|exclusive|acceptor|herd\n"
        "                      --loops N --connections C --clients K [--payload B] [--portable]\n"
        "                      [--backend auto|epoll|uring] [--policy rr|least-loaded]\n"
        "                      [--acceptors A] [--pin] [--pin-clients]\n"
        "       turnloop-bench --long-lived K --requests R [--seconds S] --route ROUTE --loops N\n"
        "                      [--payload B] [--portable] [--backend ...] [--policy ...] [--pin]\n"
        "\n"
        "N loops on N threads serve one port on 127.0.0.1; K synchronous clients each loop\n"
        "connect, write B bytes (default 64), read the echo, close, until C connections are\n"
        "done. Prints one JSON line, or nothing unless the per-loop counts sum to C, every\n"
        "loop served at least one connection and C >= 100 * N.\n"
        "--portable measures elapsed ns only; otherwise instructions from perf_event_open.\n"
        "--policy applies to handoff and acceptor (default rr).\n"
        "--acceptors A (handoff): A accepting loops, each with its own listener (SO_REUSEPORT\n"
        "share) feeding its own subset of the N loops; 1 <= A <= N, default 1.\n"
        "reuse-port-cpu: the kernel picks the listener of the CPU that handled the SYN (a BPF\n"
        "program); loop i is pinned to the i-th CPU of the affinity mask. --pin pins any route.\n"
        "--pin-clients pins client i to CPU i mod M of the mask (on loopback, where the SYN\n"
        "is processed on the client's CPU, a stand-in for RSS spreading flows over CPUs).\n"
        "--long-lived K: K clients, one keep-alive connection each, R requests back to back\n"
        "(or S seconds, default 10, whichever first); reports per-loop requests and the\n"
        "imbalance index (busiest loop's requests / mean). No loop is required to serve.\n"
        "exit: 0 ok, 2 usage or unsupported route/backend, 3 refused, 1 setup error\n");
}

static _Noreturn void bad_usage(const char *fmt, const char *arg) {
    fprintf(stderr, "turnloop-bench: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n");
    usage(stderr);
    exit(EXIT_USAGE);
}

static _Noreturn void refuse(const char *msg) {
    fprintf(stderr, "turnloop-bench: refused: %s\n", msg);
    exit(EXIT_REFUSED);
}

static _Noreturn void die_setup(const char *what, int err) {
    const char *name = strerrorname_np(-err);
    fprintf(stderr, "turnloop-bench: %s: %s (%s)\n", what, tl_strerror(err), name ? name : "?");
    exit(EXIT_SETUP);
}

static _Noreturn void die_unsupported(const char *what, int err) {
    const char *name = strerrorname_np(-err);
    fprintf(stderr, "turnloop-bench: %s: %s (%s)\n", what, tl_strerror(err), name ? name : "?");
    exit(EXIT_USAGE);
}

static int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out) {
    if (!s || !*s || *s == '-')
        return -EINVAL;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return -EINVAL;
    *out = v;
    return 0;
}

enum {
    OPT_ACCEPT_SCALING = 256,
    OPT_ROUTE,
    OPT_LOOPS,
    OPT_CONNECTIONS,
    OPT_CLIENTS,
    OPT_PAYLOAD,
    OPT_PORTABLE,
    OPT_BACKEND,
    OPT_POLICY,
    OPT_HELP,
    OPT_TEST_IDLE_LOOP,
    OPT_TEST_MISCOUNT,
    OPT_TEST_WATCHDOG_MS,
    OPT_TEST_NO_DISTRIBUTE,
    OPT_TEST_NO_CPU_STEER,
    OPT_TEST_IDLE_ACCEPTOR,
    OPT_ACCEPTORS,
    OPT_PIN,
    OPT_PIN_CLIENTS,
    OPT_LONG_LIVED,
    OPT_REQUESTS,
    OPT_SECONDS,
};

/* The numeric options: each one's range and how its refusal names it. */
static const struct {
    int opt;
    const char *flag;
    uint64_t lo, hi;
    const char *wants;
} num_opts[] = {
    {OPT_LOOPS, "--loops", 1, 256, "an integer in 1..256"},
    {OPT_CONNECTIONS, "--connections", 1, 1000000000ull, "an integer in 1..1000000000"},
    {OPT_CLIENTS, "--clients", 1, 4096, "an integer in 1..4096"},
    {OPT_PAYLOAD, "--payload", 1, 1u << 20, "bytes in 1..1048576"},
    {OPT_ACCEPTORS, "--acceptors", 1, 256, "an integer in 1..256"},
    {OPT_LONG_LIVED, "--long-lived", 1, 4096, "a client count in 1..4096"},
    {OPT_REQUESTS, "--requests", 1, 1000000000ull, "an integer in 1..1000000000"},
    {OPT_SECONDS, "--seconds", 1, 3600, "an integer in 1..3600"},
    {OPT_TEST_WATCHDOG_MS, "--test-watchdog-ms", 1, 3600000, "1..3600000"},
};

/* optarg as the numeric option opt, or the usage error that names its range. */
static uint64_t num_arg(int opt) {
    for (size_t i = 0; i < sizeof(num_opts) / sizeof(num_opts[0]); i++) {
        if (num_opts[i].opt != opt)
            continue;
        uint64_t v;
        if (parse_u64(optarg, num_opts[i].lo, num_opts[i].hi, &v) == 0)
            return v;
        fprintf(stderr, "turnloop-bench: %s wants %s, not '%s'\n", num_opts[i].flag,
                num_opts[i].wants, optarg);
        usage(stderr);
        exit(EXIT_USAGE);
    }
    abort(); /* an option missing from num_opts */
}

static void parse_args(int argc, char **argv, bench_config *cfg) {
    static const struct option opts[] = {
        {"accept-scaling", no_argument, NULL, OPT_ACCEPT_SCALING},
        {"route", required_argument, NULL, OPT_ROUTE},
        {"loops", required_argument, NULL, OPT_LOOPS},
        {"connections", required_argument, NULL, OPT_CONNECTIONS},
        {"clients", required_argument, NULL, OPT_CLIENTS},
        {"payload", required_argument, NULL, OPT_PAYLOAD},
        {"portable", no_argument, NULL, OPT_PORTABLE},
        {"backend", required_argument, NULL, OPT_BACKEND},
        {"policy", required_argument, NULL, OPT_POLICY},
        {"help", no_argument, NULL, OPT_HELP},
        /* Test-only, not in the usage: they make the refusals fire for real. */
        {"test-idle-loop", no_argument, NULL, OPT_TEST_IDLE_LOOP},
        {"test-miscount", no_argument, NULL, OPT_TEST_MISCOUNT},
        {"test-watchdog-ms", required_argument, NULL, OPT_TEST_WATCHDOG_MS},
        {"test-no-distribute", no_argument, NULL, OPT_TEST_NO_DISTRIBUTE},
        {"test-no-cpu-steer", no_argument, NULL, OPT_TEST_NO_CPU_STEER},
        {"test-idle-acceptor", no_argument, NULL, OPT_TEST_IDLE_ACCEPTOR},
        {"acceptors", required_argument, NULL, OPT_ACCEPTORS},
        {"pin", no_argument, NULL, OPT_PIN},
        {"pin-clients", no_argument, NULL, OPT_PIN_CLIENTS},
        {"long-lived", required_argument, NULL, OPT_LONG_LIVED},
        {"requests", required_argument, NULL, OPT_REQUESTS},
        {"seconds", required_argument, NULL, OPT_SECONDS},
        {NULL, 0, NULL, 0},
    };
    int have_mode = 0, have_route = 0, have_loops = 0, have_conns = 0, have_clients = 0;
    int have_policy = 0, have_acceptors = 0, have_requests = 0, have_seconds = 0;
    memset(cfg, 0, sizeof(*cfg));
    cfg->payload = 64;
    cfg->backend = TL_BACKEND_AUTO;
    cfg->policy = TL_HANDOFF_ROUND_ROBIN;
    cfg->watchdog_ms = 60000;
    cfg->acceptors = 1;
    cfg->seconds = 10;
    int have_watchdog = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case OPT_ACCEPT_SCALING:
            have_mode = 1;
            break;
        case OPT_ROUTE: {
            int found = -1;
            for (size_t i = 0; i < sizeof(route_names) / sizeof(route_names[0]); i++)
                if (strcmp(optarg, route_names[i]) == 0)
                    found = (int)i;
            if (found < 0)
                bad_usage("unknown --route '%s'", optarg);
            cfg->route = (bench_route)found;
            have_route = 1;
            break;
        }
        case OPT_LOOPS:
            cfg->loops = (int)num_arg(c);
            have_loops = 1;
            break;
        case OPT_CONNECTIONS:
            cfg->connections = num_arg(c);
            have_conns = 1;
            break;
        case OPT_CLIENTS:
            cfg->clients = (int)num_arg(c);
            have_clients = 1;
            break;
        case OPT_PAYLOAD:
            cfg->payload = (uint32_t)num_arg(c);
            break;
        case OPT_PORTABLE:
            cfg->portable = 1;
            break;
        case OPT_BACKEND:
            if (strcmp(optarg, "auto") == 0)
                cfg->backend = TL_BACKEND_AUTO;
            else if (strcmp(optarg, "epoll") == 0)
                cfg->backend = TL_BACKEND_EPOLL;
            else if (strcmp(optarg, "uring") == 0)
                cfg->backend = TL_BACKEND_URING;
            else
                bad_usage("unknown --backend '%s'", optarg);
            break;
        case OPT_POLICY:
            if (strcmp(optarg, "rr") == 0)
                cfg->policy = TL_HANDOFF_ROUND_ROBIN;
            else if (strcmp(optarg, "least-loaded") == 0)
                cfg->policy = TL_HANDOFF_LEAST_LOADED;
            else
                bad_usage("unknown --policy '%s'", optarg);
            have_policy = 1;
            break;
        case OPT_HELP:
            usage(stdout);
            exit(0);
        case OPT_TEST_IDLE_LOOP:
            cfg->test_idle_loop = 1;
            break;
        case OPT_TEST_MISCOUNT:
            cfg->test_miscount = 1;
            break;
        case OPT_TEST_NO_DISTRIBUTE:
            cfg->test_no_distribute = 1;
            break;
        case OPT_TEST_NO_CPU_STEER:
            cfg->test_no_cpu_steer = 1;
            break;
        case OPT_TEST_IDLE_ACCEPTOR:
            cfg->test_idle_acceptor = 1;
            break;
        case OPT_ACCEPTORS:
            cfg->acceptors = (int)num_arg(c);
            have_acceptors = 1;
            break;
        case OPT_PIN:
            cfg->pin = 1;
            break;
        case OPT_PIN_CLIENTS:
            cfg->pin_clients = 1;
            break;
        case OPT_LONG_LIVED:
            cfg->long_lived = (int)num_arg(c);
            break;
        case OPT_REQUESTS:
            cfg->requests_per_client = num_arg(c);
            have_requests = 1;
            break;
        case OPT_SECONDS:
            cfg->seconds = (uint32_t)num_arg(c);
            have_seconds = 1;
            break;
        case OPT_TEST_WATCHDOG_MS:
            cfg->watchdog_ms = (uint32_t)num_arg(c);
            have_watchdog = 1;
            break;
        default:
            bad_usage("bad option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        bad_usage("unexpected argument '%s'", argv[optind]);
    if (have_mode == !!cfg->long_lived)
        bad_usage("%s", "one mode must be given: --accept-scaling or --long-lived K");
    if (cfg->long_lived) {
        if (!have_route || !have_loops || !have_requests)
            bad_usage("%s", "--long-lived K needs --route, --loops and --requests R");
        if (have_conns || have_clients)
            bad_usage("%s", "--long-lived K has K clients and K connections: no --connections "
                            "or --clients");
        if (!have_watchdog) /* the run is bounded by --seconds; the watchdog is the backstop */
            cfg->watchdog_ms = cfg->seconds * 1000u + 30000u;
    } else {
        if (!have_route || !have_loops || !have_conns || !have_clients)
            bad_usage("%s", "--route, --loops, --connections and --clients are required");
        if (have_requests || have_seconds)
            bad_usage("%s", "--requests and --seconds belong to --long-lived");
    }
    if (have_acceptors && cfg->route != ROUTE_HANDOFF)
        bad_usage("--acceptors applies to handoff, not to %s", route_names[cfg->route]);
    if (cfg->test_idle_acceptor && cfg->acceptors < 2)
        bad_usage("%s", "--test-idle-acceptor needs --acceptors >= 2 (some acceptor must accept)");
    if (cfg->acceptors > cfg->loops)
        bad_usage("%s", "--acceptors must not exceed --loops (each acceptor feeds at least one "
                        "loop)");
    if (have_policy && cfg->route != ROUTE_HANDOFF && cfg->route != ROUTE_ACCEPTOR)
        bad_usage("--policy applies to handoff and acceptor, not to %s", route_names[cfg->route]);
    if (cfg->test_idle_loop && cfg->loops < 2)
        bad_usage("%s", "--test-idle-loop needs --loops >= 2 (some loop must serve)");
}

/* ---- watchdog ------------------------------------------------------------ */

static char watchdog_msg[128];
static size_t watchdog_len;

static void on_watchdog(int sig) {
    (void)sig;
    /* Async-signal-safe: the message was formatted before the run. */
    ssize_t ignored = write(STDERR_FILENO, watchdog_msg, watchdog_len);
    (void)ignored;
    _exit(EXIT_REFUSED);
}

static void arm_watchdog(uint32_t ms) {
    watchdog_len = (size_t)snprintf(watchdog_msg, sizeof(watchdog_msg),
                                    "turnloop-bench: refused: watchdog: the run did not "
                                    "finish within %u ms\n",
                                    ms);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_watchdog;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {.it_value = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000}};
    setitimer(ITIMER_REAL, &it, NULL);
}

/* ---- setup ---------------------------------------------------------------- */

/* The listening socket of the shared routes is the bench's own, as a host
 * sharing one listener across loops would make it. Blocking for the acceptor
 * threads (they sleep in accept4), non-blocking for loops. */
static int make_listener(int nonblock, uint16_t *port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
    if (fd < 0)
        return -errno;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(sa);
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, SOMAXCONN) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
        int err = -errno;
        close(fd);
        return err;
    }
    *port = ntohs(sa.sin_port);
    return fd;
}

static uint16_t handle_port(tl_loop *loop, tl_handle h) {
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    int rc = tl_handle_sockname(loop, h, &ss, &len);
    if (rc < 0)
        die_setup("tl_handle_sockname", rc);
    return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

static void raise_nofile(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static const char *errname(int err) {
    const char *n = strerrorname_np(-err);
    return n ? n : "?";
}

/* ---- the run -------------------------------------------------------------- */

typedef struct run {
    bench_config cfg;
    int n;      /* worker loops: per_loop has n entries */
    int active; /* loops that get connections: n, or n - 1 under --test-idle-loop */
    bench_loop *loops;
    bench_loop *accs; /* the handoff route's accepting loops (--acceptors) */
    int nacc;
    tl_handoff **handoffs; /* one per accepting loop */
    int cpus[256];         /* with --pin or reuse-port-cpu: loop i's CPU */
    int pinned;
    int mask_cpus[CPU_SETSIZE]; /* every CPU of the affinity mask, for --pin-clients */
    int nmask;
    tl_acceptor *acceptor;
    int acceptor_threads;
    int shared_fd;
    uint16_t port;
    _Atomic int stop;
    _Atomic int acc_stop;
} run;

static void new_loop(run *r, bench_loop *bl, int index, _Atomic int *stop) {
    tl_loop_options o = {.backend = r->cfg.backend};
    if (r->cfg.test_no_distribute)
        o.flags |= TL_LOOP_NO_DISTRIBUTE;
    if (r->cfg.test_no_cpu_steer)
        o.flags |= TL_LOOP_NO_CPU_STEER;
    int rc = tl_loop_new(&bl->loop, &o);
    if (rc < 0) {
        if (r->cfg.backend != TL_BACKEND_AUTO) {
            char what[64];
            snprintf(what, sizeof(what), "backend %s cannot run here",
                     r->cfg.backend == TL_BACKEND_URING ? "uring" : "epoll");
            die_unsupported(what, rc);
        }
        die_setup("tl_loop_new", rc);
    }
    bl->index = index;
    bl->cfg = &r->cfg;
    bl->stop = stop;
    bl->cpu = index >= 0 && r->pinned ? r->cpus[index] : -1;
}

/* Loop i on the i-th CPU of the affinity mask, as scalwsd pins its loops;
 * fewer CPUs than loops cannot be pinned one to a CPU, so it is refused. */
static void pick_cpus(run *r) {
    cpu_set_t mask;
    if (sched_getaffinity(0, sizeof(mask), &mask) < 0)
        die_setup("sched_getaffinity", -errno);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &mask))
            r->mask_cpus[r->nmask++] = c;
    if (!r->cfg.pin && r->cfg.route != ROUTE_REUSE_PORT_CPU)
        return;
    int n = 0;
    for (int c = 0; c < CPU_SETSIZE && n < r->n; c++)
        if (CPU_ISSET(c, &mask))
            r->cpus[n++] = c;
    if (n < r->n) {
        char what[96];
        snprintf(what, sizeof(what), "%d loops cannot be pinned one to a CPU on %d CPUs", r->n,
                 CPU_COUNT(&mask));
        die_unsupported(what, -EINVAL);
    }
    r->pinned = 1;
}

static void setup_route(run *r) {
    tl_loop *arr[256];
    for (int i = 0; i < r->active; i++)
        arr[i] = r->loops[i].loop;
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int rc;
    switch (r->cfg.route) {
    case ROUTE_REUSE_PORT: {
        tl_handle hs[256];
        rc = tl_route_reuse_port(arr, r->active, (struct sockaddr *)&sa, sizeof(sa), 0, hs);
        if (rc == -EOPNOTSUPP)
            die_unsupported("route reuse-port refused: this platform cannot distribute", rc);
        if (rc < 0)
            die_setup("tl_route_reuse_port", rc);
        for (int i = 0; i < r->active; i++) {
            r->loops[i].listener = hs[i];
            r->loops[i].accepting = 1;
        }
        r->port = handle_port(arr[0], hs[0]);
        break;
    }
    case ROUTE_EXCLUSIVE:
    case ROUTE_HERD: {
        r->shared_fd = make_listener(1, &r->port);
        if (r->shared_fd < 0)
            die_setup("listening socket", r->shared_fd);
        unsigned flags = r->cfg.route == ROUTE_EXCLUSIVE ? TL_SHARED_EXCLUSIVE : 0;
        for (int i = 0; i < r->active; i++) {
            rc = tl_listen_shared(arr[i], r->shared_fd, flags, &r->loops[i].listener);
            if (rc == -EOPNOTSUPP)
                die_unsupported("route exclusive refused by this backend", rc);
            if (rc < 0)
                die_setup("tl_listen_shared", rc);
            r->loops[i].accepting = 1;
        }
        break;
    }
    case ROUTE_ACCEPTOR:
        r->shared_fd = make_listener(0, &r->port);
        if (r->shared_fd < 0)
            die_setup("listening socket", r->shared_fd);
        /* One blocking accept thread per serving loop, as yahns runs one
         * acceptor per worker; the policy, not the thread, picks the loop. */
        r->acceptor_threads = r->active;
        break;
    case ROUTE_REUSE_PORT_CPU: {
        tl_handle hs[256];
        rc = tl_route_reuse_port_cpu(arr, r->active, (struct sockaddr *)&sa, sizeof(sa), 0, r->cpus,
                                     hs);
        if (rc == -EOPNOTSUPP)
            die_unsupported("route reuse-port-cpu refused: this kernel cannot steer by CPU "
                            "(SO_ATTACH_REUSEPORT_CBPF)",
                            rc);
        if (rc < 0)
            die_setup("tl_route_reuse_port_cpu", rc);
        for (int i = 0; i < r->active; i++) {
            r->loops[i].listener = hs[i];
            r->loops[i].accepting = 1;
        }
        r->port = handle_port(arr[0], hs[0]);
        break;
    }
    case ROUTE_HANDOFF: {
        r->nacc = r->cfg.acceptors;
        r->accs = calloc((size_t)r->nacc, sizeof(bench_loop));
        r->handoffs = calloc((size_t)r->nacc, sizeof(tl_handoff *));
        if (!r->accs || !r->handoffs)
            die_setup("calloc", -ENOMEM);
        tl_loop *accs[256];
        for (int a = 0; a < r->nacc; a++) {
            new_loop(r, &r->accs[a], -1 - a, &r->acc_stop);
            accs[a] = r->accs[a].loop;
        }
        tl_handle ls[256];
        if (r->nacc == 1) {
            tl_listen_options lo = {.reuse_port = TL_REUSE_PORT_NO};
            rc = tl_listen(accs[0], (struct sockaddr *)&sa, sizeof(sa), &lo, &ls[0]);
            if (rc < 0)
                die_setup("tl_listen", rc);
            rc = tl_handoff_new(&r->handoffs[0], arr, r->active, r->cfg.policy);
            if (rc < 0)
                die_setup("tl_handoff_new", rc);
        } else {
            /* --test-idle-loop leaves the last loop out of every subset. */
            if (r->nacc > r->active)
                bad_usage("%s", "--acceptors must not exceed the loops that serve");
            rc = tl_route_handoff_group(accs, r->nacc, arr, r->active, r->cfg.policy,
                                        (struct sockaddr *)&sa, sizeof(sa), 0, ls, r->handoffs);
            if (rc < 0)
                die_setup("tl_route_handoff_group", rc);
        }
        r->port = handle_port(accs[0], ls[0]);
        if (r->cfg.test_idle_acceptor) { /* leaves the kernel's group: nothing reaches it */
            tl_close(accs[r->nacc - 1], ls[r->nacc - 1], 0);
            ls[r->nacc - 1] = 0;
        }
        for (int a = 0; a < r->nacc; a++) {
            r->accs[a].listener = ls[a];
            r->accs[a].accepting = 1;
            r->accs[a].handoff = r->handoffs[a];
        }
        break;
    }
    }
}

static void wake_stop(bench_loop *bl, _Atomic int *stop) {
    atomic_store(stop, 1);
    tl_loop_wake(bl->loop);
}

static json_t *u64_array(const run *r, uint64_t (*get)(const bench_loop *)) {
    json_t *a = json_array();
    for (int i = 0; i < r->n; i++)
        json_array_append_new(a, json_integer((json_int_t)get(&r->loops[i])));
    return a;
}

static uint64_t get_served(const bench_loop *bl) {
    return atomic_load(&bl->served);
}
static uint64_t get_spurious(const bench_loop *bl) {
    return bl->stats.spurious_wakeups;
}
static uint64_t get_waits(const bench_loop *bl) {
    return bl->stats.waits;
}
static uint64_t get_vcsw(const bench_loop *bl) {
    return bl->vcsw;
}
static uint64_t get_ivcsw(const bench_loop *bl) {
    return bl->ivcsw;
}

static uint64_t get_requests(const bench_loop *bl) {
    return atomic_load(&bl->requests);
}

/* Fields every line carries the same way, whichever mode made it. */
static void common_fields(json_t *o, const run *r) {
    const bench_config *cfg = &r->cfg;
    json_object_set_new(o, "route", json_string(route_names[cfg->route]));
    json_object_set_new(o, "backend", json_string(tl_loop_backend(r->loops[0].loop)));
    json_object_set_new(o, "backend_requested",
                        json_string(cfg->backend == TL_BACKEND_AUTO    ? "auto"
                                    : cfg->backend == TL_BACKEND_EPOLL ? "epoll"
                                                                       : "uring"));
    json_object_set_new(o, "loops", json_integer(r->n));
    json_object_set_new(o, "payload", json_integer(cfg->payload));
    if (cfg->route == ROUTE_HANDOFF || cfg->route == ROUTE_ACCEPTOR)
        json_object_set_new(
            o, "policy",
            json_string(cfg->policy == TL_HANDOFF_ROUND_ROBIN ? "rr" : "least-loaded"));
    if (cfg->route == ROUTE_HANDOFF) {
        json_object_set_new(o, "acceptors", json_integer(r->nacc));
        json_t *pa = json_array(), *feeds = json_array();
        for (int a = 0; a < r->nacc; a++) {
            json_array_append_new(pa, json_integer((json_int_t)r->accs[a].dispatched));
            int first = 0;
            int cnt = r->nacc == 1 ? r->active : tl_handoff_subset(r->active, r->nacc, a, &first);
            json_t *f = json_array();
            for (int j = 0; j < cnt; j++)
                json_array_append_new(f, json_integer(first + j));
            json_array_append_new(feeds, f);
        }
        json_object_set_new(o, "per_acceptor", pa);
        json_object_set_new(o, "feeds", feeds);
    }
    json_object_set_new(o, "clients_pinned", json_boolean(cfg->pin_clients));
    if (r->pinned) {
        json_t *c = json_array();
        for (int i = 0; i < r->n; i++)
            json_array_append_new(c, json_integer(r->cpus[i]));
        json_object_set_new(o, "cpus", c);
    }
}

static void print_line(json_t *o) {
    struct utsname u;
    if (uname(&u) == 0)
        json_object_set_new(o, "kernel", json_string(u.release));
    json_object_set_new(o, "turnloop", json_string(TL_VERSION_STRING));
    char *line = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(10));
    if (!line)
        die_setup("json_dumps", -ENOMEM);
    fputs(line, stdout);
    fputc('\n', stdout);
    fflush(stdout);
    free(line);
    json_decref(o);
}

/* Server-side failures of every loop, accepting ones included, for a message. */
static uint64_t server_failures(const run *r, int *first_error) {
    uint64_t failed = 0;
    *first_error = 0;
    for (int i = -r->nacc; i < r->n; i++) {
        const bench_loop *bl = i < 0 ? &r->accs[-1 - i] : &r->loops[i];
        failed += bl->failed;
        if (!*first_error)
            *first_error = bl->first_error;
    }
    return failed;
}

static void refuse_alive(const run *r, char *msg, size_t len) {
    for (int i = -r->nacc; i < r->n; i++) {
        const bench_loop *bl = i < 0 ? &r->accs[-1 - i] : &r->loops[i];
        if (bl->alive_at_end) {
            snprintf(msg, len,
                     "loop %d still alive at shutdown (%d handles, operations "
                     "or completions outstanding)",
                     i, bl->alive_at_end);
            refuse(msg);
        }
    }
}

/* Feeders first, so nothing is posted to a loop that has stopped. */
static void stop_all(run *r) {
    if (r->acceptor)
        tl_acceptor_stop(r->acceptor);
    for (int a = 0; a < r->nacc; a++)
        wake_stop(&r->accs[a], &r->acc_stop);
    for (int a = 0; a < r->nacc; a++)
        bench_loop_join(&r->accs[a]);
    for (int i = 0; i < r->n; i++)
        wake_stop(&r->loops[i], &r->stop);
    for (int i = 0; i < r->n; i++)
        bench_loop_join(&r->loops[i]);
}

static void free_all(run *r) {
    for (int a = 0; a < r->nacc; a++) {
        tl_loop_free(r->accs[a].loop);
        tl_handoff_free(r->handoffs[a]);
    }
    free(r->accs);
    free(r->handoffs);
    for (int i = 0; i < r->n; i++)
        tl_loop_free(r->loops[i].loop);
    if (r->shared_fd >= 0)
        close(r->shared_fd);
    free(r->loops);
}

static void start_servers(run *r, bench_clients *clients) {
    int rc;
    if (r->cfg.pin_clients && (rc = bench_clients_pin(clients, r->mask_cpus, r->nmask)) < 0)
        die_setup("pinning clients", rc);
    for (int i = 0; i < r->n; i++) {
        rc = bench_loop_start(&r->loops[i]);
        if (rc < 0)
            die_setup("starting a loop thread", rc);
    }
    for (int a = 0; a < r->nacc; a++)
        if ((rc = bench_loop_start(&r->accs[a])) < 0)
            die_setup("starting an accepting loop", rc);
    if (r->cfg.route == ROUTE_ACCEPTOR) {
        tl_loop *arr[256];
        for (int i = 0; i < r->active; i++)
            arr[i] = r->loops[i].loop;
        rc = tl_acceptor_start(&r->acceptor, r->shared_fd, r->acceptor_threads, arr, r->active,
                               r->cfg.policy, 2);
        if (rc < 0)
            die_setup("tl_acceptor_start", rc);
    }
}

/* --long-lived K: few connections that stay. What matters is where the K
 * connections were placed, so no loop is required to serve (two clients on
 * one loop is the finding, not a broken run); what is required is that every
 * request a client completed was counted by some loop, and every connection
 * ended cleanly on exactly one loop. */
static int run_long_lived(run *r) {
    const bench_config *cfg = &r->cfg;
    char msg[256];
    bench_clients *clients = NULL;
    uint64_t deadline = bench_now_ns() + (uint64_t)cfg->seconds * 1000000000ull;
    int rc = bench_long_clients_start(&clients, cfg->long_lived, r->port, cfg->payload,
                                      cfg->requests_per_client, deadline);
    if (rc < 0)
        die_setup("starting clients", rc);
    start_servers(r, clients);
    uint64_t cpu0 = bench_process_cpu_ns();
    uint64_t t0 = bench_now_ns();
    bench_clients_go(clients);
    uint64_t t1 = bench_clients_join(clients);
    if (t1 < t0)
        t1 = bench_now_ns();
    uint64_t settle = bench_now_ns() + 2000000000ull;
    for (;;) {
        uint64_t conns = 0;
        for (int i = 0; i < r->n; i++)
            conns += atomic_load(&r->loops[i].served);
        if (conns >= (uint64_t)cfg->long_lived || bench_now_ns() > settle)
            break;
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
    stop_all(r);
    uint64_t cpu1 = bench_process_cpu_ns();
    uint64_t clients_cpu = bench_clients_cpu_ns(clients);
    uint64_t server_cpu = cpu1 - cpu0 > clients_cpu ? cpu1 - cpu0 - clients_cpu : 0;
    int cerr, timed_out;
    const char *cstage;
    uint64_t client_errors = bench_clients_errors(clients, &cerr, &cstage);
    uint64_t client_requests = bench_clients_requests(clients, &timed_out);

    if (client_errors) {
        snprintf(msg, sizeof(msg), "%llu client exchanges failed (first %s: %s)",
                 (unsigned long long)client_errors, cstage, errname(cerr));
        refuse(msg);
    }
    uint64_t reqs = 0, conns = 0, mx = 0;
    for (int i = 0; i < r->n; i++) {
        uint64_t q = get_requests(&r->loops[i]);
        reqs += q;
        conns += get_served(&r->loops[i]);
        mx = q > mx ? q : mx;
    }
    if (reqs != client_requests || conns != (uint64_t)cfg->long_lived) {
        int ferr;
        uint64_t failed = server_failures(r, &ferr);
        snprintf(msg, sizeof(msg),
                 "per-loop counts (%llu requests on %llu connections) do not match the clients' "
                 "(%llu on %d; %llu server-side failures, first %s)",
                 (unsigned long long)reqs, (unsigned long long)conns,
                 (unsigned long long)client_requests, cfg->long_lived, (unsigned long long)failed,
                 ferr ? errname(ferr) : "none");
        refuse(msg);
    }
    if (reqs == 0)
        refuse("no request completed");
    refuse_alive(r, msg, sizeof(msg));

    double mean = (double)reqs / r->n;
    double k = cfg->long_lived;
    double best = (double)((cfg->long_lived + r->n - 1) / r->n) / (k / r->n);
    if (best < 1.0)
        best = 1.0; /* fewer connections than loops: some loop must idle */
    uint64_t elapsed = t1 - t0 ? t1 - t0 : 1;
    json_t *o = json_object();
    json_object_set_new(o, "mode", json_string("long-lived"));
    common_fields(o, r);
    json_object_set_new(o, "long_lived", json_integer(cfg->long_lived));
    json_object_set_new(o, "requests_per_client",
                        json_integer((json_int_t)cfg->requests_per_client));
    json_object_set_new(o, "requests", json_integer((json_int_t)reqs));
    json_object_set_new(o, "stopped_by", json_string(timed_out ? "time" : "count"));
    json_object_set_new(o, "per_loop", u64_array(r, get_requests));
    json_object_set_new(o, "per_loop_connections", u64_array(r, get_served));
    json_object_set_new(o, "imbalance", json_real(mean > 0 ? (double)mx / mean : 0));
    json_object_set_new(o, "best_imbalance", json_real(best));
    json_object_set_new(o, "requests_per_second", json_real((double)reqs * 1e9 / elapsed));
    json_object_set_new(o, "elapsed_ns", json_integer((json_int_t)elapsed));
    json_object_set_new(o, "server_cpu_ns", json_integer((json_int_t)server_cpu));
    json_object_set_new(o, "requests_per_server_cpu_second",
                        json_real(server_cpu ? (double)reqs * 1e9 / (double)server_cpu : 0));
    print_line(o);
    bench_clients_free(clients);
    free_all(r);
    return 0;
}

int main(int argc, char **argv) {
    static run r;
    parse_args(argc, argv, &r.cfg);
    const bench_config *cfg = &r.cfg;
    r.n = cfg->loops;
    r.active = cfg->test_idle_loop ? r.n - 1 : r.n;
    r.shared_fd = -1;

    char msg[256];
    if (!cfg->long_lived && cfg->connections < 100ull * (uint64_t)r.n) {
        snprintf(msg, sizeof(msg),
                 "--connections %llu is below 100 per loop (at least %llu for %d loops)",
                 (unsigned long long)cfg->connections, 100ull * (unsigned long long)r.n, r.n);
        refuse(msg);
    }

    signal(SIGPIPE, SIG_IGN);
    raise_nofile();
    arm_watchdog(cfg->watchdog_ms);

    r.loops = calloc((size_t)r.n, sizeof(bench_loop));
    if (!r.loops)
        die_setup("calloc", -ENOMEM);
    pick_cpus(&r);
    for (int i = 0; i < r.n; i++)
        new_loop(&r, &r.loops[i], i, &r.stop);
    setup_route(&r);
    if (cfg->long_lived)
        return run_long_lived(&r);

    bench_clients *clients = NULL;
    int rc = bench_clients_start(&clients, cfg->clients, r.port, cfg->payload, cfg->connections);
    if (rc < 0)
        die_setup("starting clients", rc);

    /* Opened after the clients exist so that only server-side threads (loops,
     * the library's acceptor threads, and this one) inherit it. */
    bench_counter counter = {.fd = -1};
    if (!cfg->portable)
        bench_counter_open(&counter);
    start_servers(&r, clients);

    bench_counter_start(&counter);
    uint64_t cpu0 = bench_process_cpu_ns();
    uint64_t t0 = bench_now_ns();
    bench_clients_go(clients);
    uint64_t t1 = bench_clients_join(clients);
    if (t1 < t0)
        t1 = bench_now_ns();

    /* A client is done when it has the echo; its server side still has a close
     * to complete, so give the counts a moment to land before stopping. */
    uint64_t settle = bench_now_ns() + 2000000000ull;
    for (;;) {
        uint64_t sum = 0;
        for (int i = 0; i < r.n; i++)
            sum += atomic_load(&r.loops[i].served);
        if (sum + (cfg->test_miscount ? 1 : 0) >= cfg->connections || bench_now_ns() > settle)
            break;
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
    stop_all(&r);

    uint64_t instructions = 0;
    int have_instr = !cfg->portable && bench_counter_read(&counter, &instructions) == 0;
    uint64_t cpu1 = bench_process_cpu_ns();
    uint64_t clients_cpu = bench_clients_cpu_ns(clients);
    uint64_t server_cpu = cpu1 - cpu0 > clients_cpu ? cpu1 - cpu0 - clients_cpu : 0;
    int cerr;
    const char *cstage;
    uint64_t client_errors = bench_clients_errors(clients, &cerr, &cstage);

    /* ---- the rules ---- */
    uint64_t sum = 0, mn = UINT64_MAX, mx = 0;
    int idle = -1;
    for (int i = 0; i < r.n; i++) {
        uint64_t s = atomic_load(&r.loops[i].served);
        sum += s;
        mn = s < mn ? s : mn;
        mx = s > mx ? s : mx;
        if (s == 0 && idle < 0)
            idle = i;
    }
    if (sum != cfg->connections) {
        int ferr;
        uint64_t failed = server_failures(&r, &ferr);
        int off = snprintf(msg, sizeof(msg),
                           "per-loop counts sum to %llu, not the budget %llu (%llu server-side "
                           "failures",
                           (unsigned long long)sum, (unsigned long long)cfg->connections,
                           (unsigned long long)failed);
        if (ferr)
            off += snprintf(msg + off, sizeof(msg) - (size_t)off, ", first %s", errname(ferr));
        off += snprintf(msg + off, sizeof(msg) - (size_t)off, "; %llu client failures",
                        (unsigned long long)client_errors);
        if (client_errors)
            off += snprintf(msg + off, sizeof(msg) - (size_t)off, ", first %s: %s", cstage,
                            errname(cerr));
        snprintf(msg + off, sizeof(msg) - (size_t)off, ")");
        refuse(msg);
    }
    /* Several acceptors: the kernel's hash over their listeners must have
     * given each some, or one of them is the silent idle core. Checked before
     * the loops: an idle acceptor starves its loops, and is the cause to name. */
    for (int a = 0; r.nacc > 1 && a < r.nacc; a++) {
        if (r.accs[a].dispatched == 0) {
            snprintf(msg, sizeof(msg),
                     "every acceptor must accept: acceptor %d of %d accepted none", a, r.nacc);
            refuse(msg);
        }
    }
    if (idle >= 0) {
        snprintf(msg, sizeof(msg),
                 "every loop must serve at least one connection: loop %d of %d "
                 "served none",
                 idle, r.n);
        refuse(msg);
    }
    if (client_errors) {
        snprintf(msg, sizeof(msg), "%llu client exchanges failed (first %s: %s)",
                 (unsigned long long)client_errors, cstage, errname(cerr));
        refuse(msg);
    }
    refuse_alive(&r, msg, sizeof(msg));
    /* Round-robin is exact by construction within each acceptor's subset:
     * anything else is a bug, not imbalance. */
    if (cfg->route == ROUTE_HANDOFF && cfg->policy == TL_HANDOFF_ROUND_ROBIN) {
        for (int a = 0; a < r.nacc; a++) {
            int first = 0;
            int cnt = r.nacc == 1 ? r.active : tl_handoff_subset(r.active, r.nacc, a, &first);
            uint64_t smn = UINT64_MAX, smx = 0;
            for (int j = first; j < first + cnt; j++) {
                uint64_t v = atomic_load(&r.loops[j].served);
                smn = v < smn ? v : smn;
                smx = v > smx ? v : smx;
            }
            if (smx - smn > 1) {
                snprintf(msg, sizeof(msg),
                         "handoff round-robin is not exact: acceptor %d's loops min %llu, max "
                         "%llu",
                         a, (unsigned long long)smn, (unsigned long long)smx);
                refuse(msg);
            }
        }
    }

    /* ---- the line ---- */
    uint64_t elapsed = t1 - t0 ? t1 - t0 : 1;
    double cps = (double)cfg->connections * 1e9 / (double)elapsed;
    json_t *o = json_object();
    common_fields(o, &r);
    json_object_set_new(o, "connections", json_integer((json_int_t)cfg->connections));
    json_object_set_new(o, "clients", json_integer(cfg->clients));
    if (cfg->route == ROUTE_ACCEPTOR)
        json_object_set_new(o, "acceptor_threads", json_integer(r.acceptor_threads));
    json_object_set_new(o, "accept",
                        json_string(cfg->route == ROUTE_ACCEPTOR
                                        ? "blocking accept4 threads"
                                        : "single-shot, re-armed per connection"));
    json_object_set_new(o, "connections_per_second", json_real(cps));
    json_object_set_new(o, "per_loop", u64_array(&r, get_served));
    double mean = (double)sum / r.n;
    json_object_set_new(o, "spread", json_real(mean > 0 ? (double)(mx - mn) / mean : 0));
    json_object_set_new(o, "imbalance", json_real(mean > 0 ? (double)mx / mean : 0));
    if (cfg->route == ROUTE_EXCLUSIVE || cfg->route == ROUTE_HERD)
        json_object_set_new(o, "spurious_wakeups", u64_array(&r, get_spurious));
    json_object_set_new(o, "waits", u64_array(&r, get_waits));
    json_object_set_new(o, "voluntary_context_switches", u64_array(&r, get_vcsw));
    json_object_set_new(o, "involuntary_context_switches", u64_array(&r, get_ivcsw));
    json_object_set_new(o, "measure", json_string(have_instr ? "instructions" : "elapsed_ns"));
    json_object_set_new(o, "elapsed_ns", json_integer((json_int_t)elapsed));
    if (have_instr) {
        json_object_set_new(o, "instructions", json_integer((json_int_t)instructions));
        json_object_set_new(o, "instructions_scope",
                            json_string(counter.scope ? counter.scope : "user"));
        json_object_set_new(o, "instructions_per_connection",
                            json_real((double)instructions / (double)cfg->connections));
    } else if (!cfg->portable) {
        json_object_set_new(o, "measure_fallback", json_string(counter.fallback));
    }
    json_object_set_new(o, "server_cpu_ns", json_integer((json_int_t)server_cpu));
    json_object_set_new(
        o, "connections_per_server_cpu_second",
        json_real(server_cpu ? (double)cfg->connections * 1e9 / (double)server_cpu : 0));
    print_line(o);

    bench_counter_close(&counter);
    bench_clients_free(clients);
    free_all(&r);
    return 0;
}
