/* Fuzz target for the HTTP/2 input path: the input is what a client sends
 * after the connection preface (its SETTINGS, HEADERS, DATA, ... or
 * anything else), written into a real connection of a real worker: one loop
 * (epoll) turned on this thread by sws_worker_turn, a socketpair's end
 * adopted as an accepted connection (sws_conn_open), so the bytes go
 * through the transport (on_recv, the preface sniff) into http2/session.c
 * (h2_input, fill) with the respond scenario (the default route) and the
 * static one (/files/) behind it, under small [limits] and [http2] bounds
 * so that each is reached by short inputs. The first input byte picks where
 * the input is cut into two writes (loop turns between them).
 * What must hold: no crash, no sanitizer report, no leak; every connection
 * is freed at the end; and what the server wrote parses as HTTP/2: frames
 * no longer than 16384 bytes, of the types a server sends, their lengths
 * right for their type, its SETTINGS first, every header block decodes
 * (one HPACK inflater for the connection: the server's encoder state stays
 * in step) with a valid :status first, no HEADERS or DATA on a stream after
 * its END_STREAM or RST_STREAM, no new stream after a GOAWAY's last id,
 * DATA no longer than the content-length the HEADERS gave, and the output
 * ends on a frame boundary unless the harness cut the connection itself. */
#include "conn.h"
#include "route.h"
#include "sws.h"

#include <errno.h>
#include <nghttp2/nghttp2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static sws_config cfg;
static sws_server srv;
static sws_worker *w;

static void check(bool ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "fuzz_h2: %s\n", what);
        abort();
    }
}

static void put_file(const char *dir, const char *name, size_t len, char fill) {
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    check(f != NULL, "cannot write the static root");
    for (size_t i = 0; i < len; i++)
        fputc(fill + (char)(i % 26), f);
    fclose(f);
}

static char dir[] = "/tmp/sws-fuzz-h2-XXXXXX";

/* The static root and the config go with the process (the replay runs in
 * every ctest). */
static void cleanup(void) {
    char cmd[64];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "fuzz_h2: could not remove %s\n", dir);
}

static void setup(void) {
    check(mkdtemp(dir) != NULL, "mkdtemp");
    atexit(cleanup);
    char www[600], ini[600], text[4096], err[512];
    snprintf(www, sizeof(www), "%s/www", dir);
    mkdir(www, 0755);
    put_file(www, "a.txt", 100, 'a');
    put_file(www, "big.bin", 40000, 'A');
    put_file(www, "c.txt", 3000, 'c');
    put_file(www, "c.txt.gz", 50, 'z');
    mkdir(strcat(strcpy(text, www), "/d"), 0755);
    put_file(text, "index.html", 10, 'i');
    /* The smallest bounds the keys take, or close to them. */
    snprintf(text, sizeof(text),
             "[server]\n"
             "listen = 127.0.0.1:0\n"
             "event_loops = 1\n"
             "backend = epoll\n"
             "scenario = respond\n"
             "access_log = /dev/null\n"
             "[http2]\n"
             "max_concurrent_streams = 32\n"
             "window = 1024\n"
             "streams_per_loop = 16\n"
             "reset_burst = 10\n"
             "reset_rate = 1\n"
             "glitch_burst = 10\n"
             "glitch_rate = 1\n"
             "max_continuations = 2\n"
             "max_queued_acks = 16\n"
             "max_header_blocks = 2\n"
             "[limits]\n"
             "header_bytes = 512\n"
             "header_count = 16\n"
             "uri_length = 64\n"
             "body_size = 1k\n"
             "max_connections = 4\n"
             "[route files]\n"
             "path_prefix = /files/\n"
             "strip_prefix = on\n"
             "scenario = static\n"
             "root = %s\n",
             www);
    snprintf(ini, sizeof(ini), "%s/h2.ini", dir);
    FILE *f = fopen(ini, "w");
    check(f != NULL, "cannot write the config");
    fputs(text, f);
    fclose(f);
    const sws_cli cli = {.config = ini};
    if (sws_config_build(&cfg, &cli, err, sizeof(err)) < 0) {
        fprintf(stderr, "fuzz_h2: %s\n", err);
        abort();
    }
    /* What sws_server_start's first step gives a worker; no listener, no
     * thread, no sweep timer: this thread turns the loop. */
    srv.cfg = &cfg;
    srv.sc_ops = sws_scenario_ops_of(cfg.routes->r[0].cfg.scenario);
    srv.acme_fd = srv.acme_http_fd = srv.done_fd = -1;
    srv.nloops = srv.nthreads = 1;
    check(sws_route_slots_assign(cfg.routes, err, sizeof(err)) == 0, "route slots");
    w = calloc(1, sizeof(*w));
    if (sws_worker_init(&srv, w, 0, 0, err, sizeof(err)) < 0) {
        fprintf(stderr, "fuzz_h2: worker: %s\n", err);
        abort();
    }
    check(w->h2_proto != NULL, "http2 is off");
}

/* ---- the server's output, frame by frame ----------------------------------------- */

#define NST 256

typedef struct ostream {
    int32_t id;
    bool seen;   /* a HEADERS came */
    bool ended;  /* END_STREAM or RST_STREAM sent */
    bool has_cl; /* its final HEADERS gave content-length */
    bool final;  /* a final (non-1xx) HEADERS came */
    uint64_t cl, data;
} ostream;

typedef struct out {
    uint8_t *buf;
    size_t len, cap;
    size_t frames;
    size_t by_type[10];
    nghttp2_hd_inflater *inf;
    uint8_t *block; /* a header block across CONTINUATION frames */
    size_t blen, bcap;
    int32_t block_id;
    bool block_end_stream;
    bool in_block;
    bool goaway;
    int32_t goaway_last;
    ostream st[NST];
} out;

static ostream *ost(out *o, int32_t id) {
    uint32_t h = (uint32_t)id * 2654435761u;
    for (int k = 0; k < NST; k++) {
        ostream *s = &o->st[(h + (uint32_t)k) % NST];
        if (s->id == id)
            return s;
        if (s->id == 0) {
            s->id = id;
            return s;
        }
    }
    return NULL; /* more streams than tracked: not checked */
}

static void header_block(out *o) {
    ostream *s = ost(o, o->block_id);
    bool first = true, final = false, has_cl = false;
    uint64_t cl = 0;
    size_t at = 0;
    for (;;) {
        nghttp2_nv nv;
        int fl = 0;
        ssize_t k = nghttp2_hd_inflate_hd2(o->inf, &nv, &fl, o->block + at, o->blen - at, 1);
        check(k >= 0, "a header block the server sent does not decode");
        at += (size_t)k;
        if (fl & NGHTTP2_HD_INFLATE_EMIT) {
            if (first) {
                check(nv.namelen == 7 && memcmp(nv.name, ":status", 7) == 0 && nv.valuelen == 3 &&
                          nv.value[0] >= '1' && nv.value[0] <= '5',
                      "a header block that does not begin with :status");
                final = nv.value[0] != '1';
                first = false;
            } else {
                check(nv.namelen > 0 && nv.name[0] != ':', "a pseudo-field after :status");
                for (size_t i = 0; i < nv.namelen; i++)
                    check(!(nv.name[i] >= 'A' && nv.name[i] <= 'Z'), "an upper-case field name");
                if (nv.namelen == 14 && memcmp(nv.name, "content-length", 14) == 0) {
                    has_cl = true;
                    for (size_t i = 0; i < nv.valuelen; i++) {
                        check(nv.value[i] >= '0' && nv.value[i] <= '9', "content-length");
                        cl = cl * 10 + (uint64_t)(nv.value[i] - '0');
                    }
                }
            }
        }
        if (fl & NGHTTP2_HD_INFLATE_FINAL) {
            nghttp2_hd_inflate_end_headers(o->inf);
            break;
        }
        check(k > 0 || (fl & NGHTTP2_HD_INFLATE_EMIT), "a header block cut short");
    }
    check(!first, "an empty header block");
    if (s) {
        check(!s->ended, "HEADERS after the stream's end");
        if (final) {
            check(!s->final, "a second final HEADERS on a stream");
            s->final = true;
            s->has_cl = has_cl;
            s->cl = cl;
        }
        if (o->block_end_stream)
            s->ended = true;
    }
}

/* Checks the whole frames in o->buf; keeps a partial one. */
static void frames(out *o) {
    size_t off = 0;
    while (o->len - off >= 9) {
        const uint8_t *h = o->buf + off;
        size_t len = (size_t)h[0] << 16 | (size_t)h[1] << 8 | h[2];
        uint8_t type = h[3], flags = h[4];
        int32_t id = (int32_t)(((uint32_t)h[5] & 0x7f) << 24 | (uint32_t)h[6] << 16 |
                               (uint32_t)h[7] << 8 | h[8]);
        check(len <= 16384, "a frame longer than SETTINGS_MAX_FRAME_SIZE's default");
        if (o->len - off < 9 + len)
            break;
        const uint8_t *p = h + 9;
        check(o->frames > 0 || (type == NGHTTP2_SETTINGS && !(flags & NGHTTP2_FLAG_ACK)),
              "the server's first frame is not its SETTINGS");
        check(!o->in_block || type == NGHTTP2_CONTINUATION, "a frame inside a header block");
        o->frames++;
        o->by_type[type < 10 ? type : 9]++;
        switch (type) {
        case NGHTTP2_DATA: {
            check(id > 0 && (id & 1), "DATA on a stream no client opened");
            check(!(flags & NGHTTP2_FLAG_PADDED), "padded DATA");
            ostream *s = ost(o, id);
            if (s) {
                check(!s->ended, "DATA after the stream's end");
                check(s->final, "DATA before the final HEADERS");
                s->data += len;
                check(!s->has_cl || s->data <= s->cl, "DATA past the content-length");
                if (flags & NGHTTP2_FLAG_END_STREAM) {
                    check(!s->has_cl || s->data == s->cl, "DATA short of the content-length");
                    s->ended = true;
                }
            }
            break;
        }
        case NGHTTP2_HEADERS:
        case NGHTTP2_CONTINUATION:
            if (type == NGHTTP2_HEADERS) {
                check(id > 0 && (id & 1), "HEADERS on a stream no client opened");
                check(!(flags & (NGHTTP2_FLAG_PADDED | NGHTTP2_FLAG_PRIORITY)),
                      "HEADERS with padding or priority");
                ostream *s = ost(o, id);
                check(!o->goaway || id <= o->goaway_last || !s || s->seen,
                      "a new stream answered past the GOAWAY's last stream id");
                if (s)
                    s->seen = true;
                o->in_block = true;
                o->blen = 0;
                o->block_id = id;
                o->block_end_stream = (flags & NGHTTP2_FLAG_END_STREAM) != 0;
            } else {
                check(o->in_block && id == o->block_id, "CONTINUATION out of a header block");
            }
            if (o->blen + len > o->bcap) {
                o->bcap = (o->blen + len) * 2;
                o->block = realloc(o->block, o->bcap);
                check(o->block != NULL, "out of memory");
            }
            memcpy(o->block + o->blen, p, len);
            o->blen += len;
            if (flags & NGHTTP2_FLAG_END_HEADERS) {
                o->in_block = false;
                header_block(o);
            }
            break;
        case NGHTTP2_RST_STREAM: {
            check(len == 4 && id > 0, "RST_STREAM's length or stream");
            ostream *s = ost(o, id);
            if (s)
                s->ended = true;
            break;
        }
        case NGHTTP2_SETTINGS:
            check(id == 0 && len % 6 == 0, "SETTINGS' length or stream");
            check(!(flags & NGHTTP2_FLAG_ACK) || len == 0, "a SETTINGS ack with a payload");
            break;
        case NGHTTP2_PING:
            check(id == 0 && len == 8, "PING's length or stream");
            check(flags & NGHTTP2_FLAG_ACK, "a PING the server began");
            break;
        case NGHTTP2_GOAWAY: {
            check(id == 0 && len >= 8, "GOAWAY's length or stream");
            int32_t last = (int32_t)(((uint32_t)p[0] & 0x7f) << 24 | (uint32_t)p[1] << 16 |
                                     (uint32_t)p[2] << 8 | p[3]);
            check(!o->goaway || last <= o->goaway_last, "a GOAWAY that raises the last stream id");
            o->goaway = true;
            o->goaway_last = last;
            if (getenv("FUZZ_H2_VERBOSE"))
                fprintf(stderr, "fuzz_h2: GOAWAY last %d code %u\n", last,
                        (uint32_t)p[4] << 24 | (uint32_t)p[5] << 16 | (uint32_t)p[6] << 8 | p[7]);
            break;
        }
        case NGHTTP2_WINDOW_UPDATE:
            check(len == 4, "WINDOW_UPDATE's length");
            check((((uint32_t)p[0] & 0x7f) << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
                   p[3]) != 0,
                  "a WINDOW_UPDATE of 0");
            break;
        default:
            check(false, "a frame type a server does not send");
        }
        off += 9 + len;
    }
    memmove(o->buf, o->buf + off, o->len - off);
    o->len -= off;
}

/* What the server wrote since the last call. */
static void drain_output(int fd, out *o) {
    for (;;) {
        if (o->cap - o->len < 65536) {
            o->cap = o->cap ? o->cap * 2 : 131072;
            o->buf = realloc(o->buf, o->cap);
            check(o->buf != NULL, "out of memory");
        }
        ssize_t n = recv(fd, o->buf + o->len, o->cap - o->len, MSG_DONTWAIT);
        if (n <= 0)
            return;
        o->len += (size_t)n;
        frames(o);
    }
}

/* Turns the loop until it is quiet: no completion and nothing written for
 * three turns in a row (a bounded number of turns). */
static void pump(int fd, out *o) {
    static tl_completion cq[256];
    int idle = 0;
    for (int i = 0; i < 10000 && idle < 3; i++) {
        size_t had = o->len + o->frames;
        int n = sws_worker_turn(w, cq, 256, 0);
        check(n >= 0, "the worker stopped");
        drain_output(fd, o);
        idle = n == 0 && o->len + o->frames == had ? idle + 1 : 0;
    }
}

/* Writes p whole, turning the loop while the socket is full. */
static void client_send(int fd, out *o, const uint8_t *p, size_t n) {
    for (int spins = 0; n && spins < 1000; spins++) {
        ssize_t k = send(fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (k > 0) {
            p += k;
            n -= (size_t)k;
        } else if (k < 0 && errno != EAGAIN && errno != EINTR) {
            return; /* the server closed: the rest is not read */
        }
        pump(fd, o);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!w)
        setup();
    if (size < 1)
        return 0;
    size_t cut = (size_t)data[0] * (size - 1) / 256;
    data++;
    size--;
    int sv[2];
    check(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0, "socketpair");
    tl_handle h;
    check(tl_adopt_fd(w->loop, sv[0], &h) == 0, "tl_adopt_fd");
    w->sc.ops->open(w, &w->sc, h, 0);
    out o = {0};
    check(nghttp2_hd_inflate_new(&o.inf) == 0, "inflater");

    uint8_t *first = malloc(SWS_H2_PREFACE_LEN + cut);
    check(first != NULL, "out of memory");
    memcpy(first, SWS_H2_PREFACE, SWS_H2_PREFACE_LEN);
    memcpy(first + SWS_H2_PREFACE_LEN, data, cut);
    client_send(sv[1], &o, first, SWS_H2_PREFACE_LEN + cut);
    free(first);
    pump(sv[1], &o);
    client_send(sv[1], &o, data + cut, size - cut);
    pump(sv[1], &o);
    /* The client is done sending: the server answers what it took, then
     * closes (conn.c's peer EOF). */
    shutdown(sv[1], SHUT_WR);
    pump(sv[1], &o);
    bool cut_short = false;
    if (w->active) {
        /* Streams wait for a window the client never opens: the sweep, an
         * hour later (keepalive and send timeouts: GOAWAY, then the close). */
        w->sc.ops->sweep(w, &w->sc, tl_loop_now(w->loop) + 3600 * 1000);
        pump(sv[1], &o);
    }
    for (int k = 0; w->active && k < 4; k++) {
        /* Still open (a write the client did not read): closed here. */
        cut_short = true;
        w->sc.ops->sweep(w, &w->sc, tl_loop_now(w->loop) + (uint64_t)(k + 2) * 3600 * 1000);
        for (sws_conn *c = w->active; c; c = c->next)
            if (!sws_phase_gone(c->phase))
                sws_conn_close(w, c);
        pump(sv[1], &o);
    }
    check(w->active == NULL, "a connection outlived its client");
    drain_output(sv[1], &o);
    check(cut_short || o.len == 0, "the output ends inside a frame");
    check(cut_short || !o.in_block, "the output ends inside a header block");
    if (getenv("FUZZ_H2_VERBOSE"))
        fprintf(stderr,
                "fuzz_h2: %zu frames: DATA %zu HEADERS %zu RST %zu SETTINGS %zu PING %zu "
                "GOAWAY %zu WINDOW_UPDATE %zu%s\n",
                o.frames, o.by_type[0], o.by_type[1], o.by_type[3], o.by_type[4], o.by_type[6],
                o.by_type[7], o.by_type[8], cut_short ? ", cut short" : "");
    close(sv[1]);
    nghttp2_hd_inflate_del(o.inf);
    free(o.buf);
    free(o.block);
    return 0;
}
