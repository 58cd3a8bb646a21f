/* Slot tables (handles, operations, op arguments): anonymous mappings, grown
 * by mremap, so that pages are touched (and resident) only as far as slots
 * have been used, never as far as the capacity, and growing copies nothing.
 * A free slot is on the table's free list (through the link field at
 * link_off) or past the fresh mark, never used yet and still zero; the free
 * list is taken first. Slots are addressed by index, never by pointer, so
 * moving the table is safe. */
#include "internal.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

static size_t table_bytes(uint32_t cap, size_t size) {
    size_t page = 4096, n = (size_t)cap * size;
    return (n + page - 1) / page * page;
}

int tl__slots_grow(void **table, uint32_t *cap, uint32_t ncap, size_t size) {
    if (ncap > TL_ID_MAX_SLOTS || ncap <= *cap)
        return -ENOSPC;
    size_t nb = table_bytes(ncap, size);
    void *n = *table ? mremap(*table, table_bytes(*cap, size), nb, MREMAP_MAYMOVE)
                     : mmap(NULL, nb, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (n == MAP_FAILED)
        return -ENOMEM;
    *table = n;
    *cap = ncap;
    return 0;
}

void tl__slots_free(void *table, uint32_t cap, size_t size) {
    if (table)
        munmap(table, table_bytes(cap, size));
}

uint32_t tl__slots_take(void *table, size_t size, size_t link_off, uint32_t *free_head,
                        uint32_t *fresh, uint32_t cap) {
    uint32_t i = *free_head;
    if (i != TL_NIL) {
        memcpy(free_head, (uint8_t *)table + (size_t)i * size + link_off, sizeof *free_head);
        return i;
    }
    return *fresh < cap ? (*fresh)++ : TL_NIL;
}
