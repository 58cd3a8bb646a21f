/* libcurl under the ACME client: one easy handle reused (its connection too),
 * the three headers ACME needs (Location, Replay-Nonce, Retry-After) and
 * the body. libcurl because it is Debian's well-kept client with the TLS
 * verification ACME needs; the turnloop is for serving, and this runs once a
 * day on a thread of its own. */
#include "acme_http.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

struct sws_acme_http {
    CURL *curl;
    char ca_file[256];
    long timeout_ms;
    const atomic_bool *stop;
};

sws_acme_http *sws_acme_http_new(const char *ca_file, long timeout_ms, const atomic_bool *stop) {
    static int inited;
    if (!inited) { /* once, from the one ACME thread */
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
            return NULL;
        inited = 1;
    }
    sws_acme_http *h = calloc(1, sizeof(*h));
    if (!h)
        return NULL;
    h->curl = curl_easy_init();
    if (!h->curl) {
        free(h);
        return NULL;
    }
    if (ca_file)
        snprintf(h->ca_file, sizeof(h->ca_file), "%s", ca_file);
    h->timeout_ms = timeout_ms;
    h->stop = stop;
    return h;
}

void sws_acme_http_free(sws_acme_http *h) {
    if (!h)
        return;
    curl_easy_cleanup(h->curl);
    free(h);
}

typedef struct {
    char *p;
    size_t len;
    size_t cap;
    bool too_big;
} buf;

#define BODY_MAX (1u << 20) /* a chain is a few KiB; more is no ACME answer */

static size_t on_body(char *data, size_t size, size_t n, void *user) {
    buf *b = user;
    size_t len = size * n;
    if (b->len + len + 1 > BODY_MAX) {
        b->too_big = true;
        return 0;
    }
    if (b->len + len + 1 > b->cap) {
        size_t cap = (b->len + len + 1) * 2;
        char *p = realloc(b->p, cap);
        if (!p)
            return 0;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, data, len);
    b->len += len;
    b->p[b->len] = '\0';
    return len;
}

/* "Name: value\r\n" into dst when the name matches. */
static bool header(const char *line, size_t len, const char *name, char *dst, size_t cap) {
    size_t nl = strlen(name);
    if (len <= nl || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
        return false;
    const char *v = line + nl + 1, *end = line + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
        end--;
    size_t vl = (size_t)(end - v);
    if (vl >= cap)
        vl = cap - 1;
    memcpy(dst, v, vl);
    dst[vl] = '\0';
    return true;
}

static size_t on_header(char *data, size_t size, size_t n, void *user) {
    sws_acme_resp *r = user;
    size_t len = size * n;
    char ra[64];
    header(data, len, "Location", r->location, sizeof(r->location));
    header(data, len, "Replay-Nonce", r->nonce, sizeof(r->nonce));
    header(data, len, "Content-Type", r->ctype, sizeof(r->ctype));
    if (header(data, len, "Retry-After", ra, sizeof(ra))) {
        if (isdigit((unsigned char)ra[0])) {
            r->retry_after = strtol(ra, NULL, 10);
        } else {
            /* An HTTP date: seconds from now. */
            time_t t = curl_getdate(ra, NULL);
            time_t now = time(NULL);
            if (t > 0)
                r->retry_after = t > now ? (long)(t - now) : 0;
        }
    }
    return len;
}

/* Shutdown does not wait for a CA that hangs: the transfer is aborted. */
static int on_progress(void *user, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un) {
    (void)dt, (void)dn, (void)ut, (void)un;
    const atomic_bool *stop = user;
    return stop && atomic_load(stop) ? 1 : 0;
}

int sws_acme_http_send(void *ctx, const char *method, const char *url, const char *body,
                       sws_acme_resp *out, char *err, size_t errlen) {
    sws_acme_http *h = ctx;
    CURL *c = h->curl;
    buf b = {0};
    char ebuf[CURL_ERROR_SIZE] = "";
    struct curl_slist *hdrs = NULL;
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https,http");
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, h->timeout_ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, h->timeout_ms < 10000 ? h->timeout_ms : 10000L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "scalwsd-acme/0.1");
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, ebuf);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, out);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, (void *)h->stop);
    if (h->ca_file[0])
        curl_easy_setopt(c, CURLOPT_CAINFO, h->ca_file);
    if (strcmp(method, "HEAD") == 0) {
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    } else if (strcmp(method, "POST") == 0) {
        hdrs = curl_slist_append(hdrs, "Content-Type: application/jose+json");
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body : "");
    }
    CURLcode rc = curl_easy_perform(c);
    curl_slist_free_all(hdrs);
    if (rc != CURLE_OK) {
        snprintf(err, errlen, "%s",
                 b.too_big ? "answer larger than 1 MiB"
                 : ebuf[0] ? ebuf
                           : curl_easy_strerror(rc));
        free(b.p);
        return rc == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : -ECONNREFUSED;
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->status);
    out->body = b.p ? b.p : calloc(1, 1);
    out->len = b.len;
    return out->body ? 0 : -ENOMEM;
}
