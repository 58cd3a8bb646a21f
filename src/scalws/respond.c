/* The `respond` scenario: a fixed answer from the config. The whole answer
 * (head + body) is prebuilt per loop for keep-alive and for close, and rebuilt
 * only when the Date changes, so answering a request is one memcpy. */
#include "sws.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint32_t build(char *out, size_t cap, const sws_config *cfg, const char *date, bool ka,
                      uint32_t *head_len) {
    size_t h = sws_http_head(out, cap, cfg->status, date, cfg->content_type, cfg->body_len, ka);
    if (h == 0 || h + cfg->body_len > cap)
        return 0;
    memcpy(out + h, cfg->body, cfg->body_len);
    *head_len = (uint32_t)h;
    return (uint32_t)(h + cfg->body_len);
}

void sws_respond_refresh(sws_respond *r, const sws_config *cfg, const sws_date_cache *date) {
    r->ka_len = build(r->ka, r->cap, cfg, date->str, true, &r->ka_head);
    r->close_len = build(r->close, r->cap, cfg, date->str, false, &r->close_head);
    r->date_version = date->version;
}

int sws_respond_init(sws_respond *r, const sws_config *cfg, const sws_date_cache *date) {
    memset(r, 0, sizeof(*r));
    /* Room for the head: status line, fixed headers and the content type. */
    r->cap = 512 + sizeof(cfg->content_type) + cfg->body_len;
    r->ka = malloc(r->cap);
    r->close = malloc(r->cap);
    if (!r->ka || !r->close) {
        sws_respond_free(r);
        return -ENOMEM;
    }
    sws_respond_refresh(r, cfg, date);
    if (!r->ka_len || !r->close_len) {
        sws_respond_free(r);
        return -EINVAL;
    }
    return 0;
}

void sws_respond_free(sws_respond *r) {
    free(r->ka);
    free(r->close);
    r->ka = r->close = NULL;
}
