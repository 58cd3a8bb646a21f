/* Inherited listening sockets (systemd's LISTEN_FDS protocol, used both by
 * socket activation and by scalwsd's own SIGUSR2 re-exec) and the re-exec
 * itself: the zero-loss restart of README "Zero-loss restart". */
#ifndef SWS_REEXEC_H
#define SWS_REEXEC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "quic_handover.h"

struct sws_server;

/* One per loop (1024) of each listener (SWS_LISTENERS_MAX, 16), the admin
 * socket, and the quic listener's named descriptors (SWS_NAMED_MAX). */
#define SWS_INHERIT_MAX (1024 * 16 + 1 + SWS_NAMED_MAX)

/* Reads LISTEN_PID/LISTEN_FDS/LISTEN_FDNAMES once, before any thread starts,
 * and unsets them (a child must not take them for its own). Descriptors named
 * "admin" are the admin listener; every other listening stream socket serves
 * HTTP. Inherited descriptors are made close-on-exec. */
void sws_inherit_parse(void);
/* The inherited HTTP listeners, in order (fds 3.. minus the admin one), and
 * the index of the listener a SIGUSR2 passed each for (-1: not said). */
int sws_inherited_http(const int **fds, const int **listener);
/* The inherited admin listener, or -1. */
int sws_inherited_admin(void);
/* The inherited descriptors named "quic..." (any type: quic_handover.c
 * judges them), in order. */
int sws_inherited_named(const sws_named_fd **out);

/* Remembers the path of the running binary and argv for sws_reexec. */
void sws_reexec_init(char **argv);
/* Forks and execs the same binary with the same argv, passing http[0..n)
 * (named "http-N" for listener http_of[i]), admin_fd (when >= 0) and
 * named[0..nnamed) as fds 3.. with LISTEN_FDS/LISTEN_PID/LISTEN_FDNAMES.
 * Returns the child's pid or a negative errno. The caller keeps serving. */
pid_t sws_reexec(const int *http, const int *http_of, int nhttp, int admin_fd,
                 const sws_named_fd *named, int nnamed);

/* The control thread's SIGUSR2 (start a new process on our sockets, unless
 * draining) and SIGCHLD (report how that process ended, if it did). */
void sws_reexec_on_signal(struct sws_server *s, int signo, bool draining, int admin_fd);

/* The new process's side of "every loop serves": SWS_READY_FD from the
 * environment (read by sws_inherit_parse); one byte written and the pipe
 * closed. Nothing when this process was not started by a SIGUSR2. */
void sws_reexec_tell_ready(void);
/* The old process's side: the pipe's read end while a new process is
 * starting, else -1 (for poll). */
int sws_reexec_ready_fd(void);
/* The pipe is readable: true when the new process serves (the caller
 * drains); false when it ended first (logged; this process keeps serving). */
bool sws_reexec_ready_read(void);
/* A SIGUSR2's new process that does not serve within [server] restart_timeout
 * is sent SIGTERM, then SIGKILL after a grace. wait_ms: milliseconds until
 * tick has something to do (0: now), or -1 (no new process is starting);
 * the control thread polls at most that long and then calls tick. */
int sws_reexec_wait_ms(const struct sws_server *s, uint64_t now);
void sws_reexec_tick(const struct sws_server *s, uint64_t now);

#endif
