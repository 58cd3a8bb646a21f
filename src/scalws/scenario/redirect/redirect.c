/* The `redirect` scenario (issue 31, item 4): every request is answered
 * with its route's code and a Location made of the [redirect] template and
 * the request, and a one-line text body naming it (none for HEAD). The
 * template was checked and cut into parts at load (redirect_config.h): an
 * answer copies them with the request's scheme, host, path and query. The
 * host must be one RFC 3986 3.2.2 allows, without escapes (no '/', '@', a
 * backslash, '%', CR, LF...), else 400; bytes of the path and query that a
 * URI cannot hold are percent-encoded; a Location longer than the template
 * can make (its room in the output was counted at load) is 414. Nothing is
 * allocated, nothing kept between requests. */
#include "conn.h"
#include "route.h"
#include "sws.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Room for the Location, the body ("Permanent Redirect: " and it) and the
 * head around them: what the answer takes of the output at most. */
static uint32_t answer_room(const sws_scenario_cfg *cfg) {
    uint32_t fields = 0;
    if (cfg->headers)
        fields = cfg->headers->h1_len[1];
    return 512 + 2u * cfg->redirect.max_len + 64 + fields;
}

static int redirect_init(sws_worker *w, sws_scenario *sc) {
    w->resp_max = answer_room(sc->cfg);
    w->lend_sf = true; /* the whole request-target, not the 127 bytes routing keeps */
    return 0;
}

static void redirect_free(sws_worker *w, sws_scenario *sc) {
    (void)w;
    (void)sc;
}

/* Appending to the Location, within its bound. */
typedef struct loc {
    char *p;
    size_t len, cap;
    bool over;
} loc;

static void put(loc *l, const char *s, size_t n) {
    if (l->over || n > l->cap - l->len) {
        l->over = true;
        return;
    }
    memcpy(l->p + l->len, s, n);
    l->len += n;
}

#define HEX "0123456789abcdefABCDEF"

/* Whether c is one of set's characters (never NUL, which strchr finds). */
static bool one_of(unsigned char c, const char *set) {
    return c && strchr(set, c);
}

/* Bytes of the request-target: as they are where a URI holds them (RFC
 * 3986: unreserved, reserved, and '%' with its two digits), percent-encoded
 * otherwise (a raw UTF-8 byte, a '"', a space an HTTP/2 :path let through,
 * a '%' that escapes nothing). */
static void put_target(loc *l, const char *s, size_t n) {
    static const char hexd[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  one_of(c, "-._~:/?#[]@!$&'()*+,;=") ||
                  (c == '%' && i + 2 < n && one_of((unsigned char)s[i + 1], HEX) &&
                   one_of((unsigned char)s[i + 2], HEX));
        if (ok) {
            put(l, (const char *)&c, 1);
        } else {
            char e[3] = {'%', hexd[c >> 4], hexd[c & 15]};
            put(l, e, 3);
        }
    }
}

/* RFC 3986 3.2.2, reg-name: unreserved and sub-delims. Not pct-encoded:
 * no DNS name needs one (an IDN comes as punycode), and a browser decodes
 * it in a host ("evil.test%2F.example.org"). */
static bool reg_name_char(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           one_of(c, "-._~!$&'()*+,;=");
}

/* The request's host for $host: the authority of an absolute-form target,
 * else Host (HTTP/2's :authority), as RFC 9112 3.2.2 says. Checked as a
 * host [":" port] of RFC 3986 and written lowercased, without its port and
 * one trailing dot, into out (256 bytes). Its length, or 0: none, or not a
 * host (the answer is then 400). */
static size_t request_host(const sws_http_request *r, const char *target, size_t tlen, char *out) {
    const char *h = r->host;
    size_t n = r->host_len;
    const char *auth;
    size_t alen;
    if (sws_target_authority(target, tlen, &auth, &alen)) {
        h = auth;
        n = alen;
    }
    if (n == 0 || n >= 256)
        return 0;
    size_t end; /* of the host, before ":port" */
    if (h[0] == '[') {
        const char *close = memchr(h, ']', n);
        if (!close || close == h + 1)
            return 0;
        end = (size_t)(close - h) + 1;
        for (size_t i = 1; i + 1 < end; i++)
            if (!one_of((unsigned char)h[i], HEX ":."))
                return 0;
    } else {
        const char *colon = memchr(h, ':', n);
        end = colon ? (size_t)(colon - h) : n;
        for (size_t i = 0; i < end; i++)
            if (!reg_name_char((unsigned char)h[i]))
                return 0;
    }
    if (end < n) { /* ":" port, digits only (RFC 3986 3.2.3) */
        if (h[end] != ':' || n - end - 1 > 5)
            return 0;
        for (size_t i = end + 1; i < n; i++)
            if (h[i] < '0' || h[i] > '9')
                return 0;
    }
    if (end > 1 && h[end - 1] == '.' && h[0] != '[')
        end--;
    if (end == 0)
        return 0;
    for (size_t i = 0; i < end; i++)
        out[i] = (char)(h[i] >= 'A' && h[i] <= 'Z' ? h[i] + ('a' - 'A') : h[i]);
    return end;
}

/* The Location for the exchange into out: its length, or the status to
 * answer instead as a negative number (-400, -414). */
static int location(const sws_scenario *sc, sws_exchange *x, char *out, size_t cap) {
    const sws_http_request *r = sws_ex_request(x);
    const sws_redirect_config *rd = &sc->cfg->redirect;
    /* The whole target: the static scenario's copy, as long as it was kept. */
    const char *target = r->path;
    size_t tlen = r->path_len;
    if (r->sf_fields && r->sf_path_len <= SWS_HTTP_SF_PATH_MAX) {
        target = r->sf_fields + SWS_HTTP_SF_PATH;
        tlen = r->sf_path_len;
    } else if (r->path_truncated || r->sf_fields) {
        return -414;
    }
    const char *auth;
    size_t alen, skip = sws_target_authority(target, tlen, &auth, &alen);
    /* The origin-form: "/path?query" ("/" for "*" and an empty path). */
    const char *uri = target + skip;
    size_t ulen = tlen - skip;
    bool slash = ulen == 0 || uri[0] != '/';
    if (ulen && uri[0] == '*')
        ulen = 0;
    const char *q = memchr(uri, '?', ulen);
    const char *args = q ? q + 1 : "";
    size_t args_len = q ? ulen - (size_t)(q + 1 - uri) : 0;
    char host[256];
    size_t hl = 0;
    loc l = {out, 0, cap < rd->max_len ? cap : rd->max_len, false};
    for (uint32_t i = 0; i < rd->nparts; i++) {
        switch (rd->part[i].kind) {
        case SWS_RV_TEXT:
            put(&l, rd->to + rd->part[i].off, rd->part[i].len);
            break;
        case SWS_RV_SCHEME:
            put(&l, sws_ex_secure(x) ? "https" : "http", sws_ex_secure(x) ? 5 : 4);
            break;
        case SWS_RV_HOST:
            if (!hl && !(hl = request_host(r, target, tlen, host)))
                return -400;
            put(&l, host, hl);
            break;
        case SWS_RV_REQUEST_URI:
            if (slash)
                put(&l, "/", 1);
            put_target(&l, uri, ulen);
            break;
        case SWS_RV_URI: {
            /* Under strip_prefix, the path as the route's scenario sees it. */
            sws_route_view v = sws_route_target(sc->route, uri, q ? (size_t)(q - uri) : ulen);
            if (v.lead_slash || slash)
                put(&l, "/", 1);
            put_target(&l, v.path, v.len);
            break;
        }
        case SWS_RV_ARGS:
            put_target(&l, args, args_len);
            break;
        case SWS_RV_IS_ARGS:
            put(&l, "?", args_len ? 1 : 0);
            break;
        }
    }
    return l.over ? -414 : (int)l.len;
}

/* The body: "<reason>: <Location>\n". */
static size_t body_of(int code, const char *where, size_t n, char *out, size_t cap) {
    int k = snprintf(out, cap, "%s: %.*s\n", sws_http_reason(code), (int)n, where);
    return k < 0 || (size_t)k >= cap ? 0 : (size_t)k;
}

/* The body again, for `more` (an HTTP/2 stream that waited for a buffer):
 * the request is the same, so is what is made of it. */
static int put_body(sws_worker *w, const sws_scenario *sc, sws_exchange *x) {
    char where[SWS_REDIRECT_LOCATION_MAX], body[SWS_REDIRECT_LOCATION_MAX + 64];
    int n = location(sc, x, where, sizeof where);
    size_t bl =
        n < 0 ? 0 : body_of((int)sc->cfg->redirect.code, where, (size_t)n, body, sizeof body);
    return sws_ex_body(w, x, body, bl);
}

static int redirect_answer(sws_worker *w, sws_scenario *sc, sws_exchange *x) {
    int code = (int)sc->cfg->redirect.code;
    char where[SWS_REDIRECT_LOCATION_MAX], body[SWS_REDIRECT_LOCATION_MAX + 64];
    int n = location(sc, x, where, sizeof where);
    if (n < 0) {
        sws_ex_error(w, x, -n); /* logged and counted there */
        return SWS_ANSWER_DONE;
    }
    size_t bl = body_of(code, where, (size_t)n, body, sizeof body);
    sws_field f = sws_field_str("Location", 8, where, (uint32_t)n);
    /* One short text given at once: HTTP/2 lends a buffer of its size. */
    sws_answer a = {.status = code,
                    .content_type = "text/plain",
                    .length = bl,
                    .whole_body = true,
                    .fields = &f,
                    .nfields = 1};
    int rc = sws_ex_head(w, x, &a);
    if (rc < 0)
        return rc;
    bool head = sws_ex_request(x)->head;
    if (w->logs)
        sws_ex_log(w, x, code, head ? 0 : bl);
    if (head || sws_ex_body(w, x, body, bl) == 0)
        return SWS_ANSWER_DONE;
    return SWS_ANSWER_PENDING; /* no body buffer free now: `more` brings it */
}

static void redirect_more(sws_worker *w, sws_scenario *sc, sws_exchange *x) {
    if (put_body(w, sc, x) == 0)
        sws_ex_end(w, x);
}

/* The connection buffers were sized at start for four answers (worker.c):
 * a route whose Location (or header policy) can be longer needs a restart. */
static const char *redirect_reload_refuses(const sws_server *s, const sws_config *o,
                                           const sws_config *n, char *buf, size_t len) {
    (void)o;
    size_t room = s->workers[0].out_cap / 4;
    for (int i = 0; n->routes && i < n->routes->n; i++) {
        const sws_route *rt = &n->routes->r[i];
        if (rt->cfg.scenario != SWS_SCENARIO_REDIRECT || answer_room(&rt->cfg) <= room)
            continue;
        snprintf(buf, len,
                 "[%s%s] to can make answers of %u bytes, more than the connection buffers "
                 "sized at start take (%zu)",
                 i ? "route " : "redirect", i ? rt->name : "", answer_room(&rt->cfg), room);
        return buf;
    }
    return NULL;
}

static void redirect_reload_commit(sws_worker *w, sws_scenario *sc) {
    w->resp_max = answer_room(sc->cfg);
    sws_conn_reload_commit(w, sc);
}

const sws_scenario_ops sws_redirect_ops = {
    .name = "redirect",
    .init = redirect_init,
    .free = redirect_free,
    .open = sws_conn_open,
    .dispatch = sws_conn_dispatch,
    .answer = redirect_answer,
    .more = redirect_more,
    .turn_done = sws_conn_turn_done,
    .sweep = sws_conn_sweep,
    .drain = sws_conn_drain,
    .finished = sws_conn_finished,
    .reload_refuses = redirect_reload_refuses,
    .reload_commit = redirect_reload_commit,
};
