/* A request's body over HTTP/3 into the scenario that takes it (the proxy),
 * with QUIC's flow control as the back-pressure: what its request_room has
 * no room for is held on the stream, and the stream's and connection's
 * credit (MAX_STREAM_DATA, MAX_DATA) comes back only as the scenario takes
 * the bytes, so a client is never more than one stream window
 * ([http3] stream_window) ahead of a slow scenario. A body past [limits]
 * body_size is answered 413 (or, answered already, no longer read), and a
 * request the client gives up ends its exchange. What must not run inside
 * nghttp3's or ngtcp2's callbacks (request_flush after a packet's bytes,
 * STOP_SENDING, a reset) is marked on the stream and done by h3_body_pump
 * once the packet is read. */
#include "h3.h"

#include "sws.h"

#include <stdlib.h>
#include <string.h>

/* Passes over the streams per pump: a hook that wakes a stream already
 * passed (sws_ex_more from request_flush) is served without waiting for the
 * next packet, and a hook that always does cannot spin the loop. */
#define PUMP_PASSES 4

void h3_credit(h3_conn *hc, int64_t id, size_t n) {
    ngtcp2_conn_extend_max_stream_offset(hc->q, id, n);
    ngtcp2_conn_extend_max_offset(hc->q, n);
}

bool h3_body_taking(const h3_stream *st) {
    /* A tunnel's bytes are taken while it is answered. */
    return st->took && !st->refuse && (!st->answering || st->tunnel) && !st->stopped &&
           !st->stop_due && !st->cancel_due;
}

/* The held bytes are dropped: their credit back to the client. */
static void drop_held(h3_conn *hc, h3_stream *st) {
    if (st->held_len)
        h3_credit(hc, st->id, st->held_len);
    hc->ep->st.body_held -= st->held_len;
    st->held_len = st->held_off = 0;
}

/* Bytes to the scenario as far as its room goes: how many it took, their
 * credit given back. A refusal of its hook answers the request (the rest
 * is the caller's to drop). */
static size_t give(h3_conn *hc, h3_stream *st, const uint8_t *d, size_t len) {
    sws_worker *w = hc->ep->s.w;
    size_t room = st->sc->ops->request_room(w, st->sc, &st->ex);
    size_t k = len < room ? len : room;
    if (k == 0)
        return 0;
    int r = st->sc->ops->request_body(w, st->sc, &st->ex, (const char *)d, k);
    h3_credit(hc, st->id, k);
    st->flush = true;
    hc->body_due = true;
    if (r > 0)
        h3_request_refuse(hc, st, r);
    return k;
}

/* Keeps bytes the scenario has no room for. Flow control bounds them by
 * one stream window: false past it (cannot happen) or out of memory. */
static bool hold(h3_conn *hc, h3_stream *st, const uint8_t *d, size_t len) {
    if (st->held_off + st->held_len + len > st->held_cap && st->held_off) {
        memmove(st->held, st->held + st->held_off, st->held_len);
        st->held_off = 0;
    }
    size_t need = (size_t)st->held_len + len;
    if (need > hc->stream_window)
        return false;
    if (need > st->held_cap) {
        size_t cap = st->held_cap ? st->held_cap : 16384;
        while (cap < need)
            cap *= 2;
        if (cap > hc->stream_window)
            cap = hc->stream_window;
        char *b = realloc(st->held, cap);
        if (!b)
            return false;
        st->held = b;
        st->held_cap = (uint32_t)cap;
    }
    memcpy(st->held + st->held_off + st->held_len, d, len);
    st->held_len += (uint32_t)len;
    hc->ep->st.body_held += len;
    return true;
}

void h3_body_recv(h3_conn *hc, h3_stream *st, const uint8_t *data, size_t len) {
    st->body_in += len;
    /* A tunnel's bytes are no body: body_size does not bound them. */
    if (st->body_in > hc->ep->s.limits.body_size && !st->tunnel && !st->stopped && !st->stop_due) {
        /* RFC 9110 15.5.14; an answer given from the head stands, and the
         * rest is not read either way. */
        if (!st->answering)
            h3_request_refuse(hc, st, 413);
        h3_body_stop(hc, st);
    }
    if (!h3_body_taking(st)) {
        h3_credit(hc, st->id, len); /* nobody takes it: dropped */
        return;
    }
    /* Held bytes go first: these wait behind them. */
    size_t k = st->held_len ? 0 : give(hc, st, data, len);
    if (k == len)
        return;
    if (!h3_body_taking(st)) {
        h3_credit(hc, st->id, len - k);
    } else if (!hold(hc, st, data + k, len - k)) {
        h3_credit(hc, st->id, len - k);
        h3_request_refuse(hc, st, 500);
    }
}

static void end_now(h3_conn *hc, h3_stream *st) {
    st->end_due = false;
    sws_worker *w = hc->ep->s.w;
    int r = st->sc->ops->request_end(w, st->sc, &st->ex);
    if (r > 0)
        h3_request_refuse(hc, st, r);
    else
        h3_answer_request(hc, st);
}

void h3_body_end(h3_conn *hc, h3_stream *st) {
    if (st->held_len) {
        st->end_due = true; /* after the held bytes (h3_body_pump) */
        return;
    }
    end_now(hc, st);
}

void h3_body_stop(h3_conn *hc, h3_stream *st) {
    if (st->stopped || st->stop_due)
        return;
    st->stop_due = true;
    hc->body_due = true;
}

void h3_request_cancelled(h3_conn *hc, int64_t id) {
    for (h3_stream *st = hc->streams; st; st = st->next) {
        if (st->id == id) {
            st->cancel_due = true;
            hc->body_due = true;
            return;
        }
    }
}

void h3_request_wake(h3_stream *st) {
    if (!st->held_len && !st->end_due)
        return;
    st->feed = true;
    st->hc->body_due = true;
}

/* Held bytes to the scenario while it has room. */
static void feed(h3_conn *hc, h3_stream *st) {
    while (st->held_len && h3_body_taking(st)) {
        size_t k = give(hc, st, (const uint8_t *)st->held + st->held_off, st->held_len);
        if (k == 0)
            break;
        st->held_off += (uint32_t)k;
        st->held_len -= (uint32_t)k;
        hc->ep->st.body_held -= k;
    }
    if (!h3_body_taking(st))
        drop_held(hc, st);
    if (!st->held_len)
        st->held_off = 0;
}

/* The client gave the request up (reset its side, or wants no answer): an
 * exchange that still needed request bytes cannot be answered, so the
 * stream is reset our way too (its close ends the exchange: conn_end). An
 * answer given already (from the head, a refusal, or the whole request
 * read) is left to finish or fail by itself. */
static void cancel(h3_conn *hc, h3_stream *st) {
    bool needed = h3_body_taking(st) || st->end_due;
    st->cancel_due = false;
    st->stopped = true;
    st->end_due = false;
    drop_held(hc, st);
    if (needed)
        ngtcp2_conn_shutdown_stream(hc->q, st->id, NGHTTP3_H3_REQUEST_CANCELLED);
}

/* RFC 9114 4.1: a complete answer without the rest of the request; the
 * client is asked to stop sending it (H3_NO_ERROR). */
static void stop(h3_conn *hc, h3_stream *st) {
    st->stop_due = false;
    if (st->stopped)
        return;
    st->stopped = true;
    st->end_due = false;
    drop_held(hc, st);
    if (st->req_end)
        return;
    if (hc->h)
        nghttp3_conn_shutdown_stream_read(hc->h, st->id);
    ngtcp2_conn_shutdown_stream_read(hc->q, st->id, NGHTTP3_H3_NO_ERROR);
}

void h3_body_pump(h3_conn *hc) {
    sws_worker *w = hc->ep->s.w;
    for (int pass = 0; pass < PUMP_PASSES && hc->body_due; pass++) {
        hc->body_due = false;
        for (h3_stream *st = hc->streams; st; st = st->next) {
            /* A reset that is the client's answer to our STOP_SENDING
             * changes nothing: stop() comes first. */
            if (st->stop_due)
                stop(hc, st);
            if (st->cancel_due)
                cancel(hc, st);
            if (st->feed) {
                st->feed = false;
                feed(hc, st);
            }
            if (st->flush) {
                st->flush = false;
                if (st->took)
                    st->sc->ops->request_flush(w, st->sc, &st->ex);
            }
            if (st->end_due && !st->held_len && h3_body_taking(st))
                end_now(hc, st);
            if (st->abort_due && st->acked == st->written) {
                st->abort_due = false;
                ngtcp2_conn_shutdown_stream(hc->q, st->id, h3_cut_code(st));
            }
        }
    }
}
