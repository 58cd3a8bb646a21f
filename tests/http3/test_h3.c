/* The HTTP/3 engine on a real UDP socket on 127.0.0.1 (port 0), driven by a
 * small host loop in this process (poll(): the datagrams in, the engine's
 * expiry, the client's output), against h3get (tests/h3) run as a child.
 * The routes: the respond scenario itself on "/" and "/big" (1 MiB), and a
 * streamed answer of this file's own on "/stream" that goes through room,
 * commit and `more` as the static and proxy scenarios do. Every wait is
 * bounded (WAIT_S); the engine's counters are read between runs, in this
 * thread. */
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
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "h3.h" /* SWS_H3_DEFAULT_STREAM_WINDOW */
#include "http3.h"
#include "sws.h"
#include "tls_test_util.h"

#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>

extern char **environ;

#define WAIT_S 30
#define HELLO "hello over h3\n"
#define BIG_SIZE (1024 * 1024)
#define STREAM_SIZE (300 * 1000 + 7) /* several rings' worth, odd */

static char g_dir[256], g_cert[300], g_key[300], g_cert2[300], g_key2[300], g_post[300], g_out[300];
static const char *g_ca; /* what h3get trusts: g_cert unless a case says otherwise */
/* An endpoint on its own socket: [0] the one every case speaks to; [1]
 * shares its session ticket key (as a second loop's would), [2] has one of
 * its own. */
typedef struct host {
    int fd;
    struct sockaddr_in addr;
    sws_h3_endpoint *ep;
} host;
#define NHOSTS 3
static host g_hosts[NHOSTS];
static host *const g_main = &g_hosts[0];
static uint8_t g_ticket_key[SWS_H3_TICKET_KEY_LEN];
/* The main endpoint's stateless reset secret, the host's (as a restarted
 * scalwsd passes it on): its resets' tokens are checked against it. */
static uint8_t g_reset_secret[SWS_H3_RESET_SECRET_LEN];
static sws_worker *g_w;
static sws_scenario_cfg g_hello_cfg, g_big_cfg;
static sws_scenario g_hello, g_big, g_stream;
static char *g_big_body;

/* ---- a scenario that streams its body through room and commit ---------------------- */

static uint8_t pattern(uint64_t i) {
    return (uint8_t)(i * 31 + 7);
}

typedef struct streamed {
    sws_ex_mark mark;
    uint64_t off;
} streamed;
static streamed g_streams[SWS_H3_DEFAULT_STREAMS];

/* Fills what room there is; true once the body is all given. */
static bool stream_fill(sws_worker *w, sws_exchange *x) {
    streamed *s = &g_streams[sws_ex_id(x)];
    while (s->off < STREAM_SIZE) {
        size_t room;
        char *at = sws_ex_room(w, x, &room);
        if (!at || room == 0)
            return false;
        size_t k = room < STREAM_SIZE - s->off ? room : (size_t)(STREAM_SIZE - s->off);
        for (size_t i = 0; i < k; i++)
            at[i] = (char)pattern(s->off + i);
        sws_ex_commit(w, x, k);
        s->off += k;
    }
    return true;
}

static int stream_answer(sws_worker *w, sws_scenario *sc, sws_exchange *x) {
    (void)sc;
    g_streams[sws_ex_id(x)] = (streamed){.mark = sws_ex_mark_of(x)};
    sws_answer a = {
        .status = 200, .content_type = "application/octet-stream", .length = STREAM_SIZE};
    int rc = sws_ex_head(w, x, &a);
    if (rc < 0)
        return rc;
    return stream_fill(w, x) ? SWS_ANSWER_DONE : SWS_ANSWER_PENDING;
}

static void stream_more(sws_worker *w, sws_scenario *sc, sws_exchange *x) {
    (void)sc;
    assert_true(sws_ex_marked(x, g_streams[sws_ex_id(x)].mark));
    if (stream_fill(w, x))
        sws_ex_end(w, x);
}

static const sws_scenario_ops stream_ops = {
    .name = "test-stream", .answer = stream_answer, .more = stream_more};

/* A body of unknown length given with sws_ex_body, then trailers: as the
 * proxy relays a chunked upstream answer. */
#define CHUNK "0123456789abcdef"
#define CHUNKS 1000
static int chunked_answer(sws_worker *w, sws_scenario *sc, sws_exchange *x) {
    (void)sc;
    sws_answer a = {.status = 200, .content_type = "text/plain", .length = SWS_BODY_STREAM};
    int rc = sws_ex_head(w, x, &a);
    for (int i = 0; rc == 0 && i < CHUNKS; i++)
        rc = sws_ex_body(w, x, CHUNK, sizeof(CHUNK) - 1);
    sws_field t = SWS_FIELD_LIT("X-Chunks", "1000");
    if (rc == 0)
        rc = sws_ex_trailers(w, x, &t, 1);
    return rc < 0 ? rc : SWS_ANSWER_DONE;
}

static const sws_scenario_ops chunked_ops = {.name = "test-chunked", .answer = chunked_answer};
static sws_scenario g_chunked;

/* A scenario that takes the request's body, as the proxy does, but slowly:
 * nothing while g_taker.hold, then at most TAKE_PER_TURN bytes per turn of
 * the host loop (its tick calls sws_ex_more). It answers the body's length
 * and hash, so the bytes are checked one by one. */
#define TAKE_PER_TURN 16384
static struct taker {
    sws_exchange *x;
    sws_ex_mark mark;
    bool hold;
    size_t budget;
    uint64_t got, hash;
    unsigned heads, ends, flushes, conn_ends;
    bool head_ok;      /* request_head saw :path as the target and :authority as host */
    uint64_t held_max; /* the endpoint's body_held, the most the tick saw */
} g_taker;

static int take_head(sws_worker *w, sws_scenario *sc, sws_exchange *x) {
    (void)w;
    (void)sc;
    const sws_head *m = sws_ex_request_head(x);
    g_taker.x = x;
    g_taker.mark = sws_ex_mark_of(x);
    g_taker.got = 0;
    g_taker.hash = 14695981039346656037ull;
    g_taker.heads++;
    g_taker.head_ok = false;
    for (uint32_t i = 0; m && i < m->nf; i++)
        if (m->f[i].name_len == 4 && memcmp(m->f[i].name, "host", 4) == 0)
            g_taker.head_ok = m->target_len == 5 && memcmp(m->target, "/take", 5) == 0;
    return 0;
}

static size_t take_room(sws_worker *w, sws_scenario *sc, sws_exchange *x) {
    (void)w;
    (void)sc;
    (void)x;
    return g_taker.hold ? 0 : g_taker.budget;
}

static int take_body(sws_worker *w, sws_scenario *sc, sws_exchange *x, const char *d, size_t n) {
    (void)w;
    (void)sc;
    (void)x;
    assert_false(g_taker.hold);
    assert_true(n <= g_taker.budget); /* never past the room it gave */
    g_taker.budget -= n;
    g_taker.got += n;
    for (size_t i = 0; i < n; i++)
        g_taker.hash = (g_taker.hash ^ (uint8_t)d[i]) * 1099511628211ull;
    return 0;
}

static void take_flush(sws_worker *w, sws_scenario *sc, sws_exchange *x) {
    (void)w;
    (void)sc;
    (void)x;
    g_taker.flushes++;
}

static int take_end(sws_worker *w, sws_scenario *sc, sws_exchange *x) {
    (void)w;
    (void)sc;
    (void)x;
    g_taker.ends++;
    return 0;
}

static int take_answer(sws_worker *w, sws_scenario *sc, sws_exchange *x) {
    (void)sc;
    static char body[64];
    int n = snprintf(body, sizeof(body), "%llu %016llx\n", (unsigned long long)g_taker.got,
                     (unsigned long long)g_taker.hash);
    sws_answer a = {.status = 200, .content_type = "text/plain", .length = (uint64_t)n};
    int rc = sws_ex_head(w, x, &a);
    if (rc == 0)
        rc = sws_ex_body(w, x, body, (size_t)n);
    g_taker.x = NULL;
    return rc < 0 ? rc : SWS_ANSWER_DONE;
}

static void take_conn_end(sws_worker *w, sws_scenario *sc, sws_exchange *x) {
    (void)w;
    (void)sc;
    (void)x;
    g_taker.conn_ends++;
    g_taker.x = NULL;
}

/* Each turn of the host loop: the most held, and the next slice of room. */
static void take_tick(void) {
    uint64_t held = sws_h3_stats_of(g_main->ep).body_held;
    if (held > g_taker.held_max)
        g_taker.held_max = held;
    /* Held until the client has filled what flow control lets it send. */
    if (g_taker.hold && held >= SWS_H3_DEFAULT_STREAM_WINDOW - 4096)
        g_taker.hold = false;
    if (!g_taker.hold && g_taker.x && sws_ex_marked(g_taker.x, g_taker.mark)) {
        g_taker.budget = TAKE_PER_TURN;
        sws_ex_more(g_w, g_taker.x);
    }
}

static const sws_scenario_ops take_ops = {.name = "test-take",
                                          .answer = take_answer,
                                          .request_head = take_head,
                                          .request_body = take_body,
                                          .request_end = take_end,
                                          .request_room = take_room,
                                          .request_flush = take_flush,
                                          .conn_end = take_conn_end};
static sws_scenario g_take;

static sws_scenario *route(void *ud, sws_exchange *x, const sws_http_request *req) {
    (void)ud;
    (void)x;
    if (strcmp(req->path, "/big") == 0)
        return &g_big;
    if (strcmp(req->path, "/stream") == 0)
        return &g_stream;
    if (strcmp(req->path, "/chunked") == 0)
        return &g_chunked;
    if (strcmp(req->path, "/take") == 0)
        return &g_take;
    return &g_hello;
}

/* ---- the host loop ---------------------------------------------------------------- */

/* The Source CIDs of the long-header packets the engine sent: each must be
 * SWS_H3_CID_LEN bytes with the loop's index (3 here) at its steering byte. */
static unsigned g_scids, g_scids_bad;

static void watch_scid(const uint8_t *d, size_t len) {
    if (len < 7 || !(d[0] & 0x80) || memcmp(d + 1, "\0\0\0\0", 4) == 0)
        return; /* a short header, or a version negotiation */
    size_t dl = d[5];
    if (6 + dl >= len)
        return;
    size_t sl = d[6 + dl];
    const uint8_t *scid = d + 7 + dl;
    g_scids++;
    if (sl != SWS_H3_CID_LEN || 7 + dl + sl > len || scid[SWS_H3_CID_LOOP_BYTE] != 3)
        g_scids_bad++;
}

/* When set, every g_drop_every-th datagram the engine sends is lost on
 * the way (a lossy path, without netem); and the next g_drop_first ones. */
static unsigned g_drop_every, g_sent, g_drop_first;

static int send_dgram(void *ud, const struct sockaddr *local, socklen_t local_len,
                      const struct sockaddr *remote, socklen_t remote_len, unsigned ecn,
                      const uint8_t *data, size_t len) {
    host *h = ud;
    watch_scid(data, len);
    if (g_drop_first) {
        g_drop_first--;
        return 0;
    }
    if (g_drop_every && ++g_sent % g_drop_every == 0)
        return 0; /* sent, as far as the engine knows */
    (void)local;
    (void)local_len;
    (void)ecn; /* the test host sets no ECN codepoint */
    ssize_t n = sendto(h->fd, data, len, 0, remote, remote_len);
    return n < 0 ? -errno : 0;
}

static void take_datagrams(host *h) {
    uint8_t buf[65536];
    for (;;) {
        struct sockaddr_storage from;
        socklen_t fl = sizeof(from);
        ssize_t n = recvfrom(h->fd, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
        if (n < 0)
            return;
        sws_h3_input(h->ep, buf, (size_t)n, (struct sockaddr *)&from, fl,
                     (struct sockaddr *)&h->addr, sizeof(h->addr), 0, sws_h3_now());
    }
}

/* One turn of every endpoint: waits for a datagram, fd (when >= 0) or an
 * endpoint's expiry, at most 50 ms. fd's readiness is returned. */
static bool turn(int fd) {
    struct pollfd p[NHOSTS + 1];
    uint64_t now = sws_h3_now(), exp = UINT64_MAX;
    for (int i = 0; i < NHOSTS; i++) {
        p[i] = (struct pollfd){.fd = g_hosts[i].fd, .events = POLLIN};
        uint64_t e = sws_h3_next_expiry(g_hosts[i].ep);
        exp = e < exp ? e : exp;
    }
    p[NHOSTS] = (struct pollfd){.fd = fd, .events = POLLIN};
    int ms = 50;
    if (exp <= now)
        ms = 0;
    else if (exp - now < 50u * 1000000u)
        ms = (int)((exp - now + 999999) / 1000000);
    int n = poll(p, fd >= 0 ? NHOSTS + 1 : NHOSTS, ms);
    for (int i = 0; i < NHOSTS; i++) {
        if (n > 0 && (p[i].revents & POLLIN))
            take_datagrams(&g_hosts[i]);
        if (sws_h3_next_expiry(g_hosts[i].ep) <= sws_h3_now())
            sws_h3_on_timer(g_hosts[i].ep, sws_h3_now());
    }
    take_tick();
    return n > 0 && fd >= 0 && (p[NHOSTS].revents & (POLLIN | POLLHUP));
}

/* Once the endpoint has counted this many requests, h3get's loop drains it,
 * or reloads it with g_cert2. */
static uint64_t g_drain_at, g_reload_at;

/* Runs h3get with args (host:port first) while the loop turns; its stdout
 * into out (NUL-terminated). Its exit status. */
static int h3get(char *out, size_t cap, const char *const *args) {
    char hostport[64];
    snprintf(hostport, sizeof(hostport), "127.0.0.1:%u", ntohs(g_main->addr.sin_port));
    const char *argv[64];
    int n = 0;
    argv[n++] = H3GET_PATH;
    argv[n++] = "--cacert";
    argv[n++] = g_ca;
    argv[n++] = "-t";
    argv[n++] = "20";
    while (*args && n < 60) {
        const char *a = *args++;
        argv[n++] = strcmp(a, "HOSTPORT") == 0 ? hostport : a;
    }
    argv[n] = NULL;
    int pfd[2];
    assert_int_equal(pipe2(pfd, O_CLOEXEC), 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
    pid_t pid;
    assert_int_equal(posix_spawn(&pid, H3GET_PATH, &fa, NULL, (char *const *)argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    close(pfd[1]);
    size_t have = 0;
    bool open_ = true;
    uint64_t until = sws_h3_now() + (uint64_t)WAIT_S * 1000000000u;
    while (open_ && sws_h3_now() < until) {
        if (g_reload_at && sws_h3_stats_of(g_main->ep).requests >= g_reload_at) {
            char err[256];
            assert_int_equal(sws_h3_endpoint_reload(g_main->ep, g_cert2, g_key2, err, sizeof(err)),
                             0);
            g_reload_at = 0;
        }
        if (g_drain_at && sws_h3_stats_of(g_main->ep).requests >= g_drain_at) {
            sws_h3_drain(g_main->ep);
            g_drain_at = 0;
        }
        if (!turn(pfd[0]))
            continue;
        ssize_t k = read(pfd[0], out + have, cap - 1 - have);
        if (k <= 0)
            open_ = false;
        else
            have += (size_t)k;
        assert_true(have < cap - 1);
    }
    out[have] = '\0';
    close(pfd[0]);
    if (open_)
        kill(pid, SIGKILL);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    /* The client's CONNECTION_CLOSE: its connection ends here too. */
    until = sws_h3_now() + (uint64_t)WAIT_S * 1000000000u;
    while (sws_h3_stats_of(g_main->ep).open_connections && sws_h3_now() < until)
        turn(-1);
    assert_false(open_);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static uint64_t fnv(const uint8_t *p, size_t n) {
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* Each answer line of h3get: "<index> <status> <bytes> <hash>". A request
 * never answered (status 0: refused past a GOAWAY that crossed it) is the
 * caller's to count, from h3get's exit status. */
static int answers(const char *out, int status, uint64_t bytes, uint64_t hash) {
    int n = 0;
    for (const char *l = out; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l)) {
        int idx, st;
        unsigned long long b, h;
        if (sscanf(l, "%d %d %llu %llx", &idx, &st, &b, &h) != 4 || st == 0)
            continue;
        assert_int_equal(st, status);
        assert_int_equal(b, bytes);
        if (hash)
            assert_true(h == hash);
        n++;
    }
    return n;
}

/* ---- the fixture ------------------------------------------------------------------ */

static void write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static void respond_cfg(sws_scenario_cfg *cfg, sws_scenario *sc, char *body, size_t len) {
    cfg->scenario = SWS_SCENARIO_RESPOND;
    cfg->status = 200;
    cfg->body = body;
    cfg->body_len = len;
    snprintf(cfg->content_type, sizeof(cfg->content_type), "text/plain");
    sc->ops = &sws_respond_ops;
    sc->cfg = cfg;
    assert_int_equal(sws_respond_ops.init(g_w, sc), 0);
}

static int setup(void **state) {
    (void)state;
    signal(SIGPIPE, SIG_IGN);
    const char *tmp = getenv("SWS_TEST_TMP");
    snprintf(g_dir, sizeof(g_dir), "%s/h3test.XXXXXX", tmp ? tmp : "/tmp");
    if (!mkdtemp(g_dir))
        return -1;
    snprintf(g_cert, sizeof(g_cert), "%s/cert.pem", g_dir);
    snprintf(g_key, sizeof(g_key), "%s/key.pem", g_dir);
    snprintf(g_post, sizeof(g_post), "%s/post.bin", g_dir);
    snprintf(g_out, sizeof(g_out), "%s/out.bin", g_dir);
    snprintf(g_cert2, sizeof(g_cert2), "%s/cert2.pem", g_dir);
    snprintf(g_key2, sizeof(g_key2), "%s/key2.pem", g_dir);
    if (tt_make_cert(TT_EC, g_cert, g_key) != 0 || tt_make_cert(TT_EC, g_cert2, g_key2) != 0)
        return -1;
    g_ca = g_cert;
    g_w = calloc(1, sizeof(*g_w)); /* no access log: w->logs stays NULL */
    g_big_body = malloc(BIG_SIZE);
    for (size_t i = 0; i < BIG_SIZE; i++)
        g_big_body[i] = (char)(i * 7 + i / 251);
    respond_cfg(&g_hello_cfg, &g_hello, HELLO, sizeof(HELLO) - 1);
    respond_cfg(&g_big_cfg, &g_big, g_big_body, BIG_SIZE);
    g_stream.ops = &stream_ops;
    g_stream.cfg = &g_hello_cfg;
    g_chunked.ops = &chunked_ops;
    g_chunked.cfg = &g_hello_cfg;
    g_take.ops = &take_ops;
    g_take.cfg = &g_hello_cfg;
    g_w->stash_heads = true; /* a route's scenario takes the request: fields are kept */

    if (sws_h3_ticket_key(g_ticket_key) != 0)
        return -1;
    for (size_t i = 0; i < sizeof(g_reset_secret); i++)
        g_reset_secret[i] = (uint8_t)(i * 29 + 1);
    for (int i = 0; i < NHOSTS; i++) {
        host *h = &g_hosts[i];
        h->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        h->addr =
            (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t al = sizeof(h->addr);
        if (bind(h->fd, (struct sockaddr *)&h->addr, sizeof(h->addr)) != 0 ||
            getsockname(h->fd, (struct sockaddr *)&h->addr, &al) != 0)
            return -1;
        sws_h3_params p;
        sws_h3_params_default(&p);
        if (i == 2)
            p.max_connections = 1;
        sws_h3_settings s = {.cert_file = g_cert,
                             .key_file = g_key,
                             .loop_index = 3,
                             .send = send_dgram,
                             .send_ud = h,
                             .w = g_w,
                             .route = route,
                             .limits = SWS_HTTP_DEFAULT_LIMITS,
                             .ticket_key = i < 2 ? g_ticket_key : NULL,
                             .reset_secret = i == 0 ? g_reset_secret : NULL,
                             .params = &p};
        char err[256];
        if (sws_h3_endpoint_new(&h->ep, &s, err, sizeof(err)) != 0) {
            fprintf(stderr, "%s\n", err);
            return -1;
        }
    }
    return 0;
}

static int teardown(void **state) {
    (void)state;
    for (int i = 0; i < NHOSTS; i++) {
        sws_h3_endpoint_free(g_hosts[i].ep);
        close(g_hosts[i].fd);
    }
    sws_respond_ops.free(g_w, &g_hello);
    sws_respond_ops.free(g_w, &g_big);
    free(g_big_body);
    free(g_w);
    unlink(g_cert);
    unlink(g_key);
    unlink(g_cert2);
    unlink(g_key2);
    unlink(g_post);
    unlink(g_out);
    rmdir(g_dir);
    return 0;
}

/* ---- the cases ------------------------------------------------------------------- */

static char g_buf[1 << 16];

static void get_is_answered(void **state) {
    (void)state;
    const char *args[] = {"-i", "HOSTPORT", "/", NULL};
    assert_int_equal(h3get(g_buf, sizeof(g_buf), args), 0);
    assert_int_equal(
        answers(g_buf, 200, sizeof(HELLO) - 1, fnv((const uint8_t *)HELLO, sizeof(HELLO) - 1)), 1);
    assert_non_null(strstr(g_buf, "< content-type: text/plain"));
    assert_non_null(strstr(g_buf, "< server: scalwsd"));
    assert_non_null(strstr(g_buf, "< date: "));
}

static void head_has_no_body(void **state) {
    (void)state;
    const char *args[] = {"-i", "-X", "HEAD", "HOSTPORT", "/", NULL};
    assert_int_equal(h3get(g_buf, sizeof(g_buf), args), 0);
    assert_int_equal(answers(g_buf, 200, 0, 0), 1);
    assert_non_null(strstr(g_buf, "< content-length: 14"));
}

static void post_is_answered(void **state) {
    (void)state;
    static char body[300 * 1000]; /* past one stream window */
    memset(body, 'p', sizeof(body));
    write_file(g_post, body, sizeof(body));
    uint64_t before = sws_h3_stats_of(g_main->ep).requests;
    const char *args[] = {"-d", g_post, "HOSTPORT", "/", NULL};
    assert_int_equal(h3get(g_buf, sizeof(g_buf), args), 0);
    assert_int_equal(answers(g_buf, 200, sizeof(HELLO) - 1, 0), 1);
    assert_int_equal(sws_h3_stats_of(g_main->ep).requests - before, 1);
}

static void hundred_streams_on_one_connection(void **state) {
    (void)state;
    sws_h3_stats before = sws_h3_stats_of(g_main->ep);
    const char *args[] = {"-n", "100", "HOSTPORT", "/", NULL};
    assert_int_equal(h3get(g_buf, sizeof(g_buf), args), 0);
    assert_int_equal(answers(g_buf, 200, sizeof(HELLO) - 1, 0), 100);
    sws_h3_stats after = sws_h3_stats_of(g_main->ep);
    assert_int_equal(after.connections - before.connections, 1);
    assert_int_equal(after.streams - before.streams, 100);
}

static void more_than_the_stream_limit_waits_for_room(void **state) {
    (void)state;
    /* 250 requests, the server allows 100 at once: the rest open as
     * earlier ones close (MAX_STREAMS). */
    const char *args[] = {"-q", "-n", "250", "HOSTPORT", "/", NULL};
    assert_int_equal(h3get(g_buf, sizeof(g_buf), args), 0);
}

static void one_mib_answer(void **state) {
    (void)state;
    const char *args[] = {"-o", g_out, "HOSTPORT", "/big", NULL};
    assert_int_equal(h3get(g_buf, sizeof(g_buf), args), 0);
    assert_int_equal(answers(g_buf, 200, BIG_SIZE, fnv((const uint8_t *)g_big_body, BIG_SIZE)), 1);
    struct stat sb;
    assert_int_equal(stat(g_out, &sb), 0);
    assert_int_equal(sb.st_size, BIG_SIZE);
}

static void streamed_answer_through_room(void **state) {
    (void)state;
    static uint8_t want[STREAM_SIZE];
    for (uint64_t i = 0; i < STREAM_SIZE; i++)
        want[i] = pattern(i);
    const char *args[] = {"-n", "3", "HOSTPORT", "/stream", NULL};
    assert_int_equal(h3get(g_buf, sizeof(g_buf), args), 0);
    assert_int_equal(answers(g_buf, 200, STREAM_SIZE, fnv(want, STREAM_SIZE)), 3);
}

static void body_of_unknown_length_with_trailers(void **state) {
    (void)state;
    static char want[CHUNKS * (sizeof(CHUNK) - 1)];
    for (int i = 0; i < CHUNKS; i++)
        memcpy(want + i * (sizeof(CHUNK) - 1), CHUNK, sizeof(CHUNK) - 1);
    const char *args[] = {"-i", "HOSTPORT", "/chunked", NULL};
    assert_int_equal(h3get(g_buf, sizeof(g_buf), args), 0);
    assert_int_equal(answers(g_buf, 200, sizeof(want), fnv((const uint8_t *)want, sizeof(want))),
                     1);
    assert_null(strstr(g_buf, "content-length"));
    assert_non_null(strstr(g_buf, "< x-chunks: 1000")); /* lowercased, after the body */
}

static void long_target_is_414(void **state) {
    (void)state;
    static char path[9000];
    path[0] = '/';
    memset(path + 1, 'a', sizeof(path) - 2);
    path[sizeof(path) - 1] = '\0';
    const char *args[] = {"HOSTPORT", path, NULL};
    assert_int_equal(h3get(g_buf, sizeof(g_buf), args), 0);
    assert_int_equal(answers(g_buf, 414, strlen("414 URI Too Long\n"), 0), 1);
}

static void unknown_method_is_501(void **state) {
    (void)state;
    const char *args[] = {"-X", "BREW", "HOSTPORT", "/", NULL};
    assert_int_equal(h3get(g_buf, sizeof(g_buf), args), 0);
    assert_int_equal(answers(g_buf, 501, strlen("501 Not Implemented\n"), 0), 1);
}

/* One datagram in 25 lost on the way to the client: the answers arrive
 * whole all the same, and the engine counts what ngtcp2 declared lost. */
static void losses_are_recovered_and_counted(void **state) {
    (void)state;
    sws_h3_stats before = sws_h3_stats_of(g_main->ep);
    g_drop_every = 25;
    const char *args[] = {"-n", "3", "-P", "3", "HOSTPORT", "/big", NULL};
    int rc = h3get(g_buf, sizeof(g_buf), args);
    g_drop_every = 0;
    assert_int_equal(rc, 0);
    assert_int_equal(answers(g_buf, 200, BIG_SIZE, fnv((const uint8_t *)g_big_body, BIG_SIZE)), 3);
    sws_h3_stats after = sws_h3_stats_of(g_main->ep);
    assert_true(after.stream_packets_lost - before.stream_packets_lost >= 3);
    assert_true(after.congestion_events > before.congestion_events);
    assert_int_equal(after.bytes_in_flight, 0); /* no connection left */
}

/* The server's first flight lost: the handshake completes a second later,
 * by its probe timeout, and the application space's PTO, armed from its
 * 0.5-RTT packets of that first flight, is long due by then while the pacer
 * (paced at the initial RTT) holds the probe back. It fires once and its
 * probe goes when the pacer allows, instead of firing again and again at
 * once (ngtcp2 0.12 computes the timer from the last packet sent: each
 * firing doubled the backoff with no probe out, 6 to 10 in one turn, after
 * which a tail loss waited 2^10 PTOs: the stall under loss). */
static void a_held_probe_fires_its_timeout_once(void **state) {
    (void)state;
    sws_h3_stats before = sws_h3_stats_of(g_main->ep);
    g_drop_first = 4; /* the Initial, Handshake and 1-RTT packets of the first flight */
    const char *args[] = {"HOSTPORT", "/big", NULL};
    int rc = h3get(g_buf, sizeof(g_buf), args);
    g_drop_first = 0;
    assert_int_equal(rc, 0);
    assert_int_equal(answers(g_buf, 200, BIG_SIZE, fnv((const uint8_t *)g_big_body, BIG_SIZE)), 1);
    sws_h3_stats after = sws_h3_stats_of(g_main->ep);
    /* The handshake's PTO (one, perhaps two) and the application's (one). */
    assert_in_range(after.probe_timeouts - before.probe_timeouts, 1, 4);
}

/* The client moves to a new port after every answer, telling ngtcp2 (a
 * migration: a new connection ID, the path validated) or not (a NAT
 * rebinding: the server validates the new path): every request is answered
 * on the one connection. */
static void the_client_migrates_on_one_connection(void **state) {
    (void)state;
    const char *opts[] = {"--migrate", "--nat-rebind"};
    for (int i = 0; i < 2; i++) {
        sws_h3_stats before = sws_h3_stats_of(g_main->ep);
        const char *args[] = {opts[i], "1", "-n", "6", "-P", "1", "HOSTPORT", "/", NULL};
        assert_int_equal(h3get(g_buf, sizeof(g_buf), args), 0);
        assert_int_equal(answers(g_buf, 200, sizeof(HELLO) - 1, 0), 6);
        assert_non_null(strstr(g_buf, "rebind 2 "));
        assert_null(strstr(g_buf, " failed"));
        if (i == 0)
            assert_non_null(strstr(g_buf, " validated"));
        sws_h3_stats after = sws_h3_stats_of(g_main->ep);
        assert_int_equal(after.connections - before.connections, 1);
        assert_int_equal(after.requests - before.requests, 6);
    }
}

/* A datagram of ours straight to the endpoint; its answer (0: none within
 * a second). */
static ssize_t raw(const uint8_t *pkt, size_t len, uint8_t *ans, size_t cap) {
    int c = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    assert_int_equal(connect(c, (struct sockaddr *)&g_main->addr, sizeof(g_main->addr)), 0);
    assert_int_equal(send(c, pkt, len, 0), (ssize_t)len);
    ssize_t n = 0;
    for (int i = 0; i < 20 && n <= 0; i++) {
        turn(-1);
        n = recv(c, ans, cap, MSG_DONTWAIT);
    }
    close(c);
    return n < 0 ? 0 : n;
}

static void unknown_version_is_negotiated(void **state) {
    (void)state;
    uint8_t pkt[1200] = {0xc0, 0x0a, 0x1a, 0x2a, 0x3a, 8, 1, 2, 3, 4, 5, 6, 7, 8, 4, 9, 9, 9, 9};
    uint8_t ans[1500];
    ssize_t n = raw(pkt, sizeof(pkt), ans, sizeof(ans));
    assert_true(n > 7);
    assert_true(ans[0] & 0x80);
    assert_memory_equal(ans + 1, "\0\0\0\0", 4); /* version 0: a version negotiation */
    /* Its DCID is our packet's SCID (RFC 9000 17.2.1). */
    assert_int_equal(ans[5], 4);
    assert_memory_equal(ans + 6, "\x09\x09\x09\x09", 4);
    /* ... and version 1 among those listed. */
    bool v1 = false;
    for (ssize_t i = 6 + 4 + 1 + 8; i + 4 <= n; i += 4)
        v1 |= memcmp(ans + i, "\0\0\0\1", 4) == 0;
    assert_true(v1);
    /* Not for a datagram too small to open a connection (RFC 9000 5.2.2):
     * an attacker's small packet must not buy a larger answer. */
    assert_int_equal(raw(pkt, 200, ans, sizeof(ans)), 0);
}

static void unknown_connection_gets_a_stateless_reset(void **state) {
    (void)state;
    uint64_t before = sws_h3_stats_of(g_main->ep).stateless_resets;
    uint8_t pkt[80];
    for (size_t i = 0; i < sizeof(pkt); i++)
        pkt[i] = (uint8_t)(i * 13 + 5);
    pkt[0] = 0x41; /* a short header */
    uint8_t ans[1500];
    ssize_t n = raw(pkt, sizeof(pkt), ans, sizeof(ans));
    assert_true(n >= 21);
    assert_true(n < (ssize_t)sizeof(pkt)); /* smaller: two endpoints cannot loop */
    assert_int_equal(ans[0] & 0xc0, 0x40);
    assert_int_equal(sws_h3_stats_of(g_main->ep).stateless_resets - before, 1);
    /* Its token (the last 16 bytes) is the host's secret's for that CID. */
    ngtcp2_cid cid;
    ngtcp2_cid_init(&cid, pkt + 1, SWS_H3_CID_LEN);
    uint8_t token[NGTCP2_STATELESS_RESET_TOKENLEN];
    assert_int_equal(ngtcp2_crypto_generate_stateless_reset_token(token, g_reset_secret,
                                                                  sizeof(g_reset_secret), &cid),
                     0);
    assert_memory_equal(ans + n - NGTCP2_STATELESS_RESET_TOKENLEN, token, sizeof(token));
    /* A tiny one gets none (it could be a reset itself). */
    assert_int_equal(raw(pkt, 21, ans, sizeof(ans)), 0);
}

static void garbage_is_dropped_and_the_server_serves(void **state) {
    (void)state;
    uint8_t pkt[1200];
    uint8_t ans[1500];
    for (int k = 0; k < 4; k++) {
        for (size_t i = 0; i < sizeof(pkt); i++)
            pkt[i] = (uint8_t)(i * (k + 3) + k);
        pkt[0] = 0xc0 | (uint8_t)k;
        memcpy(pkt + 1, "\0\0\0\1", 4); /* version 1, nonsense after */
        raw(pkt, sizeof(pkt), ans, sizeof(ans));
    }
    /* An empty datagram (fuzz_h3's first finding: an assertion in ngtcp2). */
    assert_int_equal(raw(pkt, 0, ans, sizeof(ans)), 0);
    const char *args[] = {"HOSTPORT", "/", NULL};
    assert_int_equal(h3get(g_buf, sizeof(g_buf), args), 0);
    assert_int_equal(answers(g_buf, 200, sizeof(HELLO) - 1, 0), 1);
}

static void connection_ids_carry_the_loop_index(void **state) {
    (void)state;
    g_scids = g_scids_bad = 0;
    const char *args[] = {"HOSTPORT", "/", NULL};
    assert_int_equal(h3get(g_buf, sizeof(g_buf), args), 0);
    assert_int_equal(answers(g_buf, 200, sizeof(HELLO) - 1, 0), 1);
    assert_true(g_scids > 0); /* the handshake's long headers name our SCID */
    assert_int_equal(g_scids_bad, 0);
}

/* A session resumes on another endpoint that shares the ticket key (another
 * loop's, after the wiring), and on one that does not the client falls back
 * to a full handshake. */
static void sessions_resume_where_the_ticket_key_is_shared(void **state) {
    (void)state;
    char other[64];
    snprintf(other, sizeof(other), "127.0.0.1:%u", ntohs(g_hosts[1].addr.sin_port));
    const char *shared[] = {"--resume", other, "HOSTPORT", "/", NULL};
    assert_int_equal(h3get(g_buf, sizeof(g_buf), shared), 0);
    assert_non_null(strstr(g_buf, "resumed 1"));
    assert_int_equal(answers(g_buf, 200, sizeof(HELLO) - 1, 0), 2);

    snprintf(other, sizeof(other), "127.0.0.1:%u", ntohs(g_hosts[2].addr.sin_port));
    const char *own[] = {"--resume", other, "HOSTPORT", "/", NULL};
    assert_int_equal(h3get(g_buf, sizeof(g_buf), own), 0);
    assert_non_null(strstr(g_buf, "resumed 0"));
    assert_int_equal(answers(g_buf, 200, sizeof(HELLO) - 1, 0), 2);
}

/* SIGHUP's part: new connections get the new certificate, a connection
 * under way keeps its own to the end, and files GnuTLS refuses leave the
 * endpoint as it was. */
static void reload_swaps_the_certificate(void **state) {
    (void)state;
    const char *one[] = {"HOSTPORT", "/", NULL};
    g_ca = g_cert2; /* not yet: the client refuses the server's certificate */
    assert_int_not_equal(h3get(g_buf, sizeof(g_buf), one), 0);

    char err[256] = "";
    assert_int_equal(sws_h3_endpoint_reload(g_main->ep, g_dir, g_key2, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, g_dir));
    assert_int_equal(sws_h3_endpoint_reload(g_main->ep, g_cert2, g_key, err, sizeof(err)), -EINVAL);
    g_ca = g_cert;
    assert_int_equal(h3get(g_buf, sizeof(g_buf), one), 0);

    /* Swapped in the middle of a connection's streamed answers: it goes on. */
    g_reload_at = sws_h3_stats_of(g_main->ep).requests + 5;
    const char *many[] = {"-n", "20", "-P", "3", "HOSTPORT", "/stream", NULL};
    assert_int_equal(h3get(g_buf, sizeof(g_buf), many), 0);
    assert_int_equal(g_reload_at, 0);
    assert_int_equal(answers(g_buf, 200, STREAM_SIZE, 0), 20);

    assert_int_not_equal(h3get(g_buf, sizeof(g_buf), one), 0); /* the old one is gone */
    g_ca = g_cert2;
    assert_int_equal(h3get(g_buf, sizeof(g_buf), one), 0);
    assert_int_equal(sws_h3_endpoint_reload(g_main->ep, g_cert, g_key, err, sizeof(err)), 0);
    g_ca = g_cert;
    assert_int_equal(h3get(g_buf, sizeof(g_buf), one), 0);
}

/* A datagram to endpoint i from a socket of its own; the socket (open, so
 * that the endpoint's answers go somewhere). */
static int raw_to(int i, const uint8_t *pkt, size_t len) {
    int c = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    assert_int_equal(connect(c, (struct sockaddr *)&g_hosts[i].addr, sizeof(g_hosts[i].addr)), 0);
    assert_int_equal(send(c, pkt, len, 0), (ssize_t)len);
    for (int k = 0; k < 10; k++)
        turn(-1);
    return c;
}

/* Initials that open no connection: one whose DCID is shorter than 8 bytes
 * (only a Retry's SCID may be, and we send none), and any past
 * max_connections (endpoint 2 allows one). */
static void initials_the_server_does_not_take(void **state) {
    (void)state;
    /* Version 1, DCID of 4 bytes, no SCID, a 1-byte token, then the rest. */
    uint8_t pkt[1200] = {0xc3, 0, 0, 0, 1, 4, 1, 2, 3, 4, 0, 1, 'x', 0x44, 0xa1};
    sws_h3_stats before = sws_h3_stats_of(g_hosts[2].ep);
    close(raw_to(2, pkt, sizeof(pkt)));
    sws_h3_stats after = sws_h3_stats_of(g_hosts[2].ep);
    assert_int_equal(after.connections, before.connections);
    assert_int_equal(after.dropped - before.dropped, 1);

    /* A real client's first flight (the fuzz seed): a connection that waits
     * for the rest of its handshake, the endpoint's one. */
    uint8_t seed[1500];
    FILE *f = fopen(SWS_CORPUS_H3 "/initial", "rb");
    assert_non_null(f);
    size_t n = fread(seed, 1, sizeof(seed), f);
    fclose(f);
    assert_true(n > 2);
    int held = raw_to(2, seed + 2, n - 2);
    assert_int_equal(sws_h3_stats_of(g_hosts[2].ep).open_connections, 1);
    char third[64];
    snprintf(third, sizeof(third), "127.0.0.1:%u", ntohs(g_hosts[2].addr.sin_port));
    /* h3get's own Initial is dropped: it gives up. */
    uint64_t dropped = sws_h3_stats_of(g_hosts[2].ep).dropped;
    char *argv[] = {H3GET_PATH, "-k", "-t", "1", third, "/", NULL};
    pid_t pid;
    assert_int_equal(posix_spawn(&pid, H3GET_PATH, NULL, NULL, argv, environ), 0);
    int st = 0;
    uint64_t until = sws_h3_now() + (uint64_t)WAIT_S * 1000000000u;
    while (waitpid(pid, &st, WNOHANG) == 0 && sws_h3_now() < until)
        turn(-1);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) != 0);
    assert_true(sws_h3_stats_of(g_hosts[2].ep).dropped > dropped);
    assert_int_equal(sws_h3_stats_of(g_hosts[2].ep).open_connections, 1);
    close(held);
}

/* Drained in the middle of 60 streamed answers, 6 at a time: GOAWAY, the
 * streams under way finish whole, the connection closes by itself; then a
 * new connection is not taken. */
static void drain_lets_streams_finish(void **state) {
    (void)state;
    uint64_t before = sws_h3_stats_of(g_main->ep).requests;
    g_drain_at = before + 10;
    const char *args[] = {"-n", "60", "-P", "6", "HOSTPORT", "/stream", NULL};
    int rc = h3get(g_buf, sizeof(g_buf), args);
    assert_int_equal(g_drain_at, 0);
    assert_non_null(strstr(g_buf, "goaway "));
    uint64_t served = sws_h3_stats_of(g_main->ep).requests - before;
    assert_true(served >= 10);
    /* A stream the client opened before the GOAWAY reached it, past the
     * id the GOAWAY names, is refused (H3_REQUEST_REJECTED: its line says
     * status 0, nothing came); on a loaded machine one may be. */
    char *w = g_buf;
    for (char *l = g_buf; *l;) {
        char *end = strchr(l, '\n');
        size_t len = end ? (size_t)(end - l) + 1 : strlen(l);
        int idx, st;
        if (!(sscanf(l, "%d %d", &idx, &st) == 2 && st == 0)) {
            memmove(w, l, len);
            w += len;
        }
        l += len;
    }
    *w = '\0';
    /* Every answer the client has is whole; those past the GOAWAY were never
     * taken (the client reports them unanswered). */
    int whole = 0;
    for (const char *l = g_buf; (l = strstr(l, " 200 ")) != NULL; l++)
        whole++;
    int n = answers(g_buf, 200, STREAM_SIZE, 0);
    assert_int_equal(n, whole);
    assert_int_equal(n, served); /* every request taken was answered whole */
    assert_true(n < 60 ? rc == 1 : rc == 0);
    assert_int_equal(sws_h3_stats_of(g_main->ep).open_connections, 0);

    const char *again[] = {"-t", "2", "HOSTPORT", "/", NULL};
    assert_int_not_equal(h3get(g_buf, sizeof(g_buf), again), 0);
    assert_int_equal(sws_h3_stats_of(g_main->ep).open_connections, 0);
}

/* A body of 900 KB to a scenario that takes nothing at first, then 16 KiB
 * per turn: the client never sends past the stream's window (what is held
 * for the scenario stays within it), and every byte arrives, in order. */
static void body_waits_for_a_slow_scenario(void **state) {
    (void)state;
    static char body[900 * 1000];
    for (size_t i = 0; i < sizeof(body); i++)
        body[i] = (char)(i * 13 + i / 1000);
    write_file(g_post, body, sizeof(body));
    g_taker = (struct taker){.hold = true};
    const char *args[] = {"-d", g_post, "HOSTPORT", "/take", NULL};
    assert_int_equal(h3get(g_buf, sizeof(g_buf), args), 0);
    char want[64];
    int n = snprintf(want, sizeof(want), "%zu %016llx\n", sizeof(body),
                     (unsigned long long)fnv((const uint8_t *)body, sizeof(body)));
    assert_int_equal(answers(g_buf, 200, (uint64_t)n, fnv((const uint8_t *)want, (size_t)n)), 1);
    assert_int_equal(g_taker.heads, 1);
    assert_true(g_taker.head_ok);
    assert_int_equal(g_taker.ends, 1);
    assert_true(g_taker.flushes > 1);
    assert_int_equal(g_taker.conn_ends, 1);
    /* The scenario held: the client filled the window, and no more. */
    assert_true(g_taker.held_max >= SWS_H3_DEFAULT_STREAM_WINDOW - 4096);
    assert_true(g_taker.held_max <= SWS_H3_DEFAULT_STREAM_WINDOW);
    assert_int_equal(sws_h3_stats_of(g_main->ep).body_held, 0);
}

/* Past [limits] body_size (1 MiB here): declared, 413 before the scenario
 * sees the request; undeclared, 413 once the bytes pass it, the rest not
 * read (STOP_SENDING), and the scenario's exchange ended. */
static void body_past_the_limit_is_413(void **state) {
    (void)state;
    static char body[1200 * 1000];
    memset(body, 'b', sizeof(body));
    write_file(g_post, body, sizeof(body));
    g_taker = (struct taker){.budget = 0};
    const char *declared[] = {"-d", g_post, "HOSTPORT", "/take", NULL};
    assert_int_equal(h3get(g_buf, sizeof(g_buf), declared), 0);
    assert_int_equal(answers(g_buf, 413, strlen("413 Content Too Large\n"), 0), 1);
    assert_int_equal(g_taker.heads, 0);

    g_taker = (struct taker){.budget = 0};
    const char *undeclared[] = {"--no-length", "-d", g_post, "HOSTPORT", "/take", NULL};
    assert_int_equal(h3get(g_buf, sizeof(g_buf), undeclared), 0);
    assert_int_equal(answers(g_buf, 413, strlen("413 Content Too Large\n"), 0), 1);
    assert_int_equal(g_taker.heads, 1);
    assert_int_equal(g_taker.ends, 0);
    assert_int_equal(g_taker.conn_ends, 1);
    assert_true(g_taker.got <= 1048576);
    assert_int_equal(sws_h3_stats_of(g_main->ep).body_held, 0);
}

int main(void) {
    if (getenv("H3_TEST"))
        cmocka_set_test_filter(getenv("H3_TEST"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(get_is_answered),
        cmocka_unit_test(head_has_no_body),
        cmocka_unit_test(post_is_answered),
        cmocka_unit_test(body_waits_for_a_slow_scenario),
        cmocka_unit_test(body_past_the_limit_is_413),
        cmocka_unit_test(hundred_streams_on_one_connection),
        cmocka_unit_test(more_than_the_stream_limit_waits_for_room),
        cmocka_unit_test(one_mib_answer),
        cmocka_unit_test(streamed_answer_through_room),
        cmocka_unit_test(body_of_unknown_length_with_trailers),
        cmocka_unit_test(long_target_is_414),
        cmocka_unit_test(unknown_method_is_501),
        cmocka_unit_test(losses_are_recovered_and_counted),
        cmocka_unit_test(a_held_probe_fires_its_timeout_once),
        cmocka_unit_test(the_client_migrates_on_one_connection),
        cmocka_unit_test(unknown_version_is_negotiated),
        cmocka_unit_test(unknown_connection_gets_a_stateless_reset),
        cmocka_unit_test(garbage_is_dropped_and_the_server_serves),
        cmocka_unit_test(connection_ids_carry_the_loop_index),
        cmocka_unit_test(sessions_resume_where_the_ticket_key_is_shared),
        cmocka_unit_test(reload_swaps_the_certificate),
        cmocka_unit_test(drain_lets_streams_finish),
        cmocka_unit_test(initials_the_server_does_not_take),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
