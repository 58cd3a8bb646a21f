/* A GRO payload cut back into its datagrams (turnloop's tl_udp_meta
 * segment_size: every datagram that size but the last, which may be
 * shorter). The quic host feeds each to the engine with the payload's path
 * and ECN: the kernel coalesces one flow only, so they share them. */
#ifndef SWS_QUIC_GRO_H
#define SWS_QUIC_GRO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sws_gro_cut {
    const uint8_t *data;
    size_t len, seg, off;
    bool done;
} sws_gro_cut;

/* seg 0, or not below len (no coalescing, or a size that cannot be one):
 * the payload is one datagram, which may be empty. */
void sws_gro_cut_init(sws_gro_cut *c, const uint8_t *data, size_t len, uint16_t seg);

/* The next datagram (*p, *n), or false after the last. */
bool sws_gro_cut_next(sws_gro_cut *c, const uint8_t **p, size_t *n);

#endif
