/* h3get's parts, shared between its files only: h3get.c (the options and
 * the run of a command line), h3get_conn.c (one connection: its requests,
 * the QUIC and HTTP/3 callbacks, packets in and out), h3get_load.c (--load),
 * h3get_early.c (0-RTT, --early), h3get_migrate.c (--migrate and
 * --nat-rebind), h3get_resume.c (--resume and --reconnect: a second
 * connection) and h3get_ws.c (--ws: WebSocket tunnels). */
#ifndef H3GET_H
#define H3GET_H

#define _GNU_SOURCE
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>

#include <gnutls/gnutls.h>
#include <nghttp3/nghttp3.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>

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
    size_t posted;        /* request body bytes given */
    struct ws_tunnel *ws; /* --ws: its tunnel's state (h3get_ws.c) */
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
    /* --ws: the sizes of the messages each tunnel sends, its :protocol,
     * who closes; the messages go once every tunnel has its answer. */
    size_t *ws_msg;
    int ws_nmsg, ws_heads;
    const char *ws_protocol;
    bool ws_server_close, ws_open;
    const char *ocsp_out; /* --ocsp-out: the stapled OCSP response, written there */
    uint8_t tx[MAX_DATAGRAM];
    /* --gso: the run of one write_out, datagrams of gso_seg bytes (the last
     * may be shorter), sent as one UDP_SEGMENT sendmsg */
    bool gso;
    int gso_n;
    size_t gso_len, gso_seg;
    uint8_t gso_buf[65507];
} client;

static inline uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * NGTCP2_SECONDS + (uint64_t)ts.tv_nsec;
}

static inline uint64_t fnv(uint64_t h, const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* h3get.c */
/* A usage error: the usage on stderr, exit 2. */
_Noreturn void usage(void);

/* h3get_conn.c */
/* An error of the command (exit 2), its message on stderr. */
_Noreturn void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* HOST:PORT (or [V6]:PORT) into its address; *host is the host part, in
 * hostport itself. */
struct addrinfo *resolve(char *hostport, char **host);
void connect_to(client *c, struct addrinfo *ai);
void tls_init(client *c, bool insecure, const char *cafile, const gnutls_datum_t *resume);
void quic_init(client *c);
/* HTTP/3 on the connection: its control and QPACK streams. */
int setup_h3(client *c);
/* Opens streams for the next requests while the server's limit and -P allow. */
void submit_more(client *c);
void requests_init(client *c, char **paths, int npaths, int repeat, bool keep);
/* The connection's life: 0 when every request was answered, 1 when not,
 * 3 on the timeout. */
int run(client *c, double timeout);
void conn_free(client *c);

/* h3get_load.c */
/* -P request slots, reused, the paths in turn. */
void load_init(client *c, char **paths, int npaths);
req *load_slot(client *c);
void load_done(client *c, req *r);

/* h3get_early.c */
int early_start(client *c, const ngtcp2_transport_params *tp);
int early_rejected(client *c);

/* h3get_migrate.c */
unsigned port_of(const struct sockaddr_storage *a);
int path_validation_cb(ngtcp2_conn *q, uint32_t flags, const ngtcp2_path *path,
                       ngtcp2_path_validation_result res, void *ud);
void rebind(client *c);

/* h3get_resume.c */
/* --resume-after: a test changes the server between the two connections. */
void wait_for(const char *path, double timeout);
int reconnect(client *c, struct addrinfo *ai, bool insecure, const char *cafile, double timeout);
/* --resume: the same requests on a second connection to another address,
 * offering the TLS session of the first, c (freed here). run()'s result. */
typedef struct resume_args {
    char *hostport;
    const char *sni, *after; /* --resume-sni, --resume-after */
    bool early;
    char **paths;
    int npaths, repeat;
    bool insecure;
    const char *cafile;
    double timeout;
} resume_args;
int resume_run(client *c, const resume_args *a);

/* h3get_ws.c */
/* SIZES ("5,1048576") into c's messages. */
void ws_parse_sizes(client *c, const char *list);
/* r's extended CONNECT into h (6 fields): how many; r gets its tunnel. */
int ws_head(client *c, req *r, nghttp3_nv *h);
/* The tunnel's data reader: its messages, its close frame, its FIN. */
nghttp3_ssize ws_read(nghttp3_conn *h, int64_t sid, nghttp3_vec *vec, size_t veccnt,
                      uint32_t *flags, void *ud, void *sud);
/* The tunnel's answer came (r->status). */
void ws_head_done(client *c, req *r);
/* Bytes of the tunnel from the server. */
void ws_recv(client *c, req *r, const uint8_t *data, size_t len);
/* Its stream closed: its line printed (true) or left to the usual one. */
bool ws_closed(client *c, req *r);
void ws_free(req *r);

#endif
