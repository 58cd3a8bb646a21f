/* The exchange's functions over HTTP/3: an answer's head into a HEADERS
 * frame (QPACK by nghttp3), its body into DATA frames. A fixed answer's
 * body (respond's, our error's note) is sent from where it is; a streamed
 * one goes through the stream's ring, whose bytes stay until the client
 * acknowledges them (nghttp3 points into it until then), so the room a
 * scenario is given comes back with the client's ACKs. */
#include "h3.h"

#include "access_log.h"
#include "header_policy.h"
#include "route.h"

#include <arpa/inet.h>
#include <errno.h>
#include <llhttp.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static sws_h3_endpoint *ep_of(h3_stream *st) {
    return st->hc->ep;
}

/* ---- the head ---------------------------------------------------------------------- */

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

static nghttp3_nv nv(const char *n, size_t nl, const char *v, size_t vl) {
    return (nghttp3_nv){(uint8_t *)n, (uint8_t *)v, nl, vl, NGHTTP3_NV_FLAG_NONE};
}

static bool scratch(sws_h3_endpoint *ep, uint32_t nfields, uint32_t names) {
    if (nfields > ep->nva_cap) {
        nghttp3_nv *v = realloc(ep->nva, nfields * sizeof(*v));
        if (!v)
            return false;
        ep->nva = v;
        ep->nva_cap = nfields;
    }
    if (names > ep->low_cap) {
        char *l = realloc(ep->low, names);
        if (!l)
            return false;
        ep->low = l;
        ep->low_cap = names;
    }
    return true;
}

/* The head with the fields of policy (header_policy.h: names lowercased
 * already) after the answer's own. nghttp3 copies the fields. */
static int head_with(h3_stream *st, const sws_answer *a, const sws_header_policy *policy) {
    sws_h3_endpoint *ep = ep_of(st);
    if (st->submitted || !st->hc->h)
        return -EINVAL;
    int sc = a->status;
    if (sc < 200 || sc > 999)
        return -EINVAL; /* 1xx are not answers: HTTP/3 sends none of ours */
    st->nobody = st->req.head || sc == 204 || sc == 304;
    uint32_t names = 0, extra = policy ? policy->n : 0;
    for (uint32_t i = 0; i < a->nfields; i++)
        names += a->fields[i].name_len;
    if (!scratch(ep, a->nfields + extra + 5, names + 1))
        return -ENOMEM;
    sws_date_refresh(&ep->date);
    nghttp3_nv *v = ep->nva;
    uint32_t n = 0;
    char status[4] = {(char)('0' + sc / 100 % 10), (char)('0' + sc / 10 % 10),
                      (char)('0' + sc % 10), 0};
    v[n++] = nv(":status", 7, status, 3);
    if (!a->relayed) {
        v[n++] = nv("server", 6, SWS_HTTP_SERVER, sizeof(SWS_HTTP_SERVER) - 1);
        v[n++] = nv("date", 4, ep->date.str, SWS_DATE_LEN);
    }
    if (a->content_type)
        v[n++] = nv("content-type", 12, a->content_type, strlen(a->content_type));
    char len[24];
    if (a->length != SWS_BODY_STREAM && sc != 204 && sc != 304) {
        int k = snprintf(len, sizeof(len), "%llu", (unsigned long long)a->length);
        v[n++] = nv("content-length", 14, len, (size_t)k);
    }
    char *low = ep->low;
    for (uint32_t i = 0; i < a->nfields; i++) {
        const sws_field *f = &a->fields[i];
        if (connection_specific(f) ||
            (f->name_len == 14 && strncasecmp(f->name, "content-length", 14) == 0))
            continue;
        for (uint32_t k = 0; k < f->name_len; k++) {
            char ch = f->name[k];
            low[k] = ch >= 'A' && ch <= 'Z' ? (char)(ch + 32) : ch;
        }
        v[n++] = nv(low, f->name_len, f->value, f->value_len);
        low += f->name_len;
    }
    for (uint32_t i = 0; i < extra; i++)
        if (sws_headers_take(policy, i, sc))
            v[n++] = nv(policy->h2[i].name, policy->h2[i].name_len, policy->h2[i].value,
                        policy->h2[i].value_len);
    bool body = !st->nobody && a->length != 0;
    nghttp3_data_reader dr = {h3_read_body};
    if (nghttp3_conn_submit_response(st->hc->h, st->id, v, n, body ? &dr : NULL) != 0)
        return -ENOMEM;
    st->submitted = true;
    st->status = (uint16_t)sc;
    if (!body)
        st->ended = true;
    return 0;
}

static int h3_head(sws_worker *w, sws_exchange *x, const sws_answer *a) {
    (void)w;
    h3_stream *st = stream_ofx(x);
    return head_with(st, a, st->sc ? st->sc->cfg->headers : NULL);
}

/* ---- the body ------------------------------------------------------------------------ */

nghttp3_ssize h3_read_body(nghttp3_conn *conn, int64_t id, nghttp3_vec *vec, size_t veccnt,
                           uint32_t *pflags, void *conn_ud, void *stream_ud) {
    (void)conn;
    (void)id;
    (void)conn_ud;
    h3_stream *st = stream_ud;
    if (!st || veccnt < 2)
        return NGHTTP3_ERR_CALLBACK_FAILURE;
    if (st->fixed) {
        vec[0] = (nghttp3_vec){(uint8_t *)st->fixed, (size_t)st->fixed_left};
        st->sent += st->fixed_left;
        st->fixed = NULL;
        st->fixed_left = 0;
        *pflags |= NGHTTP3_DATA_FLAG_EOF;
        return 1;
    }
    uint64_t have = st->written - st->given;
    if (have == 0) {
        if (st->ended && !st->abort_due) {
            *pflags |= NGHTTP3_DATA_FLAG_EOF;
            return 0;
        }
        st->deferred = true;
        return NGHTTP3_ERR_WOULDBLOCK;
    }
    /* At most two pieces: to the ring's end, then from its start. */
    size_t at = (size_t)((st->given - st->origin) % H3_BODY_RING);
    size_t first = H3_BODY_RING - at < have ? H3_BODY_RING - at : (size_t)have;
    vec[0] = (nghttp3_vec){(uint8_t *)st->ring + at, first};
    nghttp3_ssize nv = 1;
    if (first < have)
        vec[nv++] = (nghttp3_vec){(uint8_t *)st->ring, (size_t)(have - first)};
    st->given += have;
    st->sent += have;
    if (st->ended)
        *pflags |= NGHTTP3_DATA_FLAG_EOF;
    return nv;
}

void h3_body_acked(h3_stream *st, uint64_t n) {
    if (!st->ring)
        return;
    st->acked += n;
    if (st->want_more)
        st->more_due = true;
    if (st->abort_due && st->acked == st->written)
        st->hc->body_due = true; /* h3_body_pump resets it */
}

/* Moves the stream on after the scenario added to it: nghttp3 asks the
 * data reader again, and the connection writes (now, or at the end of the
 * engine's own call). */
static void resume(h3_stream *st) {
    if (st->submitted && st->hc->h)
        nghttp3_conn_resume_stream(st->hc->h, st->id);
    st->deferred = false;
    if (!st->in_answer)
        h3_conn_kick(st->hc);
}

static char *h3_room(sws_worker *w, sws_exchange *x, size_t *len) {
    (void)w;
    h3_stream *st = stream_ofx(x);
    *len = 0;
    if (st->ended || st->nobody || st->fixed)
        return NULL;
    if (!st->ring && !(st->ring = malloc(H3_BODY_RING)))
        return NULL;
    uint64_t held = st->written - st->acked;
    /* Empty (every byte acknowledged, none in nghttp3's hands): the room
     * starts at the ring's start again, whole. */
    if (held == 0)
        st->origin = st->written;
    size_t at = (size_t)((st->written - st->origin) % H3_BODY_RING);
    size_t free_ = H3_BODY_RING - (size_t)held;
    *len = H3_BODY_RING - at < free_ ? H3_BODY_RING - at : free_;
    /* Less than the whole ring: more comes back with the client's ACKs,
     * and a scenario that wants more than this (the proxy asks for a
     * buffer's worth) hears of it in `more`. */
    if (held)
        st->want_more = true;
    return st->ring + at;
}

static void h3_commit(sws_worker *w, sws_exchange *x, size_t n) {
    (void)w;
    h3_stream *st = stream_ofx(x);
    if (n == 0 || st->nobody)
        return;
    st->written += n;
    /* Room comes back with ACKs: the scenario hears of it in `more`. */
    st->want_more = true;
    resume(st);
}

static int h3_body(sws_worker *w, sws_exchange *x, const void *data, size_t len) {
    h3_stream *st = stream_ofx(x);
    if (st->nobody)
        return 0;
    const char *p = data;
    while (len) {
        size_t room;
        char *at = h3_room(w, x, &room);
        if (!at || room == 0)
            return -ENOSPC;
        size_t k = room < len ? room : len;
        memcpy(at, p, k);
        st->written += k;
        p += k;
        len -= k;
    }
    st->want_more = true;
    resume(st);
    return 0;
}

static int h3_sendfile(sws_worker *w, sws_exchange *x, int fd, uint64_t *off, size_t len) {
    (void)w;
    (void)x;
    (void)fd;
    (void)off;
    (void)len;
    return -EOPNOTSUPP; /* QUIC's bytes are encrypted in user space: copied through room */
}

static int h3_file(sws_worker *w, sws_exchange *x, int fd, uint64_t off, uint64_t len) {
    (void)w;
    (void)x;
    (void)fd;
    (void)off;
    (void)len;
    return -EOPNOTSUPP;
}

static int h3_fixed(sws_worker *w, sws_exchange *x, sws_fixed *f) {
    (void)w;
    h3_stream *st = stream_ofx(x);
    sws_answer a = {.status = f->status, .content_type = f->content_type, .length = f->body_len};
    if (!st->nobody && f->body_len) {
        /* respond's: it outlives every stream of its route */
        st->fixed = f->body;
        st->fixed_left = f->body_len;
    }
    int rc = head_with(st, &a, f->headers);
    if (rc < 0) {
        st->fixed = NULL;
        st->fixed_left = 0;
        return rc;
    }
    if (st->nobody) {
        st->fixed = NULL;
        st->fixed_left = 0;
    }
    st->ended = true;
    return 0;
}

static void h3_log_line(h3_stream *st, const char *peer, int status, uint64_t bytes);

void h3_answer_error(h3_stream *st, int status) {
    st->answering = true;
    if (st->submitted) {
        ngtcp2_conn_shutdown_stream(st->hc->q, st->id, NGHTTP3_H3_INTERNAL_ERROR);
        return;
    }
    /* The route's page once the route is known, else a text naming the status. */
    const sws_error_page *page = st->sc ? sws_error_page_find(st->sc->cfg, status) : NULL;
    int bl = snprintf(st->note, sizeof(st->note), "%d %s\n", status, sws_http_reason(status));
    if (bl < 0 || (size_t)bl >= sizeof(st->note))
        bl = 0;
    sws_fixed f;
    if (page)
        sws_fixed_init(&f, status, page->content_type, page->body, (uint32_t)page->len);
    else
        sws_fixed_init(&f, status, "text/plain", st->note, (uint32_t)bl);
    f.headers = st->sc ? st->sc->cfg->headers : NULL;
    if (h3_fixed(NULL, &st->ex, &f) < 0) {
        ngtcp2_conn_shutdown_stream(st->hc->q, st->id, NGHTTP3_H3_INTERNAL_ERROR);
        return;
    }
    h3_log_line(st, NULL, status, st->nobody ? 0 : f.body_len);
    st->pending = false;
}

static int h3_error(sws_worker *w, sws_exchange *x, int status) {
    (void)w;
    h3_stream *st = stream_ofx(x);
    if (st->submitted)
        return -EINVAL;
    h3_answer_error(st, status);
    if (!st->in_answer)
        h3_conn_kick(st->hc);
    return 0;
}

static int h3_trailers(sws_worker *w, sws_exchange *x, const sws_field *f, uint32_t n) {
    (void)w;
    h3_stream *st = stream_ofx(x);
    if (!st->submitted || st->nobody || n == 0)
        return 0; /* optional to deliver (RFC 9110 6.5.1) */
    sws_h3_endpoint *ep = ep_of(st);
    uint32_t names = 0;
    for (uint32_t i = 0; i < n; i++)
        names += f[i].name_len;
    if (!scratch(ep, n, names + 1))
        return -ENOSPC;
    char *low = ep->low;
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (connection_specific(&f[i]))
            continue;
        for (uint32_t j = 0; j < f[i].name_len; j++) {
            char ch = f[i].name[j];
            low[j] = ch >= 'A' && ch <= 'Z' ? (char)(ch + 32) : ch;
        }
        ep->nva[k++] = nv(low, f[i].name_len, f[i].value, f[i].value_len);
        low += f[i].name_len;
    }
    return nghttp3_conn_submit_trailers(st->hc->h, st->id, ep->nva, k) ? -ENOSPC : 0;
}

static void h3_end(sws_worker *w, sws_exchange *x) {
    (void)w;
    h3_stream *st = stream_ofx(x);
    st->ended = true;
    st->pending = false;
    st->want_more = false;
    /* A tunnel that ends (its upstream's FIN, or a refusal answered in
     * full) takes no more of the client's bytes: STOP_SENDING H3_NO_ERROR
     * (RFC 9114 4.1) rather than reading them to drop them. */
    if (st->tunnel && !st->req_end)
        h3_body_stop(st->hc, st);
    resume(st);
}

/* The scenario added to its answer, or has room again for request bytes. */
static void h3_more(sws_worker *w, sws_exchange *x) {
    (void)w;
    h3_stream *st = stream_ofx(x);
    h3_request_wake(st);
    resume(st);
}

/* The exchange fails: the stream is reset both ways, the connection lives. */
static void h3_close(sws_worker *w, sws_exchange *x) {
    (void)w;
    h3_stream *st = stream_ofx(x);
    st->ended = true;
    st->pending = false;
    ngtcp2_conn_shutdown_stream(st->hc->q, st->id, h3_cut_code(st));
    if (!st->in_answer)
        h3_conn_kick(st->hc);
}

/* A reset stream is how HTTP/3 tells an answer cut short (RFC 9114 4.1.1),
 * but a reset lets the peer drop what it has not read: the body given so far
 * goes first, and the stream is reset once the client has acknowledged it
 * (with it the head before it: stream bytes are acknowledged in order), in
 * h3_body_pump. The data reader meanwhile never says the body is done. */
static void h3_abort(sws_worker *w, sws_exchange *x) {
    h3_stream *st = stream_ofx(x);
    if (!st->submitted || st->written == st->acked) {
        h3_close(w, x);
        return;
    }
    st->abort_due = true;
    st->pending = false;
    st->want_more = false;
    resume(st);
}

/* ---- the request's side -------------------------------------------------------------- */

static const sws_http_request *h3_request(const sws_exchange *x) {
    return &cstream_ofx(x)->req;
}

static uint32_t h3_id(const sws_exchange *x) {
    const h3_stream *st = cstream_ofx(x);
    return st->hc->ep->s.xid_base + (uint32_t)(st - st->hc->ep->table);
}

/* Every field, for a scenario that takes the request (session.c keeps them
 * while a route's scenario may). */
static const sws_head *h3_request_head(const sws_exchange *x) {
    const h3_stream *st = cstream_ofx(x);
    return st->took ? &st->head : NULL;
}

uint32_t sws_h3_conn_slot(const sws_exchange *x) {
    return cstream_ofx(x)->hc->slot;
}

static sws_ex_mark h3_mark(const sws_exchange *x) {
    const h3_stream *st = cstream_ofx(x);
    return (sws_ex_mark){.conn = st->hc->id, .req = st->gen};
}

static bool h3_marked(const sws_exchange *x, sws_ex_mark m) {
    const h3_stream *st = cstream_ofx(x);
    return st->used && st->hc && st->hc->id == m.conn && st->gen == m.req;
}

static bool h3_secure(const sws_exchange *x) {
    (void)x;
    return true; /* QUIC is always TLS */
}

static int h3_fd(struct sws_worker *w, const sws_exchange *x) {
    (void)w;
    (void)x;
    return -1; /* the UDP socket is shared by every connection */
}

static int h3_peer(struct sws_worker *w, const sws_exchange *x, char *buf, size_t len) {
    (void)w;
    const h3_stream *st = cstream_ofx(x);
    /* The path now: a client that migrated, or whose NAT rebound it, is
     * at another address than the one it came from. */
    const ngtcp2_addr *a = &ngtcp2_conn_get_path(st->hc->q)->remote;
    int rc =
        getnameinfo(a->addr, (socklen_t)a->addrlen, buf, (socklen_t)len, NULL, 0, NI_NUMERICHOST);
    return rc == 0 ? 0 : -EINVAL;
}

static void h3_log_line(h3_stream *st, const char *peer, int status, uint64_t bytes) {
    sws_worker *w = ep_of(st)->s.w;
    if (!w || !w->logs || st->logged)
        return;
    st->logged = true;
    char name[NI_MAXHOST];
    if (!peer) {
        if (h3_peer(w, &st->ex, name, sizeof(name)) < 0)
            snprintf(name, sizeof(name), "-");
        peer = name;
    }
    const sws_http_request *r = &st->req;
    char line[SWS_HTTP_PATH_MAX + 64];
    int n = snprintf(line, sizeof(line), "%s %s HTTP/3.0",
                     llhttp_method_name((llhttp_method_t)r->method), r->path);
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
        .secure = true,
        .elapsed_ms = (int64_t)((sws_h3_now() - st->start_ns) / 1000000u),
    };
    const sws_route *keep = w->log_route;
    if (st->sc)
        w->log_route = st->sc->route;
    sws_access_log(w, &l);
    w->log_route = keep;
}

static void h3_log(struct sws_worker *w, sws_exchange *x, const char *peer, int status,
                   uint64_t bytes) {
    (void)w;
    h3_log_line(stream_ofx(x), peer, status, bytes);
}

static bool h3_refused(const sws_exchange *x) {
    return cstream_ofx(x)->refuse != 0;
}

/* The stream waits on the scenario's side (an upstream), and the client
 * may be silent meanwhile: QUIC's idle timeout would end the connection,
 * so it is kept alive by PINGs (each ACKed) at half of it until its last
 * stream closes (h3_stream_free). */
static void h3_wait(struct sws_worker *w, sws_exchange *x, uint64_t until) {
    (void)w;
    (void)until;
    h3_stream *st = stream_ofx(x);
    ngtcp2_conn_set_keep_alive_timeout(st->hc->q,
                                       st->hc->idle_timeout_ms * NGTCP2_MILLISECONDS / 2);
}

const sws_proto sws_h3_proto = {
    .name = "HTTP/3.0",
    .request = h3_request,
    .id = h3_id,
    .request_head = h3_request_head,
    .mark = h3_mark,
    .marked = h3_marked,
    .secure = h3_secure,
    .fd = h3_fd,
    .head = h3_head,
    .room = h3_room,
    .commit = h3_commit,
    .body = h3_body,
    .sendfile = h3_sendfile,
    .file = h3_file,
    .fixed = h3_fixed,
    .error = h3_error,
    .trailers = h3_trailers,
    .end = h3_end,
    .more = h3_more,
    .close = h3_close,
    .abort = h3_abort,
    .log = h3_log,
    .peer = h3_peer,
    .refused = h3_refused,
    .wait = h3_wait,
};
