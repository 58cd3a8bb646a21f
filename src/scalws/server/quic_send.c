/* The quic listener's sends (quic_send.h). The engine writes a connection's
 * packets back to back (H3_BURST per call), all of one size but the last of
 * a burst; with GSO they are gathered in place into one buffer and sent as
 * one tl_udp_send with that size as the segment size, one sendmsg for the
 * kernel to cut. Without GSO every datagram is its own send, at once.
 * Invariant: the arena is a ring of sends in the order they were queued:
 * space is taken at head (the batch being built sits there, not yet a
 * send) and comes back at tail; a send that completes before older ones
 * waits for them to come back. */
#include "quic_send.h"

#include "token.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct tx_send {
    uint32_t off;
    bool done;
} tx_send;

struct sws_quic_tx {
    tl_loop *loop;
    tl_handle udp;
    bool gso;
    uint8_t *arena;
    uint32_t head; /* where the next bytes go: the batch's start */
    tx_send sends[SWS_QUIC_SENDS];
    uint32_t oldest, nsends; /* the ring of sends queued, oldest first */
    /* The batch being built at arena + head: count datagrams, len bytes, each
     * seg bytes but the last (short: the last is shorter, so it is closed). */
    uint32_t len, count, seg;
    bool short_last;
    uint8_t ecn;
    tl_sockaddr dest, source;
    socklen_t dest_len, source_len;
    sws_quic_tx_stats st;
    /* Test only (SCALWSD_TEST_QUIC_SEND_DROP): a run of drop_run datagrams
     * dropped on purpose after drop_below out of 2^32 of them, drawn by
     * xorshift from drop_state; drop_left of the current run to go, until
     * drop_end (a run is a moment's: a queue that was full drains). */
    uint32_t drop_below, drop_state, drop_run, drop_left;
    uint64_t drop_end;
};

/* SCALWSD_TEST_QUIC_SEND_DROP=PERCENT[,SEED[,RUN]], read when a loop's
 * arena is made: PERCENT of the outgoing datagrams each begin a run of RUN
 * (1) dropped before the kernel sees them, within 2 ms, as a lossy network
 * (RUN 1) or a full send queue (a burst's tail) would. Anything else in it
 * is said and ignored. */
static void drop_from_env(sws_quic_tx *tx) {
    const char *v = getenv("SCALWSD_TEST_QUIC_SEND_DROP");
    if (!v || !*v)
        return;
    char *end;
    double pct = strtod(v, &end);
    unsigned long seed = 1, run = 1;
    if (*end == ',')
        seed = strtoul(end + 1, &end, 10);
    if (*end == ',')
        run = strtoul(end + 1, &end, 10);
    if (*end || !(pct > 0 && pct < 100) || run < 1 || run > 1000) {
        fprintf(stderr,
                "scalwsd: SCALWSD_TEST_QUIC_SEND_DROP=%s is not PERCENT[,SEED[,RUN]] with 0 < "
                "PERCENT < 100 and 1 <= RUN <= 1000: ignored\n",
                v);
        return;
    }
    tx->drop_below = (uint32_t)(pct / 100.0 * 4294967296.0);
    tx->drop_state = (uint32_t)seed ? (uint32_t)seed : 1u; /* xorshift's state is never 0 */
    tx->drop_run = (uint32_t)run;
    fprintf(stderr,
            "scalwsd: test only: %g %% of the quic datagrams sent begin a run of %lu dropped "
            "(SCALWSD_TEST_QUIC_SEND_DROP)\n",
            pct, run);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static bool drop_now(sws_quic_tx *tx) {
    if (tx->drop_left && now_ns() < tx->drop_end) {
        tx->drop_left--;
        return true;
    }
    tx->drop_left = 0;
    uint32_t x = tx->drop_state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    tx->drop_state = x;
    if (x >= tx->drop_below)
        return false;
    tx->drop_left = tx->drop_run - 1;
    if (tx->drop_left)
        tx->drop_end = now_ns() + 2000000u;
    return true;
}

sws_quic_tx *sws_quic_tx_new(void) {
    sws_quic_tx *tx = calloc(1, sizeof(*tx));
    if (!tx || !(tx->arena = malloc(SWS_QUIC_ARENA))) {
        free(tx);
        return NULL;
    }
    drop_from_env(tx);
    return tx;
}

void sws_quic_tx_free(sws_quic_tx *tx) {
    if (!tx)
        return;
    free(tx->arena);
    free(tx);
}

void sws_quic_tx_bind(sws_quic_tx *tx, tl_loop *loop, tl_handle udp, bool gso) {
    tx->loop = loop;
    tx->udp = udp;
    tx->gso = gso;
}

/* Contiguous bytes free from head. Unwrapped (head at or past the oldest
 * send), up to the end; wrapped, up to the oldest send, one byte short so
 * that head never meets it (head == tail means empty). */
static uint32_t room(const sws_quic_tx *tx) {
    if (!tx->nsends)
        return SWS_QUIC_ARENA - tx->head;
    uint32_t tail = tx->sends[tx->oldest].off;
    return tx->head >= tail ? SWS_QUIC_ARENA - tx->head : tail - tx->head - 1;
}

/* Room for a new batch of need bytes at head: the end of the arena is
 * skipped when the start has room (the skipped bytes come back with the
 * send before them). */
static bool make_room(sws_quic_tx *tx, uint32_t need) {
    if (room(tx) >= need)
        return true;
    if (!tx->nsends) {
        tx->head = 0;
        return true;
    }
    uint32_t tail = tx->sends[tx->oldest].off;
    if (tx->head >= tail && tail > need) {
        tx->head = 0;
        return true;
    }
    return false;
}

void sws_quic_tx_flush(sws_quic_tx *tx) {
    if (!tx->count)
        return;
    uint32_t count = tx->count;
    tx->count = 0;
    if (tx->nsends == SWS_QUIC_SENDS) {
        tx->st.dropped += count;
        return;
    }
    uint32_t idx = (tx->oldest + tx->nsends) % SWS_QUIC_SENDS;
    tl_udp_send_args a = {.data = tx->arena + tx->head,
                          .len = tx->len,
                          .segment_size = count > 1 ? (uint16_t)tx->seg : 0,
                          .ecn = tx->ecn,
                          .dest = &tx->dest.sa,
                          .dest_len = tx->dest_len,
                          .source = tx->source_len ? &tx->source.sa : NULL,
                          .source_len = tx->source_len};
    int rc = tl_udp_send(tx->loop, tx->udp, &a, sws_token(idx, SWS_T_UDP_SEND), NULL);
    if (rc < 0) {
        tx->st.dropped += count;
        return;
    }
    tx->st.sends++;
    tx->st.batches += count > 1;
    tx->sends[idx] = (tx_send){.off = tx->head, .done = false};
    tx->nsends++;
    tx->head += tx->len;
}

/* Whether the datagram joins the batch: the same path and ECN, the batch
 * not closed by a shorter one, no longer than its segments, and within the
 * kernel's bounds. */
static bool joins(const sws_quic_tx *tx, const struct sockaddr *local, socklen_t local_len,
                  const struct sockaddr *remote, socklen_t remote_len, unsigned ecn, size_t len) {
    if (!tx->count)
        return false;
    uint32_t max = SWS_QUIC_BATCH_MAX / tx->seg;
    if (max > TL_UDP_MAX_SEGMENTS)
        max = TL_UDP_MAX_SEGMENTS;
    return !tx->short_last && len <= tx->seg && tx->count < max &&
           tx->len + len <= SWS_QUIC_BATCH_MAX && ecn == tx->ecn && remote_len == tx->dest_len &&
           memcmp(remote, &tx->dest, remote_len) == 0 &&
           (local ? local_len : 0) == tx->source_len &&
           (!local || memcmp(local, &tx->source, local_len) == 0) && room(tx) >= tx->len + len;
}

int sws_quic_tx_send(sws_quic_tx *tx, const struct sockaddr *local, socklen_t local_len,
                     const struct sockaddr *remote, socklen_t remote_len, unsigned ecn,
                     const uint8_t *data, size_t len) {
    if (len == 0 || len > UINT16_MAX || remote_len > sizeof(tx->dest) ||
        (local && local_len > sizeof(tx->source)))
        return -EINVAL;
    if (__builtin_expect(tx->drop_below != 0, 0) && drop_now(tx)) {
        tx->st.dropped++; /* lost on the way: the engine believes it sent */
        return 0;
    }
    if (!joins(tx, local, local_len, remote, remote_len, ecn, len)) {
        sws_quic_tx_flush(tx);
        if (tx->nsends == SWS_QUIC_SENDS || !make_room(tx, (uint32_t)len)) {
            tx->st.dropped++;
            return -EAGAIN;
        }
        tx->len = 0;
        tx->seg = (uint32_t)len;
        tx->short_last = false;
        tx->ecn = (uint8_t)ecn;
        memcpy(&tx->dest, remote, remote_len);
        tx->dest_len = remote_len;
        tx->source_len = local ? local_len : 0;
        if (local)
            memcpy(&tx->source, local, local_len);
    }
    memcpy(tx->arena + tx->head + tx->len, data, len);
    tx->len += (uint32_t)len;
    tx->count++;
    tx->short_last = len < tx->seg;
    if (!tx->gso)
        sws_quic_tx_flush(tx);
    return 0;
}

void sws_quic_tx_done(sws_quic_tx *tx, uint32_t idx) {
    if (idx >= SWS_QUIC_SENDS || !tx->nsends)
        return;
    tx->sends[idx].done = true;
    while (tx->nsends && tx->sends[tx->oldest].done) {
        tx->sends[tx->oldest].done = false;
        tx->oldest = (tx->oldest + 1) % SWS_QUIC_SENDS;
        tx->nsends--;
    }
    if (!tx->nsends && !tx->count)
        tx->head = 0;
}

sws_quic_tx_stats sws_quic_tx_stats_of(const sws_quic_tx *tx) {
    return tx->st;
}
