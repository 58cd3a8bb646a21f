/* HTTP/3 on a QUIC connection (nghttp3, server side): the control and
 * QPACK streams, and each request stream into a request a scenario reads
 * (sws_http_request, and every field as sws_head for one that takes the
 * request), under the [limits] of HTTP/1.1 with the answers HTTP/2 gives
 * (414, 431, 413, 501). nghttp3 checks RFC 9114 4.3 itself (pseudo-fields
 * missing, repeated or misplaced, upper-case names, connection-specific
 * fields, a content-length the DATA disagrees with): each a stream error
 * H3_MESSAGE_ERROR before a field reaches us. A request body goes to a
 * scenario that takes it (the proxy) as far as its request_room allows;
 * the rest is held, and the stream's and connection's flow-control credit
 * comes back only as the scenario takes the bytes (back-pressure). For the
 * scenarios that answer from the head the body is read and dropped. */
#include "h3.h"

#include "compress.h"
#include "sws.h"
#include "sws_msg.h"

#include <errno.h>
#include <llhttp.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- the stream table ---------------------------------------------------------- */

static h3_stream *stream_new(h3_conn *hc, int64_t id) {
    sws_h3_endpoint *ep = hc->ep;
    if (ep->nfree == 0)
        return NULL;
    uint32_t i = ep->free_idx[--ep->nfree];
    h3_stream *st = &ep->table[i];
    uint32_t gen = st->gen + 1;
    memset(st, 0, sizeof(*st));
    st->ex.proto = &sws_h3_proto;
    st->hc = hc;
    st->id = id;
    st->gen = gen;
    st->used = true;
    st->content_length = UINT64_MAX;
    st->start_ns = sws_h3_now();
    st->req.http_major = 3;
    st->req.keep_alive = true;
    sws_worker *w = ep->s.w;
    if (w && w->lend_sf && !ep->sf_store)
        ep->sf_store = calloc(ep->ntable, SWS_HTTP_SF_STORAGE);
    if (w && w->lend_sf && ep->sf_store)
        st->req.sf_fields = ep->sf_store + (size_t)i * SWS_HTTP_SF_STORAGE;
    if (w && w->logs && !ep->log_store)
        ep->log_store = calloc(ep->ntable, SWS_HTTP_LOG_STORAGE);
    if (w && w->logs && ep->log_store)
        st->req.log_fields = ep->log_store + (size_t)i * SWS_HTTP_LOG_STORAGE;
    /* A route's scenario may take the request whole (the proxy): keep every
     * field until the route is known. */
    st->keep_fields = w && (w->stash_heads || (w->sc.ops && w->sc.ops->request_head));
    st->next = hc->streams;
    if (hc->streams)
        hc->streams->prev = st;
    hc->streams = st;
    hc->nstreams++;
    ep->st.streams++;
    return st;
}

void h3_stream_free(h3_conn *hc, h3_stream *st) {
    sws_h3_endpoint *ep = hc->ep;
    if (st->asked)
        sws_sc_conn_end(ep->s.w, st->sc, &st->ex);
    if (st->routed)
        st->sc->pending--;
    /* nghttp3 holds no pointer to it past here: this is its stream_close,
     * or the connection's end (nghttp3_conn_del calls back no one). */
    free(st->ring);
    for (uint32_t k = 0; k < st->nf; k++) {
        nghttp3_rcbuf_decref(st->rc[2 * k]);
        nghttp3_rcbuf_decref(st->rc[2 * k + 1]);
    }
    free(st->f);
    free(st->rc);
    /* Bytes never taken give the connection its credit back. */
    if (st->held_len)
        ngtcp2_conn_extend_max_offset(hc->q, st->held_len);
    ep->st.body_held -= st->held_len;
    free(st->held);
    if (st->prev)
        st->prev->next = st->next;
    else
        hc->streams = st->next;
    if (st->next)
        st->next->prev = st->prev;
    hc->nstreams--;
    if (st->fin_due)
        hc->fin_due--;
    if (hc->nstreams == 0) /* h3_wait's keep-alive: an idle connection may time out */
        ngtcp2_conn_set_keep_alive_timeout(hc->q, 0);
    uint32_t gen = st->gen;
    memset(st, 0, sizeof(*st));
    st->gen = gen;
    ep->free_idx[ep->nfree++] = (uint32_t)(st - ep->table);
}

/* ---- the request's head ---------------------------------------------------------- */

static bool is(const uint8_t *n, size_t nl, const char *lit, size_t ll) {
    return nl == ll && memcmp(n, lit, ll) == 0;
}
#define IS(lit) is(n, nl, lit, sizeof(lit) - 1)

static void refuse(h3_stream *st, int status) {
    if (!st->refuse)
        st->refuse = (uint16_t)status;
}

static void host_put(sws_http_request *r, const uint8_t *v, size_t vl) {
    size_t k = vl < SWS_HTTP_HOST_MAX ? vl : SWS_HTTP_HOST_MAX;
    memcpy(r->host, v, k);
    r->host_len = (uint16_t)k;
}

static void log_put(char *dst, uint16_t *len, const uint8_t *v, size_t vl) {
    size_t n = vl < SWS_HTTP_LOG_FIELD_MAX ? vl : SWS_HTTP_LOG_FIELD_MAX;
    memcpy(dst, v, n);
    *len = (uint16_t)n;
}

/* The fields static and redirect read, as HTTP/2 keeps them. */
static void sf_field(sws_http_request *r, const uint8_t *n, size_t nl, const uint8_t *v,
                     size_t vl) {
    if (IS("accept-encoding"))
        sws_sf_put(r, SWS_HTTP_SF_AE, v, vl);
    else if (IS("authorization"))
        sws_sf_put(r, SWS_HTTP_SF_AUTH, v, vl);
    else if (IS("x-forwarded-for"))
        sws_sf_put(r, SWS_HTTP_SF_XFF, v, vl);
    else if (IS("if-none-match"))
        sws_sf_put(r, SWS_HTTP_SF_INM, v, vl);
    else if (IS("if-modified-since"))
        sws_sf_put(r, SWS_HTTP_SF_IMS, v, vl);
    else if (IS("if-range"))
        sws_sf_put(r, SWS_HTTP_SF_IF_RANGE, v, vl);
    else if (IS("range"))
        sws_sf_put(r, SWS_HTTP_SF_RANGE, v, vl);
}

static void on_pseudo(h3_stream *st, const sws_http_limits *lim, const uint8_t *n, size_t nl,
                      const uint8_t *v, size_t vl) {
    sws_http_request *r = &st->req;
    if (IS(":method")) {
        bool known;
        r->method = sws_method_of((const char *)v, vl, &known);
        r->head = r->method == HTTP_HEAD;
        if (!known)
            refuse(st, 501); /* a CONNECT is judged with its route (sws_connect_refusal) */
    } else if (IS(":path")) {
        if (vl > lim->uri_length)
            refuse(st, 414);
        size_t k = vl < SWS_HTTP_PATH_MAX - 1 ? vl : SWS_HTTP_PATH_MAX - 1;
        memcpy(r->path, v, k);
        r->path[k] = '\0';
        r->path_len = (uint16_t)k;
        r->path_truncated = k < vl;
        if (r->sf_fields) {
            if (vl > SWS_HTTP_SF_PATH_MAX) {
                r->sf_path_len = SWS_HTTP_SF_PATH_MAX + 1;
            } else {
                memcpy(r->sf_fields + SWS_HTTP_SF_PATH, v, vl);
                r->sf_path_len = (uint16_t)vl;
            }
        }
    } else if (IS(":authority")) {
        st->authority = true;
        host_put(r, v, vl);
    } else if (IS(":protocol")) {
        /* RFC 9220, RFC 8441 4: nghttp3 takes it only when our SETTINGS
         * enabled it, only with CONNECT, :scheme, :path and :authority;
         * anything else is its H3_MESSAGE_ERROR. */
        st->tunnel = true;
    }
}

static void on_field(h3_stream *st, const sws_http_limits *lim, const uint8_t *n, size_t nl,
                     const uint8_t *v, size_t vl) {
    sws_http_request *r = &st->req;
    if (IS("content-length")) {
        uint64_t cl = 0;
        for (size_t i = 0; i < vl && cl <= UINT64_MAX / 10 - 10; i++)
            cl = cl * 10 + (uint64_t)(v[i] - '0'); /* digits: nghttp3 checked */
        st->content_length = cl;
        if (cl > lim->body_size)
            refuse(st, 413);
    } else if (IS("early-data")) {
        /* RFC 8470 5.1: an intermediary took it in early data on its hop:
         * as replayable as our own 0-RTT. */
        if (vl == 1 && v[0] == '1')
            st->early = true;
    } else if (IS("host")) {
        /* RFC 9114 4.3.1: a Host naming another origin than :authority
         * makes the request malformed. */
        if (st->authority && (vl != r->host_len || strncasecmp((const char *)v, r->host, vl) != 0))
            refuse(st, 400);
        else if (!st->authority)
            host_put(r, v, vl);
    } else if (IS("expect")) {
        if (vl == 12 && strncasecmp((const char *)v, "100-continue", 12) == 0)
            st->expect = true;
        else
            refuse(st, 417); /* RFC 9110 10.1.1: an expectation we cannot meet */
    } else if (r->log_fields && IS("referer")) {
        log_put(r->log_fields + SWS_HTTP_LOG_REFERER, &r->referer_len, v, vl);
    } else if (r->log_fields && IS("user-agent")) {
        log_put(r->log_fields + SWS_HTTP_LOG_UA, &r->user_agent_len, v, vl);
    } else if (r->sf_fields) {
        sf_field(r, n, nl, v, vl);
    }
}

/* A field of the head kept whole (keep_fields), its buffers referenced:
 * false past SWS_MSG_FIELDS_MAX or out of memory (431). */
static bool keep_field(h3_stream *st, nghttp3_rcbuf *name, nghttp3_rcbuf *value) {
    if (st->nf == st->fcap) {
        uint32_t cap = st->fcap ? st->fcap * 2u : 16u;
        if (cap > SWS_MSG_FIELDS_MAX)
            cap = SWS_MSG_FIELDS_MAX;
        if (st->nf == cap)
            return false;
        sws_field *f = realloc(st->f, cap * sizeof(*f));
        if (f)
            st->f = f;
        nghttp3_rcbuf **rc = realloc(st->rc, 2 * cap * sizeof(*rc));
        if (rc)
            st->rc = rc;
        if (!f || !rc)
            return false;
        st->fcap = (uint16_t)cap;
    }
    nghttp3_vec n = nghttp3_rcbuf_get_buf(name), v = nghttp3_rcbuf_get_buf(value);
    nghttp3_rcbuf_incref(name);
    nghttp3_rcbuf_incref(value);
    st->rc[2 * st->nf] = name;
    st->rc[2 * st->nf + 1] = value;
    st->f[st->nf++] =
        sws_field_str((const char *)n.base, (uint32_t)n.len, (const char *)v.base, (uint32_t)v.len);
    return true;
}

/* sws_head for a scenario that takes the request (RFC 9114 4.3.1:
 * :authority as Host when no Host came). */
static void head_build(h3_stream *st) {
    sws_head_from_fields(&st->head, st->f, st->nf, st->fcap);
    st->head.method = st->req.method;
    st->head.http_major = 3;
    st->head.http_minor = 0;
    st->head.streams = !st->req_end && st->content_length == UINT64_MAX;
}

static int begin_headers_cb(nghttp3_conn *h, int64_t id, void *ud, void *sud) {
    (void)sud;
    h3_conn *hc = ud;
    h3_stream *st = stream_new(hc, id);
    if (!st) {
        /* The endpoint's table is full: the client may retry (RFC 9114 8.1). */
        ngtcp2_conn_shutdown_stream(hc->q, id, NGHTTP3_H3_REQUEST_REJECTED);
        return 0;
    }
    nghttp3_conn_set_stream_user_data(h, id, st);
    return 0;
}

static int recv_header_cb(nghttp3_conn *h, int64_t id, int32_t token, nghttp3_rcbuf *name,
                          nghttp3_rcbuf *value, uint8_t flags, void *ud, void *sud) {
    (void)h;
    (void)id;
    (void)token;
    (void)flags;
    h3_conn *hc = ud;
    h3_stream *st = sud;
    if (!st)
        return 0;
    const sws_http_limits *lim = &hc->ep->s.limits;
    nghttp3_vec nv = nghttp3_rcbuf_get_buf(name), vv = nghttp3_rcbuf_get_buf(value);
    /* Counted as HTTP/1.1 counts a field line ("name: value" CR LF). */
    st->hbytes += (uint32_t)(nv.len + vv.len + 4);
    st->hcount++;
    if (st->hbytes > lim->header_bytes || st->hcount > lim->header_count) {
        refuse(st, 431);
        return 0;
    }
    const uint8_t *n = nv.base;
    size_t nl = nv.len;
    bool pseudo = nl && n[0] == ':';
    if (pseudo)
        on_pseudo(st, lim, n, nl, vv.base, vv.len);
    else
        on_field(st, lim, n, nl, vv.base, vv.len);
    if (st->keep_fields && (!pseudo || IS(":authority") || IS(":path") || IS(":protocol")) &&
        !keep_field(st, name, value))
        refuse(st, 431);
    return 0;
}

/* Its route's instance takes the stream from its complete head on (by
 * :authority and path; a refusal of the gate's is the gate's instance). */
static void route(h3_conn *hc, h3_stream *st) {
    if (st->routed)
        return;
    sws_h3_endpoint *ep = hc->ep;
    st->routed = true;
    st->sc = ep->s.route(ep->s.route_ud, &st->ex, &st->req);
    st->sc->pending++;
    st->takes_body = st->sc->ops->request_head != NULL;
    int no = sws_connect_refusal(st->req.method, st->tunnel, st->takes_body);
    if (no)
        refuse(st, no);
}

void h3_answer_request(h3_conn *hc, h3_stream *st) {
    sws_h3_endpoint *ep = hc->ep;
    if (st->answering)
        return;
    st->answering = true;
    ep->st.requests++;
    route(hc, st);
    if (st->refuse) {
        h3_answer_error(st, st->refuse);
        /* RFC 9114 4.1: the answer is complete without the rest of the
         * body, which the client is asked not to send. */
        if (!st->req_end)
            h3_body_stop(hc, st);
        return;
    }
    st->in_answer = true;
    st->asked = true;
    int rc = sws_sc_answer(ep->s.w, st->sc, &st->ex);
    st->in_answer = false;
    if (rc == SWS_ANSWER_PENDING) {
        st->pending = !st->ended;
        /* "More follows" with no body asked for yet (static sends its head
         * alone, meaning to sendfile the rest): what was queued is written,
         * so its `more` is due now, not with ACKs that will never come. */
        if (st->pending && !st->written && !st->want_more)
            st->more_due = hc->more_due = true;
    } else if (rc < 0) {
        if (!st->submitted)
            h3_answer_error(st, 500);
        else
            ngtcp2_conn_shutdown_stream(hc->q, st->id, NGHTTP3_H3_INTERNAL_ERROR);
    } else {
        st->ended = true;
    }
    if (st->submitted && hc->h)
        nghttp3_conn_resume_stream(hc->h, st->id);
}

void h3_request_refuse(h3_conn *hc, h3_stream *st, int status) {
    refuse(st, status);
    h3_answer_request(hc, st);
}

static int end_headers_cb(nghttp3_conn *h, int64_t id, int fin, void *ud, void *sud) {
    (void)h;
    (void)id;
    h3_conn *hc = ud;
    h3_stream *st = sud;
    if (!st)
        return 0;
    /* A head that ends in 0-RTT data may be a replay: one that completes in
     * 1-RTT cannot be (an attacker cannot make the rest). */
    st->early = st->early || hc->rx_early;
    if (sws_http_too_early(st->req.method, st->early) && !st->refuse) {
        refuse(st, 425); /* the client sends it again after the handshake */
        hc->ep->st.too_early++;
    }
    st->head_done = true;
    st->req_end = fin != 0;
    route(hc, st);
    if (!st->takes_body || st->refuse) {
        h3_answer_request(hc, st); /* from the head: a body is dropped */
        return 0;
    }
    /* A scenario that takes the request: its head, its body as it comes
     * (request_body.c), and the answer once the request is whole. */
    head_build(st);
    /* RFC 8470 5.1: a head taken in 0-RTT before the handshake completed
     * is forwarded with Early-Data: 1. */
    st->head.early = hc->rx_early && !ngtcp2_conn_get_handshake_completed(hc->q);
    st->took = st->asked = true;
    sws_worker *w = hc->ep->s.w;
    int r = st->sc->ops->request_head(w, st->sc, &st->ex);
    if (r <= 0 && fin)
        r = st->sc->ops->request_end(w, st->sc, &st->ex);
    if (r > 0) {
        h3_request_refuse(hc, st, r);
    } else if (fin || st->tunnel) {
        /* A tunnel is answered from its head on: the answer is what lets
         * its bytes flow, both ways, on the stream (RFC 9220). */
        h3_answer_request(hc, st);
    } else if (st->expect && hc->h) {
        /* RFC 9110 10.1.1: the interim answer, so that the client sends
         * the body now. */
        nghttp3_nv cont = {(uint8_t *)":status", (uint8_t *)"100", 7, 3, NGHTTP3_NV_FLAG_NONE};
        nghttp3_conn_submit_info(hc->h, st->id, &cont, 1);
    }
    return 0;
}

static int recv_data_cb(nghttp3_conn *h, int64_t id, const uint8_t *data, size_t len, void *ud,
                        void *sud) {
    (void)h;
    h3_conn *hc = ud;
    h3_stream *st = sud;
    if (!st) {
        h3_credit(hc, id, len);
        return 0;
    }
    h3_body_recv(hc, st, data, len);
    return 0;
}

static int deferred_consume_cb(nghttp3_conn *h, int64_t id, size_t n, void *ud, void *sud) {
    (void)h;
    (void)sud;
    h3_credit(ud, id, n);
    return 0;
}

static int end_stream_cb(nghttp3_conn *h, int64_t id, void *ud, void *sud) {
    (void)h;
    (void)id;
    h3_stream *st = sud;
    if (!st)
        return 0;
    st->req_end = true;
    if (h3_body_taking(st))
        h3_body_end(ud, st);
    else
        h3_answer_request(ud, st);
    return 0;
}

static int stream_close_cb(nghttp3_conn *h, int64_t id, uint64_t code, void *ud, void *sud) {
    (void)h;
    (void)code;
    h3_conn *hc = ud;
    if (sud)
        h3_stream_free(hc, sud);
    /* The client may open another in its place. */
    if (ngtcp2_is_bidi_stream(id))
        ngtcp2_conn_extend_max_streams_bidi(hc->q, 1);
    return 0;
}

static int acked_data_cb(nghttp3_conn *h, int64_t id, uint64_t n, void *ud, void *sud) {
    (void)h;
    (void)id;
    h3_conn *hc = ud;
    h3_stream *st = sud;
    if (st) {
        h3_body_acked(st, n);
        if (st->more_due)
            hc->more_due = true;
    }
    return 0;
}

static int stop_sending_cb(nghttp3_conn *h, int64_t id, uint64_t code, void *ud, void *sud) {
    (void)h;
    (void)sud;
    h3_conn *hc = ud;
    return ngtcp2_conn_shutdown_stream_read(hc->q, id, code) ? NGHTTP3_ERR_CALLBACK_FAILURE : 0;
}

static int reset_stream_cb(nghttp3_conn *h, int64_t id, uint64_t code, void *ud, void *sud) {
    (void)h;
    (void)sud;
    h3_conn *hc = ud;
    return ngtcp2_conn_shutdown_stream_write(hc->q, id, code) ? NGHTTP3_ERR_CALLBACK_FAILURE : 0;
}

static const nghttp3_callbacks CALLBACKS = {
    .acked_stream_data = acked_data_cb,
    .stream_close = stream_close_cb,
    .recv_data = recv_data_cb,
    .deferred_consume = deferred_consume_cb,
    .begin_headers = begin_headers_cb,
    .recv_header = recv_header_cb,
    .end_headers = end_headers_cb,
    .stop_sending = stop_sending_cb,
    .end_stream = end_stream_cb,
    .reset_stream = reset_stream_cb,
};

/* ---- the session ----------------------------------------------------------------- */

int h3_session_start(h3_conn *hc) {
    if (hc->h)
        return 0;
    if (ngtcp2_conn_get_max_local_streams_uni(hc->q) < 3)
        return -EPROTO; /* RFC 9114 6.2: the client must allow our three */
    nghttp3_settings settings;
    nghttp3_settings_default(&settings);
    settings.qpack_max_dtable_capacity = hc->ep->p.qpack_table;
    settings.qpack_blocked_streams = hc->ep->p.qpack_blocked;
    /* The largest field section we take: beyond it nghttp3 ends the
     * stream; below it our own count answers 431. */
    settings.max_field_section_size = (uint64_t)hc->ep->s.limits.header_bytes * 2;
    /* RFC 9220: extended CONNECT while a route can tunnel (a proxy with
     * [proxy] upgrade), as HTTP/2 offers it. */
    settings.enable_connect_protocol = hc->ep->s.w && hc->ep->s.w->h2_connect;
    if (nghttp3_conn_server_new(&hc->h, &CALLBACKS, &settings, NULL, hc) != 0) {
        hc->h = NULL;
        return -ENOMEM;
    }
    const ngtcp2_transport_params *p = ngtcp2_conn_get_local_transport_params(hc->q);
    nghttp3_conn_set_max_client_streams_bidi(hc->h, p->initial_max_streams_bidi);
    int64_t ctrl, enc, dec;
    if (ngtcp2_conn_open_uni_stream(hc->q, &ctrl, NULL) != 0 ||
        nghttp3_conn_bind_control_stream(hc->h, ctrl) != 0 ||
        ngtcp2_conn_open_uni_stream(hc->q, &enc, NULL) != 0 ||
        ngtcp2_conn_open_uni_stream(hc->q, &dec, NULL) != 0 ||
        nghttp3_conn_bind_qpack_streams(hc->h, enc, dec) != 0)
        return -EPROTO;
    if (hc->ep->draining)
        h3_session_goaway(hc);
    return 0;
}

void h3_session_more(h3_conn *hc) {
    if (hc->body_due)
        h3_body_pump(hc);
    if (!hc->more_due)
        return;
    hc->more_due = false;
    sws_h3_endpoint *ep = hc->ep;
    for (h3_stream *st = hc->streams; st; st = st->next) {
        if (!st->more_due)
            continue;
        st->more_due = false;
        st->want_more = false;
        if (st->pending && !st->ended && st->sc)
            sws_sc_more(ep->s.w, st->sc, &st->ex);
        if (hc->h)
            nghttp3_conn_resume_stream(hc->h, st->id);
    }
}

void h3_session_goaway(h3_conn *hc) {
    if (hc->goaway || !hc->h)
        return;
    hc->goaway = true;
    /* The GOAWAY names the first stream we will not answer: every request
     * the client sent before it is still served (RFC 9114 5.2). */
    nghttp3_conn_shutdown(hc->h);
}
