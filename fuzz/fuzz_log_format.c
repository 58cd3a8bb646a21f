/* Fuzz target for the access log's format compiler (config/log_format.c) and
 * its renderer (core/log_render.c). The input's first line is a log_format
 * value; the rest are the exchange's text values (request line, Referer,
 * User-Agent, Host), cut at NUL bytes. What must hold: a refused format says
 * why; a compiled one has ops within its arrays and a `uses` that names
 * exactly its variables; rendered against those values and against the
 * longest and worst-escaped ones, its line fits SWS_LOG_LINE_MAX (the buffer
 * is exactly that big, so ASan sees a byte past it) and ends in its only
 * newline when its own text has none; a json format's line is one JSON
 * object (jansson) with one member per variable. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log_render.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The NUL-cut piece of the values at *at: its bytes (may hold anything). */
static const char *piece(const uint8_t *data, size_t size, size_t *at, size_t *len) {
    if (*at >= size) {
        *len = 0;
        return NULL;
    }
    const uint8_t *s = data + *at, *nul = memchr(s, '\0', size - *at);
    *len = nul ? (size_t)(nul - s) : size - *at;
    *at += *len + 1;
    return (const char *)s;
}

/* Whether the literal text of f holds no control byte (a '\n' of its own
 * would make two lines of one, which is the format's doing, not a value's;
 * DEL is one too, as the line check below counts it). */
static bool plain_text(const sws_log_format *f) {
    for (unsigned i = 0; i < f->nops; i++)
        if (f->ops[i].var == SWS_LOG_OP_LIT)
            for (unsigned k = 0; k < f->ops[i].len; k++)
                if ((unsigned char)f->lit[f->ops[i].off + k] < 0x20 ||
                    f->lit[f->ops[i].off + k] == 0x7f)
                    return false;
    return true;
}

static void check_line(const sws_log_format *f, const sws_log_line *l, char *out) {
    size_t n = sws_log_render(f, l, out);
    if (n == 0 || n > SWS_LOG_LINE_MAX || out[n - 1] != '\n')
        abort();
    if (plain_text(f)) {
        /* A client's bytes never end the line early, nor hold a control byte. */
        for (size_t i = 0; i + 1 < n; i++)
            if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f)
                abort();
    }
    if (!f->json)
        return;
    json_error_t err;
    /* Integers past int64 (a byte count of 2^64-1) are JSON still. */
    json_t *j = json_loadb(out, n - 1, JSON_DECODE_INT_AS_REAL, &err);
    if (!j || !json_is_object(j)) {
        fprintf(stderr, "fuzz_log_format: not a JSON object: %s\n%.*s", err.text, (int)n, out);
        abort();
    }
    unsigned vars = 0;
    for (unsigned i = 0; i < f->nops; i++)
        vars += f->ops[i].var != SWS_LOG_OP_LIT;
    /* A name given twice is one member (the last value wins in jansson). */
    if (json_object_size(j) > vars || json_object_size(j) == 0)
        abort();
    json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 8192)
        return 0;
    const uint8_t *nl = memchr(data, '\n', size);
    size_t tlen = nl ? (size_t)(nl - data) : size;
    char *text = malloc(tlen + 1);
    memcpy(text, data, tlen);
    text[tlen] = '\0';
    static sws_log_format f;
    char why[256] = "";
    int rc = sws_log_format_compile(&f, text, why, sizeof why);
    free(text);
    if (rc != 0) {
        if (why[0] == '\0')
            abort();
        return 0;
    }
    uint32_t uses = 0;
    if (f.nops == 0 || f.nops > SWS_LOG_OPS_MAX)
        abort();
    for (unsigned i = 0; i < f.nops; i++) {
        const sws_log_op *op = &f.ops[i];
        if (op->var == SWS_LOG_OP_LIT) {
            if (op->len == 0 || (size_t)op->off + op->len > SWS_LOG_LIT_MAX)
                abort();
        } else if (op->var >= SWS_LV_N) {
            abort();
        } else {
            uses |= 1u << op->var;
        }
    }
    if (uses != f.uses)
        abort();

    char *out = malloc(SWS_LOG_LINE_MAX);
    size_t at = nl ? tlen + 1 : size;
    sws_log_line l = {.peer = "2001:db8::1",
                      .status = 200,
                      .elapsed_ms = 4,
                      .route = "api",
                      .upstream = "[2001:db8::2]:8080",
                      .upstream_us = 1500,
                      .time_local = "05/Dec/2026:04:43:21 +0000",
                      .time_iso8601 = "2026-12-05T04:43:21+00:00",
                      .now_ms = 1796445801123u};
    l.request = piece(data, size, &at, &l.request_len);
    l.referer = piece(data, size, &at, &l.referer_len);
    l.user_agent = piece(data, size, &at, &l.user_agent_len);
    l.host = piece(data, size, &at, &l.host_len);
    check_line(&f, &l, out);

    /* The longest line it can make: every text value past its bound in bytes
     * that escape the most (a control byte: \xHH, \u00HH), every number at its
     * longest, the longest addresses and route name. */
    static char worst[1024];
    memset(worst, 0x01, sizeof worst);
    static char addr[47], up[65], route[49];
    memset(addr, '1', sizeof addr - 1);
    memset(up, '2', sizeof up - 1);
    memset(route, 'r', sizeof route - 1);
    sws_log_line w = {.peer = addr,
                      .request = worst,
                      .request_len = sizeof worst,
                      .referer = worst,
                      .referer_len = sizeof worst,
                      .user_agent = worst,
                      .user_agent_len = sizeof worst,
                      .host = worst,
                      .host_len = sizeof worst,
                      .status = INT32_MAX,
                      .bytes = UINT64_MAX,
                      .elapsed_ms = INT64_MAX,
                      .route = route,
                      .upstream = up,
                      .upstream_us = INT64_MAX,
                      .time_local = l.time_local,
                      .time_iso8601 = l.time_iso8601,
                      .now_ms = UINT64_MAX};
    check_line(&f, &w, out);
    /* And every value absent. */
    sws_log_line a = {.status = -1,
                      .elapsed_ms = -1,
                      .upstream_us = -1,
                      .time_local = l.time_local,
                      .time_iso8601 = l.time_iso8601};
    check_line(&f, &a, out);
    free(out);
    return 0;
}
