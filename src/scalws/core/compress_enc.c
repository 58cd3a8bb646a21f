/* gzip and br encoders behind one step (compress_enc.h), pooled per loop:
 * zlib's state is reset and reused (deflateReset, deflateParams); brotli's
 * cannot be reset, so its memory comes from a per-loop cache of blocks by
 * size, which a new encoder of the same settings takes back whole. */
#include "compress_enc.h"

#include "sws_accept.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#ifdef SWS_HAVE_BROTLI
#include <brotli/encode.h>
#endif

struct sws_enc {
    unsigned coding;
    bool pending; /* the last step filled its output */
    int level;
    z_stream z; /* gzip; initialised once, reset per stream */
    bool z_ready;
#ifdef SWS_HAVE_BROTLI
    BrotliEncoderState *br;
#endif
    sws_enc_pool *pool;
    sws_enc *next; /* idle list */
};

/* A cached block of brotli's: its size in front of what brotli sees. */
typedef union br_block {
    struct {
        size_t size;
        union br_block *next;
    } h;
    max_align_t align;
} br_block;

/* Idle blocks kept at most: an encoder at quality 4 makes about ten. */
#define BR_CACHE_MAX 256

struct sws_enc_pool {
    uint32_t max_gz, used_gz, max_br, used_br;
    sws_enc *idle_gz;
    sws_enc *idle_br; /* their states freed; the structs kept */
    br_block *blocks;
    uint32_t nblocks;
};

sws_enc_pool *sws_enc_pool_new(uint32_t max_gzip, uint32_t max_br) {
    sws_enc_pool *p = calloc(1, sizeof(*p));
    if (p) {
        p->max_gz = max_gzip;
        p->max_br = max_br;
    }
    return p;
}

static void enc_free(sws_enc *e) {
    if (e->z_ready)
        deflateEnd(&e->z);
    free(e);
}

void sws_enc_pool_free(sws_enc_pool *p) {
    if (!p)
        return;
    for (sws_enc *e = p->idle_gz, *n; e; e = n) {
        n = e->next;
        enc_free(e);
    }
    for (sws_enc *e = p->idle_br, *n; e; e = n) {
        n = e->next;
        enc_free(e);
    }
    for (br_block *b = p->blocks, *n; b; b = n) {
        n = b->h.next;
        free(b);
    }
    free(p);
}

unsigned sws_enc_offered(void) {
#ifdef SWS_HAVE_BROTLI
    return SWS_AE_GZIP | SWS_AE_BR;
#else
    return SWS_AE_GZIP;
#endif
}

#ifdef SWS_HAVE_BROTLI
static void *br_alloc(void *opaque, size_t size) {
    sws_enc_pool *p = opaque;
    for (br_block **at = &p->blocks; *at; at = &(*at)->h.next)
        if ((*at)->h.size == size) {
            br_block *b = *at;
            *at = b->h.next;
            p->nblocks--;
            return b + 1;
        }
    br_block *b = malloc(sizeof(*b) + size);
    if (!b)
        return NULL;
    b->h.size = size;
    return b + 1;
}

static void br_free(void *opaque, void *ptr) {
    sws_enc_pool *p = opaque;
    if (!ptr)
        return;
    br_block *b = (br_block *)ptr - 1;
    if (p->nblocks >= BR_CACHE_MAX) {
        free(b);
        return;
    }
    b->h.next = p->blocks;
    p->blocks = b;
    p->nblocks++;
}

static bool br_start(sws_enc_pool *p, sws_enc *e, int level, uint64_t hint) {
    e->br = BrotliEncoderCreateInstance(br_alloc, br_free, p);
    if (!e->br)
        return false;
    BrotliEncoderSetParameter(e->br, BROTLI_PARAM_QUALITY, (uint32_t)level);
    BrotliEncoderSetParameter(e->br, BROTLI_PARAM_LGWIN, SWS_BR_LGWIN);
    if (hint && hint < (1u << 30))
        BrotliEncoderSetParameter(e->br, BROTLI_PARAM_SIZE_HINT, (uint32_t)hint);
    return true;
}
#endif

sws_enc *sws_enc_take(sws_enc_pool *p, unsigned coding, int level, uint64_t size_hint) {
    uint32_t *used = coding == SWS_AE_BR ? &p->used_br : &p->used_gz;
    if (*used >= (coding == SWS_AE_BR ? p->max_br : p->max_gz))
        return NULL;
    sws_enc **idle = coding == SWS_AE_BR ? &p->idle_br : &p->idle_gz;
    sws_enc *e = *idle;
    if (e) {
        *idle = e->next;
    } else {
        e = calloc(1, sizeof(*e));
        if (!e)
            return NULL;
        e->coding = coding;
        e->pool = p;
    }
    e->pending = false;
    e->next = NULL;
    bool ok = false;
    if (coding == SWS_AE_GZIP) {
        if (!e->z_ready) {
            ok = deflateInit2(&e->z, level, Z_DEFLATED, SWS_GZ_WINDOW_BITS + 16, SWS_GZ_MEM_LEVEL,
                              Z_DEFAULT_STRATEGY) == Z_OK;
            e->z_ready = ok;
        } else {
            /* Reset first: deflateParams on a fresh stream only sets the level. */
            ok = deflateReset(&e->z) == Z_OK &&
                 (e->level == level || deflateParams(&e->z, level, Z_DEFAULT_STRATEGY) == Z_OK);
        }
    }
#ifdef SWS_HAVE_BROTLI
    else if (coding == SWS_AE_BR) {
        ok = br_start(p, e, level, size_hint);
    }
#else
    (void)size_hint;
#endif
    if (!ok) {
        enc_free(e);
        return NULL;
    }
    e->level = level;
    (*used)++;
    return e;
}

void sws_enc_give(sws_enc_pool *p, sws_enc *e) {
#ifdef SWS_HAVE_BROTLI
    if (e->coding == SWS_AE_BR) {
        p->used_br--;
        BrotliEncoderDestroyInstance(e->br); /* its blocks go to the cache */
        e->br = NULL;
        e->next = p->idle_br;
        p->idle_br = e;
        return;
    }
#endif
    p->used_gz--;
    e->next = p->idle_gz;
    p->idle_gz = e;
}

bool sws_enc_pending(const sws_enc *e) {
    return e->pending;
}

int sws_enc_step(sws_enc *e, const char *in, size_t *in_len, char *out, size_t *out_len, int op) {
#ifdef SWS_HAVE_BROTLI
    if (e->coding == SWS_AE_BR) {
        size_t ai = *in_len, ao = *out_len;
        const uint8_t *ni = (const uint8_t *)in;
        uint8_t *no = (uint8_t *)out;
        BrotliEncoderOperation bop = op == SWS_ENC_FINISH  ? BROTLI_OPERATION_FINISH
                                     : op == SWS_ENC_FLUSH ? BROTLI_OPERATION_FLUSH
                                                           : BROTLI_OPERATION_PROCESS;
        if (!BrotliEncoderCompressStream(e->br, bop, &ai, &ni, &ao, &no, NULL))
            return -1;
        *in_len -= ai;
        *out_len -= ao;
        e->pending = BrotliEncoderHasMoreOutput(e->br) != 0;
        return op == SWS_ENC_FINISH && BrotliEncoderIsFinished(e->br) ? 1 : 0;
    }
#endif
    z_stream *z = &e->z;
    z->next_in = (Bytef *)(uintptr_t)in;
    z->avail_in = (uInt)*in_len;
    z->next_out = (Bytef *)out;
    z->avail_out = (uInt)*out_len;
    int rc = deflate(z, op == SWS_ENC_FINISH  ? Z_FINISH
                        : op == SWS_ENC_FLUSH ? Z_SYNC_FLUSH
                                              : Z_NO_FLUSH);
    *in_len -= z->avail_in;
    *out_len -= z->avail_out;
    e->pending = z->avail_out == 0;
    if (rc == Z_STREAM_END)
        return 1;
    return rc == Z_OK || rc == Z_BUF_ERROR ? 0 : -1;
}
