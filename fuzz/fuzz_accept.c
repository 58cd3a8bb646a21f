/* Fuzz target for Accept-Encoding (src/http/accept.c): whatever the bytes,
 * nothing past the value is read, every q read is -1 or within 0..1000, the
 * choice is one of the codings offered (or identity), a coding chosen is one
 * the value accepts, and the static scenario's reading agrees with it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sws_accept.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void in_range(int q) {
    if (q < -1 || q > 1000)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 4096)
        return 0;
    /* A copy of exactly size bytes: AddressSanitizer sees any over-read. */
    char *v = malloc(size ? size : 1);
    if (size)
        memcpy(v, data, size);
    sws_ae q;
    sws_ae_parse(v, size, &q);
    in_range(q.gzip);
    in_range(q.br);
    in_range(q.identity);
    in_range(q.star);
    for (unsigned offered = 0; offered <= (SWS_AE_GZIP | SWS_AE_BR); offered++) {
        unsigned c = sws_ae_choose(&q, offered);
        if (c != 0 && c != SWS_AE_GZIP && c != SWS_AE_BR)
            abort();
        if ((c & ~offered) || (c && !(sws_ae_acceptable(&q, offered) & c)))
            abort();
    }
    free(v);
    return 0;
}
