/* SIGUSR1 (as nginx and logrotate use it): the access log files opened again
 * by their paths, so that a moved file is recreated. The control thread
 * opens them and posts the new set to every loop; each loop switches between
 * two lines, and the last to leave the old set closes it (log_files.h): a
 * line written meanwhile lands whole in the moved file, none is lost. */
#include "sws.h"

#include "log_files.h"
#include "route.h"

#include <stdatomic.h>
#include <stdint.h>

void sws_logs_reopen(sws_server *s) {
    if (atomic_load(&s->drain)) {
        fprintf(stderr, "scalwsd: SIGUSR1: draining; the access logs stay as they are\n");
        return;
    }
    char why[400];
    sws_log_files *n = NULL;
    /* A reference per loop and the control thread's. */
    if (sws_log_files_open(s->cfg->routes, s->logs, s->nloops + 1, &n, why, sizeof(why)) < 0) {
        fprintf(stderr, "scalwsd: SIGUSR1: cannot reopen the access log %s; the open one stays\n",
                why);
        return;
    }
    if (!n) {
        fprintf(stderr, "scalwsd: SIGUSR1: no access log to reopen\n");
        return;
    }
    for (int i = 0; i < s->nloops; i++) {
        tl_message m = {.value = (uint64_t)(uintptr_t)n};
        if (tl_loop_post(s->loops[i], sws_token(SWS_POST_LOGS, SWS_T_POST), &m) < 0) {
            fprintf(stderr, "scalwsd: SIGUSR1: cannot post the reopened logs to loop %d\n", i);
            sws_log_files_unref(n); /* that loop writes on to the old files */
        }
    }
    sws_log_files_unref(s->logs);
    s->logs = n;
    fprintf(stderr, "scalwsd: SIGUSR1: access log%s reopened (%d file%s)\n",
            n->nfiles == 1 ? "" : "s", n->nfiles, n->nfiles == 1 ? "" : "s");
}
