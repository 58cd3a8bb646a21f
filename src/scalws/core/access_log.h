/* The access log, in the combined format of nginx and Apache:
 *   %h - - [%t] "%r" %>s %b "Referer" "User-Agent" route
 * (route: the name of the route that answered, route.h; "-" when none did)
 * written by each loop to its own stdio stream of the shared file (opened in
 * append mode and line-buffered, so lines from different loops never mix).
 * Both scenarios log every answer: the respond one from the strict parser's
 * kept fields, the proxy from the request it forwarded. */
#ifndef SWS_ACCESS_LOG_H
#define SWS_ACCESS_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "sws.h"

typedef struct sws_log_line {
    const char *peer;
    const char *request; /* "%r", the request line as it came; "-" when empty */
    size_t request_len;
    const char *referer;
    size_t referer_len;
    const char *user_agent;
    size_t user_agent_len;
    int status;
    uint64_t bytes; /* of the body, as nginx's $body_bytes_sent */
} sws_log_line;

/* Appends one line to w->access_log, which must be open. */
void sws_access_log(sws_worker *w, const sws_log_line *l);

/* One line from what a strict parser kept of the last request (its fields
 * are "-" unless p->req.log_fields was lent); "-" for no request line. */
void sws_access_log_parsed(sws_worker *w, const char *peer, const sws_http_parser *p, int status,
                           uint64_t bytes);

/* The peer's address as text, "-" when it is not known (no log line names a
 * peer that is not). */
void sws_peer_name(tl_loop *loop, tl_handle h, char *out, size_t cap);

#endif
