/* Private to the io_uring backend: its state, the per-op bits, and what
 * uring.c (ring, arm phase, streams, the wait) and uring_accept.c (accepting
 * under the ceiling, turnloop#77) call in each other. Not part of the seam. */
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
#define BUF_GROUP 0
/* liburing 2.3's private INT_FLAG_REG_RING (src/int_flags.h): struct io_uring's
 * int_flags bit that makes io_uring_enter use the registered index. */
#define URING_INT_FLAG_REG_RING 1u

/* user_data values that are never op ids (an op id carries a non-zero loop tag). */
#define UD_WAKE 0u   /* the poll on loop->wake_fd */
#define UD_IGNORE 1u /* async cancel requests: the target's own CQE is what counts */

/* Per-op backend state, kept in tl_oslot.backend_data as bits. */
#define OP_ARMED 0x1u   /* an SQE of this op is in the kernel: it ends on its own CQE */
#define OP_PENDING 0x2u /* listed for the arm phase */
#define OP_STOP 0x4u    /* wants an async cancel (the host's, or a pause at the ceiling) */
#define OP_CANCEL_SENT 0x8u
#define OP_MS_SQE 0x10u     /* the SQE in flight is a multishot one (for the -EINVAL fallback) */
#define OP_AT_CEILING 0x20u /* accept: stopped at max_handles (counted once per pause) */

typedef struct parked_fd {
    tl_handle listener; /* accepted by the kernel while the loop was at its ceiling */
    int fd;
} parked_fd;

typedef struct uring_state {
    struct io_uring ring;
    bool ring_ok;
    bool wake_armed;
    bool resume;     /* a handle slot was freed: look at paused listeners */
    bool sq_starved; /* no SQE even after a flush: the rest waits for the next turn */
    /* features, probed at init or learnt from -EINVAL (then off for this loop) */
    bool ms_accept, ms_recv, stable_submit;
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
    /* ops waiting for the arm phase (ids: a slot reused meanwhile is stale) */
    uint64_t *pend, *pend_spare;
    uint32_t pend_len, pend_cap, pend_spare_cap;
    /* listeners waiting for room or for a backoff to end (ids) */
    uint64_t *paused;
    uint32_t paused_len, paused_cap;
    parked_fd *parked;
    uint32_t parked_len, parked_cap;
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
    set_bits(o, bits(o) & (OP_PENDING | OP_AT_CEILING));
}

static inline uint64_t op_id(const tl_loop *loop, uint32_t oi) {
    return tl__make_id(loop, loop->o[oi].gen, oi);
}

static inline uint64_t handle_id(const tl_loop *loop, uint32_t hi) {
    return tl__make_id(loop, loop->h[hi].gen, hi);
}

/* uring.c */
void tl__ur_push_id(uint64_t **arr, uint32_t *len, uint32_t *cap, uint64_t id);
/* Lists op oi for this turn's arm phase (arm it, or send its cancel). */
void tl__ur_want_arm(tl_loop *loop, uint32_t oi);
/* The final completion of a queued op; the next op of that queue goes in. */
void tl__ur_finish(tl_loop *loop, uint32_t oi, int32_t res, const tl_completion *extra);
/* An SQE for op oi, marked in flight; NULL (and oi listed again) when none is free. */
struct io_uring_sqe *tl__ur_op_sqe(tl_loop *loop, uint32_t oi);

/* Gives buffer id back to the kernel's provided-buffer ring. */
void tl__ur_buf_give(uring_state *s, tl_loop *loop, uint32_t id);

/* uring_udp.c: datagram receives and sends */
void tl__ur_udp_init(tl_loop *loop, uring_state *s);
void tl__ur_udp_arm(tl_loop *loop, uint32_t oi);
void tl__ur_udp_on_cqe(tl_loop *loop, uint32_t oi, int32_t res, uint32_t flags);

/* uring_accept.c */
void tl__ur_list_paused(tl_loop *loop, uint32_t hi);
bool tl__ur_accept_step(tl_loop *loop, uint32_t hi);
void tl__ur_run_paused(tl_loop *loop);
void tl__ur_sweep_parked(tl_loop *loop);
void tl__ur_resume_accepts(tl_loop *loop);
void tl__ur_on_accept(tl_loop *loop, uint32_t oi, int32_t res, bool more);

#endif
