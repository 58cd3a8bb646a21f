/* Fuzz target for the proxy's response reader (msg.c in response mode), fed
 * as proxy.c's up_feed does: interim 1xx answers skipped, one final response,
 * then the end of the stream (close-delimited bodies end there). The first
 * byte says whether the request was HEAD and how many read sizes follow; the
 * stream is read split that way and in one piece, and both readings must see
 * the same status, the same body and the same end, or both refuse. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sws_msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct outcome {
    bool head_req;
    int status;  /* of the final response; 0 before its head */
    int interim; /* 1xx answers seen */
    int result;  /* 1 complete, 2 complete at the end of stream, <0 refused or cut, 0 open */
    bool nobody; /* HEAD, 204 or 304: no body may come */
    bool has_cl;
    uint64_t cl;
    uint64_t body_len;
    uint32_t body_hash;
    size_t end; /* stream offset where the response ended (result 1) */
} outcome;

static void check(bool ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "fuzz_response: %s\n", what);
        abort();
    }
}

static void check_head(const sws_msg *m) {
    check(m->len <= SWS_MSG_HEAD_MAX, "head longer than its buffer");
    check(m->start_off + m->start_len <= m->len, "reason phrase outside the head");
    check(m->nf <= SWS_MSG_FIELDS_MAX, "too many fields");
    for (uint32_t i = 0; i < m->nf; i++) {
        const sws_msg_field *f = &m->f[i];
        check((uint32_t)f->name_off + f->name_len <= m->len, "field name outside the head");
        check((uint32_t)f->val_off + f->val_len <= m->len, "field value outside the head");
        /* What proxy.c asks of every field (hop_by_hop, Connection lists). */
        (void)sws_msg_name_is(m, i, "connection");
        (void)sws_msg_value_has(m, i, "keep-alive");
        (void)sws_msg_value_has(m, i, "");
    }
}

static int on_head(void *user, sws_msg *m) {
    outcome *o = user;
    check_head(m);
    int st = m->p.status_code;
    check(st >= 100 && st <= 599, "a status code outside 100..599 passed");
    if (st == 101)
        return -1; /* never asked for */
    if (st >= 100 && st < 200) {
        o->interim++;
        return 0;
    }
    o->status = st;
    o->nobody = o->head_req || st == 204 || st == 304;
    o->has_cl = (m->p.flags & F_CONTENT_LENGTH) != 0;
    o->cl = m->p.content_length;
    return o->nobody ? 1 : 0;
}

static int on_body(void *user, const char *d, size_t n) {
    outcome *o = user;
    check(o->status != 0, "body before the final head");
    check(!o->nobody, "body for HEAD, 204 or 304");
    o->body_len += n;
    for (size_t i = 0; i < n; i++)
        o->body_hash = (o->body_hash ^ (uint8_t)d[i]) * 16777619u;
    return 0;
}

static int on_done(void *user, sws_msg *m) {
    (void)user;
    check_head(m);
    return 0;
}

static const sws_msg_cb cb = {on_head, on_body, on_done};

static void run(const uint8_t *data, size_t size, const uint8_t *steps, size_t nsteps, bool head,
                outcome *o) {
    static sws_msg m;
    memset(o, 0, sizeof(*o));
    o->head_req = head;
    o->body_hash = 2166136261u;
    sws_msg_init(&m, HTTP_RESPONSE, &cb, o);
    size_t off = 0, k = 0;
    while (off < size) {
        size_t take = size - off;
        if (nsteps) {
            size_t s = steps[k++ % nsteps];
            if (s && s < take)
                take = s;
        }
        size_t roff = 0;
        while (roff < take) {
            size_t used;
            int rc = sws_msg_feed(&m, (const char *)data + off + roff, take - roff, &used);
            if (rc < 0) {
                check(rc == -EBADMSG || rc == -E2BIG, "unknown error");
                o->result = -1;
                return;
            }
            check(used <= take - roff, "consumed more than fed");
            roff += used;
            if (rc == SWS_MSG_NEED_MORE) {
                check(roff == take, "NEED_MORE left bytes");
                break;
            }
            sws_msg_next(&m);
            if (o->status == 0)
                continue; /* an interim answer: the final one follows */
            o->result = 1;
            o->end = off + roff;
            return;
        }
        off += take;
    }
    int rc = sws_msg_eof(&m);
    check(rc == 0 || rc == SWS_MSG_DONE || rc == -EPIPE, "unknown end-of-stream result");
    o->result = rc == SWS_MSG_DONE ? 2 : rc < 0 ? -2 : 0;
    if (rc == SWS_MSG_DONE)
        check(o->status != 0 && !o->has_cl && !o->nobody, "complete at EOF but framed otherwise");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    bool head = data[0] & 0x80;
    size_t nsteps = data[0] % 8;
    if (size < 1 + nsteps)
        return 0;
    const uint8_t *steps = data + 1;
    data += 1 + nsteps;
    size -= 1 + nsteps;
    static outcome split, whole;
    run(data, size, steps, nsteps, head, &split);
    run(data, size, NULL, 0, head, &whole);
    if (whole.result == 1 && whole.has_cl && !whole.nobody)
        check(whole.body_len == whole.cl, "complete, but the body is not its Content-Length");
    if (whole.nobody)
        check(whole.body_len == 0, "body for HEAD, 204 or 304");
    /* A refusal may come at another byte in another reading (a span is judged
     * when it ends); whether one comes, and everything else, may not depend on
     * how the reads fell. */
    check((split.result < 0) == (whole.result < 0), "refused or cut in one reading only");
    if (whole.result >= 0) {
        check(split.result == whole.result, "different ends");
        check(split.status == whole.status && split.interim == whole.interim, "different heads");
        check(split.body_len == whole.body_len && split.body_hash == whole.body_hash,
              "different bodies");
        check(split.end == whole.end, "the response ended at different bytes");
    }
    return 0;
}
