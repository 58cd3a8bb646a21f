/* The SNI name table: host names and `*.` wildcards of a TLS listener's
 * certificates, each mapped to a number (the caller's entry). Built once on
 * the control thread, then read-only, so loops look names up without a lock;
 * a lookup hashes the name (and its parent, for a wildcard) and allocates
 * nothing, whatever the count of names.
 *
 * Names are compared case-insensitively, a trailing dot ignored. A wildcard
 * covers one label, as RFC 6125 6.4.3 says: "*.example.com" matches
 * "a.example.com", not "example.com" nor "a.b.example.com". An exact name
 * beats a wildcard. */
#ifndef SWS_TLS_NAMES_H
#define SWS_TLS_NAMES_H

#include <stddef.h>
#include <stdint.h>

#define SWS_TLS_NAME_LEN 253 /* a DNS name's longest text form */

typedef struct sws_tls_names sws_tls_names;

/* An empty table. NULL without memory. */
sws_tls_names *sws_tls_names_new(void);
void sws_tls_names_free(sws_tls_names *t);

/* name, lowercased and without a trailing dot, into out (SWS_TLS_NAME_LEN + 1
 * bytes, NUL-terminated): its length, or 0 when it cannot be a host name
 * (empty, too long, a byte outside letters, digits, '-', '_' and '.', an empty
 * label). A pattern ("*.example.com") is checked with the '*' label allowed. */
size_t sws_tls_name_normal(const char *name, size_t len, char *out);

/* Adds a name or a "*." pattern (normal form, as above) with its value. 0;
 * -EEXIST if it is there already (*old: its value); -EINVAL for a pattern this
 * table cannot serve ('*' elsewhere than a whole first label, or fewer than
 * two labels after it); -ENOMEM. */
int sws_tls_names_add(sws_tls_names *t, const char *pattern, uint32_t value, uint32_t *old);

/* The value of the entry a client's server name selects: the exact name, else
 * the wildcard of its parent. name is as the client sent it (any case, a
 * trailing dot or not). 1 exact, 2 by a wildcard, 0 none. Any thread, while
 * nobody adds. */
int sws_tls_names_find(const sws_tls_names *t, const char *name, size_t len, uint32_t *value);

/* The value of exactly this name or pattern ("*.example.com" is the wildcard
 * entry, not a name it matches): 1, or 0 when it was not added. */
int sws_tls_names_get(const sws_tls_names *t, const char *pattern, uint32_t *value);

/* A hash of a client's server name (any case, a trailing dot or not): equal
 * for names the table takes as one. */
uint64_t sws_tls_name_hash(const char *name, size_t len);

/* How many names and patterns were added. */
size_t sws_tls_names_count(const sws_tls_names *t);

#endif
