/* Session ticket keys: a ring of three, the newest encrypts, all three
 * decrypt, so a ticket stays good for two to three rotation periods. The
 * control thread rotates; loops read in the ticket callback under a read lock
 * taken once per handshake, never per request. */
#include "tls_internal.h"

#include <errno.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define RING 3

typedef struct ticket_key {
    unsigned char name[16];
    unsigned char aes[32];
    unsigned char hmac[32];
} ticket_key;

struct sws_tls_keys {
    pthread_rwlock_t lock;
    ticket_key ring[RING]; /* ring[0] is current */
    int n;                 /* keys made so far, up to RING */
    _Atomic uint64_t rotations;
};

static int make_key(ticket_key *k) {
    return RAND_bytes(k->name, sizeof(k->name)) == 1 && RAND_bytes(k->aes, sizeof(k->aes)) == 1 &&
                   RAND_bytes(k->hmac, sizeof(k->hmac)) == 1
               ? 0
               : -EIO;
}

sws_tls_keys *sws_tls_keys_new(void) {
    sws_tls_keys *k = calloc(1, sizeof(*k));
    if (!k)
        return NULL;
    pthread_rwlock_init(&k->lock, NULL);
    if (make_key(&k->ring[0]) < 0) {
        sws_tls_keys_free(k);
        return NULL;
    }
    k->n = 1;
    return k;
}

void sws_tls_keys_free(sws_tls_keys *k) {
    if (!k)
        return;
    pthread_rwlock_destroy(&k->lock);
    OPENSSL_cleanse(k->ring, sizeof(k->ring));
    free(k);
}

int sws_tls_keys_rotate(sws_tls_keys *k) {
    ticket_key fresh;
    if (make_key(&fresh) < 0)
        return -EIO;
    pthread_rwlock_wrlock(&k->lock);
    memmove(&k->ring[1], &k->ring[0], sizeof(ticket_key) * (RING - 1));
    k->ring[0] = fresh;
    if (k->n < RING)
        k->n++;
    pthread_rwlock_unlock(&k->lock);
    OPENSSL_cleanse(&fresh, sizeof(fresh));
    atomic_fetch_add(&k->rotations, 1);
    return 0;
}

uint64_t sws_tls_keys_rotations(const sws_tls_keys *k) {
    return atomic_load(&((sws_tls_keys *)k)->rotations);
}

static int mac_init(EVP_MAC_CTX *hctx, unsigned char *key) {
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, key, 32),
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"sha256", 0),
        OSSL_PARAM_construct_end(),
    };
    return EVP_MAC_CTX_set_params(hctx, params) == 1 ? 0 : -1;
}

/* OpenSSL's contract: enc: fill name and iv, set up both contexts, 1; decrypt:
 * 0 for an unknown key (full handshake), 1 good, 2 good but issue a new ticket
 * (the key is not the current one), -1 on an internal error. */
int sws_tls_ticket_cb(SSL *ssl, unsigned char name[16], unsigned char *iv, EVP_CIPHER_CTX *cctx,
                      EVP_MAC_CTX *hctx, int enc) {
    sws_tls_ctxdata *d = SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), sws_tls_ctx_index());
    if (!d || !d->keys)
        return enc ? -1 : 0;
    sws_tls_keys *k = d->keys;
    ticket_key key;
    int found = -1;
    pthread_rwlock_rdlock(&k->lock);
    if (enc) {
        key = k->ring[0];
        found = 0;
    } else {
        for (int i = 0; i < k->n; i++)
            if (memcmp(name, k->ring[i].name, 16) == 0) {
                key = k->ring[i];
                found = i;
                break;
            }
    }
    pthread_rwlock_unlock(&k->lock);
    if (found < 0)
        return 0;
    int rc;
    if (enc) {
        memcpy(name, key.name, 16);
        rc = RAND_bytes(iv, 16) == 1 &&
                     EVP_EncryptInit_ex(cctx, EVP_aes_256_cbc(), NULL, key.aes, iv) == 1 &&
                     mac_init(hctx, key.hmac) == 0
                 ? 1
                 : -1;
    } else {
        rc = EVP_DecryptInit_ex(cctx, EVP_aes_256_cbc(), NULL, key.aes, iv) == 1 &&
                     mac_init(hctx, key.hmac) == 0
                 ? (found == 0 ? 1 : 2)
                 : -1;
    }
    OPENSSL_cleanse(&key, sizeof(key));
    return rc;
}
