/* log_format compiled into ops (log_format.h). Each variable has a longest
 * value, so the longest line of a format is known here: a format that could
 * pass the line buffer is refused now, never cut at run time. */
#include "log_format.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The longest raw value of each variable (the parser keeps 256 bytes of the
 * request line, Referer and User-Agent, and of Host), and whether it is a
 * number (written bare in JSON) or text (escaped). */
const sws_log_var_info sws_log_vars[SWS_LV_N] = {
    [SWS_LV_REMOTE_ADDR] = {"remote_addr", 46, false},
    [SWS_LV_TIME_LOCAL] = {"time_local", 32, false},
    [SWS_LV_TIME_ISO8601] = {"time_iso8601", 32, false},
    [SWS_LV_MSEC] = {"msec", 24, true},
    [SWS_LV_REQUEST] = {"request", 256, false},
    [SWS_LV_METHOD] = {"request_method", 256, false},
    [SWS_LV_URI] = {"request_uri", 256, false},
    [SWS_LV_PROTOCOL] = {"server_protocol", 256, false},
    [SWS_LV_SCHEME] = {"scheme", 5, false},
    [SWS_LV_HOST] = {"host", 256, false},
    [SWS_LV_STATUS] = {"status", 11, true},
    [SWS_LV_BYTES] = {"body_bytes_sent", 20, true},
    [SWS_LV_REFERER] = {"http_referer", 256, false},
    [SWS_LV_USER_AGENT] = {"http_user_agent", 256, false},
    [SWS_LV_REQUEST_TIME] = {"request_time", 24, true},
    [SWS_LV_REQUEST_MS] = {"request_time_ms", 20, true},
    [SWS_LV_ROUTE] = {"route", 48, false},
    [SWS_LV_UPSTREAM_ADDR] = {"upstream_addr", 64, false},
    [SWS_LV_UPSTREAM_TIME] = {"upstream_response_time", 24, true},
    [SWS_LV_UPSTREAM_MS] = {"upstream_time_ms", 20, true},
};

/* The named formats. combined is nginx's with the route's name last. */
static const char combined[] = "$remote_addr - - [$time_local] \"$request\" $status "
                               "$body_bytes_sent \"$http_referer\" \"$http_user_agent\" $route";
static const char common[] = "$remote_addr - - [$time_local] \"$request\" $status $body_bytes_sent";
static const char json_default[] =
    "json time_iso8601 remote_addr request_method request_uri server_protocol status "
    "body_bytes_sent host http_referer http_user_agent request_time_ms route upstream_addr "
    "upstream_time_ms";

static int lookup(const char *s, size_t n) {
    for (int i = 0; i < SWS_LV_N; i++)
        if (strlen(sws_log_vars[i].name) == n && memcmp(sws_log_vars[i].name, s, n) == 0)
            return i;
    return -1;
}

static bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

typedef struct builder {
    sws_log_format *f;
    uint16_t lit_used;
    size_t longest;
    char *why;
    size_t len;
} builder;

static int add_lit(builder *b, const char *s, size_t n) {
    sws_log_format *f = b->f;
    if (n == 0)
        return 0;
    /* Joined to the literal before it: "a$$b" is one op. */
    sws_log_op *prev = f->nops ? &f->ops[f->nops - 1] : NULL;
    if (b->lit_used + n > SWS_LOG_LIT_MAX ||
        (!(prev && prev->var == SWS_LOG_OP_LIT) && f->nops == SWS_LOG_OPS_MAX)) {
        snprintf(b->why, b->len, "format too long (at most %d bytes of text and %d parts)",
                 SWS_LOG_LIT_MAX, SWS_LOG_OPS_MAX);
        return -EINVAL;
    }
    memcpy(f->lit + b->lit_used, s, n);
    if (prev && prev->var == SWS_LOG_OP_LIT) {
        prev->len = (uint16_t)(prev->len + n);
    } else {
        f->ops[f->nops++] = (sws_log_op){SWS_LOG_OP_LIT, b->lit_used, (uint16_t)n};
    }
    b->lit_used = (uint16_t)(b->lit_used + n);
    b->longest += n;
    return 0;
}

static int add_var(builder *b, int v) {
    sws_log_format *f = b->f;
    if (f->nops == SWS_LOG_OPS_MAX) {
        snprintf(b->why, b->len, "format too long (at most %d parts)", SWS_LOG_OPS_MAX);
        return -EINVAL;
    }
    f->ops[f->nops++] = (sws_log_op){(uint8_t)v, 0, 0};
    f->uses |= 1u << v;
    /* Escaped: \xHH (4 bytes) in text, \u00HH (6) in JSON, and the quotes. */
    b->longest += sws_log_vars[v].number ? sws_log_vars[v].max
                                         : (size_t)sws_log_vars[v].max * (f->json ? 6 : 4) + 2;
    return 0;
}

static int unknown(builder *b, const char *s, size_t n) {
    snprintf(b->why, b->len, "unknown variable '%.*s' (see scalwsd(8), ACCESS LOG)", (int)n, s);
    return -EINVAL;
}

/* "json" then names (with or without '$'), separated by spaces or commas. */
static int compile_json(builder *b, const char *s) {
    b->f->json = true;
    int rc = add_lit(b, "{", 1);
    bool first = true;
    while (rc == 0 && *s) {
        if (*s == ' ' || *s == '\t' || *s == ',') {
            s++;
            continue;
        }
        const char *name = *s == '$' ? s + 1 : s;
        size_t n = 0;
        while (name_char(name[n]))
            n++;
        if (n == 0 || (name[n] && !strchr(" \t,", name[n])))
            return unknown(b, s, strcspn(s, " \t,"));
        int v = lookup(name, n);
        if (v < 0)
            return unknown(b, name, n);
        char key[40];
        int kl = snprintf(key, sizeof key, "%s\"%s\":", first ? "" : ",", sws_log_vars[v].name);
        rc = add_lit(b, key, (size_t)kl);
        if (rc == 0)
            rc = add_var(b, v);
        first = false;
        s = name + n;
    }
    if (rc == 0 && first) {
        snprintf(b->why, b->len, "json names no variable");
        return -EINVAL;
    }
    return rc ? rc : add_lit(b, "}", 1);
}

/* Text with $name or ${name}; "$$" is a '$'. */
static int compile_template(builder *b, const char *s) {
    int rc = 0;
    bool any = false;
    while (rc == 0 && *s) {
        const char *dollar = strchr(s, '$');
        size_t n = dollar ? (size_t)(dollar - s) : strlen(s);
        rc = add_lit(b, s, n);
        s += n;
        if (rc || !*s)
            break;
        s++; /* the '$' */
        if (*s == '$') {
            rc = add_lit(b, "$", 1);
            s++;
            continue;
        }
        bool braced = *s == '{';
        const char *name = braced ? s + 1 : s;
        size_t nl = 0;
        while (name_char(name[nl]))
            nl++;
        if (nl == 0 || (braced && name[nl] != '}'))
            return unknown(b, s - 1, braced ? strcspn(s, "}") + 2 : nl + 1);
        int v = lookup(name, nl);
        if (v < 0)
            return unknown(b, name, nl);
        rc = add_var(b, v);
        any = true;
        s = name + nl + (braced ? 1 : 0);
    }
    if (rc == 0 && !any) {
        snprintf(b->why, b->len,
                 "no variable (want combined, common, json, or a template with $variables)");
        return -EINVAL;
    }
    return rc;
}

int sws_log_format_compile(sws_log_format *f, const char *text, char *why, size_t len) {
    memset(f, 0, sizeof(*f));
    builder b = {.f = f, .why = why, .len = len, .longest = 1 /* the newline */};
    if (!*text || strcmp(text, "combined") == 0)
        text = combined;
    else if (strcmp(text, "common") == 0)
        text = common;
    else if (strcmp(text, "json") == 0)
        text = json_default;
    int rc = strncmp(text, "json", 4) == 0 && (!text[4] || text[4] == ' ' || text[4] == '\t')
                 ? compile_json(&b, text + 4)
                 : compile_template(&b, text);
    if (rc == 0 && b.longest > SWS_LOG_LINE_MAX) {
        snprintf(why, len, "a line could be %zu bytes, more than %d (fewer long variables)",
                 b.longest, SWS_LOG_LINE_MAX);
        rc = -EINVAL;
    }
    return rc;
}
