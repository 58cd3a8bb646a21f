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
