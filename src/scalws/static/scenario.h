/* The static scenario on a worker: answers a complete request from the files
 * below [static] root, streams bodies through the connection's output buffer,
 * and keeps a per-loop open-file cache. Loop thread only, except the helper
 * thread inside scenario.c that reads cold files. */
#ifndef SWS_STATIC_SCENARIO_H
#define SWS_STATIC_SCENARIO_H

#include <stdbool.h>

#include "sws.h"

/* The largest head this scenario appends (Location holds a path of up to
 * SWS_HTTP_SF_PATH_MAX bytes): consume() keeps this much room. */
#define SWS_STATIC_HEAD_MAX 2048
/* The output buffer of a static connection: what a slow reader can hold. */
#define SWS_STATIC_OUT_CAP 65536

/* Sets up w->stat for cfg (root, types, cache). 0 or -errno. */
int sws_static_init(sws_worker *w, const sws_config *cfg);
/* On reload, on the loop: the new root, types and keys. Keeps the old on error. */
void sws_static_reload(sws_worker *w, const sws_config *cfg);
/* After the loop's last turn: stops the helper thread, closes the cache. */
void sws_static_free(sws_worker *w);

/* The request in c->parser.req is complete: append its answer. */
void sws_static_answer(sws_worker *w, sws_conn *c);
/* Tops up c->out from the file being sent; may hand a cold read to the helper
 * (then c->file_job is set and nothing is appended until it posts back). */
void sws_static_fill(sws_worker *w, sws_conn *c);
/* A SWS_T_STATIC post: a cold read done by the helper. */
void sws_static_on_post(sws_worker *w, const tl_completion *e);
/* The slot is being freed: close the file it sends, if it owns it. */
void sws_static_conn_end(sws_conn *c);

#endif
