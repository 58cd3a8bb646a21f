/* Compression on the fly (compress.h): which answers are compressed, and the
 * filter proto that compresses them. The filter holds the plain bytes a
 * scenario writes in an input buffer of out_cap bytes and compresses at most
 * SWS_COMPRESS_SLICE of them per round into the protocol's room; a round
 * ends where the protocol has no room or the slice is spent, and the next
 * begins at the protocol's `more` (sws_sc_more). A round that spent its
 * slice without output flushes the encoder, so that something is queued and
 * `more` comes back. Invariant: an exchange's proto is the filter's exactly
 * while it holds a slot of the loop's table (at[id]). */
#include "compress.h"

#include "compress_enc.h"
#include "sws.h"
#include "sws_accept.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The filter's proto over one protocol's (HTTP/1.1's, HTTP/2's). */
typedef struct cz_wrap {
    sws_proto p; /* first: an exchange's proto points here */
    const sws_proto *inner;
} cz_wrap;

typedef struct cz_ex {
    const sws_proto *inner; /* NULL: the slot is free */
    sws_enc *enc;
    char *hold; /* cap bytes, kept with the slot */
    uint32_t cap, hoff, hlen;
    uint32_t id;        /* the exchange's (sws_ex_id) */
    uint32_t budget;    /* input still to compress this round */
    uint64_t unflushed; /* input taken since the last flush */
    bool produced;      /* output given to the protocol this round */
    bool flushing;      /* a flush is under way: repeated, without new input */
    bool ending;        /* the scenario ended its answer */
    bool done;          /* the compressed stream is complete */
    bool failed;        /* the encoder failed: the answer is cut short */
} cz_ex;

#define CZ_WRAPS 2

struct sws_compress {
    sws_enc_pool *pool;
    cz_wrap wrap[CZ_WRAPS];
    uint32_t nwrap;
    uint16_t *at; /* by exchange id: 1 + its slot, 0 none */
    uint32_t nat;
    cz_ex ex[SWS_COMPRESS_PER_LOOP];
};

static const sws_proto cz_proto;

static const sws_proto *inner_of(const sws_exchange *x) {
    return ((const cz_wrap *)x->proto)->inner;
}

static cz_ex *ent(sws_worker *w, const sws_exchange *x) {
    return &w->compress->ex[w->compress->at[inner_of(x)->id(x)] - 1];
}

/* ---- the loop's state ------------------------------------------------------ */

static struct sws_compress *state(sws_worker *w) {
    if (w->compress)
        return w->compress;
    struct sws_compress *z = calloc(1, sizeof(*z));
    if (!z)
        return NULL;
    z->nat = w->nexchanges;
    z->at = calloc(z->nat ? z->nat : 1, sizeof(*z->at));
    z->pool = sws_enc_pool_new(SWS_COMPRESS_PER_LOOP, SWS_COMPRESS_BR_PER_LOOP);
    if (!z->at || !z->pool) {
        free(z->at);
        sws_enc_pool_free(z->pool);
        free(z);
        return NULL;
    }
    w->compress = z;
    return z;
}

void sws_compress_free(sws_worker *w) {
    struct sws_compress *z = w->compress;
    if (!z)
        return;
    for (int i = 0; i < SWS_COMPRESS_PER_LOOP; i++) {
        if (z->ex[i].inner)
            sws_enc_give(z->pool, z->ex[i].enc);
        free(z->ex[i].hold);
    }
    sws_enc_pool_free(z->pool);
    free(z->at);
    free(z);
    w->compress = NULL;
}

static const sws_proto *wrap_of(struct sws_compress *z, const sws_proto *inner) {
    for (uint32_t i = 0; i < z->nwrap; i++)
        if (z->wrap[i].inner == inner)
            return &z->wrap[i].p;
    if (z->nwrap == CZ_WRAPS)
        return NULL;
    cz_wrap *c = &z->wrap[z->nwrap++];
    c->p = cz_proto;
    c->p.name = inner->name;
    c->inner = inner;
    return &c->p;
}

/* The exchange goes back to its protocol's proto; its encoder to the pool. */
static void release(sws_worker *w, sws_exchange *x, cz_ex *e) {
    struct sws_compress *z = w->compress;
    x->proto = e->inner;
    z->at[e->id] = 0;
    sws_enc_give(z->pool, e->enc);
    e->enc = NULL;
    e->inner = NULL;
}

/* ---- compressing ------------------------------------------------------------- */

/* What the input buffer holds, into the protocol's room, within the round's
 * slice; a flush when asked (the scenario's sws_ex_more: what came so far
 * goes out now) or when the slice was spent with nothing to show. */
static void pump(sws_worker *w, sws_exchange *x, cz_ex *e, bool flush) {
    const sws_proto *in = e->inner;
    while (!e->done && !e->failed) {
        size_t avail = e->hlen - e->hoff;
        size_t take = avail < e->budget ? avail : e->budget;
        int op = SWS_ENC_RUN;
        if (e->flushing) {
            take = 0;
            op = SWS_ENC_FLUSH;
        } else if (e->ending && take == avail) {
            op = SWS_ENC_FINISH;
        } else if (take == 0 && e->unflushed && (flush || (e->budget == 0 && !e->produced))) {
            op = SWS_ENC_FLUSH;
        } else if (take == 0 && !sws_enc_pending(e->enc)) {
            break; /* nothing to compress now */
        }
        size_t room;
        char *out = in->room(w, x, &room);
        if (!out || room == 0)
            break; /* `more` comes back once the protocol has room */
        size_t n_in = take, n_out = room;
        int rc = sws_enc_step(e->enc, e->hold + e->hoff, &n_in, out, &n_out, op);
        if (rc < 0) {
            e->failed = true;
            break;
        }
        e->hoff += (uint32_t)n_in;
        e->budget -= (uint32_t)n_in;
        e->unflushed += n_in;
        e->flushing = op == SWS_ENC_FLUSH && sws_enc_pending(e->enc);
        if (op == SWS_ENC_FLUSH && !e->flushing)
            e->unflushed = 0;
        if (n_out) {
            SWS_ADD(w->ctr.compress_out, n_out);
            in->commit(w, x, n_out);
            e->produced = true;
        }
        if (rc == 1)
            e->done = true;
        else if (n_in == 0 && n_out == 0)
            break;
    }
    if (e->hoff == e->hlen || e->failed)
        e->hoff = e->hlen = 0; /* a failed encoder's input is dropped */
}

/* The answer's end went out (or cannot): the protocol ends it. */
static bool finish(sws_worker *w, sws_exchange *x, cz_ex *e) {
    if (!e->done && !e->failed)
        return false;
    bool failed = e->failed;
    const sws_proto *in = e->inner;
    release(w, x, e);
    if (failed)
        in->abort(w, x); /* the client must not take it for complete */
    else
        in->end(w, x);
    return true;
}

int sws_compress_answered(sws_worker *w, sws_exchange *x, int rc) {
    cz_ex *e = ent(w, x);
    if (rc < 0) {
        release(w, x, e);
        return rc;
    }
    if (rc != SWS_ANSWER_DONE)
        return rc;
    e->ending = true;
    pump(w, x, e, false);
    if (e->failed) {
        release(w, x, e);
        return -EIO;
    }
    if (e->done) {
        release(w, x, e); /* the protocol ends it as any answer returned DONE */
        return SWS_ANSWER_DONE;
    }
    return SWS_ANSWER_PENDING; /* its end is compressed in the rounds to come */
}

void sws_compress_more(sws_worker *w, sws_scenario *sc, sws_exchange *x) {
    cz_ex *e = ent(w, x);
    e->budget = SWS_COMPRESS_SLICE;
    e->produced = false;
    pump(w, x, e, false);
    if (e->ending) {
        finish(w, x, e);
        return;
    }
    if (sc->ops->more)
        sc->ops->more(w, sc, x);
}

void sws_compress_drop(sws_worker *w, sws_exchange *x) {
    release(w, x, ent(w, x));
}

/* ---- the filter's proto --------------------------------------------------------- */

static const sws_http_request *cz_request(const sws_exchange *x) {
    return inner_of(x)->request(x);
}
static uint32_t cz_id(const sws_exchange *x) {
    return inner_of(x)->id(x);
}
static const sws_head *cz_request_head(const sws_exchange *x) {
    return inner_of(x)->request_head(x);
}
static sws_ex_mark cz_mark(const sws_exchange *x) {
    return inner_of(x)->mark(x);
}
static bool cz_marked(const sws_exchange *x, sws_ex_mark m) {
    return inner_of(x)->marked(x, m);
}
static bool cz_secure(const sws_exchange *x) {
    return inner_of(x)->secure(x);
}
static bool cz_refused(const sws_exchange *x) {
    return inner_of(x)->refused(x);
}
static int cz_fd(sws_worker *w, const sws_exchange *x) {
    return inner_of(x)->fd(w, x);
}
static int cz_peer(sws_worker *w, const sws_exchange *x, char *buf, size_t len) {
    return inner_of(x)->peer(w, x, buf, len);
}
static void cz_log(sws_worker *w, sws_exchange *x, const char *peer, int status, uint64_t bytes) {
    inner_of(x)->log(w, x, peer, status, bytes);
}
static void cz_wait(sws_worker *w, sws_exchange *x, uint64_t until) {
    inner_of(x)->wait(w, x, until);
}

/* The head is given once, before the filter is there: a second is refused
 * as the protocols refuse it. */
static int cz_head(sws_worker *w, sws_exchange *x, const sws_answer *a) {
    (void)w;
    (void)x;
    (void)a;
    return -EINVAL;
}
static int cz_fixed(sws_worker *w, sws_exchange *x, sws_fixed *f) {
    (void)w;
    (void)x;
    (void)f;
    return -EINVAL;
}

/* Room in the input buffer, what is left of it moved to its front. */
static char *cz_room(sws_worker *w, sws_exchange *x, size_t *len) {
    cz_ex *e = ent(w, x);
    if (e->ending) {
        *len = 0;
        return e->hold;
    }
    if (e->hoff) {
        memmove(e->hold, e->hold + e->hoff, e->hlen - e->hoff);
        e->hlen -= e->hoff;
        e->hoff = 0;
    }
    *len = e->cap - e->hlen;
    return e->hold + e->hlen;
}

static void cz_commit(sws_worker *w, sws_exchange *x, size_t n) {
    cz_ex *e = ent(w, x);
    e->hlen += (uint32_t)n;
    SWS_ADD(w->ctr.compress_in, n);
    pump(w, x, e, false);
}

static int cz_body(sws_worker *w, sws_exchange *x, const void *data, size_t n) {
    size_t room;
    char *at = cz_room(w, x, &room);
    if (n > room)
        return -ENOSPC;
    memcpy(at, data, n);
    cz_commit(w, x, n);
    return 0;
}

static int cz_sendfile(sws_worker *w, sws_exchange *x, int fd, uint64_t *off, size_t len) {
    (void)w;
    (void)x;
    (void)fd;
    (void)off;
    (void)len;
    return -EOPNOTSUPP; /* the bytes go through the encoder */
}

static int cz_file(sws_worker *w, sws_exchange *x, int fd, uint64_t off, uint64_t len) {
    (void)w;
    (void)x;
    (void)fd;
    (void)off;
    (void)len;
    return -EOPNOTSUPP; /* the bytes go through the encoder: not a file range */
}

/* Trailers follow the compressed body's end: sent when it is out now,
 * dropped otherwise (delivering them is optional: RFC 9110 6.5.1). */
static int cz_trailers(sws_worker *w, sws_exchange *x, const sws_field *f, uint32_t n) {
    cz_ex *e = ent(w, x);
    e->ending = true;
    pump(w, x, e, false);
    return e->done ? e->inner->trailers(w, x, f, n) : 0;
}

static void cz_end(sws_worker *w, sws_exchange *x) {
    cz_ex *e = ent(w, x);
    e->ending = true;
    pump(w, x, e, false);
    finish(w, x, e); /* else the rounds to come (sws_compress_more) */
}

/* The scenario added outside a hook: what came goes out now (a flush), as
 * h2o's filter does on each send, so that a slow stream is not held back. */
static void cz_more(sws_worker *w, sws_exchange *x) {
    cz_ex *e = ent(w, x);
    const sws_proto *in = e->inner;
    pump(w, x, e, true);
    if (e->ending)
        finish(w, x, e);
    in->more(w, x);
}

static void cz_close(sws_worker *w, sws_exchange *x) {
    cz_ex *e = ent(w, x);
    const sws_proto *in = e->inner;
    release(w, x, e);
    in->close(w, x);
}

static void cz_abort(sws_worker *w, sws_exchange *x) {
    cz_ex *e = ent(w, x);
    const sws_proto *in = e->inner;
    release(w, x, e);
    in->abort(w, x);
}

static int cz_error(sws_worker *w, sws_exchange *x, int status) {
    cz_ex *e = ent(w, x);
    const sws_proto *in = e->inner;
    release(w, x, e);
    return in->error(w, x, status);
}

static const sws_proto cz_proto = {
    .filter = true,
    .request = cz_request,
    .id = cz_id,
    .request_head = cz_request_head,
    .mark = cz_mark,
    .marked = cz_marked,
    .secure = cz_secure,
    .fd = cz_fd,
    .head = cz_head,
    .room = cz_room,
    .commit = cz_commit,
    .body = cz_body,
    .sendfile = cz_sendfile,
    .file = cz_file,
    .fixed = cz_fixed,
    .error = cz_error,
    .trailers = cz_trailers,
    .end = cz_end,
    .more = cz_more,
    .close = cz_close,
    .abort = cz_abort,
    .log = cz_log,
    .peer = cz_peer,
    .refused = cz_refused,
    .wait = cz_wait,
};

/* ---- which answers -------------------------------------------------------------- */

static bool name_is(const sws_field *f, const char *name, uint32_t len) {
    return f->name_len == len && strncasecmp(f->name, name, len) == 0;
}

/* Whether the media type t (parameters after ';' ignored) is one of types
 * (words "a/b", or "a/" and a star for every subtype of a; lowercased by the config). */
static bool type_listed(const char *types, const char *t, size_t tl) {
    size_t n = 0;
    while (n < tl && t[n] != ';' && t[n] != ' ' && t[n] != '\t')
        n++;
    const char *slash = memchr(t, '/', n);
    if (!slash)
        return false;
    for (const char *p = types; *p;) {
        const char *s = p;
        while (*p && *p != ' ')
            p++;
        size_t k = (size_t)(p - s);
        if (*p)
            p++;
        if (k >= 2 && s[k - 1] == '*' && s[k - 2] == '/') {
            size_t major = (size_t)(slash - t) + 1;
            if (k - 1 == major && strncasecmp(s, t, major) == 0)
                return true;
        } else if (k == n && strncasecmp(s, t, n) == 0) {
            return true;
        }
    }
    return false;
}

/* The request as compression reads it. */
typedef struct cz_req {
    sws_ae ae;
    bool range;        /* it asked for a range */
    bool no_transform; /* Cache-Control: no-transform */
} cz_req;

static void ae_merge(sws_ae *to, const sws_ae *from) {
    if (from->gzip >= 0)
        to->gzip = from->gzip;
    if (from->br >= 0)
        to->br = from->br;
    if (from->identity >= 0)
        to->identity = from->identity;
    if (from->star >= 0)
        to->star = from->star;
}

/* From every field where the scenario took the request's (the proxy), else
 * from the static scenario's kept fields; an Accept-Encoding too long to be
 * kept counts as absent (identity). */
static void read_request(const sws_exchange *x, cz_req *q) {
    *q = (cz_req){.ae = {-1, -1, -1, -1}};
    const sws_head *h = sws_ex_request_head(x);
    if (h) {
        for (uint32_t i = 0; i < h->nf; i++) {
            const sws_field *f = &h->f[i];
            if (name_is(f, "accept-encoding", 15)) {
                sws_ae one;
                sws_ae_parse(f->value, f->value_len, &one);
                ae_merge(&q->ae, &one);
            } else if (name_is(f, "range", 5)) {
                q->range = true;
            } else if (name_is(f, "cache-control", 13)) {
                q->no_transform = q->no_transform || sws_field_has(f, "no-transform");
            }
        }
        return;
    }
    const sws_http_request *r = sws_ex_request(x);
    if (!r->sf_fields)
        return;
    uint16_t al = r->sf_len[SWS_HTTP_SF_AE];
    if (al && al <= SWS_HTTP_SF_VALUE_MAX)
        sws_ae_parse(r->sf_fields + SWS_HTTP_SF_AE * SWS_HTTP_SF_VALUE_MAX, al, &q->ae);
    q->range = r->sf_len[SWS_HTTP_SF_RANGE] != 0;
}

static int level_of(const sws_compress_config *cc, unsigned coding) {
    return (int)(coding == SWS_AE_BR ? cc->level_br : cc->level_gzip);
}

/* Fields of an answer the filter can rewrite; more: it goes as it is. */
#define CZ_FIELDS_MAX 128
#define CZ_ETAG_MAX 256

int sws_compress_head(sws_worker *w, const sws_scenario *sc, sws_exchange *x, const sws_answer *a,
                      const char *type, uint64_t rep_len) {
    const sws_compress_config *cc = &sc->cfg->comp;
    if (!cc->on || a->nfields + 3 > CZ_FIELDS_MAX)
        return sws_ex_head(w, x, a);
    /* The representation's type: the answer's, or a relayed one's field. */
    const char *t = a->content_type ? a->content_type : type;
    size_t tl = t ? strlen(t) : 0;
    int etag = -1;
    bool encoded = false, no_transform = false, varied = false;
    for (uint32_t i = 0; i < a->nfields; i++) {
        const sws_field *f = &a->fields[i];
        if (!t && name_is(f, "content-type", 12)) {
            t = f->value;
            tl = f->value_len;
        } else if (name_is(f, "content-encoding", 16)) {
            encoded = true;
        } else if (name_is(f, "cache-control", 13)) {
            no_transform = no_transform || sws_field_has(f, "no-transform");
        } else if (name_is(f, "etag", 4)) {
            etag = (int)i;
        } else if (name_is(f, "vary", 4)) {
            varied = varied || sws_field_has(f, "accept-encoding") || sws_field_has(f, "*");
        }
    }
    if (!t || !type_listed(cc->types, t, tl))
        return sws_ex_head(w, x, a);
    cz_req q;
    read_request(x, &q);
    int st = a->status;
    bool bodyless = st < 200 || st == 204 || st == 304;
    uint64_t len = a->length != SWS_BODY_STREAM ? a->length : rep_len;
    if (st == 304)
        len = rep_len;
    /* Whether a GET of it would be compressed (a HEAD's and a 304's head
     * say what that GET's would). */
    unsigned coding = 0;
    if (!encoded && !no_transform && !q.no_transform && !q.range && st != 206 &&
        !(st < 200 || st == 204) && len != 0 && (len == SWS_BODY_STREAM || len >= cc->min_length))
        coding = sws_ae_choose(&q.ae, sws_enc_offered());
    const sws_http_request *r = sws_ex_request(x);
    bool install = coding && !bodyless && !r->head;
    struct sws_compress *z = NULL;
    cz_ex *e = NULL;
    const sws_proto *wrap = NULL;
    uint32_t id = sws_ex_id(x);
    if (install) {
        /* A slot, its input buffer, an encoder: without them, plain. */
        z = state(w);
        wrap = z && id < z->nat ? wrap_of(z, x->proto) : NULL;
        for (int i = 0; wrap && i < SWS_COMPRESS_PER_LOOP && !e; i++)
            if (!z->ex[i].inner)
                e = &z->ex[i];
        if (e && !e->hold && (e->hold = malloc(w->out_cap)))
            e->cap = w->out_cap;
        uint64_t hint = len == SWS_BODY_STREAM ? 0 : len;
        sws_enc *enc =
            e && e->hold ? sws_enc_take(z->pool, coding, level_of(cc, coding), hint) : NULL;
        if (!enc && e && e->hold && coding == SWS_AE_BR) {
            /* The loop's br encoders are all busy: gzip, if the client takes it. */
            coding = sws_ae_choose(&q.ae, sws_enc_offered() & ~SWS_AE_BR);
            enc = coding ? sws_enc_take(z->pool, coding, level_of(cc, coding), hint) : NULL;
        }
        if (!enc) {
            coding = 0;
            SWS_ADD(w->ctr.compress_busy, 1);
        } else {
            e->enc = enc;
        }
    }
    sws_field fl[CZ_FIELDS_MAX];
    char weak[CZ_ETAG_MAX];
    uint32_t nf = 0;
    for (uint32_t i = 0; i < a->nfields; i++) {
        fl[nf] = a->fields[i];
        const sws_field *f = &a->fields[i];
        if (coding && name_is(f, "accept-ranges", 13))
            continue; /* a range is of the identity representation (as nginx) */
        if ((int)i == etag && coding && f->value_len >= 1 && f->value[0] == '"' &&
            f->value_len + 2 <= sizeof(weak)) {
            /* A strong validator is no longer true of bytes that change with
             * the encoder (RFC 9110 8.8.1): W/"..." (If-None-Match compares
             * weakly, so it still matches). */
            memcpy(weak, "W/", 2);
            memcpy(weak + 2, f->value, f->value_len);
            fl[nf].value = weak;
            fl[nf].value_len = f->value_len + 2;
        }
        nf++;
    }
    if (!varied)
        fl[nf++] = SWS_FIELD_LIT("Vary", "Accept-Encoding");
    sws_answer b = *a;
    b.fields = fl;
    if (coding && !bodyless) {
        fl[nf++] = coding == SWS_AE_BR ? SWS_FIELD_LIT("Content-Encoding", "br")
                                       : SWS_FIELD_LIT("Content-Encoding", "gzip");
        b.length = SWS_BODY_STREAM; /* chunked on HTTP/1.1, DATA frames on HTTP/2 */
        b.whole_body = false;
    }
    b.nfields = nf;
    int rc = sws_ex_head(w, x, &b);
    if (!e || !e->enc)
        return rc;
    if (rc < 0) {
        sws_enc_give(z->pool, e->enc);
        e->enc = NULL;
        return rc;
    }
    *e = (cz_ex){.inner = x->proto,
                 .enc = e->enc,
                 .hold = e->hold,
                 .cap = e->cap,
                 .id = id,
                 .budget = SWS_COMPRESS_SLICE};
    z->at[id] = (uint16_t)(e - z->ex + 1);
    x->proto = wrap;
    SWS_ADD(w->ctr.compress_answers[coding == SWS_AE_BR], 1);
    return rc;
}
