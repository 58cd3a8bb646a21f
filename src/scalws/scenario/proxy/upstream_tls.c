/* The upstream connection's TLS engine, its wire buffers and its name: see
 * upstream_tls.h. The engine is tls_conn.c's, started as a client; this file
 * only moves bytes between it and the loop's operations. */
#include "upstream_tls.h"

#include <errno.h>
#include <openssl/bio.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "sws_tls_client.h"

struct sws_up_tls {
    sws_tls_conn eng;
    char *wire; /* lent from the pool while a write of it is in flight */
};

int sws_up_tls_pool_init(sws_pool *p, const struct sws_tls_client *client) {
    p->tls = client;
    if (!client)
        return 0;
    p->tls_plain = malloc(SWS_UP_TLS_PLAIN);
    if (!p->tls_plain || sws_lend_init(&p->tls_wire, SWS_UP_TLS_WIRE, p->nslots) < 0)
        return -ENOMEM;
    p->tls_wire_init = true;
    return 0;
}

void sws_up_tls_pool_free(sws_pool *p) {
    for (uint32_t i = 0; i < p->nslots && p->slots; i++)
        if (p->slots[i] && p->slots[i]->tls)
            sws_up_tls_free(p, p->slots[i]);
    for (int i = 0; i < SWS_UPSTREAMS_MAX; i++)
        sws_tls_client_slot_free(&p->tls_sess[i]);
    free(p->tls_plain);
    p->tls_plain = NULL;
    if (p->tls_wire_init)
        sws_lend_fini(&p->tls_wire);
    p->tls_wire_init = false;
}

void sws_up_tls_pool_trim(sws_pool *p) {
    if (p->tls_wire_init)
        sws_lend_trim(&p->tls_wire, 1);
}

/* [proxy] tls_name, else the upstream's host as written ("[::1]:443" gives
 * "::1"): the name a client of that upstream would have asked for. */
void sws_up_tls_name(const sws_proxy_config *cfg, int up, char *out, size_t cap) {
    if (cfg->tls_name[0]) {
        snprintf(out, cap, "%s", cfg->tls_name);
        return;
    }
    const char *t = cfg->up[up].text;
    const char *end = strrchr(t, ':');
    if (t[0] == '[') {
        t++;
        end = strchr(t, ']');
    }
    size_t n = end ? (size_t)(end - t) : strlen(t);
    if (n >= cap)
        n = cap - 1;
    memcpy(out, t, n);
    out[n] = '\0';
}

int sws_up_tls_start(sws_pool *p, sws_up_conn *u) {
    if (!p->tls)
        return 0;
    if (!u->tls && !(u->tls = calloc(1, sizeof(*u->tls))))
        return -ENOMEM;
    char name[256];
    sws_up_tls_name(p->cfg, u->upstream, name, sizeof(name));
    int rc = sws_tls_conn_init_client(&u->tls->eng, p->tls, name, &p->tls_sess[u->upstream]);
    if (rc < 0) {
        free(u->tls);
        u->tls = NULL;
        return rc;
    }
    return sws_up_tls_handshake(u) < 0 ? -EPROTO : 0;
}

int sws_up_tls_handshake(sws_up_conn *u) {
    int rc = sws_tls_handshake(&u->tls->eng);
    return rc == SWS_TLS_WANT ? 0 : rc;
}

bool sws_up_tls_established(const sws_up_conn *u) {
    return u->tls && u->tls->eng.established;
}

void sws_up_tls_log_failure(sws_pool *p, const sws_up_conn *u, const char *route) {
    uint64_t now = tl_loop_now(p->loop);
    if (!u->tls || (p->tls_logged && now < p->tls_logged_ms + 10000))
        return;
    p->tls_logged = true;
    p->tls_logged_ms = now;
    const sws_tls_conn *t = &u->tls->eng;
    char name[256];
    sws_up_tls_name(p->cfg, u->upstream, name, sizeof(name));
    bool refused = SSL_get_verify_result(t->ssl) != X509_V_OK;
    fprintf(stderr, "scalwsd: route %s: TLS to upstream %s (%s) failed: %s%s%s\n", route,
            p->cfg->up[u->upstream].text, name, sws_tls_fail_name((sws_tls_fail)t->fail),
            refused ? ", certificate refused: " : "", refused ? sws_tls_verify_error(t) : "");
}

int sws_up_tls_feed(sws_up_conn *u, const void *data, size_t len) {
    return sws_tls_feed(&u->tls->eng, data, len);
}

int sws_up_tls_read(sws_up_conn *u, void *buf, size_t cap) {
    return sws_tls_read(&u->tls->eng, buf, cap);
}

size_t sws_up_tls_backlog(const sws_up_conn *u) {
    if (!u->tls || !u->tls->eng.ssl)
        return 0;
    /* Ciphertext not read yet, and plaintext of a record read in part. */
    return BIO_ctrl_pending(u->tls->eng.in) + (size_t)SSL_pending(u->tls->eng.ssl);
}

bool sws_up_tls_clean(const sws_up_conn *u) {
    if (!u->tls)
        return true;
    const sws_tls_conn *t = &u->tls->eng;
    return !t->failed && !t->peer_closed && sws_up_tls_backlog(u) == 0 && sws_tls_pending(t) == 0;
}

int sws_up_tls_send(sws_pool *p, sws_up_conn *u, const char *plain, uint32_t len) {
    sws_tls_conn *t = &u->tls->eng;
    u->wlen = 0;
    if (u->write_inflight)
        return 0;
    int sealed = 0;
    size_t waiting = sws_tls_pending(t);
    if (t->established && len && waiting + SWS_UP_TLS_PLAIN + 512 <= SWS_UP_TLS_WIRE) {
        sealed = sws_tls_write(t, plain, len < SWS_UP_TLS_PLAIN ? len : SWS_UP_TLS_PLAIN);
        if (sealed < 0)
            return sealed;
        waiting = sws_tls_pending(t);
    }
    if (waiting == 0)
        return 0;
    char *wire = sws_lend_take(&p->tls_wire);
    if (!wire)
        return -ENOMEM;
    size_t n = sws_tls_take(t, wire, SWS_UP_TLS_WIRE);
    tl_op op;
    int rc = tl_write(p->loop, u->h, wire, (uint32_t)n,
                      sws_token_of(p->inst, u->index, SWS_T_UP_WRITE), &op);
    if (rc < 0) {
        sws_lend_give(&p->tls_wire, wire);
        return rc;
    }
    u->tls->wire = wire;
    u->write_inflight = true;
    u->wlen = (uint32_t)sealed;
    return sealed;
}

void sws_up_tls_written(sws_pool *p, sws_up_conn *u) {
    if (u->tls && u->tls->wire) {
        sws_lend_give(&p->tls_wire, u->tls->wire);
        u->tls->wire = NULL;
    }
}

void sws_up_tls_close(sws_pool *p, sws_up_conn *u) {
    if (!u->tls || !u->tls->eng.established || u->tls->eng.failed || u->write_inflight)
        return;
    /* A close_notify is one small record on a socket with no write in
     * flight: sent at once rather than through a write completion, which
     * would hold the slot and its close for one more turn. An upstream that
     * never sees it only takes the close for a truncation. */
    char rec[64];
    if (sws_tls_close_notify(&u->tls->eng) < 0)
        return;
    size_t n = sws_tls_take(&u->tls->eng, rec, sizeof(rec));
    int fd = tl_handle_fd(p->loop, u->h);
    if (n && fd >= 0)
        (void)send(fd, rec, n, MSG_DONTWAIT | MSG_NOSIGNAL); /* best effort: the close follows */
}

void sws_up_tls_free(sws_pool *p, sws_up_conn *u) {
    if (!u->tls)
        return;
    sws_up_tls_written(p, u);
    sws_tls_conn_free(&u->tls->eng);
    free(u->tls);
    u->tls = NULL;
}
