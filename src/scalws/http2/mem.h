/* A loop's allocator for libnghttp2 (mem.c): per-size-class free lists. */
#ifndef SWS_H2_MEM_H
#define SWS_H2_MEM_H

#include <stdbool.h>
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

/* One session's view of its loop's pools (its nghttp2_mem's user data): the
 * loop's size classes, and its outbound frame buffer apart, on pages of its
 * own, so that an idle session can give those pages back. The frame buffer
 * (NGHTTP2_FRAMEBUF_CHUNKLEN, 16 KiB and a frame header) is what
 * nghttp2_session_mem_send serialises each frame into; once its bytes are
 * taken it holds nothing, yet a long-running server keeps all its pages
 * resident (bench/README.md, "Where scalwsd's 14.3 KB go"). */
typedef struct h2_mem_session {
    nghttp2_mem mem; /* what nghttp2_session_server_new3 is given */
    h2_mem *m;
    void *fb; /* the frame buffer, page-aligned, fb_len bytes */
    size_t fb_len;
    bool fb_dropped; /* its pages were given back since it was last written */
} h2_mem_session;

void h2_mem_init(h2_mem *m);
void h2_mem_session_init(h2_mem_session *s, h2_mem *m);
/* The session is idle (nothing queued, nothing taken from mem_send left
 * unwritten): the frame buffer's whole pages go back to the kernel
 * (MADV_DONTNEED) and come back as zeroes when the next frame is written. */
void h2_mem_session_idle(h2_mem_session *s);
/* The session wrote, or may write, into the frame buffer again. */
static inline void h2_mem_session_busy(h2_mem_session *s) {
    s->fb_dropped = false;
}
/* Once a sweep: free blocks beyond the last interval's need go back to malloc. */
void h2_mem_trim(h2_mem *m);
/* After every session of the loop is gone. */
void h2_mem_fini(h2_mem *m);

#endif
