/* HTTP/1.1, the server side: the protocol between a connection's bytes
 * (transport/conn.c) and the exchanges a scenario answers (exchange.h). It
 * parses requests (src/http: the one-pass head reader and llhttp) under the
 * [limits], chooses each request's route once its head is complete, answers
 * what no scenario sees (malformed requests, 408, 100-continue, the ACME
 * HTTP-01 challenge), reads a request whole for a scenario that takes it,
 * and decides keep-alive (answer.c frames the answers). Keep-alive and pipelining:
 * one exchange at a time per connection, the next request read only once the
 * answer has ended; a request that ends the connection is the last one read.
 * Every function runs on the connection's loop thread. */
#include "h1.h"

#include "access_log.h"
#include "acme_tokens.h"
#include "client_head.h"
#include "compress.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#define SWS_PARSER_CACHE 16

/* Where c's parser keeps Referer and User-Agent: NULL while the access log is
 * off (nothing is kept). */
static char *parser_log_fields(const sws_worker *w, sws_http_parser *p) {
    return w->logs ? (char *)p + SWS_PARSER_LOG_AT : NULL;
}

/* A fresh parser for the request whose first bytes have come. Between
 * requests a parser holds nothing the next one needs, so a new one per
 * request parses as one kept for the connection's life would. */
static bool parser_take(sws_worker *w, sws_conn *c) {
    sws_http_parser *p = sws_lend_take(&w->parsers);
    if (!p)
        return false;
    sws_http_parser_init(p, &w->limits);
    p->req.log_fields = parser_log_fields(w, p);
    if (w->lend_sf)
        p->req.sf_fields = (char *)p + SWS_PARSER_SF_AT;
    c->parser = p;
    *stash_of(c) = (route_stash){NULL, 0, NULL};
    return true;
}

static void stash_give(sws_worker *w, sws_conn *c) {
    route_stash *st = stash_of(c);
    sws_lend_give(&w->outbuf, st->buf);
    st->buf = NULL;
    st->len = 0;
}

static void req_give(sws_worker *w, sws_conn *c) {
    route_stash *st = stash_of(c);
    if (st->req) {
        sws_lend_give(&w->reqs, st->req);
        st->req = NULL;
    }
}

static void parser_give(sws_worker *w, sws_conn *c) {
    if (!c->parser)
        return;
    if (stash_of(c)->buf)
        stash_give(w, c);
    req_give(w, c);
    sws_lend_give(&w->parsers, c->parser);
    c->parser = NULL;
}

/* The request's route is known (its head is complete): its instance holds
 * the connection until the answer ends (route_clear), and counts it in
 * `pending`, so that a retired instance is not freed under a request. */
static void route_set(sws_worker *w, sws_conn *c, sws_scenario *sc) {
    c->sc = sc;
    c->routed = true;
    if (sc != &w->sc)
        sc->pending++;
}

/* The connection is the default instance's again. */
static void route_clear(sws_worker *w, sws_conn *c) {
    if (!c->routed)
        return; /* no routes: it never left the default */
    if (c->sc != &w->sc)
        c->sc->pending--;
    c->sc = &w->sc;
    c->routed = false;
}

bool h1_conn_partial(const sws_conn *c) {
    return c->parser && sws_http_partial(c->parser);
}

/* The parser goes back once its request is answered and nothing waits to be
 * parsed: no request begun, no held input, no stash, no answer pending (the
 * scenario reads the request until it ends). */
void h1_parser_settle(sws_worker *w, sws_conn *c) {
    if (c->parser && !c->answer_pending && c->hcount == 0 && !(c->tls && c->tls->stash) &&
        !sws_http_partial(c->parser))
        parser_give(w, c);
}

void h1_conn_log(sws_worker *w, sws_conn *c, int status, uint64_t bytes) {
    char peer[INET6_ADDRSTRLEN];
    sws_peer_name(w->loop, c->h, peer, sizeof(peer));
    /* The route's name, also for an answer that ends outside `answer` (a
     * proxied one, when the upstream's last byte came). */
    const sws_route *keep = w->log_route;
    if (c->routed || (!w->routes_on && c->answer_pending))
        w->log_route = c->sc->route;
    sws_access_log_parsed(w, peer, c->parser, status, bytes, c->tls != NULL, c->req_start);
    w->log_route = keep;
}

/* The answer to a challenge path (acme_challenge): out of line, so that its
 * buffer's stack frame is set up only for a challenge, not for every request. */
static __attribute__((noinline, cold)) bool acme_answer(sws_worker *w, sws_conn *c) {
    const sws_http_request *r = &c->parser->req;
    char keyauth[SWS_ACME_KEYAUTH_MAX];
    size_t n = sws_acme_token_answer(r->path, r->path_len, keyauth, sizeof(keyauth));
    if (!n)
        return false;
    sws_answer a = {.status = 200, .content_type = "application/octet-stream", .length = n};
    if (h1_head(w, &c->ex, &a) < 0 || sws_ex_body(w, &c->ex, keyauth, n) < 0)
        return false;
    h1_body_end(w, c);
    if (w->logs)
        h1_conn_log(w, c, 200, r->head ? 0 : n);
    return true;
}

/* HTTP-01 (RFC 8555 8.3), before any scenario: a plaintext GET of
 * /.well-known/acme-challenge/TOKEN for a token the ACME thread published.
 * The path test is one atomic load while no challenge is in flight; a token
 * it does not know goes to the scenario as any other path. */
static inline bool acme_challenge(sws_worker *w, sws_conn *c) {
    const sws_http_request *r = &c->parser->req;
    if (c->tls || !sws_acme_challenge_path(r->path, r->path_len) ||
        (r->method != HTTP_GET && r->method != HTTP_HEAD))
        return false;
    return acme_answer(w, c);
}

/* The answer has ended: its route counts it, and the connection is the
 * default instance's again. Inline: every request ends here, most of them in
 * answer(). */
static inline __attribute__((always_inline)) void h1_answer_done(sws_worker *w, sws_conn *c) {
    sws_route_count(w, c->sc, c->status, (uint32_t)tl_loop_now(w->loop) - c->req_start);
    route_clear(w, c);
    if (c->parser)
        req_give(w, c);
}

/* An Upgrade request goes to a scenario that may take the connection over
 * (the proxy's tunnel): the connection is not ended by it. */
static bool upgrade_taken(sws_worker *w, sws_conn *c) {
    const sws_scenario *sc =
        c->routed || !w->routes_on ? c->sc : sws_route_of(w, c->listener, &c->parser->req);
    return sc->ops->upgrades;
}

/* A complete request: the scenario answers it (room for resp_max bytes was
 * checked before feeding). more: further input is already here (a
 * pipeline). Draining, the answer says Connection: close unless more of a
 * pipeline is here within the grace: then the last of what the client sent
 * carries it, and no request it already sent goes unanswered. Whether the
 * connection is kept is decided here, before the scenario answers: the
 * answer's head says what the phase says (ka_now). */
static void answer(sws_worker *w, sws_conn *c, bool more) {
    const sws_http_request *r = &c->parser->req;
    bool ka = r->keep_alive || (r->upgrade_keep && upgrade_taken(w, c));
    ka = ka && (!w->draining || (more && tl_loop_now(w->loop) < sws_drain_grace_end(w)));
    if (!ka)
        sws_conn_last(w, c, false);
    if (!sws_conn_out_take(w, c)) {
        /* Out of memory: this connection ends, the others keep their buffers. */
        sws_conn_close(w, c);
        return;
    }
    if (c->phase != SWS_PH_OPEN)
        sws_conn_stop_reading(w, c);
    c->served++;
    c->status = 0;
    c->h1_head = c->h1_chunked = c->h1_nobody = false;
    SWS_ADD(w->ctr.requests, 1);
    if (acme_challenge(w, c))
        return;
    /* The route's instance answers this request (route_inst.c, chosen when
     * its head was complete); the connection goes back to the default one
     * once the answer has ended. */
    if ((w->routes_on || w->gate_on) && !c->routed) {
        /* Without routes a request the gate lets through stays the
         * default's: nothing to mark, nothing to undo at its end. */
        sws_scenario *picked = sws_route_pick(w, &c->ex, c->index, r);
        if (picked != &w->sc || w->routes_on)
            route_set(w, c, picked);
    }
    sws_scenario *sc = c->sc;
    w->log_route = sc->route;
    c->h1_in_answer = true;
    int rc = sws_sc_answer(w, sc, &c->ex);
    c->h1_in_answer = false;
    w->log_route = NULL;
    if (rc < 0) {
        route_clear(w, c); /* the instance holds nothing of it */
        sws_conn_close(w, c);
    } else if (rc == SWS_ANSWER_PENDING) {
        /* The scenario must make progress within send_timeout (the sweep). */
        c->answer_pending = true;
        c->deadline = tl_loop_now(w->loop) + w->cfg->send_timeout_ms;
    } else {
        if (c->h1_chunked)
            h1_body_end(w, c);
        h1_answer_done(w, c);
    }
}

void h1_answer_end(sws_worker *w, sws_conn *c) {
    c->answer_pending = false;
    h1_body_end(w, c);
    h1_answer_done(w, c);
    /* An upgrade answered without a switch: llhttp takes what follows it as
     * the other protocol's, so the next request gets a fresh reader. */
    if (c->parser && c->parser->req.upgrade)
        parser_give(w, c);
    sws_conn_idle_deadline(w, c, h1_conn_partial(c));
}

/* An error answer ends the connection: nothing after a bad request can be
 * trusted to be framed right. head: the answer to HEAD, without its body. */
void h1_answer_error_head(sws_worker *w, sws_conn *c, int status, bool head) {
    SWS_ADD(w->ctr.errors[sws_status_slot(status)], 1);
    /* A request refused after its route was chosen (once its head was
     * complete and sound: 413, a fault in its body, the proxy's 502) is that
     * route's error; one refused earlier (its head's fault) is no route's. */
    if (c->routed)
        sws_route_count(w, c->sc, status, (uint32_t)tl_loop_now(w->loop) - c->req_start);
    bool out = sws_conn_out_take(w, c);
    /* Once the route is known (the head complete and sound: routed, or the
     * default's without routes), its error page; a head's fault: the text. */
    bool known = c->routed || (!w->routes_on && c->parser && sws_http_head_sound(c->parser));
    const sws_error_page *page = out ? h1_error_page(w, c, status, known) : NULL;
    if (w->logs)
        h1_conn_log(w, c, status, head ? 0 : page ? page->len : sws_http_error_body_len(status));
    if (!out) {
        sws_conn_close(w, c);
        return;
    }
    size_t n = h1_error_write(w, c, status, page, head);
    /* The rest of a refused request may still be on the wire: closing with
     * unread input would send a reset that destroys the answer (nginx's
     * lingering close). */
    sws_conn_last(w, c, true);
    if (n == 0) {
        sws_conn_close(w, c);
        return;
    }
    c->olen += (uint32_t)n;
}

static void answer_error(sws_worker *w, sws_conn *c, int status) {
    h1_answer_error_head(w, c, status, false);
}

/* Expect: 100-continue with the body still to come: the interim answer goes
 * out with this turn's flush, so the client sends the body now instead of
 * after its own timeout. Room: consume() feeds only with resp_max bytes free. */
static void answer_continue(sws_worker *w, sws_conn *c) {
    static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
    if (!sws_conn_out_take(w, c)) {
        sws_conn_close(w, c);
        return;
    }
    memcpy(c->out + c->olen, cont, sizeof(cont) - 1);
    c->olen += (uint32_t)(sizeof(cont) - 1);
}

/* ---- the request read whole, for a scenario that takes it ------------------ */

static int req_on_head(void *user, sws_msg *m) {
    h1_req *r = user;
    sws_h1_msg_head(m, r->f, SWS_MSG_FIELDS_MAX, &r->head);
    int st = r->c->sc->ops->request_head(r->w, r->c->sc, &r->c->ex);
    if (st > 0) {
        r->status = st;
        return -1;
    }
    return 0;
}

static int req_on_body(void *user, const char *d, size_t n) {
    h1_req *r = user;
    int st = r->c->sc->ops->request_body(r->w, r->c->sc, &r->c->ex, d, n);
    if (st > 0) {
        r->status = st;
        return -1;
    }
    return 0;
}

static int req_on_done(void *user, sws_msg *m) {
    (void)m;
    h1_req *r = user;
    r->done = true;
    int st = r->c->sc->ops->request_end(r->w, r->c->sc, &r->c->ex);
    if (st > 0) {
        r->status = st;
        return -1;
    }
    return 0;
}

static const sws_msg_cb req_cb = {req_on_head, req_on_body, req_on_done};

/* Feeds the request's bytes, from its first, to its reader. 0, or the
 * status to refuse it with: what a hook chose, 431 for a head past the
 * reader's room, 400 for one the two readers frame differently. */
static int req_feed(sws_worker *w, sws_conn *c, const char *d, size_t n) {
    route_stash *st = stash_of(c);
    h1_req *r = st->req;
    if (!r) {
        if (!(r = sws_lend_take(&w->reqs)))
            return 503;
        r->w = w;
        r->c = c;
        r->status = 0;
        r->done = false;
        r->head = (sws_head){0};
        sws_msg_init(&r->msg, HTTP_REQUEST, &req_cb, r);
        st->req = r;
    }
    size_t off = 0;
    while (off < n && !r->done) {
        size_t used;
        int rc = sws_msg_feed(&r->msg, d + off, n - off, &used);
        if (rc < 0)
            return r->status ? r->status : rc == -E2BIG ? 431 : 400;
        off += used;
    }
    if (off < n)
        return 400; /* the two readers disagree on where the request ends */
    c->sc->ops->request_flush(w, c->sc, &c->ex);
    return 0;
}

const sws_head *h1_request_head(const sws_exchange *x) {
    const sws_conn *c = cconn_ofx(x);
    if (!c->parser)
        return NULL;
    const h1_req *r = stash_of(c)->req;
    return r && r->head.f ? &r->head : NULL;
}

/* Bytes the strict parser passed (rc: what sws_http_feed said of them): once
 * a request's head is complete its route is chosen, and a scenario that takes
 * request bytes gets them all from the request's first, those kept in the
 * stash first. Returns 0, or an error status from the scenario. */
static int pass_bytes(sws_worker *w, sws_conn *c, int rc, const char *d, size_t n) {
    const sws_http_parser *p = c->parser;
    if (c->routed || !w->routes_on) {
        /* Routed already, or no routes: c->sc is the default from the start. */
        return c->sc->ops->request_head ? req_feed(w, c, d, n) : 0;
    }
    bool head_done = rc == SWS_HTTP_REQUEST || (p->in_message && p->headers_done);
    route_stash *st = stash_of(c);
    if (!head_done) {
        if (!w->stash_heads)
            return 0;
        if (!st->buf && !(st->buf = sws_lend_take(&w->outbuf)))
            return 503;
        memcpy(st->buf + st->len, d, n); /* consume() kept n within SWS_ROUTE_STASH */
        st->len += (uint32_t)n;
        return 0;
    }
    route_set(w, c, sws_route_pick(w, &c->ex, c->index, &p->req));
    const sws_scenario_ops *ops = c->sc->ops;
    int bad = 0;
    if (!ops->request_head) {
        /* nothing kept is needed */
    } else if (!st->len) {
        bad = req_feed(w, c, d, n); /* the head came whole: no copy */
    } else {
        memcpy(st->buf + st->len, d, n);
        st->len += (uint32_t)n;
        bad = req_feed(w, c, st->buf, st->len);
    }
    stash_give(w, c);
    return bad;
}

/* Parses from data[*off..len). Returns false when output is full (or the
 * scenario takes no more of a request body) and the rest must be held until a
 * write completes (or sws_ex_more). */
static bool consume(sws_worker *w, sws_conn *c, const char *data, uint32_t len, uint32_t *off) {
    while (*off < len) {
        if (c->phase != SWS_PH_OPEN) {
            sws_conn_last(w, c, true); /* pipelined input after a close: see answer_error */
            *off = len;
            break;
        }
        if (c->answer_pending || c->olen + w->resp_max > w->out_cap)
            return false;
        if (!c->parser && !parser_take(w, c)) {
            sws_conn_close(w, c); /* out of memory: this connection ends */
            *off = len;
            break;
        }
        /* Before the route is known, bytes are kept for a route whose
         * scenario takes them (w->stash_heads), at most SWS_ROUTE_STASH. */
        bool stashing = w->stash_heads && !c->routed;
        const sws_scenario_ops *ops = c->sc->ops;
        size_t n = len - *off;
        if (stashing) {
            size_t room = SWS_ROUTE_STASH - stash_of(c)->len;
            if (room == 0) { /* a head this long cannot be routed to such a scenario */
                answer_error(w, c, 431);
                *off = len;
                break;
            }
            if (n > room)
                n = room;
        } else if (ops->request_head) {
            /* The parser sees no byte the scenario cannot take now: what it
             * passed is handed over at once, in the order it came. */
            size_t room = ops->request_room(w, c->sc, &c->ex);
            if (room == 0)
                return false;
            if (n > room)
                n = room;
        }
        size_t used;
        int st;
        if (!sws_http_partial(c->parser))
            c->req_start =
                (uint32_t)tl_loop_now(w->loop); /* the route's latency counts from here */
        int rc = sws_http_feed(c->parser, data + *off, n, &used, &st);
        if (rc == SWS_HTTP_NEED_MORE)
            used = n;
        /* Bytes go on only where someone takes them, or a route is to be
         * chosen: without routes a respond request never calls out. */
        if ((ops->request_head || (w->routes_on && !c->routed)) && rc >= 0 && used) {
            int bad = pass_bytes(w, c, rc, data + *off, used);
            if (bad > 0 || sws_phase_gone(c->phase)) {
                if (bad > 0 && c->phase == SWS_PH_OPEN)
                    answer_error(w, c, bad);
                *off = len;
                break;
            }
        }
        if (rc == SWS_HTTP_NEED_MORE) {
            *off += (uint32_t)n;
            if (sws_http_continue_due(c->parser))
                answer_continue(w, c);
            if (c->dl_kind == SWS_DL_IDLE && h1_conn_partial(c)) {
                c->dl_kind = SWS_DL_HEADER;
                c->deadline = tl_loop_now(w->loop) + w->cfg->header_timeout_ms;
            } else if (ops->request_head && c->parser->headers_done) {
                /* A body streamed to the scenario: header_timeout runs
                 * between reads, not over the whole body. */
                c->deadline = tl_loop_now(w->loop) + w->cfg->header_timeout_ms;
            }
            continue;
        }
        if (rc == SWS_HTTP_REQUEST) {
            *off += (uint32_t)used;
            /* Held input counts the buffer being fed (pump) as one. */
            answer(w, c, *off < len || c->hcount > 1);
            if (!c->answer_pending)
                sws_conn_idle_deadline(w, c, h1_conn_partial(c));
            continue;
        }
        /* A refusal once the head was complete and sound (413 for its
         * declared size, a fault in its chunked body or trailers) is its
         * route's: chosen here when the fault came in the same read as the
         * head's end, which pass_bytes never saw. A refusal of the head itself
         * (400, 414, 431, 501, 505) stays no route's. */
        if (!c->routed && w->routes_on && sws_http_head_sound(c->parser))
            route_set(w, c, sws_route_of(w, c->listener, &c->parser->req));
        answer_error(w, c, st);
        *off = len;
        break;
    }
    return true;
}

/* ---- the connection's side (transport/conn.c calls these) ------------------- */

static bool h1_input(sws_worker *w, sws_conn *c, const char *data, uint32_t len, uint32_t *off) {
    return consume(w, c, data, len, off);
}

static bool h1_partial(const sws_conn *c) {
    return h1_conn_partial(c);
}

static void h1_drained(sws_worker *w, sws_conn *c) {
    sws_sc_more(w, c->sc, &c->ex);
}

static bool h1_timeout(sws_worker *w, sws_conn *c) {
    if (c->olen + 512 > w->out_cap)
        return false;
    answer_error(w, c, 408);
    return true;
}

static void h1_freed(sws_worker *w, sws_conn *c) {
    sws_sc_conn_end(w, c->sc, &c->ex);
    c->answer_pending = false;
    route_clear(w, c); /* its instance holds it no more (a retired one may go) */
    parser_give(w, c);
}

/* A reload switched the access log on, off or to another file: open
 * connections keep Referer and User-Agent from now on, or stop. */
static void h1_reload(sws_worker *w, sws_conn *c) {
    if (c->parser)
        c->parser->req.log_fields = parser_log_fields(w, c->parser);
}

static int h1_table_init(sws_worker *w) {
    if (sws_lend_init(&w->parsers, SWS_PARSER_BLOCK, w->nslots) < 0 ||
        sws_lend_init(&w->reqs, sizeof(h1_req), w->nslots) < 0)
        return -ENOMEM;
    return 0;
}

/* After the loop is freed: the parsers connections still held, and the pool. */
static void h1_table_free(sws_worker *w) {
    for (uint32_t k = 0; k < w->nslots && w->slots; k++) {
        sws_conn *c = &w->slots[k];
        if (c->parser) {
            free(stash_of(c)->buf);
            free(stash_of(c)->req);
        }
        free(c->parser);
        c->parser = NULL;
    }
    sws_lend_fini(&w->parsers);
    sws_lend_fini(&w->reqs);
}

static void h1_trim(sws_worker *w) {
    sws_lend_trim(&w->parsers, SWS_PARSER_CACHE);
    sws_lend_trim(&w->reqs, SWS_REQ_CACHE);
}

static void h1_settle(sws_worker *w, sws_conn *c) {
    h1_parser_settle(w, c);
}

const sws_conn_proto sws_http1_conn = {
    .ex = &sws_h1_proto,
    .input = h1_input,
    .partial = h1_partial,
    .settle = h1_settle,
    .drained = h1_drained,
    .timeout = h1_timeout,
    .freed = h1_freed,
    .reload = h1_reload,
    .table_init = h1_table_init,
    .table_free = h1_table_free,
    .trim = h1_trim,
};

int sws_h1_switch(sws_worker *w, sws_exchange *x, const sws_answer *a, const sws_conn_proto *to) {
    sws_conn *c = conn_ofx(x);
    /* Draining, an answer's head ends its connection (h1_head): no tunnel
     * begins then. */
    if (x->proto != &sws_h1_proto || c->phase != SWS_PH_OPEN || !c->answer_pending || w->draining)
        return -EPROTO;
    int rc = h1_head(w, x, a);
    if (rc < 0)
        return rc;
    c->answer_pending = false;
    c->h1_head = c->h1_chunked = c->h1_nobody = false;
    h1_answer_done(w, c);
    parser_give(w, c); /* nothing on this connection is parsed any more */
    return sws_conn_switch(w, c, to) ? 0 : -ENOMEM;
}
