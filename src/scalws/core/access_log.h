/* The access log: one line per answer, in the format of the route that
 * answered (config/log_format.h; combined by default: nginx's with the route's
 * name last, "-" for a request refused in its head, before it could be
 * routed), to the route's file (log_files.h). The loop that answered renders
 * the line into its own buffer and writes it with one write(2) on a file
 * opened O_APPEND, so lines of different loops and processes never mix and a
 * line is never split, however long. Both protocols and every scenario log
 * every answer: the respond and static ones from what the parser kept, the
 * proxy from the request it forwarded, with its upstream. */
#ifndef SWS_ACCESS_LOG_H
#define SWS_ACCESS_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "log_files.h"
#include "log_render.h"
#include "sws.h"

/* Renders and writes l for the route w->log_route (NULL: not routed). The
 * route's name, the times and the upstream (w->log_up_*) are filled here.
 * Only while w->logs is set. */
void sws_access_log(sws_worker *w, sws_log_line *l);

/* One line from what a strict parser kept of the last request (its fields
 * are "-" unless p->req.log_fields was lent); "-" for no request line.
 * start_ms: the loop clock at the request's first byte. */
void sws_access_log_parsed(sws_worker *w, const char *peer, const sws_http_parser *p, int status,
                           uint64_t bytes, bool secure, uint32_t start_ms);

/* The loop's thread: its files become s (a reference it now holds; NULL:
 * none), between two lines; the set it leaves is dropped. A set made for
 * another route table than the loop's (a reload the loop refused) is
 * dropped instead. */
void sws_access_log_switch(sws_worker *w, sws_log_files *s);

/* The peer's address as text, "-" when it is not known (no log line names a
 * peer that is not). */
void sws_peer_name(tl_loop *loop, tl_handle h, char *out, size_t cap);

#endif
