/* HTTP/2 requests: a stream's header block into the request a scenario reads
 * (sws_http_request: method, path, authority, the fields static decides on,
 * what the access log keeps; sws_head with every field for a scenario that
 * takes the request), under the [limits] of HTTP/1.1 with the answers RFC
 * 9113 allows (414, 431, 413 as answers; what is malformed a stream error).
 * libnghttp2 checks the rest of RFC 9113 8 itself before a field reaches us:
 * pseudo-fields (missing, repeated, after a regular one, unknown), upper-case
 * names, connection-specific fields, TE other than trailers, a content-length
 * the DATA disagrees with: each a RST_STREAM PROTOCOL_ERROR. */
#include "h2.h"

#include "compress.h"
#include "sws_msg.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the stream table ----------------------------------------------------------- */

static h2_stream *stream_new(h2_conn *hc, int32_t id) {
    sws_worker *w = hc->w;
    h2_loop *L = h2_loop_of(w);
    if (L->nfree == 0)
        return NULL;
    uint32_t i = L->free_idx[--L->nfree];
    h2_stream *st = &L->table[i];
    uint32_t gen = st->gen + 1;
    *st = (h2_stream){.ex = {&sws_h2_proto},
                      .hc = hc,
                      .id = id,
                      .xid = w->nslots + i,
                      .gen = gen,
                      .sc = &w->sc,
                      .content_length = UINT64_MAX,
                      .start_ms = (uint32_t)tl_loop_now(w->loop),
                      /* a block, until an answer given whole says less */
                      .bclass = H2_SMALL_CLASSES,
                      .bunits = (uint16_t)L->block_units};
    st->req.http_major = 2;
    st->req.keep_alive = true;
    if (w->logs || w->lend_sf) {
        st->store = sws_lend_take(&L->stores);
        if (!st->store) {
            L->free_idx[L->nfree++] = i;
            return NULL;
        }
        st->req.log_fields = w->logs ? st->store : NULL;
        st->req.sf_fields = w->lend_sf ? st->store + SWS_HTTP_LOG_STORAGE : NULL;
    }
    /* A route's scenario may take the request whole (the proxy): keep every
     * field until the route is known. */
    st->keep_fields = w->stash_heads || w->sc.ops->request_head;
    st->next = hc->streams;
    if (hc->streams)
        hc->streams->prev = st;
    hc->streams = st;
    hc->nstreams++;
    SWS_ADD(w->ctr.h2_streams, 1);
    return st;
}

void h2_stream_free(h2_conn *hc, h2_stream *st) {
    sws_worker *w = hc->w;
    h2_loop *L = h2_loop_of(w);
    if (hc->carry_stream == st->id && hc->carry_len) {
        hc->carry_len = 0; /* its rest is dropped: input goes on */
        sws_lend_give(&L->blocks, hc->carry);
        hc->carry = NULL;
    }
    if (st->out_wait)
        hc->out_wait--;
    if (st->answering || st->took)
        sws_sc_conn_end(w, st->sc, &st->ex);
    if (st->routed && st->sc != &w->sc)
        st->sc->pending--;
    for (uint32_t k = 0; k < st->nf; k++) {
        nghttp2_rcbuf_decref(st->rc[2 * k]);
        nghttp2_rcbuf_decref(st->rc[2 * k + 1]);
    }
    free(st->f);
    free(st->rc);
    free(st->trailers);
    if (st->file)
        close(st->file_fd);
    sws_lend_give(&L->stores, st->store);
    h2_body_give(w, st);
    h2_wait_drop(w, st);
    sws_error_pages_unref(st->held);
    if (st->prev)
        st->prev->next = st->next;
    else
        hc->streams = st->next;
    if (st->next)
        st->next->prev = st->prev;
    hc->nstreams--;
    uint32_t gen = st->gen;
    *st = (h2_stream){.gen = gen};
    L->free_idx[L->nfree++] = (uint32_t)(st - L->table);
    if (hc->nstreams == 0)
        h2_progress(w, hc);
}

/* ---- the header block --------------------------------------------------------- */

int h2_on_begin_headers(nghttp2_session *s, const nghttp2_frame *f, void *ud) {
    h2_conn *hc = ud;
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    if (hc->goaway_final || hc->dead)
        return 0; /* past the last GOAWAY's id the library ignores it */
    if (hc->bad_prio == f->hd.stream_id) {
        /* It depends on itself (the scanner saw it): a stream error. */
        nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, f->hd.stream_id, NGHTTP2_PROTOCOL_ERROR);
        return 0;
    }
    h2_stream *st = stream_new(hc, f->hd.stream_id);
    if (!st) {
        /* The loop's streams are all in use: the client may retry it. */
        SWS_ADD(hc->w->ctr.h2_refused, 1);
        nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, f->hd.stream_id, NGHTTP2_REFUSED_STREAM);
        return 0; /* no stream data: its fields and DATA are dropped */
    }
    nghttp2_session_set_stream_user_data(s, f->hd.stream_id, st);
    return 0;
}

static bool is(const uint8_t *n, size_t nl, const char *lit, size_t ll) {
    return nl == ll && memcmp(n, lit, ll) == 0;
}
#define IS(lit) is(n, nl, lit, sizeof(lit) - 1)

static void log_put(char *dst, uint16_t *len, const uint8_t *v, size_t vl) {
    if (*len)
        return; /* the first line only, as HTTP/1.1's */
    size_t n = vl < SWS_HTTP_LOG_FIELD_MAX ? vl : SWS_HTTP_LOG_FIELD_MAX;
    memcpy(dst, v, n);
    *len = (uint16_t)n;
}

/* Keeps a field for sws_head, by reference to the library's buffers. */
static bool keep_field(h2_stream *st, nghttp2_rcbuf *name, nghttp2_rcbuf *value) {
    if (st->nf == st->fcap) {
        uint32_t cap = st->fcap ? st->fcap * 2u : 16u;
        if (cap > SWS_MSG_FIELDS_MAX)
            cap = SWS_MSG_FIELDS_MAX;
        if (st->nf == cap)
            return false;
        sws_field *f = realloc(st->f, cap * sizeof(*f));
        if (f)
            st->f = f;
        nghttp2_rcbuf **rc = realloc(st->rc, 2 * cap * sizeof(*rc));
        if (rc)
            st->rc = rc;
        if (!f || !rc)
            return false;
        st->fcap = (uint16_t)cap;
    }
    nghttp2_vec n = nghttp2_rcbuf_get_buf(name), v = nghttp2_rcbuf_get_buf(value);
    nghttp2_rcbuf_incref(name);
    nghttp2_rcbuf_incref(value);
    st->rc[2 * st->nf] = name;
    st->rc[2 * st->nf + 1] = value;
    st->f[st->nf++] =
        sws_field_str((const char *)n.base, (uint32_t)n.len, (const char *)v.base, (uint32_t)v.len);
    return true;
}

static void refuse(h2_stream *st, int status) {
    if (!st->refuse)
        st->refuse = (uint16_t)status;
}

static void host_put(sws_http_request *r, const uint8_t *v, size_t vl) {
    size_t k = vl < SWS_HTTP_HOST_MAX ? vl : SWS_HTTP_HOST_MAX;
    memcpy(r->host, v, k);
    r->host_len = (uint16_t)k;
}

static void on_pseudo(sws_worker *w, h2_stream *st, const uint8_t *n, size_t nl, const uint8_t *v,
                      size_t vl) {
    sws_http_request *r = &st->req;
    if (IS(":method")) {
        bool known;
        r->method = sws_method_of((const char *)v, vl, &known);
        r->head = r->method == HTTP_HEAD;
        if (!known)
            refuse(st, 501);
    } else if (IS(":path")) {
        if (vl > w->limits.uri_length)
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
        /* RFC 8441 4: the library takes it only when we sent
         * SETTINGS_ENABLE_CONNECT_PROTOCOL, only with CONNECT, :scheme,
         * :path and :authority; anything else is its PROTOCOL_ERROR. */
        st->tunnel = true;
    }
    /* :scheme is checked by the library. */
}

static void on_field(sws_worker *w, h2_stream *st, const uint8_t *n, size_t nl, const uint8_t *v,
                     size_t vl) {
    sws_http_request *r = &st->req;
    switch (n[0]) {
    case 'a':
        if (r->sf_fields && IS("accept-encoding"))
            sws_sf_put(r, SWS_HTTP_SF_AE, v, vl);
        else if (r->sf_fields && IS("authorization"))
            sws_sf_put(r, SWS_HTTP_SF_AUTH, v, vl);
        break;
    case 'x':
        if (r->sf_fields && IS("x-forwarded-for"))
            sws_sf_put(r, SWS_HTTP_SF_XFF, v, vl);
        break;
    case 'c':
        if (IS("content-length")) {
            uint64_t cl = 0;
            for (size_t i = 0; i < vl && cl <= UINT64_MAX / 10 - 10; i++)
                cl = cl * 10 + (uint64_t)(v[i] - '0'); /* digits: the library checked */
            st->content_length = cl;
            if (cl > w->limits.body_size)
                refuse(st, 413);
        }
        break;
    case 'e':
        if (IS("early-data")) {
            st->early = true; /* "1" is its only value (RFC 8470 5.1) */
        } else if (IS("expect")) {
            if (vl == 12 && strncasecmp((const char *)v, "100-continue", 12) == 0)
                st->expect = true;
            else
                refuse(st, 417); /* RFC 9110 10.1.1: an expectation we cannot meet */
        }
        break;
    case 'h':
        if (IS("host")) {
            /* RFC 9113 8.3.1: a Host that names another origin than
             * :authority makes the request malformed. */
            if (st->authority &&
                (vl != r->host_len || strncasecmp((const char *)v, r->host, vl) != 0))
                refuse(st, 400);
            else if (!st->authority)
                host_put(r, v, vl);
        }
        break;
    case 'i':
        if (!r->sf_fields)
            break;
        if (IS("if-none-match"))
            sws_sf_put(r, SWS_HTTP_SF_INM, v, vl);
        else if (IS("if-modified-since"))
            sws_sf_put(r, SWS_HTTP_SF_IMS, v, vl);
        else if (IS("if-range"))
            sws_sf_put(r, SWS_HTTP_SF_IF_RANGE, v, vl);
        break;
    case 'r':
        if (r->sf_fields && IS("range"))
            sws_sf_put(r, SWS_HTTP_SF_RANGE, v, vl);
        else if (r->log_fields && IS("referer"))
            log_put(r->log_fields + SWS_HTTP_LOG_REFERER, &r->referer_len, v, vl);
        break;
    case 'u':
        if (r->log_fields && IS("user-agent"))
            log_put(r->log_fields + SWS_HTTP_LOG_UA, &r->user_agent_len, v, vl);
        break;
    default:
        break;
    }
}

int h2_on_header(nghttp2_session *s, const nghttp2_frame *f, nghttp2_rcbuf *name,
                 nghttp2_rcbuf *value, uint8_t flags, void *ud) {
    (void)flags;
    h2_conn *hc = ud;
    sws_worker *w = hc->w;
    h2_stream *st = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
    if (!st || hc->dead)
        return 0;
    nghttp2_vec nv = nghttp2_rcbuf_get_buf(name), vv = nghttp2_rcbuf_get_buf(value);
    /* As HTTP/1.1 counts a field line ("name: value" CR LF). A block that
     * decodes far past the limit (an HPACK bomb: small input, many
     * references to a large table entry) ends the connection; one just past
     * it is answered 431. */
    st->hbytes += (uint32_t)(nv.len + vv.len + 4);
    st->hcount++;
    if ((uint64_t)st->hbytes > (uint64_t)w->limits.header_bytes * w->cfg->h2.max_header_blocks ||
        st->hcount > w->limits.header_count * w->cfg->h2.max_header_blocks) {
        h2_terminate(hc, NGHTTP2_ENHANCE_YOUR_CALM, SWS_H2_FLOOD_HEADERS);
        return 0;
    }
    if (st->hbytes > w->limits.header_bytes || st->hcount > w->limits.header_count) {
        refuse(st, 431);
        return 0;
    }
    if (f->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0; /* trailers: counted, then dropped (as HTTP/1.1's) */
    const uint8_t *n = nv.base, *v = vv.base;
    size_t nl = nv.len, vl = vv.len;
    if (nl && n[0] == ':') {
        on_pseudo(w, st, n, nl, v, vl);
        if (st->keep_fields && IS(":authority") && !keep_field(st, name, value))
            refuse(st, 431);
        if (st->keep_fields && (IS(":path") || IS(":protocol")) && !keep_field(st, name, value))
            refuse(st, 431);
        return 0;
    }
    if (nl)
        on_field(w, st, n, nl, v, vl);
    if (st->keep_fields && !keep_field(st, name, value))
        refuse(st, 431);
    return 0;
}

/* sws_head for the scenario (RFC 9113 8.3.1: :authority as Host when no
 * Host came; :protocol for an extended CONNECT). */
static void head_build(h2_stream *st) {
    sws_head_from_fields(&st->head, st->f, st->nf, st->fcap);
    st->head.method = st->req.method;
    st->head.http_major = 2;
    st->head.http_minor = 0;
    st->head.streams = !st->req_end && st->content_length == UINT64_MAX;
}

/* ---- the request's route and its scenario -------------------------------------- */

/* Its route's instance takes the stream from its complete head on, as an
 * HTTP/1.1 request (a retired one is not freed under it: pending). */
static void route(sws_worker *w, h2_stream *st) {
    if (st->routed)
        return;
    st->routed = true;
    if (w->routes_on || w->gate_on)
        st->sc = sws_route_pick(w, &st->ex, st->hc->c->index, &st->req);
    if (st->sc != &w->sc)
        st->sc->pending++;
    st->takes_body = st->sc->ops->request_head != NULL;
    int no = sws_connect_refusal(st->req.method, st->tunnel, st->takes_body);
    if (!no)
        no = sws_http_too_early(st->req.method, st->early);
    if (no)
        refuse(st, no);
}

/* The request is complete (or refused): its scenario answers it, or we do
 * with the refusal's status. */
static void answer(h2_conn *hc, h2_stream *st) {
    sws_worker *w = hc->w;
    if (st->answering)
        return;
    st->answering = true;
    SWS_ADD(w->ctr.requests, 1);
    if (st->refuse) {
        h2_answer_error(w, st, st->refuse);
        return;
    }
    sws_scenario *sc = st->sc;
    const sws_route *keep = w->log_route;
    w->log_route = sc->route;
    st->in_answer = true;
    int rc = sws_sc_answer(w, sc, &st->ex);
    st->in_answer = false;
    w->log_route = keep;
    if (rc < 0) {
        h2_reset(hc, st, NGHTTP2_INTERNAL_ERROR);
    } else if (rc == SWS_ANSWER_PENDING && !st->ended) {
        st->pending = true;
    } else if (!st->submitted) {
        h2_answer_error(w, st, 500); /* DONE without an answer: a scenario's fault */
    } else {
        st->ended = true;
        h2_answer_done(w, st);
        if (st->deferred) {
            st->deferred = false;
            nghttp2_session_resume_data(hc->s, st->id);
        }
    }
}

/* A hook of the scenario refused the request with a status. */
static void refused_by_hook(h2_conn *hc, h2_stream *st, int status) {
    refuse(st, status);
    answer(hc, st);
}

void h2_request_frame(h2_conn *hc, h2_stream *st, const nghttp2_frame *f) {
    sws_worker *w = hc->w;
    bool end = (f->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_REQUEST) {
        st->head_done = true;
        st->req_end = end;
        route(w, st);
        if (st->keep_fields)
            head_build(st);
        if (st->takes_body && !st->refuse) {
            st->took = true;
            int r = st->sc->ops->request_head(w, st->sc, &st->ex);
            if (r <= 0 && end)
                r = st->sc->ops->request_end(w, st->sc, &st->ex);
            if (r > 0) {
                refused_by_hook(hc, st, r);
                return;
            }
        }
        if (end || st->refuse || st->tunnel) {
            /* A refusal does not wait for the body; a tunnel's answer is
             * what lets its bytes flow. */
            answer(hc, st);
        } else if (st->expect) {
            /* RFC 9110 10.1.1: the interim answer, so that the client sends
             * the body now. */
            nghttp2_nv cont = {(uint8_t *)":status", (uint8_t *)"100", 7, 3, NGHTTP2_NV_FLAG_NONE};
            nghttp2_submit_headers(hc->s, NGHTTP2_FLAG_NONE, st->id, NULL, &cont, 1, NULL);
        }
        return;
    }
    if (!end || st->req_end)
        return;
    /* The last DATA frame, or trailers. */
    st->req_end = true;
    if (st->takes_body && !st->refuse && (!st->answering || st->tunnel)) {
        int r = st->sc->ops->request_end(w, st->sc, &st->ex);
        if (r > 0) {
            refused_by_hook(hc, st, r);
            return;
        }
    }
    answer(hc, st);
}

/* ---- the request's body ---------------------------------------------------------- */

/* Hands body bytes to the scenario as far as it has room: how many it took.
 * Their window reopens only now (no automatic WINDOW_UPDATE). */
static size_t body_give(h2_conn *hc, h2_stream *st, const char *d, size_t len) {
    sws_worker *w = hc->w;
    size_t room = st->sc->ops->request_room(w, st->sc, &st->ex);
    size_t k = len < room ? len : room;
    if (k == 0)
        return 0;
    int r = st->sc->ops->request_body(w, st->sc, &st->ex, d, k);
    nghttp2_session_consume(hc->s, st->id, k);
    st->flush = true;
    if (r > 0) {
        refused_by_hook(hc, st, r);
        return len; /* the rest is dropped */
    }
    return k;
}

int h2_on_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
               void *ud) {
    (void)flags;
    h2_conn *hc = ud;
    h2_stream *st = nghttp2_session_get_stream_user_data(s, id);
    if (!st || hc->dead) {
        nghttp2_session_consume(s, id, len);
        return 0;
    }
    st->body_in += len;
    if (st->body_in > hc->w->limits.body_size && !st->answering && !st->tunnel)
        refused_by_hook(hc, st, 413);
    if (!st->takes_body || st->refuse || (st->answering && !st->tunnel)) {
        /* Nobody takes it (respond, static read the head alone; a refused
         * or answered request): dropped, its window given back. */
        nghttp2_session_consume(s, id, len);
        return 0;
    }
    size_t k = body_give(hc, st, (const char *)data, len);
    if (k == len)
        return 0;
    /* The rest waits for the scenario's room; input stops meanwhile (the
     * library's input buffer is not ours to keep). */
    h2_loop *L = h2_loop_of(hc->w);
    if (!hc->carry && !(hc->carry = sws_lend_take(&L->blocks))) {
        h2_reset(hc, st, NGHTTP2_INTERNAL_ERROR);
        nghttp2_session_consume(s, id, len - k);
        return 0;
    }
    memcpy(hc->carry, data + k, len - k);
    hc->carry_off = 0;
    hc->carry_len = (uint32_t)(len - k);
    hc->carry_stream = id;
    return NGHTTP2_ERR_PAUSE;
}

bool h2_carry_feed(h2_conn *hc) {
    h2_stream *st = nghttp2_session_get_stream_user_data(hc->s, hc->carry_stream);
    if (st && st->takes_body && !st->refuse && (!st->answering || st->tunnel)) {
        size_t k = body_give(hc, st, hc->carry + hc->carry_off, hc->carry_len);
        hc->carry_off += (uint32_t)k;
        hc->carry_len -= (uint32_t)k;
        h2_request_flush(hc);
        if (hc->carry_len)
            return false;
    } else if (hc->carry_len) {
        nghttp2_session_consume(hc->s, hc->carry_stream, hc->carry_len);
    }
    hc->carry_len = 0;
    sws_lend_give(&h2_loop_of(hc->w)->blocks, hc->carry);
    hc->carry = NULL;
    /* The library finishes the frame the pause cut (its END_STREAM). */
    nghttp2_session_mem_recv(hc->s, (const uint8_t *)"", 0);
    return true;
}

void h2_request_flush(h2_conn *hc) {
    for (h2_stream *st = hc->streams; st; st = st->next) {
        if (st->flush) {
            st->flush = false;
            st->sc->ops->request_flush(hc->w, st->sc, &st->ex);
        }
    }
}
