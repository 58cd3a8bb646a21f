/* The exchange's functions that are the same for every protocol (exchange.h). */
#include "exchange.h"

#include "sws_msg.h"

#include <string.h>

void sws_fixed_init(sws_fixed *f, int status, const char *content_type, const char *body,
                    uint32_t body_len) {
    *f = (sws_fixed){
        .status = status, .content_type = content_type, .body = body, .body_len = body_len};
}

void sws_fixed_free(sws_fixed *f) {
    for (int i = 0; i < SWS_FIXED_PROTOS; i++) {
        if (f->framed[i] && f->framed_free[i])
            f->framed_free[i](f->framed[i]);
        f->framed[i] = NULL;
    }
}

bool sws_field_has(const sws_field *f, const char *token) {
    return sws_http_list_has(f->value, f->value_len, token);
}

uint8_t sws_method_of(const char *v, size_t vl, bool *known) {
    *known = true;
    if (vl == 3 && memcmp(v, "GET", 3) == 0)
        return HTTP_GET;
    if (vl == 4 && memcmp(v, "HEAD", 4) == 0)
        return HTTP_HEAD;
    if (vl == 4 && memcmp(v, "POST", 4) == 0)
        return HTTP_POST;
    for (int m = 0; m <= HTTP_FLUSH; m++) { /* llhttp_method_name aborts past its last */
        const char *name = llhttp_method_name((llhttp_method_t)m);
        if (name && strlen(name) == vl && memcmp(name, v, vl) == 0)
            return (uint8_t)m;
    }
    *known = false;
    return HTTP_GET;
}

void sws_sf_put(sws_http_request *r, int k, const uint8_t *v, size_t vl) {
    uint16_t have = r->sf_len[k];
    if (have > SWS_HTTP_SF_VALUE_MAX)
        return;
    size_t need = have + (have ? 1 : 0) + vl;
    if (need > SWS_HTTP_SF_VALUE_MAX) {
        r->sf_len[k] = SWS_HTTP_SF_VALUE_MAX + 1;
        return;
    }
    char *at = r->sf_fields + k * SWS_HTTP_SF_VALUE_MAX;
    if (have)
        at[have++] = ',';
    memcpy(at + have, v, vl);
    r->sf_len[k] = (uint16_t)need;
}

static bool field_is(const sws_field *f, const char *name, uint32_t len) {
    return f->name_len == len && memcmp(f->name, name, len) == 0;
}

void sws_head_from_fields(sws_head *h, sws_field *f, uint32_t n, uint32_t cap) {
    uint32_t o = 0;
    sws_field host = {0};
    bool has_host = false;
    for (uint32_t i = 0; i < n; i++) {
        sws_field fl = f[i];
        if (field_is(&fl, ":authority", 10)) {
            host = sws_field_str("host", 4, fl.value, fl.value_len);
        } else if (field_is(&fl, ":path", 5)) {
            h->target = fl.value;
            h->target_len = fl.value_len;
        } else if (field_is(&fl, ":protocol", 9)) {
            h->protocol = fl.value;
            h->protocol_len = fl.value_len;
        } else if (!fl.name_len || fl.name[0] != ':') {
            has_host = has_host || field_is(&fl, "host", 4);
            f[o++] = fl;
        }
    }
    if (!has_host && host.name && o < cap)
        f[o++] = host;
    h->f = f;
    h->nf = o;
}

int sws_connect_refusal(uint8_t method, bool protocol, bool takes_body) {
    if (protocol)
        return takes_body ? 0 : 501;
    return method == HTTP_CONNECT ? 501 : 0;
}
