/* HTTP/2, the connection (RFC 9113): one libnghttp2 server session per
 * connection, fed the transport's bytes (input) and drained into its output
 * (fill), with the options the attacks of the last years ask for (doc/http2.md):
 *  - no automatic WINDOW_UPDATE: a request body's window reopens only as the
 *    scenario takes its bytes, so nothing is buffered beyond the windows;
 *  - SETTINGS_NO_RFC7540_PRIORITIES and no retained closed streams: no
 *    priority tree to grow;
 *  - Rapid Reset (CVE-2023-44487): the library's RST_STREAM rate limit;
 *  - MadeYouReset (CVE-2025-8671): resets we send and invalid frames we
 *    receive drain a bucket of our own (Debian's 1.52 has no glitch limiter);
 *  - CONTINUATION floods (CVE-2024-28182 class): the library's continuation
 *    limit, and decoded header bytes bounded (request.c);
 *  - PING and SETTINGS floods (CVE-2019-9512/9515): the library's bound of
 *    queued acks;
 *  - the loop's streams are a table of fixed size: past it, REFUSED_STREAM.
 * Streams wait for the client's window behind a body buffer of one frame:
 * a connection holds at most max_concurrent_streams of them, a loop at most
 * streams_per_loop, and send_timeout ends a connection that reads nothing. */
#include "compress.h"
#include "h2.h"
#include "http2.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static h2_conn *hc_of(const sws_conn *c) {
    return (h2_conn *)c->pstate;
}

static int goaway_slot(uint32_t code) {
    switch (code) {
    case NGHTTP2_NO_ERROR:
        return SWS_H2_GA_NO_ERROR;
    case NGHTTP2_PROTOCOL_ERROR:
        return SWS_H2_GA_PROTOCOL;
    case NGHTTP2_ENHANCE_YOUR_CALM:
        return SWS_H2_GA_CALM;
    default:
        return SWS_H2_GA_OTHER;
    }
}

/* ---- the buckets ---------------------------------------------------------------- */

/* Takes a token: false when the bucket is empty, that is, when the client
 * makes us do work for nothing faster than any honest one. */
static bool bucket_take(h2_bucket *b, uint64_t now, uint32_t burst, uint32_t rate) {
    uint64_t refill = (now - b->at) * rate / 1000;
    if (refill) {
        uint64_t t = b->tokens + refill;
        b->tokens = t > burst ? burst : (uint32_t)t;
        b->at = now;
    }
    if (b->tokens == 0)
        return false;
    b->tokens--;
    return true;
}

/* A reset we sent for the client's fault, or an invalid frame (MadeYouReset:
 * Debian's 1.52 has no glitch limiter of its own). */
static void glitch(h2_conn *hc) {
    const sws_h2_config *k = &hc->w->cfg->h2;
    if (!bucket_take(&hc->glitches, tl_loop_now(hc->w->loop), k->glitch_burst, k->glitch_rate))
        h2_terminate(hc, NGHTTP2_ENHANCE_YOUR_CALM, SWS_H2_FLOOD_GLITCH);
}

/* A RST_STREAM from the client (Rapid Reset). The library's own limiter is
 * set above this one as a backstop: this one answers ENHANCE_YOUR_CALM and
 * is counted. */
static void reset_received(h2_conn *hc) {
    const sws_h2_config *k = &hc->w->cfg->h2;
    if (!bucket_take(&hc->resets, tl_loop_now(hc->w->loop), k->reset_burst, k->reset_rate))
        h2_terminate(hc, NGHTTP2_ENHANCE_YOUR_CALM, SWS_H2_FLOOD_RESET);
}

/* ---- callbacks ---------------------------------------------------------------- */

static int on_frame_recv(nghttp2_session *s, const nghttp2_frame *f, void *ud) {
    h2_conn *hc = ud;
    switch (f->hd.type) {
    case NGHTTP2_HEADERS:
    case NGHTTP2_DATA: {
        h2_stream *st = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
        if (st)
            h2_request_frame(hc, st, f);
        break;
    }
    case NGHTTP2_RST_STREAM:
        SWS_ADD(hc->w->ctr.h2_rst_recv, 1);
        reset_received(hc);
        break;
    case NGHTTP2_GOAWAY:
        SWS_ADD(hc->w->ctr.h2_goaway_recv, 1);
        break;
    default:
        break;
    }
    return 0;
}

static int on_invalid_frame(nghttp2_session *s, const nghttp2_frame *f, int err, void *ud) {
    (void)s;
    (void)f;
    (void)err;
    glitch(ud);
    return 0;
}

static int on_frame_send(nghttp2_session *s, const nghttp2_frame *f, void *ud) {
    h2_conn *hc = ud;
    if (f->hd.type == NGHTTP2_RST_STREAM) {
        SWS_ADD(hc->w->ctr.h2_rst_sent, 1);
        h2_stream *st = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
        if (st)
            st->reset_by_us = true;
        if (f->rst_stream.error_code != NGHTTP2_NO_ERROR)
            glitch(hc); /* a reset the client caused */
    } else if ((f->hd.type == NGHTTP2_HEADERS || f->hd.type == NGHTTP2_DATA) &&
               (f->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
        /* The answer is complete and the request is not (a refusal that did
         * not wait for the body): RFC 9113 8.1 lets us ask the client to
         * stop sending it, without error. Unless what is left of a declared
         * length fits one window: it is taken and dropped, so the client
         * ends its stream itself (curl 7.88, Debian 12's, takes a reset of an
         * upload it is still sending for an error, and loses the answer). */
        h2_stream *st = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
        bool short_rest = st && st->content_length != UINT64_MAX &&
                          st->content_length - st->body_in <= H2_DISCARD_MAX;
        if (st && !st->req_end && !short_rest)
            nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, f->hd.stream_id, NGHTTP2_NO_ERROR);
    } else if (f->hd.type == NGHTTP2_GOAWAY) {
        SWS_ADD(hc->w->ctr.h2_goaway_sent[goaway_slot(f->goaway.error_code)], 1);
    }
    return 0;
}

/* ---- closed streams, and frames the library lets through ----------------------- */

static void closed_keep(h2_conn *hc, int32_t id, bool by_us) {
    hc->closed_id[hc->closed_next] = id;
    hc->closed_by_us[hc->closed_next] = by_us;
    hc->closed_next = (uint8_t)((hc->closed_next + 1) % H2_CLOSED_KEPT);
}

/* -1: not remembered; 0: closed by the client (or both ends); 1: reset by us. */
static int closed_how(const h2_conn *hc, int32_t id) {
    for (int k = 0; k < H2_CLOSED_KEPT; k++)
        if (hc->closed_id[k] == id)
            return hc->closed_by_us[k];
    return -1;
}

static int on_stream_close(nghttp2_session *s, int32_t id, uint32_t code, void *ud) {
    (void)code;
    h2_stream *st = nghttp2_session_get_stream_user_data(s, id);
    closed_keep(ud, id, !st || st->reset_by_us);
    if (st) {
        st->closed = true;
        nghttp2_session_set_stream_user_data(s, id, NULL);
        h2_stream_free(ud, st);
    }
    return 0;
}

/* ---- the connection's deadline ---------------------------------------------------- */

/* The connection moved (a frame came, or answers went out): idle, it may
 * stay keepalive_timeout; with streams, send_timeout from now, or as long as
 * a scenario said it waits (sws_ex_wait). */
void h2_progress(sws_worker *w, h2_conn *hc) {
    uint64_t now = tl_loop_now(w->loop);
    if (!hc->nstreams) {
        hc->c->deadline = now + w->cfg->keepalive_timeout_ms;
        return;
    }
    uint64_t until = now + w->cfg->send_timeout_ms;
    hc->c->deadline = until > hc->wait_until ? until : hc->wait_until;
}

/* ---- the session -------------------------------------------------------------- */

static nghttp2_option *session_options(const sws_worker *w) {
    const sws_h2_config *k = &w->cfg->h2;
    nghttp2_option *o;
    if (nghttp2_option_new(&o) != 0)
        return NULL;
    nghttp2_option_set_no_auto_window_update(o, 1);
    nghttp2_option_set_no_closed_streams(o, 1);
    nghttp2_option_set_max_outbound_ack(o, k->max_queued_acks);
    nghttp2_option_set_stream_reset_rate_limit(o, 2 * (uint64_t)k->reset_burst,
                                               2 * (uint64_t)k->reset_rate);
    nghttp2_option_set_max_continuations(o, k->max_continuations);
    nghttp2_option_set_max_deflate_dynamic_table_size(o, 4096);
    return o;
}

static bool h2_attach(sws_worker *w, sws_conn *c) {
    h2_loop *L = h2_loop_of(w);
    if (!L->blocks.size) { /* out_cap is known once the scenarios are (worker.c) */
        L->blocks.size = w->out_cap;
        L->block_units = (w->out_cap + H2_UNIT - 1) / H2_UNIT;
        uint64_t cap = w->cfg->h2.loop_buffer / w->out_cap;
        cap = cap < 16 ? 16 : cap > L->n ? L->n : cap;
        L->units_cap = (uint32_t)cap * L->block_units;
    }
    h2_conn *hc = calloc(1, sizeof(*hc));
    nghttp2_option *o = session_options(w);
    if (hc)
        h2_mem_session_init(&hc->mems, &L->mem);
    if (!hc || !o || nghttp2_session_server_new3(&hc->s, L->cbs, hc, o, &hc->mems.mem) != 0) {
        nghttp2_option_del(o);
        free(hc);
        return false;
    }
    nghttp2_option_del(o);
    hc->w = w;
    hc->c = c;
    hc->scan_skip = SWS_H2_PREFACE_LEN; /* the preface is no frame */
    hc->scan_need = 9;
    uint64_t now = tl_loop_now(w->loop);
    hc->glitches = (h2_bucket){w->cfg->h2.glitch_burst, now};
    hc->resets = (h2_bucket){w->cfg->h2.reset_burst, now};
    c->pstate = hc;
    const sws_h2_config *k = &w->cfg->h2;
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, k->max_concurrent_streams},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, k->window},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, w->limits.header_bytes},
        {NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1},
        /* RFC 8441 3: extended CONNECT, when a route can tunnel (a proxy
         * with [proxy] upgrade); the last entry, left out otherwise. */
        {NGHTTP2_SETTINGS_ENABLE_CONNECT_PROTOCOL, 1},
    };
    size_t niv = sizeof(iv) / sizeof(iv[0]) - (w->h2_connect ? 0 : 1);
    if (nghttp2_submit_settings(hc->s, NGHTTP2_FLAG_NONE, iv, niv) != 0)
        return false;
    SWS_ADD(w->ctr.h2_conns, 1);
    SWS_ADD(w->ctr.h2_active, 1);
    c->deadline = tl_loop_now(w->loop) + w->cfg->keepalive_timeout_ms;
    return true;
}

void h2_terminate(h2_conn *hc, uint32_t code, int flood) {
    if (hc->dead)
        return;
    hc->dead = true;
    if (flood >= 0)
        SWS_ADD(hc->w->ctr.h2_floods[flood], 1);
    nghttp2_session_terminate_session(hc->s, code);
}

void h2_reset(h2_conn *hc, h2_stream *st, uint32_t code) {
    if (!st->closed)
        nghttp2_submit_rst_stream(hc->s, NGHTTP2_FLAG_NONE, st->id, code);
}

/* The bytes of a failed mem_recv: the library has queued what it sends
 * (GOAWAY) for its own errors; for ours and floods we do. */
static void recv_failed(h2_conn *hc, int rc) {
    switch (rc) {
    case NGHTTP2_ERR_FLOODED:
        h2_terminate(hc, NGHTTP2_ENHANCE_YOUR_CALM, SWS_H2_FLOOD_ACKS);
        break;
    case NGHTTP2_ERR_TOO_MANY_CONTINUATIONS:
        h2_terminate(hc, NGHTTP2_ENHANCE_YOUR_CALM, SWS_H2_FLOOD_HEADERS);
        break;
    case NGHTTP2_ERR_CALLBACK_FAILURE:
        h2_terminate(hc, NGHTTP2_INTERNAL_ERROR, -1);
        break;
    case NGHTTP2_ERR_BAD_CLIENT_MAGIC:
        /* Not HTTP/2 after all: nothing is owed, not even a GOAWAY. */
        hc->dead = true;
        sws_conn_close(hc->w, hc->c);
        return;
    default:
        h2_terminate(hc, NGHTTP2_PROTOCOL_ERROR, -1);
        break;
    }
    sws_conn_stop_reading(hc->w, hc->c);
}

/* ---- the frames, paced ------------------------------------------------------------ */

/* The library is fed frame by frame where RFC 9113 asks for a check it leaves
 * to us (it keeps no closed stream and reads no RFC 7540 priority): each
 * DATA, HEADERS and PRIORITY frame is judged once its header (and priority
 * fields) are in and before the library has taken their last byte, with the
 * library's state as of every frame before it. Other frames pass in one go. */

static uint32_t be24(const uint8_t *b) {
    return (uint32_t)b[0] << 16 | (uint32_t)b[1] << 8 | b[2];
}
static int32_t be31(const uint8_t *b) {
    return (int32_t)(((uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3]) &
                     0x7fffffffu);
}

/* A frame's header is in (scan_buf[0..9)): the checks that need only it. */
static void judge_header(h2_conn *hc, const uint8_t *b) {
    nghttp2_session *s = hc->s;
    uint32_t len = be24(b);
    uint8_t type = b[3], flags = b[4];
    int32_t id = be31(b + 5);
    switch (type) {
    case NGHTTP2_PRIORITY:
        if (id == 0) /* 6.3 */
            h2_terminate(hc, NGHTTP2_PROTOCOL_ERROR, -1);
        break;
    case NGHTTP2_DATA:
        /* An empty DATA frame that does not end its stream moves nothing:
         * a flood of them (CVE-2019-9518) is a glitch each. */
        if (len == 0 && !(flags & NGHTTP2_FLAG_END_STREAM))
            glitch(hc);
        /* 5.1, 6.1: DATA on a stream the client closed (or both ends) is a
         * stream error; on one we reset it is ignored. */
        if (id > 0 && id <= hc->max_id && !nghttp2_session_find_stream(s, id) &&
            closed_how(hc, id) == 0)
            nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, id, NGHTTP2_STREAM_CLOSED);
        break;
    case NGHTTP2_HEADERS:
        if (id > hc->max_id && (id & 1)) {
            hc->max_id = id;
        } else if (id > 0 && !nghttp2_session_find_stream(s, id)) {
            /* Not a new stream id, and no open stream. One the client
             * closed (or both ends): a stream error STREAM_CLOSED (5.1); one
             * we reset: ignored (5.1); idle below one opened, or closed long
             * ago: a connection error PROTOCOL_ERROR (5.1.1). */
            int how = closed_how(hc, id);
            if (how == 0)
                nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, id, NGHTTP2_STREAM_CLOSED);
            else if (how < 0)
                h2_terminate(hc, NGHTTP2_PROTOCOL_ERROR, -1);
        }
        break;
    default:
        break;
    }
}

/* The priority fields are in: a stream cannot depend on itself (5.3.1). */
static void judge_priority(h2_conn *hc, const uint8_t *b, uint32_t pad) {
    int32_t id = be31(b + 5);
    if (id == 0 || be31(b + 9 + pad) != id)
        return;
    if (b[3] == NGHTTP2_HEADERS)
        hc->bad_prio = id; /* h2_on_begin_headers resets it: HPACK stays in step */
    else
        nghttp2_submit_rst_stream(hc->s, NGHTTP2_FLAG_NONE, id, NGHTTP2_PROTOCOL_ERROR);
}

/* How many of the avail bytes at p go to the library next, and what is
 * judged before they go. */
static uint32_t pace(h2_conn *hc, const uint8_t *p, uint32_t avail) {
    if (hc->scan_skip)
        return avail < hc->scan_skip ? avail : hc->scan_skip;
    uint32_t want = hc->scan_need - hc->scan_have;
    uint32_t k = want > 1 ? (avail < want - 1 ? avail : want - 1) : 1;
    memcpy(hc->scan_buf + hc->scan_have, p, k);
    hc->scan_have = (uint8_t)(hc->scan_have + k);
    const uint8_t *b = hc->scan_buf;
    if (hc->scan_have >= 4 && hc->scan_need == 9 && b[3] != NGHTTP2_DATA &&
        b[3] != NGHTTP2_HEADERS && b[3] != NGHTTP2_PRIORITY) {
        /* Nothing to judge: the rest of the header and the payload pass. */
        hc->scan_skip = 9u - hc->scan_have + be24(b);
        hc->scan_have = 0;
        return k;
    }
    if (hc->scan_have < hc->scan_need)
        return k;
    /* Its last byte is here and not yet fed. */
    uint32_t len = be24(b);
    if (hc->scan_need == 9) {
        judge_header(hc, b);
        uint32_t pad = b[3] == NGHTTP2_HEADERS && (b[4] & NGHTTP2_FLAG_PADDED) ? 1 : 0;
        bool prio = (b[3] == NGHTTP2_PRIORITY && len == 5) ||
                    (b[3] == NGHTTP2_HEADERS && (b[4] & NGHTTP2_FLAG_PRIORITY) && len >= pad + 5);
        if (prio) {
            hc->scan_need = (uint8_t)(9 + pad + 5);
            return k;
        }
        hc->scan_skip = len;
    } else {
        uint32_t pad = hc->scan_need - 14;
        judge_priority(hc, b, pad);
        hc->scan_skip = len - pad - 5;
    }
    hc->scan_need = 9;
    hc->scan_have = 0;
    return k;
}

static bool h2_input(sws_worker *w, sws_conn *c, const char *data, uint32_t len, uint32_t *off) {
    h2_conn *hc = hc_of(c);
    if (hc->dead) {
        *off = len;
        return true;
    }
    hc->busy++;
    bool fed = !hc->carry_len || h2_carry_feed(hc);
    hc->busy--;
    if (!fed)
        return false;
    hc->busy++;
    const uint8_t *d = (const uint8_t *)data;
    ssize_t n = 0;
    while (*off < len && !hc->dead && !hc->carry_len) {
        bool skipping = hc->scan_skip > 0;
        uint32_t k = pace(hc, d + *off, len - *off);
        if (hc->dead)
            break;
        n = nghttp2_session_mem_recv(hc->s, d + *off, k);
        hc->stirred = true;
        if (n < 0)
            break;
        *off += (uint32_t)n;
        if (skipping)
            hc->scan_skip -= (uint32_t)n; /* a pause takes less: the rest comes again */
    }
    h2_request_flush(hc);
    hc->busy--;
    if (n < 0) {
        recv_failed(hc, (int)n);
        *off = len;
        return true;
    }
    if (hc->dead) {
        *off = len;
        sws_conn_stop_reading(w, c);
        return true;
    }
    h2_progress(w, hc); /* any frame is the client's sign of life */
    return hc->carry_len == 0;
}

/* Copies what fits of p[0..n) into the output; the rest is kept (spill),
 * since the library's buffer holds until its next mem_send. */
static bool put(sws_worker *w, sws_conn *c, h2_conn *hc, const uint8_t *p, size_t n) {
    size_t room = w->out_cap - c->olen;
    size_t k = n < room ? n : room;
    memcpy(c->out + c->olen, p, k);
    c->olen += (uint32_t)k;
    hc->spill = k < n ? p + k : NULL;
    hc->spill_len = n - k;
    return k == n;
}

/* Every stream whose data waited for room in the output is resumed. */
static void resume_out_waiters(h2_conn *hc) {
    for (h2_stream *st = hc->streams; st && hc->out_wait; st = st->next) {
        if (st->out_wait) {
            st->out_wait = false;
            hc->out_wait--;
            nghttp2_session_resume_data(hc->s, st->id);
        }
    }
}

/* Streams whose body buffer emptied: their scenario adds (its `more`). */
static bool call_more(sws_worker *w, h2_conn *hc) {
    bool any = false;
    for (h2_stream *st = hc->streams, *next; st; st = next) {
        next = st->next;
        if (!st->want_more)
            continue;
        st->want_more = false;
        if (st->pending && !st->ended && st->sc->ops->more) {
            sws_sc_more(w, st->sc, &st->ex);
            any = true;
        }
    }
    return any;
}

/* The session's frames into the output, as far as it has room. Writes stop
 * at out_cap; what the library had serialised beyond it waits in spill. */
static void fill(sws_worker *w, sws_conn *c, h2_conn *hc) {
    for (int round = 0; round < 3 && !sws_phase_gone(c->phase); round++) {
        /* Scenarios whose streams emptied their buffer (or were given one)
         * add first: they may be all the session would send. */
        if (hc->more_due) {
            hc->more_due = false;
            call_more(w, hc);
            if (sws_phase_gone(c->phase))
                return;
        }
        /* Streams that waited for this room go first: the library does not
         * count them as wanting to write until they are resumed. */
        if (!hc->spill_len && w->out_cap - c->olen > 9 + H2_MIN_DATA)
            resume_out_waiters(hc);
        if (!hc->spill_len && !nghttp2_session_want_write(hc->s)) {
            if (hc->more_due)
                continue;
            break;
        }
        if (!sws_conn_out_take(w, c)) {
            sws_conn_close(w, c);
            return;
        }
        if (hc->spill_len && !put(w, c, hc, hc->spill, hc->spill_len))
            return;
        while (w->out_cap - c->olen > 64) {
            const uint8_t *p;
            ssize_t n = nghttp2_session_mem_send(hc->s, &p);
            if (n < 0) {
                sws_conn_close(w, c);
                return;
            }
            if (n == 0)
                break;
            hc->stirred = true;
            h2_mem_session_busy(&hc->mems); /* a frame was written there */
            if (!put(w, c, hc, p, (size_t)n))
                return;
        }
        if (!hc->more_due)
            break;
    }
    if (!sws_phase_gone(c->phase) && !nghttp2_session_want_read(hc->s) &&
        !nghttp2_session_want_write(hc->s) && !hc->spill_len) {
        /* GOAWAY sent and every stream done (or the session failed). */
        sws_conn_last(w, c, false);
    }
}

static void h2_fill(sws_worker *w, sws_conn *c) {
    h2_conn *hc = hc_of(c);
    if (hc->busy)
        return;
    uint32_t before = c->olen;
    hc->busy++;
    fill(w, c, hc);
    hc->busy--;
    /* Answers moving out are progress too: a client that reads a long body
     * with a window large enough to send nothing meanwhile is not idle. */
    if (c->olen > before && hc->nstreams && !sws_phase_gone(c->phase))
        h2_progress(w, hc);
}

/* A scenario added to an answer, ended it or reset it: the connection
 * writes what the session has once the turn's completions are done. Never
 * now: the write may close streams, and a stream must not be freed while
 * the scenario that moved it is still in its call (the proxy kicks the
 * exchange after it ended it). */
void h2_kick(sws_worker *w, h2_conn *hc) {
    h2_loop *L = h2_loop_of(w);
    if (hc->kicked || sws_phase_gone(hc->c->phase))
        return;
    hc->kicked = true;
    L->kick[L->nkick++] = hc->c->index;
}

static void h2_turn_done(sws_worker *w) {
    h2_loop *L = h2_loop_of(w);
    for (uint32_t k = 0; k < L->nkick; k++) {
        sws_conn *c = &w->slots[L->kick[k]];
        h2_conn *hc = c->proto == &sws_http2_conn ? hc_of(c) : NULL;
        if (!hc || !hc->kicked)
            continue; /* freed meanwhile; its slot may hold another connection */
        hc->kicked = false;
        if (!sws_phase_gone(c->phase)) {
            sws_conn_pump(w, c);
            c->proto->settle(w, c);
        }
    }
    L->nkick = 0;
}

static bool h2_partial(const sws_conn *c) {
    const h2_conn *hc = hc_of(c);
    return hc && hc->nstreams > 0;
}

static void h2_settle(sws_worker *w, sws_conn *c) {
    (void)w;
    (void)c;
}

/* The transport calls it for HTTP/1.1's pending answers only. */
static void h2_drained(sws_worker *w, sws_conn *c) {
    (void)w;
    (void)c;
}

static bool h2_timeout(sws_worker *w, sws_conn *c) {
    (void)w;
    (void)c;
    return false;
}

/* The final GOAWAY: the streams begun so far are served, none after. */
static void goaway_final(h2_conn *hc, uint32_t code) {
    if (hc->goaway_final || hc->dead)
        return;
    hc->goaway_final = true;
    nghttp2_submit_goaway(hc->s, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(hc->s),
                          code, NULL, 0);
}

/* Draining, the graceful way (RFC 9113 6.8): a GOAWAY with the largest
 * stream id first, so that a client stops opening streams; after the drain's
 * idle grace (at least one round trip later) the GOAWAY with the last stream
 * id taken; the connection closes once those streams are done. */
static void h2_drain(sws_worker *w, sws_conn *c, bool force) {
    h2_conn *hc = hc_of(c);
    if (force) {
        sws_conn_close(w, c);
        return;
    }
    if (!hc->notice_sent && !hc->dead) {
        hc->notice_sent = true;
        hc->notice_at = tl_loop_now(w->loop);
        nghttp2_submit_shutdown_notice(hc->s);
    }
}

static void h2_sweep(sws_worker *w, sws_conn *c, uint64_t now) {
    h2_conn *hc = hc_of(c);
    if (c->phase != SWS_PH_OPEN) {
        if (now >= c->deadline)
            sws_conn_close(w, c);
        return;
    }
    if (w->draining) {
        h2_drain(w, c, false);
        if (now >= sws_drain_grace_end(w) && now >= hc->notice_at + 100)
            goaway_final(hc, NGHTTP2_NO_ERROR);
        if (hc->goaway_final && hc->nstreams == 0 && !hc->spill_len &&
            !nghttp2_session_want_write(hc->s)) {
            c->deadline = now + 2000;
            sws_conn_last(w, c, false);
            return;
        }
    }
    /* Quiet for a whole sweep, with no stream and nothing queued: the
     * session's frame buffer holds nothing, and its pages go back. */
    if (!hc->stirred && hc->nstreams == 0 && !hc->spill_len && !nghttp2_session_want_write(hc->s))
        h2_mem_session_idle(&hc->mems);
    hc->stirred = false;
    if (now < c->deadline)
        return;
    /* Idle past keepalive_timeout, or streams that made no progress within
     * send_timeout (a client that neither reads nor sends): GOAWAY, and the
     * close once it is written (or 2 s later). */
    goaway_final(hc, NGHTTP2_NO_ERROR);
    hc->dead = true;
    c->deadline = now + 2000;
    sws_conn_last(w, c, false);
}

static void h2_freed(sws_worker *w, sws_conn *c) {
    h2_conn *hc = hc_of(c);
    if (!hc)
        return;
    /* Streams the session still holds: each scenario lets go of its own. */
    while (hc->streams)
        h2_stream_free(hc, hc->streams);
    nghttp2_session_del(hc->s);
    sws_lend_give(&h2_loop_of(w)->blocks, hc->carry);
    free(hc);
    c->pstate = NULL;
    SWS_ADD(w->ctr.h2_active, (uint64_t)-1);
}

static void h2_reload(sws_worker *w, sws_conn *c) {
    (void)w;
    (void)c;
}

#define H2_BLOCK_CACHE 16

static int h2_table_init(sws_worker *w) {
    h2_loop *L = calloc(1, sizeof(*L));
    if (!L)
        return -ENOMEM;
    w->h2 = L;
    h2_mem_init(&L->mem);
    L->n = w->cfg->h2.streams_per_loop;
    L->table = calloc(L->n, sizeof(*L->table));
    L->free_idx = malloc(L->n * sizeof(*L->free_idx));
    if (!L->table || !L->free_idx)
        return -ENOMEM;
    for (uint32_t i = 0; i < L->n; i++)
        L->free_idx[i] = L->n - 1 - i;
    L->nfree = L->n;
    /* A connection's slot may be freed and reused, and kicked again, in one turn. */
    L->kick = malloc(2 * w->nslots * sizeof(*L->kick));
    L->waiters = malloc(L->n * sizeof(*L->waiters));
    if (!L->kick || !L->waiters)
        return -ENOMEM;
    if (sws_lend_init(&L->blocks, 0, L->n + w->nslots) < 0 ||
        sws_lend_init(&L->stores, H2_STORE, L->n) < 0)
        return -ENOMEM;
    for (int k = 0; k < H2_SMALL_CLASSES; k++)
        if (sws_lend_init(&L->small[k], (size_t)H2_UNIT << k, L->n) < 0)
            return -ENOMEM;
    if (nghttp2_session_callbacks_new(&L->cbs) != 0)
        return -ENOMEM;
    nghttp2_session_callbacks *cb = L->cbs;
    nghttp2_session_callbacks_set_on_begin_headers_callback(cb, h2_on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback2(cb, h2_on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, h2_on_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
    nghttp2_session_callbacks_set_on_frame_send_callback(cb, on_frame_send);
    nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(cb, on_invalid_frame);
    nghttp2_session_callbacks_set_send_data_callback(cb, h2_send_data);
    w->nexchanges = w->nslots + L->n;
    return 0;
}

static void h2_table_free(sws_worker *w) {
    h2_loop *L = h2_loop_of(w);
    if (!L)
        return;
    for (uint32_t k = 0; k < w->nslots && w->slots; k++) {
        sws_conn *c = &w->slots[k];
        if (c->pstate && c->proto == &sws_http2_conn)
            h2_freed(w, c);
    }
    if (L->cbs)
        nghttp2_session_callbacks_del(L->cbs);
    h2_mem_fini(&L->mem);
    sws_lend_fini(&L->blocks);
    sws_lend_fini(&L->stores);
    for (int k = 0; k < H2_SMALL_CLASSES; k++)
        sws_lend_fini(&L->small[k]);
    free(L->table);
    free(L->free_idx);
    free(L->kick);
    free(L->waiters);
    free(L->scratch);
    free(L->nva);
    free(L);
    w->h2 = NULL;
}

static void h2_trim(sws_worker *w) {
    h2_loop *L = h2_loop_of(w);
    sws_lend_trim(&L->blocks, H2_BLOCK_CACHE);
    sws_lend_trim(&L->stores, H2_BLOCK_CACHE);
    for (int k = 0; k < H2_SMALL_CLASSES; k++)
        sws_lend_trim(&L->small[k], H2_BLOCK_CACHE);
    h2_mem_trim(&L->mem);
}

const sws_conn_proto sws_http2_conn = {
    .ex = &sws_h2_proto,
    .attach = h2_attach,
    .input = h2_input,
    .fill = h2_fill,
    .sweep = h2_sweep,
    .drain = h2_drain,
    .turn_done = h2_turn_done,
    .partial = h2_partial,
    .settle = h2_settle,
    .drained = h2_drained,
    .timeout = h2_timeout,
    .freed = h2_freed,
    .reload = h2_reload,
    .table_init = h2_table_init,
    .table_free = h2_table_free,
    .trim = h2_trim,
};
