/* The encoders of compression on the fly (compress.c): gzip (zlib) and br
 * (libbrotli, when built with it) behind one streaming step, and a loop's
 * pool of them, so that a steady load allocates nothing. One loop thread
 * owns a pool and everything taken from it. */
#ifndef SWS_COMPRESS_ENC_H
#define SWS_COMPRESS_ENC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* zlib's window and hash sizes: 32 KiB window (windowBits 15, the ratio of
 * the default) and memLevel 7, whose output on text is within 0.2 % of the
 * default's 8 for 64 KiB less: deflate's state is about 192 KiB. */
#define SWS_GZ_WINDOW_BITS 15
#define SWS_GZ_MEM_LEVEL 7
/* brotli's window (lgwin 18: 256 KiB). Its state is far larger than zlib's:
 * about 4 MiB at quality 4 to 6 for a long answer (less for a short one, whose
 * length sizes its tables): doc/compression.md has the measure. */
#define SWS_BR_LGWIN 18

/* What a step is asked to do besides taking input. */
enum { SWS_ENC_RUN = 0, SWS_ENC_FLUSH, SWS_ENC_FINISH };

typedef struct sws_enc sws_enc;
typedef struct sws_enc_pool sws_enc_pool;

/* A loop's pool, which never has more than max_gzip gzip and max_br br
 * encoders in use. NULL when out of memory. */
sws_enc_pool *sws_enc_pool_new(uint32_t max_gzip, uint32_t max_br);
/* Frees the pool and every idle encoder (none may be in use). */
void sws_enc_pool_free(sws_enc_pool *p);

/* An encoder of coding (SWS_AE_GZIP or SWS_AE_BR) at level, ready for a new
 * stream; size_hint: the input's length when known (0: unknown). NULL when
 * the pool is at its bound or memory is short: the answer goes plain. */
sws_enc *sws_enc_take(sws_enc_pool *p, unsigned coding, int level, uint64_t size_hint);
/* Back to the pool, its stream finished or not. */
void sws_enc_give(sws_enc_pool *p, sws_enc *e);

/* Compresses *in_len bytes of in into out (*out_len room), with op. On
 * return *in_len is what was taken and *out_len what was written. 1: the
 * stream is finished (after SWS_ENC_FINISH); 0: more (output waits inside
 * when out was filled); negative: the encoder failed. A FLUSH or FINISH is
 * repeated (same op, no new input for a FLUSH) until it returns with room
 * left in out (FLUSH) or 1 (FINISH). */
int sws_enc_step(sws_enc *e, const char *in, size_t *in_len, char *out, size_t *out_len, int op);
/* Whether output waits inside the encoder (it filled out last time). */
bool sws_enc_pending(const sws_enc *e);

/* The codings this build offers (SWS_AE_* bits). */
unsigned sws_enc_offered(void);

#endif
