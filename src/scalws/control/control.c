/* The control thread's loop (main.c runs it once the loops serve): signals,
 * the admin listener, the ACME thread's wake-ups, reload and re-exec, and the
 * drain timer. It owns everything slow or shared; the loops only ever get
 * messages from it (tl_loop_post). */
#include "sws.h"

#include "acme_run.h"
#include "reexec.h"
#include "reload.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

static uint64_t sum(sws_server *s, size_t off) {
    uint64_t t = 0;
    for (int i = 0; i < s->nloops; i++)
        t += atomic_load_explicit((sws_ctr *)((char *)&s->workers[i].ctr + off),
                                  memory_order_relaxed);
    return t;
}

typedef struct drain_state {
    bool draining, forced;
    uint64_t deadline, start;
    const char *why;
} drain_state;

static void begin(sws_server *s, drain_state *d, const char *why) {
    d->draining = true;
    d->why = why;
    d->start = sws_now_ms();
    d->deadline = d->start + s->cfg->drain_timeout_ms;
    fprintf(stderr, "scalwsd: %s: draining (timeout %" PRIu32 " ms, idle grace %" PRIu32 " ms)\n",
            why, s->cfg->drain_timeout_ms,
            s->cfg->drain_idle_grace_ms < s->cfg->keepalive_timeout_ms
                ? s->cfg->drain_idle_grace_ms
                : s->cfg->keepalive_timeout_ms);
    sws_drain_begin(s);
}

int sws_control_run(sws_server *s, int sigfd, int admin_fd) {
    int done = 0;
    drain_state d = {.why = ""};
    while (done < s->nthreads) {
        bool draining = d.draining;
        uint64_t deadline = d.deadline;
        int ready_fd = sws_reexec_ready_fd();
        /* A negative fd is ignored by poll: admin, [acme] and the SIGUSR2
         * successor's ready pipe are optional. */
        struct pollfd p[6] = {
            {.fd = sigfd, .events = POLLIN},      {.fd = s->done_fd, .events = POLLIN},
            {.fd = admin_fd, .events = POLLIN},   {.fd = ready_fd, .events = POLLIN},
            {.fd = s->acme_fd, .events = POLLIN}, {.fd = s->acme_http_fd, .events = POLLIN}};
        int timeout = -1;
        if (draining) {
            uint64_t now = sws_now_ms();
            timeout = now >= deadline ? 0 : (int)(deadline - now);
        }
        if (s->tls_keys) {
            /* Ticket keys: a new one every ticket_key_rotate, made here so that
             * no loop ever waits for entropy or the write lock for long. */
            uint64_t now = sws_now_ms(), every = s->cfg->tls.ticket_key_rotate_ms;
            if (now >= s->tls_rotated_ms + every) {
                if (sws_tls_keys_rotate(s->tls_keys) < 0)
                    fprintf(stderr, "scalwsd: tls: cannot make a new ticket key; the old "
                                    "one stays\n");
                s->tls_rotated_ms = now;
            }
            uint64_t left = s->tls_rotated_ms + every - now;
            if (timeout < 0 || left < (uint64_t)timeout)
                timeout = (int)(left > INT32_MAX ? INT32_MAX : left);
        }
        int restart_wait = sws_reexec_wait_ms(s, sws_now_ms());
        if (restart_wait >= 0 && (timeout < 0 || restart_wait < timeout))
            timeout = restart_wait;
        int reload_wait = sws_reload_poll(s); /* a reload's old config may be freed */
        if (reload_wait >= 0 && (timeout < 0 || reload_wait < timeout))
            timeout = reload_wait;
        int n = poll(p, 6, timeout);
        if (n < 0 && errno != EINTR) {
            fprintf(stderr, "scalwsd: poll: %s\n", strerror(errno));
            return 1;
        }
        if (n > 0 && (p[0].revents & POLLIN)) {
            struct signalfd_siginfo si = {0}; /* a short read leaves no signal */
            if (read(sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si) && si.ssi_signo == SIGHUP) {
                sws_reload_begin(s);
            } else if (si.ssi_signo == SIGUSR1) {
                sws_logs_reopen(s);
            } else if (si.ssi_signo == SIGUSR2 || si.ssi_signo == SIGCHLD) {
                sws_reexec_on_signal(s, (int)si.ssi_signo, draining, admin_fd);
            } else if (si.ssi_signo == SIGINT || si.ssi_signo == SIGTERM) {
                const char *signame = si.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM";
                /* After a SIGUSR2 restart's own drain, the nginx-style SIGTERM
                 * to the old process is the expected next step, not haste. */
                if (draining && strcmp(d.why, "SIGUSR2") != 0) {
                    fprintf(stderr, "scalwsd: second %s: exiting now\n", signame);
                    _exit(1);
                }
                if (!draining)
                    begin(s, &d, signame);
                else
                    d.why = signame; /* a further one exits at once */
            }
        }
        if (n > 0 && ready_fd >= 0 && (p[3].revents & (POLLIN | POLLHUP | POLLERR))) {
            /* The new process of a SIGUSR2 serves on every loop: this one
             * drains by itself (nginx needs a QUIT to the old master). */
            if (sws_reexec_ready_read()) {
                /* Its loops receive on the quic sockets once ours stop. */
                sws_quic_handover_hand(s);
                if (!d.draining)
                    begin(s, &d, "SIGUSR2");
            }
        }
        if (n > 0 && (p[1].revents & POLLIN)) {
            uint64_t k;
            if (read(s->done_fd, &k, sizeof(k)) == (ssize_t)sizeof(k))
                done += (int)k;
        }
        if (n > 0 && admin_fd >= 0 && (p[2].revents & POLLIN))
            sws_admin_serve_one(s, admin_fd);
        if (n > 0 && s->acme_fd >= 0 && (p[4].revents & POLLIN)) {
            /* The ACME thread saved a new pair in state_dir: load it for new
             * handshakes; a refused one leaves the old context serving. */
            uint64_t k;
            if (read(s->acme_fd, &k, sizeof(k)) == (ssize_t)sizeof(k)) {
                for (int i = 0; i < s->nacme; i++) {
                    if (!sws_acme_install_wanted(s->acme[i]))
                        continue;
                    char why[400] = "";
                    int rc = sws_reload_tls(s, sws_acme_name(s->acme[i]), why, sizeof(why));
                    sws_acme_installed(s->acme[i], rc == 0, why);
                }
            }
        }
        if (n > 0 && s->acme_http_fd >= 0 && (p[5].revents & POLLIN))
            sws_admin_serve_challenge(s, s->acme_http_fd);
        sws_reexec_tick(s, sws_now_ms());
        if (d.draining && sws_now_ms() >= d.deadline) {
            if (!d.forced) {
                d.forced = true;
                sws_drain_force(s);
                d.deadline = sws_now_ms() + 2000;
            } else {
                fprintf(stderr, "scalwsd: loops did not stop after the drain timeout; exiting\n");
                _exit(1);
            }
        }
    }
    uint64_t took = d.draining ? sws_now_ms() - d.start : 0;
    fprintf(stderr,
            "scalwsd: stopped after %s: drained in %" PRIu64 " ms; %" PRIu64 " requests, %" PRIu64
            " connections, %" PRIu64 " closed by the drain timeout (%" PRIu64 " tunnels)\n",
            d.draining ? d.why : "loop failure", took, sum(s, offsetof(sws_counters, requests)),
            sum(s, offsetof(sws_counters, accepted)), sum(s, offsetof(sws_counters, forced)),
            sum(s, offsetof(sws_counters, tunnels_drained)));
    return d.draining ? 0 : 1;
}
