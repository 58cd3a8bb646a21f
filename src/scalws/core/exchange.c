/* The exchange's functions that are the same for every protocol (exchange.h). */
#include "exchange.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

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
    const char *v = f->value, *end = v + f->value_len;
    size_t tl = strlen(token);
    while (v < end) {
        while (v < end && (*v == ' ' || *v == '\t' || *v == ','))
            v++;
        const char *s = v;
        while (v < end && *v != ',')
            v++;
        const char *e = v;
        while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
            e--;
        if ((size_t)(e - s) == tl && strncasecmp(s, token, tl) == 0)
            return true;
    }
    return false;
}
