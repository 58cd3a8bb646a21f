/* The HTTP-01 token table (acme_tokens.h). A mutex rather than a pointer
 * swap: entries change a few times a day, a lookup is a handful of compares,
 * and the lock is only taken for a request on the challenge path. */
#include "acme_tokens.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

#define TOKEN_MAX 128

static struct {
    char token[TOKEN_MAX];
    char keyauth[SWS_ACME_KEYAUTH_MAX];
    bool used;
} tab[SWS_ACME_TOKENS_MAX];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
_Atomic int sws_acme_tokens_live;

int sws_acme_token_put(const char *token, const char *key_authz) {
    if (strlen(token) >= TOKEN_MAX || strlen(key_authz) >= SWS_ACME_KEYAUTH_MAX)
        return -EINVAL;
    int rc = -ENOSPC;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < SWS_ACME_TOKENS_MAX; i++) {
        if (!tab[i].used) {
            strcpy(tab[i].token, token);
            strcpy(tab[i].keyauth, key_authz);
            tab[i].used = true;
            atomic_fetch_add(&sws_acme_tokens_live, 1);
            rc = 0;
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

void sws_acme_token_drop(const char *token) {
    pthread_mutex_lock(&lock);
    for (int i = 0; i < SWS_ACME_TOKENS_MAX; i++) {
        if (tab[i].used && strcmp(tab[i].token, token) == 0) {
            tab[i].used = false;
            atomic_fetch_sub(&sws_acme_tokens_live, 1);
        }
    }
    pthread_mutex_unlock(&lock);
}

size_t sws_acme_token_answer(const char *path, size_t path_len, char *buf, size_t cap) {
    const size_t pl = sizeof(SWS_ACME_CHALLENGE_PREFIX) - 1;
    if (path_len <= pl || memcmp(path, SWS_ACME_CHALLENGE_PREFIX, pl) != 0)
        return 0;
    const char *tok = path + pl;
    size_t tl = path_len - pl;
    size_t n = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < SWS_ACME_TOKENS_MAX; i++) {
        if (tab[i].used && strlen(tab[i].token) == tl && memcmp(tab[i].token, tok, tl) == 0) {
            n = strlen(tab[i].keyauth);
            if (n >= cap)
                n = 0;
            else
                memcpy(buf, tab[i].keyauth, n + 1);
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    return n;
}
