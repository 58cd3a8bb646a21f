/* HTTP/2 answers: the exchange's functions (exchange.h) for a stream. A head
 * becomes a HEADERS frame through the session (lowercased names, no
 * connection-specific fields, content-length where the length is known);
 * body bytes wait in the stream's buffer of one frame until the session
 * sends them, as the client's windows allow, straight from that buffer into
 * the connection's output (NGHTTP2_DATA_FLAG_NO_COPY: no copy in the
 * library). A fixed answer's body is sent from where it is. Every function
 * runs on the connection's loop thread. */
#include "h2.h"

#include "access_log.h"
#include "pagecache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static const sws_http_request *h2_request(const sws_exchange *x) {
    return &cstream_ofx(x)->req;
}

static uint32_t h2_id(const sws_exchange *x) {
    return cstream_ofx(x)->xid;
}

static const sws_head *h2_request_head(const sws_exchange *x) {
    const h2_stream *st = cstream_ofx(x);
    return st->head.f ? &st->head : NULL;
}

static sws_ex_mark h2_mark(const sws_exchange *x) {
    const h2_stream *st = cstream_ofx(x);
    return (sws_ex_mark){st->hc->c->h, st->gen};
}

static bool h2_marked(const sws_exchange *x, sws_ex_mark m) {
    const h2_stream *st = cstream_ofx(x);
    return st->hc && st->gen == m.req && !sws_phase_gone(st->hc->c->phase) &&
           st->hc->c->h == m.conn;
}

static bool h2_secure(const sws_exchange *x) {
    return cstream_ofx(x)->hc->c->tls != NULL;
}

static int h2_fd(sws_worker *w, const sws_exchange *x) {
    return tl_handle_fd(w->loop, cstream_ofx(x)->hc->c->h);
}

/* ---- the head ------------------------------------------------------------------ */

/* RFC 9113 8.2.2: fields that only mean something to one HTTP/1.1
 * connection never go into HTTP/2 (an upstream's answer may carry them). */
static bool connection_specific(const sws_field *f) {
    static const struct {
        const char *n;
        uint32_t l;
    } drop[] = {{"connection", 10},
                {"keep-alive", 10},
                {"proxy-connection", 16},
                {"transfer-encoding", 17},
                {"upgrade", 7}};
    for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++)
        if (f->name_len == drop[i].l && strncasecmp(f->name, drop[i].n, drop[i].l) == 0)
            return true;
    return false;
}

/* Room for n name/value pairs and len bytes of lowercased names. */
static bool scratch(h2_loop *L, uint32_t n, uint32_t len) {
    if (n > L->nva_cap) {
        nghttp2_nv *a = realloc(L->nva, n * sizeof(*a));
        if (!a)
            return false;
        L->nva = a;
        L->nva_cap = n;
    }
    if (len > L->scratch_cap) {
        char *s = realloc(L->scratch, len);
        if (!s)
            return false;
        L->scratch = s;
        L->scratch_cap = len;
    }
    return true;
}

static nghttp2_nv nv(const char *n, size_t nl, const char *v, size_t vl) {
    return (nghttp2_nv){(uint8_t *)n, (uint8_t *)v, nl, vl, NGHTTP2_NV_FLAG_NONE};
}

/* The head with the fields of policy (header_policy.h: names lowercased
 * already) after the answer's own; a same-named field of an upstream's is
 * kept too, as nginx keeps it. */
static int head_with(sws_worker *w, sws_exchange *x, const sws_answer *a,
                     const sws_header_policy *policy) {
    h2_stream *st = stream_ofx(x);
    h2_loop *L = h2_loop_of(w);
    if (st->submitted || st->closed)
        return -EINVAL;
    int sc = a->status;
    bool bodyless = sc < 200 || sc == 204 || sc == 304;
    st->nobody = st->req.head || bodyless;
    /* The buffer its body will borrow: a small class for one given whole
     * (unless it holds a block, waits for one or was promised one already:
     * the proxy asks room before its head). */
    bool fresh = !st->body && !st->buf_wait && !st->buf_woken;
    for (uint8_t k = 0; a->whole_body && fresh && k < H2_SMALL_CLASSES; k++)
        if (a->length <= (uint64_t)H2_UNIT << k) {
            st->bclass = k;
            st->bunits = (uint16_t)(1u << k);
            break;
        }
    uint32_t names = 0, extra = policy ? policy->n : 0;
    for (uint32_t i = 0; i < a->nfields; i++)
        names += a->fields[i].name_len;
    if (!scratch(L, a->nfields + extra + 6, names + 1))
        return -ENOMEM;
    nghttp2_nv *v = L->nva;
    uint32_t n = 0;
    char status[4] = {(char)('0' + sc / 100 % 10), (char)('0' + sc / 10 % 10),
                      (char)('0' + sc % 10), 0};
    v[n++] = nv(":status", 7, status, 3);
    if (!a->relayed) {
        v[n++] = nv("server", 6, SWS_HTTP_SERVER, sizeof(SWS_HTTP_SERVER) - 1);
        v[n++] = nv("date", 4, w->date.str, SWS_DATE_LEN);
        if (w->alt_svc_len && st->hc->c->tls) /* the quic listener, for https origins */
            v[n++] = nv("alt-svc", 7, w->alt_svc, w->alt_svc_len);
    }
    if (a->content_type)
        v[n++] = nv("content-type", 12, a->content_type, strlen(a->content_type));
    char *low = L->scratch;
    for (uint32_t i = 0; i < a->nfields; i++) {
        const sws_field *f = &a->fields[i];
        if (connection_specific(f))
            continue;
        for (uint32_t k = 0; k < f->name_len; k++) {
            char ch = f->name[k];
            low[k] = ch >= 'A' && ch <= 'Z' ? (char)(ch + 32) : ch;
        }
        v[n++] = nv(low, f->name_len, f->value, f->value_len);
        low += f->name_len;
    }
    for (uint32_t i = 0; i < extra; i++) {
        const sws_header_field *f = &policy->h2[i];
        if (sws_headers_take(policy, i, sc))
            v[n++] = nv(f->name, f->name_len, f->value, f->value_len);
    }
    char cl[24];
    if (a->length != SWS_BODY_STREAM && !(sc < 200 || sc == 204) &&
        !(sc == 304 && a->length == 0)) {
        /* HEAD gets the length a GET would have (RFC 9110 8.6). */
        int k = sizeof(cl);
        uint64_t len = a->length;
        do {
            cl[--k] = (char)('0' + len % 10);
            len /= 10;
        } while (len);
        v[n++] = nv("content-length", 14, cl + k, sizeof(cl) - (size_t)k);
    }
    nghttp2_data_provider prov = {.source.ptr = st, .read_callback = h2_read_body};
    if (nghttp2_submit_response(st->hc->s, st->id, v, n, st->nobody ? NULL : &prov) != 0)
        return -EINVAL;
    st->submitted = true;
    st->status = (uint16_t)sc;
    return 0;
}

/* A scenario's head, or our own error's: its route's policy. */
static int h2_head(sws_worker *w, sws_exchange *x, const sws_answer *a) {
    return head_with(w, x, a, stream_ofx(x)->sc->cfg->headers);
}

/* ---- the body -------------------------------------------------------------------- */

static void body_added(h2_stream *st) {
    if (st->deferred) {
        st->deferred = false;
        nghttp2_session_resume_data(st->hc->s, st->id);
    }
}

/* A body buffer, within the connection's and the loop's bounds (the "HTTP/2
 * Bomb": answers that wait behind closed windows hold at most stream_buffers
 * blocks' worth per connection and loop_buffer bytes per loop, counted in
 * H2_UNITs). Past them the stream waits in line, on its connection when
 * that is the bound, else on the loop, and its scenario's `more` comes once
 * buffers given back make room for it, as after a write; that room is
 * promised to it until it asks again, so that a buffer given back wakes the
 * streams it makes room for, not every one waiting. */
static bool conn_fits(sws_worker *w, h2_loop *L, h2_stream *st) {
    return st->hc->units + st->hc->promised + st->bunits <=
           w->cfg->h2.stream_buffers * L->block_units;
}

static bool loop_fits(h2_loop *L, h2_stream *st) {
    return L->units + L->promised + st->bunits <= L->units_cap;
}

static void wake(sws_worker *w, h2_loop *L, h2_stream *st) {
    st->buf_wait = false;
    st->buf_woken = true;
    st->hc->promised += st->bunits;
    L->promised += st->bunits;
    st->want_more = st->pending && !st->ended;
    st->hc->more_due = st->hc->more_due || st->want_more;
    h2_kick(w, st->hc);
}

static void conn_wait_add(h2_conn *hc, h2_stream *st) {
    st->wlisted = true;
    st->wnext = NULL;
    st->wprev = hc->wlast;
    if (hc->wlast)
        hc->wlast->wnext = st;
    else
        hc->wfirst = st;
    hc->wlast = st;
}

void h2_wait_drop(sws_worker *w, h2_stream *st) {
    h2_conn *hc = st->hc;
    if (st->wlisted) {
        if (st->wprev)
            st->wprev->wnext = st->wnext;
        else
            hc->wfirst = st->wnext;
        if (st->wnext)
            st->wnext->wprev = st->wprev;
        else
            hc->wlast = st->wprev;
        st->wlisted = false;
    }
    if (st->buf_woken) {
        st->buf_woken = false;
        hc->promised -= st->bunits;
        h2_loop_of(w)->promised -= st->bunits;
    }
    st->buf_wait = false;
}

static bool body_take(sws_worker *w, h2_stream *st) {
    h2_loop *L = h2_loop_of(w);
    h2_conn *hc = st->hc;
    bool woken = st->buf_woken;
    h2_wait_drop(w, st); /* a promise is used (or lapses) by asking */
    /* Streams in its connection's line go first: a small answer does not
     * pass a larger one that waits for room. */
    bool conn_room = (woken || !hc->wfirst) && conn_fits(w, L, st);
    bool loop_room = loop_fits(L, st);
    sws_lend *pool = st->bclass < H2_SMALL_CLASSES ? &L->small[st->bclass] : &L->blocks;
    if (conn_room && loop_room && (st->body = sws_lend_take(pool))) {
        hc->units += st->bunits;
        L->units += st->bunits;
        return true;
    }
    st->buf_wait = true;
    SWS_ADD(w->ctr.h2_buffer_waits, 1);
    if (!conn_room)
        conn_wait_add(hc, st); /* its connection's next buffer back is its */
    else if (L->wlen < L->n)
        L->waiters[(L->whead + L->wlen++) % L->n] = (struct h2_waiter){st, st->gen};
    return false;
}

void h2_body_give(sws_worker *w, h2_stream *st) {
    h2_loop *L = h2_loop_of(w);
    h2_conn *hc = st->hc;
    if (!st->body)
        return;
    sws_lend_give(st->bclass < H2_SMALL_CLASSES ? &L->small[st->bclass] : &L->blocks, st->body);
    st->body = NULL;
    st->boff = st->blen = 0;
    hc->units -= st->bunits;
    L->units -= st->bunits;
    /* The connection's own waiting streams first, oldest first, while the
     * room they need is free; else those waiting for the loop's bound whose
     * connection has room; one whose connection has none moves to its
     * connection's line. */
    while (hc->wfirst && conn_fits(w, L, hc->wfirst) && loop_fits(L, hc->wfirst)) {
        h2_stream *next = hc->wfirst;
        h2_wait_drop(w, next);
        wake(w, L, next);
    }
    if (hc->wfirst)
        return;
    while (L->wlen) {
        struct h2_waiter e = L->waiters[L->whead];
        if (e.st->gen != e.gen || !e.st->buf_wait || e.st->wlisted || !e.st->hc) {
            L->whead = (L->whead + 1) % L->n; /* gone, served, or in its connection's line */
            L->wlen--;
            continue;
        }
        if (!loop_fits(L, e.st))
            return; /* the oldest waits for more to come back */
        L->whead = (L->whead + 1) % L->n;
        L->wlen--;
        if (conn_fits(w, L, e.st)) {
            e.st->buf_wait = false;
            wake(w, L, e.st);
        } else {
            conn_wait_add(e.st->hc, e.st);
        }
    }
}

static char *h2_room(sws_worker *w, sws_exchange *x, size_t *len) {
    h2_stream *st = stream_ofx(x);
    if (!st->body && !body_take(w, st)) {
        *len = 0;
        return NULL;
    }
    if (st->boff) { /* what was sent goes; what waits moves to the front */
        memmove(st->body, st->body + st->boff, st->blen - st->boff);
        st->blen -= st->boff;
        st->boff = 0;
    }
    /* Bytes still wait: no sliver of room (a read of a few bytes), the
     * scenario adds once they are sent (`more`). */
    *len = (st->bclass < H2_SMALL_CLASSES ? (size_t)H2_UNIT << st->bclass : w->out_cap) - st->blen;
    if (st->blen && *len < H2_MIN_DATA)
        *len = 0;
    return st->body + st->blen;
}

static void h2_commit(sws_worker *w, sws_exchange *x, size_t n) {
    (void)w;
    h2_stream *st = stream_ofx(x);
    if (st->nobody || n == 0)
        return; /* HEAD, 304: the scenario's bytes are not sent */
    st->blen += (uint32_t)n;
    body_added(st);
}

static int h2_body(sws_worker *w, sws_exchange *x, const void *data, size_t n) {
    size_t room;
    char *at = h2_room(w, x, &room);
    if (!at || room < n)
        return -ENOSPC;
    memcpy(at, data, n);
    h2_commit(w, x, n);
    return 0;
}

/* A file range read into the DATA frames as they go (h2_send_data): no body
 * buffer, no copy. Only a range all in the page cache is taken, so that the
 * frames' reads do not wait on the disk (a page evicted meanwhile is read in
 * place, one frame at most); and only behind no bytes of the buffer, which
 * would go after it. */
static int h2_file(sws_worker *w, sws_exchange *x, int fd, uint64_t off, uint64_t len) {
    h2_stream *st = stream_ofx(x);
    if (!st->submitted || st->nobody || st->closed || st->fixed || st->file || st->blen > st->boff)
        return -EOPNOTSUPP;
    h2_loop *L = h2_loop_of(w);
    if (L->no_cachestat)
        return -EOPNOTSUPP;
    int r = sws_pagecache_resident(fd, off, len);
    if (r < 0)
        L->no_cachestat = true;
    if (r <= 0)
        return r < 0 ? -EOPNOTSUPP : -EAGAIN;
    h2_body_give(w, st); /* an empty buffer it held goes back */
    st->file = true;
    st->file_fd = fd;
    st->file_off = off;
    st->file_left = len;
    body_added(st);
    return 0;
}

/* The frames carry the bytes: a file is read into the stream's buffer. */
static int h2_sendfile(sws_worker *w, sws_exchange *x, int fd, uint64_t *off, size_t len) {
    (void)w;
    (void)x;
    (void)fd;
    (void)off;
    (void)len;
    return -EOPNOTSUPP;
}

/* The trailer section: kept (one allocation: the nv array, the lowercased
 * names, the values) until the data provider reaches the body's end, where
 * the HEADERS frame that ends the stream is submitted. Submitted earlier, it
 * would go out ahead of the DATA still to come (the library sends HEADERS
 * before DATA). Rare (the proxy forwards an upstream's), so malloc. */
static int h2_trailers(sws_worker *w, sws_exchange *x, const sws_field *f, uint32_t n) {
    (void)w;
    h2_stream *st = stream_ofx(x);
    if (!st->submitted || st->nobody || st->closed || st->trailers || st->fixed)
        return 0;
    size_t bytes = (size_t)n * sizeof(nghttp2_nv);
    for (uint32_t i = 0; i < n; i++)
        bytes += (size_t)f[i].name_len + f[i].value_len;
    nghttp2_nv *v = malloc(bytes ? bytes : 1);
    if (!v)
        return -ENOMEM;
    char *p = (char *)(v + n);
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (connection_specific(&f[i]) || f[i].name_len == 0)
            continue;
        for (uint32_t j = 0; j < f[i].name_len; j++) {
            char ch = f[i].name[j];
            p[j] = ch >= 'A' && ch <= 'Z' ? (char)(ch + 32) : ch;
        }
        memcpy(p + f[i].name_len, f[i].value, f[i].value_len);
        v[k++] = nv(p, f[i].name_len, p + f[i].name_len, f[i].value_len);
        p += f[i].name_len + f[i].value_len;
    }
    if (k == 0) {
        free(v);
        return 0;
    }
    st->trailers = v;
    st->ntrailers = k;
    return 0;
}

/* At the body's end: the trailers, if any, end the stream instead of the
 * last DATA frame (the library copies them). */
static void body_end(h2_stream *st, uint32_t *flags) {
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    if (!st->trailers)
        return;
    if (nghttp2_submit_trailer(st->hc->s, st->id, st->trailers, st->ntrailers) == 0)
        *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
    free(st->trailers);
    st->trailers = NULL;
}

ssize_t h2_read_body(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
                     nghttp2_data_source *src, void *ud) {
    (void)s;
    (void)id;
    (void)buf;
    h2_stream *st = src->ptr;
    h2_conn *hc = ud;
    size_t avail = st->fixed  ? st->fixed_left
                   : st->file ? (size_t)(st->file_left < SIZE_MAX ? st->file_left : SIZE_MAX)
                              : st->blen - st->boff;
    if (avail == 0) {
        if (st->ended) {
            body_end(st, flags);
            return 0;
        }
        st->deferred = true;
        st->want_more = st->pending; /* the scenario adds (its `more`) */
        hc->more_due = hc->more_due || st->want_more;
        return NGHTTP2_ERR_DEFERRED;
    }
    /* The frame goes whole into the output (h2_send_data): no more than
     * fits there now, or wait for the next fill. */
    sws_conn *c = hc->c;
    size_t room = hc->w->out_cap - c->olen;
    if (room < 9 + H2_MIN_DATA && room < 9 + avail) {
        if (!st->out_wait) {
            st->out_wait = true;
            hc->out_wait++;
        }
        return NGHTTP2_ERR_DEFERRED;
    }
    size_t n = avail < len ? avail : len;
    if (n > room - 9)
        n = room - 9;
    *flags |= NGHTTP2_DATA_FLAG_NO_COPY;
    if (n == avail && st->ended)
        body_end(st, flags);
    return (ssize_t)n;
}

int h2_send_data(nghttp2_session *s, nghttp2_frame *f, const uint8_t *framehd, size_t len,
                 nghttp2_data_source *src, void *ud) {
    (void)s;
    h2_stream *st = src->ptr;
    h2_conn *hc = ud;
    sws_conn *c = hc->c;
    if (f->data.padlen || c->olen + 9 + len > hc->w->out_cap)
        return NGHTTP2_ERR_WOULDBLOCK;
    char *o = c->out + c->olen;
    memcpy(o, framehd, 9);
    if (st->fixed) {
        memcpy(o + 9, st->fixed, len);
        st->fixed += len;
        st->fixed_left -= (uint32_t)len;
    } else if (st->file) {
        struct iovec v = {o + 9, len};
        ssize_t n = preadv2(st->file_fd, &v, 1, (off_t)st->file_off, RWF_NOWAIT);
        if (n < 0 && errno == EAGAIN) /* evicted since h2_file looked: read in place */
            n = pread(st->file_fd, o + 9, len, (off_t)st->file_off);
        if (n != (ssize_t)len) /* the file shrank: the length said cannot be kept */
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
        st->file_off += len;
        st->file_left -= len;
    } else {
        memcpy(o + 9, st->body + st->boff, len);
        st->boff += (uint32_t)len;
        if (st->boff == st->blen) {
            /* Sent: the buffer goes back until the scenario adds again. */
            h2_body_give(hc->w, st);
            st->want_more = st->pending && !st->ended; /* the scenario adds */
            hc->more_due = hc->more_due || st->want_more;
        }
    }
    c->olen += (uint32_t)(9 + len);
    st->sent += len;
    return 0;
}

/* ---- whole answers ------------------------------------------------------------------ */

static int h2_fixed(sws_worker *w, sws_exchange *x, sws_fixed *f) {
    h2_stream *st = stream_ofx(x);
    sws_answer a = {.status = f->status, .content_type = f->content_type, .length = f->body_len};
    int rc = head_with(w, x, &a, f->headers); /* framed with the answer (its route's) */
    if (rc < 0)
        return rc;
    if (!st->nobody && f->body_len) {
        st->fixed = f->body; /* respond's: it outlives every stream of its route */
        st->fixed_left = f->body_len;
    }
    return 0;
}

void h2_answer_done(sws_worker *w, h2_stream *st) {
    if (st->counted)
        return;
    st->counted = true;
    sws_route_count(w, st->sc, st->status, (uint32_t)tl_loop_now(w->loop) - st->start_ms);
}

void h2_answer_error(sws_worker *w, h2_stream *st, int status) {
    st->answering = true;
    if (st->submitted) {
        h2_reset(st->hc, st, NGHTTP2_INTERNAL_ERROR);
        return;
    }
    SWS_ADD(w->ctr.errors[sws_status_slot(status)], 1);
    /* The route's page once the route is known, else a text naming the
     * status; either goes from where it is: no buffer to wait for. */
    const sws_error_page *page = st->routed ? sws_error_page_find(st->sc->cfg, status) : NULL;
    const char *body = st->note;
    int bl = snprintf(st->note, sizeof(st->note), "%d %s\n", status, sws_http_reason(status));
    if (bl < 0 || (size_t)bl >= sizeof(st->note))
        bl = 0;
    sws_answer a = {.status = status, .content_type = "text/plain", .length = (uint64_t)bl};
    if (page) {
        body = page->body;
        bl = (int)page->len;
        a = (sws_answer){.status = status, .content_type = page->content_type, .length = page->len};
    }
    if (h2_head(w, &st->ex, &a) < 0) {
        h2_reset(st->hc, st, NGHTTP2_INTERNAL_ERROR);
        return;
    }
    if (!st->nobody && bl) {
        st->fixed = body;
        st->fixed_left = (uint32_t)bl;
        if (page) {
            /* A reload may free the route table before the client has
             * taken the page: the stream keeps it (h2_stream_free). */
            st->held = st->sc->cfg->pages;
            sws_error_pages_ref(st->held);
        }
    }
    if (w->logs)
        h2_log(w, st, NULL, status, st->nobody ? 0 : (uint64_t)bl);
    st->ended = true;
    st->pending = false;
    h2_answer_done(w, st);
}

static int h2_error(sws_worker *w, sws_exchange *x, int status) {
    h2_stream *st = stream_ofx(x);
    if (st->closed)
        return -EPIPE;
    h2_answer_error(w, st, status);
    if (!st->in_answer)
        h2_kick(w, st->hc);
    return 0;
}

static void h2_end(sws_worker *w, sws_exchange *x) {
    h2_stream *st = stream_ofx(x);
    st->ended = true;
    st->pending = false;
    h2_answer_done(w, st);
    body_added(st);
    if (!st->in_answer)
        h2_kick(w, st->hc);
}

static void h2_more(sws_worker *w, sws_exchange *x) {
    h2_stream *st = stream_ofx(x);
    body_added(st);
    h2_kick(w, st->hc);
}

/* The exchange fails: its stream is reset, the connection's others go on. */
static void h2_close(sws_worker *w, sws_exchange *x) {
    h2_stream *st = stream_ofx(x);
    st->pending = false;
    h2_reset(st->hc, st, NGHTTP2_INTERNAL_ERROR);
    if (!st->in_answer)
        h2_kick(w, st->hc);
}

/* Cut short: RST_STREAM, which the client cannot take for the end; a
 * tunnel's with CONNECT_ERROR (RFC 9113 8.5: its TCP connection failed). */
static void h2_abort(sws_worker *w, sws_exchange *x) {
    h2_stream *st = stream_ofx(x);
    h2_answer_done(w, st);
    if (!st->tunnel) {
        h2_close(w, x);
        return;
    }
    st->pending = false;
    h2_reset(st->hc, st, NGHTTP2_CONNECT_ERROR);
    if (!st->in_answer)
        h2_kick(w, st->hc);
}

void h2_log(sws_worker *w, h2_stream *st, const char *peer, int status, uint64_t bytes) {
    const sws_http_request *r = &st->req;
    char name[64];
    if (!peer) {
        sws_peer_name(w->loop, st->hc->c->h, name, sizeof(name));
        peer = name;
    }
    const char *path = r->path;
    size_t pl = r->path_len;
    if (r->sf_fields && r->sf_path_len <= SWS_HTTP_SF_PATH_MAX) {
        path = r->sf_fields + SWS_HTTP_SF_PATH;
        pl = r->sf_path_len;
    }
    char line[SWS_HTTP_SF_PATH_MAX + 64];
    int n = snprintf(line, sizeof(line), "%s %.*s HTTP/2.0",
                     llhttp_method_name((llhttp_method_t)r->method), (int)pl, path);
    const char *lf = r->log_fields;
    sws_log_line l = {
        .peer = peer,
        .request = line,
        .request_len = n < 0                      ? 0
                       : (size_t)n < sizeof(line) ? (size_t)n
                                                  : sizeof(line) - 1,
        .referer = lf ? lf + SWS_HTTP_LOG_REFERER : NULL,
        .referer_len = lf ? r->referer_len : 0,
        .user_agent = lf ? lf + SWS_HTTP_LOG_UA : NULL,
        .user_agent_len = lf ? r->user_agent_len : 0,
        .host = r->host,
        .host_len = r->host_len,
        .status = status,
        .bytes = bytes,
        .secure = st->hc->c->tls != NULL,
        .elapsed_ms = (uint32_t)tl_loop_now(w->loop) - st->start_ms,
    };
    const sws_route *keep = w->log_route;
    if (st->routed)
        w->log_route = st->sc->route;
    sws_access_log(w, &l);
    w->log_route = keep;
}

static void h2_log_ex(sws_worker *w, sws_exchange *x, const char *peer, int status,
                      uint64_t bytes) {
    h2_log(w, stream_ofx(x), peer, status, bytes);
}

static int h2_peer(sws_worker *w, const sws_exchange *x, char *buf, size_t len) {
    sws_peer_name(w->loop, cstream_ofx(x)->hc->c->h, buf, len);
    return 0;
}

static bool h2_refused(const sws_exchange *x) {
    return cstream_ofx(x)->refuse != 0;
}

static void h2_wait(sws_worker *w, sws_exchange *x, uint64_t until) {
    (void)w;
    h2_conn *hc = stream_ofx(x)->hc;
    if (hc->wait_until < until)
        hc->wait_until = until;
    if (hc->c->deadline < until)
        hc->c->deadline = until;
}

const sws_proto sws_h2_proto = {
    .name = "HTTP/2.0",
    .request = h2_request,
    .id = h2_id,
    .request_head = h2_request_head,
    .mark = h2_mark,
    .marked = h2_marked,
    .secure = h2_secure,
    .fd = h2_fd,
    .head = h2_head,
    .room = h2_room,
    .commit = h2_commit,
    .body = h2_body,
    .sendfile = h2_sendfile,
    .file = h2_file,
    .fixed = h2_fixed,
    .error = h2_error,
    .trailers = h2_trailers,
    .end = h2_end,
    .more = h2_more,
    .close = h2_close,
    .abort = h2_abort,
    .log = h2_log_ex,
    .peer = h2_peer,
    .refused = h2_refused,
    .wait = h2_wait,
};
