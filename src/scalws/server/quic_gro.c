/* Cutting a GRO payload into its datagrams (quic_gro.h). Whatever the
 * segment size says, every byte goes to exactly one datagram, in order, and
 * the walk ends: a wrong size costs the datagrams it cuts wrong (QUIC drops
 * what does not decrypt), never a read past the payload. */
#include "quic_gro.h"

void sws_gro_cut_init(sws_gro_cut *c, const uint8_t *data, size_t len, uint16_t seg) {
    *c = (sws_gro_cut){.data = data, .len = len, .seg = seg && seg < len ? seg : len};
}

bool sws_gro_cut_next(sws_gro_cut *c, const uint8_t **p, size_t *n) {
    if (c->done)
        return false;
    size_t left = c->len - c->off;
    *n = left < c->seg ? left : c->seg;
    *p = c->data + c->off;
    c->off += *n;
    c->done = c->off >= c->len; /* seg > 0 whenever len > 0: the walk moves on */
    return true;
}
