/* h3get: the project's HTTP/3 client for tests, on ngtcp2 (client side),
 * nghttp3 and GnuTLS, as Debian 12 packages them. One QUIC connection to
 * host:port over UDP, the requests given (each path -n times, up to -P of
 * them at once), then a clean CONNECTION_CLOSE. For each answer one line
 * on stdout:
 *     <index> <status> <body bytes> <fnv1a-64 of the body, hex>
 * with -i its fields too ("< name: value"), and "goaway <stream id>" when
 * the server sends one ("early 0|1" too with --early: whether the server
 * took the second connection's 0-RTT); -o writes every body, in the
 * order the requests were made, to a file. With --migrate N or
 * --nat-rebind N the client moves to a new UDP socket (a new local port)
 * after every N answers and goes on on the same connection: a migration
 * tells ngtcp2 (a new path and connection ID, validated: "path PORT
 * validated"), a NAT rebinding does not (the server alone sees the port
 * change); each prints "rebind K OLDPORT NEWPORT". --pause MS makes the
 * requests one at a time with MS between an answer and the next request on
 * the connection; --reconnect sends the requests a GOAWAY left unsent (or
 * the server rejected) on a new connection, as a browser does ("reconnect
 * N" before them). With --reset-after N each request is given up (its
 * stream reset both ways, H3_REQUEST_CANCELLED) once N bytes of its answer
 * came, and counts as answered. Exit 0 when every request was
 * answered, 1 when one was not (reset, or the connection ended), 2 for a
 * usage error, 3 on the timeout.
 * --gso sends the packets each write gathers back to back to the server as
 * UDP GSO sends (UDP_SEGMENT, as scalwsd's quic_send.c does), so that a
 * server with GRO receives an upload's datagrams coalesced.
 * --load SECONDS makes it a load generator (scripts/bench-h3-vs-h2): the
 * requests, -P at a time, until -n per path are made or SECONDS have
 * passed, then those in flight are finished; request slots are reused, no
 * body is hashed or kept, and one line sums it up:
 *     load <answered 2xx> <failed> <body bytes> <seconds> */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <nghttp3/nghttp3.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#define MAX_DATAGRAM 1452

typedef struct req {
    const char *path;
    int index;     /* its place among all requests (a reconnection takes a subset) */
    bool rejected; /* H3_REQUEST_REJECTED: not processed, safe to send again */
    int64_t sid;
    int status;
    bool started, done, failed;
    bool reset_due; /* --reset-after: its stream is reset at the next write */
    uint64_t bytes, hash;
    char *body; /* with -o: the body, kept in order */
    size_t body_len, body_cap;
    size_t posted; /* request body bytes given */
} req;

typedef struct client {
    int fd;
    struct sockaddr_storage local, remote;
    socklen_t local_len, remote_len;
    ngtcp2_crypto_conn_ref ref;
    gnutls_certificate_credentials_t cred;
    gnutls_session_t tls;
    ngtcp2_conn *q;
    nghttp3_conn *h;
    ngtcp2_connection_close_error err;
    const char *authority, *method, *sni;
    const char *data; /* POST body */
    size_t data_len;
    const char *fields[8]; /* -H "name: value" */
    int nfields;
    uint64_t reset_after; /* --reset-after: 0 none */
    bool no_length;       /* --no-length: the body's length is not declared */
    req *reqs;
    int nreq, next, inflight, done, parallel;
    int nslots; /* entries of reqs: nreq, or -P with --load */
    /* --load: slots come back as their streams close; the paths in turn. */
    bool load;
    uint64_t load_end;
    int *free_slots, nfree;
    char **paths;
    int npaths;
    uint64_t load_ok, load_failed, load_bytes;
    bool show_fields, quiet, handshake, closed;
    bool goaway;   /* the server takes no new request: the rest are not sent */
    bool resuming; /* the session of an earlier connection is offered */
    /* --migrate / --nat-rebind: every rebind_every answers a new socket;
     * the next at rebind_at answers. ngtcp2 is told (the path's local
     * address is the new socket's) unless rebind_nat: then c->local stays
     * what it first was, as behind a NAT that changed the port. */
    int rebind_every, rebind_at, rebinds;
    bool rebind_nat;
    unsigned fd_port;    /* fd's local port */
    bool early;          /* --early: its requests go in 0-RTT, before the handshake ends */
    bool reconnect;      /* rejected requests are sent again elsewhere: not failures here */
    uint64_t pause_ns;   /* --pause: between an answer and the next request */
    uint64_t next_at;    /* no request before this (now_ns) */
    int64_t goaway_id;   /* the server's GOAWAY: streams from here were not processed */
    bool graceful_close; /* the server closed with H3_NO_ERROR */
    uint8_t tx[MAX_DATAGRAM];
    /* --gso: the run of one write_out, datagrams of gso_seg bytes (the last
     * may be shorter), sent as one UDP_SEGMENT sendmsg */
    bool gso;
    int gso_n;
    size_t gso_len, gso_seg;
    uint8_t gso_buf[65507];
} client;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * NGTCP2_SECONDS + (uint64_t)ts.tv_nsec;
}

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("h3get: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

static uint64_t fnv(uint64_t h, const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
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

/* --load: a free slot for the next request, on the next path. */
static req *load_slot(client *c) {
    req *r = &c->reqs[c->free_slots[--c->nfree]];
    *r = (req){.path = c->paths[c->next % c->npaths]};
    return r;
}

/* --load: a closed stream's slot, counted and given back. */
static void load_done(client *c, req *r) {
    if (r->done && !r->failed && r->status >= 200 && r->status < 300) {
        c->load_ok++;
        c->load_bytes += r->bytes;
    } else {
        c->load_failed++;
    }
    c->free_slots[c->nfree++] = (int)(r - c->reqs);
}

/* Opens streams for the next requests while the server's limit and -P allow. */
static void submit_more(client *c) {
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
        h[n++] = nv(":method", c->method, strlen(c->method));
        h[n++] = nv(":scheme", "https", 5);
        h[n++] = nv(":authority", c->authority, strlen(c->authority));
        h[n++] = nv(":path", r->path, strlen(r->path));
        h[n++] = nv("user-agent", "h3get", 5);
        if (c->data && !c->no_length)
            h[n++] = nv("content-length", len, strlen(len));
        for (int i = 0; i < c->nfields; i++) { /* "name: value", name lowercased by the caller */
            const char *f = c->fields[i], *colon = strchr(f, ':'), *v = colon + 1;
            while (*v == ' ')
                v++;
            h[n++] = (nghttp3_nv){(uint8_t *)f, (uint8_t *)v, (size_t)(colon - f), strlen(v),
                                  NGHTTP3_NV_FLAG_NONE};
        }
        nghttp3_data_reader dr = {read_post};
        int rc = nghttp3_conn_submit_request(c->h, sid, h, n, c->data ? &dr : NULL, r);
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
    else if (!c->quiet)
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

static int setup_h3(client *c) {
    nghttp3_callbacks cb = {
        .stream_close = h_stream_close,
        .recv_data = h_recv_data,
        .deferred_consume = h_deferred,
        .recv_header = h_recv_header,
        .recv_trailer = h_recv_header, /* printed alike with -i, after the body */
        .stop_sending = h_stop_sending,
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

static int early_rejected(client *c);

static int handshake_completed_cb(ngtcp2_conn *q, void *ud) {
    (void)q;
    client *c = ud;
    c->handshake = true;
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

static int path_validation_cb(ngtcp2_conn *q, uint32_t flags, const ngtcp2_path *path,
                              ngtcp2_path_validation_result res, void *ud) {
    (void)q;
    (void)flags;
    client *c = ud;
    const struct sockaddr *a = path->local.addr;
    unsigned port = ntohs(a->sa_family == AF_INET6 ? ((const struct sockaddr_in6 *)a)->sin6_port
                                                   : ((const struct sockaddr_in *)a)->sin_port);
    if (!c->quiet)
        printf("path %u %s\n", port,
               res == NGTCP2_PATH_VALIDATION_RESULT_SUCCESS   ? "validated"
               : res == NGTCP2_PATH_VALIDATION_RESULT_FAILURE ? "failed"
                                                              : "aborted");
    return 0;
}

/* ---- 0-RTT (--early) ------------------------------------------------------------ */

/* Before the handshake: HTTP/3 and the requests on the transport
 * parameters the first connection's server gave, written as 0-RTT when the
 * ticket allows it (else they wait for 1-RTT and are sent again). */
static int early_start(client *c, const ngtcp2_transport_params *tp) {
    ngtcp2_conn_set_early_remote_transport_params(c->q, tp);
    if (setup_h3(c) != 0)
        return -1;
    submit_more(c);
    return 0;
}

/* The server did not take them: ngtcp2 forgets the streams, and the
 * requests start again on a new HTTP/3 session after the handshake. */
static int early_rejected(client *c) {
    nghttp3_conn_del(c->h);
    c->h = NULL; /* the streams' closes below reach no request */
    if (ngtcp2_conn_early_data_rejected(c->q) != 0)
        return -1;
    for (int i = 0; i < c->next; i++) {
        req *r = &c->reqs[i];
        r->started = false;
        r->sid = -1;
        r->posted = 0;
    }
    c->next = c->inflight = 0;
    return 0;
}

static ngtcp2_conn *get_conn(ngtcp2_crypto_conn_ref *ref) {
    return ((client *)ref->user_data)->q;
}

/* ---- the connection ------------------------------------------------------------ */

static const char PRIORITY[] =
    "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:"
    "+CHACHA20-POLY1305:+AES-128-CCM:-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:"
    "+GROUP-SECP384R1:+GROUP-SECP521R1:%DISABLE_TLS13_COMPAT_MODE";

static void tls_init(client *c, bool insecure, const char *cafile, const gnutls_datum_t *resume) {
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
    if (!insecure)
        gnutls_session_set_verify_cert(c->tls, c->sni, 0);
    if (resume && gnutls_session_set_data(c->tls, resume->data, resume->size) != 0)
        die("the saved session is not usable");
    c->resuming = resume != NULL;
    c->ref.get_conn = get_conn;
    c->ref.user_data = c;
    gnutls_session_set_ptr(c->tls, &c->ref);
}

static void quic_init(client *c) {
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

static void usage(void) {
    fprintf(stderr,
            "usage: h3get [options] HOST:PORT PATH...\n"
            "  -n N            each path N times (1)\n"
            "  -P N            at most N requests at once (all)\n"
            "  -X METHOD       the method (GET; POST with -d)\n"
            "  -d FILE         send FILE as the request body\n"
            "  --no-length     ... without a content-length\n"
            "  -o FILE         write every answer's body to FILE\n"
            "  -i              print the answers' fields\n"
            "  -H 'NAME: VALUE' a request field (NAME lowercase; up to 8)\n"
            "  --reset-after N reset each request once N bytes of its answer came\n"
            "  -k, --insecure  do not verify the server's certificate\n"
            "  --cacert FILE   trust the certificates in FILE (default: the system's)\n"
            "  --sni NAME      the server name (default: HOST; localhost for an address)\n"
            "  --resume H:P    then the same requests on a second connection to H:P,\n"
            "                  offering the first one's TLS session (\"resumed 0|1\")\n"
            "  --resume-sni N  with --resume: the second connection's server name (--sni's)\n"
            "  --resume-after F  with --resume: the second connection once file F exists\n"
            "                  (within -t), the first one's answers printed first\n"
            "  --early         with --resume: the second connection's requests in 0-RTT\n"
            "                  (\"early 0|1\": whether the server took them; if not, they\n"
            "                  are sent again after the handshake)\n"
            "  -t SECONDS      give up after SECONDS (10)\n"
            "  --migrate N     after every N answers a new local port, migrated to\n"
            "  --nat-rebind N  after every N answers a new local port, ngtcp2 not told\n"
            "  --pause MS      one request at a time, MS after each answer\n"
            "  --reconnect     what a GOAWAY left unsent goes on a new connection\n"
            "  -q              no line per answer\n"
            "  --gso           send back-to-back packets as UDP GSO sends\n"
            "  --load SECONDS  a load: -P at a time until -n each or SECONDS, then\n"
            "                  \"load <2xx> <failed> <body bytes> <seconds>\"\n");
    exit(2);
}

/* --resume-after: a test changes the server between the two connections. */
static void wait_for(const char *path, double timeout) {
    fflush(stdout);
    uint64_t until = now_ns() + (uint64_t)(timeout * 1e9);
    struct stat sb;
    while (stat(path, &sb) != 0) {
        if (now_ns() >= until)
            die("%s: not there within %g s", path, timeout);
        poll(NULL, 0, 20);
    }
}

static char *read_file(const char *path, size_t *len) {
    int fd = open(path, O_RDONLY);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0)
        die("%s: %s", path, strerror(errno));
    char *p = malloc((size_t)sb.st_size + 1);
    size_t have = 0;
    while (p && have < (size_t)sb.st_size) {
        ssize_t n = read(fd, p + have, (size_t)sb.st_size - have);
        if (n <= 0)
            die("%s: short read", path);
        have += (size_t)n;
    }
    close(fd);
    if (!p)
        die("out of memory");
    *len = have;
    return p;
}

/* HOST:PORT (or [V6]:PORT) into its address; *host is the host part, in
 * hostport itself. */
static struct addrinfo *resolve(char *hostport, char **host) {
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

static unsigned port_of(const struct sockaddr_storage *a) {
    return ntohs(a->ss_family == AF_INET6 ? ((const struct sockaddr_in6 *)a)->sin6_port
                                          : ((const struct sockaddr_in *)a)->sin_port);
}

static void connect_to(client *c, struct addrinfo *ai) {
    c->fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0 || connect(c->fd, ai->ai_addr, ai->ai_addrlen) != 0)
        die("connect: %s", strerror(errno));
    memcpy(&c->remote, ai->ai_addr, ai->ai_addrlen);
    c->remote_len = ai->ai_addrlen;
    c->local_len = sizeof(c->local);
    getsockname(c->fd, (struct sockaddr *)&c->local, &c->local_len);
    c->fd_port = port_of(&c->local);
}

/* A new socket to the server in place of the old one (closed: what the
 * server still sends there is lost, and QUIC recovers it). A migration
 * waits while ngtcp2 cannot start one yet (the handshake not confirmed, no
 * spare connection ID of the server's): the next turn tries again. */
static void rebind(client *c) {
    int fd = socket(c->remote.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&c->remote, c->remote_len) != 0)
        die("rebind: %s", strerror(errno));
    struct sockaddr_storage local;
    socklen_t local_len = sizeof(local);
    if (getsockname(fd, (struct sockaddr *)&local, &local_len) != 0)
        die("rebind: getsockname: %s", strerror(errno));
    if (!c->rebind_nat) {
        ngtcp2_path path = {{(struct sockaddr *)&local, local_len},
                            {(struct sockaddr *)&c->remote, c->remote_len},
                            NULL};
        int rc = ngtcp2_conn_initiate_immediate_migration(c->q, &path, now_ns());
        if (rc == NGTCP2_ERR_INVALID_STATE || rc == NGTCP2_ERR_CONN_ID_BLOCKED) {
            close(fd);
            return;
        }
        if (rc != 0)
            die("ngtcp2_conn_initiate_immediate_migration: %s", ngtcp2_strerror(rc));
        memcpy(&c->local, &local, local_len);
        c->local_len = local_len;
    }
    close(c->fd);
    c->fd = fd;
    c->rebinds++;
    c->rebind_at += c->rebind_every;
    if (!c->quiet)
        printf("rebind %d %u %u\n", c->rebinds, c->fd_port, port_of(&local));
    c->fd_port = port_of(&local);
}

static void requests_init(client *c, char **paths, int npaths, int repeat, bool keep) {
    c->nreq = npaths * repeat;
    c->nslots = c->nreq;
    if (c->load) { /* -P slots, reused */
        c->nslots = c->parallel < c->nreq ? c->parallel : c->nreq;
        c->paths = paths;
        c->npaths = npaths;
        c->free_slots = calloc((size_t)c->nslots, sizeof(*c->free_slots));
        if (!c->free_slots)
            die("out of memory");
        for (int i = c->nslots; i-- > 0;)
            c->free_slots[c->nfree++] = i;
    }
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
static int run(client *c, double timeout) {
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

static void conn_free(client *c) {
    if (c->h)
        nghttp3_conn_del(c->h);
    ngtcp2_conn_del(c->q);
    gnutls_deinit(c->tls);
    gnutls_certificate_free_credentials(c->cred);
    for (int i = 0; i < c->nslots; i++)
        free(c->reqs[i].body);
    free(c->reqs);
    free(c->free_slots);
    close(c->fd);
}

/* --reconnect: the requests the server's GOAWAY left unsent or rejected
 * (not processed: RFC 9114 5.2) on a new connection, their answers back in
 * c's table; after a graceful close (H3_NO_ERROR, or APPLICATION_ERROR
 * before the handshake was confirmed) without a GOAWAY, GET and HEAD ones
 * in flight too, as idempotent requests may be (RFC 9110 9.2.2).
 * The other requests must all have been answered: one that failed
 * otherwise is no reason to send anything again. 0 when every request of c
 * is answered now, else run()'s. */
static int reconnect(client *c, struct addrinfo *ai, bool insecure, const char *cafile,
                     double timeout) {
    int left = 0;
    bool idempotent = strcmp(c->method, "GET") == 0 || strcmp(c->method, "HEAD") == 0;
    for (int i = 0; i < c->nreq; i++) {
        const req *r = &c->reqs[i];
        bool unprocessed = r->rejected || (c->goaway && r->sid >= c->goaway_id) ||
                           (c->graceful_close && idempotent);
        if (r->failed || (r->started && !r->done && !unprocessed))
            return 1;
        left += !r->done;
    }
    if (!(c->goaway || c->graceful_close) || !left)
        return left ? 1 : 0;
    client n = {.method = c->method,
                .parallel = c->parallel,
                .authority = c->authority,
                .sni = c->sni,
                .data = c->data,
                .data_len = c->data_len,
                .show_fields = c->show_fields,
                .quiet = c->quiet,
                .reconnect = true,
                .pause_ns = c->pause_ns,
                .nreq = left};
    if (!(n.reqs = calloc((size_t)left, sizeof(*n.reqs))))
        die("out of memory");
    for (int i = 0, j = 0; i < c->nreq; i++)
        if (!c->reqs[i].done)
            n.reqs[j++] = (req){.path = c->reqs[i].path,
                                .index = c->reqs[i].index,
                                .hash = 14695981039346656037ull,
                                .body_cap = c->reqs[i].body_cap};
    for (int j = 0; j < left; j++)
        if (n.reqs[j].body_cap && !(n.reqs[j].body = malloc(n.reqs[j].body_cap)))
            die("out of memory");
    if (!c->quiet)
        printf("reconnect %d\n", left);
    connect_to(&n, ai);
    ngtcp2_connection_close_error_default(&n.err);
    tls_init(&n, insecure, cafile, NULL);
    quic_init(&n);
    int rc = run(&n, timeout);
    for (int j = 0; j < left; j++) {
        req *to = &c->reqs[n.reqs[j].index], *from = &n.reqs[j];
        free(to->body);
        *to = *from;
        from->body = NULL;
    }
    c->goaway = n.goaway;
    c->goaway_id = n.goaway_id;
    c->graceful_close = n.graceful_close;
    conn_free(&n);
    return rc;
}

int main(int argc, char **argv) {
    client c = {.method = NULL, .parallel = 1 << 30};
    int repeat = 1;
    bool insecure = false;
    const char *cafile = NULL, *out = NULL, *datafile = NULL, *sni = NULL;
    char *resume = NULL;
    const char *resume_sni = NULL, *resume_after = NULL;
    bool early = false;
    double timeout = 10, load_s = 0;
    static const struct option longs[] = {{"insecure", no_argument, NULL, 'k'},
                                          {"cacert", required_argument, NULL, 'C'},
                                          {"sni", required_argument, NULL, 'S'},
                                          {"resume", required_argument, NULL, 'R'},
                                          {"migrate", required_argument, NULL, 'M'},
                                          {"nat-rebind", required_argument, NULL, 'B'},
                                          {"early", no_argument, NULL, 'E'},
                                          {"resume-sni", required_argument, NULL, 'N'},
                                          {"resume-after", required_argument, NULL, 'A'},
                                          {"pause", required_argument, NULL, 'W'},
                                          {"reconnect", no_argument, NULL, 'Y'},
                                          {"reset-after", required_argument, NULL, 'Z'},
                                          {"no-length", no_argument, NULL, 'L'},
                                          {"load", required_argument, NULL, 'G'},
                                          {"gso", no_argument, NULL, 'O'},
                                          {NULL, 0, NULL, 0}};
    /* A line at a time: a test that takes stdout and stderr in one file
     * gets whole lines, never one cut by the other. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    int opt;
    while ((opt = getopt_long(argc, argv, "n:P:X:d:o:ikt:qH:", longs, NULL)) != -1) {
        switch (opt) {
        case 'n':
            repeat = atoi(optarg);
            break;
        case 'P':
            c.parallel = atoi(optarg);
            break;
        case 'X':
            c.method = optarg;
            break;
        case 'd':
            datafile = optarg;
            break;
        case 'o':
            out = optarg;
            break;
        case 'i':
            c.show_fields = true;
            break;
        case 'k':
            insecure = true;
            break;
        case 'C':
            cafile = optarg;
            break;
        case 'S':
            sni = optarg;
            break;
        case 'R':
            resume = optarg;
            break;
        case 'M':
        case 'B':
            c.rebind_every = atoi(optarg);
            c.rebind_at = c.rebind_every;
            c.rebind_nat = opt == 'B';
            if (c.rebind_every < 1)
                usage();
            break;
        case 'E':
            early = true;
            break;
        case 'N':
            resume_sni = optarg;
            break;
        case 'A':
            resume_after = optarg;
            break;
        case 't':
            timeout = atof(optarg);
            break;
        case 'W':
            c.pause_ns = (uint64_t)atoi(optarg) * 1000000u;
            c.parallel = 1;
            break;
        case 'Y':
            c.reconnect = true;
            break;
        case 'q':
            c.quiet = true;
            break;
        case 'H':
            if (c.nfields == 8 || !strchr(optarg, ':'))
                usage();
            c.fields[c.nfields++] = optarg;
            break;
        case 'Z':
            c.reset_after = strtoull(optarg, NULL, 10);
            break;
        case 'L':
            c.no_length = true;
            break;
        case 'O':
            c.gso = true;
            break;
        case 'G':
            load_s = atof(optarg);
            c.load = c.quiet = true;
            break;
        default:
            usage();
        }
    }
    if (argc - optind < 2 || repeat < 1 || c.parallel < 1 || timeout <= 0 ||
        ((early || resume_sni || resume_after) && !resume))
        usage();
    if (c.load && (load_s <= 0 || out || resume || c.show_fields || c.reconnect))
        die("--load takes a duration above 0, and none of -o, -i, --resume, --reconnect");
    char *hostport = argv[optind++], *host;
    c.authority = strdup(hostport);
    struct addrinfo *ai = resolve(hostport, &host);
    unsigned char probe[16];
    bool numeric = inet_pton(AF_INET, host, probe) == 1 || inet_pton(AF_INET6, host, probe) == 1;
    c.sni = sni ? sni : numeric ? "localhost" : host;
    if (datafile) {
        c.data = read_file(datafile, &c.data_len);
        if (!c.method)
            c.method = "POST";
    }
    if (!c.method)
        c.method = "GET";
    requests_init(&c, argv + optind, argc - optind, repeat, out != NULL);
    connect_to(&c, ai);
    ngtcp2_connection_close_error_default(&c.err);
    tls_init(&c, insecure, cafile, NULL);
    if (c.load) {
        /* A load takes the server's bursts whole: the default queue (208 KiB
         * here) holds some 70 full datagrams, and each overflow is a loss
         * that shrinks the server's congestion window. Up to rmem_max. */
        int rcvbuf = 4 << 20;
        setsockopt(c.fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    }
    quic_init(&c);
    uint64_t t0 = now_ns();
    c.load_end = t0 + (uint64_t)(load_s * 1e9);
    int rc = run(&c, timeout);
    for (int round = 0; rc == 1 && c.reconnect && round < 8; round++)
        rc = reconnect(&c, ai, insecure, cafile, timeout);
    freeaddrinfo(ai);
    if (c.load)
        printf("load %" PRIu64 " %" PRIu64 " %" PRIu64 " %.3f\n", c.load_ok, c.load_failed,
               c.load_bytes, (double)(now_ns() - t0) / 1e9);
    if (out) {
        FILE *f = fopen(out, "wb");
        if (!f)
            die("%s: %s", out, strerror(errno));
        for (int i = 0; i < c.nreq; i++)
            fwrite(c.reqs[i].body, 1, c.reqs[i].body_len, f);
        fclose(f);
    }
    if (resume && rc == 0) {
        /* The ticket the server sent after its handshake, offered to the
         * second address (another loop's endpoint, say). */
        gnutls_datum_t session = {NULL, 0};
        if (gnutls_session_get_data2(c.tls, &session) != 0)
            die("no session to resume");
        /* What 0-RTT may count on: the first server's transport parameters. */
        ngtcp2_transport_params tp = *ngtcp2_conn_get_remote_transport_params(c.q);
        if (resume_after)
            wait_for(resume_after, timeout);
        client c2 = {.method = c.method,
                     .parallel = c.parallel,
                     .authority = c.authority,
                     .sni = resume_sni ? resume_sni : c.sni,
                     .data = c.data,
                     .data_len = c.data_len,
                     .show_fields = c.show_fields,
                     .quiet = c.quiet,
                     .early = early};
        conn_free(&c);
        struct addrinfo *ai2 = resolve(resume, &host);
        requests_init(&c2, argv + optind, argc - optind, repeat, false);
        connect_to(&c2, ai2);
        freeaddrinfo(ai2);
        ngtcp2_connection_close_error_default(&c2.err);
        tls_init(&c2, insecure, cafile, &session);
        gnutls_free(session.data);
        quic_init(&c2);
        if (early && early_start(&c2, &tp) != 0)
            die("cannot make the 0-RTT requests");
        rc = run(&c2, timeout);
        conn_free(&c2);
    } else {
        conn_free(&c);
    }
    free((void *)c.data);
    free((void *)c.authority);
    return rc;
}
