/* The access log's line format (`log_format`), compiled once when the
 * configuration is read into a list of ops (literal text, or one variable),
 * so that writing a line parses nothing and allocates nothing (the renderer
 * is core/log_render.c). A format is a named one (combined, common, json), a
 * template with nginx's $variables, or "json" followed by the variables the
 * object is to have. */
#ifndef SWS_LOG_FORMAT_H
#define SWS_LOG_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The variables, nginx's names where nginx has one. */
typedef enum sws_log_var {
    SWS_LV_REMOTE_ADDR,
    SWS_LV_TIME_LOCAL,    /* 05/Dec/2026:04:43:21 +0000 (UTC, as every time here) */
    SWS_LV_TIME_ISO8601,  /* 2026-12-05T04:43:21+00:00 */
    SWS_LV_MSEC,          /* seconds since the epoch, with milliseconds */
    SWS_LV_REQUEST,       /* the request line */
    SWS_LV_METHOD,        /* $request_method */
    SWS_LV_URI,           /* $request_uri: the target as it came */
    SWS_LV_PROTOCOL,      /* $server_protocol: HTTP/1.1, HTTP/2.0 */
    SWS_LV_SCHEME,        /* http or https */
    SWS_LV_HOST,          /* the Host field (or :authority), port included */
    SWS_LV_STATUS,        /* number */
    SWS_LV_BYTES,         /* $body_bytes_sent: number */
    SWS_LV_REFERER,       /* $http_referer */
    SWS_LV_USER_AGENT,    /* $http_user_agent */
    SWS_LV_REQUEST_TIME,  /* seconds with milliseconds, from the request's first byte */
    SWS_LV_REQUEST_MS,    /* $request_time_ms: the same in milliseconds */
    SWS_LV_ROUTE,         /* the route that answered; "-" before one was chosen */
    SWS_LV_UPSTREAM_ADDR, /* the proxy's upstream (numeric address:port) */
    SWS_LV_UPSTREAM_TIME, /* $upstream_response_time: seconds with milliseconds */
    SWS_LV_UPSTREAM_MS,   /* $upstream_time_ms */
    SWS_LV_N
} sws_log_var;

#define SWS_LOG_OP_LIT 0xff /* an op that copies literal text */
#define SWS_LOG_OPS_MAX 48
#define SWS_LOG_LIT_MAX 512
/* The longest line a format may make, every field at its longest and every
 * byte escaped; a worker's line buffer is this big. */
#define SWS_LOG_LINE_MAX 16384

typedef struct sws_log_op {
    uint8_t var;       /* sws_log_var, or SWS_LOG_OP_LIT */
    uint16_t off, len; /* the literal's bytes in lit */
} sws_log_op;

typedef struct sws_log_format {
    bool json; /* values are JSON (strings quoted and escaped, null when absent) */
    uint8_t nops;
    uint32_t uses; /* 1 << sws_log_var of every variable it writes */
    sws_log_op ops[SWS_LOG_OPS_MAX];
    char lit[SWS_LOG_LIT_MAX];
} sws_log_format;

/* Each variable's name (without '$'), its longest raw value in bytes (the
 * renderer cuts a longer one there, so that the bound the compiler checked
 * holds), and whether it is a number (bare in JSON) or text (escaped). */
typedef struct sws_log_var_info {
    const char *name;
    uint16_t max;
    bool number;
} sws_log_var_info;
extern const sws_log_var_info sws_log_vars[SWS_LV_N];

/* Compiles text. 0, or -EINVAL with why (an unknown variable, a format too
 * long, a line that could pass SWS_LOG_LINE_MAX). */
int sws_log_format_compile(sws_log_format *f, const char *text, char *why, size_t len);

#endif
