/* What an idle libnghttp2 server session holds (issue 30 point 7): a
 * measurement against the library alone, not part of the server, not built by
 * CMake. bench/README.md ("Idle HTTP/2 connections") has its figures.
 *
 * Each session is set up as src/scalws/http2/session.c sets one up (the same
 * options, callbacks and SETTINGS), then fed what bench/scripts/idle-memory.sh
 * --http2 sends (preface, SETTINGS, one GET on stream 1), answered as the
 * respond scenario answers (:status, server, date, content-type,
 * content-length; the body NO_COPY through a send_data callback), drained, and
 * fed the client's SETTINGS ack: idle. The allocator is the session's own
 * nghttp2_mem (nghttp2_session_server_new3), which counts every block.
 *
 *   cc -O2 -o h2-session-alloc bench/h2-session-alloc.c -lnghttp2
 *
 *   h2-session-alloc blocks [--canary] [--deflate-table N] [--client min|browser]
 *       every block the idle session holds, with its size and the call that
 *       allocated it. Each block has its own mmap (and a guard page, so that
 *       the kernel does not merge it with its neighbours): /proc/self/smaps
 *       says which of its pages were ever written. --canary: malloc's blocks
 *       are filled with 0xa5 first, and the bytes that differ at idle are
 *       counted (calloc's: the non-zero ones), with the last one's offset.
 *       --deflate-table: nghttp2_option_set_max_deflate_dynamic_table_size
 *       (scalwsd: 4096). --client browser: the GET's header block comes from
 *       libnghttp2's own deflater with a browser's fields (the server's
 *       decoder indexes them) instead of the script's block (nothing indexed).
 *   h2-session-alloc rss N [--churn] [...]
 *       N idle sessions on glibc's heap: VmRSS growth / N and the live bytes
 *       per session. --churn: first N busy sessions (a 12 KB answer head
 *       written through each frame buffer), each followed by a 64-byte
 *       allocation that outlives it, all ended: a long-running server's heap;
 *       the line adds VmRSS over the start of it all, per idle session.
 *   h2-session-alloc pool N [--idle-discard] [--churn] [...]
 *       the same on a per-loop style allocator: size classes up to 4 KiB from
 *       page-aligned 64 KiB slabs with free lists, larger blocks (the frame
 *       buffer) on pages of their own, unmapped when freed. --idle-discard:
 *       once idle, the frame buffer's pages and the (empty) stream map's page
 *       go back with madvise(MADV_DONTNEED).
 * Every session of rss and pool is then asked a second GET (stream 3) and
 * must answer it. Block sizes are libnghttp2 1.52.0's on x86-64 (Debian 12).
 */
#define _GNU_SOURCE
#include <nghttp2/nghttp2.h>

#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- the allocator ---------------------------------------------------------- */

enum { MODE_HEAP, MODE_MMAP, MODE_POOL };
static int mode = MODE_HEAP;
static int canary; /* blocks: malloc's are filled with 0xa5, to count the bytes written */
static int last_zero;
static const char *phase = "?";

typedef struct blk {
    void *p;
    size_t size, maplen;
    const char *phase;
    unsigned seq;
    int zero;
} blk;
#define MAXB (1u << 20)
static blk *blks;
static unsigned nblk, seq;
static size_t live, peak;
static size_t nmalloc, ncalloc, nrealloc, nfree;

static blk *find(void *p) {
    for (unsigned i = nblk; i-- > 0;)
        if (blks[i].p == p)
            return &blks[i];
    return NULL;
}

/* Pool mode: size classes 16..4096 (powers of 2 and midpoints) carved from
 * 64 KiB page-aligned slabs, a free list each; above 4096 a block of its own
 * pages from mmap (a per-loop cache of them in a real server). */
#define NCLS 17
static const size_t cls_size[NCLS] = {16,  32,  48,   64,   96,   128,  192,  256, 384,
                                      512, 768, 1024, 1536, 2048, 3072, 4096, 0};
static void *cls_free[NCLS];
static char *slab_cur[NCLS];
static size_t slab_left[NCLS];
static int cls_of(size_t n) {
    for (int i = 0; i < NCLS - 1; i++)
        if (n <= cls_size[i])
            return i;
    return NCLS - 1;
}
static void *pool_alloc(size_t n, size_t *maplen) {
    int c = cls_of(n);
    if (c == NCLS - 1) {
        *maplen = (n + 4095) & ~(size_t)4095;
        void *p = mmap(NULL, *maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        return p == MAP_FAILED ? NULL : p;
    }
    *maplen = 0;
    if (cls_free[c]) {
        void *p = cls_free[c];
        cls_free[c] = *(void **)p;
        return p;
    }
    if (slab_left[c] < cls_size[c]) {
        slab_cur[c] = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        slab_left[c] = 65536;
    }
    void *p = slab_cur[c];
    slab_cur[c] += cls_size[c];
    slab_left[c] -= cls_size[c];
    return p;
}

static void *raw_alloc(size_t n, int zero, size_t *maplen) {
    void *p;
    last_zero = zero;
    *maplen = 0;
    if (mode == MODE_MMAP) {
        /* A guard page after it: the kernel does not merge the mapping with
         * its neighbours, so smaps has its Rss alone. */
        *maplen = (n + 4095) & ~(size_t)4095;
        p = mmap(NULL, *maplen + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return NULL;
        mprotect((char *)p + *maplen, 4096, PROT_NONE);
        if (canary && !zero)
            memset(p, 0xa5, n);
        return p; /* zero already, and untouched */
    }
    if (mode == MODE_POOL) {
        p = pool_alloc(n, maplen);
        if (p && zero && !*maplen)
            memset(p, 0, n);
        return p;
    }
    return zero ? calloc(1, n) : malloc(n);
}

static void raw_free(blk *b) {
    if (mode == MODE_MMAP) {
        munmap(b->p, b->maplen + 4096);
    } else if (mode == MODE_POOL && b->maplen) {
        munmap(b->p, b->maplen);
    } else if (mode == MODE_POOL) {
        int c = cls_of(b->size);
        *(void **)b->p = cls_free[c];
        cls_free[c] = b->p;
    } else {
        free(b->p);
    }
}

static void *track(void *p, size_t n, size_t maplen) {
    if (!p)
        return NULL;
    if (nblk == MAXB) {
        fprintf(stderr, "too many blocks\n");
        exit(1);
    }
    blks[nblk++] = (blk){p, n, maplen, phase, seq++, last_zero};
    live += n;
    if (live > peak)
        peak = live;
    return p;
}

static void untrack(void *p) {
    blk *b = find(p);
    if (!b) {
        fprintf(stderr, "free of an unknown block %p\n", p);
        exit(1);
    }
    live -= b->size;
    raw_free(b);
    *b = blks[--nblk];
}

static void *m_malloc(size_t n, void *ud) {
    (void)ud;
    nmalloc++;
    size_t ml;
    void *p = raw_alloc(n ? n : 1, 0, &ml);
    return track(p, n, ml);
}
static void *m_calloc(size_t k, size_t n, void *ud) {
    (void)ud;
    ncalloc++;
    size_t ml;
    void *p = raw_alloc((k * n) != 0 ? k * n : 1, 1, &ml);
    return track(p, k * n, ml);
}
static void m_free(void *p, void *ud) {
    (void)ud;
    if (!p)
        return;
    nfree++;
    untrack(p);
}
static void *m_realloc(void *p, size_t n, void *ud) {
    (void)ud;
    nrealloc++;
    if (!p)
        return m_malloc(n, ud);
    blk *b = find(p);
    size_t old = b->size;
    size_t ml;
    void *q = raw_alloc(n, 0, &ml);
    if (!q)
        return NULL;
    memcpy(q, p, old < n ? old : n);
    untrack(p);
    return track(q, n, ml);
}
static nghttp2_mem counting = {NULL, m_malloc, m_free, m_calloc, m_realloc};

/* ---- a session as scalwsd's ------------------------------------------------- */

static uint8_t out[1 << 16];
static size_t outlen;
static const char body[] = "hello from scalwsd\n";

static ssize_t read_body(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
                         nghttp2_data_source *src, void *ud) {
    (void)s, (void)id, (void)buf, (void)len, (void)src, (void)ud;
    *flags = NGHTTP2_DATA_FLAG_NO_COPY | NGHTTP2_DATA_FLAG_EOF;
    return sizeof(body) - 1;
}
static int send_data(nghttp2_session *s, nghttp2_frame *f, const uint8_t *hd, size_t len,
                     nghttp2_data_source *src, void *ud) {
    (void)s, (void)f, (void)src, (void)ud;
    memcpy(out + outlen, hd, 9);
    memcpy(out + outlen + 9, body, len);
    outlen += 9 + len;
    return 0;
}
static int stream_token;
static int big_answer; /* churn: a 12 KB header block written through the frame buffer */
static char pad[12000];
static int on_begin_headers(nghttp2_session *s, const nghttp2_frame *f, void *ud) {
    (void)ud;
    nghttp2_session_set_stream_user_data(s, f->hd.stream_id, &stream_token);
    return 0;
}
static int on_header(nghttp2_session *s, const nghttp2_frame *f, nghttp2_rcbuf *name,
                     nghttp2_rcbuf *value, uint8_t flags, void *ud) {
    (void)s, (void)f, (void)name, (void)value, (void)flags, (void)ud;
    return 0;
}
#define NV(n, v)                                                                                   \
    { (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, sizeof(v) - 1, NGHTTP2_NV_FLAG_NONE }
static int on_frame_recv(nghttp2_session *s, const nghttp2_frame *f, void *ud) {
    (void)ud;
    if (f->hd.type == NGHTTP2_HEADERS && (f->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
        const char *saved = phase;
        phase = "submit_response";
        nghttp2_nv nva[] = {NV(":status", "200"), NV("server", "scalwsd"),
                            NV("date", "Sat, 05 Dec 2026 02:21:57 GMT"),
                            NV("content-type", "text/plain"), NV("content-length", "19")};
        nghttp2_nv big[] = {
            NV(":status", "200"),
            {(uint8_t *)"x-pad", (uint8_t *)pad, 5, sizeof(pad), NGHTTP2_NV_FLAG_NONE}};
        nghttp2_data_provider dp = {.read_callback = read_body};
        if (big_answer)
            nghttp2_submit_response(s, f->hd.stream_id, big, 2, &dp);
        else
            nghttp2_submit_response(s, f->hd.stream_id, nva, 5, &dp);
        phase = saved;
    }
    return 0;
}
static int on_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *d, size_t n,
                   void *ud) {
    (void)s, (void)flags, (void)id, (void)d, (void)n, (void)ud;
    return 0;
}
static int on_stream_close(nghttp2_session *s, int32_t id, uint32_t code, void *ud) {
    (void)code, (void)ud;
    nghttp2_session_set_stream_user_data(s, id, NULL);
    return 0;
}
static int on_frame_send(nghttp2_session *s, const nghttp2_frame *f, void *ud) {
    (void)s, (void)f, (void)ud;
    return 0;
}
static int on_invalid(nghttp2_session *s, const nghttp2_frame *f, int e, void *ud) {
    (void)s, (void)f, (void)e, (void)ud;
    return 0;
}

static nghttp2_session_callbacks *cbs;
static size_t deflate_table = 4096;
static int browser;
static uint8_t req[512];
static size_t reqlen;

static void frame(uint8_t *p, size_t *n, size_t len, uint8_t type, uint8_t flags, uint32_t id) {
    uint8_t *h = p + *n;
    h[0] = len >> 16, h[1] = len >> 8, h[2] = len, h[3] = type, h[4] = flags;
    h[5] = id >> 24, h[6] = id >> 16, h[7] = id >> 8, h[8] = id;
    *n += 9;
}

/* The client's bytes: preface, SETTINGS (ENABLE_PUSH 0), HEADERS on stream 1
 * (min: idle-memory.sh's block, nothing indexed; browser: a browser-like
 * block from libnghttp2's own deflater, :authority, user-agent, accept... indexed). */
static void make_request(void) {
    memcpy(req, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 24);
    reqlen = 24;
    frame(req, &reqlen, 6, NGHTTP2_SETTINGS, 0, 0);
    memcpy(req + reqlen, "\0\2\0\0\0\0", 6);
    reqlen += 6;
    if (!browser) {
        static const uint8_t blk[] = {0x82, 0x86, 0x84, 0x01, 0x01, 'x'};
        frame(req, &reqlen, sizeof(blk), NGHTTP2_HEADERS,
              NGHTTP2_FLAG_END_STREAM | NGHTTP2_FLAG_END_HEADERS, 1);
        memcpy(req + reqlen, blk, sizeof(blk));
        reqlen += sizeof(blk);
        return;
    }
    nghttp2_hd_deflater *d;
    nghttp2_hd_deflate_new(&d, 4096);
    nghttp2_nv nva[] = {
        NV(":method", "GET"),
        NV(":authority", "www.example.com"),
        NV(":scheme", "https"),
        NV(":path", "/"),
        NV("user-agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like "
                         "Gecko) Chrome/126.0.0.0 Safari/537.36"),
        NV("accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
        NV("accept-encoding", "gzip, deflate, br, zstd"),
        NV("accept-language", "en-US,en;q=0.9"),
    };
    size_t at = reqlen;
    reqlen += 9;
    ssize_t n = nghttp2_hd_deflate_hd(d, req + reqlen, sizeof(req) - reqlen, nva, 8);
    nghttp2_hd_deflate_del(d);
    reqlen = at;
    frame(req, &reqlen, (size_t)n, NGHTTP2_HEADERS,
          NGHTTP2_FLAG_END_STREAM | NGHTTP2_FLAG_END_HEADERS, 1);
    reqlen += (size_t)n;
}

static void drain(nghttp2_session *s) {
    const uint8_t *p;
    ssize_t n;
    while ((n = nghttp2_session_mem_send(s, &p)) > 0) {
        if (outlen + (size_t)n < sizeof(out)) {
            memcpy(out + outlen, p, (size_t)n);
            outlen += (size_t)n;
        }
    }
    if (n < 0) {
        fprintf(stderr, "mem_send: %s\n", nghttp2_strerror((int)n));
        exit(1);
    }
}

static int idle_discard;
static unsigned first_blk;
static nghttp2_session *idle_session(nghttp2_mem *mem) {
    first_blk = nblk;
    nghttp2_option *o;
    nghttp2_option_new(&o);
    nghttp2_option_set_no_auto_window_update(o, 1);
    nghttp2_option_set_no_closed_streams(o, 1);
    nghttp2_option_set_max_outbound_ack(o, 1000);
    nghttp2_option_set_stream_reset_rate_limit(o, 2000, 66);
    nghttp2_option_set_max_continuations(o, 8);
    nghttp2_option_set_max_deflate_dynamic_table_size(o, deflate_table);
    nghttp2_session *s;
    phase = "session_server_new";
    if (nghttp2_session_server_new3(&s, cbs, NULL, o, mem) != 0)
        exit(1);
    nghttp2_option_del(o);
    phase = "submit_settings";
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 100},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 65536},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, 16384},
        {NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1},
    };
    nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, iv, 4);
    phase = "mem_recv request";
    if (nghttp2_session_mem_recv(s, req, reqlen) != (ssize_t)reqlen)
        exit(1);
    phase = "mem_send answer";
    outlen = 0;
    drain(s);
    phase = "mem_recv settings ack";
    uint8_t ack[9];
    size_t n = 0;
    frame(ack, &n, 0, NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0);
    if (nghttp2_session_mem_recv(s, ack, 9) != 9)
        exit(1);
    phase = "mem_send idle";
    drain(s);
    if (nghttp2_session_want_write(s) || nghttp2_session_find_stream(s, 1)) {
        fprintf(stderr, "not idle\n");
        exit(1);
    }
    phase = "idle";
    if (idle_discard) {
        /* What an idle session holds dead: the frame buffer (everything in
         * it was sent) and the stream map's table (no stream: every bucket
         * empty, and an empty bucket is all zeroes). Their pages go back;
         * the next use faults in zero pages. */
        for (unsigned i = first_blk; i < nblk; i++) {
            blk *b = &blks[i];
            if (b->size == 16394 || (b->size == 4096 && b->zero))
                madvise(b->p, (b->size + 4095) & ~(size_t)4095, MADV_DONTNEED);
        }
    }
    return s;
}

static long vmrss_kib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    while (fgets(line, sizeof(line), f))
        if (!strncmp(line, "VmRSS:", 6))
            v = atol(line + 6);
    fclose(f);
    return v;
}

/* Rss (KiB) of the mapping that starts at p, from /proc/self/smaps. */
static long map_rss(void *p) {
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    int in = 0;
    long v = -1;
    unsigned long want = (unsigned long)p;
    while (fgets(line, sizeof(line), f)) {
        unsigned long a, b;
        if (sscanf(line, "%lx-%lx ", &a, &b) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            in = a <= want && want < b;
            continue;
        }
        if (in && !strncmp(line, "Rss:", 4)) {
            v = atol(line + 4);
            break;
        }
    }
    fclose(f);
    return v;
}

/* What a block is, from libnghttp2 1.52's sources (x86-64 sizes). */
static const char *what(const blk *b, int *ring) {
    if (b->size == 2928 && b->zero)
        return "nghttp2_session";
    if (b->size == 4096 && b->zero)
        return "stream map table, 256 buckets";
    if (b->size == 1024)
        return (*ring)++ ? "HPACK inflater ring, 128 slots" : "HPACK deflater ring, 128 slots";
    if (b->size == 48 && !strcmp(b->phase, "session_server_new"))
        return "frame buffer chain";
    if (b->size == 16394)
        return "frame buffer (FRAMEBUF_CHUNKLEN)";
    if (b->size == 80)
        return "HPACK table entry";
    if (b->size == 32 && !strcmp(b->phase, "mem_send answer"))
        return "RFC 9218 scheduler queue, 4 slots";
    if (!strcmp(b->phase, "mem_send answer"))
        return "HPACK: an answer field's value";
    if (!strcmp(b->phase, "mem_recv request"))
        return "HPACK: a request field";
    return "?";
}

static int cmp_seq(const void *a, const void *b) {
    const blk *x = a, *y = b;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

static void setup(void) {
    blks = malloc(MAXB * sizeof(*blks));
    memset(blks, 0, MAXB * sizeof(*blks)); /* written before any measure */
    nghttp2_session_callbacks_new(&cbs);
    nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback2(cbs, on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
    nghttp2_session_callbacks_set_on_frame_send_callback(cbs, on_frame_send);
    nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(cbs, on_invalid);
    nghttp2_session_callbacks_set_send_data_callback(cbs, send_data);
    make_request();
}

int main(int argc, char **argv) {
    if (argc < 2)
        return 2;
    const char *cmd = argv[1];
    long n = 1;
    int dirty = 0, ai = 2;
    if (strcmp(cmd, "blocks") && argc > 2)
        n = atol(argv[ai++]);
    for (; ai < argc; ai++) {
        if (!strcmp(argv[ai], "--deflate-table") && ai + 1 < argc)
            deflate_table = strtoul(argv[++ai], NULL, 10);
        else if (!strcmp(argv[ai], "--client") && ai + 1 < argc)
            browser = !strcmp(argv[++ai], "browser");
        else if (!strcmp(argv[ai], "--idle-discard"))
            idle_discard = 1;
        else if (!strcmp(argv[ai], "--churn"))
            dirty = 2;
        else if (!strcmp(argv[ai], "--canary"))
            canary = 1;
        else
            return 2;
    }
    setup();
    if (!strcmp(cmd, "blocks")) {
        if (mode != MODE_MMAP)
            mode = MODE_MMAP;
        nghttp2_session *s = idle_session(&counting);
        (void)s;
        printf("request %zu B; peak live %zu B; calls: malloc %zu calloc %zu realloc %zu free "
               "%zu\n",
               reqlen, peak, nmalloc, ncalloc, nrealloc, nfree);
        qsort(blks, nblk, sizeof(*blks), cmp_seq);
        size_t tot = 0, touched = 0;
        /* --canary fills malloc's blocks, which writes every page: then
         * the bytes written are the measure (the last one's offset too). */
        printf("%-34s %-20s %-6s %8s %s\n", "block", "allocated in", "how", "bytes",
               canary ? "bytes written (calloc: non-zero), last at" : "pages written");
        int ring = 0;
        size_t wr = 0;
        for (unsigned i = 0; i < nblk; i++) {
            long r = map_rss(blks[i].p);
            size_t w = 0, last = 0;
            const unsigned char *q = blks[i].p;
            for (size_t k = 0; k < blks[i].size; k++)
                if (q[k] != (blks[i].zero ? 0 : 0xa5))
                    w++, last = k;
            printf("%-34s %-20s %-6s %8zu ", what(&blks[i], &ring), blks[i].phase,
                   blks[i].zero ? "calloc" : "malloc", blks[i].size);
            if (canary)
                printf("%6zu  %zu\n", w, last);
            else
                printf("%3ld of %zu\n", r / 4, blks[i].maplen / 4096);
            tot += blks[i].size;
            touched += (size_t)r * 1024;
            wr += w;
        }
        printf("live: %u blocks, %zu B; ", nblk, tot);
        if (canary)
            printf("bytes written %zu B", wr);
        else
            printf("pages written %zu B", touched);
        printf("\n");
        return 0;
    }
    if (!strcmp(cmd, "pool"))
        mode = MODE_POOL;
    else if (strcmp(cmd, "rss"))
        return 2;
    nghttp2_session **ss = malloc((size_t)n * sizeof(*ss));
    /* one to warm: the library's static state, stdio */
    nghttp2_session_del(idle_session(&counting));
    long rbase = vmrss_kib();
    if (dirty == 2) {
        /* A server's past: N busy connections (12 KB answer heads written
         * through their frame buffers), each followed by a small allocation
         * that outlives it (as a log line, a route's state), then gone. */
        memset(pad, 'a', sizeof(pad));
        big_answer = 1;
        void **keep = malloc((size_t)n * sizeof(*keep));
        for (long i = 0; i < n; i++) {
            ss[i] = idle_session(&counting);
            keep[i] = m_malloc(64, NULL);
            memset(keep[i], 1, 64);
        }
        for (long i = 0; i < n; i++)
            nghttp2_session_del(ss[i]);
        big_answer = 0;
    }
    long r0 = vmrss_kib();
    size_t live0 = live;
    for (long i = 0; i < n; i++)
        ss[i] = idle_session(&counting);
    long r1 = vmrss_kib();
    /* The sessions still work after all this: a second GET on each (stream 3)
     * is answered. */
    for (long i = 0; i < n; i++) {
        uint8_t r3[64];
        size_t k = 0;
        frame(r3, &k, 6, NGHTTP2_HEADERS, NGHTTP2_FLAG_END_STREAM | NGHTTP2_FLAG_END_HEADERS, 3);
        memcpy(r3 + k, "\x82\x86\x84\x01\x01x", 6);
        k += 6;
        if (nghttp2_session_mem_recv(ss[i], r3, k) != (ssize_t)k)
            exit(1);
        outlen = 0;
        drain(ss[i]);
        if (outlen < 9 + 9 + 19 || nghttp2_session_find_stream(ss[i], 3)) {
            fprintf(stderr, "session %ld: no answer on stream 3\n", i);
            exit(1);
        }
    }
    printf("%s%s%s: %ld idle sessions: VmRSS %+ld B/session, live %zu B/session (%u blocks "
           "each)",
           cmd, dirty == 2 ? " --churn" : "", idle_discard ? " --idle-discard" : "", n,
           (r1 - r0) * 1024 / n, (live - live0) / (size_t)n,
           (unsigned)((nblk - (dirty == 2 ? n : 0)) / (unsigned long)n));
    if (dirty == 2)
        printf("; after the churn, VmRSS over the start %ld B/session", (r1 - rbase) * 1024 / n);
    printf("\n");
    return 0;
}
