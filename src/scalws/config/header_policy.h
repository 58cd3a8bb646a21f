/* Header policy (issue 31, item 6): fields added to the answers of a route,
 * as nginx's add_header. `add_header = Name: value` lines put a field on the
 * 2xx and 3xx answers, `add_header_always = Name: value` lines on every
 * answer, the server's own errors included; [server]'s lines are the default
 * route's and every route's that names none of its own. Checked at load
 * (a token name, a value without CR, LF or NUL, no field that frames the
 * message or belongs to one connection), built once with the route table in
 * both wire forms, so that a protocol adds them with one copy and nothing
 * per request is allocated or lowercased. Read-only once built. */
#ifndef SWS_HEADER_POLICY_H
#define SWS_HEADER_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SWS_HEADERS_MAX 32        /* fields of one section */
#define SWS_HEADERS_TEXT_MAX 2048 /* their bytes as HTTP/1.1 lines ("Name: value\r\n") */

/* The lines of one section as the loader read them, in order: "Name: value\r\n"
 * each, bit i of `always` set for an add_header_always line. Part of
 * sws_config (a value: copies of the config copy it). */
typedef struct sws_header_keys {
    char text[SWS_HEADERS_TEXT_MAX];
    uint16_t len;
    uint8_t n;
    bool set; /* the section has its own lines (an empty one counts): none are inherited */
    uint32_t always;
} sws_header_keys;

/* A field, names lowercased (HTTP/2 writes them so). */
typedef struct sws_header_field {
    const char *name, *value;
    uint32_t name_len, value_len;
} sws_header_field;

/* A route's fields, both forms, on the heap (sws_header_policy_build). */
typedef struct sws_header_policy {
    uint32_t n;
    uint32_t always; /* bit i: field i goes on every answer */
    const sws_header_field *h2;
    /* HTTP/1.1 text: [0] the always fields alone, [1] every field, each as
     * "Name: value\r\n" lines in the order given. */
    const char *h1[2];
    uint32_t h1_len[2];
} sws_header_policy;

/* Whether an answer of status takes every field (2xx, 3xx, as nginx) or the
 * always ones alone. */
static inline bool sws_headers_all(int status) {
    return status >= 200 && status < 400;
}

/* The HTTP/1.1 lines for an answer of status (NULL policy: none). */
static inline const char *sws_headers_h1(const sws_header_policy *p, int status, uint32_t *len) {
    if (!p) {
        *len = 0;
        return NULL;
    }
    int k = sws_headers_all(status);
    *len = p->h1_len[k];
    return p->h1[k];
}

/* Whether field i goes on an answer of status. */
static inline bool sws_headers_take(const sws_header_policy *p, uint32_t i, int status) {
    return sws_headers_all(status) || (p->always & (1u << i));
}

/* Appends one line, "Name: value" (always: an add_header_always line); an
 * empty value names no field but makes the section's list its own. 0, or
 * -EINVAL with why. */
int sws_header_keys_add(sws_header_keys *k, const char *v, bool always, char *why, size_t len);
/* The lines of one key (always or not) as a file writes them, one per line
 * joined by '\n' (sws_config_print writes each as its own key line). */
void sws_header_keys_format(const sws_header_keys *k, bool always, char *out, size_t len);

/* The policy of k's lines on the heap (NULL when k has none, or out of
 * memory: *rc says which, 0 or -ENOMEM); sws_header_policy_free frees it. */
sws_header_policy *sws_header_policy_build(const sws_header_keys *k, int *rc);
void sws_header_policy_free(sws_header_policy *p);
/* The lines back (--print-config of a route). */
void sws_header_policy_keys(const sws_header_policy *p, sws_header_keys *k);

#endif
