/* HTTP Basic authentication's users (htpasswd.c): an htpasswd-style file,
 * "user:hash" a line, read whole when the configuration is built (so a
 * SIGHUP rereads it, and a broken file refuses the reload). Only the hashes
 * libcrypt computes slowly are taken: bcrypt ($2y$, $2b$) and SHA-512 crypt
 * ($6$); plaintext, MD5 ($apr1$, $1$), SHA-1 ({SHA}) and DES are refused at
 * load. Read-only once loaded: every loop may read it without locks. */
#ifndef SWS_HTPASSWD_H
#define SWS_HTPASSWD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <crypt.h>

typedef struct sws_htpasswd sws_htpasswd;

/* The users of path; NULL with one line in err ("path:line: why", or the
 * file's error). The caller frees it. */
sws_htpasswd *sws_htpasswd_load(const char *path, char *err, size_t errlen);
void sws_htpasswd_free(sws_htpasswd *h);
int sws_htpasswd_count(const sws_htpasswd *h);
/* A number no other load of this process had: what a cache of checks made
 * against this file is keyed by. */
uint64_t sws_htpasswd_gen(const sws_htpasswd *h);

/* Whether user (ulen bytes) has password pass (plen bytes): the password
 * hashed with the user's salt and cost (crypt_rn, into scratch: the calling
 * thread's own) and compared in constant time. An unknown user costs the
 * same as a known one (the first user's hash is computed and thrown away),
 * so the time of an answer does not tell which names exist. Slow on purpose
 * (bcrypt at cost 10: ~50 ms). */
bool sws_htpasswd_check(const sws_htpasswd *h, const char *user, size_t ulen, const char *pass,
                        size_t plen, struct crypt_data *scratch);

#endif
