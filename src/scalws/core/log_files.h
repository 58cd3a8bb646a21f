/* The access log files of one configuration: every distinct path its routes
 * log to, opened once (O_APPEND) by the control thread and shared by every
 * loop, each of which writes a line with one write(2). Reopening (SIGUSR1,
 * SIGHUP) makes a new set and posts it to the loops; each switches between
 * two lines, and the last loop to leave the old set closes its files, so no
 * line is lost or split by a rotation. */
#ifndef SWS_LOG_FILES_H
#define SWS_LOG_FILES_H

#include <stdatomic.h>
#include <stddef.h>

#include "route.h"

typedef struct sws_log_file {
    char path[sizeof(((sws_route *)0)->log_path)];
    int fd;
} sws_log_file;

typedef struct sws_log_files {
    _Atomic int refs;
    struct sws_routes *routes; /* the table it was made for (a reference) */
    int *route_file;           /* by route index: its file, or -1 (off) */
    int nfiles;
    sws_log_file files[];
} sws_log_files;

/* Control thread: the files of t's routes, opened now, with refs references.
 * A path that cannot be opened keeps prev's descriptor for the same path
 * (dup: the lines go on to the file they went to) when prev has one; else
 * -errno with why ("PATH: reason"). *out is NULL when no route logs. */
int sws_log_files_open(struct sws_routes *t, const sws_log_files *prev, int refs,
                       sws_log_files **out, char *why, size_t len);
/* Any thread: drops a reference; the last closes the files and frees s. */
void sws_log_files_unref(sws_log_files *s);
/* The descriptor route r's lines go to, or -1. r may be of an older table
 * (an answer that began before a reload): then its path is looked up. */
int sws_log_files_fd(const sws_log_files *s, const sws_route *r);

#endif
