/* A loop's allocator for libnghttp2 (mem.c): per-size-class free lists. */
#ifndef SWS_H2_MEM_H
#define SWS_H2_MEM_H

#include <stddef.h>
#include <stdint.h>

#include <nghttp2/nghttp2.h>

#define H2_MEM_MIN 32
#define H2_MEM_CLASSES 7 /* 32 .. 2048; larger blocks are pages of their own */
#define H2_MEM_MAX ((size_t)H2_MEM_MIN << (H2_MEM_CLASSES - 1))

typedef struct h2_mem_free {
    struct h2_mem_free *next;
} h2_mem_free;

typedef struct h2_mem {
    nghttp2_mem mem; /* what nghttp2_session_server_new3 is given */
    h2_mem_free *free[H2_MEM_CLASSES];
    uint32_t nfree[H2_MEM_CLASSES];
    uint32_t used[H2_MEM_CLASSES];
    uint32_t peak[H2_MEM_CLASSES]; /* most in use since the last trim */
} h2_mem;

void h2_mem_init(h2_mem *m);
/* Once a sweep: free blocks beyond the last interval's need go back to malloc. */
void h2_mem_trim(h2_mem *m);
/* After every session of the loop is gone. */
void h2_mem_fini(h2_mem *m);

#endif
