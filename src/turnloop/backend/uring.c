/* The io_uring backend: completions from the kernel, one submit-and-wait per turn.
 * Only the head of each handle queue is in flight, and every SQE is prepared in
 * the arm phase right before that one submit, so nothing the kernel reads can
 * move (loop->o grows by realloc) between prep and submit; the exception is a
 * one-segment write, whose SQE reads nothing of ours (tl__ur_write_now). user_data is the
 * generational op id; an op ends only on its own terminating CQE. A stream's
 * receives, writes and the buffer ring live in uring_stream.c, accepting
 * under the handle ceiling in uring_accept.c, datagrams in uring_udp.c, the
 * direct-descriptor table in uring_direct.c. */
#include "uring.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Copies the len ids in use, not the whole old capacity (as realloc would):
 * a list sized for every op touches only as much memory as it has held. */
static int grow_ids(uint64_t **arr, uint32_t *cap, uint32_t need, uint32_t len) {
    if (need <= *cap)
        return 0;
    uint64_t *n = malloc((size_t)need * sizeof *n);
    if (!n)
        return -ENOMEM;
    if (len)
        memcpy(n, *arr, (size_t)len * sizeof *n);
    free(*arr);
    *arr = n;
    *cap = need;
    return 0;
}

/* The id lists are sized with the loop's tables (ur_fit, from tl__loop_fit),
 * where a failure is an error for the call that wanted a slot. Growth here is
 * the rare case of an id listed again while a stale copy is still queued. */
void tl__ur_push_id(uint64_t **arr, uint32_t *len, uint32_t *cap, uint64_t id) {
    if (*len == *cap && grow_ids(arr, cap, *cap ? *cap * 2 : 64, *len) < 0)
        abort(); /* a forgotten op would never complete: exactly-once needs memory */
    (*arr)[(*len)++] = id;
}

static int ur_fit(tl_loop *loop) {
    uring_state *s = state(loop);
    /* pend_spare is empty between turns (the arm phase's list, swapped). */
    int err = grow_ids(&s->pend, &s->pend_cap, loop->o_cap, s->pend_len);
    if (err == 0)
        err = grow_ids(&s->pend_spare, &s->pend_spare_cap, loop->o_cap, 0);
    if (err == 0)
        err = grow_ids(&s->paused, &s->paused_cap, loop->h_cap, s->paused_len);
    if (err == 0)
        err = grow_ids(&s->closes, &s->closes_cap, loop->h_cap, s->closes_len);
    return err;
}

/* ---- probing and setup ---------------------------------------------------- */

/* Opens a ring with the opcodes this backend needs; *submit_all tells whether
 * the kernel goes on past a failing SQE (5.18), which the sendmsg headers need. */
static int ring_open(struct io_uring *ring, bool *submit_all, bool coop_taskrun, bool *single) {
    FILE *f = fopen("/proc/sys/kernel/io_uring_disabled", "re");
    if (f) {
        int v = 0;
        if (fscanf(f, "%d", &v) != 1)
            v = 0;
        fclose(f);
        if (v == 2)
            return -EPERM; /* disabled for everyone: do not even try */
    }
    /* COOP_TASKRUN (5.19): completions are run when this thread next enters
     * the kernel instead of interrupting it; a loop is only ever turned by one
     * thread at a time and enters the kernel every turn, so nothing waits on it. */
    unsigned coop = coop_taskrun ? IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG : 0;
    struct io_uring_params p;
    int err = -EINVAL;
    /* SINGLE_ISSUER | DEFER_TASKRUN (6.1): completions are run only when the
     * turning thread asks for them, in its wait, with no task-work interrupts.
     * The kernel takes the submitter at enable time, so the ring starts
     * disabled (R_DISABLED) and the first turn enables it on the loop's thread. */
    if (*single) {
        p = (struct io_uring_params){.flags = IORING_SETUP_CQSIZE | IORING_SETUP_SUBMIT_ALL |
                                              IORING_SETUP_SINGLE_ISSUER |
                                              IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_R_DISABLED |
                                              IORING_SETUP_TASKRUN_FLAG,
                                     .cq_entries = CQ_ENTRIES};
        err = io_uring_queue_init_params(SQ_ENTRIES, ring, &p);
        *single = err == 0;
    }
    if (err == -EINVAL) {
        p = (struct io_uring_params){.flags = IORING_SETUP_CQSIZE | IORING_SETUP_SUBMIT_ALL | coop,
                                     .cq_entries = CQ_ENTRIES};
        err = io_uring_queue_init_params(SQ_ENTRIES, ring, &p);
    }
    if (err == -EINVAL && coop) {
        p = (struct io_uring_params){.flags = IORING_SETUP_CQSIZE | IORING_SETUP_SUBMIT_ALL,
                                     .cq_entries = CQ_ENTRIES};
        err = io_uring_queue_init_params(SQ_ENTRIES, ring, &p);
    }
    *submit_all = err == 0;
    if (err == -EINVAL) {
        p = (struct io_uring_params){.flags = IORING_SETUP_CQSIZE, .cq_entries = CQ_ENTRIES};
        err = io_uring_queue_init_params(SQ_ENTRIES, ring, &p);
    }
    if (err < 0)
        return err; /* -ENOSYS (no io_uring), -EPERM (disabled, seccomp), -ENOMEM */
    struct io_uring_probe *pr = io_uring_get_probe_ring(ring);
    static const int need[] = {IORING_OP_ACCEPT, IORING_OP_ASYNC_CANCEL, IORING_OP_POLL_ADD,
                               IORING_OP_RECV,   IORING_OP_SEND,         IORING_OP_SENDMSG};
    bool ok = pr != NULL;
    for (size_t i = 0; ok && i < sizeof need / sizeof need[0]; i++)
        ok = io_uring_opcode_supported(pr, need[i]);
    if (pr)
        io_uring_free_probe(pr);
    if (!ok) {
        io_uring_queue_exit(ring);
        return -EOPNOTSUPP; /* older than 5.6: epoll serves better than a half backend */
    }
    return 0;
}

int tl__uring_probe(void) {
    struct io_uring ring;
    bool submit_all, single = false;
    int err = ring_open(&ring, &submit_all, false, &single);
    if (err == 0)
        io_uring_queue_exit(&ring);
    return err;
}

static int ur_init(tl_loop *loop) {
    uring_state *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    loop->be_state = s;
    bool submit_all;
    const char *off = getenv("TURNLOOP_URING_DISABLE");
    bool coop = !off || (!strstr(off, "all") && !strstr(off, "coop_taskrun"));
    /* Opt-in: measured slower here (bench/README.md, "Speed of light"): with
     * DEFER_TASKRUN each wait returns with fewer completions, and 16-deep
     * pipelining lost most of its rate. TURNLOOP_URING_ENABLE=single_issuer. */
    const char *on = getenv("TURNLOOP_URING_ENABLE");
    s->single = on && strstr(on, "single_issuer") && (!off || !strstr(off, "all"));
    s->reg_fd = !off || (!strstr(off, "all") && !strstr(off, "ring_fd"));
    int err = ring_open(&s->ring, &submit_all, coop, &s->single);
    if (err < 0)
        return err;
    s->ring_ok = true;
    /* sendmsg headers live in a per-turn array: the kernel must have read them
     * all when the submit returns (stable submission, and no SQE left behind). */
    s->stable_submit = submit_all && (s->ring.features & IORING_FEAT_SUBMIT_STABLE) != 0;
    s->ms_accept = s->ms_recv = true; /* tried; -EINVAL turns each off */
    s->min_wait = (s->ring.features & IORING_FEAT_MIN_TIMEOUT) && on && strstr(on, "min_wait");
    s->direct = on && strstr(on, "direct");
    s->park_ms = PARK_MS;
    s->first_recv = true;
    s->ring_close = true; /* IORING_OP_CLOSE is 5.6, older than anything this backend runs on */
    const char *pm = getenv("TURNLOOP_URING_PARK_MS"); /* tests park at once, and often */
    if (pm && *pm)
        s->park_ms = (uint32_t)strtoul(pm, NULL, 10);
    /* Tests run the fallbacks on a kernel that has every feature. */
    bool no_buf_ring = false;
    if (off) {
        bool all = strstr(off, "all") != NULL;
        s->ms_accept = s->ms_accept && !all && !strstr(off, "multishot_accept");
        s->ms_recv = s->ms_recv && !all && !strstr(off, "multishot_recv");
        s->stable_submit = s->stable_submit && !all && !strstr(off, "sendmsg");
        s->min_wait = s->min_wait && !all && !strstr(off, "min_wait");
        s->direct = s->direct && !all && !strstr(off, "direct");
        if (all || strstr(off, "park"))
            s->park_ms = 0;
        s->ring_close = !all && !strstr(off, "ring_close");
        s->first_recv = !all && !strstr(off, "first_recv");
        no_buf_ring = all || strstr(off, "buf_ring");
    }
    s->msg_cap = s->ring.sq.ring_entries;
    s->msgs = calloc(s->msg_cap, sizeof *s->msgs);
    if (!s->msgs)
        return -ENOMEM;
    if (loop->wake_fd < 0)
        loop->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (loop->wake_fd < 0)
        return -errno;
    if (!no_buf_ring)
        tl__ur_buf_ring_setup(loop, s);
    s->direct = s->direct && tl__ur_direct_setup(loop, s);
    tl__ur_udp_init(loop, s);
    return 0;
}

static void ur_fini(tl_loop *loop) {
    uring_state *s = state(loop);
    if (loop->wake_fd >= 0)
        close(loop->wake_fd);
    loop->wake_fd = -1;
    if (!s)
        return;
    for (uint32_t i = 0; i < s->parked_len; i++)
        if (!s->parked[i].direct) /* direct ones go with the ring's table */
            close(s->parked[i].fd);
    if (s->ring_ok) {
        /* Freed on another thread than the one that registered the ring fd: that
         * thread's slot is dropped when it exits; this thread's same index may
         * be another ring's, so liburing must not unregister it here. */
        if (s->reg_ok && !pthread_equal(s->reg_thread, pthread_self()))
            s->ring.int_flags &= (__u8)~URING_INT_FLAG_REG_RING;
        io_uring_queue_exit(&s->ring); /* cancels what is still in flight */
    }
    loop->udp_ring_recv = false;
    if (s->br) {
        munmap(s->br, s->br_bytes);
        /* The kernel held the free buffers; the core's stack holds them again
         * (an AUTO loop moving to epoll goes on with the same buffers). */
        loop->buf_free_len = 0;
        for (uint32_t i = loop->buf_count; i-- > 0;)
            if (loop->buf_owner[i] == 0)
                loop->buf_free[loop->buf_free_len++] = i;
    }
    tl__ur_udp_fini(loop, s);
    free(s->reserve);
    free(s->closes);
    free(s->dir_closes);
    free(s->pend);
    free(s->pend_spare);
    free(s->paused);
    free(s->parked);
    free(s->msgs);
    free(s);
    loop->be_state = NULL;
}

/* tl_loop_new does not call fini when init fails (it clears loop->be first), so
 * a failed init cleans up after itself through this wrapper. */
static int ur_init_or_clean(tl_loop *loop) {
    int err = ur_init(loop);
    if (err < 0)
        ur_fini(loop);
    return err;
}

static int ur_handle_add(tl_loop *loop, uint32_t hi, unsigned shared_flags) {
    (void)hi;
    (void)loop;
    /* Wake-one is an epoll wait-queue flag; an accept SQE has no equivalent. */
    if (shared_flags & TL_SHARED_EXCLUSIVE)
        return -EOPNOTSUPP;
    return 0;
}

static void ur_handle_remove(tl_loop *loop, uint32_t hi) {
    /* Nothing is registered per descriptor; detach and close come here only
     * once every SQE on the handle has completed. */
    (void)loop;
    (void)hi;
}

/* ---- the arm list ---------------------------------------------------------- */

void tl__ur_want_arm(tl_loop *loop, uint32_t oi) {
    tl_oslot *o = &loop->o[oi];
    if (bits(o) & OP_PENDING)
        return;
    set_bits(o, bits(o) | OP_PENDING);
    uring_state *s = state(loop);
    tl__ur_push_id(&s->pend, &s->pend_len, &s->pend_cap, op_id(loop, oi));
}

/* The final completion of a queued op, then the next op of that queue goes in. */
void tl__ur_finish(tl_loop *loop, uint32_t oi, int32_t res, const tl_completion *extra) {
    tl_oslot *o = &loop->o[oi];
    uint32_t hi = o->handle;
    bool rq = tl__op_on_read_queue(o->kind);
    set_bits(o, 0);
    tl__op_complete(loop, oi, res, false, extra);
    tl_hslot *h = &loop->h[hi];
    if (h->closing || h->detaching)
        return; /* the rest are being cancelled */
    uint32_t next = rq ? h->rq_head : h->wq_head;
    if (next != TL_NIL)
        tl__ur_want_arm(loop, next);
}

struct io_uring_sqe *tl__ur_get_sqe(tl_loop *loop) {
    uring_state *s = state(loop);
    struct io_uring_sqe *sqe = io_uring_get_sqe(&s->ring);
    if (!sqe) { /* the SQ is full: hand it over now, part of this turn's batch */
        io_uring_submit(&s->ring);
        s->msg_used = 0;
        sqe = io_uring_get_sqe(&s->ring);
    }
    if (!sqe)
        s->sq_starved = true;
    return sqe;
}

/* An SQE for op oi, marked in flight; NULL (and oi listed again) when none is free. */
struct io_uring_sqe *tl__ur_op_sqe(tl_loop *loop, uint32_t oi) {
    struct io_uring_sqe *sqe = tl__ur_get_sqe(loop);
    if (!sqe) {
        tl__ur_want_arm(loop, oi);
        return NULL;
    }
    tl_oslot *o = &loop->o[oi];
    set_bits(o, (bits(o) & ~(uintptr_t)(OP_MS_SQE | OP_DIRECT_SQE)) | OP_ARMED);
    io_uring_sqe_set_data64(sqe, op_id(loop, oi));
    return sqe;
}

/* ---- the seam: submit, cancel, release ------------------------------------ */

static void ur_submit(tl_loop *loop, uint32_t oi) {
    tl_oslot *o = &loop->o[oi];
    tl_hslot *h = &loop->h[o->handle];
    if (o->kind == TL_OP_CONNECT && !h->connecting) {
        tl__ur_finish(loop, oi, 0, NULL); /* connected at once (loopback) */
        return;
    }
    uint32_t head = tl__op_on_read_queue(o->kind) ? h->rq_head : h->wq_head;
    if (head != oi)
        return; /* it goes in as the ones ahead of it tl__ur_finish */
    if (o->kind == TL_OP_WRITE && tl__ur_write_now(loop, oi))
        return;
    tl__ur_want_arm(loop, oi);
}

/* A write prepared by tl__ur_write_now whose SQE the kernel has not been
 * given yet is taken back (a NOP in its place): a write cancelled before the
 * turn's submit is never written, as when every write waited for the arm
 * phase. */
static bool write_unsubmit(tl_loop *loop, uint32_t oi) {
    struct io_uring *r = &state(loop)->ring;
    uint64_t ud = op_id(loop, oi);
    for (unsigned i = r->sq.sqe_head; i != r->sq.sqe_tail; i++) {
        struct io_uring_sqe *sqe = &r->sq.sqes[i & *r->sq.kring_mask];
        if (sqe->user_data == ud) {
            io_uring_prep_nop(sqe);
            io_uring_sqe_set_data64(sqe, UD_IGNORE);
            return true;
        }
    }
    return false;
}

static void ur_cancel(tl_loop *loop, uint32_t oi) {
    tl_oslot *o = &loop->o[oi];
    if ((bits(o) & OP_ARMED) && o->kind == TL_OP_WRITE && write_unsubmit(loop, oi)) {
        tl__ur_finish(loop, oi, -ECANCELED, NULL);
        return;
    }
    if (bits(o) & OP_ARMED) { /* in the kernel: it ends on its own CQE */
        if (!(bits(o) & OP_STOP)) {
            set_bits(o, bits(o) | OP_STOP);
            tl__ur_want_arm(loop, oi);
        }
        return;
    }
    tl_hslot *h = &loop->h[o->handle];
    if (o->kind == TL_OP_ACCEPT && h->backoff_until) {
        h->backoff_until = 0;
        loop->backoff_listeners--;
    }
    tl__ur_finish(loop, oi, -ECANCELED, NULL); /* never reached the kernel */
}

/* ---- the turn's one wait ----------------------------------------------------- */

static void arm_one(tl_loop *loop, uint32_t oi) {
    tl_oslot *o = &loop->o[oi];
    set_bits(o, bits(o) & ~(uintptr_t)OP_PENDING);
    uintptr_t b = bits(o);
    if (b & OP_ARMED) {
        if ((b & OP_STOP) && !(b & OP_CANCEL_SENT)) {
            struct io_uring_sqe *sqe = tl__ur_get_sqe(loop);
            if (!sqe) {
                tl__ur_want_arm(loop, oi);
                return;
            }
            io_uring_prep_cancel64(sqe, op_id(loop, oi), 0);
            io_uring_sqe_set_data64(sqe, UD_IGNORE);
            set_bits(o, b | OP_CANCEL_SENT);
        }
        return;
    }
    if (o->starved)
        return;          /* waits for a buffer: rearm_starved arms it in its turn */
    if (o->cancelling) { /* a retry (-EAGAIN) that raced the host's cancel */
        tl__ur_finish(loop, oi, -ECANCELED, NULL);
        return;
    }
    tl_hslot *h = &loop->h[o->handle];
    switch (o->kind) {
    case TL_OP_ACCEPT:
        if (tl__ur_accept_step(loop, o->handle))
            tl__ur_list_paused(loop, o->handle);
        return;
    case TL_OP_CONNECT: {
        struct io_uring_sqe *sqe = tl__ur_op_sqe(loop, oi);
        if (sqe) /* connect() already started: writable is its outcome */
            io_uring_prep_poll_add(sqe, h->fd, POLLOUT);
        return;
    }
    case TL_OP_READ: {
        struct io_uring_sqe *sqe = tl__ur_op_sqe(loop, oi);
        if (sqe) {
            io_uring_prep_recv(sqe, h->fd, tl__op_io(loop, o)->iov[0].iov_base,
                               tl__op_io(loop, o)->iov[0].iov_len, 0);
            fixed_if_direct(sqe, h);
        }
        return;
    }
    case TL_OP_RECV:
        tl__ur_arm_recv(loop, oi);
        return;
    case TL_OP_WRITE:
        tl__ur_arm_write(loop, oi);
        return;
    case TL_OP_UDP_RECV:
    case TL_OP_UDP_SEND:
        tl__ur_udp_arm(loop, oi);
        return;
    default:
        return;
    }
}

/* Receives that found no buffer go in again, oldest first and no more of them
 * than there are buffers to take, ahead of this turn's other SQEs: with
 * thousands of connections on a few hundred buffers, the kernel serves in SQE
 * order, so this order is the order of service. */
static void rearm_starved(tl_loop *loop) {
    uring_state *s = state(loop);
    /* Released buffers go into the ring only now: the submit issues these SQEs
     * before any armed receive's task work runs, so the waiting take them. */
    for (uint32_t i = 0; i < s->reserve_len; i++)
        tl__ur_buf_give(s, loop, s->reserve[i]);
    s->reserve_len = 0;
    uint32_t avail = s->br ? s->br_avail : loop->buf_free_len;
    while (avail > 0 && loop->starve_len > 0 && !s->sq_starved) {
        uint32_t oi = tl__starve_pop(loop);
        if (oi == TL_NIL)
            break;
        arm_one(loop, oi);
        avail--;
    }
}

/* ---- closing in the ring --------------------------------------------------- */

/* The close goes into the next turn's batch; the handle (and the loop's
 * alive) stays until the kernel has closed it, so the TL_OP_CLOSE record still
 * means "closed". A loop freed before that turn closes the descriptor itself. */
static int ur_close_fd(tl_loop *loop, uint32_t hi) {
    uring_state *s = state(loop);
    if (!s->ring_close && !loop->h[hi].direct) /* only the ring can close a direct one */
        return -EOPNOTSUPP;
    tl__ur_push_id(&s->closes, &s->closes_len, &s->closes_cap, handle_id(loop, hi));
    return 0;
}

/* The closes go into this turn's batch: no close(2) per connection. */
static void arm_closes(tl_loop *loop) {
    uring_state *s = state(loop);
    uint32_t keep = 0;
    for (uint32_t i = 0; i < s->closes_len; i++) {
        uint32_t hi;
        if (tl__handle_lookup(loop, s->closes[i], &hi) < 0 || loop->h[hi].fd < 0)
            continue;
        struct io_uring_sqe *sqe = s->sq_starved ? NULL : tl__ur_get_sqe(loop);
        if (!sqe) {
            s->closes[keep++] = s->closes[i]; /* next turn */
            continue;
        }
        /* A direct close goes without IOSQE_FIXED_FILE (with it: -EBADF). Every
         * op on the handle has ended, so no request holds the file: the socket
         * is closed (its FIN sent) with the table entry. */
        if (loop->h[hi].direct)
            io_uring_prep_close_direct(sqe, (unsigned)loop->h[hi].fd);
        else
            io_uring_prep_close(sqe, loop->h[hi].fd);
        io_uring_sqe_set_data64(sqe, UD_CLOSE | ((uint64_t)(loop->h[hi].gen & 0xffff) << 24) | hi);
        loop->h[hi].fd = -1; /* the kernel's from here */
        loop->h[hi].direct = 0;
    }
    s->closes_len = keep;
    if (s->dir_closes_len > 0)
        tl__ur_arm_dir_closes(loop);
}

static void on_close_cqe(tl_loop *loop, uint64_t ud) {
    uint32_t hi = (uint32_t)(ud & 0xffffff), gen = (uint32_t)(ud >> 24) & 0xffff;
    if (hi >= loop->h_cap || loop->h[hi].state != TL_SLOT_LIVE ||
        (loop->h[hi].gen & 0xffff) != gen || !loop->h[hi].closing)
        return;                  /* cannot happen: the slot waits for this CQE */
    tl__handle_closed(loop, hi); /* whatever close said, the descriptor is gone */
}

/* Prepares every SQE of this turn; ops that become heads meanwhile go in too. */
static void arm_phase(tl_loop *loop) {
    uring_state *s = state(loop);
    s->sq_starved = false;
    rearm_starved(loop);
    if (!s->wake_armed) {
        struct io_uring_sqe *sqe = tl__ur_get_sqe(loop);
        if (sqe) {
            io_uring_prep_poll_add(sqe, loop->wake_fd, POLLIN);
            io_uring_sqe_set_data64(sqe, UD_WAKE);
            s->wake_armed = true;
        }
    }
    if (s->closes_len > 0 || s->dir_closes_len > 0)
        arm_closes(loop);
    while (s->pend_len > 0 && !s->sq_starved) {
        uint64_t *list = s->pend;
        uint32_t len = s->pend_len, cap = s->pend_cap;
        s->pend = s->pend_spare;
        s->pend_cap = s->pend_spare_cap;
        s->pend_len = 0;
        s->pend_spare = list;
        s->pend_spare_cap = cap;
        for (uint32_t i = 0; i < len; i++) {
            uint32_t oi;
            if (tl__op_lookup(loop, list[i], &oi) < 0 || loop->o[oi].state != TL_SLOT_LIVE)
                continue;        /* finished (cancelled) since it was listed */
            if (s->sq_starved) { /* keep the rest for the next turn */
                set_bits(&loop->o[oi], bits(&loop->o[oi]) & ~(uintptr_t)OP_PENDING);
                tl__ur_want_arm(loop, oi);
                continue;
            }
            arm_one(loop, oi);
        }
    }
}

static void on_cqe(tl_loop *loop, uint64_t ud, int32_t res, uint32_t flags) {
    uring_state *s = state(loop);
    if (ud == UD_WAKE) {
        s->wake_armed = false;
        tl__wake_consume(loop);
        return;
    }
    if (ud == UD_IGNORE || ud == LIBURING_UDATA_TIMEOUT)
        return;
    if ((ud >> 48) == 0 && (ud & UD_INSTALL)) {
        tl__ur_on_install_cqe(loop, ud, res);
        return;
    }
    if ((ud >> 48) == 0 && (ud & UD_CLOSE)) {
        on_close_cqe(loop, ud);
        return;
    }
    if ((flags & IORING_CQE_F_BUFFER) && s->br)
        s->br_avail--;
    uint32_t oi;
    if (tl__op_lookup(loop, ud, &oi) < 0 || loop->o[oi].state != TL_SLOT_LIVE ||
        !(bits(&loop->o[oi]) & OP_ARMED)) {
        /* Cannot happen (an op ends only on its last CQE); never lose a buffer. */
        if ((flags & IORING_CQE_F_BUFFER) && s->br &&
            (flags >> IORING_CQE_BUFFER_SHIFT) < loop->buf_count)
            tl__ur_buf_give(s, loop, flags >> IORING_CQE_BUFFER_SHIFT);
        return;
    }
    switch (loop->o[oi].kind) {
    case TL_OP_ACCEPT:
        tl__ur_on_accept(loop, oi, res, (flags & IORING_CQE_F_MORE) != 0);
        return;
    case TL_OP_CONNECT:
        tl__ur_on_connect(loop, oi, res);
        return;
    case TL_OP_READ:
        tl__ur_on_read(loop, oi, res);
        return;
    case TL_OP_RECV:
        tl__ur_on_recv(loop, oi, res, flags);
        return;
    case TL_OP_WRITE:
        tl__ur_on_write(loop, oi, res);
        return;
    case TL_OP_UDP_RECV:
    case TL_OP_UDP_SEND:
        tl__ur_udp_on_cqe(loop, oi, res, flags);
        return;
    default:
        return;
    }
}

/* A single-issuer ring is enabled by the first thread that turns the loop, and
 * only that thread may enter it afterwards (the kernel answers -EEXIST). */
static int ur_claim(uring_state *s) {
    pthread_t me = pthread_self(); /* not gettid(): that is a system call per turn */
    if (s->owned && pthread_equal(s->owner, me))
        return 0;
    if (s->owned)
        return -EEXIST; /* handed to another thread: TURNLOOP_URING_DISABLE=single_issuer */
    /* liburing 2.3 declares io_uring_enable_rings but does not export it. */
    if (syscall(__NR_io_uring_register, s->ring.ring_fd, IORING_REGISTER_ENABLE_RINGS, NULL, 0) < 0)
        return -errno;
    s->owner = me;
    s->owned = true;
    return 0;
}

/* A registered ring fd (5.18) spares every io_uring_enter its fd lookup. The
 * registration is per thread, so the thread that turns makes it, on its first
 * turn. Its index means nothing on another thread (or names another ring there):
 * a loop handed to a new thread goes back to the plain fd. */
static void ur_ring_fd(uring_state *s) {
    pthread_t me = pthread_self();
    if (s->reg_tried) {
        if (s->reg_ok && !pthread_equal(s->reg_thread, me)) {
            s->ring.int_flags &= (__u8)~URING_INT_FLAG_REG_RING;
            s->ring.enter_ring_fd = s->ring.ring_fd;
            s->reg_ok = false;
        }
        return;
    }
    s->reg_tried = true;
    s->reg_thread = me;
    s->reg_ok = io_uring_register_ring_fd(&s->ring) == 1;
}

/* Submits what is queued and waits in one io_uring_enter, with a min-wait:
 * liburing 2.3 has no helper for it (io_uring_submit_and_wait_min_timeout is
 * 2.8), so the SQ tail is published here as its __io_uring_flush_sq does (2.3
 * set the SQ index array up once, identity) and io_uring_enter2 gets the
 * EXT_ARG with min_wait_usec in what 2.3's header calls pad. */
static int enter_min_wait(tl_loop *loop, uring_state *s, int timeout_ms) {
    struct io_uring *ring = &s->ring;
    unsigned tail = ring->sq.sqe_tail;
    if (ring->sq.sqe_head != tail) {
        ring->sq.sqe_head = tail;
        io_uring_smp_store_release(ring->sq.ktail, tail);
    }
    unsigned submit = tail - io_uring_smp_load_acquire(ring->sq.khead);
    struct __kernel_timespec ts = {.tv_sec = timeout_ms / 1000,
                                   .tv_nsec = (long long)(timeout_ms % 1000) * 1000000};
    struct io_uring_getevents_arg arg = {.sigmask = 0,
                                         .sigmask_sz = _NSIG / 8,
                                         .pad = MIN_WAIT_USEC,
                                         .ts = timeout_ms < 0 ? 0 : (uint64_t)(uintptr_t)&ts};
    unsigned flags = IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG;
    int fd = ring->ring_fd;
    if (ring->int_flags & URING_INT_FLAG_REG_RING) {
        flags |= IORING_ENTER_REGISTERED_RING;
        fd = ring->enter_ring_fd;
    }
    loop->stats.min_waits++;
    return io_uring_enter2((unsigned)fd, submit, MIN_WAIT_NR, flags, (sigset_t *)&arg, sizeof arg);
}

static int ur_wait(tl_loop *loop, int timeout_ms) {
    uring_state *s = state(loop);
    if (s->single) {
        int err = ur_claim(s);
        if (err < 0)
            return err;
    }
    if (s->reg_fd)
        ur_ring_fd(s);
    uint32_t queued = tl__cq_count(loop);
    if (s->parked_len > 0)
        tl__ur_sweep_parked(loop);
    if (s->resume || loop->backoff_listeners > 0) {
        s->resume = false;
        tl__ur_run_paused(loop);
    }
    if (s->park_ms && s->br) {
        tl__ur_park_sweep(loop);
        /* An idle loop still wakes to park what went idle, at once while a
         * sweep is under way. */
        if (s->park_cursor)
            timeout_ms = 0;
        else if (loop->o_live > 0 && (timeout_ms < 0 || (uint32_t)timeout_ms > s->park_ms))
            timeout_ms = (int)s->park_ms;
    }
    arm_phase(loop);
    if (tl__cq_count(loop) != queued || s->pend_len > 0 || s->closes_len > 0 ||
        s->dir_closes_len > 0)
        timeout_ms = 0; /* work done before the wait: report it instead of sleeping */

    int r;
    if (timeout_ms == 0) {
        /* DEFER_TASKRUN posts completions only when asked for (GETEVENTS). */
        r = s->single ? io_uring_submit_and_get_events(&s->ring) : io_uring_submit(&s->ring);
    } else {
        r = -EINVAL;
        if (s->min_wait && s->last_harvest >= MIN_WAIT_BUSY) {
            r = enter_min_wait(loop, s, timeout_ms);
            if (r == -EINVAL)
                s->min_wait = false; /* refused after all: plain waits from now on */
        }
        if (r == -EINVAL) {
            struct io_uring_cqe *cqe;
            struct __kernel_timespec ts = {.tv_sec = timeout_ms / 1000,
                                           .tv_nsec = (long long)(timeout_ms % 1000) * 1000000};
            /* One io_uring_enter: submit the batch and wait (EXT_ARG, 5.11+). */
            r = io_uring_submit_and_wait_timeout(&s->ring, &cqe, 1, timeout_ms < 0 ? NULL : &ts,
                                                 NULL);
        }
    }
    s->msg_used = 0;
    if (r < 0 && r != -ETIME && r != -EINTR && r != -EBUSY && r != -EAGAIN)
        return r;
    loop->now_ms = tl__clock_ms();

    struct io_uring_cqe *cqes[CQE_BATCH];
    unsigned n;
    uint32_t harvest = 0;
    while ((n = io_uring_peek_batch_cqe(&s->ring, cqes, CQE_BATCH)) > 0) {
        for (unsigned i = 0; i < n; i++)
            on_cqe(loop, cqes[i]->user_data, cqes[i]->res, cqes[i]->flags);
        io_uring_cq_advance(&s->ring, n);
        harvest += n;
    }
    s->last_harvest = harvest;
    return 0;
}

const tl_backend_ops tl__backend_uring = {
    .name = "uring",
    .init = ur_init_or_clean,
    .fini = ur_fini,
    .handle_add = ur_handle_add,
    .handle_remove = ur_handle_remove,
    .submit = ur_submit,
    .cancel = ur_cancel,
    .wait = ur_wait,
    .resume_accepts = tl__ur_resume_accepts,
    .buffer_released = tl__ur_buffer_released,
    .fit = ur_fit,
    .close_fd = ur_close_fd,
    .install_fd = tl__ur_install_fd,
};
