/* A loop's connection table, made with the worker and freed after its loop:
 * the slots and their free list, the output-buffer pool (shared with TLS's
 * wire and stash buffers), the held-input pool and the TLS decrypt scratch;
 * the protocols' per-slot tables are theirs to make (table_init). */
#include "conn.h"

#include <errno.h>
#include <stdlib.h>

/* The loop's connection table: one slot per connection up to
 * max_connections (+1 spare), allocated on first use; the held-input pool,
 * one node per loop buffer. Output buffers come and go (out_take). */
int sws_conn_table_init(sws_worker *w) {
    w->nslots = w->cfg->max_connections + 1;
    w->nexchanges = w->nslots; /* HTTP/2's table_init adds its streams */
    /* calloc: pages of slots never used are never touched (or resident). */
    w->slots = calloc(w->nslots, sizeof(*w->slots));
    w->free_idx = malloc(w->nslots * sizeof(*w->free_idx));
    if (!w->slots || !w->free_idx)
        return -ENOMEM;
    for (uint32_t i = 0; i < w->nslots; i++)
        w->free_idx[i] = w->nslots - 1 - i;
    w->nfree = w->nslots;
    /* The block size is out_cap, known once the scenario is (worker.c).
     * A tls connection may hold three buffers: out, wire and stash; any
     * connection one more while its request head waits for a route. */
    if (sws_lend_init(&w->outbuf, 0, w->nslots * (w->cfg->listen_tls ? 4u : 2u)) < 0)
        return -ENOMEM;
    int rc = w->conn_proto->table_init(w);
    if (rc == 0 && w->h2_proto)
        rc = w->h2_proto->table_init(w);
    if (rc < 0)
        return rc;
    if (w->cfg->listen_tls && !(w->tls_plain = malloc(SWS_TLS_PLAIN)))
        return -ENOMEM;
    w->hpool = malloc(SWS_RECV_BUFFERS * sizeof(*w->hpool));
    if (!w->hpool)
        return -ENOMEM;
    for (uint32_t k = 0; k < SWS_RECV_BUFFERS; k++)
        w->hpool[k].next = k + 1 < SWS_RECV_BUFFERS ? k + 1 : SWS_NIL;
    w->hfree = 0;
    return 0;
}

/* After the loop is freed. */
void sws_conn_table_free(sws_worker *w) {
    for (uint32_t k = 0; k < w->nslots && w->slots; k++) {
        sws_conn *c = &w->slots[k];
        if (c->tls) {
            sws_tls_conn_free(&c->tls->eng);
            free(c->tls->wire);
            free(c->tls->stash);
            free(c->tls);
        }
        free(c->out);
    }
    if (w->h2_proto)
        w->h2_proto->table_free(w); /* the sessions the connections hold too */
    if (w->conn_proto)
        w->conn_proto->table_free(w); /* the parsers the connections hold too */
    sws_lend_fini(&w->outbuf);
    free(w->slots);
    free(w->free_idx);
    free(w->hpool);
    free(w->tls_plain);
}
