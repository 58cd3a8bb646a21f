/* Pools of equal-size blocks for one loop: a free stack sized for every block
 * that can be out at once, so that giving back never fails or allocates. */
#include "lend.h"

#include <errno.h>
#include <stdlib.h>

int sws_lend_init(sws_lend *p, size_t size, uint32_t cap) {
    *p = (sws_lend){.size = size, .cap = cap};
    p->free = malloc((size_t)cap * sizeof(*p->free));
    return p->free ? 0 : -ENOMEM;
}

void sws_lend_fini(sws_lend *p) {
    while (p->nfree)
        free(p->free[--p->nfree]);
    free(p->free);
    p->free = NULL;
}

/* sws_lend_take with an empty stack (lend.h). */
void *sws_lend_take_new(sws_lend *p) {
    if (p->used == p->cap)
        return NULL;
    void *b = malloc(p->size);
    if (b && ++p->used > p->peak)
        p->peak = p->used;
    return b;
}

void sws_lend_trim(sws_lend *p, uint32_t keep_min) {
    uint32_t keep = p->peak - p->used;
    if (keep < keep_min)
        keep = keep_min;
    while (p->nfree > keep)
        free(p->free[--p->nfree]);
    p->peak = p->used;
}
