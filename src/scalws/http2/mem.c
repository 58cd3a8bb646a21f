/* libnghttp2's allocations, per loop (nghttp2_mem): a session allocates and
 * frees a handful of small blocks per stream (the stream, its frames, the
 * answer's copied fields), which glibc's malloc serves at ~100 instructions
 * each. Blocks up to H2_MEM_MAX come from per-size-class free lists of the
 * loop instead (one thread, no locks); larger ones (a session's 4 KiB
 * stream map) from malloc and calloc, which leave a fresh heap's pages
 * untouched until written. A session's 16 KiB frame buffer is page-aligned
 * (posix_memalign, in the heap: a mapping of its own per connection would
 * meet vm.max_map_count) so that its pages can go back while the session is
 * idle (h2_mem_session_idle; bench/README.md, "Idle HTTP/2 connections").
 * Trimmed by the sweep as the other pools are. */
#include "mem.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Each block carries its class in front, 16 bytes to keep malloc's
 * alignment. */
#define HDR 16
#define BIG 0xff

static unsigned class_of(size_t n) {
    unsigned k = 0;
    size_t cap = H2_MEM_MIN;
    while (cap < n) {
        cap <<= 1;
        k++;
    }
    return k;
}

static size_t class_size(unsigned k) {
    return (size_t)H2_MEM_MIN << k;
}

/* zero: the block must be zeroed (calloc). Fresh pages are zero already:
 * a mapping, or calloc's fresh heap, which glibc does not touch. */
/* A large block's size, kept in its header. */
static size_t big_len(const unsigned char *p) {
    size_t n;
    memcpy(&n, p + 8, sizeof(n));
    return n;
}

static void *take(h2_mem *m, size_t n, bool zero) {
    if (n > H2_MEM_MAX) {
        unsigned char *p = zero ? calloc(1, HDR + n) : malloc(HDR + n);
        if (!p)
            return NULL;
        p[0] = BIG;
        memcpy(p + 8, &n, sizeof(n));
        return p + HDR;
    }
    unsigned k = class_of(n);
    h2_mem_free *f = m->free[k];
    unsigned char *p;
    if (f) {
        m->free[k] = f->next;
        m->nfree[k]--;
        p = (unsigned char *)f - HDR;
        if (zero)
            memset(p + HDR, 0, class_size(k));
    } else {
        p = zero ? calloc(1, HDR + class_size(k)) : malloc(HDR + class_size(k));
        if (!p)
            return NULL;
        p[0] = (unsigned char)k;
    }
    m->used[k]++;
    if (m->used[k] > m->peak[k])
        m->peak[k] = m->used[k];
    return p + HDR;
}

static void give(h2_mem *m, void *ptr) {
    if (!ptr)
        return;
    unsigned char *p = (unsigned char *)ptr - HDR;
    if (p[0] == BIG) {
        free(p);
        return;
    }
    unsigned k = p[0];
    m->used[k]--;
    h2_mem_free *f = ptr;
    f->next = m->free[k];
    m->free[k] = f;
    m->nfree[k]++;
}

static void *mem_malloc(size_t n, void *ud) {
    return take(ud, n, false);
}

static void mem_free(void *ptr, void *ud) {
    give(ud, ptr);
}

static void *mem_calloc(size_t nmemb, size_t size, void *ud) {
    if (size && nmemb > SIZE_MAX / size)
        return NULL;
    return take(ud, nmemb * size, true);
}

static void *mem_realloc(void *ptr, size_t n, void *ud) {
    h2_mem *m = ud;
    if (!ptr)
        return take(m, n, false);
    if (n == 0) {
        give(m, ptr);
        return NULL;
    }
    unsigned char *p = (unsigned char *)ptr - HDR;
    size_t have = p[0] == BIG ? big_len(p) : class_size(p[0]);
    if (n <= have)
        return ptr;
    void *q = take(m, n, false);
    if (!q)
        return NULL;
    memcpy(q, ptr, have < n ? have : n);
    give(m, ptr);
    return q;
}

/* ---- a session's view: its frame buffer apart -------------------------------- */

/* The frame buffer's size in libnghttp2 1.52 is 16,394 (a frame header, a
 * padding octet, 16 KiB of payload): a block of about that size is taken
 * for it, once; anything else goes to the loop's pools. */
#define FB_MIN (16384 + 9)
#define FB_MAX (16384 + 64)

static size_t page_size(void) {
    static size_t page;
    if (!page) {
        long p = sysconf(_SC_PAGESIZE);
        page = p > 0 ? (size_t)p : 4096;
    }
    return page;
}

static void *s_take(h2_mem_session *s, size_t n, bool zero) {
    if (s->fb || n < FB_MIN || n > FB_MAX)
        return take(s->m, n, zero);
    void *p;
    if (posix_memalign(&p, page_size(), n) != 0)
        return NULL;
    if (zero)
        memset(p, 0, n);
    s->fb = p;
    s->fb_len = n;
    s->fb_dropped = false;
    return p;
}

static void s_give(h2_mem_session *s, void *ptr) {
    if (ptr && ptr == s->fb) {
        free(ptr);
        s->fb = NULL;
        return;
    }
    give(s->m, ptr);
}

static void *s_malloc(size_t n, void *ud) {
    return s_take(ud, n, false);
}

static void s_free(void *ptr, void *ud) {
    s_give(ud, ptr);
}

static void *s_calloc(size_t nmemb, size_t size, void *ud) {
    if (size && nmemb > SIZE_MAX / size)
        return NULL;
    return s_take(ud, nmemb * size, true);
}

static void *s_realloc(void *ptr, size_t n, void *ud) {
    h2_mem_session *s = ud;
    if (!ptr) /* the library makes its frame buffer so (nghttp2_buf_reserve) */
        return s_take(s, n, false);
    if (ptr != s->fb)
        return mem_realloc(ptr, n, s->m);
    if (n == 0) {
        s_give(s, ptr);
        return NULL;
    }
    if (n <= s->fb_len)
        return ptr;
    void *q = take(s->m, n, false);
    if (!q)
        return NULL;
    memcpy(q, ptr, s->fb_len);
    s_give(s, ptr);
    return q;
}

void h2_mem_session_init(h2_mem_session *s, h2_mem *m) {
    memset(s, 0, sizeof(*s));
    s->m = m;
    s->mem = (nghttp2_mem){s, s_malloc, s_free, s_calloc, s_realloc};
}

void h2_mem_session_idle(h2_mem_session *s) {
    if (!s->fb || s->fb_dropped)
        return;
    size_t whole = s->fb_len / page_size() * page_size();
    if (whole && madvise(s->fb, whole, MADV_DONTNEED) == 0)
        s->fb_dropped = true;
}

void h2_mem_init(h2_mem *m) {
    memset(m, 0, sizeof(*m));
    m->mem = (nghttp2_mem){m, mem_malloc, mem_free, mem_calloc, mem_realloc};
}

/* Frees the free blocks of each class beyond what the last interval's peak
 * needed on top of those in use, as sws_lend_trim. */
void h2_mem_trim(h2_mem *m) {
    for (unsigned k = 0; k < H2_MEM_CLASSES; k++) {
        uint32_t keep = m->peak[k] > m->used[k] ? m->peak[k] - m->used[k] : 0;
        while (m->nfree[k] > keep) {
            h2_mem_free *f = m->free[k];
            m->free[k] = f->next;
            m->nfree[k]--;
            free((unsigned char *)f - HDR);
        }
        m->peak[k] = m->used[k];
    }
}

void h2_mem_fini(h2_mem *m) {
    for (unsigned k = 0; k < H2_MEM_CLASSES; k++) {
        m->peak[k] = m->used[k] = 0;
    }
    h2_mem_trim(m);
}
