/* Fuzz target for the request path: bytes in, answers out, as scalwsd's consume
 * loop feeds them. The first bytes choose read sizes; the stream is parsed split
 * that way and in one piece, and both must return the same requests and both
 * refuse or neither: a parse that depends on how reads fell is a smuggling bug.
 * The whole stream is also read by the reference path alone, which must give
 * exactly what the one-pass head reader gave, and split by head.c's portable
 * byte scan, which must give exactly what its SIMD scan gave. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sws_http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Small limits, so that every limit is reached by inputs of a few hundred bytes. */
static const sws_http_limits lim = {512, 16, 128, 1024, 64};

#define MAX_REQ 64

typedef struct outcome {
    int n;
    uint32_t req[MAX_REQ]; /* a digest of each request returned */
    int status;            /* of the refusal; 0 when none */
} outcome;

static void check(bool ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "fuzz_request: %s\n", what);
        abort();
    }
}

static uint32_t digest(const sws_http_request *r) {
    uint32_t h = 2166136261u;
    const uint8_t f[] = {r->method,        r->http_major,          r->http_minor,
                         (uint8_t)r->head, (uint8_t)r->keep_alive, (uint8_t)r->path_truncated};
    for (size_t i = 0; i < sizeof(f); i++)
        h = (h ^ f[i]) * 16777619u;
    for (size_t i = 0; i < r->path_len; i++)
        h = (h ^ (uint8_t)r->path[i]) * 16777619u;
    /* The Host a route is chosen by. */
    check(r->host_len <= SWS_HTTP_HOST_MAX, "host past its room");
    h = (h ^ r->host_len) * 16777619u;
    for (size_t i = 0; i < r->host_len; i++)
        h = (h ^ (uint8_t)r->host[i]) * 16777619u;
    /* What the access log keeps, which must not depend on the reads either. */
    const uint16_t lens[] = {r->referer_len, r->user_agent_len, r->line_len};
    const size_t offs[] = {SWS_HTTP_LOG_REFERER, SWS_HTTP_LOG_UA, SWS_HTTP_LOG_LINE};
    for (size_t k = 0; k < 3; k++) {
        check(lens[k] <= SWS_HTTP_LOG_FIELD_MAX, "log field past its room");
        h = (h ^ lens[k]) * 16777619u;
        for (size_t i = 0; i < lens[k]; i++)
            h = (h ^ (uint8_t)r->log_fields[offs[k] + i]) * 16777619u;
    }
    return h;
}

/* What conn.c does with a result: a response head for a request, an error
 * answer that closes for a refusal. Both must fit the connection's buffer. */
static void answer(const sws_http_request *r, int status) {
    static char out[1024];
    const char *date = "Sun, 06 Nov 1994 08:49:37 GMT";
    if (status) {
        /* 425: an unsafe method marked Early-Data by an earlier hop (RFC 8470 5.2). */
        check(status == 400 || status == 413 || status == 414 || status == 425 || status == 431 ||
                  status == 501 || status == 505,
              "unexpected refusal status");
        size_t n = sws_http_error(out, sizeof(out), status, date, false);
        check(n > 0 && memcmp(out, "HTTP/1.1 ", 9) == 0, "error answer does not fit");
        check(strstr(out, "\r\nConnection: close\r\n") != NULL, "error answer keeps alive");
        return;
    }
    check(r->path_len < SWS_HTTP_PATH_MAX && strlen(r->path) == r->path_len, "path not terminated");
    check(r->http_major == 1 && r->http_minor <= 1, "request of an unsupported version");
    size_t n = sws_http_head(out, sizeof(out), 200, date, "text/plain", 12, r->keep_alive);
    check(n > 0, "response head does not fit");
}

/* Which parser: head.c where it takes the head (with SIMD where built), head.c
 * with its portable byte scan, or the reference path alone. */
enum { ONE_PASS, PORTABLE, REFERENCE };

/* Feeds data in reads of the sizes in steps (cycled; 0 is the rest), each read
 * fed again from where the last request ended, as conn.c's consume() does. */
static void run(const uint8_t *data, size_t size, const uint8_t *steps, size_t nsteps, int kind,
                outcome *o) {
    static sws_http_parser p;
    static char log_fields[SWS_HTTP_LOG_STORAGE];
    sws_http_parser_init(&p, &lim);
    p.reference_only = kind == REFERENCE;
    p.portable_scan = kind == PORTABLE;
    p.req.log_fields = log_fields; /* as serve.c lends it with the access log on */
    memset(o, 0, sizeof(*o));
    size_t off = 0, k = 0;
    while (off < size) {
        size_t take = size - off;
        if (nsteps) {
            size_t s = steps[k++ % nsteps];
            if (s && s < take)
                take = s;
        }
        const char *rd = (const char *)data + off;
        size_t roff = 0, spins = 0;
        while (roff < take) {
            size_t used;
            int st;
            int rc = sws_http_feed(&p, rd + roff, take - roff, &used, &st);
            check(used <= take - roff, "consumed more than fed");
            if (rc < 0) {
                check(st != 0, "refusal without a status");
                answer(NULL, st);
                o->status = st;
                return; /* the connection is closed */
            }
            if (rc == SWS_HTTP_NEED_MORE) {
                check(used == take - roff, "NEED_MORE left bytes");
                break;
            }
            check(rc == SWS_HTTP_REQUEST, "unknown result");
            check(used > 0 || ++spins < 4, "no progress");
            answer(&p.req, 0);
            if (o->n < MAX_REQ)
                o->req[o->n++] = digest(&p.req);
            roff += used;
        }
        off += take;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    size_t nsteps = data[0] % 8;
    if (size < 1 + nsteps)
        return 0;
    const uint8_t *steps = data + 1;
    data += 1 + nsteps;
    size -= 1 + nsteps;
    static outcome split, whole, ref, port;
    run(data, size, steps, nsteps, ONE_PASS, &split);
    run(data, size, NULL, 0, ONE_PASS, &whole);
    /* The one-pass head reader (head.c) stands in for the reference path
     * (scan_head + llhttp): fed the same reads, they must agree exactly. */
    run(data, size, NULL, 0, REFERENCE, &ref);
    check(ref.n == whole.n && ref.status == whole.status &&
              memcmp(ref.req, whole.req, sizeof(uint32_t) * (size_t)ref.n) == 0,
          "the one pass and the reference path differ");
    /* Its SIMD scan and its byte scan read the same runs. */
    run(data, size, steps, nsteps, PORTABLE, &port);
    check(port.n == split.n && port.status == split.status &&
              memcmp(port.req, split.req, sizeof(uint32_t) * (size_t)port.n) == 0,
          "the SIMD and the portable scans differ");
    /* Which refusal comes first may depend on the reads (a span's callback
     * fires at the end of a read); whether one comes, and what was served
     * before it, may not. */
    check(split.n == whole.n, "split and whole returned different request counts");
    check(memcmp(split.req, whole.req, sizeof(uint32_t) * (size_t)split.n) == 0,
          "split and whole returned different requests");
    check((split.status == 0) == (whole.status == 0), "refused in one reading only");
    return 0;
}
