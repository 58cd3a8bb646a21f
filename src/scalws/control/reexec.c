/* The LISTEN_FDS protocol, both sides: reading the sockets a parent passed
 * (systemd, systemd-socket-activate, or an older scalwsd on SIGUSR2) and
 * passing ours to a new scalwsd by fork+exec, so that a restart never leaves
 * the port without a listening socket and never drops a queued connection. */
#include "reexec.h"

#include "sws.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define FDS_START 3 /* SD_LISTEN_FDS_START */

extern char **environ;

_Static_assert(SWS_INHERIT_MAX >= 1024 * SWS_LISTENERS_MAX + 1,
               "an inherited socket per loop per listener");
static int http_fds[SWS_INHERIT_MAX];
static int http_listener[SWS_INHERIT_MAX]; /* "http-N": listener N; -1 unnamed */
static int nhttp_fds;
static int admin_fd = -1;
static sws_named_fd named_fds[SWS_NAMED_MAX];
static int nnamed_fds;

static char exe_path[PATH_MAX];
static char **saved_argv;

/* A SIGUSR2 restart's "I serve" pipe: the write end we were given (child),
 * the read end of the process we started (parent). */
static int tell_fd = -1;
static int ready_fd = -1;
static pid_t ready_pid;
static pid_t started; /* the process the last SIGUSR2 started, until it exits */
/* When it was started, and when it was sent SIGTERM for not serving in time
 * (0: not yet), and whether SIGKILL followed: a new process that hangs before
 * it serves must not block every later SIGUSR2 ("running already") for ever. */
static uint64_t started_ms, stopped_ms;
static bool killed;
#define STOP_GRACE_MS 5000 /* after SIGTERM, before SIGKILL */

static bool listening_stream(int fd) {
    int type = 0, acc = 0;
    socklen_t tl = sizeof(type), al = sizeof(acc);
    return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) == 0 && type == SOCK_STREAM &&
           getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &al) == 0 && acc;
}

/* Parsed here rather than with sd_listen_fds_with_names so that re-exec works
 * in a build without libsystemd too; the protocol is three variables. */
void sws_inherit_parse(void) {
    const char *pid = getenv("LISTEN_PID"), *nfds = getenv("LISTEN_FDS");
    const char *names = getenv("LISTEN_FDNAMES");
    char *end;
    long n = nfds ? strtol(nfds, &end, 10) : 0;
    bool ours = pid && strtol(pid, NULL, 10) == (long)getpid() && nfds && *end == '\0';
    if (ours && n > 0 && n <= SWS_INHERIT_MAX) {
        const char *p = names;
        for (int i = 0; i < (int)n; i++) {
            int fd = FDS_START + i;
            size_t len = 0;
            const char *name = p;
            if (p) {
                len = strcspn(p, ":");
            }
            bool admin = p && len == 5 && strncmp(p, "admin", 5) == 0;
            if (p)
                p = p[len] == ':' ? p + len + 1 : NULL;
            fcntl(fd, F_SETFD, FD_CLOEXEC);
            /* The quic listener's UDP sockets, relay links and state
             * (server/quic_handover.c), passed by a SIGUSR2. */
            if (name && len > 4 && len < sizeof(named_fds[0].name) &&
                strncmp(name, "quic", 4) == 0 && nnamed_fds < SWS_NAMED_MAX) {
                named_fds[nnamed_fds].fd = fd;
                memcpy(named_fds[nnamed_fds].name, name, len);
                named_fds[nnamed_fds++].name[len] = '\0';
                continue;
            }
            if (!listening_stream(fd)) {
                fprintf(stderr,
                        "scalwsd: inherited fd %d is not a listening stream socket; "
                        "ignored\n",
                        fd);
                continue;
            }
            if (admin && admin_fd < 0) {
                admin_fd = fd;
                continue;
            }
            /* A SIGUSR2 names each socket by its listener's index ("http-N"),
             * which tells apart listeners of one address (port 0). */
            http_listener[nhttp_fds] = -1;
            if (name && len > 5 && len < 9 && strncmp(name, "http-", 5) == 0)
                http_listener[nhttp_fds] = (int)strtol(name + 5, NULL, 10);
            http_fds[nhttp_fds++] = fd;
        }
    } else if (ours && n != 0) {
        fprintf(stderr, "scalwsd: LISTEN_FDS=%s out of range; ignored\n", nfds);
    }
    unsetenv("LISTEN_PID");
    unsetenv("LISTEN_FDS");
    unsetenv("LISTEN_FDNAMES");
    const char *rf = getenv("SWS_READY_FD");
    if (rf && ours) {
        long fd = strtol(rf, &end, 10);
        if (*end == '\0' && fd > 2 && fd < INT_MAX && fcntl((int)fd, F_GETFD) >= 0) {
            tell_fd = (int)fd;
            fcntl(tell_fd, F_SETFD, FD_CLOEXEC); /* never a grandchild's */
        }
    }
    unsetenv("SWS_READY_FD");
}

void sws_reexec_tell_ready(void) {
    if (tell_fd < 0)
        return;
    ssize_t r = write(tell_fd, "R", 1);
    (void)r; /* the old process gone: nobody to tell */
    close(tell_fd);
    tell_fd = -1;
}

int sws_reexec_ready_fd(void) {
    return ready_fd;
}

bool sws_reexec_ready_read(void) {
    char b = 0;
    ssize_t r;
    do
        r = read(ready_fd, &b, 1);
    while (r < 0 && errno == EINTR);
    if (r < 0 && errno == EAGAIN)
        return false;
    close(ready_fd);
    ready_fd = -1;
    if (r == 1 && b == 'R') {
        fprintf(stderr, "scalwsd: new process %d serves on every loop\n", (int)ready_pid);
        return true;
    }
    /* Its end of the pipe closed without a word: it failed to start, or died. */
    fprintf(stderr,
            "scalwsd: new process %d ended before it served; this one keeps serving "
            "(its own log says why)\n",
            (int)ready_pid);
    return false;
}

int sws_inherited_http(const int **fds, const int **listener) {
    *fds = http_fds;
    *listener = http_listener;
    return nhttp_fds;
}

int sws_inherited_admin(void) {
    return admin_fd;
}

int sws_inherited_named(const sws_named_fd **out) {
    *out = named_fds;
    return nnamed_fds;
}

void sws_reexec_init(char **argv) {
    saved_argv = argv;
    /* The path, not /proc/self/exe: a binary replaced at the same path (an
     * upgrade) is what the restart runs, as with nginx's USR2. */
    ssize_t n = readlink("/proc/self/exe", exe_path, sizeof(exe_path) - 1);
    exe_path[n > 0 ? n : 0] = '\0';
    if (n > 10 && strcmp(exe_path + n - 10, " (deleted)") == 0)
        exe_path[n - 10] = '\0';
}

static bool is_listen_var(const char *e) {
    return strncmp(e, "LISTEN_PID=", 11) == 0 || strncmp(e, "LISTEN_FDS=", 11) == 0 ||
           strncmp(e, "LISTEN_FDNAMES=", 15) == 0 || strncmp(e, "SWS_READY_FD=", 13) == 0;
}

pid_t sws_reexec(const int *http, const int *http_of, int nhttp, int admin,
                 const sws_named_fd *named, int nnamed) {
    int nadmin = admin >= 0 ? 1 : 0;
    int n = nhttp + nadmin + nnamed;
    if (!exe_path[0] || !saved_argv)
        return -ENOENT;
    if (nhttp <= 0 || n > SWS_INHERIT_MAX)
        return -EINVAL;
    /* Everything the child needs is built here: between fork and exec a
     * threaded process may only make async-signal-safe calls (no malloc). */
    size_t nenv = 0;
    while (environ[nenv])
        nenv++;
    char **envp = calloc(nenv + 5, sizeof(*envp));
    char *names_var = malloc(16 + (size_t)n * (sizeof(named->name) + 1));
    int src[SWS_INHERIT_MAX];
    if (!envp || !names_var) {
        free(envp);
        free(names_var);
        return -ENOMEM;
    }
    size_t k = 0;
    for (size_t i = 0; i < nenv; i++)
        if (!is_listen_var(environ[i]))
            envp[k++] = environ[i];
    char fds_var[32], pid_var[32];
    snprintf(fds_var, sizeof(fds_var), "LISTEN_FDS=%d", n);
    memcpy(pid_var, "LISTEN_PID=", 12); /* the child writes its pid after the '=' */
    size_t nl = (size_t)sprintf(names_var, "LISTEN_FDNAMES=");
    for (int i = 0; i < n; i++) {
        const char *sep = i ? ":" : "";
        if (i < nhttp) {
            src[i] = http[i];
            nl += (size_t)sprintf(names_var + nl, "%shttp-%d", sep, http_of[i]);
        } else if (i < nhttp + nadmin) {
            src[i] = admin;
            nl += (size_t)sprintf(names_var + nl, "%sadmin", sep);
        } else {
            src[i] = named[i - nhttp - nadmin].fd;
            nl += (size_t)sprintf(names_var + nl, "%s%s", sep, named[i - nhttp - nadmin].name);
        }
    }
    envp[k++] = fds_var;
    envp[k++] = names_var;
    envp[k++] = pid_var;
    /* The "I serve" pipe goes right after the listeners. */
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) < 0) {
        int e = errno;
        free(envp);
        free(names_var);
        return -e;
    }
    char ready_var[32];
    snprintf(ready_var, sizeof(ready_var), "SWS_READY_FD=%d", FDS_START + n);
    envp[k++] = ready_var;
    envp[k] = NULL;

    pid_t pid = fork();
    if (pid == 0) {
        /* The child: async-signal-safe calls only. The signal mask stays as
         * the parent's (TERM, INT, HUP, USR2 blocked), so a signal sent to the
         * new pid before its signalfd exists waits instead of killing it. */
        char digits[16];
        int nd = 0;
        for (pid_t p = getpid(); p > 0 && nd < 15; p /= 10)
            digits[nd++] = (char)('0' + p % 10);
        for (int i = 0; i < nd; i++)
            pid_var[11 + i] = digits[nd - 1 - i];
        pid_var[11 + nd] = '\0';
        /* First above the target range, so that no dup2 overwrites a source. */
        int tmp[SWS_INHERIT_MAX + 1];
        for (int i = 0; i < n; i++) {
            tmp[i] = fcntl(src[i], F_DUPFD_CLOEXEC, FDS_START + n + 1);
            if (tmp[i] < 0)
                _exit(127);
        }
        tmp[n] = fcntl(pipefd[1], F_DUPFD_CLOEXEC, FDS_START + n + 1);
        if (tmp[n] < 0)
            _exit(127);
        for (int i = 0; i <= n; i++)
            if (dup2(tmp[i], FDS_START + i) < 0) /* dup2 clears close-on-exec */
                _exit(127);
        execve(exe_path, saved_argv, envp);
        _exit(127);
    }
    int e = errno;
    free(envp);
    free(names_var);
    close(pipefd[1]);
    if (pid < 0) {
        close(pipefd[0]);
        return -e;
    }
    fcntl(pipefd[0], F_SETFL, O_NONBLOCK);
    if (ready_fd >= 0)
        close(ready_fd); /* an earlier new process's, which ended unread */
    ready_fd = pipefd[0];
    ready_pid = pid;
    return pid;
}

void sws_reexec_on_signal(sws_server *s, int signo, bool draining, int admin) {
    if (signo == SIGCHLD) {
        int st;
        pid_t pid;
        while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
            if (pid == started)
                started = 0;
            fprintf(stderr, "scalwsd: new process %d exited (%s %d); this one keeps serving\n",
                    (int)pid, WIFEXITED(st) ? "status" : "signal",
                    WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
        }
        return;
    }
    if (started > 0) {
        /* As nginx: one new process at a time, or two would serve after the drain. */
        fprintf(stderr, "scalwsd: SIGUSR2: new process %d is running already; ignored\n",
                (int)started);
        return;
    }
    if (draining) {
        /* The loops are closing their listeners: nothing sound to pass on. */
        fprintf(stderr, "scalwsd: SIGUSR2 while draining: ignored\n");
        return;
    }
    /* The quic listener's sockets, a relay link per loop and its secrets. */
    static sws_named_fd named[SWS_NAMED_MAX];
    int nnamed = sws_quic_handover_prepare(s, named, SWS_NAMED_MAX);
    if (nnamed < 0) {
        fprintf(stderr, "scalwsd: SIGUSR2: cannot pass the quic sockets on: %s\n",
                strerror(-nnamed));
        return;
    }
    pid_t pid = sws_reexec(s->listen_fds, s->listen_fd_of, s->nlisten_fds, admin, named, nnamed);
    sws_quic_handover_forked(s, pid > 0);
    if (pid < 0) {
        fprintf(stderr, "scalwsd: SIGUSR2: cannot start a new process: %s\n", strerror(-pid));
    } else {
        started = pid;
        started_ms = sws_now_ms();
        stopped_ms = 0;
        killed = false;
    }
    if (pid > 0)
        fprintf(stderr,
                "scalwsd: SIGUSR2: started new process %d on %d listening socket%s; "
                "this one (%d) drains once it serves on every loop\n",
                (int)pid, s->nlisten_fds, s->nlisten_fds == 1 ? "" : "s", (int)getpid());
}

/* The new process has not told us it serves (its pipe is still open). */
static bool starting(void) {
    return started > 0 && ready_fd >= 0 && !killed;
}

int sws_reexec_wait_ms(const sws_server *s, uint64_t now) {
    if (!starting())
        return -1;
    uint64_t at = stopped_ms ? stopped_ms + STOP_GRACE_MS : started_ms + s->cfg->restart_timeout_ms;
    return now >= at ? 0 : (int)(at - now > INT32_MAX ? INT32_MAX : at - now);
}

void sws_reexec_tick(const sws_server *s, uint64_t now) {
    if (!starting() || sws_reexec_wait_ms(s, now) > 0)
        return;
    /* TERM first: had it begun to accept, it drains what it took. Its signals
     * are blocked until its signalfd exists, so one that hangs before that
     * only goes with KILL. This process never stopped serving meanwhile. */
    int sig = stopped_ms ? SIGKILL : SIGTERM;
    fprintf(stderr,
            "scalwsd: SIGUSR2: new process %d does not serve after %" PRIu32
            " ms (restart_timeout); sending %s; this one keeps serving\n",
            (int)started, s->cfg->restart_timeout_ms, sig == SIGKILL ? "SIGKILL" : "SIGTERM");
    kill(started, sig);
    stopped_ms = now;
    killed = sig == SIGKILL; /* nothing more to send: SIGCHLD reaps it */
}
