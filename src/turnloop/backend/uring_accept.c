/* io_uring accepting under the handle ceiling (turnloop#77). A multishot accept
 * cannot be told "only n more": a connection the kernel accepts past the
 * ceiling is parked (never closed), the request is cancelled, and parked
 * connections are adopted first when a slot frees. Nothing here runs inside
 * slot release; the work happens in the next wait. */
#include "uring.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- accepting and the ceiling (turnloop#77) -------------------------------- */

void tl__ur_list_paused(tl_loop *loop, uint32_t hi) {
    if (loop->h[hi].paused)
        return;
    loop->h[hi].paused = 1;
    uring_state *s = state(loop);
    tl__ur_push_id(&s->paused, &s->paused_len, &s->paused_cap, handle_id(loop, hi));
}

/* A connection no handle took: a real descriptor is closed now, a direct one
 * in the turn's batch. */
static void drop_conn(tl_loop *loop, int fd, bool direct) {
    if (direct)
        tl__ur_close_direct(loop, fd);
    else
        close(fd);
}

static void park_fd(tl_loop *loop, uint32_t hi, int fd, bool direct) {
    uring_state *s = state(loop);
    if (s->parked_len == s->parked_cap) {
        uint32_t ncap = s->parked_cap ? s->parked_cap * 2 : 16;
        parked_fd *n = realloc(s->parked, (size_t)ncap * sizeof *n);
        if (!n) {
            drop_conn(loop, fd, direct); /* cannot even remember it: the one way one is lost */
            loop->stats.accept_errors++;
            return;
        }
        s->parked = n;
        s->parked_cap = ncap;
    }
    s->parked[s->parked_len++] =
        (parked_fd){.listener = handle_id(loop, hi), .fd = fd, .direct = direct};
}

/* The oldest parked connection of a listener, or -1. */
static int parked_take(tl_loop *loop, uint32_t hi, bool *direct) {
    uring_state *s = state(loop);
    tl_handle id = handle_id(loop, hi);
    for (uint32_t i = 0; i < s->parked_len; i++) {
        if (s->parked[i].listener != id)
            continue;
        int fd = s->parked[i].fd;
        *direct = s->parked[i].direct;
        memmove(&s->parked[i], &s->parked[i + 1], (s->parked_len - i - 1) * sizeof *s->parked);
        s->parked_len--;
        return fd;
    }
    return -1;
}

/* Parked connections of a listener that is gone or closing go the way of its
 * kernel queue: closed. */
void tl__ur_sweep_parked(tl_loop *loop) {
    uring_state *s = state(loop);
    uint32_t keep = 0;
    for (uint32_t i = 0; i < s->parked_len; i++) {
        uint32_t hi;
        if (tl__handle_lookup(loop, s->parked[i].listener, &hi) < 0 || loop->h[hi].closing) {
            drop_conn(loop, s->parked[i].fd, s->parked[i].direct);
            continue;
        }
        s->parked[keep++] = s->parked[i];
    }
    s->parked_len = keep;
}

/* Makes fd (a direct descriptor: an index in the ring's table) a handle and
 * reports it on the accept op oi. */
static void accept_fd(tl_loop *loop, uint32_t oi, int fd, bool direct) {
    uint32_t ci; /* TCP_NODELAY is inherited from the listener */
    /* The core closes the descriptor it is given on error: not a table index. */
    int err = tl__handle_new(loop, direct ? -1 : fd, TL_H_STREAM, 0, &ci); /* may move loop->h */
    bool multishot = loop->o[oi].multishot;
    if (err == 0) {
        loop->h[ci].fd = fd;
        loop->h[ci].direct = direct;
        loop->h[ci].fresh = state(loop)->first_recv;
    }
    if (err < 0) { /* room was checked: only -ENOMEM; say so rather than drop silently */
        if (direct)
            tl__ur_close_direct(loop, fd);
        loop->stats.accept_errors++;
        if (multishot)
            tl__op_complete(loop, oi, err, true, NULL);
        else
            tl__ur_finish(loop, oi, err, NULL);
        return;
    }
    loop->stats.accepted++;
    set_bits(&loop->o[oi], bits(&loop->o[oi]) & ~(uintptr_t)OP_AT_CEILING);
    tl_completion extra = {.u.accepted = handle_id(loop, ci)};
    if (multishot)
        tl__op_complete(loop, oi, 0, true, &extra);
    else
        tl__ur_finish(loop, oi, 0, &extra);
}

/* Whether listener accepts may go into the file table: room there for one more
 * listener's whole queue beside every handle and the other listeners' queues
 * (uring.h). */
static bool direct_room(const tl_loop *loop, const uring_state *s) {
    uint64_t need = loop->h_max + (uint64_t)(s->direct_accepts + 1) * s->direct_queue;
    return s->direct && s->ms_accept && need <= s->direct_slots;
}

/* A listener whose multishot accept took plain descriptors because the table
 * had no room then (another listener held it) moves into the table once
 * there is room: at its next connection its accept is stopped, and the
 * -ECANCELED re-arms it direct. A multishot accept never ends by itself, so
 * without this it would stay plain for the listener's life. */
static void switch_to_direct(tl_loop *loop, uint32_t oi) {
    tl_oslot *o = &loop->o[oi];
    uintptr_t b = bits(o);
    if (!o->multishot || o->cancelling || !(b & OP_MS_SQE) || (b & (OP_DIRECT_SQE | OP_STOP)) ||
        !direct_room(loop, state(loop)))
        return;
    set_bits(o, b | OP_STOP);
    tl__ur_want_arm(loop, oi);
}

/* Moves the head accept op of listener hi on: adopts parked connections while
 * there is room, pauses at the ceiling, or arms the SQE. Returns true while the
 * listener must wait on the paused list (for room, or for its backoff). */
bool tl__ur_accept_step(tl_loop *loop, uint32_t hi) {
    uring_state *s = state(loop);
    for (;;) {
        tl_hslot *h = &loop->h[hi];
        uint32_t oi = h->rq_head;
        if (oi == TL_NIL || h->closing || h->detaching)
            return false;
        tl_oslot *o = &loop->o[oi];
        if (o->cancelling)
            return false; /* its cancellation completes it */
        if (h->backoff_until) {
            if (h->backoff_until > loop->now_ms)
                return true;
            h->backoff_until = 0;
            loop->backoff_listeners--;
        }
        if (!tl__handle_room(loop)) {
            if (!o->multishot) { /* the seed's ResourceLimit, loud, as on epoll */
                tl__ur_finish(loop, oi, -EMFILE, NULL);
                continue;
            }
            if (!(bits(o) & OP_AT_CEILING)) {
                loop->stats.accept_pauses++;
                set_bits(o, bits(o) | OP_AT_CEILING);
            }
            if ((bits(o) & OP_ARMED) && !(bits(o) & OP_STOP)) {
                set_bits(o, bits(o) | OP_STOP); /* stop the kernel accepting for us */
                tl__ur_want_arm(loop, oi);
            }
            return true;
        }
        bool parked_direct = false;
        int fd = parked_take(loop, hi, &parked_direct);
        if (fd >= 0) {
            accept_fd(loop, oi, fd, parked_direct);
            continue;
        }
        if (bits(o) & OP_ARMED)
            return false; /* in flight, or its pause-cancel ends soon and re-arms it */
        struct io_uring_sqe *sqe = tl__ur_op_sqe(loop, oi);
        if (!sqe)
            return false;
        if (o->multishot && direct_room(loop, s)) {
            /* Into a free slot of the table; no SOCK_CLOEXEC there (-EINVAL):
             * an installed descriptor gets O_CLOEXEC from the install. */
            io_uring_prep_multishot_accept_direct(sqe, h->fd, NULL, NULL, SOCK_NONBLOCK);
            set_bits(o, bits(o) | OP_MS_SQE | OP_DIRECT_SQE);
            s->direct_accepts++;
        } else if (o->multishot && s->ms_accept) {
            io_uring_prep_multishot_accept(sqe, h->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
            set_bits(o, bits(o) | OP_MS_SQE);
        } else {
            io_uring_prep_accept(sqe, h->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        }
        return false;
    }
}

void tl__ur_run_paused(tl_loop *loop) {
    uring_state *s = state(loop);
    uint32_t keep = 0;
    uint32_t len = s->paused_len;
    for (uint32_t i = 0; i < len; i++) {
        uint32_t hi;
        if (tl__handle_lookup(loop, s->paused[i], &hi) < 0)
            continue;
        uint64_t id = s->paused[i];
        if (tl__ur_accept_step(loop, hi))
            s->paused[keep++] = id;
        else
            loop->h[hi].paused = 0;
    }
    /* tl__ur_accept_step never lists, so nothing was appended behind len */
    s->paused_len = keep;
}

void tl__ur_resume_accepts(tl_loop *loop) {
    uring_state *s = state(loop);
    /* Called from inside slot release (delivery, detach, a failed handle_new):
     * handles are made in the next wait, never re-entrantly here. */
    if (s && (s->paused_len > 0 || s->parked_len > 0))
        s->resume = true;
}

void tl__ur_on_accept(tl_loop *loop, uint32_t oi, int32_t res, bool more) {
    uring_state *s = state(loop);
    tl_oslot *o = &loop->o[oi];
    uint32_t hi = o->handle;
    uintptr_t was = bits(o);
    bool direct = (was & OP_DIRECT_SQE) != 0;
    if (!more)
        disarm(o);
    if (!more && direct)
        s->direct_accepts--;
    if (res >= 0) {
        bool queued_first = false;
        for (uint32_t i = 0; i < s->parked_len && !queued_first; i++)
            queued_first = s->parked[i].listener == handle_id(loop, hi);
        if (tl__handle_room(loop) && !queued_first) {
            accept_fd(loop, oi, res, direct);
            if (more && !direct)
                switch_to_direct(loop, oi);
        } else {
            /* turnloop#77: the kernel accepted past the ceiling. Keep the
             * connection, stop the multishot, and adopt it when room comes. */
            park_fd(loop, hi, res, direct);
            if (o->multishot && !(bits(o) & OP_AT_CEILING)) {
                loop->stats.accept_pauses++;
                set_bits(o, bits(o) | OP_AT_CEILING);
            }
            tl__ur_list_paused(loop, hi);
            if (!o->multishot) {
                tl__ur_finish(loop, oi, -EMFILE, NULL);
                return;
            }
            if (more && !(bits(o) & OP_STOP)) {
                set_bits(o, bits(o) | OP_STOP);
                tl__ur_want_arm(loop, oi);
            }
        }
        if (!more && loop->o[oi].state == TL_SLOT_LIVE) {
            if (loop->o[oi].cancelling)
                tl__ur_finish(loop, oi, -ECANCELED, NULL);
            else
                tl__ur_want_arm(loop, oi); /* re-arm (single accepts standing in for multishot) */
        }
        return;
    }
    if (more)
        return; /* an error that did not end the request */
    if (o->cancelling) {
        tl__ur_finish(loop, oi, res == -ECANCELED ? -ECANCELED : res, NULL);
        return;
    }
    if (res == -EINVAL && (was & OP_DIRECT_SQE)) {
        s->direct = false; /* refused after all: accept real descriptors */
        tl__ur_want_arm(loop, oi);
        return;
    }
    if (res == -EINVAL && (was & OP_MS_SQE)) {
        s->ms_accept = false; /* before 5.19: single accepts, re-armed */
        tl__ur_want_arm(loop, oi);
        return;
    }
    switch (res) {
    case -ECANCELED: /* our own pause-cancel (or a stale cancel): go on when there is room */
    case -EINTR:
    case -EAGAIN:
    case -ECONNABORTED:
    case -EPROTO:
        tl__ur_want_arm(loop, oi);
        return;
    case -EMFILE:
    case -ENFILE:
    case -ENOBUFS:
    case -ENOMEM:
        loop->stats.accept_errors++;
        if (o->multishot) { /* out of descriptors: back off, do not spin */
            loop->h[hi].backoff_until = loop->now_ms + ACCEPT_BACKOFF_MS;
            loop->backoff_listeners++;
            tl__ur_list_paused(loop, hi);
            return;
        }
        break;
    default:
        break;
    }
    tl__ur_finish(loop, oi, res, NULL);
}
