/* One access log line from a compiled format (config/log_format.h) and what
 * the protocol knew of the exchange: no parsing, no allocation, one pass
 * over the ops into the caller's SWS_LOG_LINE_MAX bytes. Text values are
 * escaped as nginx escapes its variables (\xHH for '"', '\\', controls and
 * bytes >= 0x7f), so a client's bytes can neither end a field nor forge a
 * line; in JSON as RFC 8259 strings (\", \\, \u00HH for controls, invalid
 * UTF-8 as U+FFFD), absent values null. */
#ifndef SWS_LOG_RENDER_H
#define SWS_LOG_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log_format.h"

typedef struct sws_log_line {
    const char *peer;    /* NULL or "": absent */
    const char *request; /* the request line as it came; NULL or empty: absent */
    size_t request_len;
    const char *referer;
    size_t referer_len;
    const char *user_agent;
    size_t user_agent_len;
    const char *host;
    size_t host_len;
    int status;
    uint64_t bytes;       /* of the body, as nginx's $body_bytes_sent */
    bool secure;          /* $scheme https */
    int64_t elapsed_ms;   /* from the request's first byte; < 0 unknown */
    const char *route;    /* NULL: not routed ("-") */
    const char *upstream; /* NULL: none */
    int64_t upstream_us;  /* < 0: none */
    /* Filled by the caller for the formats that use them (f->uses). */
    const char *time_local, *time_iso8601;
    uint64_t now_ms; /* wall clock */
} sws_log_line;

/* The line, newline included, into out (SWS_LOG_LINE_MAX bytes): its length. */
size_t sws_log_render(const sws_log_format *f, const sws_log_line *l, char *out);

#endif
