/* Private to the io_uring backend: its state, the per-op bits, and what
 * uring.c (ring, arm phase, closes, the wait), uring_stream.c (receives, the
 * buffer ring, parking, writes), uring_udp.c (datagrams) and uring_accept.c
 * (accepting under the ceiling, turnloop#77) call in each other. Not part of
 * the seam. */
#ifndef TL_BACKEND_URING_H
#define TL_BACKEND_URING_H

#include "../internal.h"

#include <liburing.h>
#include <pthread.h>
#include <sys/socket.h>

#define SQ_ENTRIES 256
#define CQ_ENTRIES 4096 /* multishot ops post many CQEs per SQE */
#define CQE_BATCH 64
#define ACCEPT_BACKOFF_MS 100
/* Min-wait (6.12): a wait after a busy turn asks for MIN_WAIT_NR completions
 * but returns with what there is after MIN_WAIT_USEC; a wait after a turn with
 * fewer than MIN_WAIT_BUSY completions is a plain wait for one, so that a lone
 * request is never held back. */
#define MIN_WAIT_USEC 50
#define MIN_WAIT_NR 32
#define MIN_WAIT_BUSY 8
#ifndef IORING_FEAT_MIN_TIMEOUT
#define IORING_FEAT_MIN_TIMEOUT (1U << 15) /* 6.12; liburing 2.3's header predates it */
#endif
#define BUF_GROUP 0
#define BUF_GROUP_UDP 1 /* the datagram pool's ring (loop->ubuf_count) */
/* liburing 2.3's private INT_FLAG_REG_RING (src/int_flags.h): struct io_uring's
 * int_flags bit that makes io_uring_enter use the registered index. */
#define URING_INT_FLAG_REG_RING 1u

/* user_data values that are never op ids (an op id carries a non-zero loop tag). */
#define UD_WAKE 0u   /* the poll on loop->wake_fd */
#define UD_IGNORE 1u /* async cancel requests: the target's own CQE is what counts */
/* IORING_OP_CLOSE of a handle: this bit, the low 16 bits of its generation (at
 * bit 24) and its slot (24 bits); the top 16 bits are 0, which no op id has
 * (its loop tag is never 0). */
#define UD_CLOSE (1ull << 47)
/* IORING_OP_FIXED_FD_INSTALL of a direct descriptor (install_fd): this bit and
 * a sequence number; its CQE is read where it lies and skipped by the turn. */
#define UD_INSTALL (1ull << 46)
#ifndef IORING_FEAT_RW_ATTR
#define IORING_FEAT_RW_ATTR (1U << 16) /* 6.14 */
#endif
#ifndef IORING_OP_FIXED_FD_INSTALL
#define IORING_OP_FIXED_FD_INSTALL 54 /* 6.8; liburing 2.3's header predates it */
#endif
/* Direct descriptors: a full table does not leave a connection in the queue as
 * EMFILE does: the kernel has accepted it, cannot place it, and closes it (a
 * reset). So the table holds every handle the loop may have (max_handles)
 * plus, per listener accepting into it, a whole accept queue (what a multishot
 * accept may take before its cancel lands: connections parked past the
 * ceiling); a loop without a ceiling gets none. At most RLIMIT_NOFILE entries
 * (the kernel's limit) and DIRECT_SLOTS_MAX (its own). */
#define DIRECT_SLOTS_MAX (1u << 20)
#define DIRECT_LISTENERS 4 /* listeners per loop the table is sized for */

/* Per-op backend state, kept in tl_oslot.backend_data as bits. */
#define OP_ARMED 0x1u   /* an SQE of this op is in the kernel: it ends on its own CQE */
#define OP_PENDING 0x2u /* listed for the arm phase */
#define OP_STOP 0x4u    /* wants an async cancel (the host's, or a pause at the ceiling) */
#define OP_CANCEL_SENT 0x8u
#define OP_MS_SQE 0x10u      /* the SQE in flight is a multishot one (for the -EINVAL fallback) */
#define OP_AT_CEILING 0x20u  /* accept: stopped at max_handles (counted once per pause) */
#define OP_ACTIVE 0x40u      /* recv: armed or fed since the last park sweep */
#define OP_PARK 0x80u        /* recv: its cancel is the park sweep's (a poll follows) */
#define OP_PARKED 0x100u     /* recv: parked: the SQE (to be) in flight is a POLL_ADD */
#define OP_DIRECT_SQE 0x200u /* accept: the SQE in flight accepts into the file table */
/* An idle receive is parked after PARK_MS to 2 * PARK_MS without bytes: its
 * armed recv (an io_kiocb and an async-poll record, ~750 B of kernel memory)
 * becomes a POLL_ADD (the io_kiocb alone); readable, it is a recv again. */
#define PARK_MS 1000
/* At most this many receives are parked per turn: each goes through the arm
 * list twice (its cancel, its poll), and that list touches as much memory as
 * it holds at once; 10,000 parked in one turn cost ~10 B of RSS per idle
 * connection, for good. */
#define PARK_BATCH 256

typedef struct parked_fd {
    tl_handle listener; /* accepted by the kernel while the loop was at its ceiling */
    int fd;
    bool direct; /* fd is an index in the ring's file table */
} parked_fd;

typedef struct uring_state {
    struct io_uring ring;
    bool ring_ok;
    bool wake_armed;
    bool resume;     /* a handle slot was freed: look at paused listeners */
    bool sq_starved; /* no SQE even after a flush: the rest waits for the next turn */
    /* features, probed at init or learnt from -EINVAL (then off for this loop) */
    bool ms_accept, ms_recv, stable_submit;
    /* min-wait on busy turns (IORING_FEAT_MIN_TIMEOUT), and the completions the
     * last wait brought (what "busy" is judged on) */
    bool min_wait;
    uint32_t last_harvest;
    /* idle receives parked on a poll every park_ms (0: never), next sweep at */
    uint32_t park_ms;
    uint64_t park_next;
    uint32_t park_cursor; /* a sweep in progress: the next op slot to look at, else 0 */
    /* SINGLE_ISSUER | DEFER_TASKRUN ring: enabled by, then owned by, thread owner */
    bool single, owned;
    pthread_t owner;
    /* the ring fd registered (io_uring_register_ring_fd) by thread reg_thread */
    bool reg_fd, reg_tried, reg_ok;
    pthread_t reg_thread;
    /* the provided-buffer ring over loop->buf_mem; NULL: recv is poll + read */
    struct io_uring_buf_ring *br;
    size_t br_bytes;
    unsigned br_mask;
    uint32_t br_avail; /* buffers in the ring: given minus taken by CQEs */
    /* Buffers released while receives wait for one: kept out of the ring until
     * the arm phase, so that an armed receive of another connection cannot
     * take them in the kernel ahead of the ones waiting (buf_count entries). */
    uint32_t *reserve;
    uint32_t reserve_len;
    /* the datagram pool's own ring (BUF_GROUP_UDP) over loop->ubuf_mem; NULL:
     * the loop has no datagram pool, or its datagrams poll + recvmmsg */
    struct io_uring_buf_ring *ubr;
    size_t ubr_bytes;
    unsigned ubr_mask;
    /* ops waiting for the arm phase (ids: a slot reused meanwhile is stale) */
    uint64_t *pend, *pend_spare;
    uint32_t pend_len, pend_cap, pend_spare_cap;
    /* listeners waiting for room or for a backoff to end (ids) */
    uint64_t *paused;
    uint32_t paused_len, paused_cap;
    parked_fd *parked;
    uint32_t parked_len, parked_cap;
    /* streams whose descriptor the ring closes (handle ids, for the arm phase;
     * until it their fd stays in the slot, so that tl_loop_free closes it) */
    bool ring_close;
    uint64_t *closes;
    uint32_t closes_len, closes_cap;
    /* Direct descriptors (TURNLOOP_URING_ENABLE=direct): multishot accepts
     * into a sparse registered file table, streams used with IOSQE_FIXED_FILE.
     * dir_closes: table entries no handle owns any more (installed in the
     * process's table, or parked past the ceiling and dropped), closed in the
     * arm phase. */
    bool direct;
    uint32_t direct_slots;   /* the table's entries */
    uint32_t direct_queue;   /* an accept queue's length (net.core.somaxconn) */
    uint32_t direct_accepts; /* multishot accepts in flight into the table */
    /* The first receive of an accepted connection is a single recv: its
     * request is usually there (TCP_DEFER_ACCEPT), and a connection closed
     * after one answer then never arms a poll to be cancelled. */
    bool first_recv;
    uint64_t *dir_closes;
    uint32_t dir_closes_len, dir_closes_cap;
    uint32_t install_seq;
    uint64_t install_lost; /* an install whose CQE did not come in time: close its fd */
    /* datagrams (uring_udp.c): multishot recvmsg into the buffer ring, with
     * this header read by the kernel for every datagram, so it never moves */
    bool ms_recvmsg;
    struct msghdr dgram_msg;
    /* sendmsg headers, stable until the submit that carries them */
    struct msghdr *msgs;
    uint32_t msg_used, msg_cap;
} uring_state;

static inline uring_state *state(tl_loop *loop) {
    return loop->be_state;
}

static inline uintptr_t bits(const tl_oslot *o) {
    return (uintptr_t)o->backend_data;
}
static inline void set_bits(tl_oslot *o, uintptr_t b) {
    o->backend_data = (void *)b;
}

/* The SQE ended; whether the op is listed, or paused, stays as it was. */
static inline void disarm(tl_oslot *o) {
    set_bits(o, bits(o) & (OP_PENDING | OP_AT_CEILING | OP_ACTIVE));
}

static inline uint64_t op_id(const tl_loop *loop, uint32_t oi) {
    return tl__make_id(loop, loop->o[oi].gen, oi);
}

static inline uint64_t handle_id(const tl_loop *loop, uint32_t hi) {
    return tl__make_id(loop, loop->h[hi].gen, hi);
}

/* A stream's descriptor in an SQE prepared with h->fd: a direct one is an
 * index in the registered file table. */
static inline void fixed_if_direct(struct io_uring_sqe *sqe, const tl_hslot *h) {
    if (h->direct)
        sqe->flags |= IOSQE_FIXED_FILE;
}

/* uring.c */
void tl__ur_push_id(uint64_t **arr, uint32_t *len, uint32_t *cap, uint64_t id);
/* A free SQE (the SQ handed over first if full); NULL, and sq_starved set, if none. */
struct io_uring_sqe *tl__ur_get_sqe(tl_loop *loop);
/* Lists op oi for this turn's arm phase (arm it, or send its cancel). */
void tl__ur_want_arm(tl_loop *loop, uint32_t oi);
/* The final completion of a queued op; the next op of that queue goes in. */
void tl__ur_finish(tl_loop *loop, uint32_t oi, int32_t res, const tl_completion *extra);
/* An SQE for op oi, marked in flight; NULL (and oi listed again) when none is free. */
struct io_uring_sqe *tl__ur_op_sqe(tl_loop *loop, uint32_t oi);

/* uring_stream.c: the provided-buffer rings, the loop's and the datagram
 * pool's (set up at init; id, of either, given back to its own; the seam's
 * buffer_released), a stream op's SQE for the arm phase, its
 * CQEs, and the park sweep of idle receives (once a turn, before the arm phase). */
void tl__ur_buf_ring_setup(tl_loop *loop, uring_state *s);
void tl__ur_buf_give(uring_state *s, tl_loop *loop, uint32_t id);
void tl__ur_buffer_released(tl_loop *loop, uint32_t id);
void tl__ur_arm_recv(tl_loop *loop, uint32_t oi);
void tl__ur_arm_write(tl_loop *loop, uint32_t oi);
bool tl__ur_write_now(tl_loop *loop, uint32_t oi);
void tl__ur_on_recv(tl_loop *loop, uint32_t oi, int32_t res, uint32_t flags);
void tl__ur_on_write(tl_loop *loop, uint32_t oi, int32_t res);
void tl__ur_on_read(tl_loop *loop, uint32_t oi, int32_t res);
void tl__ur_on_connect(tl_loop *loop, uint32_t oi, int32_t res);
void tl__ur_park_sweep(tl_loop *loop);

/* uring_udp.c: datagram receives and sends */
void tl__ur_udp_init(tl_loop *loop, uring_state *s);
/* At the backend's end: the datagram pool's ring goes, its free buffers back
 * on the pool's stack (an AUTO loop moving to epoll goes on with them). */
void tl__ur_udp_fini(tl_loop *loop, uring_state *s);
void tl__ur_udp_arm(tl_loop *loop, uint32_t oi);
void tl__ur_udp_on_cqe(tl_loop *loop, uint32_t oi, int32_t res, uint32_t flags);

/* uring_direct.c: the registered file table (set up at init when the kernel
 * has what it needs), its unowned entries closed in the arm phase, and real
 * descriptors made on demand (the seam's install_fd). */
bool tl__ur_direct_setup(tl_loop *loop, uring_state *s);
/* A direct descriptor no handle owns: closed in this turn's batch. */
void tl__ur_close_direct(tl_loop *loop, int index);
void tl__ur_arm_dir_closes(tl_loop *loop);
int tl__ur_install_fd(tl_loop *loop, uint32_t hi);
void tl__ur_on_install_cqe(tl_loop *loop, uint64_t ud, int32_t res);

/* uring_accept.c */
void tl__ur_list_paused(tl_loop *loop, uint32_t hi);
bool tl__ur_accept_step(tl_loop *loop, uint32_t hi);
void tl__ur_run_paused(tl_loop *loop);
void tl__ur_sweep_parked(tl_loop *loop);
void tl__ur_resume_accepts(tl_loop *loop);
void tl__ur_on_accept(tl_loop *loop, uint32_t oi, int32_t res, bool more);

#endif
