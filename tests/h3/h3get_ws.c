/* h3get --ws SIZES: each request is a WebSocket tunnel opened by an
 * extended CONNECT (RFC 9220: :method CONNECT, :protocol websocket,
 * :scheme, :path, :authority). Once every tunnel has its answer (or was
 * refused: a test of the server's stream limits sees them all open at
 * once), each tunnel answered 200 sends one masked text message per size
 * in SIZES (RFC 6455 5.2, 5.3) and expects each echoed whole, in order;
 * then it closes: its close frame (1000), the other side's back, then its
 * FIN. With --ws-server-close it waits instead for the other side's close
 * frame, answers it, then ends its side. Lines, per tunnel:
 *     <index> tunnel <status>
 *     <index> echo <bytes>             a message came back whole
 *     <index> close <code> client|server   who closed first
 *     <index> end                      the server's FIN after the close
 * A tunnel not answered 200 gets the line of any answer at its stream's
 * close (its FIN ends the request side at once). A tunnel counts as
 * answered once it ended with every echo and the close; a reset, a message
 * that came back wrong or an end before the close fails it. */
#include "h3get.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/crypto.h>

struct ws_tunnel {
    uint8_t *out; /* every message's frame, made with the head: nghttp3 points into it */
    size_t out_len;
    bool out_given;
    uint8_t close[8]; /* our close frame: its head, mask and code */
    bool close_due, close_given, close_got, fin_due;
    bool counted; /* in c->ws_heads */
    bool server_first;
    int echoed;
    int close_code;
    uint8_t *in; /* what came that is not yet a whole frame */
    size_t in_len, in_cap;
    uint8_t *msg; /* the message being put together from its frames */
    size_t msg_len, msg_cap;
};

static void grow(uint8_t **p, size_t *cap, size_t need) {
    if (need <= *cap)
        return;
    size_t n = *cap ? *cap : 4096;
    while (n < need)
        n *= 2;
    uint8_t *b = realloc(*p, n);
    if (!b)
        die("out of memory");
    *p = b;
    *cap = n;
}

/* Message k's byte j: printable, different per message. */
static uint8_t msg_byte(int k, size_t j) {
    return (uint8_t)('a' + (j + (size_t)k) % 26);
}

/* A client's frame (always masked: RFC 6455 5.3) of op with payload len
 * bytes made by byte(k, j), at out: its length. */
static size_t frame(uint8_t *out, uint8_t op, int k, const uint8_t *payload, size_t len) {
    size_t n = 0;
    out[n++] = (uint8_t)(0x80 | op);
    if (len < 126) {
        out[n++] = (uint8_t)(0x80 | len);
    } else if (len < 65536) {
        out[n++] = 0x80 | 126;
        out[n++] = (uint8_t)(len >> 8);
        out[n++] = (uint8_t)len;
    } else {
        out[n++] = 0x80 | 127;
        for (int s = 56; s >= 0; s -= 8)
            out[n++] = (uint8_t)((uint64_t)len >> s);
    }
    uint8_t *mask = out + n;
    if (gnutls_rnd(GNUTLS_RND_NONCE, mask, 4) != 0)
        die("no random bytes");
    n += 4;
    for (size_t j = 0; j < len; j++)
        out[n + j] = (uint8_t)((payload ? payload[j] : msg_byte(k, j)) ^ mask[j % 4]);
    return n + len;
}

void ws_parse_sizes(client *c, const char *list) {
    char *copy = strdup(list), *save = NULL;
    if (!copy)
        die("out of memory");
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        size_t *m = realloc(c->ws_msg, (size_t)(c->ws_nmsg + 1) * sizeof(*m));
        if (!m)
            die("out of memory");
        c->ws_msg = m;
        c->ws_msg[c->ws_nmsg++] = strtoull(t, NULL, 10);
    }
    free(copy);
    if (c->ws_nmsg == 0)
        usage();
}

int ws_head(client *c, req *r, nghttp3_nv *h) {
    struct ws_tunnel *t = calloc(1, sizeof(*t));
    if (!t)
        die("out of memory");
    size_t total = 0;
    for (int k = 0; k < c->ws_nmsg; k++)
        total += c->ws_msg[k] + 14;
    if (!(t->out = malloc(total ? total : 1)))
        die("out of memory");
    for (int k = 0; k < c->ws_nmsg; k++)
        t->out_len += frame(t->out + t->out_len, 0x1, k, NULL, c->ws_msg[k]);
    r->ws = t;
    int n = 0;
    h[n++] = (nghttp3_nv){(uint8_t *)":method", (uint8_t *)"CONNECT", 7, 7, NGHTTP3_NV_FLAG_NONE};
    h[n++] = (nghttp3_nv){(uint8_t *)":protocol", (uint8_t *)c->ws_protocol, 9,
                          strlen(c->ws_protocol), NGHTTP3_NV_FLAG_NONE};
    h[n++] = (nghttp3_nv){(uint8_t *)":scheme", (uint8_t *)"https", 7, 5, NGHTTP3_NV_FLAG_NONE};
    h[n++] = (nghttp3_nv){(uint8_t *)":authority", (uint8_t *)c->authority, 10,
                          strlen(c->authority), NGHTTP3_NV_FLAG_NONE};
    h[n++] = (nghttp3_nv){(uint8_t *)":path", (uint8_t *)r->path, 5, strlen(r->path),
                          NGHTTP3_NV_FLAG_NONE};
    h[n++] = (nghttp3_nv){(uint8_t *)"sec-websocket-version", (uint8_t *)"13", 21, 2,
                          NGHTTP3_NV_FLAG_NONE};
    return n;
}

nghttp3_ssize ws_read(nghttp3_conn *h, int64_t sid, nghttp3_vec *vec, size_t veccnt,
                      uint32_t *flags, void *ud, void *sud) {
    (void)h;
    (void)sid;
    client *c = ud;
    req *r = sud;
    struct ws_tunnel *t = r ? r->ws : NULL;
    if (!t || veccnt < 2)
        return NGHTTP3_ERR_CALLBACK_FAILURE;
    if (r->status && r->status != 200) {
        *flags |= NGHTTP3_DATA_FLAG_EOF; /* no tunnel: the request ends here */
        return 0;
    }
    if (!c->ws_open || r->status != 200)
        return NGHTTP3_ERR_WOULDBLOCK;
    nghttp3_ssize n = 0;
    if (!t->out_given && t->out_len) {
        vec[n++] = (nghttp3_vec){t->out, t->out_len};
        t->out_given = true;
    }
    if (t->close_due && !t->close_given) {
        vec[n++] = (nghttp3_vec){t->close, sizeof(t->close)};
        t->close_given = true;
    }
    if (t->fin_due)
        *flags |= NGHTTP3_DATA_FLAG_EOF;
    else if (n == 0)
        return NGHTTP3_ERR_WOULDBLOCK;
    return n;
}

/* Our close frame with code (the other side's, echoed, or 1000). */
static void close_send(client *c, req *r, int code) {
    struct ws_tunnel *t = r->ws;
    uint8_t payload[2] = {(uint8_t)(code >> 8), (uint8_t)code};
    frame(t->close, 0x8, 0, payload, 2);
    t->close_due = true;
    nghttp3_conn_resume_stream(c->h, r->sid);
}

/* A whole message came back: the next one expected? */
static void message(client *c, req *r) {
    struct ws_tunnel *t = r->ws;
    int k = t->echoed;
    bool ok = k < c->ws_nmsg && t->msg_len == c->ws_msg[k];
    for (size_t j = 0; ok && j < t->msg_len; j++)
        ok = t->msg[j] == msg_byte(k, j);
    t->msg_len = 0;
    if (!ok) {
        fprintf(stderr, "h3get: tunnel %d: message %d came back wrong\n", r->index, k);
        r->failed = true;
        ngtcp2_conn_shutdown_stream(c->q, r->sid, NGHTTP3_H3_REQUEST_CANCELLED);
        return;
    }
    t->echoed++;
    printf("%d echo %zu\n", r->index, c->ws_msg[k]);
    if (t->echoed == c->ws_nmsg && !c->ws_server_close)
        close_send(c, r, 1000);
}

static void close_frame(client *c, req *r, const uint8_t *p, size_t len) {
    struct ws_tunnel *t = r->ws;
    if (t->close_got)
        return;
    t->close_got = true;
    t->close_code = len >= 2 ? p[0] << 8 | p[1] : 1005;
    t->server_first = !t->close_due;
    printf("%d close %d %s\n", r->index, t->close_code, t->server_first ? "server" : "client");
    if (t->server_first)
        close_send(c, r, t->close_code == 1005 ? 1000 : t->close_code);
    t->fin_due = true; /* both close frames are out: our side ends */
    nghttp3_conn_resume_stream(c->h, r->sid);
}

void ws_recv(client *c, req *r, const uint8_t *data, size_t len) {
    struct ws_tunnel *t = r->ws;
    if (r->status != 200 || r->failed)
        return;
    grow(&t->in, &t->in_cap, t->in_len + len);
    memcpy(t->in + t->in_len, data, len);
    t->in_len += len;
    size_t at = 0;
    for (;;) {
        const uint8_t *f = t->in + at;
        size_t have = t->in_len - at, hl = 2;
        if (have < 2)
            break;
        uint64_t pl = f[1] & 0x7f;
        if (pl == 126)
            hl = 4;
        else if (pl == 127)
            hl = 10;
        if (have < hl)
            break;
        if (pl == 126)
            pl = (uint64_t)f[2] << 8 | f[3];
        else if (pl == 127)
            for (int i = 2; i < 10; i++)
                pl = (i == 2 ? 0 : pl << 8) | f[i];
        if (f[1] & 0x80) {
            fprintf(stderr, "h3get: tunnel %d: a masked frame from the server\n", r->index);
            r->failed = true;
            return;
        }
        if (have - hl < pl)
            break;
        uint8_t op = f[0] & 0x0f;
        const uint8_t *p = f + hl;
        if (op <= 0x2) { /* continuation, text, binary */
            grow(&t->msg, &t->msg_cap, t->msg_len + pl);
            memcpy(t->msg + t->msg_len, p, pl);
            t->msg_len += pl;
            if (f[0] & 0x80)
                message(c, r);
        } else if (op == 0x8) {
            close_frame(c, r, p, pl);
        } /* ping and pong: none is asked for (the peers send none) */
        at += hl + pl;
    }
    memmove(t->in, t->in + at, t->in_len - at);
    t->in_len -= at;
}

/* The tunnels' answers are all in (or their streams gone): the messages go. */
static void count_head(client *c, req *r) {
    if (!r->ws || r->ws->counted)
        return;
    r->ws->counted = true;
    if (++c->ws_heads < c->nreq)
        return;
    c->ws_open = true;
    for (int i = 0; i < c->nreq; i++)
        if (c->reqs[i].started && c->reqs[i].sid >= 0 && c->h)
            nghttp3_conn_resume_stream(c->h, c->reqs[i].sid);
}

void ws_head_done(client *c, req *r) {
    printf("%d tunnel %d\n", r->index, r->status);
    if (r->status != 200 && c->h)
        nghttp3_conn_resume_stream(c->h, r->sid); /* its FIN: no tunnel */
    count_head(c, r);
}

bool ws_closed(client *c, req *r) {
    count_head(c, r);
    struct ws_tunnel *t = r->ws;
    if (r->status != 200)
        return false; /* the line of any answer */
    bool ok = r->done && !r->failed && t->echoed == c->ws_nmsg && t->close_got;
    if (ok) {
        printf("%d end\n", r->index);
    } else if (!r->failed) {
        r->failed = true;
        fprintf(stderr, "h3get: tunnel %d ended after %d of %d echoes, %s\n", r->index, t->echoed,
                c->ws_nmsg, t->close_got ? "closed" : "no close frame");
    }
    return true;
}

void ws_free(req *r) {
    struct ws_tunnel *t = r->ws;
    if (!t)
        return;
    free(t->out);
    free(t->in);
    free(t->msg);
    free(t);
    r->ws = NULL;
}
