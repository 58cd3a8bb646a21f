/* The QUIC endpoint: each datagram to its connection by Destination
 * Connection ID, a new connection for a client's Initial, a version
 * negotiation for a version we do not speak, a stateless reset for a short
 * packet of a connection we do not know (RFC 9000 10.3), and the timers of
 * every connection. Invariant: every CID a connection of ours answers to is
 * in the table, and only while the connection lives. */
#include "h3.h"

#include <errno.h>
#include <gnutls/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ngtcp2/ngtcp2_crypto_gnutls.h>

uint64_t sws_h3_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * NGTCP2_SECONDS + (uint64_t)ts.tv_nsec;
}

/* ---- the CID table ------------------------------------------------------------- */

static uint32_t cid_hash(const uint8_t *cid, size_t len) {
    uint32_t h = 2166136261u; /* FNV-1a: our CIDs are random but for their steering byte */
    for (size_t i = 0; i < len; i++)
        h = (h ^ cid[i]) * 16777619u;
    return h;
}

static h3_cid_entry **cid_slot(sws_h3_endpoint *ep, const uint8_t *cid, size_t len) {
    h3_cid_entry **p = &ep->buckets[cid_hash(cid, len) & (ep->nbuckets - 1)];
    while (*p && ((*p)->len != len || memcmp((*p)->cid, cid, len) != 0))
        p = &(*p)->next;
    return p;
}

static int cid_grow(sws_h3_endpoint *ep) {
    uint32_t n = ep->nbuckets * 2;
    h3_cid_entry **b = calloc(n, sizeof(*b));
    if (!b)
        return -ENOMEM;
    for (uint32_t i = 0; i < ep->nbuckets; i++)
        for (h3_cid_entry *e = ep->buckets[i], *next; e; e = next) {
            next = e->next;
            uint32_t k = cid_hash(e->cid, e->len) & (n - 1);
            e->next = b[k];
            b[k] = e;
        }
    free(ep->buckets);
    ep->buckets = b;
    ep->nbuckets = n;
    return 0;
}

int h3_cid_add(sws_h3_endpoint *ep, const uint8_t *cid, size_t len, h3_conn *hc) {
    if (len > NGTCP2_MAX_CIDLEN)
        return -EINVAL;
    if (ep->ncids >= ep->nbuckets && cid_grow(ep) < 0)
        return -ENOMEM;
    h3_cid_entry **p = cid_slot(ep, cid, len);
    if (*p)
        return (*p)->hc == hc ? 0 : -EEXIST;
    h3_cid_entry *e = calloc(1, sizeof(*e));
    if (!e)
        return -ENOMEM;
    e->hc = hc;
    e->len = (uint8_t)len;
    memcpy(e->cid, cid, len);
    *p = e;
    ep->ncids++;
    return 0;
}

void h3_cid_del(sws_h3_endpoint *ep, const uint8_t *cid, size_t len) {
    h3_cid_entry **p = cid_slot(ep, cid, len);
    h3_cid_entry *e = *p;
    if (!e)
        return;
    *p = e->next;
    free(e);
    ep->ncids--;
}

static h3_conn *cid_find(sws_h3_endpoint *ep, const uint8_t *cid, size_t len) {
    h3_cid_entry *e = *cid_slot(ep, cid, len);
    return e ? e->hc : NULL;
}

/* The default layout: random bytes, the loop's index at SWS_H3_CID_LOOP_BYTE. */
static void default_cid(void *ud, uint8_t *cid, size_t len) {
    sws_h3_endpoint *ep = ud;
    (void)gnutls_rnd(GNUTLS_RND_NONCE, cid, len);
    cid[SWS_H3_CID_LOOP_BYTE] = ep->s.loop_index;
}

void h3_make_cid(sws_h3_endpoint *ep, uint8_t *cid) {
    /* A CID already ours (one in 2^120) is drawn again. */
    do
        ep->s.make_cid(ep->s.cid_ud, cid, SWS_H3_CID_LEN);
    while (cid_find(ep, cid, SWS_H3_CID_LEN));
}

/* ---- datagrams out ------------------------------------------------------------- */

int h3_send(sws_h3_endpoint *ep, const ngtcp2_path *path, unsigned ecn, const uint8_t *data,
            size_t len) {
    int rc = ep->s.send(ep->s.send_ud, path->local.addr, path->local.addrlen, path->remote.addr,
                        path->remote.addrlen, ecn, data, len);
    if (rc < 0)
        ep->st.send_errors++;
    else
        ep->st.datagrams_out++;
    return rc;
}

/* RFC 9000 6.1: the versions we speak, after one reserved version (a
 * 0x?a?a?a?a pattern) so that clients keep coping with unknown ones. */
static void version_negotiation(sws_h3_endpoint *ep, const ngtcp2_version_cid *vc,
                                const ngtcp2_path *path) {
    uint8_t r[2];
    (void)gnutls_rnd(GNUTLS_RND_NONCE, r, sizeof(r));
    uint32_t sv[] = {0x1a2a3a4au | ((uint32_t)(r[0] & 0xf0) << 24), NGTCP2_PROTO_VER_V1};
    ngtcp2_ssize n = ngtcp2_pkt_write_version_negotiation(
        ep->tx, sizeof(ep->tx), r[1], vc->scid, vc->scidlen, vc->dcid, vc->dcidlen, sv, 2);
    if (n <= 0)
        return;
    ep->st.version_negotiations++;
    h3_send(ep, path, 0, ep->tx, (size_t)n);
}

/* RFC 9000 10.3: shorter than the packet that caused it (so that two
 * endpoints cannot loop), at least 21 bytes, and unpredictable. */
static void stateless_reset(sws_h3_endpoint *ep, const ngtcp2_version_cid *vc, size_t len,
                            const ngtcp2_path *path) {
    size_t min = 1 + NGTCP2_MIN_STATELESS_RESET_RANDLEN + NGTCP2_STATELESS_RESET_TOKENLEN;
    if (len <= min || vc->dcidlen != SWS_H3_CID_LEN)
        return;
    ngtcp2_cid cid;
    ngtcp2_cid_init(&cid, vc->dcid, vc->dcidlen);
    uint8_t token[NGTCP2_STATELESS_RESET_TOKENLEN];
    if (ngtcp2_crypto_generate_stateless_reset_token(token, ep->reset_secret,
                                                     sizeof(ep->reset_secret), &cid) != 0)
        return;
    size_t randlen = len - 1 - NGTCP2_STATELESS_RESET_TOKENLEN - 1;
    if (randlen > 40)
        randlen = 40;
    uint8_t rnd[40];
    (void)gnutls_rnd(GNUTLS_RND_NONCE, rnd, randlen);
    ngtcp2_ssize n = ngtcp2_pkt_write_stateless_reset(ep->tx, sizeof(ep->tx), token, rnd, randlen);
    if (n <= 0)
        return;
    ep->st.stateless_resets++;
    h3_send(ep, path, 0, ep->tx, (size_t)n);
}

/* Connections freed at the end of the endpoint's outermost call, so that
 * none is freed under a caller still holding it. */
static void reap(sws_h3_endpoint *ep) {
    if (ep->depth)
        return;
    for (h3_conn *hc = ep->conns, *next; hc; hc = next) {
        next = hc->next;
        if (hc->dead)
            h3_conn_free(hc);
    }
}

void sws_h3_input(sws_h3_endpoint *ep, const uint8_t *data, size_t len,
                  const struct sockaddr *remote, socklen_t remote_len, const struct sockaddr *local,
                  socklen_t local_len, unsigned ecn, uint64_t now) {
    ep->st.datagrams_in++;
    if (len == 0) {
        /* An empty datagram is valid UDP; Debian's ngtcp2 asserts on it in
         * ngtcp2_pkt_decode_version_cid (found by fuzz_h3). */
        ep->st.dropped++;
        return;
    }
    ngtcp2_path path = {
        {(struct sockaddr *)local, local_len}, {(struct sockaddr *)remote, remote_len}, NULL};
    ngtcp2_version_cid vc;
    int rc = ngtcp2_pkt_decode_version_cid(&vc, data, len, SWS_H3_CID_LEN);
    if (rc == NGTCP2_ERR_VERSION_NEGOTIATION) {
        version_negotiation(ep, &vc, &path);
        return;
    }
    if (rc != 0) {
        ep->st.dropped++;
        return;
    }
    ep->depth++;
    h3_conn *hc = cid_find(ep, vc.dcid, vc.dcidlen);
    if (hc) {
        h3_conn_read(hc, &path, ecn, data, len, now);
    } else if (data[0] & 0x80) {
        ngtcp2_pkt_hd hd;
        /* Only a client's Initial opens a connection; once draining, or at
         * the ceiling, it is dropped and the client's handshake times out
         * (it may try another address: Alt-Svc lists more than one). A
         * DCID under 8 bytes is only ever a Retry's SCID (RFC 9000 7.2),
         * and we send no Retry: ngtcp2_accept lets it through with a token. */
        if (ngtcp2_accept(&hd, data, len) == 0 && hd.dcid.datalen >= NGTCP2_MIN_INITIAL_DCIDLEN &&
            !ep->draining && ep->st.open_connections < ep->p.max_connections &&
            (hc = h3_conn_new(ep, &hd, &path, now)) != NULL)
            h3_conn_read(hc, &path, ecn, data, len, now);
        else
            ep->st.dropped++;
    } else {
        stateless_reset(ep, &vc, len, &path);
    }
    ep->depth--;
    reap(ep);
}

uint64_t sws_h3_next_expiry(const sws_h3_endpoint *ep) {
    uint64_t t = UINT64_MAX;
    for (h3_conn *hc = ep->conns; hc; hc = hc->next) {
        uint64_t e = h3_conn_expiry(hc);
        if (e < t)
            t = e;
    }
    return t;
}

void sws_h3_on_timer(sws_h3_endpoint *ep, uint64_t now) {
    ep->depth++;
    for (h3_conn *hc = ep->conns; hc; hc = hc->next)
        if (!hc->dead && h3_conn_expiry(hc) <= now)
            h3_conn_timer(hc, now);
    ep->depth--;
    reap(ep);
}

void sws_h3_drain(sws_h3_endpoint *ep) {
    ep->draining = true;
    ep->depth++;
    for (h3_conn *hc = ep->conns; hc; hc = hc->next)
        if (!hc->dead) {
            h3_session_goaway(hc);
            h3_conn_write(hc, sws_h3_now());
        }
    ep->depth--;
    reap(ep);
}

void sws_h3_close_all(sws_h3_endpoint *ep) {
    uint64_t now = sws_h3_now();
    ep->depth++;
    for (h3_conn *hc = ep->conns; hc; hc = hc->next) {
        if (!hc->dead && !hc->closing && !hc->draining)
            h3_conn_close_app(hc, NGHTTP3_H3_NO_ERROR, now);
        /* Closed (or closing), nghttp3 is not called again: its streams'
         * entries go now, as for a peer's close (h3_conn_read). */
        while (hc->streams)
            h3_stream_free(hc, hc->streams);
    }
    ep->depth--;
    reap(ep);
}

sws_h3_stats sws_h3_stats_of(const sws_h3_endpoint *ep) {
    sws_h3_stats st = ep->st;
    st.open_streams = ep->ntable - ep->nfree;
    /* The gauges, from each open connection's recovery state. */
    uint64_t rtt_sum = 0, rtt_n = 0;
    for (h3_conn *hc = ep->conns; hc; hc = hc->next) {
        if (hc->dead || hc->closing || hc->draining)
            continue;
        ngtcp2_conn_stat cs;
        ngtcp2_conn_get_conn_stat(hc->q, &cs);
        st.bytes_in_flight += cs.bytes_in_flight;
        if (cs.first_rtt_sample_ts != UINT64_MAX) {
            rtt_sum += cs.smoothed_rtt;
            rtt_n++;
        }
    }
    st.smoothed_rtt_ns = rtt_n ? rtt_sum / rtt_n : 0;
    return st;
}

/* ---- life ---------------------------------------------------------------------- */

int sws_h3_ticket_key(uint8_t *key) {
    return gnutls_rnd(GNUTLS_RND_KEY, key, SWS_H3_TICKET_KEY_LEN) == 0 ? 0 : -EIO;
}

int sws_h3_endpoint_reload_certs(sws_h3_endpoint *ep, const sws_h3_cert *certs, uint32_t ncerts,
                                 bool refuse_unknown, char *err, size_t errlen) {
    h3_cred *c;
    int rc = h3_cred_load(&c, certs, ncerts, refuse_unknown, err, errlen);
    if (rc < 0)
        return rc;
    h3_cred_unref(ep->cred);
    ep->cred = c;
    return 0;
}

int sws_h3_endpoint_reload(sws_h3_endpoint *ep, const char *cert_file, const char *key_file,
                           char *err, size_t errlen) {
    sws_h3_cert one = {.cert_file = cert_file, .key_file = key_file};
    return sws_h3_endpoint_reload_certs(ep, &one, 1, false, err, errlen);
}

void sws_h3_params_default(sws_h3_params *p) {
    *p = (sws_h3_params){.max_streams_bidi = SWS_H3_DEFAULT_STREAMS_BIDI,
                         .stream_window = SWS_H3_DEFAULT_STREAM_WINDOW,
                         .conn_window = SWS_H3_DEFAULT_CONN_WINDOW,
                         .qpack_table = SWS_H3_DEFAULT_QPACK_TABLE,
                         .qpack_blocked = SWS_H3_DEFAULT_QPACK_BLOCKED,
                         .idle_timeout_ms = SWS_H3_DEFAULT_IDLE_MS,
                         .max_connections = SWS_H3_DEFAULT_CONNECTIONS,
                         .early_window_ms = SWS_H3_DEFAULT_EARLY_WINDOW_MS};
}

/* What a client's 0-RTT relies on from the connection its ticket came
 * from: the transport parameters it may not exceed (RFC 9000 7.4.1) and
 * the SETTINGS (RFC 9114 7.2.4.2). FNV-1a over them. */
static uint64_t promised(const sws_h3_params *p, const sws_http_limits *lim) {
    uint64_t v[] = {p->max_streams_bidi, p->stream_window, p->conn_window,
                    p->qpack_table,      p->qpack_blocked, lim->header_bytes};
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
        for (int b = 0; b < 8; b++)
            h = (h ^ ((v[i] >> (8 * b)) & 0xff)) * 1099511628211ull;
    return h;
}

void sws_h3_endpoint_tune(sws_h3_endpoint *ep, const sws_h3_params *p,
                          const sws_http_limits *limits) {
    uint64_t now = promised(p, limits);
    bool window = p->early_window_ms != ep->p.early_window_ms;
    ep->p = *p;
    ep->s.limits = *limits;
    /* A ticket issued under other promises takes no early data: a new
     * recording refuses every ticket older than itself. */
    if (p->early_data && (!ep->ar || now != ep->promised || window) && h3_early_start(ep) < 0)
        fprintf(stderr, "scalwsd: http3: no memory for 0-RTT's anti-replay: 0-RTT stays as it "
                        "was\n");
    ep->promised = now;
}

static int fail(char *err, size_t len, int rc, const char *fmt, const char *what) {
    snprintf(err, len, fmt, what);
    return rc;
}

int sws_h3_endpoint_new(sws_h3_endpoint **out, const sws_h3_settings *s, char *err, size_t errlen) {
    *out = NULL;
    if (!s->send || !s->route || (!s->ncerts && (!s->cert_file || !s->key_file)))
        return fail(err, errlen, -EINVAL, "%s", "http3: send, route, cert and key are required");
    sws_h3_endpoint *ep = calloc(1, sizeof(*ep));
    if (!ep)
        return fail(err, errlen, -ENOMEM, "%s", "http3: out of memory");
    ep->s = *s;
    if (!ep->s.make_cid) {
        ep->s.make_cid = default_cid;
        ep->s.cid_ud = ep;
    }
    if (s->params)
        ep->p = *s->params;
    else
        sws_h3_params_default(&ep->p);
    ep->s.params = &ep->p;
    ep->promised = promised(&ep->p, &ep->s.limits);
    h3_early_init(ep);
    sws_date_init(&ep->date);
    int rc = -ENOMEM;
    ep->nbuckets = 64;
    ep->buckets = calloc(ep->nbuckets, sizeof(*ep->buckets));
    if (!ep->s.max_streams)
        ep->s.max_streams = SWS_H3_DEFAULT_STREAMS;
    ep->ntable = ep->s.max_streams;
    ep->table = calloc(ep->ntable, sizeof(*ep->table));
    ep->free_idx = calloc(ep->ntable, sizeof(*ep->free_idx));
    ep->free_slots = calloc(ep->p.max_connections, sizeof(*ep->free_slots));
    if (!ep->buckets || !ep->table || !ep->free_idx || !ep->free_slots) {
        fail(err, errlen, rc, "%s", "http3: out of memory");
        goto bad;
    }
    for (uint32_t i = 0; i < ep->ntable; i++)
        ep->free_idx[ep->nfree++] = ep->ntable - 1 - i;
    /* The slots are made for [http3] max_connections at start: a SIGHUP may
     * lower it, and raise it no further (the gate's peer table is sized so). */
    ep->nslots = ep->p.max_connections;
    for (uint32_t i = 0; i < ep->nslots; i++)
        ep->free_slots[ep->nfree_slots++] = ep->nslots - 1 - i;
    _Static_assert(sizeof(ep->reset_secret) == SWS_H3_RESET_SECRET_LEN, "the host's secret fits");
    if (s->reset_secret)
        memcpy(ep->reset_secret, s->reset_secret, sizeof(ep->reset_secret));
    else if (gnutls_rnd(GNUTLS_RND_KEY, ep->reset_secret, sizeof(ep->reset_secret)) != 0) {
        rc = -EIO;
        fail(err, errlen, rc, "%s", "http3: no random bytes for the stateless reset secret");
        goto bad;
    }
    sws_h3_cert one = {.cert_file = s->cert_file, .key_file = s->key_file};
    rc = s->ncerts ? h3_cred_load(&ep->cred, s->certs, s->ncerts, s->refuse_unknown, err, errlen)
                   : h3_cred_load(&ep->cred, &one, 1, s->refuse_unknown, err, errlen);
    if (rc < 0)
        goto bad;
    if (ep->p.early_data && (rc = h3_early_start(ep)) < 0) {
        fail(err, errlen, rc, "%s", "http3: out of memory");
        goto bad;
    }
    /* The host's key, shared by its loops; else one of this endpoint's own:
     * then only this endpoint resumes its sessions (doc/http3.md). */
    ep->ticket_key.data = gnutls_malloc(SWS_H3_TICKET_KEY_LEN);
    ep->ticket_key.size = SWS_H3_TICKET_KEY_LEN;
    if (!ep->ticket_key.data) {
        rc = -ENOMEM;
        fail(err, errlen, rc, "%s", "http3: out of memory");
        goto bad;
    }
    if (s->ticket_key)
        memcpy(ep->ticket_key.data, s->ticket_key, SWS_H3_TICKET_KEY_LEN);
    else if (sws_h3_ticket_key(ep->ticket_key.data) < 0) {
        rc = -EIO;
        fail(err, errlen, rc, "%s", "http3: no random bytes for a session ticket key");
        goto bad;
    }
    *out = ep;
    return 0;
bad:
    sws_h3_endpoint_free(ep);
    return rc;
}

void sws_h3_endpoint_free(sws_h3_endpoint *ep) {
    if (!ep)
        return;
    while (ep->conns)
        h3_conn_free(ep->conns);
    for (uint32_t i = 0; ep->buckets && i < ep->nbuckets; i++)
        for (h3_cid_entry *e = ep->buckets[i], *next; e; e = next) {
            next = e->next;
            free(e);
        }
    free(ep->buckets);
    free(ep->table);
    free(ep->sf_store);
    free(ep->log_store);
    free(ep->free_idx);
    free(ep->free_slots);
    free(ep->nva);
    free(ep->low);
    h3_cred_unref(ep->cred);
    h3_ar_unref(ep->ar);
    sws_h3_replay_unref(ep->replay);
    if (ep->ticket_key.data) {
        gnutls_memset(ep->ticket_key.data, 0, ep->ticket_key.size);
        gnutls_free(ep->ticket_key.data);
    }
    free(ep);
}
