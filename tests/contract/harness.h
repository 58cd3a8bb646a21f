/* Shared pieces of the contract tests: the backend under test, loops made for
 * it, a turn-until helper, blocking loopback clients with distinct ids, and an
 * id-echo host that serves connections on loops running on their own threads. */
#ifndef TL_TEST_HARNESS_H
#define TL_TEST_HARNESS_H

#include "turnloop.h"

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

extern tl_backend_kind test_backend;

/* A loop on the backend under test; fails the test if it cannot be made. */
tl_loop *test_loop(uint32_t max_handles, uint32_t max_ops, unsigned flags);

/* Turns until at least `want` completions are gathered into out (or 5 s pass).
 * Returns how many were gathered. */
int turn_until(tl_loop *loop, tl_completion *out, int cap, int want);

/* Turns until the loop is not alive, returning what it delivered meanwhile (at
 * most 5 s). Returns 0 when it ended not alive. */
int drain_loop(tl_loop *loop);

struct sockaddr_in loopback_any_port(void);
uint16_t handle_port(tl_loop *loop, tl_handle h);
int open_fd_count(void);

/* A blocking client: connect, send an 8-byte id, expect that id back, expect EOF. */
int client_echo_id(uint16_t port, uint64_t id);

/* Runs `threads` client threads making `per_thread` connections each, every one
 * with a distinct id. Returns the number that got their exact id back. */
int run_clients(uint16_t port, int threads, int per_thread);

/* ---- the id-echo host -------------------------------------------------------- */

enum serve_route { SERVE_REUSE_PORT, SERVE_HANDOFF, SERVE_MULTISHOT, SERVE_HANDOFF_GROUP };

typedef struct serve_config {
    enum serve_route route;
    int loops;            /* serving loops (handoff: workers; the acceptor is one more) */
    uint32_t max_handles; /* every loop's ceiling */
    int connections;      /* the budget: the run ends when this many are served */
    int client_threads;
    bool leak; /* deliberately forget every served handle (must fail) */
    tl_handoff_policy policy;
    int acceptors; /* SERVE_HANDOFF_GROUP: accepting loops, each one more loop */
} serve_config;

typedef struct serve_result {
    int err;                /* 0, or the first error a host saw (-EMFILE for a leak) */
    int echoed;             /* clients that got their exact id back */
    int served[16];         /* per serving loop */
    int handed[16];         /* handoff: per worker, as counted by the library */
    int accepted[16];       /* handoff group: per acceptor, connections it handed on */
    bool alive_at_end;      /* any loop still alive after shutdown */
    uint64_t accept_pauses; /* times a multishot accept paused at the ceiling */
} serve_result;

void serve_run(const serve_config *cfg, serve_result *res);

#endif
