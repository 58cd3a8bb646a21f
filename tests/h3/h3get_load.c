/* h3get --load: a load generator for scripts/bench-h3-vs-h2, -P request
 * slots reused as their streams close, the paths in turn, no body kept. */
#include "h3get.h"

#include <stdlib.h>

/* --load: a free slot for the next request, on the next path. */
req *load_slot(client *c) {
    req *r = &c->reqs[c->free_slots[--c->nfree]];
    *r = (req){.path = c->paths[c->next % c->npaths]};
    return r;
}

/* --load: a closed stream's slot, counted and given back. */
void load_done(client *c, req *r) {
    if (r->done && !r->failed && r->status >= 200 && r->status < 300) {
        c->load_ok++;
        c->load_bytes += r->bytes;
    } else {
        c->load_failed++;
    }
    c->free_slots[c->nfree++] = (int)(r - c->reqs);
}

void load_init(client *c, char **paths, int npaths) {
    c->nslots = c->parallel < c->nreq ? c->parallel : c->nreq;
    c->paths = paths;
    c->npaths = npaths;
    c->free_slots = calloc((size_t)c->nslots, sizeof(*c->free_slots));
    if (!c->free_slots)
        die("out of memory");
    for (int i = c->nslots; i-- > 0;)
        c->free_slots[c->nfree++] = i;
}
