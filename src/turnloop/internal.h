/* The loop's private state, shared by the core files and the backends.
 * Invariants: a slot is FREE, LIVE or (for ops) DONE; an id names a slot only
 * while its generation matches; every op that left FREE reaches DONE exactly
 * once (tl__op_complete with more == 0) and returns to FREE only when the host
 * has received that final completion. */
#ifndef TL_INTERNAL_H
#define TL_INTERNAL_H

#include "turnloop.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/uio.h>

#define TL_NIL UINT32_MAX

/* Id layout: 16-bit loop tag | 24-bit generation | 24-bit slot index. */
#define TL_ID_INDEX_BITS 24
#define TL_ID_GEN_MASK 0xffffffu
#define TL_ID_MAX_SLOTS (1u << TL_ID_INDEX_BITS)

enum tl_slot_state { TL_SLOT_FREE = 0, TL_SLOT_LIVE, TL_SLOT_DONE };

enum tl_handle_type { TL_H_STREAM = 1, TL_H_LISTENER, TL_H_SHARED_LISTENER, TL_H_DGRAM };

/* Readiness cached from edge-triggered events (epoll) */
#define TL_READY_IN 0x1u
#define TL_READY_OUT 0x2u
/* The peer's FIN (or an error) has been seen: end of stream stays readable,
 * and no new edge will come for it, so a short read must not clear IN. */
#define TL_READY_EOF 0x4u

/* Every connection holds one: 64 bytes, packed for it. */
typedef struct tl_hslot {
    uint32_t gen;
    int fd;
    uint32_t nops;             /* pending ops on this handle */
    uint32_t undelivered;      /* completions queued but not yet received by the host */
    uint32_t bufs_held;        /* recv buffers the host holds from this handle */
    uint32_t rq_head, rq_tail; /* accept / read / recv ops, FIFO */
    uint32_t wq_head, wq_tail; /* connect / write ops, FIFO */
    uint32_t free_next;
    uint8_t state;   /* tl_slot_state (DONE unused) */
    uint8_t type;    /* tl_handle_type */
    uint8_t closing; /* tl_close called: no new ops; close reported when nops == 0 */
    uint8_t detaching;
    uint8_t ready;          /* TL_READY_* */
    uint8_t on_ready : 1;   /* queued on the loop's ready list */
    uint8_t paused : 1;     /* multishot accept paused at the ceiling */
    uint8_t connecting : 1; /* a connect op is outstanding: writability is not readiness yet */
    uint8_t woken : 1;      /* an OS event (not cached readiness) brought this handle up */
    /* io_uring: fd is an index in the ring's registered file table (a direct
     * descriptor), not a descriptor of the process: only the backend may use it
     * (tl__handle_real_fd makes a real one when something else needs it). */
    uint8_t direct : 1;
    /* io_uring: accepted, and its first receive not armed yet (a single recv) */
    uint8_t fresh : 1;
    uint64_t close_token;
    union {
        uint64_t backoff_until;     /* listeners: accept backoff after EMFILE/ENFILE (ms) */
        struct {                    /* datagram sockets (udp.c) */
            uint16_t udp_queued;    /* sends in flight */
            uint16_t udp_queue_max; /* tl_udp_options.send_queue */
            uint16_t udp_port;      /* the bound port, network order: tl_udp_meta's local */
        };
    };
} tl_hslot;

/* A datagram send's arguments (udp.c), copied at tl_udp_send. */
typedef struct tl_odgram {
    const void *data;
    uint16_t segment_size;
    uint8_t ecn;
    uint8_t has_source;
    tl_sockaddr dest;
    socklen_t dest_len;
    tl_sockaddr source; /* its address only: pktinfo */
} tl_odgram;

typedef struct tl_oio {
    union {
        struct iovec iov[TL_MAX_IOV]; /* read, write */
        tl_odgram dg;                 /* TL_OP_UDP_SEND; total and done below are its too */
    };
    int iovcnt;
    uint32_t total; /* bytes to write */
    uint32_t done;  /* bytes written so far */
    uint32_t next;  /* free list */
} tl_oio;

/* An idle connection holds one (its receive): 48 bytes, what every op needs;
 * a read's or write's arguments are in loop->io. */
typedef struct tl_oslot {
    uint32_t gen;
    uint8_t state; /* tl_slot_state */
    uint8_t kind;  /* tl_op_kind */
    uint8_t multishot : 1;
    /* a receive waiting for a loop buffer, listed on loop->starve (buffer.c) */
    uint8_t starved : 1;
    /* it waited before: a second -ENOBUFS keeps its place at the queue's front */
    uint8_t was_starved : 1;
    uint8_t cancelling;
    uint32_t handle; /* slot index, or TL_NIL */
    union {
        uint32_t io;       /* read and write: their arguments (loop->io), or TL_NIL */
        uint32_t heap_pos; /* timers: position in the heap, or TL_NIL */
    };
    uint64_t token;
    uint32_t prev, next; /* links in the handle's queue, or the free list */
    uint64_t deadline;   /* timers */
    void *backend_data;
} tl_oslot;

typedef struct tl_cqueue {
    tl_completion *rec;
    uint32_t cap; /* power of two */
    uint32_t head, len;
} tl_cqueue;

typedef struct tl_inbox_item {
    uint8_t is_transport;
    uint8_t is_datagram; /* msg.ptr is a tl_udp_datagram (tl_udp_forward) */
    uint64_t token;
    tl_message msg;
    tl_detached transport;
} tl_inbox_item;

typedef struct tl_inbox {
    pthread_mutex_t mu;
    tl_inbox_item *items;
    uint32_t len, cap;
    atomic_uint count; /* len, readable without the lock */
} tl_inbox;

struct tl_backend_ops;

struct tl_loop {
    uint16_t tag;
    unsigned flags;
    const struct tl_backend_ops *be;
    void *be_state;
    bool be_auto; /* chosen by TL_BACKEND_AUTO: may still move to epoll while empty */

    /* Slot tables (slots.c): a free list, and the fresh mark past which no
     * slot has been used. */
    tl_hslot *h;
    uint32_t h_cap, h_max, h_free, h_fresh, h_open;
    bool h_fixed;
    tl_oslot *o;
    uint32_t o_cap, o_max, o_free, o_fresh, o_live; /* o_live: LIVE + DONE */
    bool o_fixed;
    /* Arguments of the ops that carry them (read, write), apart from the op
     * slot so that an op without them (a receive into loop buffers, an
     * accept, a timer: what an idle connection holds) does not carry their
     * bytes. io_cap >= o_cap: every op can hold one. */
    tl_oio *io;
    uint32_t io_cap, io_free, io_fresh;

    /* handles with cached readiness and work: slot indices, each at most once
     * (on_ready survives a slot's reuse), so h_cap entries always suffice */
    uint32_t *ready, *ready_spare;
    uint32_t ready_len, ready_cap, ready_spare_cap;
    tl_cqueue cq;
    /* Inside a turn that began with cq empty: the host's array, which
     * completions are written into directly (once, not queued and copied)
     * until it is full; the rest queue in cq behind them. out_cap is 0
     * outside that window. */
    tl_completion *out;
    uint32_t out_len, out_cap;
    /* Completions from the inbox (posts, adoptions) queued and not delivered:
     * the only ones the table sizes do not bound (see tl__loop_fit). */
    uint32_t cq_extra;
    /* The table sizes tl__loop_fit last sized everything for. */
    uint32_t fit_h, fit_o;

    uint32_t *heap; /* timer op indices, min-heap on deadline */
    uint32_t heap_len, heap_cap;

    /* loop-owned receive buffers */
    uint8_t *buf_mem;
    uint32_t buf_count, buf_size;
    uint32_t *buf_free; /* stack of free ids */
    uint32_t buf_free_len;
    uint64_t *buf_owner; /* handle id holding each buffer, 0 when free */
    /* The datagram pool (tl_loop_options.udp_recv_buffers; udp.c): buffers
     * for the loop's UDP receives alone, ids buf_count.. buf_count+ubuf_count-1,
     * so that GRO's 64 KiB buffers cost nothing to the streams' pool. */
    uint8_t *ubuf_mem;
    uint32_t ubuf_count, ubuf_size;
    uint32_t ubuf_stride; /* ubuf_size rounded up: every buffer's head aligned for its metadata */
    uint32_t *ubuf_free;  /* stack of free ids (global ones) */
    uint32_t ubuf_free_len;
    uint64_t *ubuf_owner; /* by id - buf_count */
    /* Receives waiting for a buffer, oldest first: op ids in a ring of
     * power-of-two capacity >= o_cap (every starved op is listed once; ids of
     * ops finished meanwhile are stale and skipped). FIFO so that when
     * thousands of connections share a few hundred buffers each waits its
     * turn, instead of the same ones winning every re-arm. */
    uint64_t *starve;
    uint32_t starve_head, starve_len, starve_cap;

    /* transports waiting for a handle slot (posted while at the ceiling) */
    tl_inbox_item *adopt_wait;
    uint32_t adopt_len, adopt_cap;

    tl_inbox inbox;
    int wake_fd; /* eventfd */
    atomic_uint wake_pending;
    atomic_uint load; /* h_open + queued transports, for least-loaded placement */
    /* Set while a queued transport is attached: its +1 in load becomes its
     * handle's, so load never dips (a dip read by another thread's
     * least-loaded pick would put two connections on this loop). */
    uint8_t adopt_load_held;

    uint32_t backoff_listeners; /* listeners waiting out an EMFILE backoff */
    uint8_t udp_gso;            /* UDP_SEGMENT: 0 not probed yet, 1 works, 2 not here */
    bool udp_ring_recv;         /* io_uring receives datagrams by multishot recvmsg (a feature) */
    uint64_t now_ms;
    tl_loop_stats stats;
};

/* ---- the backend seam: seven functions behind one pointer of state -------- */
typedef struct tl_backend_ops {
    const char *name;
    int (*init)(tl_loop *loop);
    void (*fini)(tl_loop *loop);
    /* A new handle's descriptor joins the wait set (epoll: ADD once, edge-triggered). */
    int (*handle_add)(tl_loop *loop, uint32_t hi, unsigned shared_flags);
    /* The descriptor leaves the wait set before detach (close removes it by itself). */
    void (*handle_remove)(tl_loop *loop, uint32_t hi);
    /* Starts an op that the core has linked on its handle (or a timer: not called). */
    void (*submit)(tl_loop *loop, uint32_t oi);
    /* Asks a LIVE op to end; it completes (maybe later) through tl__op_complete. */
    void (*cancel)(tl_loop *loop, uint32_t oi);
    /* One OS wait of at most timeout_ms, then dispatch what it reported. */
    int (*wait)(tl_loop *loop, int timeout_ms);
    /* A handle slot was freed: paused accepts may go on. */
    void (*resume_accepts)(tl_loop *loop);
    /* Optional: a receive buffer came back from the host. When set, the backend
     * decides where it goes (io_uring re-provides it to the kernel's buffer
     * ring, or calls tl__buffer_untake); when NULL it returns to buf_free. */
    void (*buffer_released)(tl_loop *loop, uint32_t id);
    /* Optional: size the backend's own lists for the loop's tables (h_cap,
     * o_cap), so that nothing it does inside a turn has to allocate. */
    int (*fit)(tl_loop *loop);
    /* Optional: a closing stream's descriptor is closed by the backend (io_uring:
     * IORING_OP_CLOSE in the turn's batch, no close(2) of its own); it calls
     * tl__handle_closed once the descriptor is closed. Returns < 0 to have the
     * core close it now. */
    int (*close_fd)(tl_loop *loop, uint32_t hi);
    /* Optional: a direct descriptor (tl_hslot.direct) becomes a real one in
     * the process's table, which the handle uses from then on; returns it or a
     * negative errno (io_uring: IORING_OP_FIXED_FD_INSTALL, 6.8). */
    int (*install_fd)(tl_loop *loop, uint32_t hi);
} tl_backend_ops;

extern const tl_backend_ops tl__backend_epoll;
#ifdef TL_HAVE_URING
extern const tl_backend_ops tl__backend_uring;
int tl__uring_probe(void);
#endif

/* ---- core services for backends and the other core files ----------------- */
/* Grows a slot table to ncap slots (slots.c); the new ones are zero. */
int tl__slots_grow(void **table, uint32_t *cap, uint32_t ncap, size_t size);
void tl__slots_free(void *table, uint32_t cap, size_t size);
/* A free slot: the free list's head (unlinked), else the fresh mark's
 * (advanced); TL_NIL when the table is full. */
uint32_t tl__slots_take(void *table, size_t size, size_t link_off, uint32_t *free_head,
                        uint32_t *fresh, uint32_t cap);
/* Sizes the completion queue, the ready lists, the timer heap and the
 * backend's lists for the handle and op tables as they are now. Called before
 * a slot is taken from a table that has grown: an allocation that fails there
 * is an error for the call that wanted the slot, never an abort in a turn. */
int tl__loop_fit(tl_loop *loop);
static inline int tl__loop_fit_if_grown(tl_loop *loop) {
    return loop->fit_h == loop->h_cap && loop->fit_o == loop->o_cap ? 0 : tl__loop_fit(loop);
}
/* Makes room for n more completions from the inbox. */
int tl__cq_reserve_extra(tl_loop *loop, uint32_t n);
/* Ids and their lookups, inline: each request makes several of each (about
 * 60 of its ~2,300 user-space instructions went to the calls alone). */
static inline uint64_t tl__make_id(const tl_loop *loop, uint32_t gen, uint32_t index) {
    return ((uint64_t)loop->tag << 48) | ((uint64_t)(gen & TL_ID_GEN_MASK) << TL_ID_INDEX_BITS) |
           (uint64_t)index;
}
/* The slot an id names, when the id is of this loop and below cap; the
 * caller checks the slot's state and generation against *gen. */
static inline int tl__id_slot(const tl_loop *loop, uint64_t id, uint32_t cap, uint32_t *index,
                              uint32_t *gen) {
    if (id == 0)
        return -ENOENT;
    if ((uint16_t)(id >> 48) != loop->tag)
        return -EINVAL;
    *index = (uint32_t)(id & (TL_ID_MAX_SLOTS - 1));
    *gen = (uint32_t)(id >> TL_ID_INDEX_BITS) & TL_ID_GEN_MASK;
    return *index < cap ? 0 : -ENOENT;
}
static inline int tl__handle_lookup(const tl_loop *loop, tl_handle h, uint32_t *index) {
    uint32_t i, gen;
    int err = tl__id_slot(loop, h, loop->h_cap, &i, &gen);
    if (err < 0)
        return err;
    if (loop->h[i].state != TL_SLOT_LIVE || (loop->h[i].gen & TL_ID_GEN_MASK) != gen)
        return -ENOENT;
    *index = i;
    return 0;
}
static inline int tl__op_lookup(const tl_loop *loop, tl_op op, uint32_t *index) {
    uint32_t i, gen;
    int err = tl__id_slot(loop, op, loop->o_cap, &i, &gen);
    if (err < 0)
        return err;
    if (loop->o[i].state == TL_SLOT_FREE || (loop->o[i].gen & TL_ID_GEN_MASK) != gen)
        return -ENOENT;
    *index = i;
    return 0;
}
/* An AUTO loop that holds nothing yet moves to epoll (for what only epoll can
 * honour); -EOPNOTSUPP when it was not AUTO, is on epoll already, or is in use. */
int tl__loop_fall_back_to_epoll(tl_loop *loop);

/* Creates a handle for fd (the loop owns fd from here; closed on error). */
int tl__handle_new(tl_loop *loop, int fd, uint8_t type, unsigned shared_flags, uint32_t *index);
bool tl__handle_room(const tl_loop *loop);
void tl__handle_release_slot(tl_loop *loop, uint32_t hi);
void tl__handle_finish_close(tl_loop *loop, uint32_t hi);
/* The descriptor of a closing handle is closed: queues the one TL_OP_CLOSE record. */
void tl__handle_closed(tl_loop *loop, uint32_t hi);
/* The handle's descriptor as the process knows it: a direct one is installed
 * in the process's table first (the backend's install_fd). */
int tl__handle_real_fd(tl_loop *loop, uint32_t hi);

/* Grows the op table and its argument table together to ncap slots. */
int tl__ops_grow(tl_loop *loop, uint32_t ncap);
int tl__op_new(tl_loop *loop, uint8_t kind, uint32_t hi, uint64_t token, uint32_t *index);
/* Takes the argument slot of an op that carries arguments (every op slot has room for one). */
tl_oio *tl__op_io_take(tl_loop *loop, tl_oslot *o);
/* Common entry for ops on a handle: checks the handle and that the op fits its
 * type (-EINVAL), takes a slot, links it. */
int tl__op_start(tl_loop *loop, tl_handle handle, uint8_t kind, uint64_t token, uint32_t *hi,
                 uint32_t *oi);
/* Hands a started op to the backend and names it in *out (may be NULL). */
int tl__op_submit(tl_loop *loop, uint32_t oi, tl_op *out);
/* Gives back a finished op's arguments (none: nothing). */
void tl__op_io_release(tl_loop *loop, tl_oslot *o);
void tl__op_link(tl_loop *loop, uint32_t oi);
void tl__op_unlink(tl_loop *loop, uint32_t oi);
/* Cancels every pending op of a handle (close, detach). */
void tl__handle_cancel_all(tl_loop *loop, uint32_t hi);
/* Queues a completion; more == false makes it the op's final one. */
void tl__op_complete(tl_loop *loop, uint32_t oi, int32_t res, bool more,
                     const tl_completion *extra);

/* A record to fill, every field of it: the host's array inside a turn while
 * it has room (loop->out), else the queue. */
tl_completion *tl__cq_queue_slot(tl_loop *loop);
static inline tl_completion *tl__cq_slot(tl_loop *loop) {
    if (loop->out_len < loop->out_cap)
        return &loop->out[loop->out_len++];
    return tl__cq_queue_slot(loop);
}
/* A zeroed record (tl__cq_slot for completions that set few fields). */
tl_completion *tl__cq_push(tl_loop *loop);
/* Completions made and not yet handed to the host. */
static inline uint32_t tl__cq_count(const tl_loop *loop) {
    return loop->cq.len + loop->out_len;
}
void tl__ready_push(tl_loop *loop, uint32_t hi);
/* Takes the ready list for running; pushes during the run go to a fresh one. */
uint32_t *tl__ready_take(tl_loop *loop, uint32_t *len);

void tl__timer_insert(tl_loop *loop, uint32_t oi);
void tl__timer_remove(tl_loop *loop, uint32_t oi);
void tl__timers_expire(tl_loop *loop);
int tl__timers_timeout(const tl_loop *loop, int timeout_ms);

void tl__inbox_init(tl_inbox *ib);
void tl__inbox_fini(tl_inbox *ib);
void tl__inbox_drain(tl_loop *loop);
void tl__inbox_discard(tl_loop *loop);
void tl__adopt_waiting(tl_loop *loop);
void tl__wake_consume(tl_loop *loop);

int tl__buffers_init(tl_loop *loop, uint32_t count, uint32_t size);
void tl__buffers_fini(tl_loop *loop);
int tl__buffer_take(tl_loop *loop, uint32_t hi, uint32_t *id);
void tl__buffer_untake(tl_loop *loop, uint32_t id);
/* Lists receive op oi as waiting for a buffer (front: it had waited already
 * and lost a race for the buffers it was re-armed with). */
void tl__starve_push(tl_loop *loop, uint32_t oi, bool front);
/* The oldest receive still waiting (its starved mark cleared), or TL_NIL. */
uint32_t tl__starve_pop(tl_loop *loop);
int tl__starve_fit(tl_loop *loop);
static inline uint8_t *tl__buffer_data(const tl_loop *loop, uint32_t id) {
    if (id >= loop->buf_count) /* the datagram pool's */
        return loop->ubuf_mem + (size_t)(id - loop->buf_count) * loop->ubuf_stride;
    return loop->buf_mem + (size_t)id * loop->buf_size;
}
/* The owner entry of any loop buffer id (either pool), or NULL past both. */
static inline uint64_t *tl__buffer_owner(const tl_loop *loop, uint32_t id) {
    if (id < loop->buf_count)
        return &loop->buf_owner[id];
    if (id - loop->buf_count < loop->ubuf_count)
        return &loop->ubuf_owner[id - loop->buf_count];
    return NULL;
}

uint64_t tl__clock_ms(void);
void tl__listener_nodelay(int fd);

static inline tl_oio *tl__op_io(const tl_loop *loop, const tl_oslot *o) {
    return &loop->io[o->io];
}

static inline bool tl__op_on_read_queue(uint8_t kind) {
    return kind == TL_OP_ACCEPT || kind == TL_OP_READ || kind == TL_OP_RECV ||
           kind == TL_OP_UDP_RECV;
}

/* ---- datagrams (udp.c), shared by both backends ---------------------------- */
#define TL_UDP_BATCH 32 /* datagrams per recvmmsg */
/* The control bytes a datagram's metadata needs: pktinfo, TOS or TCLASS, and
 * the GRO segment size (IPv6: 40 + 24 + 24). */
#define TL_UDP_CONTROL_LEN 88
/* The datagram pool: count buffers of size bytes (tl_loop_new), and its end. */
int tl__udp_pool_init(tl_loop *loop, uint32_t count, uint32_t size);
void tl__udp_pool_fini(tl_loop *loop);
/* Gives a datagram pool buffer back to its free stack (epoll; io_uring's
 * ring when the backend keeps them: tl__ur_buf_give). */
void tl__udp_pool_untake(tl_loop *loop, uint32_t id);
/* Sets up a datagram handle's fields (tl_udp_open, tl_attach). */
void tl__udp_handle_init(tl_loop *loop, uint32_t hi, uint32_t send_queue);
/* One step of send op oi: its total when every byte is sent, -EAGAIN when the
 * socket is full (call again when writable), or the error that ends it. */
int tl__udp_send_step(tl_loop *loop, uint32_t oi);
/* Receives up to TL_UDP_BATCH datagrams for receive op oi, each completed
 * (more) into a loop buffer. Returns how many; *drained when the socket had
 * no more. A negative result is the error that ends the op (-ENOBUFS counted). */
int tl__udp_recv_batch(tl_loop *loop, uint32_t oi, bool *drained);
/* Writes a datagram's metadata at the head of buffer id from what recvmsg
 * returned (name, the control messages in cm, msg_flags) and completes op oi
 * with its payload (len bytes at TL_UDP_HEADROOM). */
void tl__udp_deliver(tl_loop *loop, uint32_t oi, uint32_t id, const void *name, socklen_t namelen,
                     struct msghdr *cm, int msg_flags, uint32_t len);
/* Errors a datagram socket's receive reports for an earlier send (ICMP): not
 * the socket's end, so a receive goes on past them. */
static inline bool tl__udp_soft_error(int e) {
    return e == ECONNREFUSED || e == EHOSTUNREACH || e == ENETUNREACH || e == EHOSTDOWN ||
           e == ENETDOWN || e == EINTR;
}
/* Queues a forwarded datagram (a tl_udp_datagram) for loop; frees it on error. */
int tl__loop_post_datagram(tl_loop *loop, uint64_t token, void *datagram);
/* Closes, with no completion, the handles out[0..made) a route made on
 * loops[i]: a refused route leaves nothing behind. */
void tl__undo_handles(tl_loop **loops, int made, tl_handle *out);
/* Frees the forwarded datagrams of undelivered completions (tl_loop_free). */
void tl__udp_free_forwarded(tl_loop *loop);

#endif
