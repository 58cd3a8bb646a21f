/* The one-pass request head reader (head.c), internal to sws_http: parse.c
 * tries it at the start of every request and falls back to the reference path
 * (parse_cold.c: scan_head + llhttp) for whatever it does not take. */
#ifndef SWS_HTTP_HEAD_H
#define SWS_HTTP_HEAD_H

#include "sws_http.h"

/* Reads the request head at d[0..len) in one pass. True: a head the reference
 * path accepts, whole in d, is in p->req (as the reference path's callbacks
 * would leave it); *head_len is its length through the blank line and
 * *content_length its Content-Length (0 when none). False: the reference path
 * must read these bytes from d[0]; p->req's per-request fields may have been
 * cleared, never left half-written for a request. */
bool sws_http_head_fast(sws_http_parser *p, const char *d, size_t len, size_t *head_len,
                        uint64_t *content_length);

#endif
