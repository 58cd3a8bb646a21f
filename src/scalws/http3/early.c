/* 0-RTT (RFC 9001 4.6, RFC 8446 8): a resumed client's first flight may
 * carry requests, which an attacker can replay. GnuTLS's anti-replay takes
 * early data only from a ticket issued within the endpoint's window whose
 * ClientHello arrives when its age says it should, and asks our memory
 * whether that ClientHello's binder was taken already: the memory here,
 * one per process, because a replay may reach any loop. What remains
 * replayable within the window is refused above (session.c: 425 for an
 * unsafe method). Invariant: the memory holds each binder until the end of
 * the window it was taken in. */
#include "h3.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Binders remembered at once: 8 slots a bucket. With every slot of a
 * bucket taken and live, early data is refused (never a replay taken). */
#define REPLAY_BUCKETS 8192
#define REPLAY_WAYS 8
#define REPLAY_KEY_MAX 48 /* a binder: SHA-384's length at most */

typedef struct replay_slot {
    time_t expires; /* 0: free */
    uint8_t len;
    uint8_t key[REPLAY_KEY_MAX];
} replay_slot;

struct sws_h3_replay {
    pthread_mutex_t lock;
    _Atomic int refs;
    replay_slot *slots; /* REPLAY_BUCKETS * REPLAY_WAYS, made at the first use */
};

sws_h3_replay *sws_h3_replay_new(void) {
    sws_h3_replay *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    pthread_mutex_init(&r->lock, NULL);
    atomic_init(&r->refs, 1);
    return r;
}

static void replay_ref(sws_h3_replay *r) {
    atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed);
}

void sws_h3_replay_unref(sws_h3_replay *r) {
    if (!r || atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) != 1)
        return;
    pthread_mutex_destroy(&r->lock);
    free(r->slots);
    free(r);
}

static uint32_t key_hash(const uint8_t *k, size_t len) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ k[i]) * 16777619u;
    return h;
}

/* GnuTLS's key is the recording's start (12 bytes: seconds in 8, then
 * nanoseconds) and the ClientHello's binder. Each loop's recording starts
 * at its own time, so the binder alone is the key here: a ClientHello
 * taken on one loop is a replay on every other. */
#define GNUTLS_KEY_PREFIX 12

static int replay_add(void *ptr, time_t exp_time, const gnutls_datum_t *key,
                      const gnutls_datum_t *data) {
    (void)data;
    sws_h3_replay *r = ptr;
    const uint8_t *k = key->data;
    size_t len = key->size;
    if (len > GNUTLS_KEY_PREFIX) {
        k += GNUTLS_KEY_PREFIX;
        len -= GNUTLS_KEY_PREFIX;
    }
    if (len > REPLAY_KEY_MAX)
        return GNUTLS_E_DB_ERROR; /* not taken: the client's data waits for 1-RTT */
    time_t now = time(NULL);
    int rc = GNUTLS_E_DB_ERROR;
    pthread_mutex_lock(&r->lock);
    if (!r->slots)
        r->slots = calloc((size_t)REPLAY_BUCKETS * REPLAY_WAYS, sizeof(*r->slots));
    if (r->slots) {
        replay_slot *b = &r->slots[(key_hash(k, len) % REPLAY_BUCKETS) * REPLAY_WAYS], *room = NULL;
        for (int i = 0; i < REPLAY_WAYS; i++) {
            replay_slot *s = &b[i];
            bool live = s->expires && s->expires >= now;
            if (live && s->len == len && memcmp(s->key, k, len) == 0) {
                room = NULL;
                rc = GNUTLS_E_DB_ENTRY_EXISTS;
                break;
            }
            if (!live && !room)
                room = s;
        }
        if (room) {
            room->expires = exp_time;
            room->len = (uint8_t)len;
            memcpy(room->key, k, len);
            rc = 0;
        }
    }
    pthread_mutex_unlock(&r->lock);
    return rc;
}

void h3_ar_unref(h3_ar *a) {
    if (!a || --a->refs)
        return;
    gnutls_anti_replay_deinit(a->ar);
    free(a);
}

void h3_early_init(sws_h3_endpoint *ep) {
    /* Held from the start: a SIGHUP may turn 0-RTT on later. */
    if (ep->s.replay) {
        ep->replay = ep->s.replay;
        replay_ref(ep->replay);
    }
}

int h3_early_start(sws_h3_endpoint *ep) {
    if (!ep->replay && !(ep->replay = sws_h3_replay_new()))
        return -ENOMEM;
    h3_ar *a = calloc(1, sizeof(*a));
    /* Its recording starts now: a ticket issued before takes no early data. */
    if (!a || gnutls_anti_replay_init(&a->ar) != 0) {
        free(a);
        return -ENOMEM;
    }
    a->refs = 1;
    gnutls_anti_replay_set_window(a->ar, ep->p.early_window_ms);
    gnutls_anti_replay_set_add_function(a->ar, replay_add);
    gnutls_anti_replay_set_ptr(a->ar, ep->replay);
    h3_ar_unref(ep->ar);
    ep->ar = a;
    return 0;
}

int h3_early_session(h3_conn *hc) {
    sws_h3_endpoint *ep = hc->ep;
    if (!ep->p.early_data || !ep->ar)
        return 0;
    /* GnuTLS keeps the pointer: the connection holds it while it lives. */
    hc->ar = ep->ar;
    hc->ar->refs++;
    gnutls_anti_replay_enable(hc->tls, hc->ar->ar);
    /* RFC 9001 4.6.1: QUIC's tickets say 0xffffffff; QUIC's own flow
     * control bounds what comes. */
    return gnutls_record_set_max_early_data_size(hc->tls, 0xffffffffu) == 0 ? 0 : -EINVAL;
}
