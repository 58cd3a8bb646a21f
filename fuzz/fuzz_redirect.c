/* Fuzz target for the redirect target templates: [redirect] to as the
 * config reads it (config/redirect_config.c) and the Location the redirect
 * scenario makes of it (scenario/redirect/redirect.c), answered through a
 * fake exchange. The input: the template's line, one byte of flags, the
 * request's Host line, then its request-target. What must hold: a refused
 * template says why and changes nothing, and is refused again; an accepted
 * one, answered for any request, gives a Location no longer than the bound
 * it was given at load, only of characters a URI holds, and sends the client
 * nowhere the template did not name: a relative Location is a path (never
 * "//", another host), an absolute one's authority is the template's own
 * text and the request's checked host, whatever the path and query hold.
 * Otherwise the answer is 400 (a host that is none) or 414. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conn.h"
#include "route.h"
#include "sws.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The fake exchange: the request it serves and what the scenario answered. */
typedef struct fake {
    sws_exchange x;
    sws_http_request *req;
    bool secure;
    int status, error;
    char location[SWS_REDIRECT_LOCATION_MAX + 1];
    size_t location_len;
    uint64_t length;
    size_t body_len;
} fake;

static const sws_http_request *f_request(const sws_exchange *x) {
    return ((const fake *)x)->req;
}
static bool f_secure(const sws_exchange *x) {
    return ((const fake *)x)->secure;
}
static int f_head(struct sws_worker *w, sws_exchange *x, const sws_answer *a) {
    (void)w;
    fake *f = (fake *)x;
    if (f->status || f->error || a->nfields != 1 || a->fields[0].name_len != 8 ||
        memcmp(a->fields[0].name, "Location", 8) != 0 ||
        a->fields[0].value_len > SWS_REDIRECT_LOCATION_MAX)
        abort();
    f->status = a->status;
    f->length = a->length;
    f->location_len = a->fields[0].value_len;
    memcpy(f->location, a->fields[0].value, f->location_len);
    return 0;
}
static int f_body(struct sws_worker *w, sws_exchange *x, const void *data, size_t len) {
    (void)w;
    (void)data;
    ((fake *)x)->body_len += len;
    return 0;
}
static int f_error(struct sws_worker *w, sws_exchange *x, int status) {
    (void)w;
    fake *f = (fake *)x;
    if (f->status || f->error)
        abort();
    f->error = status;
    return 0;
}

static const sws_proto fake_proto = {.name = "fake",
                                     .request = f_request,
                                     .secure = f_secure,
                                     .head = f_head,
                                     .body = f_body,
                                     .error = f_error};

static bool uri_char(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("-._~:/?#[]@!$&'()*+,;=%", c));
}

/* The authority the template names for this request: its text and $host up
 * to the end of the host part, made here apart from the scenario's code.
 * NULL: a relative template. */
static const char *authority_of(const sws_redirect_config *r, bool secure, const char *host,
                                char *out) {
    size_t n = 0;
    for (uint32_t i = 0; i < r->nparts; i++) {
        uint8_t k = r->part[i].kind;
        if (k == SWS_RV_TEXT) {
            memcpy(out + n, r->to + r->part[i].off, r->part[i].len);
            n += r->part[i].len;
        } else if (k == SWS_RV_SCHEME) {
            n += (size_t)sprintf(out + n, "%s", secure ? "https" : "http");
        } else if (k == SWS_RV_HOST) {
            n += (size_t)sprintf(out + n, "%s", host);
        } else {
            break; /* a path variable: the host part ended before it */
        }
    }
    out[n] = '\0';
    if (out[0] == '/')
        return NULL;
    char *auth = strstr(out, "://");
    if (!auth)
        abort(); /* an accepted template is a path or absolute */
    auth += 3;
    auth[strcspn(auth, "/?#")] = '\0';
    return auth;
}

/* The request's host as $host makes it (an absolute-form target's, else
 * Host): lowercased, port and one trailing dot gone. Made for every request,
 * but only compared when the scenario took the host (a host [":" port]). */
static void host_of(const sws_http_request *r, const char *target, size_t tlen, char *out) {
    const char *h = r->host;
    size_t n = r->host_len;
    if (sws_target_authority(target, tlen, &h, &n) == 0) {
        h = r->host;
        n = r->host_len;
    }
    out[0] = '\0';
    if (n == 0 || n >= 256)
        return; /* none, or longer than a host: $host answers 400 */
    const char *close = h[0] == '[' ? memchr(h, ']', n) : NULL;
    const char *colon = memchr(h, ':', n);
    size_t end = close ? (size_t)(close - h) + 1 : colon ? (size_t)(colon - h) : n;
    if (end > 1 && h[end - 1] == '.' && h[0] != '[')
        end--;
    for (size_t i = 0; i < end; i++)
        out[i] = (char)(h[i] >= 'A' && h[i] <= 'Z' ? h[i] + ('a' - 'A') : h[i]);
    out[end] = '\0';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 4096)
        return 0;
    /* template '\n' flags host '\n' target */
    const uint8_t *nl = memchr(data, '\n', size);
    if (!nl || (size_t)(nl - data) >= SWS_REDIRECT_TO_MAX + 8)
        return 0;
    char tmpl[SWS_REDIRECT_TO_MAX + 8];
    memcpy(tmpl, data, (size_t)(nl - data));
    tmpl[nl - data] = '\0';
    static sws_route rt;
    memset(&rt, 0, sizeof rt);
    char why[300] = "";
    sws_redirect_config *r = &rt.cfg.redirect;
    if (sws_redirect_parse_to(r, "https://kept.test/", why, sizeof why) != 0 ||
        sws_redirect_parse_code(r, "308", why, sizeof why) != 0)
        abort();
    if (sws_redirect_parse_to(r, tmpl, why, sizeof why) != 0 || !tmpl[0]) {
        if (tmpl[0] && (why[0] == '\0' || strcmp(r->to, "https://kept.test/") != 0 ||
                        sws_redirect_parse_to(r, tmpl, why, sizeof why) == 0))
            abort();
        return 0;
    }
    if (r->nparts == 0 || r->nparts > SWS_REDIRECT_PARTS_MAX ||
        r->max_len > SWS_REDIRECT_LOCATION_MAX)
        abort();

    const uint8_t *p = nl + 1, *end = data + size;
    uint8_t flags = p < end ? *p++ : 0;
    const uint8_t *hnl = memchr(p, '\n', (size_t)(end - p));
    const uint8_t *hend = hnl ? hnl : end;
    static sws_http_request req;
    memset(&req, 0, sizeof req);
    size_t hlen = (size_t)(hend - p);
    req.host_len = (uint16_t)(hlen < sizeof req.host - 1 ? hlen : sizeof req.host - 1);
    memcpy(req.host, p, req.host_len);
    p = hnl ? hnl + 1 : end;
    /* The target, whole (as the static scenario's copy keeps it) or as the
     * routing copy has it. */
    static char sf[SWS_HTTP_SF_STORAGE];
    size_t tlen = (size_t)(end - p);
    if (flags & 1) {
        req.sf_fields = sf;
        req.sf_path_len =
            (uint16_t)(tlen > SWS_HTTP_SF_PATH_MAX + 1 ? SWS_HTTP_SF_PATH_MAX + 1 : tlen);
        memcpy(sf + SWS_HTTP_SF_PATH, p,
               req.sf_path_len > SWS_HTTP_SF_PATH_MAX ? SWS_HTTP_SF_PATH_MAX : req.sf_path_len);
    } else {
        req.path_truncated = tlen >= sizeof req.path;
        req.path_len = (uint16_t)(req.path_truncated ? sizeof req.path - 1 : tlen);
        memcpy(req.path, p, req.path_len);
    }
    req.head = flags & 2;
    rt.cfg.scenario = SWS_SCENARIO_REDIRECT;
    rt.cfg.strip_prefix = flags & 4;
    rt.exact = flags & 8;
    strcpy(rt.path, flags & 16 ? "/api/" : "/api");
    rt.path_len = (uint16_t)strlen(rt.path);

    static sws_worker w;
    memset(&w, 0, sizeof w);
    sws_scenario sc = {.ops = &sws_redirect_ops, .cfg = &rt.cfg, .route = &rt};
    fake f = {.x = {&fake_proto}, .req = &req, .secure = flags & 32};
    if (sc.ops->init(&w, &sc) != 0)
        abort();
    int rc = sc.ops->answer(&w, &sc, &f.x);
    sc.ops->free(&w, &sc);
    if (rc != SWS_ANSWER_DONE)
        abort();
    if (f.error) {
        if (f.error != 400 && f.error != 414)
            abort();
        return 0;
    }
    if (f.status != 308 || f.location_len > r->max_len || f.location_len == 0 ||
        f.body_len != (req.head ? 0 : f.length))
        abort();
    f.location[f.location_len] = '\0';
    for (size_t i = 0; i < f.location_len; i++)
        if (!uri_char((unsigned char)f.location[i]))
            abort();
    char host[256], made[SWS_REDIRECT_TO_MAX + 2 * 256 * SWS_REDIRECT_PARTS_MAX];
    if (flags & 1)
        host_of(&req, sf + SWS_HTTP_SF_PATH, req.sf_path_len, host);
    else
        host_of(&req, req.path, req.path_len, host);
    const char *auth = authority_of(r, f.secure, host, made);
    if (!auth) {
        if (f.location[0] != '/' || f.location[1] == '/')
            abort(); /* a relative Location that names another host */
        return 0;
    }
    const char *sep = strstr(f.location, "://");
    if (!sep || (size_t)(sep - f.location) > 5)
        abort();
    const char *got = sep + 3;
    size_t glen = strcspn(got, "/?#");
    if (strchr(auth, '@') || glen != strlen(auth) || strncasecmp(got, auth, glen) != 0) {
        fprintf(stderr, "fuzz_redirect: %s made the authority '%.*s', want '%s'\n", r->to,
                (int)glen, got, auth);
        abort();
    }
    return 0;
}
