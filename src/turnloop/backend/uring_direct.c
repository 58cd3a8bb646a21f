/* Direct descriptors (TURNLOOP_URING_ENABLE=direct): the ring's sparse file
 * table that multishot accepts fill, entries no handle owns closed in the arm
 * phase, and IORING_OP_FIXED_FD_INSTALL for whatever needs a real descriptor.
 * A stream's fd is a table index while tl_hslot.direct is set; only the
 * backend uses it then. */
#include "uring.h"

#include <errno.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

/* Direct descriptors need a sparse file table (5.19, for IORING_FILE_INDEX_ALLOC)
 * and IORING_OP_FIXED_FD_INSTALL (6.8) for whatever needs a real descriptor;
 * a provided-buffer ring too, since the fallback receive is a read(2). And a
 * kernel whose table entries are released one by one (6.13): before it, an
 * entry closed while any older fixed-file request was still armed (an idle
 * connection's receive) kept its socket open, FIN unsent, until that request
 * ended. No feature bit says so; 6.14's IORING_FEAT_RW_ATTR stands for it. */
bool tl__ur_direct_setup(tl_loop *loop, uring_state *s) {
    if (!(s->ring.features & IORING_FEAT_RW_ATTR) || !loop->h_fixed)
        return false;
    struct io_uring_probe *pr = io_uring_get_probe_ring(&s->ring);
    bool ok = pr && io_uring_opcode_supported(pr, IORING_OP_FIXED_FD_INSTALL);
    if (pr)
        io_uring_free_probe(pr);
    if (!ok || !s->br)
        return false;
    s->direct_queue = SOMAXCONN;
    FILE *f = fopen("/proc/sys/net/core/somaxconn", "re");
    if (f) {
        unsigned q;
        if (fscanf(f, "%u", &q) == 1 && q > 0)
            s->direct_queue = q;
        fclose(f);
    }
    uint64_t want = (uint64_t)loop->h_max + (uint64_t)DIRECT_LISTENERS * s->direct_queue;
    struct rlimit rl;
    uint64_t room = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? rl.rlim_cur : 1024;
    if (room > DIRECT_SLOTS_MAX)
        room = DIRECT_SLOTS_MAX;
    s->direct_slots = (uint32_t)(want < room ? want : room);
    /* room for at least one listener's queue beside every handle */
    if ((uint64_t)loop->h_max + s->direct_queue > s->direct_slots)
        return false;
    return io_uring_register_files_sparse(&s->ring, s->direct_slots) == 0;
}

void tl__ur_close_direct(tl_loop *loop, int index) {
    uring_state *s = state(loop);
    tl__ur_push_id(&s->dir_closes, &s->dir_closes_len, &s->dir_closes_cap, (uint64_t)index);
}

/* Table entries no handle owns any more, closed in this turn's batch. */
void tl__ur_arm_dir_closes(tl_loop *loop) {
    uring_state *s = state(loop);
    uint32_t keep = 0;
    for (uint32_t i = 0; i < s->dir_closes_len; i++) {
        struct io_uring_sqe *sqe = s->sq_starved ? NULL : tl__ur_get_sqe(loop);
        if (!sqe) {
            s->dir_closes[keep++] = s->dir_closes[i];
            continue;
        }
        io_uring_prep_close_direct(sqe, (unsigned)s->dir_closes[i]);
        io_uring_sqe_set_data64(sqe, UD_IGNORE);
    }
    s->dir_closes_len = keep;
}

/* The CQE with user_data ud, if the kernel has posted it: read where it lies
 * (the turn skips it), since others may be queued ahead of it. */
static bool find_cqe(struct io_uring *ring, uint64_t ud, int32_t *res) {
    unsigned head = *ring->cq.khead, tail = io_uring_smp_load_acquire(ring->cq.ktail);
    for (; head != tail; head++) {
        const struct io_uring_cqe *c = &ring->cq.cqes[head & *ring->cq.kring_mask];
        if (c->user_data == ud) {
            *res = c->res;
            return true;
        }
    }
    return false;
}

/* IORING_OP_FIXED_FD_INSTALL (6.8) gives the socket of a direct descriptor a
 * real one (O_CLOEXEC), for sendfile, getpeername, a detach, TLS peers of the
 * host: whatever is not the ring's. The handle keeps the real one and the
 * table entry is closed in the next batch (requests still in flight hold the
 * file, not the entry). Called between turns, when nothing else is queued;
 * the op runs inline in the submit, so its CQE is there when it returns. */
int tl__ur_install_fd(tl_loop *loop, uint32_t hi) {
    uring_state *s = state(loop);
    tl_hslot *h = &loop->h[hi];
    struct io_uring_sqe *sqe = tl__ur_get_sqe(loop);
    if (!sqe)
        return -EBUSY;
    io_uring_prep_rw(IORING_OP_FIXED_FD_INSTALL, sqe, h->fd, NULL, 0, 0);
    sqe->flags = IOSQE_FIXED_FILE; /* install_fd_flags (rw_flags) 0: O_CLOEXEC */
    uint64_t ud = UD_INSTALL | (++s->install_seq & 0xffffffu);
    io_uring_sqe_set_data64(sqe, ud);
    int r = io_uring_submit(&s->ring);
    s->msg_used = 0;
    if (r < 0)
        return r;
    int32_t res = -EAGAIN;
    for (int tries = 0; tries < 100 && !find_cqe(&s->ring, ud, &res); tries++)
        io_uring_get_events(&s->ring); /* posts deferred completions, flushes overflow */
    if (res == -EAGAIN)
        s->install_lost =
            ud; /* cannot happen (inline); if it comes later, tl__ur_on_install_cqe closes it */
    if (res < 0)
        return res;
    tl__ur_close_direct(loop, h->fd);
    h->fd = res;
    h->direct = 0;
    loop->stats.fd_installs++;
    return res;
}

/* An install's CQE met by the turn: already read where it lay, unless its
 * caller gave up on it. */
void tl__ur_on_install_cqe(tl_loop *loop, uint64_t ud, int32_t res) {
    if (ud == state(loop)->install_lost && res >= 0)
        close(res); /* its caller was told -EAGAIN: nobody owns it */
}
