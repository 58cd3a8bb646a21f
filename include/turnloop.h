/* turnloop: one completion-based event loop per thread, turned by its host.
 *
 * The host calls tl_loop_turn() and receives a batch of completion records; no
 * user callback ever runs inside the loop. A loop owns its handles: a transport
 * lives on one loop until the host moves it with tl_detach()/tl_attach().
 *
 * Conventions for every function below:
 *   - Errors are returned as a negative errno (-EAGAIN would block, -EMFILE the
 *     handle ceiling, -ENOSPC the operation ceiling, -EOPNOTSUPP unsupported,
 *     -ENOENT a stale id, -EINVAL an id of another loop). Never -1 plus errno.
 *     Each function lists the errors it returns itself under "Errors:"; where
 *     it passes on a system call's error (socket, bind, setsockopt...), it says
 *     which call, and that call's manual page lists them. tl_strerror() names
 *     every one. "an id's errors" stands for: -ENOENT for a stale id (its
 *     handle or operation has ended), -EINVAL for an id of another loop or 0.
 *   - Structs passed in (options) must be zero-initialised as a whole, e.g.
 *     `tl_loop_options o = {0};`: their reserved words are where later versions
 *     of the library add fields, and zero keeps today's behaviour.
 *   - Threading: a loop is used by one thread at a time, the thread that turns it
 *     (handing a loop to a new thread needs the usual happens-before, such as
 *     pthread_create). Only the functions marked "any thread" may be called
 *     concurrently from other threads.
 *   - Ownership is stated per function: who allocates, who frees.
 */
#ifndef TURNLOOP_H
#define TURNLOOP_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#ifdef __cplusplus
extern "C" {
#endif

#if !defined(__linux__)
#error                                                                                             \
    "turnloop: only Linux is supported so far (epoll, io_uring); kqueue is a backend yet to be written"
#endif

#include "turnloop_version.h" /* TL_VERSION_MAJOR, _MINOR, _PATCH, _STRING: generated */

/* The library's own version, (MAJOR << 16) | (MINOR << 8) | PATCH, which may
 * differ from the header's TL_VERSION_* when an application was built against
 * another libturnloop.so.0. */
unsigned tl_version(void);
const char *tl_version_string(void);

typedef struct tl_loop tl_loop;

/* Generational ids. 0 is never a valid id. An id carries the slot, a generation
 * and the loop's tag, so a stale id (-ENOENT) or one from another loop (-EINVAL)
 * is refused, never acted on. */
typedef uint64_t tl_handle;
typedef uint64_t tl_op;

typedef enum tl_backend_kind {
    TL_BACKEND_AUTO = 0, /* io_uring where it works, else epoll */
    TL_BACKEND_EPOLL,
    TL_BACKEND_URING,
} tl_backend_kind;

/* Not a bool: which behaviour of a shared port the caller asks for.
 * Linux: SHARE and DISTRIBUTE are both SO_REUSEPORT (a variant states a floor,
 * not a ceiling). FreeBSD would map DISTRIBUTE to SO_REUSEPORT_LB. A platform
 * that cannot distribute refuses DISTRIBUTE with -EOPNOTSUPP and leaves nothing
 * behind. There is no third outcome. */
typedef enum tl_reuse_port {
    TL_REUSE_PORT_NO = 0,
    TL_REUSE_PORT_SHARE,      /* duplicate bind allowed; nothing promised about delivery */
    TL_REUSE_PORT_DISTRIBUTE, /* duplicate bind allowed and connections spread by the kernel */
} tl_reuse_port;

typedef enum tl_op_kind {
    TL_OP_NONE = 0,
    TL_OP_ACCEPT,        /* u.accepted is the new handle */
    TL_OP_CONNECT,       /* res 0 on success */
    TL_OP_READ,          /* res bytes into the caller's buffer; 0 is end of stream */
    TL_OP_RECV,          /* multishot receive into loop-owned buffers: u.buf */
    TL_OP_WRITE,         /* res: all bytes written, or an error */
    TL_OP_TIMER,         /* res 0 when it fired */
    TL_OP_CLOSE,         /* the handle is gone; reported once, after its operations */
    TL_OP_POST,          /* a message posted with tl_loop_post(): u.msg */
    TL_OP_ADOPT,         /* a transport posted with tl_loop_post_transport(): u.accepted */
    TL_OP_UDP_RECV,      /* multishot: one datagram per completion, u.buf; see tl_udp_meta_get() */
    TL_OP_UDP_SEND,      /* res: the bytes sent (every segment), or an error */
    TL_OP_UDP_FORWARDED, /* a datagram from tl_udp_forward(): u.msg.ptr is a tl_udp_datagram */
} tl_op_kind;

/* Completion flags. */
#define TL_CQE_FINAL 0x1u  /* the operation is over; its id is now stale */
#define TL_CQE_BUFFER 0x2u /* u.buf holds a loop buffer: give it back with tl_buffer_release() */

typedef struct tl_buffer_ref {
    void *data; /* owned by the loop; valid until tl_buffer_release() */
    uint32_t id;
} tl_buffer_ref;

typedef struct tl_message {
    uint64_t value;
    void *ptr;
} tl_message;

/* One completion record. Plain data, copied into the host's array. */
typedef struct tl_completion {
    uint64_t token;   /* the caller's, as given when the operation started */
    tl_op op;         /* 0 for TL_OP_CLOSE, TL_OP_POST, TL_OP_ADOPT, TL_OP_UDP_FORWARDED */
    tl_handle handle; /* the handle the operation ran on; 0 for timers, posts and forwards */
    int32_t res;      /* >= 0 success (bytes, or 0); < 0 a negative errno (-ECANCELED) */
    uint16_t kind;    /* tl_op_kind */
    uint16_t flags;   /* TL_CQE_* */
    union {
        tl_handle accepted; /* TL_OP_ACCEPT, TL_OP_ADOPT: the new connection's handle */
        tl_buffer_ref buf;  /* TL_OP_RECV with TL_CQE_BUFFER */
        tl_message msg;     /* TL_OP_POST; TL_OP_UDP_FORWARDED: msg.ptr */
    } u;
} tl_completion;

typedef struct tl_loop_options {
    uint32_t max_handles;    /* 0 = unlimited (tables grow); else preallocated, -EMFILE past it */
    uint32_t max_operations; /* 0 = unlimited; else preallocated, -ENOSPC past it */
    tl_backend_kind backend;
    uint32_t recv_buffers;     /* loop-owned buffers for TL_OP_RECV; 0 = 64 */
    uint32_t recv_buffer_size; /* bytes each; 0 = 16384 */
    unsigned flags;            /* TL_LOOP_* */
    /* A pool of its own for the loop's datagram receives (TL_OP_UDP_RECV),
     * so that GRO's 64 KiB buffers cost memory only where datagrams arrive:
     * udp_recv_buffers buffers (at most 32768) of udp_recv_buffer_size bytes
     * (0 = TL_UDP_HEADROOM + 65535, room for a GRO payload). 0 buffers: the
     * datagrams share recv_buffers with the streams. */
    uint32_t udp_recv_buffers;
    uint32_t udp_recv_buffer_size;
    uint64_t reserved[5]; /* zero: room for fields of later versions */
} tl_loop_options;

/* For tests only: simulates a platform whose SO_REUSEPORT does not distribute
 * (macOS, OpenBSD), so that a test can show DISTRIBUTE refused with nothing
 * left behind. The capability is per loop, never process-wide. A server has
 * no reason to set it. */
#define TL_LOOP_NO_DISTRIBUTE 0x1u
/* Simulates a kernel without SO_ATTACH_REUSEPORT_CBPF (before 4.5), so that
 * tests can show a CPU-steered route refused with nothing left behind. The
 * refusal happens where the real one would: at the setsockopt, after the
 * listeners are bound, so the undo is what gets tested. Per loop. */
#define TL_LOOP_NO_CPU_STEER 0x2u
/* Simulates a kernel without UDP GSO (before 4.18): GSO sends go out as one
 * sendmsg per segment, and tl_loop_features() does not list it. Per loop. */
#define TL_LOOP_NO_UDP_GSO 0x4u
/* Simulates a kernel that refuses the connection-ID steering program of
 * tl_route_udp_cid (SO_ATTACH_REUSEPORT_CBPF), at the setsockopt where a real
 * refusal happens. Per loop (any loop of the group refuses). The environment
 * variable TURNLOOP_UDP_DISABLE=cid_steer,gso,gro (or all) sets these UDP
 * flags on every loop made, for a host's end-to-end tests. */
#define TL_LOOP_NO_CID_STEER 0x8u
/* Simulates a kernel without UDP_GRO (before 5.0): tl_udp_gro and
 * TL_UDP_GRO answer -EOPNOTSUPP. Per loop; TURNLOOP_UDP_DISABLE=gro too. */
#define TL_LOOP_NO_UDP_GRO 0x10u

/* Counters a host may read from the loop's own thread. Monotonic. */
typedef struct tl_loop_stats {
    uint64_t turns;
    uint64_t waits;    /* OS waits made (at most one per turn) */
    uint64_t accepted; /* connections accepted by this loop */
    uint64_t adopted;  /* transports adopted from tl_loop_post_transport() */
    /* An OS wake for a shared listener whose accept then found nothing: another
     * loop took the connection. epoll re-checks readiness before reporting, so
     * a loop woken after the winner accepted sees no event at all; that cost is
     * a context switch, not counted here. */
    uint64_t spurious_wakeups;
    uint64_t accept_pauses;       /* times accepting paused at the handle ceiling */
    uint64_t accept_errors;       /* EMFILE/ENFILE/ENOBUFS/ENOMEM from the kernel's accept */
    uint64_t recv_buffer_starved; /* TL_OP_RECV found no loop buffer free and waited */
    uint64_t udp_received;        /* datagrams received by this loop's UDP handles (GRO: each) */
    uint64_t udp_sent;            /* datagrams sent (a GSO send counts each segment) */
    uint64_t udp_forwarded_in;    /* datagrams another loop forwarded here (tl_udp_forward) */
    uint64_t udp_truncated;       /* datagrams longer than a loop buffer, delivered cut */
    /* io_uring: idle receives parked on a poll (kernel memory of an idle
     * connection: the request alone, not its async-poll record too) */
    uint64_t recv_parked;
    uint64_t min_waits; /* io_uring: waits made with a min-wait (6.12) batch */
    /* io_uring: direct descriptors installed in the process's table on demand
     * (tl_handle_fd and its kin: sendfile, getpeername, a detach) */
    uint64_t fd_installs;
    uint64_t reserved[1]; /* zero today; counters of later versions */
} tl_loop_stats;

/* ---- loops ------------------------------------------------------------- */

/* Creates a loop. Allocates; free with tl_loop_free(). opts may be NULL.
 * A backend asked for by name that cannot run is an error (-ENOSYS, -EPERM,
 * -EOPNOTSUPP), never a silent fallback; TL_BACKEND_AUTO falls back to epoll,
 * and chooses epoll outright when the environment has TURNLOOP_BACKEND=epoll.
 * Errors: -EINVAL (a ceiling of 2^24 or more, an unknown backend, more than
 * 32768 udp_recv_buffers, a udp_recv_buffer_size of TL_UDP_HEADROOM or less,
 * or above TL_UDP_HEADROOM + 65535), -ENOMEM;
 * for TL_BACKEND_URING: -EOPNOTSUPP (not built, or an opcode it needs is
 * missing), and io_uring_setup's errors (-ENOSYS, -EPERM when io_uring is
 * disabled, -ENOMEM); epoll_create1's and eventfd's errors (-EMFILE, -ENFILE,
 * -ENOMEM). */
int tl_loop_new(tl_loop **out, const tl_loop_options *opts);

/* Frees the loop and everything it still holds (open descriptors are closed,
 * pending operations are dropped without completions). Call after the loop is
 * not alive for an orderly shutdown. */
void tl_loop_free(tl_loop *loop);

/* One turn: at most one OS wait (none when completions are already queued),
 * then up to cap completions are copied into out. timeout_ms < 0 waits without
 * limit, 0 polls. Returns the number of records (>= 0) or a negative errno.
 * Errors: -EINVAL (cap <= 0 or out NULL); the backend's wait (epoll_wait,
 * io_uring_enter) failing other than by a signal, which is not retried. A
 * signal (EINTR) is not an error: the turn returns what it has. */
int tl_loop_turn(tl_loop *loop, int timeout_ms, tl_completion *out, int cap);

/* Handles + pending operations + undelivered completions + queued posts. A loop
 * that is not alive has nothing left to report. */
int tl_loop_alive(const tl_loop *loop);

/* Number of open handles, and the ceiling (0 = unlimited). */
uint32_t tl_loop_handles(const tl_loop *loop);
uint32_t tl_loop_max_handles(const tl_loop *loop);

/* "epoll" or "uring": what the loop really runs on. Static string. */
const char *tl_loop_backend(const tl_loop *loop);

void tl_loop_get_stats(const tl_loop *loop, tl_loop_stats *out);

/* Any thread. Approximate load: open handles plus transports queued to adopt.
 * Used by least-loaded placement; a relaxed atomic read. */
uint32_t tl_loop_load(const tl_loop *loop);

/* Any thread. Makes the current or next tl_loop_turn() return without waiting. */
void tl_loop_wake(tl_loop *loop);

/* Any thread. Queues a message; the loop reports it as a TL_OP_POST completion
 * with the given token. The loop copies msg.
 * Errors: -ENOMEM (the queue cannot grow). */
int tl_loop_post(tl_loop *loop, uint64_t token, const tl_message *msg);

/* ---- handles ----------------------------------------------------------- */

/* Every listening TCP socket a loop is given (tl_listen, tl_listen_shared,
 * tl_adopt_fd of a listener, tl_acceptor_start) gets TCP_NODELAY, which the
 * connections accepted from it inherit: responses are not held by Nagle. */
typedef struct tl_listen_options {
    tl_reuse_port reuse_port;
    int backlog; /* 0 = SOMAXCONN */
} tl_listen_options;

/* Binds and listens; the loop owns the socket. On error nothing is left behind:
 * no socket, no handle. A DISTRIBUTE listener on a platform that cannot
 * distribute is refused with -EOPNOTSUPP.
 * Errors: -EINVAL (an unknown reuse_port), -EOPNOTSUPP, -EMFILE (the handle
 * ceiling), -ENOMEM; socket(), setsockopt(), bind() (-EADDRINUSE, -EACCES,
 * -EADDRNOTAVAIL) and listen() errors; the backend's registration
 * (epoll_ctl: -ENOMEM, -ENOSPC). */
int tl_listen(tl_loop *loop, const struct sockaddr *addr, socklen_t addrlen,
              const tl_listen_options *opts, tl_handle *out);

/* Sharing one listening socket between loops: the baselines the routes above
 * are measured against (nginx's EPOLLEXCLUSIVE, and the herd). */
#define TL_SHARED_EXCLUSIVE 0x1u /* EPOLLEXCLUSIVE: the kernel wakes one waiting loop */

/* Adopts an existing listening socket that other loops share. The loop dup()s
 * fd and owns only its duplicate; the caller keeps fd. Without
 * TL_SHARED_EXCLUSIVE every loop is woken for every connection (the herd).
 * A backend that cannot honour TL_SHARED_EXCLUSIVE refuses it with -EOPNOTSUPP
 * (io_uring: an accept SQE has no wake-one). A loop made with TL_BACKEND_AUTO
 * that holds nothing yet moves to epoll instead, and tl_loop_backend() says so.
 * Errors: -EINVAL (unknown flags), -EOPNOTSUPP, -EMFILE (the handle ceiling),
 * -ENOMEM; fcntl(F_DUPFD_CLOEXEC) errors (-EBADF, -EMFILE); epoll_ctl errors. */
int tl_listen_shared(tl_loop *loop, int fd, unsigned flags, tl_handle *out);

/* Adopts a stream socket (connected, from accept4 or socketpair, or a
 * listening one) as a handle. The loop takes ownership of fd, even on error
 * (it is closed then).
 * Errors: -ENOTSOCK (not a stream socket), -EMFILE (the handle ceiling),
 * -ENOMEM; fcntl() errors (-EBADF); the backend's registration errors. */
int tl_adopt_fd(tl_loop *loop, int fd, tl_handle *out);

/* The socket's local address (for a listener bound to port 0), and its peer's.
 * len may be NULL.
 * Errors: an id's errors; getsockname()/getpeername() errors (-ENOTCONN). */
int tl_handle_sockname(tl_loop *loop, tl_handle h, struct sockaddr_storage *out, socklen_t *len);
int tl_handle_peername(tl_loop *loop, tl_handle h, struct sockaddr_storage *out, socklen_t *len);

/* The descriptor, for setsockopt and the like. Owned by the loop: never close it.
 * On io_uring with direct descriptors (TURNLOOP_URING_ENABLE=direct) a
 * connection's socket lives in the ring's own file table; the first call
 * installs it in the process's (one kernel entry), and the handle uses that
 * descriptor from then on. tl_detach, tl_handle_peername and
 * tl_handle_sockname do the same.
 * Errors: an id's errors; for an installed descriptor -EMFILE, -ENFILE. */
int tl_handle_fd(tl_loop *loop, tl_handle h);

/* Closes a handle: every pending operation completes as -ECANCELED, then one
 * TL_OP_CLOSE completion with token is reported. The handle counts against the
 * ceiling until that completion has been delivered.
 * Errors: an id's errors; -EALREADY (the handle is already closing: its close
 * will be reported once, as asked first). */
int tl_close(tl_loop *loop, tl_handle h, uint64_t token);

/* ---- operations ---------------------------------------------------------- */

/* Accepting. Single-shot: one TL_OP_ACCEPT completion, final. At the handle
 * ceiling it completes with -EMFILE and leaves the connection in the kernel's
 * queue (a resource limit: loud, and nothing is dropped).
 * With TL_ACCEPT_MULTISHOT it completes once per connection without
 * TL_CQE_FINAL; at the ceiling it pauses, leaving the rest queued in the
 * kernel, and resumes by itself when a handle is freed: a multishot accept
 * never outruns the ceiling, and no connection is dropped.
 *
 * Errors of every operation on a handle (tl_accept, tl_read, tl_recv,
 * tl_write, tl_writev, tl_udp_recv, tl_udp_send), returned at once and with
 * no completion to follow: an id's errors; -EBADF (the handle is closing or
 * detaching); -EINVAL (an operation of another kind of socket: an accept on a
 * stream, a stream operation on a listener or a datagram socket, a datagram
 * operation on a stream; or the arguments named below); -ENOSPC (the operation ceiling); -ENOMEM
 * (tables without a ceiling cannot grow). Errors found later arrive in the completion's res. */
#define TL_ACCEPT_MULTISHOT 0x1u
int tl_accept(tl_loop *loop, tl_handle listener, unsigned flags, uint64_t token, tl_op *out);

/* Creates a stream handle and connects it. Non-blocking; TL_OP_CONNECT reports
 * the outcome. *out_handle is valid at once (operations may be queued on it).
 * Errors: -ENOSPC (the operation ceiling), -EMFILE (the handle ceiling),
 * -ENOMEM; socket() errors; connect() errors other than -EINPROGRESS (e.g.
 * -ENETUNREACH, -EADDRNOTAVAIL; a refusal usually arrives later, in res). */
int tl_connect(tl_loop *loop, const struct sockaddr *addr, socklen_t addrlen, uint64_t token,
               tl_handle *out_handle, tl_op *out);

/* Reads once into buf. buf is the caller's and must stay valid until the final
 * completion. res 0 is the end of the stream. Errors: as above; -EINVAL for a
 * NULL buf or len 0. */
int tl_read(tl_loop *loop, tl_handle h, void *buf, uint32_t len, uint64_t token, tl_op *out);

/* Multishot receive into loop-owned buffers: one TL_OP_RECV completion per
 * arrival, each with TL_CQE_BUFFER; the host returns each buffer with
 * tl_buffer_release(). Ends (final) on end of stream (res 0), an error or
 * cancel. When the loop has no free buffer it does not end: it waits for one,
 * and receives that wait are served in the order they began to wait as the
 * host releases buffers (so thousands of connections on a few hundred buffers
 * take turns). Errors: as above. */
int tl_recv(tl_loop *loop, tl_handle h, uint64_t token, tl_op *out);

/* Returns a buffer received through TL_OP_RECV. Loop thread only. An id that
 * is not a buffer the host holds is ignored (a double release never corrupts
 * the loop's free list). */
void tl_buffer_release(tl_loop *loop, uint32_t id);

/* Writes all len bytes (partial writes are continued inside). buf is the
 * caller's until the final completion; res is len or a negative errno (a peer
 * that vanished is -EPIPE or -ECONNRESET, never SIGPIPE). Errors: as above. */
int tl_write(tl_loop *loop, tl_handle h, const void *buf, uint32_t len, uint64_t token, tl_op *out);

/* Writes an iovec array in full. The iovec array is copied; the bytes it points
 * to stay the caller's until the final completion. iovcnt <= TL_MAX_IOV.
 * Errors: as above; -EINVAL for iovcnt outside 1..TL_MAX_IOV or a total of 0
 * bytes or more than INT32_MAX. */
#define TL_MAX_IOV 8
struct iovec;
int tl_writev(tl_loop *loop, tl_handle h, const struct iovec *iov, int iovcnt, uint64_t token,
              tl_op *out);

/* A one-shot timer, not bound to a handle. res 0 when it fires.
 * Errors: -ENOSPC (the operation ceiling), -ENOMEM. */
int tl_timer(tl_loop *loop, uint64_t timeout_ms, uint64_t token, tl_op *out);

/* Asks a pending operation to end. It still completes exactly once: with
 * -ECANCELED, or with its result if it finished first. -ENOENT if the id is
 * stale (already finished). A multishot operation may still deliver results
 * (TL_OP_RECV data, TL_OP_ACCEPT connections) between the cancel and its
 * final completion: on io_uring the kernel finishes what it had in hand.
 * Errors: an id's errors (-ENOENT also when the operation has finished and its
 * final completion is on its way); -EALREADY (a cancel was already asked: it
 * still completes once). */
int tl_cancel(tl_loop *loop, tl_op op);

/* Milliseconds on the loop's monotonic clock, cached at each turn. */
uint64_t tl_loop_now(const tl_loop *loop);

/* ---- moving a transport between loops ------------------------------------ */

/* A detached transport: a plain value that may cross threads. */
typedef struct tl_detached {
    int fd;
    uint32_t kind; /* internal: stream, listener or datagram socket */
} tl_detached;

/* Detaches a handle from its loop. The first call cancels the handle's pending
 * operations (each completes exactly once); while any operation, completion or
 * received buffer of the handle is outstanding it answers -EAGAIN: turn the
 * loop and call again. On 0 the handle is gone from this loop and *out owns the
 * descriptor.
 * Errors: -EAGAIN (not quiescent yet); an id's errors; -EBADF (the handle is
 * closing); -EINVAL (a loop's duplicate of a shared listener: close it);
 * -EMFILE, -ENFILE (a direct descriptor found no room in the process's table:
 * the handle stays, detaching; close it or call again). */
int tl_detach(tl_loop *loop, tl_handle h, tl_detached *out);

/* Adopts a detached transport. On any error the transport is closed, never
 * leaked. Errors: -EMFILE (a full loop), -EINVAL (not a detached transport),
 * -ENOMEM; the backend's registration errors. */
int tl_attach(tl_loop *loop, const tl_detached *d, tl_handle *out);

/* Any thread. Queues a detached transport for loop, which attaches it inside a
 * turn and reports TL_OP_ADOPT with the new handle in u.accepted. A loop at its
 * handle ceiling keeps the transport queued until a handle is freed: nothing
 * is dropped. Errors: -ENOMEM (the queue cannot grow; the transport is then
 * closed). A transport the loop later fails to attach is reported as
 * TL_OP_ADOPT with that error in res (and closed). */
int tl_loop_post_transport(tl_loop *loop, const tl_detached *d, uint64_t token);

/* ---- accept routes ------------------------------------------------------ */

/* Kernel distribution: one DISTRIBUTE listener per loop on the same address.
 * loops[i] gets out[i]. If the platform cannot distribute, or any bind fails,
 * every listener already made is closed and the error returned. If addr asks
 * for port 0, the first listener's port is used for the others. It touches
 * every loop: call it before their threads start turning them.
 * Errors: -EINVAL (n <= 0, an address longer than sockaddr_storage),
 * -EOPNOTSUPP (a loop cannot distribute); tl_listen()'s errors. */
int tl_route_reuse_port(tl_loop **loops, int n, const struct sockaddr *addr, socklen_t addrlen,
                        int backlog, tl_handle *out);

/* CPU-steered kernel distribution: the listeners of tl_route_reuse_port, plus
 * a classic BPF program (SO_ATTACH_REUSEPORT_CBPF) that makes the kernel pick
 * the listener of the CPU that processed the connection's SYN instead of
 * hashing the 4-tuple. Listener i is made by loops[i] in order, so it is index
 * i of the kernel's group. cpus[i] is the CPU loops[i] runs on (the host pins
 * it); a SYN on a CPU not in cpus goes to listener cpu % n. cpus NULL: cpu % n
 * for all (loop i on CPU i). Where the kernel has no such option (or a loop
 * has TL_LOOP_NO_CPU_STEER) it is refused with -EOPNOTSUPP and every listener
 * already made is closed. Same threading rule as tl_route_reuse_port.
 * Errors: -EINVAL (n outside 1..1024, a negative CPU), -EOPNOTSUPP, -ENOMEM;
 * tl_route_reuse_port()'s; setsockopt(SO_ATTACH_REUSEPORT_CBPF) errors. */
int tl_route_reuse_port_cpu(tl_loop **loops, int n, const struct sockaddr *addr, socklen_t addrlen,
                            int backlog, const int *cpus, tl_handle *out);

/* Handoff: one accepting loop hands connections to sibling loops. */
typedef enum tl_handoff_policy {
    TL_HANDOFF_ROUND_ROBIN = 0,
    TL_HANDOFF_LEAST_LOADED, /* fewest handles + queued transports; ties round-robin */
} tl_handoff_policy;

typedef struct tl_handoff tl_handoff;

/* Allocates a handoff over workers (the array is copied). Free with
 * tl_handoff_free() after the workers are done.
 * Errors: -EINVAL (n <= 0, an unknown policy), -ENOMEM. */
int tl_handoff_new(tl_handoff **out, tl_loop **workers, int n, tl_handoff_policy policy);
void tl_handoff_free(tl_handoff *ho);

/* Called on the accepting loop's thread with a handle it just accepted (no
 * operation pending on it). Detaches it and posts it to the worker the policy
 * picks; that worker reports TL_OP_ADOPT with token. Returns the worker index
 * (>= 0) or a negative errno (the connection is then closed).
 * Errors: tl_detach()'s (-EAGAIN when the host left an operation on it, a
 * broken contract, and -EMFILE or -ENFILE: the handle is closed),
 * tl_loop_post_transport()'s. */
int tl_handoff_dispatch(tl_handoff *ho, tl_loop *acceptor, tl_handle accepted, uint64_t token);

/* Per-worker count of transports handed out so far (0 for an index out of range). */
uint64_t tl_handoff_count(const tl_handoff *ho, int worker);

/* Several accepting loops (the next move when one acceptor saturates):
 * acceptors[a] gets its own listener listeners[a], bound with
 * TL_REUSE_PORT_SHARE on one address (port 0: the first one's port), and its
 * own handoff handoffs[a] over a fixed subset of the workers, the ones
 * tl_handoff_subset() names, with policy (round-robin exact within the
 * subset; least-loaded across it). An acceptor may also be a worker. Which
 * listener a connection reaches is the kernel's: SHARE promises nothing, and
 * on Linux (SO_REUSEPORT) it is the 4-tuple hash. Needs 1 <= k <= n. On error
 * every listener and handoff made is undone. Free each handoff with
 * tl_handoff_free(); the listeners are handles of their loops.
 * Errors: -EINVAL (k < 1, n < k, an unknown policy), -ENOMEM; tl_listen()'s
 * (-EADDRINUSE, -EMFILE, ...). */
int tl_route_handoff_group(tl_loop **acceptors, int k, tl_loop **workers, int n,
                           tl_handoff_policy policy, const struct sockaddr *addr, socklen_t addrlen,
                           int backlog, tl_handle *listeners, tl_handoff **handoffs);

/* The workers acceptor a of k feeds out of n: [*first, *first + result), a
 * contiguous block; blocks differ in size by at most one.
 * Errors: -EINVAL (k < 1, n < k, a outside 0..k-1). */
int tl_handoff_subset(int n, int k, int a, int *first);

/* Whether listeners of this loop can DISTRIBUTE: the platform's answer,
 * unless the loop was made with TL_LOOP_NO_DISTRIBUTE. */
int tl_loop_can_distribute(const tl_loop *loop);

/* Acceptor threads (yahns): nthreads threads block in accept4() on one shared
 * listening socket (the kernel wakes one, FIFO) and post each connection to a
 * loop with tl_loop_post_transport(); loops report TL_OP_ADOPT with token. */
typedef struct tl_acceptor tl_acceptor;

/* Starts the threads. fd stays the caller's and must outlive tl_acceptor_stop();
 * it is made non-blocking (a file status flag: every descriptor of the socket
 * sees it). The loops array is copied. Out of descriptors, a thread backs off
 * for 100 ms rather than spin.
 * Errors: -EINVAL (nthreads <= 0, fd < 0, nloops <= 0, an unknown policy),
 * -ENOMEM; fcntl(), eventfd(), epoll_create1(), epoll_ctl() (-EINVAL if fd
 * is not pollable) and pthread_create() errors (-EAGAIN). */
int tl_acceptor_start(tl_acceptor **out, int fd, int nthreads, tl_loop **loops, int nloops,
                      tl_handoff_policy policy, uint64_t token);

/* Stops and joins the threads, then frees. The listener itself is left alone
 * (never shutdown()): it may be shared with another process, as in a re-exec
 * restart or socket activation; connections in its queue stay there, for
 * whoever else accepts on it. Close fd to end it. */
void tl_acceptor_stop(tl_acceptor *a);

/* Connections accepted by the threads so far and handed to loop i (0 for an
 * index out of range). */
uint64_t tl_acceptor_count(const tl_acceptor *a, int loop_index);

/* ---- UDP datagrams ----------------------------------------------------------
 *
 * A datagram socket on a loop, completion-based like the streams: the host
 * asks for a multishot receive and for sends, the loop completes them. Every
 * received datagram lands in one loop buffer (tl_loop_options.recv_buffers),
 * laid out as TL_UDP_HEADROOM bytes of metadata (read with tl_udp_meta_get()) and
 * then the payload, which u.buf.data points at; the host gives the buffer back
 * with tl_buffer_release(), as for TL_OP_RECV. io_uring receives with one
 * multishot recvmsg on the loop's provided-buffer ring, epoll with recvmmsg in
 * batches when the socket is readable. A payload longer than the buffer's
 * recv_buffer_size - TL_UDP_HEADROOM bytes is delivered cut, with
 * TL_UDP_META_TRUNCATED: size the buffers for the largest datagram expected.
 *
 * Sends are sendmsg() calls made by the loop on both backends, in order, one
 * op per send; when the socket buffer is full they wait for it to drain
 * (epoll: the writable edge; io_uring: a poll). */

#define TL_UDP_HEADROOM 160 /* bytes of each loop buffer before a datagram's payload */

/* A socket address of either family, by value. */
typedef union tl_sockaddr {
    struct sockaddr sa;
    struct sockaddr_in in;
    struct sockaddr_in6 in6;
} tl_sockaddr;

typedef struct tl_udp_options {
    tl_reuse_port reuse_port; /* as tl_listen_options: SHARE or DISTRIBUTE for one per loop */
    uint32_t send_queue;      /* sends in flight per handle before -EAGAIN; 0 = 256 */
    uint32_t flags;           /* TL_UDP_* */
    uint32_t reserved32;
    uint64_t reserved[3]; /* zero */
} tl_udp_options;

/* Receive-side GRO (UDP_GRO, 5.0): the kernel may hand over several
 * datagrams of one flow, all of one size but the last, as one payload, with
 * that size in tl_udp_meta.segment_size. A coalesced payload reaches 64 KiB,
 * so the buffers datagrams land in (the loop's datagram pool where it has
 * one, tl_loop_options.udp_recv_buffers, else its recv_buffer_size) must hold
 * at least TL_UDP_HEADROOM + 65535 bytes. */
#define TL_UDP_GRO 0x1u

/* Opens and binds a datagram socket (AF_INET or AF_INET6: IPV6_V6ONLY). The
 * socket reports each datagram's local address (IP_PKTINFO, IPV6_RECVPKTINFO)
 * and its ECN bits (IP_RECVTOS, IPV6_RECVTCLASS). The loop owns it; close it
 * with tl_close(). On error nothing is left behind.
 * Errors: -EINVAL (another family, an unknown reuse_port or flag, a send_queue
 * above 65535, TL_UDP_GRO with buffers too small for it), -EOPNOTSUPP
 * (DISTRIBUTE where the loop cannot distribute, TL_UDP_GRO where the kernel
 * has no UDP_GRO), -EMFILE (the handle
 * ceiling), -ENOMEM; socket(), setsockopt() and bind() errors; the backend's registration errors.
 */
int tl_udp_open(tl_loop *loop, const struct sockaddr *addr, socklen_t addrlen,
                const tl_udp_options *opts, tl_handle *out);

/* Adopts a bound datagram socket that another process made (the parent of
 * a restart, which passed it by exec) as tl_udp_open would have made it:
 * non-blocking, close-on-exec, pktinfo and ECN reported. Its address, port,
 * IPV6_V6ONLY, reuse-port group and GRO stay as they were set (tl_udp_gro
 * changes the last), so opts may only say send_queue. The loop takes fd,
 * even on error (it is closed then).
 * Errors: -ENOTSOCK (not an AF_INET/AF_INET6 datagram socket, or not bound),
 * -EINVAL (reuse_port, flags, a send_queue above 65535), -EMFILE (the handle
 * ceiling), -ENOMEM; fcntl(), setsockopt() and the backend's registration errors. */
int tl_udp_adopt(tl_loop *loop, int fd, const tl_udp_options *opts, tl_handle *out);

/* Turns receive-side GRO on or off for an open or adopted datagram handle
 * (on: nonzero; a socket of tl_route_udp_cid, or one a restart passed on):
 * TL_UDP_GRO's rules. Loop thread only.
 * Errors: -EINVAL (not a datagram handle; on, with buffers smaller than a GRO
 * payload), -EOPNOTSUPP (on, where the kernel has no UDP_GRO or the loop has
 * TL_LOOP_NO_UDP_GRO; off there is 0), an id's errors; setsockopt's. */
int tl_udp_gro(tl_loop *loop, tl_handle h, int on);

/* Multishot receive: one TL_OP_UDP_RECV completion per datagram, with
 * TL_CQE_BUFFER, res the payload's length (0 is an empty datagram, not an
 * end). Ends (final) on cancel, close, an error, or -ENOBUFS when no loop
 * buffer is free: the handle stays; release buffers and ask again. Errors
 * from ICMP about earlier sends (-ECONNREFUSED...) are skipped, not reported.
 * On io_uring with a buffer ring but a kernel without multishot recvmsg
 * (5.19) it ends at once with -EOPNOTSUPP: run such a host on epoll.
 * Errors: as tl_accept's list; -EINVAL also when recv_buffer_size leaves no
 * room after TL_UDP_HEADROOM. */
int tl_udp_recv(tl_loop *loop, tl_handle h, uint64_t token, tl_op *out);

/* What the loop learnt about a received datagram, besides its payload. */
typedef struct tl_udp_meta {
    tl_sockaddr peer;  /* the sender */
    tl_sockaddr local; /* the address it was sent to (pktinfo) with the socket's port */
    uint32_t ifindex;  /* the interface it came in on (0: not reported) */
    uint8_t ecn;       /* the IP header's ECN bits: 0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE */
    uint8_t flags;     /* TL_UDP_META_* */
    /* TL_UDP_GRO: the payload is datagrams of this size (the last may be
     * shorter), coalesced by the kernel; 0: the payload is one datagram. */
    uint16_t segment_size;
    uint32_t reserved[5];
} tl_udp_meta;

#define TL_UDP_META_LOCAL 0x1u     /* local is known (the kernel sent pktinfo) */
#define TL_UDP_META_TRUNCATED 0x2u /* the payload was longer than the buffer's room */

/* The metadata of a TL_OP_UDP_RECV completion that holds a buffer (or of a
 * TL_OP_UDP_FORWARDED one), valid while the host holds it. Loop thread only.
 * Errors: -EINVAL (another kind of completion, or a buffer not held). */
int tl_udp_meta_get(const tl_loop *loop, const tl_completion *c, tl_udp_meta *out);

/* One send. dest is required; source, when given, is the local address the
 * datagram leaves from (IP_PKTINFO / IPV6_PKTINFO; its port is ignored: a
 * socket sends from its own), which a server bound to a wildcard uses to
 * answer from the address the client wrote to. ecn (0..3) is set in the IP
 * header (IP_TOS / IPV6_TCLASS). segment_size > 0 asks for a GSO send: len
 * bytes go out as datagrams of segment_size bytes (the last may be shorter),
 * in one UDP_SEGMENT sendmsg where the kernel has it (TL_FEATURE_UDP_GSO),
 * else one sendmsg each. */
typedef struct tl_udp_send_args {
    const void *data; /* the caller's until the final completion */
    uint32_t len;
    uint16_t segment_size; /* 0: one datagram */
    uint8_t ecn;
    uint8_t reserved8;
    const struct sockaddr *dest; /* copied */
    socklen_t dest_len;
    const struct sockaddr *source; /* NULL: the kernel's choice; copied */
    socklen_t source_len;
    uint64_t reserved[2]; /* zero */
} tl_udp_send_args;

#define TL_UDP_MAX_SEGMENTS 64 /* the kernel's UDP_MAX_SEGMENTS for one GSO send */

/* Queues a send; one TL_OP_UDP_SEND completion, final, with res = len or an
 * error (a GSO fallback that fails part-way reports the error; the segments
 * before it were sent). Errors: as tl_accept's list; -EAGAIN (send_queue
 * sends are in flight: wait for a completion); -EINVAL (len 0 or more than
 * 65535, ecn > 3, more than TL_UDP_MAX_SEGMENTS segments, an address of the
 * wrong family or size). */
int tl_udp_send(tl_loop *loop, tl_handle h, const tl_udp_send_args *args, uint64_t token,
                tl_op *out);

/* What the kernel under this loop can do for datagrams. Loop thread only.
 * TL_FEATURE_UDP_GSO: UDP_SEGMENT works, so a GSO send is one sendmsg; probed
 * once per loop (a getsockopt on a scratch socket), and dropped if a device
 * answers a GSO send with EIO. TL_FEATURE_UDP_RECVMSG_MULTISHOT: io_uring
 * receives datagrams by one multishot recvmsg on its buffer ring; listed
 * wherever the ring is, and dropped when the kernel refuses the request. */
#define TL_FEATURE_UDP_GSO 0x1u
#define TL_FEATURE_UDP_RECVMSG_MULTISHOT 0x2u
unsigned tl_loop_features(tl_loop *loop);

/* ---- QUIC connection-ID steering --------------------------------------------
 *
 * One UDP socket per loop on one port, and a classic BPF reuseport program
 * that sends each datagram to the socket named by a byte of its QUIC
 * destination connection ID (doc/turnloop.md, "Connection-ID steering"):
 *   short header (first byte & 0x80 == 0): DCID from byte 1, its length is
 *     the server's own (cid_len);
 *   long header: DCID length at byte 5, DCID from byte 6; when that length is
 *     cid_len, the DCID is taken as one of ours;
 *   byte index_byte of an accepted DCID < n: that loop's socket;
 *   anything else (a client's first Initial with its random DCID, a value
 *   >= n, a datagram too short): the kernel's flow hash (SKF_AD_RXHASH) % n,
 *   so the datagrams of one 4-tuple go to one loop. */

typedef struct tl_cid_steer {
    uint8_t cid_len;    /* the length of the server's connection IDs, 1..20 */
    uint8_t index_byte; /* which byte of them holds the loop index, < cid_len */
    uint8_t reserved8[6];
    uint64_t reserved[2]; /* zero */
} tl_cid_steer;

#define TL_CID_STEER_DEFAULT_LEN 16 /* with cfg NULL: 16-byte CIDs... */
#define TL_CID_STEER_DEFAULT_BYTE 1 /* ...whose byte 1 is the loop index */
#define TL_CID_STEER_MAX_LOOPS 256  /* one byte names the loop */

/* Makes loops[i]'s socket out[i] (SO_REUSEPORT, in loop order: index i of
 * the kernel's group) and attaches the steering program. A kernel that
 * refuses the program (or a loop with TL_LOOP_NO_CID_STEER) is not an error:
 * the sockets stay, the kernel spreads datagrams by its hash, and *steer_err
 * says why (-EOPNOTSUPP, or setsockopt's error); the host then forwards
 * misrouted datagrams itself (tl_cid_loop_index, tl_udp_forward). *steer_err
 * is 0 when the kernel steers. Port 0: the first socket's port for all. Same
 * threading rule as tl_route_reuse_port. cfg NULL: the defaults above.
 * Errors (every socket made is closed): -EINVAL (n outside
 * 1..TL_CID_STEER_MAX_LOOPS, a cfg out of range), tl_udp_open()'s. */
int tl_route_udp_cid(tl_loop **loops, int n, const struct sockaddr *addr, socklen_t addrlen,
                     const tl_cid_steer *cfg, tl_handle *out, int *steer_err);

/* tl_route_udp_cid on sockets a parent process made with it (a restart that
 * inherits them, so that the group, its indices and its program stay as they
 * are: closing and binding again would reorder the group). loops[i] adopts
 * fds[i] (tl_udp_adopt) for i < nfds; loops past nfds get new sockets on the
 * same address, which join the group after the inherited ones, and the
 * program is attached again for n loops (*steer_err as tl_route_udp_cid's);
 * with n == nfds the group's program is left alone and *steer_err is 0.
 * Every fd is the loops' from the call on, even on error (all closed then).
 * Errors: -EINVAL (nfds outside 1..n, n outside 1..TL_CID_STEER_MAX_LOOPS, a
 * cfg out of range), tl_udp_adopt()'s and tl_udp_open()'s. */
int tl_route_udp_cid_adopt(tl_loop **loops, int n, const int *fds, int nfds,
                           const tl_cid_steer *cfg, tl_handle *out, int *steer_err);

/* The loop the steering program picks for a datagram by its connection ID
 * (0..n-1), or -1 when it would use the flow hash (not one of ours, or too
 * short). The same rules as the program: a host without kernel steering
 * forwards a datagram whose index is another loop's. cfg NULL: the defaults. */
int tl_cid_loop_index(const void *pkt, size_t len, const tl_cid_steer *cfg, int n);

/* A datagram handed from one loop to another, as the receiving loop reports it
 * in a TL_OP_UDP_FORWARDED completion's u.msg.ptr. The host owns it from that
 * completion on and frees it with tl_udp_datagram_free(). */
typedef struct tl_udp_datagram {
    tl_udp_meta meta;
    uint32_t len;
    uint8_t data[]; /* len bytes */
} tl_udp_datagram;

/* Copies the datagram of c (a TL_OP_UDP_RECV completion with a buffer, from
 * loop `from`, whose thread calls) and queues it for loop `to`, which may be
 * turned by another thread (the inbox of tl_loop_post) and reports
 * TL_OP_UDP_FORWARDED with token. Allocates one block per datagram. The caller
 * still holds c's buffer and releases it as usual.
 * Errors: -EINVAL (c holds no datagram), -ENOMEM. */
int tl_udp_forward(tl_loop *from, const tl_completion *c, tl_loop *to, uint64_t token);
void tl_udp_datagram_free(tl_udp_datagram *d);

/* ---- misc --------------------------------------------------------------- */

/* A static description of a negative errno ("handle ceiling reached" for
 * -EMFILE ...): turnloop's meaning where it gives one, else strerror()'s. */
const char *tl_strerror(int err);

#ifdef __cplusplus
}
#endif
#endif
