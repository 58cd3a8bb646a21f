/* Compression on the fly: a filter between a scenario and the protocol, as
 * nginx's gzip filter and h2o's compress filter. A scenario gives its
 * answer's head through sws_compress_head instead of sws_ex_head; when the
 * answer is to be compressed (its route's [compress] keys, the request's
 * Accept-Encoding, the answer's type, length and fields: doc/compression.md)
 * the exchange's proto becomes the filter's, so the scenario goes on writing
 * plain bytes (sws_ex_room/commit, sws_ex_body, sws_ex_end) and the filter
 * writes them compressed into the protocol's room, a bounded slice per
 * round, the body streamed (chunked on HTTP/1.1, DATA frames on HTTP/2).
 * The protocols call the scenario through sws_sc_answer, sws_sc_more and
 * sws_sc_conn_end, which go through the filter where an exchange has one.
 * Everything runs on the exchange's loop thread. */
#ifndef SWS_COMPRESS_H
#define SWS_COMPRESS_H

#include "exchange.h"
#include "scenario.h"

struct sws_worker;

/* Compressing exchanges one loop holds at once (each with an encoder and an
 * input buffer of out_cap bytes); past it an answer goes plain. Of them at
 * most SWS_COMPRESS_BR_PER_LOOP br (about 4 MiB each): past it a client that
 * takes gzip too gets gzip (about 200 KiB). */
#define SWS_COMPRESS_PER_LOOP 64
#define SWS_COMPRESS_BR_PER_LOOP 16
/* Input bytes compressed per round (a `more`, or the answer's first call):
 * what bounds the loop's time on one answer (doc/compression.md). */
#define SWS_COMPRESS_SLICE 32768

/* The answer's head, compressed or not as its route's keys and the request
 * say (sws_ex_head's result). type: the representation's media type when
 * a->content_type is NULL (a 304 says none), else NULL; rep_len: its length
 * when a->length is not it (a 304's), else SWS_BODY_STREAM. */
int sws_compress_head(struct sws_worker *w, const sws_scenario *sc, sws_exchange *x,
                      const sws_answer *a, const char *type, uint64_t rep_len);

/* The filter's side of the three calls below (for an exchange it holds). */
int sws_compress_answered(struct sws_worker *w, sws_exchange *x, int rc);
void sws_compress_more(struct sws_worker *w, sws_scenario *sc, sws_exchange *x);
void sws_compress_drop(struct sws_worker *w, sws_exchange *x);

/* The protocols call a scenario's answer, more and conn_end hooks through
 * these: an answer the scenario ended (DONE) stays pending while its end is
 * still being compressed; `more` first moves what the filter holds; a closed
 * exchange gives its encoder back. */
static inline int sws_sc_answer(struct sws_worker *w, sws_scenario *sc, sws_exchange *x) {
    int rc = sc->ops->answer(w, sc, x);
    return x->proto->filter ? sws_compress_answered(w, x, rc) : rc;
}
static inline void sws_sc_more(struct sws_worker *w, sws_scenario *sc, sws_exchange *x) {
    if (x->proto->filter)
        sws_compress_more(w, sc, x);
    else if (sc->ops->more)
        sc->ops->more(w, sc, x);
}
static inline void sws_sc_conn_end(struct sws_worker *w, sws_scenario *sc, sws_exchange *x) {
    if (x->proto->filter)
        sws_compress_drop(w, x);
    if (sc->ops->conn_end)
        sc->ops->conn_end(w, sc, x);
}

/* The loop's filter state (after its connections are gone). */
void sws_compress_free(struct sws_worker *w);

#endif
