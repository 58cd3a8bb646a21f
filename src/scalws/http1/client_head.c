/* The heads the proxy writes (client_head.h). */
#include "client_head.h"

#include <stdio.h>
#include <strings.h>

#include "forwarded.h"

/* What a field is to the proxy, from its name: one length switch and at most
 * two compares per field, instead of a compare against every name. The
 * forwarding fields are forwarded.c's (sws_forwarded_owns). */
enum px_field { PXF_OTHER, PXF_HOP, PXF_TE, PXF_CONNECTION, PXF_HOST, PXF_EXPECT };

static bool name_eq(const sws_head *m, uint32_t i, const char *lit, size_t n) {
    return m->f[i].name_len == n && strncasecmp(m->f[i].name, lit, n) == 0;
}

static inline enum px_field field_kind(const sws_head *m, uint32_t i) {
#define PXF_IS(lit) name_eq(m, i, lit, sizeof(lit) - 1)
    switch (m->f[i].name_len) {
    case 2:
        return PXF_IS("te") ? PXF_TE : PXF_OTHER;
    case 4:
        return PXF_IS("host") ? PXF_HOST : PXF_OTHER;
    case 6:
        return PXF_IS("expect") ? PXF_EXPECT : PXF_OTHER;
    case 7: /* Trailer is end-to-end (RFC 9110 6.6.2): it goes on */
        return PXF_IS("upgrade") ? PXF_HOP : PXF_OTHER;
    case 10:
        return PXF_IS("connection") ? PXF_CONNECTION : PXF_IS("keep-alive") ? PXF_HOP : PXF_OTHER;
    case 16:
        return PXF_IS("proxy-connection") ? PXF_HOP : PXF_OTHER;
    case 17:
        return PXF_IS("transfer-encoding") ? PXF_HOP : PXF_OTHER;
    default:
        return PXF_OTHER;
    }
#undef PXF_IS
}

/* Whether a Connection value names a field beyond close and keep-alive. */
static inline bool names_fields(const sws_head *m, uint32_t i) {
    const char *v = m->f[i].value, *end = v + m->f[i].value_len;
    while (v < end) {
        while (v < end && (*v == ' ' || *v == '\t' || *v == ','))
            v++;
        const char *t = v;
        while (v < end && *v != ',' && *v != ' ' && *v != '\t')
            v++;
        size_t n = (size_t)(v - t);
        if (n && !(n == 5 && strncasecmp(t, "close", 5) == 0) &&
            !(n == 10 && strncasecmp(t, "keep-alive", 10) == 0))
            return true;
    }
    return false;
}

/* The kinds of m's fields into kind[]; fields named by Connection are
 * hop-by-hop too (RFC 9110 7.6.1), found by a second pass only when a
 * Connection value names one. */
static void field_kinds_named(const sws_head *m, uint8_t *kind);

static void field_kinds(const sws_head *m, uint8_t *kind) {
    bool named = false;
    for (uint32_t i = 0; i < m->nf; i++) {
        kind[i] = (uint8_t)field_kind(m, i);
        if (kind[i] == PXF_CONNECTION)
            named = named || names_fields(m, i);
    }
    if (named)
        field_kinds_named(m, kind);
}

static bool is_hop(uint8_t kind) {
    return kind == PXF_HOP || kind == PXF_TE || kind == PXF_CONNECTION;
}

/* The second pass: the fields a Connection value names are hop-by-hop. */
static void field_kinds_named(const sws_head *m, uint8_t *kind) {
    for (uint32_t i = 0; i < m->nf; i++) {
        char name[64];
        uint32_t nl = m->f[i].name_len;
        if (is_hop(kind[i]) || nl >= sizeof(name))
            continue;
        memcpy(name, m->f[i].name, nl);
        name[nl] = '\0';
        for (uint32_t j = 0; j < m->nf; j++)
            if (kind[j] == PXF_CONNECTION && sws_field_has(&m->f[j], name)) {
                kind[i] = PXF_HOP;
                break;
            }
    }
}

static void put_field(sws_wbuf *b, const sws_head *m, uint32_t i) {
    sws_wbuf_put(b, m->f[i].name, m->f[i].name_len);
    sws_wbuf_put(b, ": ", 2);
    sws_wbuf_put(b, m->f[i].value, m->f[i].value_len);
    sws_wbuf_put(b, "\r\n", 2);
}

uint32_t sws_px_end_to_end_fields(const sws_head *m, sws_field *out, uint32_t cap) {
    uint8_t kind[SWS_MSG_FIELDS_MAX];
    field_kinds(m, kind);
    uint32_t n = 0;
    for (uint32_t i = 0; i < m->nf && n < cap; i++) {
        if (is_hop(kind[i]) || name_eq(m, i, "content-length", 14))
            continue;
        out[n++] = sws_field_str(m->f[i].name, m->f[i].name_len, m->f[i].value, m->f[i].value_len);
    }
    return n;
}

size_t sws_px_request_head(const sws_px_request *in, char *out, size_t cap, bool *names_up) {
    const sws_head *m = in->m;
    const sws_proxy_config *cfg = in->cfg;
    uint32_t hl = 0;
    sws_wbuf b = {out, &hl, cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap, false};
    sws_wbuf_puts(&b, in->protocol ? "GET" : llhttp_method_name((llhttp_method_t)m->method));
    sws_wbuf_put(&b, " ", 1);
    if (in->route && in->route->cfg.strip_prefix) { /* "/api/x" goes up as "/x" */
        sws_route_view v = sws_route_target(in->route, m->target, m->target_len);
        if (v.lead_slash)
            sws_wbuf_put(&b, "/", 1);
        sws_wbuf_put(&b, v.path, v.len);
    } else {
        sws_wbuf_put(&b, m->target, m->target_len);
    }
    sws_wbuf_puts(&b, " HTTP/1.1\r\n");
    bool host = false, te_trailers = false, early = false;
    uint8_t kind[SWS_MSG_FIELDS_MAX];
    field_kinds(m, kind);
    for (uint32_t i = 0; i < m->nf; i++) {
        early = early || name_eq(m, i, "early-data", 10);
        /* TE is hop-by-hop, but the client's willingness to take trailers
         * is ours too: the proxy relays an answer's trailer section on both
         * protocols (sws_ex_trailers), so it asks the upstream for them. */
        if (kind[i] == PXF_TE)
            te_trailers = te_trailers || sws_field_has(&m->f[i], "trailers");
        /* An upgrade the proxy tunnels asks the upstream for it: its
         * Upgrade goes on, with a Connection of our own (below). */
        bool upgrade = in->upgrade && kind[i] == PXF_HOP && name_eq(m, i, "upgrade", 7);
        if ((is_hop(kind[i]) && !upgrade) || sws_forwarded_owns(cfg, m, i))
            continue;
        if (kind[i] == PXF_HOST) {
            host = cfg->host_mode == SWS_HOST_CLIENT;
            if (!host)
                continue; /* host = upstream or a value: replaced below */
        }
        if (kind[i] == PXF_EXPECT)
            continue; /* answered by the connection: the upstream sees the body at once */
        if (in->ws_key && name_eq(m, i, "sec-websocket-key", 17))
            continue; /* the key is ours: the upstream's proof is checked against it */
        put_field(&b, m, i);
    }
    size_t fl = hl;
    if (!b.over && sws_forwarded_build(cfg, m, in->peer[0] ? in->peer : "-", in->client_tls, out,
                                       b.cap, &fl) < 0)
        b.over = true;
    hl = (uint32_t)fl;
    /* RFC 9110 7.6.3: the protocol the request was received with, "2" for
     * HTTP/2 and "3" for HTTP/3 (their minor version is not sent). */
    sws_wbuf_puts(&b, m->http_major == 3   ? "Via: 3 scalwsd\r\n"
                      : m->http_major == 2 ? "Via: 2 scalwsd\r\n"
                      : m->http_minor == 0 ? "Via: 1.0 scalwsd\r\n"
                                           : "Via: 1.1 scalwsd\r\n");
    /* RFC 8470 5.1: a request taken in early data before the client's
     * handshake completed goes on marked, unless a hop before us marked it
     * already (its field went on above, as every end-to-end one). */
    if (m->early && !early)
        sws_wbuf_puts(&b, "Early-Data: 1\r\n");
    *names_up = false;
    if (cfg->host_mode == SWS_HOST_FIXED) {
        sws_wbuf_puts(&b, "Host: ");
        sws_wbuf_puts(&b, cfg->host);
        sws_wbuf_puts(&b, "\r\n");
    } else if (!host) {
        /* host = upstream, or an HTTP/1.0 request without Host: what goes
         * upstream is HTTP/1.1, which requires one (RFC 9112 3.2), the
         * upstream's own name, as nginx's default $proxy_host. */
        sws_wbuf_puts(&b, "Host: ");
        sws_wbuf_puts(&b, in->upstream);
        sws_wbuf_puts(&b, "\r\n");
        *names_up = true;
    }
    if (in->streams)
        sws_wbuf_puts(&b, "Transfer-Encoding: chunked\r\n");
    if (in->protocol) {
        sws_wbuf_puts(&b, "Upgrade: ");
        sws_wbuf_put(&b, in->protocol, in->protocol_len);
        sws_wbuf_puts(&b, "\r\n");
    }
    if (in->ws_key) {
        sws_wbuf_puts(&b, "Sec-WebSocket-Key: ");
        sws_wbuf_puts(&b, in->ws_key);
        sws_wbuf_puts(&b, "\r\n");
    }
    /* RFC 9110 10.1.4: who sends TE names it in Connection too. */
    if (te_trailers)
        sws_wbuf_puts(&b, "TE: trailers\r\n");
    if (in->upgrade || te_trailers)
        sws_wbuf_puts(&b, in->upgrade && te_trailers ? "Connection: upgrade, te\r\n"
                          : in->upgrade              ? "Connection: upgrade\r\n"
                                                     : "Connection: te\r\n");
    sws_wbuf_put(&b, "\r\n", 2);
    return b.over ? 0 : hl;
}

int sws_h1c_body(bool streams, int (*put)(void *u, const char *d, size_t n), void *u, const char *d,
                 size_t n) {
    if (!streams)
        return put(u, d, n);
    if (n == 0)
        return 0; /* an empty chunk would be the last */
    char hdr[24];
    size_t k = sws_chunk_line(hdr, n);
    if (put(u, hdr, k) < 0 || put(u, d, n) < 0 || put(u, "\r\n", 2) < 0)
        return -1;
    return 0;
}

int sws_h1c_body_end(bool streams, int (*put)(void *u, const char *d, size_t n), void *u) {
    return streams ? put(u, "0\r\n\r\n", 5) : 0;
}

uint32_t sws_h1c_answer_fields(const sws_msg *m, sws_field *out, uint32_t cap) {
    /* One pass converts and judges each field; a second drops the
     * hop-by-hop ones (and, rarely, those a Connection value names). */
    uint32_t n = m->nf < cap ? m->nf : cap;
    sws_head h = {.f = out, .nf = n};
    uint8_t kind[SWS_MSG_FIELDS_MAX];
    bool named = false;
    for (uint32_t i = 0; i < n; i++) {
        out[i] = sws_field_str(m->buf + m->f[i].name_off, m->f[i].name_len,
                               m->buf + m->f[i].val_off, m->f[i].val_len);
        kind[i] = (uint8_t)field_kind(&h, i);
        if (kind[i] == PXF_CONNECTION)
            named = named || names_fields(&h, i);
    }
    if (named)
        field_kinds_named(&h, kind);
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (is_hop(kind[i]) || name_eq(&h, i, "content-length", 14))
            continue;
        out[k++] = out[i];
    }
    return k;
}

/* Names a trailer section must not carry on (RFC 9110 6.5.1 and 7.6.1),
 * lowercase, by length for a short scan. */
static bool trailer_refused(const char *name, uint32_t n) {
    static const char *const refused[] = {"te",
                                          "age",
                                          "date",
                                          "host",
                                          "vary",
                                          "range",
                                          "expect",
                                          "pragma",
                                          "expires",
                                          "trailer",
                                          "upgrade",
                                          "warning",
                                          "location",
                                          "set-cookie",
                                          "connection",
                                          "keep-alive",
                                          "retry-after",
                                          "content-type",
                                          "max-forwards",
                                          "authorization",
                                          "cache-control",
                                          "content-range",
                                          "content-length",
                                          "proxy-connection",
                                          "content-encoding",
                                          "www-authenticate",
                                          "transfer-encoding",
                                          "proxy-authenticate",
                                          "proxy-authorization"};
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
        if (strlen(refused[i]) == n && strncasecmp(refused[i], name, n) == 0)
            return true;
    return false;
}

uint32_t sws_h1c_trailer_fields(const sws_msg *m, sws_field *out, uint32_t cap) {
    uint32_t k = 0;
    for (uint32_t i = m->head_nf; i < m->nf && k < cap; i++) {
        const char *name = m->buf + m->f[i].name_off;
        if (trailer_refused(name, m->f[i].name_len))
            continue;
        out[k++] = sws_field_str(name, m->f[i].name_len, m->buf + m->f[i].val_off, m->f[i].val_len);
    }
    return k;
}

void sws_h1_msg_head(const sws_msg *m, sws_field *f, uint32_t cap, sws_head *out) {
    uint32_t n = m->nf < cap ? m->nf : cap;
    for (uint32_t i = 0; i < n; i++)
        f[i] = sws_field_str(m->buf + m->f[i].name_off, m->f[i].name_len, m->buf + m->f[i].val_off,
                             m->f[i].val_len);
    *out = (sws_head){.f = f,
                      .nf = n,
                      .target = m->buf + m->start_off,
                      .target_len = m->start_len,
                      .method = (uint8_t)m->p.method,
                      .http_major = m->p.http_major,
                      .http_minor = m->p.http_minor,
                      .streams = (m->p.flags & F_CHUNKED) != 0,
                      /* RFC 9110 7.8: Upgrade in HTTP/1.0 is ignored; and a
                       * connection that closes after the answer cannot switch. */
                      .upgrade = m->p.type == HTTP_REQUEST && m->p.upgrade &&
                                 m->p.method != HTTP_CONNECT && m->p.http_minor >= 1 &&
                                 llhttp_should_keep_alive(&m->p)};
}

sws_h1c_framing sws_h1c_response_framing(const sws_msg *m, bool req_head) {
    const llhttp_t *p = &m->p;
    int status = p->status_code;
    sws_h1c_framing f = {.no_body = req_head || status == 204 || status == 304};
    bool chunked = (p->flags & F_CHUNKED) != 0;
    f.has_length = !chunked && (p->flags & F_CONTENT_LENGTH);
    f.length = f.has_length ? p->content_length : 0;
    f.to_close = !f.no_body && !chunked && !f.has_length;
    return f;
}

int sws_h1c_probe_head(char *out, size_t cap, const char *path, const char *host) {
    int n = snprintf(out, cap,
                     "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: scalwsd-health-check\r\n"
                     "Connection: close\r\n\r\n",
                     path, host);
    return n <= 0 || (size_t)n >= cap ? -1 : n;
}

int sws_h1c_status(const char *got, size_t n) {
    if (n < 12)
        return 0;
    if (strncmp(got, "HTTP/1.", 7) != 0 || got[8] != ' ')
        return -1;
    int st = 0;
    for (int k = 9; k < 12; k++) {
        if (got[k] < '0' || got[k] > '9')
            return -1;
        st = st * 10 + (got[k] - '0');
    }
    return st;
}
