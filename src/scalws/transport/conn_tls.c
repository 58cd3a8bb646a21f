/* The TLS pump of a tls listener's connection: ciphertext from the socket
 * into the engine, plaintext out of it into the protocol (held in the stash
 * when the output is full), answers sealed into the wire buffer and written.
 * conn.c calls it at the same points it handles a plaintext connection's
 * bytes; the engine itself is src/tls/ (memory BIOs, so both backends). */
#include "conn_tls.h"

#include <stdlib.h>
#include <string.h>

/* The stash and wire buffers of a tls connection come from the same pool
 * (room for three per slot with a tls listener), so TLS allocates nothing per
 * request either. */
static void buf_give(sws_worker *w, char **b) {
    sws_lend_give(&w->outbuf, *b);
    *b = NULL;
}

/* Only once no write can be in flight: the engine and its buffers go. */
void conn_tls_release(sws_worker *w, sws_conn *c) {
    if (!c->tls)
        return;
    sws_tls_conn_free(&c->tls->eng);
    buf_give(w, &c->tls->wire);
    buf_give(w, &c->tls->stash);
    free(c->tls);
    c->tls = NULL;
}

static void tls_pause(sws_worker *w, sws_conn *c) {
    if (!c->recv_paused) {
        c->recv_paused = true;
        if (c->recv_armed)
            tl_cancel(w->loop, c->recv_op);
    }
}

void conn_tls_failed(sws_worker *w, sws_conn *c) {
    SWS_ADD(w->ctr.tls_failed[c->tls->eng.fail < SWS_TLS_FAIL_N ? c->tls->eng.fail : 0], 1);
    /* The alert OpenSSL queued (if any) goes out at flush, then the close;
     * nothing further is read. */
    c->olen = 0;
    conn_last(w, c, false);
    tls_pause(w, c);
}

/* Decrypts and parses what the engine holds, until it wants more input, the
 * output is full (a write completion resumes: pump) or the connection ends. */
static void tls_pump(sws_worker *w, sws_conn *c) {
    while (c->phase == SWS_PH_OPEN && !c->tls->stash) {
        if (c->answer_pending || c->olen + w->resp_max > w->out_cap) {
            tls_pause(w, c);
            return;
        }
        bool was = c->tls->eng.established;
        int n = sws_tls_read(&c->tls->eng, w->tls_plain, SWS_TLS_PLAIN);
        if (!was && c->tls->eng.established) {
            SWS_ADD(w->ctr.tls_handshakes, 1);
            if (sws_tls_resumed(&c->tls->eng))
                SWS_ADD(w->ctr.tls_resumed, 1);
            if (c->tls->eng.acme_challenge) {
                /* RFC 8737: the handshake was the whole validation; no
                 * application data, the close follows its last flight. */
                conn_last(w, c, false);
                tls_pause(w, c);
                return;
            }
            /* From here the request's own timeout runs. */
            c->deadline = tl_loop_now(w->loop) + w->cfg->header_timeout_ms;
            if (!c->chosen &&
                !sws_conn_switch(w, c, sws_tls_alpn_h2(&c->tls->eng) ? w->h2_proto : c->proto))
                return;
        }
        if (n > 0) {
            uint32_t off = 0;
            if (!c->proto->input(w, c, w->tls_plain, (uint32_t)n, &off)) {
                if (!(c->tls->stash = sws_lend_take(&w->outbuf))) {
                    sws_conn_close(w, c);
                    return;
                }
                c->tls->stash_len = (uint32_t)n - off;
                c->tls->stash_off = 0;
                memcpy(c->tls->stash, w->tls_plain + off, c->tls->stash_len);
                tls_pause(w, c);
                return;
            }
            continue;
        }
        if (n == SWS_TLS_EOF && c->proto->eof)
            c->proto->eof(w, c);
        else if (n == SWS_TLS_EOF) /* close_notify: answer what was asked, then close */
            conn_last(w, c, false);
        else if (n < 0)
            conn_tls_failed(w, c);
        return;
    }
}

void conn_tls_input(sws_worker *w, sws_conn *c, const char *data, uint32_t len) {
    if (c->phase != SWS_PH_OPEN)
        return;
    if (sws_tls_feed(&c->tls->eng, data, len) < 0) {
        sws_conn_close(w, c);
        return;
    }
    tls_pump(w, c);
}

/* After a write: the stash first, then the engine, then receive again once
 * nothing waits. */
void conn_tls_resume(sws_worker *w, sws_conn *c) {
    if (c->tls->stash) {
        uint32_t off = c->tls->stash_off;
        if (c->phase == SWS_PH_OPEN &&
            !c->proto->input(w, c, c->tls->stash, c->tls->stash_len, &off)) {
            c->tls->stash_off = off;
            return;
        }
        buf_give(w, &c->tls->stash);
    }
    tls_pump(w, c);
    if (c->phase == SWS_PH_OPEN && !c->tls->stash && c->recv_paused && !c->answer_pending &&
        c->olen + w->resp_max <= w->out_cap) {
        c->recv_paused = false;
        conn_arm_recv(w, c);
    }
}

/* Seals the plaintext answers and writes what the engine has to send. True
 * when a write is in flight (or the connection closed); false when all is
 * sent and flush's ending (last answer, linger, drain) applies. */
bool conn_tls_flush(sws_worker *w, sws_conn *c) {
    sws_tls_conn *t = &c->tls->eng;
    if (c->phase == SWS_PH_LINGERING)
        return false; /* the write side is shut */
    /* Bounded: plaintext is sealed only while less than a buffer of records
     * waits, so a client that does not read holds at most two buffers. */
    if (c->olen && t->established && !t->failed && sws_tls_pending(t) < w->out_cap) {
        uint32_t done = 0;
        while (done < c->olen) {
            int n = sws_tls_write(t, c->out + done, c->olen - done);
            if (n <= 0) {
                sws_conn_close(w, c);
                return true;
            }
            done += (uint32_t)n;
        }
        c->olen = 0;
    }
    if (c->phase != SWS_PH_OPEN && c->olen == 0 && !c->answer_pending)
        sws_tls_close_notify(t);
    if (sws_tls_pending(t) == 0) {
        buf_give(w, &c->tls->wire);
        return c->olen > 0;
    }
    if (!c->tls->wire && !(c->tls->wire = sws_lend_take(&w->outbuf))) {
        sws_conn_close(w, c);
        return true;
    }
    size_t k = sws_tls_take(t, c->tls->wire, w->out_cap);
    tl_op op;
    if (tl_write(w->loop, c->h, c->tls->wire, k, sws_token(c->index, SWS_T_WRITE), &op) < 0) {
        sws_conn_close(w, c);
        return true;
    }
    c->wlen = (uint32_t)k;
    c->write_inflight = true;
    c->wdeadline = tl_loop_now(w->loop) + w->cfg->send_timeout_ms;
    return true;
}
