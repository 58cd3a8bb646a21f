/* Graceful drain, begun by SIGTERM/SIGINT or by the new process of a SIGUSR2
 * restart saying it serves. The control thread posts DRAIN to every loop (the
 * only cross-thread calls are tl_loop_post/tl_acceptor_stop); each loop closes
 * its listener, answers the next request of every connection with Connection:
 * close and closes what stays idle after drain_idle_grace (conn.c). After
 * drain_timeout FORCE closes the rest. */
#include "sws.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

static void post_all(sws_server *s, uint64_t value) {
    tl_message m = {.value = value};
    for (int i = 0; i < s->nloops; i++)
        if (tl_loop_post(s->loops[i], sws_token(SWS_POST_CONTROL, SWS_T_POST), &m) < 0)
            fprintf(stderr, "scalwsd: cannot post to loop %d\n", i);
}

void sws_drain_begin(sws_server *s) {
    atomic_store(&s->drain, 1);
    for (int li = 0; li < s->nlisteners; li++) {
        if (s->listeners[li].acceptor) {
            tl_acceptor_stop(s->listeners[li].acceptor);
            s->listeners[li].acceptor = NULL;
        }
    }
    post_all(s, SWS_MSG_DRAIN);
    for (int li = 0; li < s->nlisteners; li++) {
        if (s->listeners[li].shared_fd >= 0) {
            /* The loops close their duplicates when the message arrives. */
            close(s->listeners[li].shared_fd);
            s->listeners[li].shared_fd = -1;
        }
    }
}

void sws_drain_force(sws_server *s) {
    atomic_store(&s->drain, 2);
    post_all(s, SWS_MSG_FORCE);
}
