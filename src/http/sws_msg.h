/* sws_msg: an HTTP/1.1 message reader on llhttp for the proxy, in request or
 * response mode. It keeps the head (start line and fields) so the proxy can
 * rewrite it, and hands body bytes over as they are decoded. No allocation:
 * a reader lives inside the proxy exchange that owns it. */
#ifndef SWS_MSG_H
#define SWS_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <llhttp.h>

#define SWS_MSG_HEAD_MAX 8192
#define SWS_MSG_FIELDS_MAX 100

typedef struct sws_msg_field {
    uint16_t name_off, name_len;
    uint16_t val_off, val_len;
} sws_msg_field;

struct sws_msg;

/* Callbacks. on_head returns 0, 1 (response only: no body follows, the answer
 * to HEAD) or -1 to stop with an error; on_body and on_done return 0 or -1.
 * A 1xx response never has a body, whatever on_head returns. */
typedef struct sws_msg_cb {
    int (*on_head)(void *user, struct sws_msg *m);
    int (*on_body)(void *user, const char *data, size_t len);
    int (*on_done)(void *user, struct sws_msg *m);
} sws_msg_cb;

typedef struct sws_msg {
    llhttp_t p;
    llhttp_settings_t s;
    const sws_msg_cb *cb;
    void *user;
    uint32_t len;       /* bytes of buf used */
    uint32_t start_off; /* URL (request) or reason phrase (response) in buf */
    uint32_t start_len;
    uint32_t nf;
    /* Fields of the head: those past it (f[head_nf..nf)) are the trailer
     * section of a chunked message, read into the same buffer. */
    uint32_t head_nf;
    uint8_t last;  /* 0 nothing, 1 in a field name, 2 in a value */
    bool overflow; /* head larger than SWS_MSG_HEAD_MAX or too many fields */
    bool started;  /* a message has begun and is not complete */
    bool headers_done;
    /* Chunk size lines are read here, not by llhttp 8.1, which refuses
     * several extensions on a line (msg.c): the state of the one being read. */
    bool size_next; /* llhttp paused where a size line begins */
    bool at_size;   /* reading one */
    bool trailers;  /* the last chunk came: no size line follows */
    uint8_t cstate; /* 0 digits, 1 extensions, 2 after its CR */
    uint8_t csize_len;
    char csize[34]; /* its digits, then CR LF: what llhttp is fed */
    sws_msg_field f[SWS_MSG_FIELDS_MAX];
    char buf[SWS_MSG_HEAD_MAX];
} sws_msg;

#define SWS_MSG_NEED_MORE 0
#define SWS_MSG_DONE 1

void sws_msg_init(sws_msg *m, llhttp_type_t type, const sws_msg_cb *cb, void *user);

/* Feeds bytes. SWS_MSG_NEED_MORE: all consumed; SWS_MSG_DONE: one message is
 * complete and *used says how far (call sws_msg_next() before feeding the
 * rest); -E2BIG: head too large; -EBADMSG: malformed or a callback refused. */
int sws_msg_feed(sws_msg *m, const char *data, size_t len, size_t *used);

/* End of stream: SWS_MSG_DONE when it completes a close-delimited message,
 * 0 when no message had begun, -EPIPE when a message is cut short. */
int sws_msg_eof(sws_msg *m);

/* Ready for the next message on the same stream. */
void sws_msg_next(sws_msg *m);

/* Case-insensitive field name test. */
bool sws_msg_name_is(const sws_msg *m, uint32_t i, const char *name);

/* Whether the comma-separated list v[0..n) holds token (case-insensitive,
 * OWS around each element ignored). */
bool sws_http_list_has(const char *v, size_t n, const char *token);
/* Whether the comma-separated value of field i holds token (case-insensitive). */
bool sws_msg_value_has(const sws_msg *m, uint32_t i, const char *token);

#endif
