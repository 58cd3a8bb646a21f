/* Growing a slot table (handles or operations): new slots are zeroed and
 * pushed on the table's free list through the link field at link_off. Slots
 * are addressed by index, never by pointer, so moving the table is safe. */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int tl__slots_grow(void **table, uint32_t *cap, uint32_t ncap, size_t size, size_t link_off,
                   uint32_t *free_head) {
    if (ncap > TL_ID_MAX_SLOTS || ncap <= *cap)
        return -ENOSPC;
    uint8_t *n = realloc(*table, (size_t)ncap * size);
    if (!n)
        return -ENOMEM;
    memset(n + (size_t)*cap * size, 0, (size_t)(ncap - *cap) * size);
    for (uint32_t i = ncap; i-- > *cap;) {
        memcpy(n + (size_t)i * size + link_off, free_head, sizeof *free_head);
        *free_head = i;
    }
    *table = n;
    *cap = ncap;
    return 0;
}
