/* A per-loop pool of equal-size blocks (lend.c): lent to a connection while
 * data moves through it (output, a request being parsed, TLS scratch) and
 * given back once nothing is held, so that an idle connection holds none.
 * Belongs to one loop's thread. */
#ifndef SWS_LEND_H
#define SWS_LEND_H

#include <stddef.h>
#include <stdint.h>

typedef struct sws_lend {
    void **free; /* a stack of free blocks, room for cap */
    uint32_t nfree;
    uint32_t cap;  /* the most blocks that can be out at once (one per use site) */
    uint32_t used; /* blocks lent */
    uint32_t peak; /* most lent at once since the last trim */
    size_t size;
} sws_lend;

/* 0 or -ENOMEM. cap bounds used + nfree: take past it fails. */
int sws_lend_init(sws_lend *p, size_t size, uint32_t cap);
void sws_lend_fini(sws_lend *p);
/* A block (from the stack, else malloc), or NULL when out of memory or at cap.
 * Taken and given per request: the stack's case is inline, malloc's is not. */
void *sws_lend_take_new(sws_lend *p);
static inline void *sws_lend_take(sws_lend *p) {
    if (!p->nfree)
        return sws_lend_take_new(p);
    /* used + nfree <= cap: a block on the stack is within cap. */
    void *b = p->free[--p->nfree];
    if (++p->used > p->peak)
        p->peak = p->used;
    return b;
}
/* b from sws_lend_take of p, or NULL (nothing to give). */
static inline void sws_lend_give(sws_lend *p, void *b) {
    if (!b)
        return;
    /* used + nfree <= cap: there is room. */
    p->free[p->nfree++] = b;
    p->used--;
}
/* Frees the free blocks beyond what the last interval's peak needed on top of
 * those lent now, keeping at least keep_min: a steady load reuses blocks
 * without allocating, a burst's blocks are freed within two trims. */
void sws_lend_trim(sws_lend *p, uint32_t keep_min);

#endif
