/* HTTP/1.1's parts (server.c: requests and the connection's side;
 * answer.c: the exchange's functions), shared between its files only. */
#ifndef SWS_H1_H
#define SWS_H1_H

#include "conn.h"
#include "exchange.h"
#include "http1.h"
#include "route.h"
#include "sws_msg.h"

static inline sws_conn *conn_ofx(sws_exchange *x) {
    return (sws_conn *)x; /* ex is sws_conn's first member */
}

static inline const sws_conn *cconn_ofx(const sws_exchange *x) {
    return (const sws_conn *)x;
}

/* The header policy's lines for an answer of status on c: those of the route
 * whose instance holds it (the default's before a route is chosen). */
static inline const char *h1_policy(const sws_conn *c, int status, uint32_t *len) {
    return sws_headers_h1(c->sc->cfg->headers, status, len);
}

/* A parser block: the parser, then the access log's field storage, then the
 * static scenario's, then the route stash. The storages are always there, so
 * that a reload that turns the access log on finds room in the parsers
 * already lent. */
#define SWS_PARSER_LOG_AT sizeof(sws_http_parser)
#define SWS_PARSER_SF_AT (SWS_PARSER_LOG_AT + SWS_HTTP_LOG_STORAGE)
#define SWS_PARSER_STASH_AT                                                                        \
    ((SWS_PARSER_SF_AT + SWS_HTTP_SF_STORAGE + _Alignof(route_stash) - 1) /                        \
     _Alignof(route_stash) * _Alignof(route_stash))
#define SWS_PARSER_BLOCK (SWS_PARSER_STASH_AT + sizeof(route_stash))

/* The raw bytes of a request head read before its route is known, for a
 * route whose scenario takes request bytes (the proxy): a route is chosen on
 * the complete head, and such a scenario reads the request from its first
 * byte. buf is an output-pool block, taken only when a head spans reads (a
 * head that comes whole is handed over from the loop buffer). It lives in
 * the parser's block: only a request under way can have one. */
typedef struct route_stash {
    char *buf;
    uint32_t len;
    struct h1_req *req; /* the request as a whole, for a scenario that takes it */
} route_stash;

/* The request read whole, for a scenario that takes it (request_head): a
 * reader of every field and of the body's framing, fed the request's bytes
 * as the strict parser passed them, calling the scenario's hooks. Lent from
 * w->reqs while such a request is under way. */
typedef struct h1_req {
    sws_worker *w;
    sws_conn *c;
    int status; /* a hook's refusal */
    bool done;
    sws_head head;
    sws_field f[SWS_MSG_FIELDS_MAX];
    sws_msg msg;
} h1_req;

#define SWS_REQ_CACHE 4

static inline route_stash *stash_of(const sws_conn *c) {
    return (route_stash *)((char *)c->parser + SWS_PARSER_STASH_AT);
}

/* server.c */
void h1_conn_log(sws_worker *w, sws_conn *c, int status, uint64_t bytes);
void h1_answer_end(sws_worker *w, sws_conn *c);
void h1_answer_error_head(sws_worker *w, sws_conn *c, int status, bool head);
void h1_parser_settle(sws_worker *w, sws_conn *c);
bool h1_conn_partial(const sws_conn *c);
const sws_head *h1_request_head(const sws_exchange *x);

/* answer.c */
extern const sws_proto sws_h1_proto;
/* The page of c's route for an error status, once its route is known (none
 * before, or when it would not fit the output: the short text then). */
const sws_error_page *h1_error_page(sws_worker *w, const sws_conn *c, int status, bool known);
/* Our error answer with "Connection: close" at the end of c->out (taken):
 * page's, or a short text naming the status. Its length, or 0 when it does
 * not fit. */
size_t h1_error_write(sws_worker *w, sws_conn *c, int status, const sws_error_page *page,
                      bool head);
int h1_head(sws_worker *w, sws_exchange *x, const sws_answer *a);
/* A chunked body's last chunk (a body of known length needs nothing). */
void h1_body_end(sws_worker *w, sws_conn *c);

#endif
