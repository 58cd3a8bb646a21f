/* The HTTP-01 token table: written by the ACME thread, read by every loop
 * (and the control thread's challenge listener) when a request for
 * /.well-known/acme-challenge/TOKEN arrives. Small and mutex-protected: a
 * lookup holds the lock for a few string compares, and the count is an atomic
 * so that a loop with no challenge in flight takes no lock at all. */
#ifndef SWS_ACME_TOKENS_H
#define SWS_ACME_TOKENS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#define SWS_ACME_CHALLENGE_PREFIX "/.well-known/acme-challenge/"
#define SWS_ACME_TOKENS_MAX 16
#define SWS_ACME_KEYAUTH_MAX 320

extern _Atomic int sws_acme_tokens_live;

/* 0, or -ENOSPC when the table is full, -EINVAL when too long. */
int sws_acme_token_put(const char *token, const char *key_authz);
void sws_acme_token_drop(const char *token);
/* The key authorization for path (which starts with the prefix) into buf:
 * its length, or 0 when unknown. Any thread; never blocks for long. */
size_t sws_acme_token_answer(const char *path, size_t path_len, char *buf, size_t cap);

static inline bool sws_acme_challenge_path(const char *path, size_t len) {
    return atomic_load_explicit(&sws_acme_tokens_live, memory_order_relaxed) > 0 &&
           len > sizeof(SWS_ACME_CHALLENGE_PREFIX) - 1 &&
           __builtin_memcmp(path, SWS_ACME_CHALLENGE_PREFIX,
                            sizeof(SWS_ACME_CHALLENGE_PREFIX) - 1) == 0;
}

#endif
