/* HTTP/2 against a real scalwsd server started in this process (one loop on
 * 127.0.0.1, port 0; the respond scenario by default and the static one under
 * /files/), spoken to over loopback by two kinds of client:
 *  - an nghttp2 client session (nghttp2_session_client_new) for what a
 *    well-behaved client does (SETTINGS, GET, HEAD, many streams, a tiny
 *    window, Range and If-None-Match, the request limits, the drain);
 *  - raw frames built by hand (HPACK from nghttp2's deflater, or by hand)
 *    for what no well-behaved client sends: malformed requests, floods,
 *    CONTINUATION without end, an HPACK bomb.
 * Every wait is bounded (WAIT_MS); the server's counters are read in
 * process (the same ones /metrics prints). The config sets each bound of
 * [http2] below the library's own default, so that a case fails when the
 * server does not pass its bound to the library (or does not apply it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka.h needs the four headers above first. */
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>

#include "sws.h"

#define WAIT_MS 5000
#define BIG_SIZE (1024 * 1024 + 123) /* the static file: more than one window, odd */
#define SMALL_SIZE 1000              /* www/small.bin: BIG_SIZE's first bytes */
#define MID_SIZE 12000               /* www/mid.bin: too large for a small buffer */
/* The bounds of the config below: each under the library's default (reset
 * burst 1000, max_outbound_ack 1000, continuations 8), so that a case can
 * tell the server's bound from the library's. */
#define RESET_BURST 50
#define GLITCH_BURST 50
#define MAX_ACKS 100
#define MAX_CONTINUATIONS 4

/* ---- the server, in this process --------------------------------------------- */

static char g_dir[256];
static sws_config g_cfg;
static sws_server g_srv;
static bool g_up;
static int g_done; /* worker threads that have finished */
static struct sockaddr_in g_addr;
static unsigned char *g_big; /* BIG_SIZE bytes, as written to www/big.bin */

static void reload_none(sws_worker *w, uint64_t value) {
    (void)w;
    (void)value;
}

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

#define CTR(field) SWS_GET(g_srv.workers[0].ctr.field)

static int server_start(void **state) {
    (void)state;
    const char *tmp = getenv("SWS_TEST_TMP");
    snprintf(g_dir, sizeof(g_dir), "%s/h2test.XXXXXX", tmp ? tmp : "/tmp");
    if (!mkdtemp(g_dir))
        return -1;
    char path[512], ini[4096];
    snprintf(path, sizeof(path), "%s/www", g_dir);
    mkdir(path, 0755);
    if (!g_big) {
        g_big = malloc(BIG_SIZE);
        uint32_t x = 2463534242u;
        for (size_t i = 0; i < BIG_SIZE; i++) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            g_big[i] = (unsigned char)x;
        }
    }
    snprintf(path, sizeof(path), "%s/www/big.bin", g_dir);
    write_file(path, g_big, BIG_SIZE);
    snprintf(path, sizeof(path), "%s/www/small.bin", g_dir);
    write_file(path, g_big, SMALL_SIZE);
    snprintf(path, sizeof(path), "%s/www/mid.bin", g_dir);
    write_file(path, g_big, MID_SIZE);
    snprintf(ini, sizeof(ini),
             "[server]\n"
             "listen = 127.0.0.1:0\n"
             "event_loops = 1\n"
             "scenario = respond\n"
             "drain_idle_grace = 300ms\n"
             "drain_timeout = 10s\n"
             "[http2]\n"
             "reset_burst = %d\n"
             "reset_rate = 1\n"
             "glitch_burst = %d\n"
             "glitch_rate = 1\n"
             "max_queued_acks = %d\n"
             "max_continuations = %d\n"
             "[route files]\n"
             "path_prefix = /files/\n"
             "strip_prefix = on\n"
             "scenario = static\n"
             "root = %s/www\n",
             RESET_BURST, GLITCH_BURST, MAX_ACKS, MAX_CONTINUATIONS, g_dir);
    snprintf(path, sizeof(path), "%s/h2.ini", g_dir);
    write_file(path, ini, strlen(ini));
    char err[512];
    const sws_cli cli = {.config = path};
    memset(&g_cfg, 0, sizeof(g_cfg));
    if (sws_config_build(&g_cfg, &cli, err, sizeof(err)) < 0) {
        fprintf(stderr, "test_h2: config: %s\n", err);
        return -1;
    }
    memset(&g_srv, 0, sizeof(g_srv));
    g_srv.reload_apply = reload_none;
    if (sws_server_start(&g_srv, &g_cfg, err, sizeof(err)) < 0) {
        fprintf(stderr, "test_h2: start: %s\n", err);
        return -1;
    }
    g_up = true;
    g_done = 0;
    const char *colon = strrchr(g_srv.listen_text, ':');
    if (!colon)
        return -1;
    memset(&g_addr, 0, sizeof(g_addr));
    g_addr.sin_family = AF_INET;
    g_addr.sin_port = htons((uint16_t)atoi(colon + 1));
    g_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return 0;
}

/* Waits until every worker thread has finished (the drain's end), at most
 * ms; true if they have. */
static bool server_wait_done(int ms) {
    uint64_t end = now_ms() + (uint64_t)ms;
    while (g_done < g_srv.nthreads) {
        uint64_t now = now_ms();
        if (now >= end)
            return false;
        struct pollfd p = {.fd = g_srv.done_fd, .events = POLLIN};
        if (poll(&p, 1, (int)(end - now)) > 0) {
            uint64_t k;
            if (read(g_srv.done_fd, &k, sizeof(k)) == (ssize_t)sizeof(k))
                g_done += (int)k;
        }
    }
    return true;
}

static int server_stop(void **state) {
    (void)state;
    if (!g_up)
        return 0;
    if (atomic_load(&g_srv.drain) == 0)
        sws_drain_begin(&g_srv);
    if (!server_wait_done(12000)) {
        sws_drain_force(&g_srv);
        if (!server_wait_done(5000)) {
            fprintf(stderr, "test_h2: the server did not stop\n");
            abort();
        }
    }
    sws_server_free(&g_srv);
    sws_config_release(&g_cfg);
    g_up = false;
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "test_h2: could not remove %s\n", g_dir);
    return 0;
}

static int connect_server(void) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    assert_int_equal(connect(fd, (struct sockaddr *)&g_addr, sizeof(g_addr)), 0);
    return fd;
}

/* Writes all of p within the deadline (the socket may be full). 0, or -1. */
static int send_all(int fd, const uint8_t *p, size_t n, uint64_t deadline) {
    while (n) {
        ssize_t k = send(fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (k > 0) {
            p += k;
            n -= (size_t)k;
            continue;
        }
        if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return -1;
        uint64_t now = now_ms();
        if (now >= deadline)
            return -1;
        struct pollfd pf = {.fd = fd, .events = POLLOUT};
        poll(&pf, 1, (int)(deadline - now));
    }
    return 0;
}

/* ---- the nghttp2 client ---------------------------------------------------------- */

#define MAX_ST 512

typedef struct cst {
    int32_t id;
    int status;
    bool closed;
    uint32_t close_code;
    bool answered; /* the answer's END_STREAM came */
    bool rst;      /* an RST_STREAM came */
    uint32_t rst_code;
    uint32_t data_frames;
    uint32_t max_data; /* the longest DATA payload */
    size_t held;       /* bytes received and not yet consumed (hold_window) */
    char *body;
    size_t blen, bcap;
    char clen[32], date[64], server[64], crange[96], etag[128];
} cst;

typedef struct h2c {
    int fd;
    nghttp2_session *s;
    cst st[MAX_ST];
    int nst;
    int ngoaway;
    int32_t ga_last[4];
    uint32_t ga_code[4];
    bool eof;
    bool failed; /* mem_recv failed (the server broke the protocol) */
    bool settings;
    uint32_t set_mcs, set_iws, set_norfc, set_mhls;
    bool manual_window; /* no automatic WINDOW_UPDATE: consume() */
    bool hold_window;   /* manual, and nothing consumed yet */
} h2c;

static cst *cst_of(h2c *c, int32_t id) {
    for (int i = 0; i < c->nst; i++)
        if (c->st[i].id == id)
            return &c->st[i];
    assert_true(c->nst < MAX_ST);
    cst *s = &c->st[c->nst++];
    memset(s, 0, sizeof(*s));
    s->id = id;
    return s;
}

static void copy_val(char *dst, size_t cap, const uint8_t *v, size_t vl) {
    size_t k = vl < cap - 1 ? vl : cap - 1;
    memcpy(dst, v, k);
    dst[k] = 0;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name, size_t nl,
                     const uint8_t *value, size_t vl, uint8_t flags, void *ud) {
    (void)s;
    (void)flags;
    h2c *c = ud;
    if (f->hd.type != NGHTTP2_HEADERS)
        return 0;
    cst *st = cst_of(c, f->hd.stream_id);
#define NAMEIS(lit) (nl == sizeof(lit) - 1 && memcmp(name, lit, nl) == 0)
    if (NAMEIS(":status")) {
        char b[8];
        copy_val(b, sizeof(b), value, vl);
        int code = atoi(b);
        if (code >= 200 || st->status == 0)
            st->status = code; /* a 100 is followed by the final status */
    } else if (NAMEIS("content-length"))
        copy_val(st->clen, sizeof(st->clen), value, vl);
    else if (NAMEIS("date"))
        copy_val(st->date, sizeof(st->date), value, vl);
    else if (NAMEIS("server"))
        copy_val(st->server, sizeof(st->server), value, vl);
    else if (NAMEIS("content-range"))
        copy_val(st->crange, sizeof(st->crange), value, vl);
    else if (NAMEIS("etag"))
        copy_val(st->etag, sizeof(st->etag), value, vl);
#undef NAMEIS
    return 0;
}

static int on_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
                   void *ud) {
    (void)flags;
    h2c *c = ud;
    cst *st = cst_of(c, id);
    if (st->blen + len > st->bcap) {
        size_t cap = st->bcap ? st->bcap : 4096;
        while (cap < st->blen + len)
            cap *= 2;
        st->body = realloc(st->body, cap);
        assert_non_null(st->body);
        st->bcap = cap;
    }
    memcpy(st->body + st->blen, data, len);
    st->blen += len;
    if (c->manual_window) {
        if (c->hold_window)
            st->held += len;
        else
            nghttp2_session_consume(s, id, len);
    }
    return 0;
}

static int on_frame(nghttp2_session *s, const nghttp2_frame *f, void *ud) {
    (void)s;
    h2c *c = ud;
    if ((f->hd.type == NGHTTP2_DATA || f->hd.type == NGHTTP2_HEADERS) &&
        (f->hd.flags & NGHTTP2_FLAG_END_STREAM))
        cst_of(c, f->hd.stream_id)->answered = true;
    switch (f->hd.type) {
    case NGHTTP2_DATA: {
        cst *st = cst_of(c, f->hd.stream_id);
        st->data_frames++;
        uint32_t payload = (uint32_t)f->hd.length;
        if (payload > st->max_data)
            st->max_data = payload;
        break;
    }
    case NGHTTP2_SETTINGS:
        if (f->hd.flags & NGHTTP2_FLAG_ACK)
            break;
        c->settings = true;
        for (size_t i = 0; i < f->settings.niv; i++) {
            const nghttp2_settings_entry *e = &f->settings.iv[i];
            if (e->settings_id == NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
                c->set_mcs = e->value;
            else if (e->settings_id == NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE)
                c->set_iws = e->value;
            else if (e->settings_id == NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES)
                c->set_norfc = e->value;
            else if (e->settings_id == NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE)
                c->set_mhls = e->value;
        }
        break;
    case NGHTTP2_GOAWAY:
        if (c->ngoaway < 4) {
            c->ga_last[c->ngoaway] = f->goaway.last_stream_id;
            c->ga_code[c->ngoaway] = f->goaway.error_code;
        }
        c->ngoaway++;
        break;
    case NGHTTP2_RST_STREAM: {
        cst *st = cst_of(c, f->hd.stream_id);
        st->rst = true;
        st->rst_code = f->rst_stream.error_code;
        break;
    }
    default:
        break;
    }
    return 0;
}

static int on_close(nghttp2_session *s, int32_t id, uint32_t code, void *ud) {
    (void)s;
    h2c *c = ud;
    cst *st = cst_of(c, id);
    st->closed = true;
    st->close_code = code;
    return 0;
}

/* A client session on a new connection: our SETTINGS (iv) go out with the
 * first pump. */
static h2c *h2c_open(const nghttp2_settings_entry *iv, size_t niv, bool manual_window) {
    h2c *c = calloc(1, sizeof(*c));
    assert_non_null(c);
    c->fd = connect_server();
    c->manual_window = manual_window;
    nghttp2_session_callbacks *cb;
    assert_int_equal(nghttp2_session_callbacks_new(&cb), 0);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_close);
    nghttp2_option *o;
    assert_int_equal(nghttp2_option_new(&o), 0);
    if (manual_window)
        nghttp2_option_set_no_auto_window_update(o, 1);
    assert_int_equal(nghttp2_session_client_new2(&c->s, cb, c, o), 0);
    nghttp2_option_del(o);
    nghttp2_session_callbacks_del(cb);
    assert_int_equal(nghttp2_submit_settings(c->s, NGHTTP2_FLAG_NONE, iv, niv), 0);
    return c;
}

static void h2c_close(h2c *c) {
    for (int i = 0; i < c->nst; i++)
        free(c->st[i].body);
    nghttp2_session_del(c->s);
    close(c->fd);
    free(c);
}

typedef bool (*h2c_cond)(h2c *c, void *arg);

/* Sends what the session has and reads the server until cond holds, the
 * connection ends, or ms pass. true when cond held. */
static bool h2c_run(h2c *c, h2c_cond cond, void *arg, int ms) {
    uint64_t end = now_ms() + (uint64_t)ms;
    static uint8_t buf[65536];
    for (;;) {
        while (!c->failed && nghttp2_session_want_write(c->s)) {
            const uint8_t *p;
            ssize_t n = nghttp2_session_mem_send(c->s, &p);
            if (n <= 0)
                break;
            if (send_all(c->fd, p, (size_t)n, end) < 0) {
                c->eof = true; /* the server is gone */
                break;
            }
        }
        if (cond && cond(c, arg))
            return true;
        if (c->eof || c->failed)
            return false;
        uint64_t now = now_ms();
        if (now >= end)
            return false;
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        if (poll(&p, 1, (int)(end - now)) <= 0)
            continue;
        ssize_t n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n <= 0) {
            c->eof = true;
            continue; /* cond may hold now */
        }
        if (nghttp2_session_mem_recv(c->s, buf, (size_t)n) < 0)
            c->failed = true;
    }
}

static bool stream_closed(h2c *c, void *arg) {
    int32_t id = *(int32_t *)arg;
    for (int i = 0; i < c->nst; i++)
        if (c->st[i].id == id)
            return c->st[i].closed;
    return false;
}

static bool stream_answered(h2c *c, void *arg) {
    int32_t id = *(int32_t *)arg;
    for (int i = 0; i < c->nst; i++)
        if (c->st[i].id == id)
            return c->st[i].answered || c->st[i].closed;
    return false;
}

struct got_arg {
    int32_t id;
    size_t bytes;
};

static bool got_bytes(h2c *c, void *arg) {
    const struct got_arg *a = arg;
    for (int i = 0; i < c->nst; i++)
        if (c->st[i].id == a->id)
            return c->st[i].blen >= a->bytes;
    return false;
}

static bool all_closed(h2c *c, void *arg) {
    int want = *(int *)arg, n = 0;
    for (int i = 0; i < c->nst; i++)
        n += c->st[i].closed;
    return n >= want;
}

static bool got_settings(h2c *c, void *arg) {
    (void)arg;
    return c->settings;
}

static bool goaways(h2c *c, void *arg) {
    return c->ngoaway >= *(int *)arg;
}

static bool ended(h2c *c, void *arg) {
    (void)arg;
    return c->eof;
}

#define NV(n, v)                                                                                   \
    { (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NONE }

/* Submits a request with the usual pseudo-fields and extra fields. */
static int32_t h2c_request(h2c *c, const char *method, const char *path, const nghttp2_nv *extra,
                           size_t nextra, const nghttp2_data_provider *body) {
    nghttp2_nv nva[64];
    size_t n = 0;
    nva[n++] = (nghttp2_nv)NV(":method", method);
    nva[n++] = (nghttp2_nv)NV(":scheme", "http");
    nva[n++] = (nghttp2_nv)NV(":authority", "localhost");
    nva[n++] =
        (nghttp2_nv){(uint8_t *)":path", (uint8_t *)path, 5, strlen(path), NGHTTP2_NV_FLAG_NONE};
    assert_true(n + nextra <= 64);
    for (size_t i = 0; i < nextra; i++)
        nva[n++] = extra[i];
    int32_t id = nghttp2_submit_request(c->s, NULL, nva, n, body, NULL);
    assert_true(id > 0);
    return id;
}

/* A request and its whole answer. */
static cst *h2c_fetch(h2c *c, const char *method, const char *path, const nghttp2_nv *extra,
                      size_t nextra) {
    int32_t id = h2c_request(c, method, path, extra, nextra, NULL);
    assert_true(h2c_run(c, stream_closed, &id, WAIT_MS));
    return cst_of(c, id);
}

/* ---- raw frames ------------------------------------------------------------------ */

typedef struct rst_info {
    int32_t id;
    int status;
    bool rst;
    uint32_t rst_code;
    bool end;
    size_t data;
} rst_info;

typedef struct raw {
    int fd;
    nghttp2_hd_deflater *def;
    nghttp2_hd_inflater *inf;
    uint8_t *in;
    size_t inlen, incap;
    bool eof;
    int frames[16];
    int ngoaway;
    int32_t ga_last;
    uint32_t ga_code;
    int ping_acks;
    bool settings;
    rst_info st[MAX_ST];
    int nst;
} raw;

static rst_info *rinfo(raw *r, int32_t id) {
    for (int i = 0; i < r->nst; i++)
        if (r->st[i].id == id)
            return &r->st[i];
    assert_true(r->nst < MAX_ST);
    rst_info *s = &r->st[r->nst++];
    memset(s, 0, sizeof(*s));
    s->id = id;
    return s;
}

static size_t frame_hd(uint8_t *o, size_t len, uint8_t type, uint8_t flags, int32_t id) {
    o[0] = (uint8_t)(len >> 16);
    o[1] = (uint8_t)(len >> 8);
    o[2] = (uint8_t)len;
    o[3] = type;
    o[4] = flags;
    o[5] = (uint8_t)((uint32_t)id >> 24 & 0x7f);
    o[6] = (uint8_t)((uint32_t)id >> 16);
    o[7] = (uint8_t)((uint32_t)id >> 8);
    o[8] = (uint8_t)id;
    return 9;
}

/* One frame appended to a growing buffer. */
typedef struct obuf {
    uint8_t *p;
    size_t len, cap;
} obuf;

static void ob_put(obuf *b, const void *d, size_t n) {
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n)
            cap *= 2;
        b->p = realloc(b->p, cap);
        assert_non_null(b->p);
        b->cap = cap;
    }
    memcpy(b->p + b->len, d, n);
    b->len += n;
}

static void ob_frame(obuf *b, uint8_t type, uint8_t flags, int32_t id, const void *payload,
                     size_t len) {
    uint8_t hd[9];
    frame_hd(hd, len, type, flags, id);
    ob_put(b, hd, 9);
    if (len)
        ob_put(b, payload, len);
}

static void ob_u32(uint8_t *o, uint32_t v) {
    o[0] = (uint8_t)(v >> 24);
    o[1] = (uint8_t)(v >> 16);
    o[2] = (uint8_t)(v >> 8);
    o[3] = (uint8_t)v;
}

/* A header block by the connection's deflater (its dynamic table is the
 * server's inflater's as long as every block goes out in order). */
static size_t raw_block(raw *r, uint8_t *out, size_t cap, const nghttp2_nv *nv, size_t n) {
    ssize_t k = nghttp2_hd_deflate_hd(r->def, out, cap, (nghttp2_nv *)nv, n);
    assert_true(k > 0);
    return (size_t)k;
}

static void raw_frames(raw *r) {
    size_t off = 0;
    while (r->inlen - off >= 9) {
        const uint8_t *h = r->in + off;
        size_t len = (size_t)h[0] << 16 | (size_t)h[1] << 8 | h[2];
        uint8_t type = h[3], flags = h[4];
        int32_t id = (int32_t)(((uint32_t)h[5] & 0x7f) << 24 | (uint32_t)h[6] << 16 |
                               (uint32_t)h[7] << 8 | h[8]);
        /* The server never sends more than the default SETTINGS_MAX_FRAME_SIZE. */
        assert_true(len <= 16384);
        if (r->inlen - off < 9 + len)
            break;
        const uint8_t *p = h + 9;
        r->frames[type < 16 ? type : 15]++;
        switch (type) {
        case NGHTTP2_DATA:
            rinfo(r, id)->data += len;
            if (flags & NGHTTP2_FLAG_END_STREAM)
                rinfo(r, id)->end = true;
            break;
        case NGHTTP2_HEADERS: {
            rst_info *s = rinfo(r, id);
            if (flags & NGHTTP2_FLAG_END_STREAM)
                s->end = true;
            /* The server sends neither padding nor priority; its blocks fit one frame. */
            size_t at = 0;
            for (;;) {
                nghttp2_nv nv;
                int fl = 0;
                ssize_t k = nghttp2_hd_inflate_hd2(r->inf, &nv, &fl, p + at, len - at, 1);
                assert_true(k >= 0);
                at += (size_t)k;
                if (fl & NGHTTP2_HD_INFLATE_EMIT) {
                    if (nv.namelen == 7 && memcmp(nv.name, ":status", 7) == 0) {
                        char b[8] = {0};
                        memcpy(b, nv.value, nv.valuelen < 7 ? nv.valuelen : 7);
                        int code = atoi(b);
                        if (code >= 200 || s->status == 0)
                            s->status = code;
                    }
                }
                if (fl & NGHTTP2_HD_INFLATE_FINAL) {
                    nghttp2_hd_inflate_end_headers(r->inf);
                    break;
                }
                if (k == 0 && !(fl & NGHTTP2_HD_INFLATE_EMIT))
                    break;
            }
            break;
        }
        case NGHTTP2_RST_STREAM: {
            rst_info *s = rinfo(r, id);
            assert_int_equal(len, 4);
            s->rst = true;
            s->rst_code = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
            break;
        }
        case NGHTTP2_SETTINGS:
            if (!(flags & NGHTTP2_FLAG_ACK))
                r->settings = true;
            break;
        case NGHTTP2_PING:
            assert_int_equal(len, 8);
            if (flags & NGHTTP2_FLAG_ACK)
                r->ping_acks++;
            break;
        case NGHTTP2_GOAWAY:
            assert_true(len >= 8);
            r->ngoaway++;
            r->ga_last = (int32_t)(((uint32_t)p[0] & 0x7f) << 24 | (uint32_t)p[1] << 16 |
                                   (uint32_t)p[2] << 8 | p[3]);
            r->ga_code = (uint32_t)p[4] << 24 | (uint32_t)p[5] << 16 | (uint32_t)p[6] << 8 | p[7];
            break;
        default:
            break;
        }
        off += 9 + len;
    }
    memmove(r->in, r->in + off, r->inlen - off);
    r->inlen -= off;
}

typedef bool (*raw_cond)(raw *r, void *arg);

/* Reads frames until cond holds, EOF (or a reset), or ms pass. */
static bool raw_read(raw *r, raw_cond cond, void *arg, int ms) {
    uint64_t end = now_ms() + (uint64_t)ms;
    for (;;) {
        if (cond && cond(r, arg))
            return true;
        if (r->eof)
            return false;
        uint64_t now = now_ms();
        if (now >= end)
            return false;
        struct pollfd p = {.fd = r->fd, .events = POLLIN};
        if (poll(&p, 1, (int)(end - now)) <= 0)
            continue;
        if (r->incap - r->inlen < 65536) {
            r->incap = r->incap ? r->incap * 2 : 262144;
            r->in = realloc(r->in, r->incap);
            assert_non_null(r->in);
        }
        ssize_t n = recv(r->fd, r->in + r->inlen, r->incap - r->inlen, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n <= 0) {
            r->eof = true; /* EOF, or ECONNRESET after the server's close */
            continue;
        }
        r->inlen += (size_t)n;
        raw_frames(r);
    }
}

static bool raw_settings(raw *r, void *arg) {
    (void)arg;
    return r->settings;
}

static bool raw_goaway(raw *r, void *arg) {
    (void)arg;
    return r->ngoaway > 0;
}

static bool raw_stream_done(raw *r, void *arg) {
    int32_t id = *(int32_t *)arg;
    for (int i = 0; i < r->nst; i++)
        if (r->st[i].id == id)
            return r->st[i].end || r->st[i].rst;
    return false;
}

static void raw_send(raw *r, const obuf *b) {
    assert_int_equal(send_all(r->fd, b->p, b->len, now_ms() + WAIT_MS), 0);
}

/* The preface and an empty SETTINGS; the server's SETTINGS acknowledged. */
static raw *raw_open(void) {
    raw *r = calloc(1, sizeof(*r));
    assert_non_null(r);
    r->fd = connect_server();
    assert_int_equal(nghttp2_hd_deflate_new(&r->def, 4096), 0);
    assert_int_equal(nghttp2_hd_inflate_new(&r->inf), 0);
    obuf b = {0};
    ob_put(&b, NGHTTP2_CLIENT_MAGIC, NGHTTP2_CLIENT_MAGIC_LEN);
    ob_frame(&b, NGHTTP2_SETTINGS, 0, 0, NULL, 0);
    raw_send(r, &b);
    assert_true(raw_read(r, raw_settings, NULL, WAIT_MS));
    b.len = 0;
    ob_frame(&b, NGHTTP2_SETTINGS, NGHTTP2_FLAG_ACK, 0, NULL, 0);
    raw_send(r, &b);
    free(b.p);
    return r;
}

static void raw_close(raw *r) {
    nghttp2_hd_deflate_del(r->def);
    nghttp2_hd_inflate_del(r->inf);
    close(r->fd);
    free(r->in);
    free(r);
}

/* A GET's HEADERS for stream id (by the deflater), END_STREAM if end. */
static void raw_get(raw *r, obuf *b, int32_t id, const char *path, bool end) {
    const nghttp2_nv nv[] = {NV(":method", "GET"),
                             NV(":scheme", "http"),
                             NV(":authority", "localhost"),
                             {(uint8_t *)":path", (uint8_t *)path, 5, strlen(path), 0}};
    uint8_t blk[1024];
    size_t n = raw_block(r, blk, sizeof(blk), nv, 4);
    ob_frame(b, NGHTTP2_HEADERS,
             NGHTTP2_FLAG_END_HEADERS | (end ? NGHTTP2_FLAG_END_STREAM : NGHTTP2_FLAG_NONE), id,
             blk, n);
}

/* ---- cases --------------------------------------------------------------------------- */

/* The server's SETTINGS: the [http2] defaults and no RFC 7540 priorities
 * (session.c h2_attach); ours are acknowledged. */
static void settings_are_exchanged(void **state) {
    (void)state;
    h2c *c = h2c_open(NULL, 0, false);
    assert_true(h2c_run(c, got_settings, NULL, WAIT_MS));
    assert_int_equal(c->set_mcs, 100);
    assert_int_equal(c->set_iws, 65536);
    assert_int_equal(c->set_norfc, 1);
    assert_int_equal(c->set_mhls, 16384);
    /* A request on it works: the server took our SETTINGS and preface. */
    cst *st = h2c_fetch(c, "GET", "/", NULL, 0);
    assert_int_equal(st->status, 200);
    assert_int_equal(CTR(h2_conns), 1);
    h2c_close(c);
}

/* GET to respond: status, body, content-length, date, server (answer.c h2_head). */
static void get_is_answered(void **state) {
    (void)state;
    h2c *c = h2c_open(NULL, 0, false);
    cst *st = h2c_fetch(c, "GET", "/", NULL, 0);
    assert_int_equal(st->status, 200);
    assert_int_equal(st->close_code, NGHTTP2_NO_ERROR);
    assert_int_equal(st->blen, strlen("Hello from scalwsd\n"));
    assert_memory_equal(st->body, "Hello from scalwsd\n", st->blen);
    assert_string_equal(st->clen, "19");
    assert_int_equal(strlen(st->date), 29); /* IMF-fixdate */
    assert_string_equal(st->date + 26, "GMT");
    assert_string_equal(st->server, "scalwsd");
    assert_true(CTR(requests) >= 1);
    h2c_close(c);
}

/* HEAD: the headers of the GET, content-length included, and no DATA
 * (answer.c h2_head: nobody; h2_fixed sends no body). */
static void head_has_no_body(void **state) {
    (void)state;
    h2c *c = h2c_open(NULL, 0, false);
    cst *g = h2c_fetch(c, "GET", "/files/big.bin", NULL, 0);
    assert_int_equal(g->status, 200);
    cst *h = h2c_fetch(c, "HEAD", "/files/big.bin", NULL, 0);
    assert_int_equal(h->status, 200);
    assert_int_equal(h->data_frames, 0);
    assert_int_equal(h->blen, 0);
    assert_string_equal(h->clen, g->clen);
    char want[32];
    snprintf(want, sizeof(want), "%d", BIG_SIZE);
    assert_string_equal(h->clen, want);
    cst *hr = h2c_fetch(c, "HEAD", "/", NULL, 0);
    assert_int_equal(hr->status, 200);
    assert_int_equal(hr->data_frames, 0);
    assert_string_equal(hr->clen, "19");
    h2c_close(c);
}

/* 300 requests at once on one connection: the client keeps to the server's
 * 100 concurrent streams, and each is answered whole. */
static void many_streams_on_one_connection(void **state) {
    (void)state;
    h2c *c = h2c_open(NULL, 0, false);
    enum { N = 300 };
    int32_t ids[N];
    for (int i = 0; i < N; i++)
        ids[i] = h2c_request(c, "GET", i % 10 == 0 ? "/files/big.bin" : "/", NULL, 0, NULL);
    int n = N;
    assert_true(h2c_run(c, all_closed, &n, 4 * WAIT_MS));
    for (int i = 0; i < N; i++) {
        cst *st = cst_of(c, ids[i]);
        assert_int_equal(st->status, 200);
        assert_int_equal(st->close_code, NGHTTP2_NO_ERROR);
        if (i % 10 == 0) {
            assert_int_equal(st->blen, BIG_SIZE);
            assert_memory_equal(st->body, g_big, BIG_SIZE);
        } else {
            assert_int_equal(st->blen, 19);
        }
    }
    assert_int_equal(CTR(h2_conns), 1);
    assert_int_equal(CTR(h2_streams), N);
    h2c_close(c);
}

/* A client that opens more than MAX_CONCURRENT_STREAMS: the 101st is not
 * served (session.c h2_attach's SETTINGS_MAX_CONCURRENT_STREAMS; without it
 * the library takes 2^31 streams). libnghttp2 makes it a connection error
 * once the SETTINGS are acknowledged (GOAWAY PROTOCOL_ERROR, the last
 * stream 199), where RFC 9113 5.1.2 allows a stream error (RST_STREAM
 * PROTOCOL_ERROR or REFUSED_STREAM, which it sends before the ack): either
 * is taken here. */
static void streams_past_the_limit_are_refused(void **state) {
    (void)state;
    raw *r = raw_open();
    obuf b = {0};
    for (int i = 0; i < 101; i++)
        raw_get(r, &b, 1 + 2 * i, "/", false); /* open: no END_STREAM */
    raw_send(r, &b);
    int32_t last = 201;
    raw_read(r, raw_stream_done, &last, WAIT_MS);
    rst_info *s = rinfo(r, last);
    if (s->rst) {
        assert_true(s->rst_code == NGHTTP2_REFUSED_STREAM || s->rst_code == NGHTTP2_PROTOCOL_ERROR);
        assert_int_equal(r->ngoaway, 0);
    } else {
        assert_true(r->ngoaway > 0);
        assert_int_equal(r->ga_code, NGHTTP2_PROTOCOL_ERROR);
        assert_int_equal(r->ga_last, 199);
    }
    assert_int_equal(s->status, 0);
    for (int i = 0; i < 100; i++)
        assert_false(rinfo(r, 1 + 2 * i)->rst);
    /* 100 streams on one connection are served. */
    raw_close(r);
    r = raw_open();
    b.len = 0;
    for (int i = 0; i < 100; i++)
        raw_get(r, &b, 1 + 2 * i, "/", false);
    for (int i = 0; i < 100; i++)
        ob_frame(&b, NGHTTP2_DATA, NGHTTP2_FLAG_END_STREAM, 1 + 2 * i, NULL, 0);
    raw_send(r, &b);
    last = 199;
    assert_true(raw_read(r, raw_stream_done, &last, WAIT_MS));
    for (int i = 0; i < 100; i++) {
        int32_t id = 1 + 2 * i;
        assert_true(raw_read(r, raw_stream_done, &id, WAIT_MS));
        assert_int_equal(rinfo(r, id)->status, 200);
    }
    assert_int_equal(r->ngoaway, 0);
    free(b.p);
    raw_close(r);
}

/* A large static file through a window of 1024 bytes that only our own
 * WINDOW_UPDATEs reopen (answer.c h2_read_body/h2_send_data, and static's
 * `more` under back-pressure): it arrives whole and equal, in frames no
 * longer than the window. */
static void large_file_through_a_tiny_window(void **state) {
    (void)state;
    const nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1024}};
    h2c *c = h2c_open(iv, 1, true);
    cst *st = h2c_fetch(c, "GET", "/files/big.bin", NULL, 0);
    assert_int_equal(st->status, 200);
    assert_int_equal(st->close_code, NGHTTP2_NO_ERROR);
    assert_int_equal(st->blen, BIG_SIZE);
    assert_memory_equal(st->body, g_big, BIG_SIZE);
    assert_true(st->max_data <= 1024);
    assert_true(st->data_frames >= BIG_SIZE / 1024);
    h2c_close(c);
}

static bool all_headed(h2c *c, void *arg) {
    int want = *(int *)arg, n = 0;
    for (int i = 0; i < c->nst; i++)
        n += c->st[i].status != 0;
    return n >= want;
}

/* Answers held behind a closed window borrow body buffers within the
 * connection's bound ([http2] stream_buffers blocks' worth, answer.c): 90
 * small files at once each borrow a 2 KiB buffer and none waits, where a
 * block each would have left 74 in line; 20 files of 12 KB on another
 * connection take the 16 blocks and 4 wait (larger ones go as file ranges,
 * with no buffer). Once the windows open, every answer arrives whole. */
static void body_buffers_are_bounded_by_size(void **state) {
    (void)state;
    const nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 0}};
    const nghttp2_settings_entry open[] = {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 65535}};
    uint64_t waits0 = CTR(h2_buffer_waits);
    h2c *small = h2c_open(iv, 1, true);
    enum { NS = 90, NB = 20 };
    for (int i = 0; i < NS; i++)
        h2c_request(small, "GET", "/files/small.bin", NULL, 0, NULL);
    int n = NS;
    assert_true(h2c_run(small, all_headed, &n, WAIT_MS));
    assert_int_equal(CTR(h2_buffer_waits), waits0);
    h2c *big = h2c_open(iv, 1, true);
    for (int i = 0; i < NB; i++)
        h2c_request(big, "GET", "/files/mid.bin", NULL, 0, NULL);
    n = NB;
    assert_true(h2c_run(big, all_headed, &n, WAIT_MS));
    uint64_t end = now_ms() + WAIT_MS;
    while (CTR(h2_buffer_waits) < waits0 + NB - 16 && now_ms() < end)
        h2c_run(big, NULL, NULL, 10);
    assert_true(CTR(h2_buffer_waits) >= waits0 + NB - 16);
    for (h2c *c = small; c; c = c == small ? big : NULL) {
        assert_int_equal(nghttp2_submit_settings(c->s, NGHTTP2_FLAG_NONE, open, 1), 0);
        n = c == small ? NS : NB;
        assert_true(h2c_run(c, all_closed, &n, 4 * WAIT_MS));
        for (int i = 0; i < c->nst; i++) {
            assert_int_equal(c->st[i].status, 200);
            assert_int_equal(c->st[i].close_code, NGHTTP2_NO_ERROR);
            size_t want = c == small ? SMALL_SIZE : MID_SIZE;
            assert_int_equal(c->st[i].blen, want);
            assert_memory_equal(c->st[i].body, g_big, want);
        }
    }
    h2c_close(small);
    h2c_close(big);
}

/* A connection quiet for two sweeps gives its frame buffer's pages back
 * (mem.c h2_mem_session_idle): the next frames are written into fresh
 * zeroed pages, and answers, small and large, come as before. */
static void idle_session_answers_again(void **state) {
    (void)state;
    h2c *c = h2c_open(NULL, 0, false);
    cst *st = h2c_fetch(c, "GET", "/", NULL, 0);
    assert_int_equal(st->status, 200);
    struct timespec quiet = {2, 600 * 1000 * 1000}; /* the sweep runs each second */
    nanosleep(&quiet, NULL);
    st = h2c_fetch(c, "GET", "/files/big.bin", NULL, 0);
    assert_int_equal(st->status, 200);
    assert_int_equal(st->blen, BIG_SIZE);
    assert_memory_equal(st->body, g_big, BIG_SIZE);
    nanosleep(&quiet, NULL);
    st = h2c_fetch(c, "GET", "/", NULL, 0);
    assert_int_equal(st->status, 200);
    assert_int_equal(st->blen, 19);
    assert_int_equal(c->ngoaway, 0);
    h2c_close(c);
}

/* Range (206 and its slice) and If-None-Match (304, no body) on static. */
static void range_and_if_none_match(void **state) {
    (void)state;
    h2c *c = h2c_open(NULL, 0, false);
    const nghttp2_nv range[] = {NV("range", "bytes=100-199")};
    cst *st = h2c_fetch(c, "GET", "/files/big.bin", range, 1);
    assert_int_equal(st->status, 206);
    assert_int_equal(st->blen, 100);
    assert_memory_equal(st->body, g_big + 100, 100);
    char want[96];
    snprintf(want, sizeof(want), "bytes 100-199/%d", BIG_SIZE);
    assert_string_equal(st->crange, want);
    assert_string_equal(st->clen, "100");
    assert_true(st->etag[0] != 0);
    char etag[128];
    snprintf(etag, sizeof(etag), "%s", st->etag);
    const nghttp2_nv inm[] = {{(uint8_t *)"if-none-match", (uint8_t *)etag, 13, strlen(etag), 0}};
    cst *nm = h2c_fetch(c, "GET", "/files/big.bin", inm, 1);
    assert_int_equal(nm->status, 304);
    assert_int_equal(nm->data_frames, 0);
    assert_int_equal(nm->blen, 0);
    h2c_close(c);
}

/* A body the client never sends: the request's body stays open. */
static ssize_t no_body(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
                       nghttp2_data_source *src, void *ud) {
    (void)s;
    (void)id;
    (void)buf;
    (void)len;
    (void)flags;
    (void)src;
    (void)ud;
    return NGHTTP2_ERR_DEFERRED;
}

/* [limits] per stream (request.c on_pseudo, h2_on_header, on_field): each
 * refused request is answered on its own stream, and the connection serves
 * the next request. */
static void request_limits_per_stream(void **state) {
    (void)state;
    h2c *c = h2c_open(NULL, 0, false);
    /* :path past uri_length (8k): 414. */
    size_t pl = 9000;
    char *path = malloc(pl + 1);
    path[0] = '/';
    memset(path + 1, 'a', pl - 1);
    path[pl] = 0;
    cst *st = h2c_fetch(c, "GET", path, NULL, 0);
    assert_int_equal(st->status, 414);
    free(path);
    assert_int_equal(h2c_fetch(c, "GET", "/", NULL, 0)->status, 200);

    /* Fields past header_bytes (16k), under max_header_blocks times it: 431. */
    enum { NF = 20 };
    static char vals[NF][1001];
    static char names[NF][16];
    nghttp2_nv nv[NF];
    for (int i = 0; i < NF; i++) {
        memset(vals[i], 'v', 1000);
        vals[i][1000] = 0;
        snprintf(names[i], sizeof(names[i]), "x-big-%d", i);
        nv[i] = (nghttp2_nv){(uint8_t *)names[i], (uint8_t *)vals[i], strlen(names[i]), 1000,
                             NGHTTP2_NV_FLAG_NO_INDEX};
    }
    st = h2c_fetch(c, "GET", "/", nv, NF);
    assert_int_equal(st->status, 431);
    assert_int_equal(h2c_fetch(c, "GET", "/", NULL, 0)->status, 200);

    /* content-length past body_size (1m): 413 at once, before any DATA. */
    const nghttp2_nv cl[] = {NV("content-length", "2000000")};
    nghttp2_data_provider prov = {.read_callback = no_body};
    int32_t id = h2c_request(c, "POST", "/", cl, 1, &prov);
    assert_true(h2c_run(c, stream_answered, &id, WAIT_MS));
    st = cst_of(c, id);
    assert_int_equal(st->status, 413);
    nghttp2_submit_rst_stream(c->s, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
    assert_int_equal(h2c_fetch(c, "GET", "/", NULL, 0)->status, 200);
    assert_int_equal(c->ngoaway, 0);
    assert_true(CTR(errors[SWS_ST_414]) >= 1);
    assert_true(CTR(errors[SWS_ST_431]) >= 1);
    assert_true(CTR(errors[SWS_ST_413]) >= 1);
    h2c_close(c);
}

/* A method nobody knows is answered 501 on its stream, and the server lives
 * on (request.c method_of: llhttp_method_name aborts past HTTP_FLUSH, and
 * an unknown :method walked past it; fuzz_h2 found it). */
static void unknown_method_is_501(void **state) {
    (void)state;
    h2c *c = h2c_open(NULL, 0, false);
    assert_int_equal(h2c_fetch(c, "BREW", "/", NULL, 0)->status, 501);
    assert_int_equal(h2c_fetch(c, "PROPFIND", "/", NULL, 0)->status, 200);
    assert_int_equal(h2c_fetch(c, "GET", "/", NULL, 0)->status, 200);
    h2c_close(c);
}

/* RFC 9113 8.1.1: malformed requests are stream errors, never answered
 * 2xx (libnghttp2's own checks, which request.c relies on and does not
 * switch off). The connection goes on. */
static void malformed_requests_are_reset(void **state) {
    (void)state;
    raw *r = raw_open();
    obuf b = {0};
    uint8_t blk[1024];
    const nghttp2_nv no_method[] = {NV(":scheme", "http"), NV(":authority", "localhost"),
                                    NV(":path", "/")};
    const nghttp2_nv upper[] = {NV(":method", "GET"), NV(":scheme", "http"),
                                NV(":authority", "localhost"), NV(":path", "/"),
                                NV("X-Upper", "a")};
    const nghttp2_nv conn[] = {NV(":method", "GET"), NV(":scheme", "http"),
                               NV(":authority", "localhost"), NV(":path", "/"),
                               NV("connection", "keep-alive")};
    const nghttp2_nv te[] = {NV(":method", "GET"), NV(":scheme", "http"),
                             NV(":authority", "localhost"), NV(":path", "/"), NV("te", "gzip")};
    const struct {
        const nghttp2_nv *nv;
        size_t n;
    } bad[] = {{no_method, 3}, {upper, 5}, {conn, 5}, {te, 5}};
    for (int i = 0; i < 4; i++) {
        size_t n = raw_block(r, blk, sizeof(blk), bad[i].nv, bad[i].n);
        ob_frame(&b, NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 1 + 2 * i,
                 blk, n);
    }
    raw_get(r, &b, 9, "/", true);
    raw_send(r, &b);
    int32_t good = 9;
    assert_true(raw_read(r, raw_stream_done, &good, WAIT_MS));
    for (int i = 0; i < 4; i++) {
        int32_t id = 1 + 2 * i;
        assert_true(raw_read(r, raw_stream_done, &id, WAIT_MS));
        rst_info *s = rinfo(r, id);
        assert_true(s->rst);
        assert_int_equal(s->rst_code, NGHTTP2_PROTOCOL_ERROR);
        assert_false(s->status >= 200 && s->status < 300);
    }
    assert_int_equal(rinfo(r, 9)->status, 200);
    assert_int_equal(r->ngoaway, 0);
    free(b.p);
    raw_close(r);
}

static bool raw_ended(raw *r, void *arg) {
    (void)arg;
    return r->eof;
}

/* Rapid Reset (CVE-2023-44487): HEADERS then RST_STREAM, twice the
 * reset_burst of the config (session.c session_options:
 * nghttp2_option_set_stream_reset_rate_limit; without it the library's
 * burst is 1000 and this connection goes on). */
static void rapid_reset_ends_the_connection(void **state) {
    (void)state;
    uint64_t floods = CTR(h2_floods[SWS_H2_FLOOD_RESET]);
    raw *r = raw_open();
    obuf b = {0};
    uint8_t code[4];
    ob_u32(code, NGHTTP2_CANCEL);
    for (int i = 0; i < 2 * RESET_BURST; i++) {
        raw_get(r, &b, 1 + 2 * i, "/", true);
        ob_frame(&b, NGHTTP2_RST_STREAM, 0, 1 + 2 * i, code, 4);
    }
    raw_send(r, &b);
    assert_true(raw_read(r, raw_goaway, NULL, WAIT_MS));
    raw_read(r, raw_ended, NULL, WAIT_MS);
    assert_true(r->eof);
    assert_true(CTR(h2_rst_recv) > RESET_BURST);
    assert_true(CTR(h2_rst_recv) <= 2 * RESET_BURST);
    /* What the issue asks of the bound: ENHANCE_YOUR_CALM, counted (our own
     * bucket in session.c, before the library's INTERNAL_ERROR backstop). */
    assert_int_equal(r->ga_code, NGHTTP2_ENHANCE_YOUR_CALM);
    assert_true(CTR(h2_floods[SWS_H2_FLOOD_RESET]) == floods + 1);
    free(b.p);
    raw_close(r);
}

/* MadeYouReset (CVE-2025-8671): streams the client makes us reset, past
 * glitch_burst: malformed requests (an upper-case field name), each a
 * stream error.
 * session.c glitch(): each RST_STREAM we send (and each invalid frame)
 * takes a token; without it nothing bounds the resets the library sends,
 * and reset_burst counts only those received. */
static void glitches_end_the_connection(void **state) {
    (void)state;
    uint64_t floods = CTR(h2_floods[SWS_H2_FLOOD_GLITCH]);
    uint64_t calm = CTR(h2_goaway_sent[SWS_H2_GA_CALM]);
    raw *r = raw_open();
    obuf b = {0};
    /* Two tokens each (the invalid field, our reset): 60 streams, past 50. */
    uint8_t blk[256];
    const nghttp2_nv upper[] = {NV(":method", "GET"), NV(":scheme", "http"),
                                NV(":authority", "localhost"), NV(":path", "/"),
                                NV("X-Upper", "a")};
    for (int i = 0; i < 60; i++) {
        size_t n = raw_block(r, blk, sizeof(blk), upper, 5);
        ob_frame(&b, NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 1 + 2 * i,
                 blk, n);
    }
    raw_send(r, &b);
    assert_true(raw_read(r, raw_goaway, NULL, WAIT_MS));
    assert_int_equal(r->ga_code, NGHTTP2_ENHANCE_YOUR_CALM);
    raw_read(r, raw_ended, NULL, WAIT_MS);
    assert_true(r->eof);
    assert_int_equal(CTR(h2_floods[SWS_H2_FLOOD_GLITCH]), floods + 1);
    assert_int_equal(CTR(h2_goaway_sent[SWS_H2_GA_CALM]), calm + 1);
    free(b.p);
    raw_close(r);
}

/* Empty-frame flood (CVE-2019-9518): DATA frames without payload or
 * END_STREAM on an open request cost the server a frame's work each and
 * the client nothing. The issue (point 4) asks for a bound; the glitch
 * bucket (session.c glitch()) is where such frames would be counted. */
static void empty_frame_flood_is_bounded(void **state) {
    (void)state;
    raw *r = raw_open();
    obuf b = {0};
    const nghttp2_nv post[] = {NV(":method", "POST"), NV(":scheme", "http"),
                               NV(":authority", "localhost"), NV(":path", "/")};
    uint8_t blk[256];
    size_t n = raw_block(r, blk, sizeof(blk), post, 4);
    ob_frame(&b, NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1, blk, n);
    for (int i = 0; i < 20 * GLITCH_BURST; i++)
        ob_frame(&b, NGHTTP2_DATA, 0, 1, NULL, 0);
    raw_send(r, &b);
    bool ended = raw_read(r, raw_goaway, NULL, WAIT_MS / 2);
    uint32_t code = r->ga_code;
    free(b.p);
    raw_close(r);
    assert_true(ended); /* each empty DATA frame is a glitch (session.c judge_header) */
    assert_int_equal(code, NGHTTP2_ENHANCE_YOUR_CALM);
}

/* One HPACK literal field without indexing, a short name and value. */
static size_t hp_literal(uint8_t *o, const char *name, const char *value) {
    size_t nl = strlen(name), vl = strlen(value), k = 0;
    o[k++] = 0x00;
    o[k++] = (uint8_t)nl;
    memcpy(o + k, name, nl);
    k += nl;
    o[k++] = (uint8_t)vl;
    memcpy(o + k, value, vl);
    return k + vl;
}

/* The pseudo-fields of GET / by static-table index and one literal
 * (:method GET, :scheme http, :path /, :authority localhost). */
static size_t hp_get(uint8_t *o) {
    size_t k = 0;
    o[k++] = 0x82;
    o[k++] = 0x86;
    o[k++] = 0x84;
    o[k++] = 0x01; /* literal without indexing, name :authority (static 1) */
    o[k++] = 9;
    memcpy(o + k, "localhost", 9);
    return k + 9;
}

/* CONTINUATION flood (CVE-2024-27316 class): a header block cut in more
 * CONTINUATION frames than max_continuations (session.c session_options:
 * nghttp2_option_set_max_continuations; the library's default, 8, would
 * take these 6 and answer). The connection ends unanswered. */
static void continuation_flood_ends_the_connection(void **state) {
    (void)state;
    raw *r = raw_open();
    obuf b = {0};
    uint8_t blk[256];
    size_t n = hp_get(blk);
    ob_frame(&b, NGHTTP2_HEADERS, NGHTTP2_FLAG_END_STREAM, 1, blk, n);
    const int conts = MAX_CONTINUATIONS + 2;
    for (int i = 0; i < conts; i++) {
        n = hp_literal(blk, "x-c", "v");
        ob_frame(&b, NGHTTP2_CONTINUATION, i == conts - 1 ? NGHTTP2_FLAG_END_HEADERS : 0, 1, blk,
                 n);
    }
    raw_send(r, &b);
    raw_read(r, raw_ended, NULL, WAIT_MS);
    assert_true(r->eof);
    assert_true(r->ngoaway > 0);
    assert_int_not_equal(r->ga_code, NGHTTP2_NO_ERROR);
    assert_int_equal(rinfo(r, 1)->status, 0); /* never answered */
    free(b.p);
    raw_close(r);
}

/* The CONTINUATION flood is a bound like the others: counted in
 * scalwsd_http2_bound_closes_total{bound="headers"} (sws.h says so of
 * SWS_H2_FLOOD_HEADERS: "past max_header_blocks or max_continuations"). */
static void continuation_flood_is_counted(void **state) {
    (void)state;
    uint64_t floods = CTR(h2_floods[SWS_H2_FLOOD_HEADERS]);
    raw *r = raw_open();
    obuf b = {0};
    uint8_t blk[256];
    size_t n = hp_get(blk);
    ob_frame(&b, NGHTTP2_HEADERS, NGHTTP2_FLAG_END_STREAM, 1, blk, n);
    for (int i = 0; i < 4 * MAX_CONTINUATIONS; i++) {
        n = hp_literal(blk, "x-c", "v");
        ob_frame(&b, NGHTTP2_CONTINUATION, 0, 1, blk, n);
    }
    raw_send(r, &b);
    raw_read(r, raw_ended, NULL, WAIT_MS);
    assert_true(r->eof);
    uint64_t now = CTR(h2_floods[SWS_H2_FLOOD_HEADERS]);
    uint32_t code = r->ga_code;
    free(b.p);
    raw_close(r);
    assert_true(now == floods + 1);
    assert_int_equal(code, NGHTTP2_ENHANCE_YOUR_CALM);
}

/* HPACK bomb: one 4000-byte value into the dynamic table, then 1-byte
 * references to it until the block decodes to far more than header_bytes
 * times max_header_blocks (request.c h2_on_header; without that bound the
 * request is only refused 431 and the connection decodes on). */
static void hpack_bomb_ends_the_connection(void **state) {
    (void)state;
    uint64_t floods = CTR(h2_floods[SWS_H2_FLOOD_HEADERS]);
    raw *r = raw_open();
    obuf b = {0};
    size_t cap = 8192, k = 0;
    uint8_t *blk = malloc(cap);
    k = hp_get(blk);
    /* Literal with incremental indexing, new name: 0x40, name, value (4000
     * bytes: length 4000 = 127 + 3873, 7-bit prefix then varint). */
    blk[k++] = 0x40;
    blk[k++] = 6;
    memcpy(blk + k, "x-bomb", 6);
    k += 6;
    uint32_t vl = 4000;
    blk[k++] = 0x7f;
    uint32_t rest = vl - 127;
    while (rest >= 128) {
        blk[k++] = (uint8_t)(rest % 128 + 128);
        rest /= 128;
    }
    blk[k++] = (uint8_t)rest;
    memset(blk + k, 'b', vl);
    k += vl;
    /* 200 references to dynamic index 62: about 800 KB decoded. */
    for (int i = 0; i < 200; i++)
        blk[k++] = 0x80 | 62;
    ob_frame(&b, NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 1, blk, k);
    raw_send(r, &b);
    assert_true(raw_read(r, raw_goaway, NULL, WAIT_MS));
    assert_int_equal(r->ga_code, NGHTTP2_ENHANCE_YOUR_CALM);
    raw_read(r, raw_ended, NULL, WAIT_MS);
    assert_true(r->eof);
    assert_int_equal(rinfo(r, 1)->status, 0);
    assert_int_equal(CTR(h2_floods[SWS_H2_FLOOD_HEADERS]), floods + 1);
    free(blk);
    free(b.p);
    raw_close(r);
}

static bool flooded(void) {
    return CTR(h2_floods[SWS_H2_FLOOD_ACKS]) > 0;
}

/* PING flood (CVE-2019-9512): PINGs from a client that reads nothing. The
 * server ends the connection once more than max_queued_acks acks wait
 * (session.c session_options: nghttp2_option_set_max_outbound_ack, and
 * recv_failed's NGHTTP2_ERR_FLOODED) rather than queueing them. One write
 * of 150 PINGs: past the config's 100, under the library's default 1000
 * (whose acks the socket would take), so that without the option this
 * connection goes on. */
static void ping_flood_ends_the_connection(void **state) {
    (void)state;
    assert_false(flooded());
    raw *r = raw_open();
    obuf b = {0};
    uint8_t opaque[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    enum { PINGS = 150 };
    for (int i = 0; i < PINGS; i++)
        ob_frame(&b, NGHTTP2_PING, 0, 0, opaque, 8);
    raw_send(r, &b);
    uint64_t end = now_ms() + WAIT_MS;
    while (!flooded() && now_ms() < end)
        usleep(1000);
    assert_true(flooded());
    /* Now read: what was queued, then GOAWAY ENHANCE_YOUR_CALM and the end. */
    raw_read(r, raw_ended, NULL, WAIT_MS);
    assert_true(r->eof);
    assert_true(r->ping_acks <= MAX_ACKS);
    assert_true(r->ngoaway > 0);
    assert_int_equal(r->ga_code, NGHTTP2_ENHANCE_YOUR_CALM);
    assert_int_equal(CTR(h2_floods[SWS_H2_FLOOD_ACKS]), 1);
    free(b.p);
    raw_close(r);
}

/* The drain, the graceful way (session.c h2_drain, h2_sweep goaway_final):
 * a stream in flight (a large file held by our window), then the drain:
 * a GOAWAY with 2^31-1, then one with the real last stream id; the stream
 * then completes whole, and the connection closes. */
static void drain_is_graceful(void **state) {
    (void)state;
    const nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1024}};
    h2c *c = h2c_open(iv, 1, true);
    c->hold_window = true;
    assert_int_equal(h2c_fetch(c, "GET", "/", NULL, 0)->status, 200);
    int32_t id = h2c_request(c, "GET", "/files/big.bin", NULL, 0, NULL);
    /* The first window's bytes came: the stream is in flight, stuck. */
    size_t window = 1024;
    struct got_arg a = {id, window};
    assert_true(h2c_run(c, got_bytes, &a, WAIT_MS));
    h2c_run(c, NULL, NULL, 100); /* nothing more may come */
    cst *st = cst_of(c, id);
    assert_int_equal(st->status, 200);
    assert_int_equal(st->blen, 1024);
    assert_false(st->closed);

    sws_drain_begin(&g_srv);
    int one = 1, two = 2;
    assert_true(h2c_run(c, goaways, &one, WAIT_MS));
    assert_int_equal(c->ga_last[0], INT32_MAX);
    assert_int_equal(c->ga_code[0], NGHTTP2_NO_ERROR);
    assert_true(h2c_run(c, goaways, &two, WAIT_MS));
    assert_int_equal(c->ga_last[1], id);
    assert_int_equal(c->ga_code[1], NGHTTP2_NO_ERROR);
    assert_false(st->closed);

    /* The window opens: the stream completes, then the server closes. */
    c->hold_window = false;
    nghttp2_session_consume(c->s, id, st->held);
    assert_true(h2c_run(c, stream_closed, &id, 2 * WAIT_MS));
    assert_int_equal(st->close_code, NGHTTP2_NO_ERROR);
    assert_int_equal(st->blen, BIG_SIZE);
    assert_memory_equal(st->body, g_big, BIG_SIZE);
    assert_true(h2c_run(c, ended, NULL, WAIT_MS));
    assert_int_equal(c->ngoaway, 2);
    assert_true(server_wait_done(WAIT_MS));
    h2c_close(c);
}

#define CASE(f) cmocka_unit_test_setup_teardown(f, server_start, server_stop)

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    /* H2_TEST=pattern runs the matching cases only (cmocka's filter). */
    if (getenv("H2_TEST"))
        cmocka_set_test_filter(getenv("H2_TEST"));
    const struct CMUnitTest tests[] = {
        CASE(settings_are_exchanged),
        CASE(get_is_answered),
        CASE(head_has_no_body),
        CASE(many_streams_on_one_connection),
        CASE(streams_past_the_limit_are_refused),
        CASE(large_file_through_a_tiny_window),
        CASE(body_buffers_are_bounded_by_size),
        CASE(idle_session_answers_again),
        CASE(range_and_if_none_match),
        CASE(request_limits_per_stream),
        CASE(unknown_method_is_501),
        CASE(malformed_requests_are_reset),
        CASE(rapid_reset_ends_the_connection),
        CASE(glitches_end_the_connection),
        CASE(empty_frame_flood_is_bounded),
        CASE(continuation_flood_ends_the_connection),
        CASE(continuation_flood_is_counted),
        CASE(hpack_bomb_ends_the_connection),
        CASE(ping_flood_ends_the_connection),
        CASE(drain_is_graceful),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    free(g_big);
    return rc;
}
