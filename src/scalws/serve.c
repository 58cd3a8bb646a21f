/* The per-core workers: each owns one turnloop loop, turns it on its own thread
 * and dispatches completions on their token (connection index << 8 | tag).
 * A connection's slot is reused only after its TL_OP_CLOSE completion, which
 * turnloop reports after every other completion of the handle: no completion
 * can reach a slot that has been handed to another connection. */
#include "access_log.h"
#include "acme_tokens.h"
#include "sws.h"

#include "reexec.h"
#include "reload.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <unistd.h>

#define SWS_CQ_BATCH 256
#define SWS_SWEEP_MS 1000

uint64_t sws_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static sws_conn *conn_of(sws_worker *w, uint64_t token) {
    uint32_t i = sws_token_index(token);
    if (i >= w->nslots || !w->conns[i] || !w->conns[i]->live)
        return NULL;
    return w->conns[i];
}

static void list_add(sws_worker *w, sws_conn *c) {
    c->prev = NULL;
    c->next = w->active;
    if (w->active)
        w->active->prev = c;
    w->active = c;
}

static void list_del(sws_worker *w, sws_conn *c) {
    if (c->prev)
        c->prev->next = c->next;
    else
        w->active = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
}

static void release(sws_worker *w, uint32_t id) {
    tl_buffer_release(w->loop, id);
    w->released++;
}

#define SWS_RECV_BUFFERS 256
#define SWS_TLS_PLAIN 16384 /* one TLS record's plaintext at most */

static void held_drop_head(sws_worker *w, sws_conn *c) {
    uint32_t i = c->hhead;
    c->hhead = w->hpool[i].next;
    if (c->hhead == SWS_NIL)
        c->htail = SWS_NIL;
    c->hcount--;
    w->hpool[i].next = w->hfree;
    w->hfree = i;
}

static void held_release_all(sws_worker *w, sws_conn *c) {
    while (c->hcount) {
        release(w, w->hpool[c->hhead].id);
        held_drop_head(w, c);
    }
}

/* Output buffers are taken when the first byte of an answer is appended and
 * given back when the last byte is written: an idle keep-alive connection
 * holds none. The free stack is trimmed by the sweep (out_trim), so a steady
 * load reuses buffers without allocating while a burst's buffers are freed
 * within two sweeps. */
#define SWS_OUT_CACHE 64

static bool out_take(sws_worker *w, sws_conn *c) {
    if (c->out)
        return true;
    if (w->out_nfree)
        c->out = w->out_free[--w->out_nfree];
    else if (!(c->out = malloc(w->out_cap)))
        return false;
    if (++w->out_used > w->out_peak)
        w->out_peak = w->out_used;
    return true;
}

/* Only once no write of c->out can be in flight. */
static void out_give(sws_worker *w, sws_conn *c) {
    if (!c->out)
        return;
    /* Room for every buffer: out_free has one entry per connection slot. */
    w->out_free[w->out_nfree++] = c->out;
    c->out = NULL;
    w->out_used--;
}

/* The stash and wire buffers of a tls connection come from the same stack
 * (sized three per slot for a tls listener), so TLS allocates nothing per
 * request either. */
static char *buf_take(sws_worker *w) {
    char *b = w->out_nfree ? w->out_free[--w->out_nfree] : malloc(w->out_cap);
    if (b && ++w->out_used > w->out_peak)
        w->out_peak = w->out_used;
    return b;
}

static void buf_give(sws_worker *w, char **b) {
    if (!*b)
        return;
    w->out_free[w->out_nfree++] = *b;
    *b = NULL;
    w->out_used--;
}

/* Only once no write can be in flight: the engine and its buffers go. */
static void tls_release(sws_worker *w, sws_conn *c) {
    if (!c->is_tls)
        return;
    sws_tls_conn_free(&c->tls);
    buf_give(w, &c->wire);
    buf_give(w, &c->stash);
    c->is_tls = false;
}

/* Keeps as many free buffers as the last interval's peak needed beyond those
 * still in use, and at least SWS_OUT_CACHE. */
static void out_trim(sws_worker *w) {
    uint32_t keep = w->out_peak - w->out_used;
    if (keep < SWS_OUT_CACHE)
        keep = SWS_OUT_CACHE;
    while (w->out_nfree > keep)
        free(w->out_free[--w->out_nfree]);
    w->out_peak = w->out_used;
}

static void arm_recv(sws_worker *w, sws_conn *c) {
    if (c->recv_armed || c->closing)
        return;
    int rc = tl_recv(w->loop, c->h, sws_token(c->index, SWS_T_RECV), &c->recv_op);
    if (rc < 0) {
        sws_conn_close(w, c);
        return;
    }
    c->recv_armed = true;
}

char *sws_conn_log_fields(sws_worker *w, sws_conn *c) {
    if (!w->access_log)
        return NULL;
    /* Once per slot, and only with the log on: an idle connection of a server
     * without an access log carries none of it. Out of memory: "-" fields. */
    if (!c->log_fields)
        c->log_fields = malloc(SWS_HTTP_LOG_STORAGE);
    return c->log_fields;
}

void sws_conn_close(sws_worker *w, sws_conn *c) {
    if (c->closing)
        return;
    c->closing = true;
    held_release_all(w, c);
    if (tl_close(w->loop, c->h, sws_token(c->index, SWS_T_CLOSE)) < 0) {
        /* A handle turnloop no longer knows: nothing will complete, free now. */
        c->live = false;
        if (c->starved)
            w->nstarved--;
        out_give(w, c);
        tls_release(w, c);
        list_del(w, c);
        w->free_idx[w->nfree++] = c->index;
        SWS_ADD(w->ctr.active, (uint64_t)-1);
        SWS_ADD(w->ctr.closed, 1);
    }
}

void sws_conn_open(sws_worker *w, sws_scenario *sc, tl_handle h) {
    if (w->nfree == 0) {
        /* Cannot happen while slots = handle ceiling; closing is the safe answer. */
        tl_close(w->loop, h, sws_token(w->nslots, SWS_T_CLOSE));
        return;
    }
    uint32_t i = w->free_idx[w->nfree - 1];
    sws_conn *c = w->conns[i];
    if (!c) {
        /* Slots are allocated on first use and reused afterwards: the only
         * allocation a connection ever causes, never one per request. */
        c = calloc(1, sizeof(*c)); /* zeroed: log_fields below is read */
        if (!c) {
            tl_close(w->loop, h, sws_token(w->nslots, SWS_T_CLOSE));
            return;
        }
        w->conns[i] = c;
    }
    w->nfree--;
    char *log_fields = c->log_fields; /* kept with the slot */
    memset(c, 0, sizeof(*c));
    c->log_fields = log_fields;
    c->index = i;
    c->h = h;
    c->sc = sc;
    c->hhead = c->htail = SWS_NIL;
    c->live = true;
    c->dl_kind = SWS_DL_FRESH;
    c->deadline = tl_loop_now(w->loop) + w->cfg->header_timeout_ms;
    sws_http_parser_init(&c->parser, &w->limits);
    c->parser.req.log_fields = sws_conn_log_fields(w, c);
    /* turnloop sets TCP_NODELAY on accepted sockets: no setsockopt here. */
    if (w->access_log)
        sws_peer_name(w->loop, h, c->peer, sizeof(c->peer));
    else
        strcpy(c->peer, "-");
    list_add(w, c);
    SWS_ADD(w->ctr.accepted, 1);
    SWS_ADD(w->ctr.active, 1);
    if (w->cfg->tls_server) {
        /* The SSL_CTX of this loop in the configuration serving now: a reload
         * gives new connections the new certificate, open ones keep theirs. */
        if (sws_tls_conn_init(&c->tls, sws_tls_server_ctx(w->cfg->tls_server, w->index)) < 0) {
            sws_conn_close(w, c);
            return;
        }
        c->is_tls = true;
        c->deadline = tl_loop_now(w->loop) + w->cfg->handshake_timeout_ms;
    }
    arm_recv(w, c);
}

static void set_idle_deadline(sws_worker *w, sws_conn *c) {
    const sws_config *cfg = w->cfg;
    if (sws_http_partial(&c->parser)) {
        c->dl_kind = SWS_DL_HEADER;
        c->deadline = tl_loop_now(w->loop) + cfg->header_timeout_ms;
    } else {
        c->dl_kind = SWS_DL_IDLE;
        c->deadline = tl_loop_now(w->loop) + cfg->keepalive_timeout_ms;
    }
}

/* HTTP-01 (RFC 8555 8.3), before any scenario: a plaintext GET of
 * /.well-known/acme-challenge/TOKEN for a token the ACME thread published.
 * The path test is one atomic load while no challenge is in flight; a token
 * it does not know goes to the scenario as any other path. */
static bool acme_challenge(sws_worker *w, sws_conn *c, bool ka) {
    const sws_http_request *r = &c->parser.req;
    if (c->is_tls || !sws_acme_challenge_path(r->path, r->path_len) ||
        (r->method != HTTP_GET && r->method != HTTP_HEAD))
        return false;
    char keyauth[SWS_ACME_KEYAUTH_MAX];
    size_t n = sws_acme_token_answer(r->path, r->path_len, keyauth, sizeof(keyauth));
    if (!n)
        return false;
    char *o = c->out + c->olen;
    size_t h = sws_http_head(o, w->resp_max, 200, w->date.str, "application/octet-stream", n, ka);
    if (!h || h + n > w->resp_max)
        return false;
    if (!r->head)
        memcpy(o + h, keyauth, n);
    c->olen += (uint32_t)(h + (r->head ? 0 : n));
    if (w->access_log)
        sws_access_log_parsed(w, c->peer, &c->parser, 200, r->head ? 0 : n);
    return true;
}

/* A complete request: the scenario appends its answer (room for resp_max
 * bytes was checked before feeding). */
static void answer(sws_worker *w, sws_conn *c) {
    const sws_http_request *r = &c->parser.req;
    bool ka = r->keep_alive && !w->draining;
    if (!ka)
        c->close_after = true;
    if (!out_take(w, c)) {
        /* Out of memory: this connection ends, the others keep their buffers. */
        sws_conn_close(w, c);
        return;
    }
    if (c->close_after && c->recv_armed && !c->recv_paused) {
        /* Nothing more will be read: stop receiving now, or the loop reads the
         * peer's FIN (or the rest of a pipeline) before our close lands. */
        c->recv_paused = true;
        tl_cancel(w->loop, c->recv_op);
    }
    c->served++;
    SWS_ADD(w->ctr.requests, 1);
    if (acme_challenge(w, c, ka))
        return;
    int rc = c->sc->ops->answer(w, c->sc, c, ka);
    if (rc < 0) {
        sws_conn_close(w, c);
    } else if (rc == SWS_ANSWER_PENDING) {
        /* The scenario must make progress within send_timeout (the sweep). */
        c->answer_pending = true;
        c->deadline = tl_loop_now(w->loop) + w->cfg->send_timeout_ms;
    }
}

void sws_conn_answer_end(sws_worker *w, sws_conn *c) {
    c->answer_pending = false;
    set_idle_deadline(w, c);
}

static int status_slot(int status) {
    switch (status) {
    case 400:
        return SWS_ST_400;
    case 408:
        return SWS_ST_408;
    case 413:
        return SWS_ST_413;
    case 414:
        return SWS_ST_414;
    case 431:
        return SWS_ST_431;
    default:
        return SWS_ST_OTHER;
    }
}

/* An error answer ends the connection: nothing after a bad request can be
 * trusted to be framed right. */
static void answer_error(sws_worker *w, sws_conn *c, int status) {
    SWS_ADD(w->ctr.errors[status_slot(status)], 1);
    if (w->access_log)
        sws_access_log_parsed(w, c->peer, &c->parser, status, sws_http_error_body_len(status));
    if (!out_take(w, c)) {
        sws_conn_close(w, c);
        return;
    }
    size_t n = sws_http_error(c->out + c->olen, w->out_cap - c->olen, status, w->date.str, false);
    c->close_after = true;
    /* The rest of a refused request may still be on the wire: closing with
     * unread input would send a reset that destroys the answer (nginx's
     * lingering close). */
    c->linger = true;
    if (n == 0) {
        sws_conn_close(w, c);
        return;
    }
    c->olen += (uint32_t)n;
}

/* Parses from data[*off..len). Returns false when output is full and the rest
 * must be held until a write completes. */
static bool consume(sws_worker *w, sws_conn *c, const char *data, uint32_t len, uint32_t *off) {
    while (*off < len) {
        if (c->close_after || c->closing) {
            c->linger = true; /* pipelined input after a close: see answer_error */
            *off = len;
            break;
        }
        if (c->answer_pending || c->olen + w->resp_max > w->out_cap)
            return false;
        size_t used;
        int st;
        int rc = sws_http_feed(&c->parser, data + *off, len - *off, &used, &st);
        if (rc == SWS_HTTP_NEED_MORE) {
            *off = len;
            if (c->dl_kind == SWS_DL_IDLE && sws_http_partial(&c->parser)) {
                c->dl_kind = SWS_DL_HEADER;
                c->deadline = tl_loop_now(w->loop) + w->cfg->header_timeout_ms;
            }
            break;
        }
        if (rc == SWS_HTTP_REQUEST) {
            *off += (uint32_t)used;
            answer(w, c);
            if (!c->answer_pending)
                set_idle_deadline(w, c);
            continue;
        }
        answer_error(w, c, st);
        *off = len;
        break;
    }
    return true;
}

#define SWS_LINGER_MS 2000

static void start_linger(sws_worker *w, sws_conn *c) {
    int fd = tl_handle_fd(w->loop, c->h);
    if (fd < 0 || shutdown(fd, SHUT_WR) < 0) {
        sws_conn_close(w, c);
        return;
    }
    c->lingering = true;
    c->deadline = tl_loop_now(w->loop) + SWS_LINGER_MS;
    held_release_all(w, c);
    c->recv_paused = false;
    arm_recv(w, c);
}

static bool tls_flush(sws_worker *w, sws_conn *c);
static void pump(sws_worker *w, sws_conn *c);

static void flush(sws_worker *w, sws_conn *c) {
    if (c->closing || c->write_inflight)
        return;
    if (c->olen == 0 && c->answer_pending) {
        /* The last part was written: the scenario appends the next one. */
        if (c->sc->ops->more)
            c->sc->ops->more(w, c->sc, c);
        if (c->closing)
            return;
        if (c->olen == 0 && !c->answer_pending) {
            pump(w, c); /* it ended with nothing more: on to held requests */
            return;
        }
        if (c->olen == 0)
            return; /* the scenario waits for its data; sws_conn_more follows */
    }
    if (c->is_tls) {
        if (tls_flush(w, c))
            return;
    } else if (c->olen > 0) {
        tl_op op;
        int rc = tl_write(w->loop, c->h, c->out, c->olen, sws_token(c->index, SWS_T_WRITE), &op);
        if (rc < 0) {
            sws_conn_close(w, c);
            return;
        }
        c->wlen = c->olen;
        c->write_inflight = true;
        /* A write is at most out_cap bytes: one that has not completed in
         * send_timeout is a peer that reads (next to) nothing. */
        c->wdeadline = tl_loop_now(w->loop) + w->cfg->send_timeout_ms;
        return;
    }
    out_give(w, c);
    if (c->close_after) {
        if (c->linger && !c->peer_eof && !c->lingering)
            start_linger(w, c);
        else if (!c->lingering)
            sws_conn_close(w, c);
    } else if (w->draining && !sws_http_partial(&c->parser) && c->hcount == 0 && !c->stash &&
               c->served) {
        /* Draining: an idle keep-alive connection is closed as soon as it is idle. */
        sws_conn_close(w, c);
    }
}

static void hold(sws_worker *w, sws_conn *c, uint32_t id, const char *data, uint32_t off,
                 uint32_t len) {
    uint32_t i = w->hfree;
    if (i == SWS_NIL) {
        /* Cannot happen (one node per loop buffer); closing is the safe answer. */
        release(w, id);
        sws_conn_close(w, c);
        return;
    }
    w->hfree = w->hpool[i].next;
    w->hpool[i] = (sws_held){.id = id, .off = off, .len = len, .next = SWS_NIL, .data = data};
    if (c->htail == SWS_NIL)
        c->hhead = i;
    else
        w->hpool[c->htail].next = i;
    c->htail = i;
    c->hcount++;
    if (!c->recv_paused) {
        c->recv_paused = true;
        if (c->recv_armed)
            tl_cancel(w->loop, c->recv_op);
    }
}

/* ---- TLS: the engine between the socket and the parser ---------------------- */

static void tls_pause(sws_worker *w, sws_conn *c) {
    if (!c->recv_paused) {
        c->recv_paused = true;
        if (c->recv_armed)
            tl_cancel(w->loop, c->recv_op);
    }
}

static void tls_failed(sws_worker *w, sws_conn *c) {
    SWS_ADD(w->ctr.tls_failed[c->tls.fail < SWS_TLS_FAIL_N ? c->tls.fail : 0], 1);
    /* The alert OpenSSL queued (if any) goes out at flush, then the close;
     * nothing further is read. */
    c->olen = 0;
    c->close_after = true;
    tls_pause(w, c);
}

/* Decrypts and parses what the engine holds, until it wants more input, the
 * output is full (on_write resumes) or the connection ends. */
static void tls_pump(sws_worker *w, sws_conn *c) {
    while (!c->closing && !c->close_after && !c->stash) {
        if (c->answer_pending || c->olen + w->resp_max > w->out_cap) {
            tls_pause(w, c);
            return;
        }
        bool was = c->tls.established;
        int n = sws_tls_read(&c->tls, w->tls_plain, SWS_TLS_PLAIN);
        if (!was && c->tls.established) {
            SWS_ADD(w->ctr.tls_handshakes, 1);
            if (sws_tls_resumed(&c->tls))
                SWS_ADD(w->ctr.tls_resumed, 1);
            /* From here the request's own timeout runs. */
            c->deadline = tl_loop_now(w->loop) + w->cfg->header_timeout_ms;
        }
        if (n > 0) {
            uint32_t off = 0;
            if (!consume(w, c, w->tls_plain, (uint32_t)n, &off)) {
                if (!(c->stash = buf_take(w))) {
                    sws_conn_close(w, c);
                    return;
                }
                c->stash_len = (uint32_t)n - off;
                c->stash_off = 0;
                memcpy(c->stash, w->tls_plain + off, c->stash_len);
                tls_pause(w, c);
                return;
            }
            continue;
        }
        if (n == SWS_TLS_EOF) /* close_notify: answer what was asked, then close */
            c->close_after = true;
        else if (n < 0)
            tls_failed(w, c);
        return;
    }
}

static void tls_input(sws_worker *w, sws_conn *c, const char *data, uint32_t len) {
    if (c->closing || c->close_after)
        return;
    if (sws_tls_feed(&c->tls, data, len) < 0) {
        sws_conn_close(w, c);
        return;
    }
    tls_pump(w, c);
}

/* After a write: the stash first, then the engine, then receive again once
 * nothing waits. */
static void tls_resume(sws_worker *w, sws_conn *c) {
    if (c->stash) {
        uint32_t off = c->stash_off;
        if (!c->close_after && !consume(w, c, c->stash, c->stash_len, &off)) {
            c->stash_off = off;
            return;
        }
        buf_give(w, &c->stash);
    }
    tls_pump(w, c);
    if (!c->closing && !c->stash && c->recv_paused && !c->close_after && !c->answer_pending &&
        c->olen + w->resp_max <= w->out_cap) {
        c->recv_paused = false;
        arm_recv(w, c);
    }
}

/* Seals the plaintext answers and writes what the engine has to send. True
 * when a write is in flight (or the connection closed); false when all is
 * sent and flush's ending (close_after, linger, drain) applies. */
static bool tls_flush(sws_worker *w, sws_conn *c) {
    sws_tls_conn *t = &c->tls;
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
    if (c->close_after && c->olen == 0)
        sws_tls_close_notify(t);
    if (sws_tls_pending(t) == 0) {
        buf_give(w, &c->wire);
        return c->olen > 0;
    }
    if (!c->wire && !(c->wire = buf_take(w))) {
        sws_conn_close(w, c);
        return true;
    }
    size_t k = sws_tls_take(t, c->wire, w->out_cap);
    tl_op op;
    if (tl_write(w->loop, c->h, c->wire, k, sws_token(c->index, SWS_T_WRITE), &op) < 0) {
        sws_conn_close(w, c);
        return true;
    }
    c->wlen = (uint32_t)k;
    c->write_inflight = true;
    c->wdeadline = tl_loop_now(w->loop) + w->cfg->send_timeout_ms;
    return true;
}

static void on_recv(sws_worker *w, const tl_completion *e) {
    sws_conn *c = conn_of(w, e->token);
    bool has_buf = (e->flags & TL_CQE_BUFFER) != 0;
    if (!c) {
        if (has_buf)
            release(w, e->u.buf.id);
        return;
    }
    bool final = (e->flags & TL_CQE_FINAL) != 0;
    if (final)
        c->recv_armed = false;
    if (c->lingering) {
        if (has_buf)
            release(w, e->u.buf.id);
        if (final && e->res <= 0 && e->res != -ECANCELED)
            sws_conn_close(w, c);
        else if (final && !c->closing)
            arm_recv(w, c);
        return;
    }
    if (e->res > 0 && has_buf) {
        SWS_ADD(w->ctr.bytes_in, (uint64_t)e->res);
        const char *data = e->u.buf.data;
        uint32_t len = (uint32_t)e->res, off = 0;
        if (c->is_tls) {
            tls_input(w, c, data, len); /* the engine copies: the buffer goes back now */
            release(w, e->u.buf.id);
        } else if (c->closing || c->close_after)
            release(w, e->u.buf.id);
        else if (c->hcount || c->recv_paused)
            hold(w, c, e->u.buf.id, data, 0, len);
        else if (consume(w, c, data, len, &off))
            release(w, e->u.buf.id);
        else
            hold(w, c, e->u.buf.id, data, off, len);
    } else if (has_buf) {
        release(w, e->u.buf.id);
    }
    if (final && !c->closing) {
        if (e->res == 0) {
            /* The peer is done sending: answer what it asked, then close. */
            c->close_after = true;
            c->peer_eof = true;
            if (c->is_tls && !c->tls.established && !c->tls.failed) {
                sws_tls_peer_eof(&c->tls); /* a hello cut short, or no TLS at all */
                tls_failed(w, c);
            }
        } else if (e->res == -ENOBUFS) {
            SWS_ADD(w->ctr.recv_starved, 1);
            if (!c->starved) {
                c->starved = true;
                w->nstarved++;
            }
        } else if (e->res < 0 && e->res != -ECANCELED) {
            sws_conn_close(w, c);
            return;
        } else if (!c->recv_paused && !c->close_after) {
            arm_recv(w, c);
        }
    }
    flush(w, c);
}

static void on_write(sws_worker *w, const tl_completion *e) {
    sws_conn *c = conn_of(w, e->token);
    if (!c)
        return;
    c->write_inflight = false;
    if (c->closing)
        return;
    if (e->res < 0) {
        sws_conn_close(w, c);
        return;
    }
    SWS_ADD(w->ctr.bytes_out, c->wlen);
    if (c->is_tls) {
        c->wlen = 0; /* wire is free again; out still holds unsealed plaintext */
        pump(w, c);
        return;
    }
    if (c->olen > c->wlen)
        memmove(c->out, c->out + c->wlen, c->olen - c->wlen);
    c->olen -= c->wlen;
    c->wlen = 0;
    pump(w, c);
}

/* After output moved: feeds held input (as far as there is room and no answer
 * is pending), resumes receiving once nothing is held, and writes. */
static void pump(sws_worker *w, sws_conn *c) {
    if (c->is_tls)
        tls_resume(w, c); /* a tls connection holds plaintext in its stash, not buffers */
    while (c->hcount && !c->closing) {
        sws_held *h = &w->hpool[c->hhead];
        uint32_t off = h->off;
        if (!c->close_after && !consume(w, c, h->data, h->len, &off)) {
            h->off = off;
            break;
        }
        release(w, h->id);
        held_drop_head(w, c);
    }
    if (c->closing)
        return;
    if (c->hcount == 0 && c->recv_paused && !c->is_tls) {
        c->recv_paused = false;
        if (!c->close_after)
            arm_recv(w, c);
    }
    flush(w, c);
    /* keepalive_timeout counts from the last answer written, not from when it
     * was queued: a slow but reading client is not cut as idle. */
    if (!c->closing && !c->write_inflight && c->olen == 0 && c->dl_kind == SWS_DL_IDLE &&
        !c->answer_pending)
        c->deadline = tl_loop_now(w->loop) + w->cfg->keepalive_timeout_ms;
}

void sws_conn_more(sws_worker *w, sws_conn *c) {
    if (!c->closing)
        pump(w, c);
}

static void on_closed(sws_worker *w, const tl_completion *e) {
    uint32_t i = sws_token_index(e->token);
    if (i >= w->nslots || !w->conns[i] || !w->conns[i]->live)
        return;
    sws_conn *c = w->conns[i];
    c->live = false;
    if (c->starved)
        w->nstarved--;
    /* Every completion of the handle came before this one: no write can
     * still be reading the buffer. */
    out_give(w, c);
    tls_release(w, c);
    list_del(w, c);
    w->free_idx[w->nfree++] = i;
    SWS_ADD(w->ctr.active, (uint64_t)-1);
    SWS_ADD(w->ctr.closed, 1);
}

/* Starvation is rare (every loop buffer held by output-blocked connections):
 * a walk of the active list when buffers come back is cheaper than keeping a
 * second list consistent with slot reuse. */
static void rearm_starved(sws_worker *w) {
    for (sws_conn *c = w->active; c && w->nstarved; c = c->next) {
        if (!c->starved)
            continue;
        c->starved = false;
        w->nstarved--;
        if (!c->closing && !c->recv_paused && !c->close_after)
            arm_recv(w, c);
    }
}

static void arm_sweep(sws_worker *w) {
    if (w->sweep_armed || w->done)
        return;
    if (tl_timer(w->loop, w->draining ? 100 : SWS_SWEEP_MS, sws_token(0, SWS_T_SWEEP),
                 &w->sweep_op) == 0)
        w->sweep_armed = true;
}

/* Once a second: expire idle and slow connections (a per-connection timer
 * per request would cost two operations per request), publish loop stats. */
static void on_sweep(sws_worker *w, const tl_completion *e) {
    w->sweep_armed = false;
    w->sweep_cancelled = false;
    if (e->res < 0) {
        /* Cancelled because the worker looked finished; a late adoption may
         * have given it work again. */
        if (!sws_worker_finished(w))
            arm_sweep(w);
        return;
    }
    uint64_t now = tl_loop_now(w->loop);
    if (w->sc.ops->sweep)
        w->sc.ops->sweep(w, &w->sc, now);
    tl_loop_stats st;
    tl_loop_get_stats(w->loop, &st);
    atomic_store_explicit(&w->ctr.turns, st.turns, memory_order_relaxed);
    atomic_store_explicit(&w->ctr.accept_pauses, st.accept_pauses, memory_order_relaxed);
    if (!sws_worker_finished(w))
        arm_sweep(w);
}

/* The HTTP connection's part of the sweep. */
void sws_conn_sweep(sws_worker *w, sws_scenario *sc, uint64_t now) {
    (void)sc;
    for (sws_conn *c = w->active, *next; c; c = next) {
        next = c->next;
        if (c->closing)
            continue;
        if (c->write_inflight) {
            if (now >= c->wdeadline) {
                SWS_ADD(w->ctr.send_timeouts, 1);
                sws_conn_close(w, c);
            }
            continue;
        }
        if (now < c->deadline)
            continue;
        if (c->is_tls && !c->tls.established && !c->tls.failed) {
            sws_tls_timeout(&c->tls); /* handshake_timeout: a stalled hello */
            SWS_ADD(w->ctr.tls_failed[SWS_TLS_FAIL_TIMEOUT], 1);
            sws_conn_close(w, c);
            continue;
        }
        if (sws_http_partial(&c->parser) && !c->close_after && !c->answer_pending) {
            if (c->olen + 512 <= w->out_cap) {
                answer_error(w, c, 408);
                flush(w, c);
                continue;
            }
        }
        sws_conn_close(w, c);
    }
    rearm_starved(w);
    out_trim(w);
}

static void arm_accept(sws_worker *w) {
    if (!w->listener || w->listener_closing)
        return;
    tl_op op;
    if (tl_accept(w->loop, w->listener, TL_ACCEPT_MULTISHOT, sws_token(0, SWS_T_ACCEPT), &op) < 0)
        fprintf(stderr, "scalwsd: loop %d: cannot accept\n", w->index);
}

static void on_accept(sws_worker *w, const tl_completion *e) {
    if (e->res >= 0 && e->u.accepted) {
        if (w->srv->handoff) {
            /* Handoff: this loop only accepts; the policy picks the worker. */
            tl_handoff_dispatch(w->srv->handoff, w->loop, e->u.accepted, sws_token(0, SWS_T_ADOPT));
        } else {
            w->sc.ops->open(w, &w->sc, e->u.accepted);
        }
    }
    if ((e->flags & TL_CQE_FINAL) && !w->draining && e->res != -ECANCELED)
        arm_accept(w);
}

/* The HTTP connection's completions. */
void sws_conn_dispatch(sws_worker *w, sws_scenario *sc, const tl_completion *e) {
    (void)sc;
    switch (sws_token_tag(e->token)) {
    case SWS_T_RECV:
        on_recv(w, e);
        break;
    case SWS_T_WRITE:
        on_write(w, e);
        break;
    case SWS_T_CLOSE:
        on_closed(w, e);
        break;
    default:
        if (e->flags & TL_CQE_BUFFER)
            release(w, e->u.buf.id);
        break;
    }
}

void sws_conn_turn_done(sws_worker *w, sws_scenario *sc) {
    (void)sc;
    if (w->released && w->nstarved)
        rearm_starved(w);
}

static void dispatch(sws_worker *w, const tl_completion *e) {
    if (!sws_tag_is_worker(sws_token_tag(e->token))) {
        w->sc.ops->dispatch(w, &w->sc, e);
        return;
    }
    switch (sws_token_tag(e->token)) {
    case SWS_T_ACCEPT:
        on_accept(w, e);
        break;
    case SWS_T_ADOPT:
        if (e->res >= 0 && e->u.accepted)
            w->sc.ops->open(w, &w->sc, e->u.accepted);
        break;
    case SWS_T_SWEEP:
        on_sweep(w, e);
        break;
    case SWS_T_POST:
        if (sws_token_index(e->token) == SWS_POST_RELOAD)
            sws_reload_apply(w, e->u.msg.value);
        else if (e->u.msg.value == SWS_MSG_DRAIN || e->u.msg.value == SWS_MSG_FORCE)
            sws_worker_drain(w, e->u.msg.value == SWS_MSG_FORCE);
        break;
    case SWS_T_LISTENER_CLOSE:
        w->listener = 0;
        w->listener_closing = false;
        break;
    default:
        if (e->flags & TL_CQE_BUFFER)
            tl_buffer_release(w->loop, e->u.buf.id);
        break;
    }
}

/* One turn and its dispatch. Returns false when the worker is finished. */
static bool worker_turn(sws_worker *w, tl_completion *cq, int timeout_ms) {
    int n = tl_loop_turn(w->loop, timeout_ms, cq, SWS_CQ_BATCH);
    if (n < 0 && n != -EINTR) {
        fprintf(stderr, "scalwsd: loop %d: turn failed: %s\n", w->index, tl_strerror(n));
        return false;
    }
    if (sws_date_refresh(&w->date) && w->sc.ops->date_changed)
        w->sc.ops->date_changed(w, &w->sc);
    w->released = 0;
    for (int i = 0; i < n; i++)
        dispatch(w, &cq[i]);
    if (w->sc.ops->turn_done)
        w->sc.ops->turn_done(w, &w->sc);
    if (sws_worker_finished(w)) {
        if (w->sweep_armed && !w->sweep_cancelled) {
            tl_cancel(w->loop, w->sweep_op);
            w->sweep_cancelled = true;
        }
        if (!tl_loop_alive(w->loop)) {
            w->done = true;
            return false;
        }
    }
    return true;
}

static void signal_done(sws_server *s) {
    uint64_t one = 1;
    ssize_t r = write(s->done_fd, &one, sizeof(one));
    (void)r;
}

static void *worker_main(void *arg) {
    sws_worker *w = arg;
    tl_completion cq[SWS_CQ_BATCH];
    while (worker_turn(w, cq, -1)) {
    }
    signal_done(w->srv);
    return NULL;
}

/* The shared baseline (event_loops = 0): several threads take turns on one
 * loop. turnloop allows one thread at a time per loop, so the lock is held for
 * a whole turn and its dispatch: leader/followers over one wait set. */
static void *shared_main(void *arg) {
    sws_server *s = arg;
    sws_worker *w = &s->workers[0];
    tl_completion cq[SWS_CQ_BATCH];
    for (;;) {
        pthread_mutex_lock(&s->shared_lock);
        bool more = !w->done && worker_turn(w, cq, 100);
        pthread_mutex_unlock(&s->shared_lock);
        if (!more)
            break;
    }
    signal_done(s);
    return NULL;
}

static int pin_thread(pthread_t t, int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return -pthread_setaffinity_np(t, sizeof(set), &set);
}

static int open_shared_fd(const sws_config *cfg, char *err, size_t errlen) {
    int fd = socket(cfg->listen.ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (const struct sockaddr *)&cfg->listen.ss, cfg->listen.len) < 0 ||
        listen(fd, SOMAXCONN) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    (void)err;
    (void)errlen;
    return fd;
}

/* SO_REUSEPORT lets another process of the same user join a port that is in
 * use, which would hide a second scalwsd behind the first. A plain bind tells
 * a busy port from a free one first. */
static int probe_busy(const sws_config *cfg) {
    int fd = socket(cfg->listen.ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1, rc = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (const struct sockaddr *)&cfg->listen.ss, cfg->listen.len) < 0)
        rc = -errno;
    close(fd);
    return rc;
}

static int init_worker(sws_server *s, sws_worker *w, int index, bool has_listener) {
    const sws_config *cfg = s->cfg;
    w->index = index;
    w->srv = s;
    w->cfg = cfg;
    w->limits = cfg->limits;
    w->cpu = -1;
    w->nslots = cfg->max_connections + 1;
    w->conns = calloc(w->nslots, sizeof(*w->conns));
    w->free_idx = malloc(w->nslots * sizeof(*w->free_idx));
    if (!w->conns || !w->free_idx)
        return -ENOMEM;
    for (uint32_t i = 0; i < w->nslots; i++)
        w->free_idx[i] = w->nslots - 1 - i;
    w->nfree = w->nslots;
    /* A tls connection may hold three buffers: out, wire and stash. */
    w->out_free = malloc(w->nslots * (cfg->listen_tls ? 3u : 1u) * sizeof(*w->out_free));
    if (!w->out_free)
        return -ENOMEM;
    if (cfg->listen_tls && !(w->tls_plain = malloc(SWS_TLS_PLAIN)))
        return -ENOMEM;
    w->hpool = malloc(SWS_RECV_BUFFERS * sizeof(*w->hpool));
    if (!w->hpool)
        return -ENOMEM;
    for (uint32_t k = 0; k < SWS_RECV_BUFFERS; k++)
        w->hpool[k].next = k + 1 < SWS_RECV_BUFFERS ? k + 1 : SWS_NIL;
    w->hfree = 0;
    sws_date_init(&w->date);
    w->sc.ops = s->sc_ops;
    w->resp_max = 512;
    if (cfg->access_log[0]) {
        w->access_log = fopen(cfg->access_log, "a");
        if (!w->access_log)
            return -errno;
        /* One write per line: lines of several loops never interleave. */
        setvbuf(w->access_log, NULL, _IOLBF, 0);
    }
    tl_loop_options o = {0};
    /* Exactly max_connections plus the listener: accepting pauses at the
     * ceiling (turnloop#77) and the rest wait in the kernel's queue. */
    o.max_handles = cfg->max_connections + (has_listener ? 1u : 0u) +
                    (w->sc.ops->extra_handles ? w->sc.ops->extra_handles(cfg) : 0);
    o.backend = cfg->backend == SWS_BACKEND_EPOLL   ? TL_BACKEND_EPOLL
                : cfg->backend == SWS_BACKEND_URING ? TL_BACKEND_URING
                                                    : TL_BACKEND_AUTO;
    /* EPOLLEXCLUSIVE is an epoll feature: with backend auto, the exclusive
     * route runs on epoll rather than failing (uring refuses it, and says so
     * when asked for by name). */
    if (cfg->backend == SWS_BACKEND_AUTO && !s->shared && s->route == SWS_ACCEPT_EXCLUSIVE)
        o.backend = TL_BACKEND_EPOLL;
    o.recv_buffers = SWS_RECV_BUFFERS;
    o.recv_buffer_size = 16384;
    int rc = tl_loop_new(&w->loop, &o);
    if (rc == 0)
        rc = w->sc.ops->init(w, &w->sc);
    if (rc < 0)
        return rc;
    if (w->resp_max < 512)
        w->resp_max = 512;
    /* Room for four of the scenario's longest answers (reload.c relies on it). */
    w->out_cap = 16384;
    if (w->out_cap < 4 * w->resp_max)
        w->out_cap = 4 * w->resp_max;
    return 0;
}

int sws_server_start(sws_server *s, const sws_config *cfg, char *err, size_t errlen) {
    int rc;
    memset(s, 0, sizeof(*s));
    s->cfg = cfg;
    s->sc_ops = sws_scenario_ops_of(cfg->scenario);
    s->shared_fd = -1;
    s->acme_fd = -1;
    s->acme_http_fd = -1;
    s->started_ms = sws_now_ms();
    pthread_mutex_init(&s->shared_lock, NULL);
    sws_cpus_probe(&s->cpus);
    s->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (s->done_fd < 0) {
        snprintf(err, errlen, "eventfd: %s", strerror(errno));
        return -errno;
    }
    if (cfg->event_loops == 0) {
        s->shared = true;
        s->nloops = 1;
        s->nthreads = cfg->worker_threads > 0 ? cfg->worker_threads : s->cpus.available;
    } else {
        s->nloops = cfg->event_loops > 0 ? cfg->event_loops : s->cpus.available;
        s->nthreads = s->nloops;
    }
    sws_accept_route route = s->shared ? SWS_ACCEPT_ACCEPTOR : cfg->accept;
    /* Inherited sockets (socket activation, or the SIGUSR2 re-exec of an
     * older scalwsd, reexec.c). Several: each is a queue of its own (one per
     * loop of a reuse_port parent), so every one gets a loop, or connections
     * queued on it would be lost when the parent closes its copy. */
    const int *inherited = NULL;
    int ninherited = sws_inherited_http(&inherited);
    int activated = ninherited > 0 ? inherited[0] : -1;
    if (ninherited > 1 && !s->shared) {
        if (s->nloops < ninherited)
            s->nloops = s->nthreads = ninherited;
        route = ninherited == s->nloops ? SWS_ACCEPT_REUSE_PORT : SWS_ACCEPT_HERD;
    } else if (ninherited > 1) {
        fprintf(stderr, "scalwsd: %d inherited sockets; the shared model serves the first\n",
                ninherited);
        for (int i = 1; i < ninherited; i++)
            close(inherited[i]); /* not left open and never accepted: refused instead */
        ninherited = 1;
    }
    if (ninherited == 1 && (route == SWS_ACCEPT_REUSE_PORT || route == SWS_ACCEPT_HANDOFF)) {
        /* One inherited socket cannot be bound once per loop: share it, with
         * EPOLLEXCLUSIVE unless io_uring was asked for by name (it has no
         * wake-one; blocking acceptor threads serve it then). */
        route = cfg->backend != SWS_BACKEND_URING ? SWS_ACCEPT_EXCLUSIVE : SWS_ACCEPT_ACCEPTOR;
    }
    s->route = route;
    if (cfg->listen_tls && !cfg->tls_server) {
        /* One SSL_CTX per loop (own session cache); the ticket keys are one
         * ring for all, so a ticket resumes on whichever loop the kernel picks.
         * The server owns the initial config: this is its only write to it. */
        if (!(s->tls_keys = sws_tls_keys_new())) {
            snprintf(err, errlen, "[tls] cannot make session ticket keys");
            return -ENOMEM;
        }
        sws_tls_server *ts = sws_tls_server_new(&cfg->tls, s->nloops, s->tls_keys, err, errlen);
        if (!ts)
            return -EINVAL;
        ((sws_config *)cfg)->tls_server = ts;
        s->tls_rotated_ms = sws_now_ms();
    }
    s->pinned = !s->shared && s->nloops <= s->cpus.in_mask;
    s->workers = calloc((size_t)s->nloops, sizeof(*s->workers));
    s->loops = calloc((size_t)s->nloops, sizeof(*s->loops));
    s->listen_fds = calloc((size_t)s->nloops, sizeof(*s->listen_fds));
    if (!s->workers || !s->loops || !s->listen_fds)
        return -ENOMEM;
    for (int i = 0; i < s->nloops; i++) {
        bool has_listener = route == SWS_ACCEPT_REUSE_PORT || route == SWS_ACCEPT_EXCLUSIVE ||
                            route == SWS_ACCEPT_HERD || (route == SWS_ACCEPT_HANDOFF && i == 0);
        rc = init_worker(s, &s->workers[i], i, has_listener);
        if (rc < 0) {
            snprintf(err, errlen, "cannot create loop %d (backend %s): %s", i,
                     sws_backend_name(cfg->backend), tl_strerror(rc));
            return rc;
        }
        s->loops[i] = s->workers[i].loop;
    }
    s->backend = tl_loop_backend(s->loops[0]);

    const struct sockaddr *addr = (const struct sockaddr *)&cfg->listen.ss;
    if (ninherited > 1) {
        /* Loop i serves inherited socket i % n: all of them when counts match. */
        rc = 0;
        for (int i = 0; i < s->nloops && rc == 0; i++)
            rc = tl_listen_shared(s->loops[i], inherited[i % ninherited], 0,
                                  &s->workers[i].listener);
        for (int i = 0; i < ninherited; i++)
            close(inherited[i]); /* the loops hold duplicates */
        goto listening;
    }
    switch (route) {
    case SWS_ACCEPT_REUSE_PORT: {
        tl_handle hs[s->nloops];
        rc = probe_busy(cfg);
        if (rc < 0)
            break;
        rc = tl_route_reuse_port(s->loops, s->nloops, addr, cfg->listen.len, 0, hs);
        if (rc < 0)
            break;
        for (int i = 0; i < s->nloops; i++)
            s->workers[i].listener = hs[i];
        break;
    }
    case SWS_ACCEPT_HANDOFF: {
        tl_listen_options lo = {.reuse_port = TL_REUSE_PORT_NO};
        rc = tl_listen(s->loops[0], addr, cfg->listen.len, &lo, &s->workers[0].listener);
        if (rc < 0)
            break;
        rc = tl_handoff_new(&s->handoff, s->loops, s->nloops, TL_HANDOFF_ROUND_ROBIN);
        break;
    }
    case SWS_ACCEPT_EXCLUSIVE:
    case SWS_ACCEPT_HERD:
    case SWS_ACCEPT_ACCEPTOR:
        rc = activated >= 0 ? activated : open_shared_fd(cfg, err, errlen);
        if (rc < 0)
            break;
        s->shared_fd = rc;
        rc = 0;
        if (route == SWS_ACCEPT_ACCEPTOR)
            break;
        for (int i = 0; i < s->nloops && rc == 0; i++)
            rc = tl_listen_shared(s->loops[i], s->shared_fd,
                                  route == SWS_ACCEPT_EXCLUSIVE ? TL_SHARED_EXCLUSIVE : 0,
                                  &s->workers[i].listener);
        break;
    }
listening:
    if (rc < 0) {
        snprintf(err, errlen, "%s: cannot listen on %s (accept %s): %s", cfg->listen_origin,
                 cfg->listen.text, sws_accept_name(route),
                 rc == -EADDRINUSE ? "address already in use" : tl_strerror(rc));
        return rc;
    }
    if (cfg->defer_accept) {
        /* The client speaks first in HTTP: let the kernel hand over a
         * connection with its request, so the first read never finds nothing
         * (nginx's listen ... deferred). Best effort: a refusal is harmless. */
        int secs = 1;
        if (s->shared_fd >= 0)
            setsockopt(s->shared_fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &secs, sizeof(secs));
        for (int i = 0; i < s->nloops; i++) {
            int fd =
                s->workers[i].listener ? tl_handle_fd(s->loops[i], s->workers[i].listener) : -1;
            if (fd >= 0)
                setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &secs, sizeof(secs));
        }
    }
    for (int i = 0; i < s->nloops; i++) {
        arm_accept(&s->workers[i]);
        arm_sweep(&s->workers[i]);
    }
    if (route == SWS_ACCEPT_ACCEPTOR) {
        rc = tl_acceptor_start(&s->acceptor, s->shared_fd, s->nthreads, s->loops, s->nloops,
                               TL_HANDOFF_LEAST_LOADED, sws_token(0, SWS_T_ADOPT));
        if (rc < 0) {
            snprintf(err, errlen, "cannot start acceptor threads: %s", tl_strerror(rc));
            return rc;
        }
    }

    /* What a SIGUSR2 re-exec passes on: each distinct listening socket once. */
    if (s->shared_fd >= 0)
        s->listen_fds[s->nlisten_fds++] = s->shared_fd;
    else
        for (int i = 0; i < s->nloops && i < (ninherited > 1 ? ninherited : s->nloops); i++)
            if (s->workers[i].listener)
                s->listen_fds[s->nlisten_fds++] = tl_handle_fd(s->loops[i], s->workers[i].listener);
    char inherited_text[64];
    snprintf(inherited_text, sizeof(inherited_text), "%d activated socket%s (fd 3%s)", ninherited,
             ninherited == 1 ? "" : "s", ninherited == 1 ? "" : "..");
    fprintf(stderr,
            "scalwsd %s: %s%d loop%s (%s; affinity %d CPU%s, quota %s%d), %d thread%s, accept %s, "
            "backend %s, listening on %s\n",
            SWS_VERSION, s->shared ? "shared model, " : "", s->nloops, s->nloops == 1 ? "" : "s",
            cfg->event_loops < 0 ? "auto" : "configured", s->cpus.in_mask,
            s->cpus.in_mask == 1 ? "" : "s", s->cpus.quota_cpus ? "" : "none/", s->cpus.quota_cpus,
            s->nthreads, s->nthreads == 1 ? "" : "s", sws_accept_name(route), s->backend,
            activated >= 0 ? inherited_text : cfg->listen.text);
    if (!s->pinned && !s->shared)
        fprintf(stderr, "scalwsd: %d loops on %d CPUs: loops are not pinned\n", s->nloops,
                s->cpus.in_mask);
    if (cfg->tls_server) {
        sws_tls_info ti;
        sws_tls_server_info(cfg->tls_server, &ti);
        fprintf(stderr,
                "scalwsd: tls on %s: %s, ALPN http/1.1, memory BIOs (kTLS not used; kernel tls "
                "module %s), tickets %s, session cache %u per loop, OCSP stapling %s\n",
                cfg->listen.text, ti.protocols, ti.ktls_kernel ? "present" : "absent",
                ti.tickets ? "on" : "off", ti.session_cache, ti.ocsp ? "on" : "off");
    }

    if (s->shared) {
        s->threads = calloc((size_t)s->nthreads, sizeof(*s->threads));
        for (int i = 0; i < s->nthreads; i++)
            pthread_create(&s->threads[i], NULL, shared_main, s);
    } else {
        for (int i = 0; i < s->nloops; i++) {
            sws_worker *w = &s->workers[i];
            rc = -pthread_create(&w->thread, NULL, worker_main, w);
            if (rc < 0) {
                snprintf(err, errlen, "cannot start loop thread %d: %s", i, strerror(-rc));
                return rc;
            }
            if (s->pinned) {
                w->cpu = s->cpus.list[i];
                if (pin_thread(w->thread, w->cpu) < 0)
                    w->cpu = -1;
            }
        }
    }
    return 0;
}

void sws_server_free(sws_server *s) {
    if (s->shared) {
        for (int i = 0; i < s->nthreads; i++)
            pthread_join(s->threads[i], NULL);
        free(s->threads);
    } else {
        for (int i = 0; i < s->nloops; i++)
            if (s->workers[i].thread)
                pthread_join(s->workers[i].thread, NULL);
    }
    if (s->acceptor)
        tl_acceptor_stop(s->acceptor);
    if (s->handoff)
        tl_handoff_free(s->handoff);
    for (int i = 0; i < s->nloops; i++) {
        sws_worker *w = &s->workers[i];
        if (w->loop)
            tl_loop_free(w->loop);
        if (w->sc.ops)
            w->sc.ops->free(w, &w->sc);
        for (uint32_t k = 0; k < w->nslots && w->conns; k++)
            if (w->conns[k]) {
                sws_tls_conn_free(&w->conns[k]->tls);
                free(w->conns[k]->wire);
                free(w->conns[k]->stash);
                free(w->conns[k]->out);
                free(w->conns[k]->log_fields);
                free(w->conns[k]);
            }
        while (w->out_nfree)
            free(w->out_free[--w->out_nfree]);
        free(w->out_free);
        free(w->conns);
        free(w->free_idx);
        free(w->hpool);
        free(w->tls_plain);
        if (w->access_log)
            fclose(w->access_log);
    }
    if (s->shared_fd >= 0)
        close(s->shared_fd);
    close(s->done_fd);
    free(s->listen_fds);
    free(s->workers);
    free(s->loops);
    sws_tls_keys_free(s->tls_keys);
}
