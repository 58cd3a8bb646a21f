/* sws_http: HTTP/1.1 request parsing (a one-pass head reader for the common
 * request, llhttp for the rest) with limits, response heads, and
 * a per-loop Date cache. Nothing here allocates: a parser lives inside the
 * connection that owns it, and responses are written into the caller's buffer.
 */
#ifndef SWS_HTTP_H
#define SWS_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <llhttp.h>

#include "chunk_line.h"

/* Request limits. A request past one of them is answered with the status in
 * the comment and the connection is closed. */
typedef struct sws_http_limits {
    uint32_t header_bytes;    /* raw request line + fields + CRLFs, and trailers; 431 */
    uint32_t header_count;    /* 431 */
    uint32_t uri_length;      /* 414 */
    uint64_t body_size;       /* Content-Length, or chunked data; 413 */
    uint32_t chunk_ext_bytes; /* every chunk extension of one request together; 400 */
} sws_http_limits;

/* uri_length 8k: RFC 9112 3 asks for request lines of at least 8000 octets,
 * and header_bytes 16k lets such a line through with the fields after it. */
#define SWS_HTTP_DEFAULT_LIMITS                                                                    \
    { 16384, 100, 8192, 1048576, 4096 }

/* The path is copied (truncated) so that a request can be routed after the
 * receive buffer that held it has been given back. */
#define SWS_HTTP_PATH_MAX 128
#define SWS_HTTP_HOST_MAX 256
/* The request line, Referer and User-Agent, kept (truncated, first field line
 * only) for the access log's combined format, in storage the caller lends
 * (log_fields): SWS_HTTP_LOG_STORAGE bytes, each field at its offset. */
#define SWS_HTTP_LOG_FIELD_MAX 256
#define SWS_HTTP_LOG_REFERER 0
#define SWS_HTTP_LOG_UA SWS_HTTP_LOG_FIELD_MAX
#define SWS_HTTP_LOG_LINE (2 * SWS_HTTP_LOG_FIELD_MAX)
#define SWS_HTTP_LOG_STORAGE (3 * SWS_HTTP_LOG_FIELD_MAX)

/* The fields the static scenario and the gate decide on, and the whole path (the static
 * scenario must not route a truncated one), kept in storage the caller lends
 * (sf_fields, SWS_HTTP_SF_STORAGE bytes): each value at its index times
 * SWS_HTTP_SF_VALUE_MAX, the path at SWS_HTTP_SF_PATH. A length past its
 * room means "too long, not kept": the field must be taken as unusable. */
enum {
    SWS_HTTP_SF_RANGE,
    SWS_HTTP_SF_INM,      /* If-None-Match; several lines joined by ',' */
    SWS_HTTP_SF_IMS,      /* If-Modified-Since */
    SWS_HTTP_SF_IF_RANGE, /* If-Range */
    SWS_HTTP_SF_AE,       /* Accept-Encoding; several lines joined by ',' */
    SWS_HTTP_SF_AUTH,     /* Authorization (the gate's Basic credentials) */
    SWS_HTTP_SF_XFF,      /* X-Forwarded-For (the gate's client address); joined by ',' */
    SWS_HTTP_SF_N
};
/* The fields kept whole when a request repeats them (the lines joined by ','). */
#define SWS_HTTP_SF_LIST(k)                                                                        \
    ((k) == SWS_HTTP_SF_INM || (k) == SWS_HTTP_SF_AE || (k) == SWS_HTTP_SF_XFF)
#define SWS_HTTP_SF_VALUE_MAX 128
#define SWS_HTTP_SF_PATH (SWS_HTTP_SF_N * SWS_HTTP_SF_VALUE_MAX)
#define SWS_HTTP_SF_PATH_MAX 1024
#define SWS_HTTP_SF_STORAGE (SWS_HTTP_SF_PATH + SWS_HTTP_SF_PATH_MAX)

typedef struct sws_http_request {
    uint8_t method; /* llhttp_method_t */
    uint8_t http_major;
    uint8_t http_minor;
    bool head;       /* HEAD: the answer has no body */
    bool keep_alive; /* HTTP/1.1 default, HTTP/1.0 keep-alive, Connection: close */
    /* Upgrade with Connection: upgrade (not CONNECT): keep_alive is false,
     * since llhttp reads nothing after it; upgrade_keep is what keep_alive
     * would be, for a scenario that takes the upgrade (the proxy's tunnel)
     * or answers it otherwise and goes on with a fresh reader. */
    bool upgrade, upgrade_keep;
    bool path_truncated;
    uint16_t path_len;
    uint16_t host_len; /* of host[], below */
    /* Bytes kept in log_fields; no NUL. line_len is the raw request line's
     * (CR LF excluded), kept even when the line was refused. All three are
     * the last request's until the next byte after it (0 for blank lines). */
    uint16_t referer_len, user_agent_len, line_len;
    /* NULL (after init): not kept. Else SWS_HTTP_LOG_STORAGE bytes; outside
     * the parser, so that a connection without an access log does not carry
     * (or touch) them. */
    char *log_fields;
    /* NULL: not kept. Else SWS_HTTP_SF_STORAGE bytes (see SWS_HTTP_SF_*). */
    char *sf_fields;
    uint16_t sf_len[SWS_HTTP_SF_N]; /* 0 absent; > SWS_HTTP_SF_VALUE_MAX unusable */
    uint16_t sf_path_len;           /* > SWS_HTTP_SF_PATH_MAX: too long */
    /* The two buffers last: a fresh parser zeroes only what comes before them
     * (sws_http_parser_init); their bytes past path_len and host_len are
     * never read. */
    char path[SWS_HTTP_PATH_MAX]; /* NUL-terminated */
    /* The Host field's value as it came (port included, no OWS), for routing;
     * 0 when absent. A longer one is cut at SWS_HTTP_HOST_MAX. */
    char host[SWS_HTTP_HOST_MAX];
} sws_http_request;

/* Room to recognise the field names that frame or route a request
 * ("transfer-encoding" is the longest), and to judge a Transfer-Encoding list. */
#define SWS_HTTP_NAME_MAX 17
#define SWS_HTTP_TE_MAX 32

typedef struct sws_http_parser {
    llhttp_t p;
    const sws_http_limits *limits;
    uint32_t raw_head; /* raw head + trailer bytes so far, blank lines before too */
    uint32_t header_count;
    uint32_t uri_len;
    uint64_t body_bytes;
    int status;      /* the error status chosen by a callback; 0 when none */
    bool in_message; /* a request has begun and is not complete */
    bool headers_done;
    bool head_sound; /* the head is complete and passed every check (see sws_http_head_sound) */
    bool complete;   /* a request is complete and not yet returned */
    /* Strictness (RFC 9112) that llhttp does not enforce itself; see parse_cold.c. */
    uint8_t scan;       /* state of the raw head scanner (bare CR/LF, obs-fold) */
    uint8_t field;      /* which framing or routing field the current line is */
    uint8_t name_len;   /* bytes of the current field name, saturating */
    uint8_t host_count; /* Host fields seen, saturating */
    uint8_t te_len;     /* bytes kept in te[]; SWS_HTTP_TE_MAX + 1 once it overflowed */
    uint8_t ver_len;    /* nonzero once the request line gave a version */
    uint8_t method_tok; /* the method token so far: pending, a token, malformed */
    bool method_wait;   /* llhttp refused the method; the scanner reads to its end */
    uint8_t sf;         /* which SWS_HTTP_SF_* the current field line is */
    bool te_seen;
    bool early_data;              /* an Early-Data field: an earlier hop took it in early data */
    bool last_chunk;              /* paused after the size line of the last chunk */
    bool chunked;                 /* the body is chunked: its size lines are scanned here */
    bool trailers;                /* the last chunk was seen: what follows is the trailer */
    bool chunk_next;              /* paused after a chunk: a size line follows */
    sws_size_line size_line;      /* the chunk size line being read */
    uint32_t ext_bytes;           /* chunk extension bytes of this request so far */
    bool host_ws;                 /* whitespace seen in the Host value: only OWS may follow */
    bool expect_continue;         /* a 100 (Continue) is owed: see sws_http_continue_due */
    uint8_t expect_match;         /* bytes of "100-continue" matched; UINT8_MAX: another value */
    char name[SWS_HTTP_NAME_MAX]; /* lowercased start of the current field name */
    char te[SWS_HTTP_TE_MAX];     /* every Transfer-Encoding value, joined by ',' */
    /* The one-pass reader (head.c): a request whose head it read never reaches
     * llhttp, so its Content-Length body is counted here, and what follows a
     * request that ended the connection is refused here as llhttp would. */
    bool fast_body;      /* in the body of a request head.c read */
    bool closed;         /* a request without keep-alive ended: nothing may follow */
    bool reference_only; /* tests only: never head.c, always scan_head + llhttp */
    bool portable_scan;  /* tests only: head.c scans byte by byte, never with SIMD */
    bool ll_ready;       /* p is set up: done when the reference path first needs it */
    uint64_t body_left;  /* Content-Length bytes of fast_body still to come */
    sws_http_request req;
} sws_http_parser;

/* Results of sws_http_feed(). */
#define SWS_HTTP_NEED_MORE 0 /* every byte consumed; no complete request */
#define SWS_HTTP_REQUEST 1   /* one request complete in p->req; *consumed says how far */

/* limits must outlive the parser. */
void sws_http_parser_init(sws_http_parser *p, const sws_http_limits *limits);

/* Feeds bytes. Returns SWS_HTTP_NEED_MORE, SWS_HTTP_REQUEST (at most one per
 * call: feed the rest of the data again), or -EBADMSG with the status to answer
 * in *status: 400 (malformed or ambiguous, see parse_cold.c), 413, 414, 431, 501 (a
 * transfer coding other than chunked, or a method llhttp does not know) or 505 (an HTTP version
 * other than 1.0 and 1.1). The connection must then be closed after the answer, and the parser is
 * unusable until sws_http_parser_init(). */
int sws_http_feed(sws_http_parser *p, const char *data, size_t len, size_t *consumed, int *status);

/* Whether the caller should send "HTTP/1.1 100 Continue" now: true once per
 * request, after sws_http_feed() returned SWS_HTTP_NEED_MORE with the head of
 * an HTTP/1.1 request complete that carries "Expect: 100-continue" and a body
 * not yet read (RFC 9110 10.1.1: answer at once, never wait for the content).
 * A head whose Content-Length is past body_size is refused (413) by
 * sws_http_feed() instead, as soon as the head is in. */
bool sws_http_continue_due(sws_http_parser *p);

/* Whether bytes of an unfinished request have been seen (for 408 vs a silent
 * idle close). */
static inline bool sws_http_partial(const sws_http_parser *p) {
    return p->in_message;
}

/* Whether the unfinished request's head is complete and sound (every check
 * on the head passed): its Host and path in p->req are the ones to route
 * it by, also when sws_http_feed() then refuses it (413 for a Content-Length
 * past body_size, decided as soon as the head is in; a fault in a chunked
 * body or in the trailers). False for a refusal of the head itself (400,
 * 414, 431, 501, 505), and between requests. */
static inline bool sws_http_head_sound(const sws_http_parser *p) {
    return p->in_message && p->head_sound;
}

/* RFC 8470: a request taken in early data (TLS 1.3's 0-RTT, ours, or an
 * earlier hop's, which marks it Early-Data: 1) may be a replay. GET, HEAD
 * and OPTIONS are served (safe methods, RFC 9110 9.2.1); any other cannot
 * be processed safely, and such a request MUST be refused 425 Too Early
 * (RFC 8470 5.1), which its client sends again after its handshake. The
 * status, or 0. For every protocol. */
static inline int sws_http_too_early(uint8_t method, bool early) {
    return early && method != HTTP_GET && method != HTTP_HEAD && method != HTTP_OPTIONS ? 425 : 0;
}

/* ---- responses ----------------------------------------------------------- */

const char *sws_http_reason(int status);

/* Writes a response head. Returns its length, or 0 when it does not fit in cap. */
size_t sws_http_head(char *out, size_t cap, int status, const char *date, const char *content_type,
                     uint64_t content_length, bool keep_alive);
/* The same with fields_len bytes of "Name: value\r\n" lines after the
 * length (a route's header policy). */
size_t sws_http_head_fields(char *out, size_t cap, int status, const char *date,
                            const char *content_type, uint64_t content_length, bool keep_alive,
                            const char *fields, size_t fields_len);

/* A complete small error answer with "Connection: close" and a text body
 * naming the status. Returns its length, or 0 when it does not fit. */
size_t sws_http_error(char *out, size_t cap, int status, const char *date, bool head);
/* The same with fields_len bytes of "Name: value\r\n" lines in its head. */
size_t sws_http_error_fields(char *out, size_t cap, int status, const char *date, bool head,
                             const char *fields, size_t fields_len);
/* The length of the body sws_http_error() writes for status. */
size_t sws_http_error_body_len(int status);

#define SWS_HTTP_SERVER "scalwsd"

/* ---- Date -------------------------------------------------------------- */

/* One per loop: refreshed at most once per second, so a response costs a copy
 * of 29 bytes, never a strftime. */
typedef struct sws_date_cache {
    time_t sec;
    uint32_t version; /* bumped when str changes, so dependants can rebuild */
    char str[32];     /* IMF-fixdate, NUL-terminated, 29 bytes */
} sws_date_cache;
#define SWS_DATE_LEN 29 /* strlen of an IMF-fixdate */

void sws_date_init(sws_date_cache *c);
/* Returns true when the string changed. Cheap: one coarse clock read. */
bool sws_date_refresh(sws_date_cache *c);
/* IMF-fixdate of t ("Sun, 06 Nov 1994 08:49:37 GMT"); out has room for 30. */
void sws_date_format(time_t t, char *out);

#endif
