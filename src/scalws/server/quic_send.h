/* The quic listener's datagrams out (quic_host.c's send hook): each one is
 * copied into the loop's send arena, where it stays until its tl_udp_send
 * completes, and with GSO the datagrams the engine writes back to back for
 * one peer go out as one send with a segment size (doc/http3.md, "UDP GSO").
 * Loop thread only. */
#ifndef SWS_QUIC_SEND_H
#define SWS_QUIC_SEND_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "turnloop.h"

/* Sends in flight per loop: turnloop's send_queue for a socket of
 * tl_route_udp_cid (its default). Past it a datagram is dropped, which
 * QUIC's loss recovery sends again, as a full socket buffer would. */
#define SWS_QUIC_SENDS 256
/* The arena: room for 32 full GSO runs, some 1,400 datagrams. One turn may
 * write 64 datagrams for each connection that had ACKs in it, and with
 * 512 KiB ten connections downloading at once lost 3.8 % of their datagrams
 * here (0.05 % with 2 MiB, and a third more sent in the same time). Touched
 * as far as used. */
#define SWS_QUIC_ARENA (2048u * 1024u)
/* A GSO batch's bytes at most: one UDP payload over IPv4 (65535 - 20 - 8). */
#define SWS_QUIC_BATCH_MAX 65507u

typedef struct sws_quic_tx sws_quic_tx;

/* Allocates the arena. NULL when out of memory. */
sws_quic_tx *sws_quic_tx_new(void);
void sws_quic_tx_free(sws_quic_tx *tx);
/* The socket sends go to, once it exists; gso: coalesce bursts (the caller
 * has checked the kernel, tl_loop_features). */
void sws_quic_tx_bind(sws_quic_tx *tx, tl_loop *loop, tl_handle udp, bool gso);

/* One datagram from local (NULL: the kernel's choice) to remote: copied, and
 * sent now, or kept to join the datagrams that follow it for the same peer
 * until sws_quic_tx_flush. 0, or a negative errno: the datagram is dropped. */
int sws_quic_tx_send(sws_quic_tx *tx, const struct sockaddr *local, socklen_t local_len,
                     const struct sockaddr *remote, socklen_t remote_len, unsigned ecn,
                     const uint8_t *data, size_t len);
/* Sends the batch being built, if any: after every turn, before a close. */
void sws_quic_tx_flush(sws_quic_tx *tx);
/* A send of token index idx completed: its arena space comes back. */
void sws_quic_tx_done(sws_quic_tx *tx, uint32_t idx);

typedef struct sws_quic_tx_stats {
    uint64_t sends;   /* tl_udp_send calls */
    uint64_t batches; /* of them, GSO sends of more than one datagram */
    uint64_t dropped; /* datagrams dropped: no room, or tl_udp_send refused */
} sws_quic_tx_stats;
sws_quic_tx_stats sws_quic_tx_stats_of(const sws_quic_tx *tx);

#endif
