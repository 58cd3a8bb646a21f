/* The reference path of request parsing (parse_cold.c), internal to sws_http:
 * parse.c's sws_http_feed hands it every head head.c's one pass does not take,
 * and what follows a request that ended the connection. */
#ifndef SWS_PARSE_COLD_H
#define SWS_PARSE_COLD_H

#include "sws_http.h"

/* Raw head scanner states: every byte of a request head is seen once, before
 * llhttp sees it, so that line ends are judged on the bytes as they came. */
enum {
    S_START = 0, /* before the request line: empty lines (CRLF) are skipped */
    S_START_CR,
    S_METHOD,   /* in the request line's method, every byte a tchar so far */
    S_LINE1,    /* in the request line */
    S_LINE1_SP, /* just after a SP of the request line */
    S_LINE,     /* in a field line */
    S_CR,       /* after a CR that must end a line */
    S_BOL,      /* at the start of a field line (or of the blank line) */
    S_END_CR,   /* after the CR of the blank line */
    S_DONE,     /* the head is over; the body and trailers are llhttp's */
    S_CHUNK,    /* at a chunk size line: sws_size_line_scan's */
};

/* The reference path (scan_head, then llhttp and the chunk size lines) from
 * data[0], as sws_http_feed. Cold: out of line, so that a request head.c reads
 * does not pay for this path's stack frame. */
__attribute__((noinline)) int sws_http_feed_reference(sws_http_parser *p, const char *data,
                                                      size_t len, size_t *consumed, int *status);
/* llhttp refused the method before its token ended (p->method_wait): reads on
 * to the token's end, as sws_http_feed. */
__attribute__((noinline)) int sws_http_method_verdict(sws_http_parser *p, const char *data,
                                                      size_t len, size_t *consumed, int *status);
/* Bytes after a request without keep-alive (p->closed), as sws_http_feed. */
__attribute__((noinline)) int sws_http_after_close(sws_http_parser *p, const char *data, size_t len,
                                                   size_t *consumed, int *status);

#endif
