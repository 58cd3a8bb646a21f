/* h3get's connection: its requests, nghttp3's and ngtcp2's callbacks, the
 * TLS session, packets in and out, and the run until every request is
 * answered (h3get.c says what it prints). */
#include "h3get.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gnutls/crypto.h>
#include <gnutls/ocsp.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

_Noreturn void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("h3get: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

/* ---- requests ------------------------------------------------------------------ */

static nghttp3_nv nv(const char *n, const char *v, size_t vl) {
    return (nghttp3_nv){(uint8_t *)n, (uint8_t *)v, strlen(n), vl, NGHTTP3_NV_FLAG_NONE};
}

static nghttp3_ssize read_post(nghttp3_conn *h, int64_t sid, nghttp3_vec *vec, size_t veccnt,
                               uint32_t *flags, void *ud, void *sud) {
    (void)h;
    (void)sid;
    (void)veccnt;
    client *c = ud;
    req *r = sud;
    vec[0] = (nghttp3_vec){(uint8_t *)c->data + r->posted, c->data_len - r->posted};
    r->posted = c->data_len;
    *flags |= NGHTTP3_DATA_FLAG_EOF;
    return 1;
}

void submit_more(client *c) {
    while (c->h && !c->goaway && c->next < c->nreq && c->inflight < c->parallel) {
        if (c->pause_ns && now_ns() < c->next_at)
            return; /* run() calls again when it is time */
        int64_t sid;
        if (ngtcp2_conn_open_bidi_stream(c->q, &sid, NULL) != 0)
            return; /* the server's stream limit: extend_max_local_streams_bidi resumes */
        req *r = c->load ? load_slot(c) : &c->reqs[c->next];
        c->next++;
        r->sid = sid;
        r->started = true;
        char len[24];
        snprintf(len, sizeof(len), "%zu", c->data_len);
        nghttp3_nv h[7 + 8];
        size_t n = 0;
        if (c->ws_nmsg) {
            n = (size_t)ws_head(c, r, h);
        } else if (strcmp(c->method, "CONNECT") == 0) {
            /* RFC 9114 4.4: a plain CONNECT names its authority alone (the
             * path is only the line's) */
            h[n++] = nv(":method", c->method, strlen(c->method));
            h[n++] = nv(":authority", r->path, strlen(r->path));
        } else {
            h[n++] = nv(":method", c->method, strlen(c->method));
            h[n++] = nv(":scheme", "https", 5);
            h[n++] = nv(":authority", c->authority, strlen(c->authority));
            h[n++] = nv(":path", r->path, strlen(r->path));
            h[n++] = nv("user-agent", "h3get", 5);
            if (c->data && !c->no_length)
                h[n++] = nv("content-length", len, strlen(len));
        }
        for (int i = 0; i < c->nfields; i++) { /* "name: value", name lowercased by the caller */
            const char *f = c->fields[i], *colon = strchr(f, ':'), *v = colon + 1;
            while (*v == ' ')
                v++;
            h[n++] = (nghttp3_nv){(uint8_t *)f, (uint8_t *)v, (size_t)(colon - f), strlen(v),
                                  NGHTTP3_NV_FLAG_NONE};
        }
        nghttp3_data_reader dr = {c->ws_nmsg ? ws_read : read_post};
        int rc =
            nghttp3_conn_submit_request(c->h, sid, h, n, c->data || c->ws_nmsg ? &dr : NULL, r);
        if (rc == NGHTTP3_ERR_CONN_CLOSING) { /* a GOAWAY came first */
            c->goaway = true;
            c->next--;
            r->started = false;
            if (c->load)
                c->free_slots[c->nfree++] = (int)(r - c->reqs);
            ngtcp2_conn_shutdown_stream(c->q, sid, NGHTTP3_H3_REQUEST_CANCELLED);
            return;
        }
        if (rc != 0)
            die("nghttp3_conn_submit_request: %s", nghttp3_strerror(rc));
        c->inflight++;
    }
}

/* ---- nghttp3 callbacks -------------------------------------------------------- */

static int h_recv_header(nghttp3_conn *h, int64_t sid, int32_t token, nghttp3_rcbuf *name,
                         nghttp3_rcbuf *value, uint8_t flags, void *ud, void *sud) {
    (void)h;
    (void)sid;
    (void)token;
    (void)flags;
    client *c = ud;
    req *r = sud;
    nghttp3_vec n = nghttp3_rcbuf_get_buf(name), v = nghttp3_rcbuf_get_buf(value);
    if (!r)
        return 0;
    if (n.len == 7 && memcmp(n.base, ":status", 7) == 0)
        r->status = atoi((const char *)v.base);
    if (c->show_fields)
        printf("%d < %.*s: %.*s\n", r->index, (int)n.len, n.base, (int)v.len, v.base);
    return 0;
}

static int h_recv_data(nghttp3_conn *h, int64_t sid, const uint8_t *data, size_t len, void *ud,
                       void *sud) {
    (void)h;
    client *c = ud;
    req *r = sud;
    if (r && r->ws)
        ws_recv(c, r, data, len);
    if (r && !r->reset_due) {
        r->bytes += len;
        if (!c->load)
            r->hash = fnv(r->hash, data, len);
        if (c->reset_after && r->bytes >= c->reset_after)
            r->reset_due = true; /* not inside nghttp3's read of the stream: write_out */
        if (r->body_cap) {
            if (r->body_len + len > r->body_cap) {
                size_t cap = (r->body_len + len) * 2;
                char *b = realloc(r->body, cap);
                if (!b)
                    die("out of memory");
                r->body = b;
                r->body_cap = cap;
            }
            memcpy(r->body + r->body_len, data, len);
            r->body_len += len;
        }
    }
    ngtcp2_conn_extend_max_stream_offset(c->q, sid, len);
    ngtcp2_conn_extend_max_offset(c->q, len);
    return 0;
}

static int h_deferred(nghttp3_conn *h, int64_t sid, size_t n, void *ud, void *sud) {
    (void)h;
    (void)sud;
    client *c = ud;
    ngtcp2_conn_extend_max_stream_offset(c->q, sid, n);
    ngtcp2_conn_extend_max_offset(c->q, n);
    return 0;
}

static int h_end_headers(nghttp3_conn *h, int64_t sid, int fin, void *ud, void *sud) {
    (void)h;
    (void)sid;
    (void)fin;
    req *r = sud;
    if (r && r->ws)
        ws_head_done(ud, r);
    return 0;
}

static int h_end_stream(nghttp3_conn *h, int64_t sid, void *ud, void *sud) {
    (void)h;
    (void)sid;
    (void)ud;
    req *r = sud;
    if (r && r->status)
        r->done = true;
    return 0;
}

static int h_stream_close(nghttp3_conn *h, int64_t sid, uint64_t code, void *ud, void *sud) {
    (void)h;
    client *c = ud;
    req *r = sud;
    if (!r)
        return 0;
    c->next_at = now_ns() + c->pause_ns;
    c->done++;
    c->inflight--;
    if (!r->done && c->reconnect &&
        (code == NGHTTP3_H3_REQUEST_REJECTED || (c->goaway && sid >= c->goaway_id))) {
        r->rejected = true; /* not processed (RFC 9114 5.2): sent again on the next connection */
        return 0;
    }
    if (!r->done) {
        r->failed = true;
        fprintf(stderr, "h3get: request %d (%s) closed without an answer: error 0x%" PRIx64 "\n",
                r->index, r->path, code);
    }
    if (c->load)
        load_done(c, r);
    else if (!(r->ws && ws_closed(c, r)) && !c->quiet)
        printf("%d %d %" PRIu64 " %016" PRIx64 "\n", r->index, r->status, r->bytes, r->hash);
    return 0;
}

static int h_stop_sending(nghttp3_conn *h, int64_t sid, uint64_t code, void *ud, void *sud) {
    (void)h;
    (void)sud;
    client *c = ud;
    return ngtcp2_conn_shutdown_stream_read(c->q, sid, code) ? NGHTTP3_ERR_CALLBACK_FAILURE : 0;
}

static int h_reset_stream(nghttp3_conn *h, int64_t sid, uint64_t code, void *ud, void *sud) {
    (void)h;
    (void)sud;
    client *c = ud;
    return ngtcp2_conn_shutdown_stream_write(c->q, sid, code) ? NGHTTP3_ERR_CALLBACK_FAILURE : 0;
}

static int h_shutdown(nghttp3_conn *h, int64_t id, void *ud) {
    (void)h;
    client *c = ud;
    c->goaway = true;
    c->goaway_id = id;
    if (!c->quiet)
        printf("goaway %" PRId64 "\n", id);
    return 0;
}

int setup_h3(client *c) {
    nghttp3_callbacks cb = {
        .stream_close = h_stream_close,
        .recv_data = h_recv_data,
        .deferred_consume = h_deferred,
        .recv_header = h_recv_header,
        .recv_trailer = h_recv_header, /* printed alike with -i, after the body */
        .stop_sending = h_stop_sending,
        .end_headers = h_end_headers,
        .end_stream = h_end_stream,
        .reset_stream = h_reset_stream,
        .shutdown = h_shutdown,
    };
    nghttp3_settings s;
    nghttp3_settings_default(&s);
    s.qpack_max_dtable_capacity = 4096;
    s.qpack_blocked_streams = 100;
    if (nghttp3_conn_client_new(&c->h, &cb, &s, NULL, c) != 0)
        return -1;
    int64_t ctrl, enc, dec;
    if (ngtcp2_conn_open_uni_stream(c->q, &ctrl, NULL) != 0 ||
        nghttp3_conn_bind_control_stream(c->h, ctrl) != 0 ||
        ngtcp2_conn_open_uni_stream(c->q, &enc, NULL) != 0 ||
        ngtcp2_conn_open_uni_stream(c->q, &dec, NULL) != 0 ||
        nghttp3_conn_bind_qpack_streams(c->h, enc, dec) != 0)
        return -1;
    return 0;
}

/* ---- ngtcp2 callbacks ---------------------------------------------------------- */

static void rand_cb(uint8_t *dest, size_t len, const ngtcp2_rand_ctx *ctx) {
    (void)ctx;
    (void)gnutls_rnd(GNUTLS_RND_NONCE, dest, len);
}

static int new_cid_cb(ngtcp2_conn *q, ngtcp2_cid *cid, uint8_t *token, size_t len, void *ud) {
    (void)q;
    (void)ud;
    if (gnutls_rnd(GNUTLS_RND_NONCE, cid->data, len) != 0 ||
        gnutls_rnd(GNUTLS_RND_NONCE, token, NGTCP2_STATELESS_RESET_TOKENLEN) != 0)
        return NGTCP2_ERR_CALLBACK_FAILURE;
    cid->datalen = len;
    return 0;
}

/* --ocsp-out: the OCSP response the server stapled to its certificate
 * (TLS 1.3: in its Certificate message), into the file, and "ocsp N" (its
 * bytes; 0 and an empty file when none came). */
static void ocsp_save(client *c) {
    gnutls_datum_t resp = {NULL, 0};
    if (gnutls_ocsp_status_request_get(c->tls, &resp) != 0)
        resp.size = 0;
    FILE *f = fopen(c->ocsp_out, "wb");
    if (!f || (resp.size && fwrite(resp.data, 1, resp.size, f) != resp.size) || fclose(f) != 0)
        die("%s: cannot write", c->ocsp_out);
    printf("ocsp %u\n", resp.size);
}

static int handshake_completed_cb(ngtcp2_conn *q, void *ud) {
    (void)q;
    client *c = ud;
    c->handshake = true;
    if (c->ocsp_out)
        ocsp_save(c);
    if (c->resuming)
        printf("resumed %d\n", gnutls_session_is_resumed(c->tls) ? 1 : 0);
    if (c->early) {
        bool taken = gnutls_session_get_flags(c->tls) & GNUTLS_SFLAGS_EARLY_DATA;
        printf("early %d\n", taken ? 1 : 0);
        if (taken)
            return 0; /* the requests go on where they are */
        if (early_rejected(c) != 0)
            return NGTCP2_ERR_CALLBACK_FAILURE;
    }
    if (setup_h3(c) != 0)
        return NGTCP2_ERR_CALLBACK_FAILURE;
    submit_more(c);
    return 0;
}

static int recv_stream_data_cb(ngtcp2_conn *q, uint32_t flags, int64_t sid, uint64_t off,
                               const uint8_t *data, size_t len, void *ud, void *sud) {
    (void)off;
    (void)sud;
    client *c = ud;
    if (!c->h)
        return 0;
    nghttp3_ssize n =
        nghttp3_conn_read_stream(c->h, sid, data, len, flags & NGTCP2_STREAM_DATA_FLAG_FIN);
    if (n < 0) {
        fprintf(stderr, "h3get: nghttp3_conn_read_stream: %s\n", nghttp3_strerror((int)n));
        ngtcp2_connection_close_error_set_application_error(
            &c->err, nghttp3_err_infer_quic_app_error_code((int)n), NULL, 0);
        return NGTCP2_ERR_CALLBACK_FAILURE;
    }
    ngtcp2_conn_extend_max_stream_offset(q, sid, (uint64_t)n);
    ngtcp2_conn_extend_max_offset(q, (uint64_t)n);
    return 0;
}

static int acked_cb(ngtcp2_conn *q, int64_t sid, uint64_t off, uint64_t len, void *ud, void *sud) {
    (void)q;
    (void)off;
    (void)sud;
    client *c = ud;
    return c->h && nghttp3_conn_add_ack_offset(c->h, sid, len) ? NGTCP2_ERR_CALLBACK_FAILURE : 0;
}

static int stream_close_cb(ngtcp2_conn *q, uint32_t flags, int64_t sid, uint64_t code, void *ud,
                           void *sud) {
    (void)q;
    (void)sud;
    client *c = ud;
    if (!(flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET))
        code = NGHTTP3_H3_NO_ERROR;
    if (!c->h)
        return 0;
    int rc = nghttp3_conn_close_stream(c->h, sid, code);
    return rc == 0 || rc == NGHTTP3_ERR_STREAM_NOT_FOUND ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
}

static int stream_reset_cb(ngtcp2_conn *q, int64_t sid, uint64_t size, uint64_t code, void *ud,
                           void *sud) {
    (void)q;
    (void)size;
    (void)code;
    (void)sud;
    client *c = ud;
    return c->h && nghttp3_conn_shutdown_stream_read(c->h, sid) ? NGTCP2_ERR_CALLBACK_FAILURE : 0;
}

static int extend_bidi_cb(ngtcp2_conn *q, uint64_t max, void *ud) {
    (void)q;
    (void)max;
    submit_more(ud);
    return 0;
}

static int extend_stream_data_cb(ngtcp2_conn *q, int64_t sid, uint64_t max, void *ud, void *sud) {
    (void)q;
    (void)max;
    (void)sud;
    client *c = ud;
    return c->h && nghttp3_conn_unblock_stream(c->h, sid) ? NGTCP2_ERR_CALLBACK_FAILURE : 0;
}

static ngtcp2_conn *get_conn(ngtcp2_crypto_conn_ref *ref) {
    return ((client *)ref->user_data)->q;
}

/* ---- the connection ------------------------------------------------------------ */

static const char PRIORITY[] =
    "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:"
    "+CHACHA20-POLY1305:+AES-128-CCM:-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:"
    "+GROUP-SECP384R1:+GROUP-SECP521R1:%DISABLE_TLS13_COMPAT_MODE";

void tls_init(client *c, bool insecure, const char *cafile, const gnutls_datum_t *resume) {
    if (gnutls_certificate_allocate_credentials(&c->cred) != 0)
        die("gnutls credentials");
    int rc = cafile ? gnutls_certificate_set_x509_trust_file(c->cred, cafile, GNUTLS_X509_FMT_PEM)
                    : gnutls_certificate_set_x509_system_trust(c->cred);
    if (rc < 0 || (cafile && rc == 0))
        die("no trusted certificate from %s", cafile ? cafile : "the system store");
    unsigned flags = GNUTLS_CLIENT | GNUTLS_NO_END_OF_EARLY_DATA;
    if (c->early)
        flags |= GNUTLS_ENABLE_EARLY_DATA;
    if (gnutls_init(&c->tls, flags) != 0 ||
        ngtcp2_crypto_gnutls_configure_client_session(c->tls) != 0 ||
        gnutls_priority_set_direct(c->tls, PRIORITY, NULL) != 0 ||
        gnutls_credentials_set(c->tls, GNUTLS_CRD_CERTIFICATE, c->cred) != 0)
        die("gnutls session");
    gnutls_datum_t alpn = {(unsigned char *)"h3", 2};
    gnutls_alpn_set_protocols(c->tls, &alpn, 1, GNUTLS_ALPN_MANDATORY);
    gnutls_server_name_set(c->tls, GNUTLS_NAME_DNS, c->sni, strlen(c->sni));
    if (c->ocsp_out && gnutls_ocsp_status_request_enable_client(c->tls, NULL, 0, NULL) != 0)
        die("gnutls: no OCSP status request");
    if (!insecure)
        gnutls_session_set_verify_cert(c->tls, c->sni, 0);
    if (resume && gnutls_session_set_data(c->tls, resume->data, resume->size) != 0)
        die("the saved session is not usable");
    c->resuming = resume != NULL;
    c->ref.get_conn = get_conn;
    c->ref.user_data = c;
    gnutls_session_set_ptr(c->tls, &c->ref);
}

void quic_init(client *c) {
    ngtcp2_callbacks cb = {
        .client_initial = ngtcp2_crypto_client_initial_cb,
        .recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb,
        .handshake_completed = handshake_completed_cb,
        .encrypt = ngtcp2_crypto_encrypt_cb,
        .decrypt = ngtcp2_crypto_decrypt_cb,
        .hp_mask = ngtcp2_crypto_hp_mask_cb,
        .recv_stream_data = recv_stream_data_cb,
        .acked_stream_data_offset = acked_cb,
        .stream_close = stream_close_cb,
        .recv_retry = ngtcp2_crypto_recv_retry_cb,
        .extend_max_local_streams_bidi = extend_bidi_cb,
        .rand = rand_cb,
        .get_new_connection_id = new_cid_cb,
        .update_key = ngtcp2_crypto_update_key_cb,
        .stream_reset = stream_reset_cb,
        .extend_max_stream_data = extend_stream_data_cb,
        .delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb,
        .delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb,
        .get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb,
        .version_negotiation = ngtcp2_crypto_version_negotiation_cb,
        .path_validation = path_validation_cb,
    };
    ngtcp2_cid dcid, scid;
    dcid.datalen = NGTCP2_MIN_INITIAL_DCIDLEN;
    scid.datalen = 8;
    if (gnutls_rnd(GNUTLS_RND_NONCE, dcid.data, dcid.datalen) != 0 ||
        gnutls_rnd(GNUTLS_RND_NONCE, scid.data, scid.datalen) != 0)
        die("no random bytes");
    ngtcp2_settings s;
    ngtcp2_settings_default(&s);
    s.initial_ts = now_ns();
    ngtcp2_transport_params p;
    ngtcp2_transport_params_default(&p);
    p.initial_max_streams_uni = 3;
    p.initial_max_stream_data_bidi_local = 1024 * 1024;
    p.initial_max_stream_data_uni = 256 * 1024;
    p.initial_max_data = 16 * 1024 * 1024;
    p.max_idle_timeout = 30 * NGTCP2_SECONDS;
    /* Room for the server's spare connection IDs: a migration takes one. */
    p.active_connection_id_limit = 4;
    ngtcp2_path path = {{(struct sockaddr *)&c->local, c->local_len},
                        {(struct sockaddr *)&c->remote, c->remote_len},
                        NULL};
    int rc = ngtcp2_conn_client_new(&c->q, &dcid, &scid, &path, NGTCP2_PROTO_VER_V1, &cb, &s, &p,
                                    NULL, c);
    if (rc != 0)
        die("ngtcp2_conn_client_new: %s", ngtcp2_strerror(rc));
    ngtcp2_conn_set_tls_native_handle(c->q, c->tls);
}

static void send_dgram(client *c, const uint8_t *data, size_t len) {
    ssize_t n;
    do
        n = send(c->fd, data, len, 0);
    while (n < 0 && errno == EINTR);
    /* A full socket buffer or an ICMP error: QUIC recovers it as a loss. */
}

/* --gso: the run as one sendmsg with UDP_SEGMENT; a kernel that refuses it
 * gets the datagrams one by one from then on. */
static void gso_flush(client *c) {
    if (c->gso_n > 1) {
        union {
            char buf[CMSG_SPACE(sizeof(uint16_t))];
            struct cmsghdr align;
        } ctl;
        memset(&ctl, 0, sizeof(ctl));
        struct iovec iov = {.iov_base = c->gso_buf, .iov_len = c->gso_len};
        struct msghdr m = {.msg_iov = &iov,
                           .msg_iovlen = 1,
                           .msg_control = ctl.buf,
                           .msg_controllen = sizeof(ctl)};
        struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
        cm->cmsg_level = SOL_UDP;
        cm->cmsg_type = UDP_SEGMENT;
        cm->cmsg_len = CMSG_LEN(sizeof(uint16_t));
        uint16_t seg = (uint16_t)c->gso_seg;
        memcpy(CMSG_DATA(cm), &seg, sizeof(seg));
        ssize_t n;
        do
            n = sendmsg(c->fd, &m, 0);
        while (n < 0 && errno == EINTR);
        if (n < 0 && errno != EAGAIN && errno != ENOBUFS && errno != ECONNREFUSED)
            c->gso = false;
        else
            c->gso_n = 0; /* sent, or lost as a full buffer loses them */
    }
    for (size_t off = 0; c->gso_n > 0 && off < c->gso_len; off += c->gso_seg)
        send_dgram(c, c->gso_buf + off,
                   c->gso_len - off < c->gso_seg ? c->gso_len - off : c->gso_seg);
    c->gso_n = 0;
    c->gso_len = 0;
}

/* A packet to send: at once, or with --gso added to the run, which ends at
 * a larger packet, after a shorter one, at 64 datagrams or a UDP payload. */
static void gso_add(client *c, const uint8_t *p, size_t n) {
    if (!c->gso) {
        send_dgram(c, p, n);
        return;
    }
    if (c->gso_n > 0 && (n > c->gso_seg || c->gso_len % c->gso_seg != 0 || c->gso_n == 64 ||
                         c->gso_len + n > sizeof(c->gso_buf)))
        gso_flush(c);
    if (c->gso_n == 0)
        c->gso_seg = n;
    memcpy(c->gso_buf + c->gso_len, p, n);
    c->gso_len += n;
    c->gso_n++;
}

/* --reset-after: the requests given up are reset both ways; each counts as
 * answered (its line is printed when its stream closes). */
static void reset_due(client *c) {
    for (int i = 0; i < c->nslots; i++) { /* --load: -P slots, fewer than the requests */
        req *r = &c->reqs[i];
        if (!r->reset_due || r->done)
            continue;
        r->done = true;
        if (c->h)
            nghttp3_conn_shutdown_stream_read(c->h, r->sid);
        ngtcp2_conn_shutdown_stream(c->q, r->sid, NGHTTP3_H3_REQUEST_CANCELLED);
    }
}

static int write_out(client *c) {
    ngtcp2_path_storage ps;
    ngtcp2_path_storage_zero(&ps);
    uint64_t ts = now_ns();
    reset_due(c);
    for (;;) {
        int64_t sid = -1;
        int fin = 0;
        nghttp3_vec vec[16];
        nghttp3_ssize nvec = 0;
        if (c->h && ngtcp2_conn_get_max_data_left(c->q)) {
            nvec = nghttp3_conn_writev_stream(c->h, &sid, &fin, vec, 16);
            if (nvec < 0) {
                fprintf(stderr, "h3get: nghttp3_conn_writev_stream: %s\n",
                        nghttp3_strerror((int)nvec));
                return -1;
            }
        }
        ngtcp2_ssize ndata = -1;
        ngtcp2_pkt_info pi;
        uint32_t flags = NGTCP2_WRITE_STREAM_FLAG_MORE | (fin ? NGTCP2_WRITE_STREAM_FLAG_FIN : 0);
        ngtcp2_ssize n =
            ngtcp2_conn_writev_stream(c->q, &ps.path, &pi, c->tx, sizeof(c->tx), &ndata, flags, sid,
                                      (const ngtcp2_vec *)vec, (size_t)nvec, ts);
        if (n < 0) {
            if (n == NGTCP2_ERR_STREAM_DATA_BLOCKED) {
                nghttp3_conn_block_stream(c->h, sid);
                continue;
            }
            if (n == NGTCP2_ERR_STREAM_SHUT_WR) {
                nghttp3_conn_shutdown_stream_write(c->h, sid);
                continue;
            }
            if (n == NGTCP2_ERR_WRITE_MORE) {
                nghttp3_conn_add_write_offset(c->h, sid, (size_t)ndata);
                continue;
            }
            fprintf(stderr, "h3get: ngtcp2_conn_writev_stream: %s\n", ngtcp2_strerror((int)n));
            ngtcp2_connection_close_error_set_transport_error_liberr(&c->err, (int)n, NULL, 0);
            return -1;
        }
        if (ndata >= 0 && c->h)
            nghttp3_conn_add_write_offset(c->h, sid, (size_t)ndata);
        if (n == 0)
            break;
        gso_add(c, c->tx, (size_t)n);
    }
    gso_flush(c);
    ngtcp2_conn_update_pkt_tx_time(c->q, ts);
    return 0;
}

static int read_in(client *c) {
    uint8_t buf[65536];
    for (;;) {
        struct sockaddr_storage from;
        socklen_t fl = sizeof(from);
        ssize_t n = recvfrom(c->fd, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                return 0;
            if (errno == ECONNREFUSED)
                continue; /* nothing listens (yet): the handshake retries */
            fprintf(stderr, "h3get: recvfrom: %s\n", strerror(errno));
            return -1;
        }
        if (n == 0)
            continue; /* ngtcp2 asserts on an empty packet */
        ngtcp2_path path = {
            {(struct sockaddr *)&c->local, c->local_len}, {(struct sockaddr *)&from, fl}, NULL};
        ngtcp2_pkt_info pi = {0};
        int rc = ngtcp2_conn_read_pkt(c->q, &path, &pi, buf, (size_t)n, now_ns());
        if (rc == NGTCP2_ERR_DRAINING) {
            ngtcp2_connection_close_error cc;
            ngtcp2_conn_get_connection_close_error(c->q, &cc);
            /* H3_NO_ERROR, or an application's close the server sent
             * before the handshake was confirmed, where it may only say
             * APPLICATION_ERROR (RFC 9000 10.2.3). */
            c->graceful_close = (cc.type == NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_APPLICATION &&
                                 cc.error_code == NGHTTP3_H3_NO_ERROR) ||
                                (cc.type == NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_TRANSPORT &&
                                 cc.error_code == NGTCP2_APPLICATION_ERROR);
            fprintf(stderr, "h3get: the server closed the connection (%s error 0x%" PRIx64 ")\n",
                    cc.type == NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_APPLICATION ? "application"
                                                                                   : "transport",
                    cc.error_code);
            c->closed = true;
            return -1;
        }
        if (rc != 0) {
            fprintf(stderr, "h3get: ngtcp2_conn_read_pkt: %s\n", ngtcp2_strerror(rc));
            if (rc == NGTCP2_ERR_CRYPTO)
                ngtcp2_connection_close_error_set_transport_error_tls_alert(
                    &c->err, ngtcp2_conn_get_tls_alert(c->q), NULL, 0);
            else
                ngtcp2_connection_close_error_set_transport_error_liberr(&c->err, rc, NULL, 0);
            return -1;
        }
    }
}

static void close_conn(client *c) {
    if (c->closed)
        return;
    ngtcp2_path_storage ps;
    ngtcp2_path_storage_zero(&ps);
    ngtcp2_pkt_info pi;
    ngtcp2_ssize n = ngtcp2_conn_write_connection_close(c->q, &ps.path, &pi, c->tx, sizeof(c->tx),
                                                        &c->err, now_ns());
    if (n > 0)
        send_dgram(c, c->tx, (size_t)n);
}

struct addrinfo *resolve(char *hostport, char **host) {
    char *colon = strrchr(hostport, ':');
    if (!colon)
        usage();
    *colon = '\0';
    *host = hostport;
    if (hostport[0] == '[' && colon[-1] == ']') { /* [::1]:443 */
        (*host)++;
        colon[-1] = '\0';
    }
    struct addrinfo hints = {.ai_socktype = SOCK_DGRAM}, *ai;
    int g = getaddrinfo(*host, colon + 1, &hints, &ai);
    if (g != 0)
        die("%s: %s", *host, gai_strerror(g));
    return ai;
}

void connect_to(client *c, struct addrinfo *ai) {
    c->fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0 || connect(c->fd, ai->ai_addr, ai->ai_addrlen) != 0)
        die("connect: %s", strerror(errno));
    memcpy(&c->remote, ai->ai_addr, ai->ai_addrlen);
    c->remote_len = ai->ai_addrlen;
    c->local_len = sizeof(c->local);
    getsockname(c->fd, (struct sockaddr *)&c->local, &c->local_len);
    c->fd_port = port_of(&c->local);
}

void requests_init(client *c, char **paths, int npaths, int repeat, bool keep) {
    c->nreq = npaths * repeat;
    c->nslots = c->nreq;
    if (c->load)
        load_init(c, paths, npaths);
    c->reqs = calloc((size_t)c->nslots, sizeof(*c->reqs));
    if (!c->reqs)
        die("out of memory");
    for (int i = 0; i < c->nslots; i++) {
        c->reqs[i].path = paths[i % npaths];
        c->reqs[i].index = i;
        c->reqs[i].hash = 14695981039346656037ull;
        c->reqs[i].body_cap = keep ? 4096 : 0;
        if (keep && !(c->reqs[i].body = malloc(4096)))
            die("out of memory");
    }
}

/* The connection's life: its requests until each is answered (or the
 * server's GOAWAY, an error, the deadline), then its CONNECTION_CLOSE.
 * 0 when every request was answered, 1 when not, 3 on the timeout. */
int run(client *c, double timeout) {
    uint64_t deadline = now_ns() + (uint64_t)(timeout * 1e9);
    int rc = 0;
    bool failed = false;
    while (c->done < c->nreq && !(c->goaway && c->inflight == 0)) {
        if (c->load && now_ns() >= c->load_end)
            c->nreq = c->next; /* time is up: those in flight, no more */
        /* Room under -P that answers made (the server's MAX_STREAMS is not
         * the only thing that frees it: a lossy path can bring that first,
         * then the answers, and nothing would ask again). */
        submit_more(c);
        if (c->load && c->done >= c->nreq)
            break;
        if (write_out(c) < 0) {
            failed = true;
            break;
        }
        uint64_t now = now_ns(), exp = ngtcp2_conn_get_expiry(c->q);
        if (now >= deadline) {
            fprintf(stderr, "h3get: timeout: %d of %d answered\n", c->done, c->nreq);
            rc = 3;
            break;
        }
        uint64_t until = exp < deadline ? exp : deadline;
        if (c->pause_ns && c->next < c->nreq && !c->goaway && c->next_at < until)
            until = c->next_at > now ? c->next_at : now;
        int ms = until > now ? (int)((until - now + 999999) / 1000000) : 0;
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        if (poll(&p, 1, ms) > 0 && read_in(c) < 0) {
            failed = true;
            break;
        }
        now = now_ns();
        submit_more(c); /* a --pause that has passed */
        if (ngtcp2_conn_get_expiry(c->q) <= now) {
            int e = ngtcp2_conn_handle_expiry(c->q, now);
            if (e != 0) {
                fprintf(stderr, "h3get: %s\n", ngtcp2_strerror(e));
                failed = true;
                c->closed = e == NGTCP2_ERR_IDLE_CLOSE || e == NGTCP2_ERR_HANDSHAKE_TIMEOUT;
                break;
            }
        }
        if (c->rebind_every && c->done >= c->rebind_at && c->done < c->nreq)
            rebind(c);
    }
    close_conn(c);
    int answered = 0;
    for (int i = 0; i < c->nslots && !c->load; i++)
        answered += c->reqs[i].done && !c->reqs[i].failed;
    if (c->load)
        answered = (int)c->load_ok;
    if (!c->quiet || answered < c->nreq)
        fprintf(stderr, "h3get: %d of %d answered\n", answered, c->nreq);
    if (rc == 0 && (failed || answered < c->nreq))
        rc = 1;
    return rc;
}

void conn_free(client *c) {
    if (c->h)
        nghttp3_conn_del(c->h);
    ngtcp2_conn_del(c->q);
    gnutls_deinit(c->tls);
    gnutls_certificate_free_credentials(c->cred);
    for (int i = 0; i < c->nslots; i++) {
        free(c->reqs[i].body);
        ws_free(&c->reqs[i]);
    }
    free(c->reqs);
    free(c->free_slots);
    close(c->fd);
}
