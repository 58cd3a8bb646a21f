/* One QUIC connection: ngtcp2's server side with TLS 1.3 from GnuTLS
 * (ngtcp2_crypto_gnutls), ALPN h3 only, 0-RTT when the endpoint takes it
 * (early.c). Its packets are read and
 * written here, its end is here: a CONNECTION_CLOSE of ours kept and sent
 * again to a peer that keeps talking (closing period), silence when the
 * peer closed (draining period), both for three PTOs (RFC 9000 10.2). */
#include "h3.h"

#include <errno.h>
#include <gnutls/crypto.h>
#include <stdlib.h>
#include <string.h>

#include <ngtcp2/ngtcp2_crypto_gnutls.h>

/* TLS 1.3 only, the AEADs QUIC defines, no middlebox compatibility mode
 * (RFC 9001 8.4). */
static const char TLS_PRIORITY[] =
    "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:"
    "+CHACHA20-POLY1305:+AES-128-CCM:-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:"
    "+GROUP-SECP384R1:+GROUP-SECP521R1:%DISABLE_TLS13_COMPAT_MODE";
static const char ALPN_H3[] = "h3";

static ngtcp2_conn *get_conn(ngtcp2_crypto_conn_ref *ref) {
    return ((h3_conn *)ref->user_data)->q;
}

static void closing_until(h3_conn *hc, uint64_t now) {
    hc->close_at = now + 3 * ngtcp2_conn_get_pto(hc->q);
}

/* ngtcp2 0.12 counts no losses for us: after each of its calls, what moved
 * in its recovery state is counted (a PTO more; a recovery period that
 * began: a congestion event). Cheap: a copy of its stats struct. */
static void count_recovery(h3_conn *hc) {
    ngtcp2_conn_stat cs;
    ngtcp2_conn_get_conn_stat(hc->q, &cs);
    if (cs.pto_count > hc->pto_seen)
        hc->ep->st.probe_timeouts += cs.pto_count - hc->pto_seen;
    hc->pto_seen = cs.pto_count;
    if (cs.congestion_recovery_start_ts != hc->recovery_seen &&
        cs.congestion_recovery_start_ts != UINT64_MAX)
        hc->ep->st.congestion_events++;
    hc->recovery_seen = cs.congestion_recovery_start_ts;
}

/* ---- callbacks from ngtcp2 --------------------------------------------------- */

static void rand_cb(uint8_t *dest, size_t len, const ngtcp2_rand_ctx *ctx) {
    (void)ctx;
    (void)gnutls_rnd(GNUTLS_RND_NONCE, dest, len);
}

static int new_cid_cb(ngtcp2_conn *q, ngtcp2_cid *cid, uint8_t *token, size_t len, void *ud) {
    (void)q;
    h3_conn *hc = ud;
    if (len != SWS_H3_CID_LEN)
        return NGTCP2_ERR_CALLBACK_FAILURE;
    h3_make_cid(hc->ep, cid->data);
    cid->datalen = len;
    if (ngtcp2_crypto_generate_stateless_reset_token(token, hc->ep->reset_secret,
                                                     sizeof(hc->ep->reset_secret), cid) != 0 ||
        h3_cid_add(hc->ep, cid->data, cid->datalen, hc) < 0)
        return NGTCP2_ERR_CALLBACK_FAILURE;
    return 0;
}

static int remove_cid_cb(ngtcp2_conn *q, const ngtcp2_cid *cid, void *ud) {
    (void)q;
    h3_conn *hc = ud;
    h3_cid_del(hc->ep, cid->data, cid->datalen);
    return 0;
}

/* The client must have chosen h3 (GnuTLS already refuses a ClientHello
 * without it: GNUTLS_ALPN_MANDATORY). Its session ticket goes out now. */
static int handshake_completed_cb(ngtcp2_conn *q, void *ud) {
    (void)q;
    h3_conn *hc = ud;
    gnutls_datum_t alpn;
    if (gnutls_alpn_get_selected_protocol(hc->tls, &alpn) != 0 ||
        alpn.size != sizeof(ALPN_H3) - 1 || memcmp(alpn.data, ALPN_H3, alpn.size) != 0)
        return NGTCP2_ERR_CALLBACK_FAILURE;
    if (gnutls_session_ticket_send(hc->tls, 1, 0) != 0)
        return NGTCP2_ERR_CALLBACK_FAILURE;
    /* The client's address is proven now (it read our Initial): it may
     * count against that address's limits. */
    sws_h3_endpoint *ep = hc->ep;
    if (ep->s.peer) {
        hc->peer_told = true;
        ep->s.peer(ep->s.route_ud, hc->slot, (const struct sockaddr *)&hc->remote, hc->remote_len);
    }
    return 0;
}

/* GnuTLS gave the 0-RTT keys: it took the ClientHello's early data
 * (counted now: a client may close before its Finished reaches us). */
static int recv_rx_key_cb(ngtcp2_conn *q, ngtcp2_crypto_level level, void *ud) {
    (void)q;
    h3_conn *hc = ud;
    if (level == NGTCP2_CRYPTO_LEVEL_EARLY)
        hc->ep->st.early_connections++;
    return 0;
}

static int recv_tx_key_cb(ngtcp2_conn *q, ngtcp2_crypto_level level, void *ud) {
    (void)q;
    if (level != NGTCP2_CRYPTO_LEVEL_APPLICATION)
        return 0;
    return h3_session_start(ud) < 0 ? NGTCP2_ERR_CALLBACK_FAILURE : 0;
}

static int recv_stream_data_cb(ngtcp2_conn *q, uint32_t flags, int64_t id, uint64_t off,
                               const uint8_t *data, size_t len, void *ud, void *sud) {
    (void)off;
    (void)sud;
    h3_conn *hc = ud;
    if (!hc->h)
        return 0;
    /* A request whose head ends in 0-RTT data may be a replay (session.c). */
    hc->rx_early = (flags & NGTCP2_STREAM_DATA_FLAG_EARLY) != 0;
    nghttp3_ssize n =
        nghttp3_conn_read_stream(hc->h, id, data, len, flags & NGTCP2_STREAM_DATA_FLAG_FIN);
    hc->rx_early = false;
    if (n < 0) {
        ngtcp2_connection_close_error_set_application_error(
            &hc->err, nghttp3_err_infer_quic_app_error_code((int)n), NULL, 0);
        return NGTCP2_ERR_CALLBACK_FAILURE;
    }
    /* What nghttp3 consumed (frame headers, dropped bodies) opens the
     * windows again; body bytes a scenario holds are consumed later. */
    ngtcp2_conn_extend_max_stream_offset(q, id, (uint64_t)n);
    ngtcp2_conn_extend_max_offset(q, (uint64_t)n);
    return 0;
}

static int acked_cb(ngtcp2_conn *q, int64_t id, uint64_t off, uint64_t len, void *ud, void *sud) {
    (void)q;
    (void)off;
    (void)sud;
    h3_conn *hc = ud;
    if (hc->h && nghttp3_conn_add_ack_offset(hc->h, id, len) != 0)
        return NGTCP2_ERR_CALLBACK_FAILURE;
    return 0;
}

static int stream_close_cb(ngtcp2_conn *q, uint32_t flags, int64_t id, uint64_t code, void *ud,
                           void *sud) {
    (void)sud;
    h3_conn *hc = ud;
    /* The stream's packets declared lost, while ngtcp2 still has it. */
    hc->ep->st.stream_packets_lost += ngtcp2_conn_get_stream_loss_count(q, id);
    if (!(flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET))
        code = NGHTTP3_H3_NO_ERROR;
    if (!hc->h)
        return 0;
    int rc = nghttp3_conn_close_stream(hc->h, id, code);
    if (rc == NGHTTP3_ERR_STREAM_NOT_FOUND) {
        if (ngtcp2_is_bidi_stream(id))
            ngtcp2_conn_extend_max_streams_bidi(q, 1);
    } else if (rc != 0) {
        ngtcp2_connection_close_error_set_application_error(
            &hc->err, nghttp3_err_infer_quic_app_error_code(rc), NULL, 0);
        return NGTCP2_ERR_CALLBACK_FAILURE;
    }
    return 0;
}

/* The client reset its side, or asked us to stop sending: nghttp3 stops
 * reading the stream (and answers STOP_SENDING / resets as RFC 9114 4.1.2). */
static int stream_reset_cb(ngtcp2_conn *q, int64_t id, uint64_t size, uint64_t code, void *ud,
                           void *sud) {
    (void)q;
    (void)size;
    (void)code;
    (void)sud;
    h3_conn *hc = ud;
    if (hc->h && nghttp3_conn_shutdown_stream_read(hc->h, id) != 0)
        return NGTCP2_ERR_CALLBACK_FAILURE;
    h3_request_cancelled(hc, id);
    return 0;
}

static int stop_sending_cb(ngtcp2_conn *q, int64_t id, uint64_t code, void *ud, void *sud) {
    return stream_reset_cb(q, id, 0, code, ud, sud);
}

static int extend_bidi_cb(ngtcp2_conn *q, uint64_t max, void *ud) {
    (void)q;
    h3_conn *hc = ud;
    if (hc->h)
        nghttp3_conn_set_max_client_streams_bidi(hc->h, max);
    return 0;
}

static int extend_stream_data_cb(ngtcp2_conn *q, int64_t id, uint64_t max, void *ud, void *sud) {
    (void)q;
    (void)max;
    (void)sud;
    h3_conn *hc = ud;
    if (hc->h && nghttp3_conn_unblock_stream(hc->h, id) != 0)
        return NGTCP2_ERR_CALLBACK_FAILURE;
    return 0;
}

static const ngtcp2_callbacks CALLBACKS = {
    .recv_client_initial = ngtcp2_crypto_recv_client_initial_cb,
    .recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb,
    .handshake_completed = handshake_completed_cb,
    .encrypt = ngtcp2_crypto_encrypt_cb,
    .decrypt = ngtcp2_crypto_decrypt_cb,
    .hp_mask = ngtcp2_crypto_hp_mask_cb,
    .recv_stream_data = recv_stream_data_cb,
    .acked_stream_data_offset = acked_cb,
    .stream_close = stream_close_cb,
    .rand = rand_cb,
    .get_new_connection_id = new_cid_cb,
    .remove_connection_id = remove_cid_cb,
    .update_key = ngtcp2_crypto_update_key_cb,
    .stream_reset = stream_reset_cb,
    .extend_max_remote_streams_bidi = extend_bidi_cb,
    .extend_max_stream_data = extend_stream_data_cb,
    .delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb,
    .delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb,
    .get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb,
    .stream_stop_sending = stop_sending_cb,
    .version_negotiation = ngtcp2_crypto_version_negotiation_cb,
    .recv_rx_key = recv_rx_key_cb,
    .recv_tx_key = recv_tx_key_cb,
};

/* ---- a new connection ---------------------------------------------------------- */

static int tls_new(h3_conn *hc) {
    sws_h3_endpoint *ep = hc->ep;
    /* Without early_data no ticket offers 0-RTT and none is accepted (a
     * replayed request would be answered twice); the ticket goes at
     * handshake end. */
    unsigned flags = GNUTLS_SERVER | GNUTLS_NO_AUTO_SEND_TICKET | GNUTLS_NO_END_OF_EARLY_DATA;
    if (ep->p.early_data && ep->ar)
        flags |= GNUTLS_ENABLE_EARLY_DATA;
    if (gnutls_init(&hc->tls, flags) != 0) {
        hc->tls = NULL;
        return -ENOMEM;
    }
    hc->ref.get_conn = get_conn;
    hc->ref.user_data = hc;
    gnutls_session_set_ptr(hc->tls, &hc->ref);
    gnutls_datum_t alpn = {(unsigned char *)ALPN_H3, sizeof(ALPN_H3) - 1};
    if (gnutls_priority_set_direct(hc->tls, TLS_PRIORITY, NULL) != 0 ||
        gnutls_session_ticket_enable_server(hc->tls, &ep->ticket_key) != 0 ||
        ngtcp2_crypto_gnutls_configure_server_session(hc->tls) != 0 ||
        h3_cred_attach(hc->cred, hc->tls) < 0 || h3_early_session(hc) < 0 ||
        gnutls_alpn_set_protocols(hc->tls, &alpn, 1,
                                  GNUTLS_ALPN_MANDATORY | GNUTLS_ALPN_SERVER_PRECEDENCE) != 0)
        return -EINVAL;
    return 0;
}

static void addr_copy(struct sockaddr_storage *to, socklen_t *to_len, const ngtcp2_addr *a) {
    socklen_t n = a->addrlen <= sizeof(*to) ? (socklen_t)a->addrlen : (socklen_t)sizeof(*to);
    memcpy(to, a->addr, n);
    *to_len = n;
}

h3_conn *h3_conn_new(sws_h3_endpoint *ep, const ngtcp2_pkt_hd *hd, const ngtcp2_path *path,
                     uint64_t now) {
    h3_conn *hc = ep->nfree_slots ? calloc(1, sizeof(*hc)) : NULL;
    if (!hc)
        return NULL;
    hc->ep = ep;
    hc->cred = ep->cred;
    hc->cred->refs++;
    hc->id = ++ep->next_conn_id;
    hc->recovery_seen = UINT64_MAX;
    addr_copy(&hc->local, &hc->local_len, &path->local);
    addr_copy(&hc->remote, &hc->remote_len, &path->remote);
    ngtcp2_connection_close_error_default(&hc->err);
    ngtcp2_cid scid;
    scid.datalen = SWS_H3_CID_LEN;
    h3_make_cid(ep, scid.data);

    ngtcp2_settings settings;
    ngtcp2_settings_default(&settings);
    settings.initial_ts = now;
    ngtcp2_transport_params params;
    ngtcp2_transport_params_default(&params);
    params.initial_max_stream_data_bidi_remote = ep->p.stream_window;
    params.initial_max_stream_data_uni = ep->p.stream_window;
    params.initial_max_data = ep->p.conn_window;
    params.initial_max_streams_bidi = ep->p.max_streams_bidi;
    params.initial_max_streams_uni = 3; /* control and the two QPACK streams */
    params.max_idle_timeout = ep->p.idle_timeout_ms * NGTCP2_MILLISECONDS;
    params.active_connection_id_limit = 7;
    params.original_dcid = hd->dcid;
    params.stateless_reset_token_present = 1;
    if (ngtcp2_crypto_generate_stateless_reset_token(params.stateless_reset_token, ep->reset_secret,
                                                     sizeof(ep->reset_secret), &scid) != 0)
        goto bad;
    ngtcp2_path p = {{(struct sockaddr *)&hc->local, hc->local_len},
                     {(struct sockaddr *)&hc->remote, hc->remote_len},
                     NULL};
    if (ngtcp2_conn_server_new(&hc->q, &hd->scid, &scid, &p, hd->version, &CALLBACKS, &settings,
                               &params, NULL, hc) != 0) {
        hc->q = NULL;
        goto bad;
    }
    if (tls_new(hc) < 0)
        goto bad;
    ngtcp2_conn_set_tls_native_handle(hc->q, hc->tls);
    if (h3_cid_add(ep, scid.data, scid.datalen, hc) < 0)
        goto bad;
    hc->odcid = hd->dcid;
    if (h3_cid_add(ep, hd->dcid.data, hd->dcid.datalen, hc) < 0) {
        hc->odcid.datalen = 0;
        h3_cid_del(ep, scid.data, scid.datalen);
        goto bad;
    }
    hc->next = ep->conns;
    if (ep->conns)
        ep->conns->prev = hc;
    ep->conns = hc;
    ep->st.connections++;
    ep->st.open_connections++;
    hc->slot = ep->free_slots[--ep->nfree_slots];
    /* What this connection promised, whatever a later SIGHUP tunes. */
    hc->stream_window = ep->p.stream_window;
    hc->idle_timeout_ms = ep->p.idle_timeout_ms;
    return hc;
bad:
    if (hc->tls)
        gnutls_deinit(hc->tls);
    if (hc->q)
        ngtcp2_conn_del(hc->q);
    h3_cred_unref(hc->cred);
    h3_ar_unref(hc->ar);
    free(hc);
    return NULL;
}

/* The client is done with the connection (our CONNECTION_CLOSE, or its):
 * it counts no more against its address, closing period or not. */
static void peer_gone(h3_conn *hc) {
    if (!hc->peer_told)
        return;
    hc->peer_told = false;
    hc->ep->s.peer(hc->ep->s.route_ud, hc->slot, NULL, 0);
}

void h3_conn_free(h3_conn *hc) {
    sws_h3_endpoint *ep = hc->ep;
    /* Streams the connection ended under (a client that closed before our
     * last packets were acknowledged): their losses are counted now. */
    for (h3_stream *st = hc->streams; st && hc->q; st = st->next)
        ep->st.stream_packets_lost += ngtcp2_conn_get_stream_loss_count(hc->q, st->id);
    while (hc->streams)
        h3_stream_free(hc, hc->streams);
    if (hc->q) {
        size_t n = ngtcp2_conn_get_num_scid(hc->q);
        ngtcp2_cid *scids = n ? calloc(n, sizeof(*scids)) : NULL;
        if (scids) {
            ngtcp2_conn_get_scid(hc->q, scids);
            for (size_t i = 0; i < n; i++)
                h3_cid_del(ep, scids[i].data, scids[i].datalen);
            free(scids);
        }
    }
    if (hc->odcid.datalen)
        h3_cid_del(ep, hc->odcid.data, hc->odcid.datalen);
    /* A CID still pointing here (the table outliving what ngtcp2 lists,
     * out of memory above) would be a dangling conn: sweep the table. */
    for (uint32_t i = 0; i < ep->nbuckets; i++)
        for (h3_cid_entry **p = &ep->buckets[i]; *p;) {
            if ((*p)->hc == hc) {
                h3_cid_entry *e = *p;
                *p = e->next;
                free(e);
                ep->ncids--;
            } else {
                p = &(*p)->next;
            }
        }
    if (hc->h)
        nghttp3_conn_del(hc->h);
    if (hc->q)
        ngtcp2_conn_del(hc->q);
    if (hc->tls)
        gnutls_deinit(hc->tls);
    h3_cred_unref(hc->cred);
    h3_ar_unref(hc->ar);
    free(hc->close_pkt);
    if (hc->prev)
        hc->prev->next = hc->next;
    else
        ep->conns = hc->next;
    if (hc->next)
        hc->next->prev = hc->prev;
    ep->st.open_connections--;
    peer_gone(hc);
    ep->free_slots[ep->nfree_slots++] = hc->slot;
    free(hc);
}

/* ---- the end --------------------------------------------------------------------- */

/* Our CONNECTION_CLOSE with hc->err, kept for the closing period. */
static void close_now(h3_conn *hc, uint64_t now) {
    if (hc->closing || hc->draining || hc->dead)
        return;
    peer_gone(hc);
    if (ngtcp2_conn_is_in_closing_period(hc->q) || ngtcp2_conn_is_in_draining_period(hc->q)) {
        hc->dead = true;
        return;
    }
    ngtcp2_path_storage ps;
    ngtcp2_path_storage_zero(&ps);
    ngtcp2_pkt_info pi;
    sws_h3_endpoint *ep = hc->ep;
    ngtcp2_ssize n = ngtcp2_conn_write_connection_close(hc->q, &ps.path, &pi, ep->tx,
                                                        sizeof(ep->tx), &hc->err, now);
    if (n <= 0 || !(hc->close_pkt = malloc((size_t)n))) {
        hc->dead = true;
        return;
    }
    memcpy(hc->close_pkt, ep->tx, (size_t)n);
    hc->close_len = (size_t)n;
    hc->closing = true;
    closing_until(hc, now);
    h3_send(ep, &ps.path, pi.ecn, hc->close_pkt, hc->close_len);
}

void h3_conn_close_app(h3_conn *hc, uint64_t code, uint64_t now) {
    ngtcp2_connection_close_error_set_application_error(&hc->err, code, NULL, 0);
    close_now(hc, now);
}

/* An error of ngtcp2's (rc) ends the connection as RFC 9000 10 says. */
static void conn_error(h3_conn *hc, int rc, uint64_t now) {
    switch (rc) {
    case NGTCP2_ERR_DRAINING: /* the peer closed: stay silent, then go */
        peer_gone(hc);
        hc->draining = true;
        closing_until(hc, now);
        return;
    case NGTCP2_ERR_DROP_CONN:
    case NGTCP2_ERR_IDLE_CLOSE:
    case NGTCP2_ERR_HANDSHAKE_TIMEOUT:
        hc->dead = true;
        return;
    case NGTCP2_ERR_CRYPTO:
        if (!hc->err.error_code)
            ngtcp2_connection_close_error_set_transport_error_tls_alert(
                &hc->err, ngtcp2_conn_get_tls_alert(hc->q), NULL, 0);
        break;
    default:
        if (!hc->err.error_code)
            ngtcp2_connection_close_error_set_transport_error_liberr(&hc->err, rc, NULL, 0);
        break;
    }
    close_now(hc, now);
}

/* ---- packets in and out --------------------------------------------------------- */

void h3_conn_read(h3_conn *hc, const ngtcp2_path *path, unsigned ecn, const uint8_t *data,
                  size_t len, uint64_t now) {
    if (hc->dead || hc->draining)
        return;
    if (hc->closing) {
        /* Answered again, less and less often (1, 2, 4, ... packets):
         * the peer has not seen our CONNECTION_CLOSE. */
        hc->close_count++;
        if ((hc->close_count & (hc->close_count - 1)) == 0 && hc->resends < H3_CLOSE_RESENDS) {
            hc->resends++;
            h3_send(hc->ep, path, 0, hc->close_pkt, hc->close_len);
        }
        return;
    }
    ngtcp2_pkt_info pi = {.ecn = (uint8_t)ecn};
    int rc = ngtcp2_conn_read_pkt(hc->q, path, &pi, data, len, now);
    if (rc != 0) {
        conn_error(hc, rc, now);
        /* The peer closed: its streams are over, and their entries go back
         * to the endpoint's table now (streams_per_loop), not after the
         * draining period. No scenario is on the stack here. */
        while (hc->draining && hc->streams)
            h3_stream_free(hc, hc->streams);
        return;
    }
    count_recovery(hc);
    h3_session_more(hc);
    h3_conn_write(hc, now);
}

/* A stream whose FIN nghttp3 offered alone while ngtcp2 could write nothing
 * (pacing, the congestion window): nghttp3 0.8 unschedules such a stream at
 * once, expecting the FIN written, and would never offer it again; it is
 * written here, outside nghttp3, and nghttp3 told of it after. */
static int fin_flush(h3_conn *hc, ngtcp2_path_storage *ps, uint64_t now) {
    int sent = 0;
    for (h3_stream *st = hc->streams; st && hc->fin_due && sent < H3_BURST;) {
        if (!st->fin_due) {
            st = st->next;
            continue;
        }
        ngtcp2_pkt_info pi;
        ngtcp2_ssize ndata = -1;
        ngtcp2_ssize n =
            ngtcp2_conn_writev_stream(hc->q, &ps->path, &pi, hc->ep->tx, sizeof(hc->ep->tx), &ndata,
                                      NGTCP2_WRITE_STREAM_FLAG_FIN, st->id, NULL, 0, now);
        if (n == 0)
            return sent; /* still nothing can go: the next write tries again */
        if (n < 0 || ndata >= 0) {
            /* Written (nghttp3 is told), or the stream was reset meanwhile. */
            st->fin_due = false;
            hc->fin_due--;
            if (n > 0 && hc->h)
                nghttp3_conn_add_write_offset(hc->h, st->id, 0);
        }
        if (n > 0) {
            /* A packet of other frames first (retransmissions) keeps the
             * FIN due: the same stream again. */
            h3_send(hc->ep, &ps->path, pi.ecn, hc->ep->tx, (size_t)n);
            sent++;
        }
        if (!st->fin_due)
            st = st->next;
    }
    return sent;
}

static void fin_due(h3_conn *hc, int64_t sid) {
    for (h3_stream *st = hc->streams; st; st = st->next)
        if (st->id == sid && !st->fin_due) {
            st->fin_due = true;
            hc->fin_due++;
        }
}

/* Every ack-eliciting packet the connection sent was acknowledged. */
static bool nothing_in_flight(h3_conn *hc) {
    ngtcp2_conn_stat cs;
    ngtcp2_conn_get_conn_stat(hc->q, &cs);
    return cs.bytes_in_flight == 0;
}

void h3_conn_write(h3_conn *hc, uint64_t now) {
    if (hc->dead || hc->closing || hc->draining)
        return;
    sws_h3_endpoint *ep = hc->ep;
    ngtcp2_path_storage ps;
    ngtcp2_path_storage_zero(&ps);
    bool flushed = false; /* nghttp3 had nothing left to write (a GOAWAY included) */
    for (int sent = hc->fin_due ? fin_flush(hc, &ps, now) : 0; sent < H3_BURST;) {
        int64_t sid = -1;
        int fin = 0;
        nghttp3_vec vec[16];
        nghttp3_ssize nvec = 0;
        bool asked = hc->h && ngtcp2_conn_get_max_data_left(hc->q);
        if (asked) {
            nvec = nghttp3_conn_writev_stream(hc->h, &sid, &fin, vec, 16);
            if (nvec < 0) {
                h3_conn_close_app(hc, nghttp3_err_infer_quic_app_error_code((int)nvec), now);
                return;
            }
        }
        ngtcp2_ssize ndata = -1;
        ngtcp2_pkt_info pi;
        uint32_t flags = NGTCP2_WRITE_STREAM_FLAG_MORE | (fin ? NGTCP2_WRITE_STREAM_FLAG_FIN : 0);
        ngtcp2_ssize n =
            ngtcp2_conn_writev_stream(hc->q, &ps.path, &pi, ep->tx, sizeof(ep->tx), &ndata, flags,
                                      sid, (const ngtcp2_vec *)vec, (size_t)nvec, now);
        if (n < 0) {
            if (n == NGTCP2_ERR_STREAM_DATA_BLOCKED) {
                nghttp3_conn_block_stream(hc->h, sid);
                continue;
            }
            if (n == NGTCP2_ERR_STREAM_SHUT_WR) {
                nghttp3_conn_shutdown_stream_write(hc->h, sid);
                continue;
            }
            if (n == NGTCP2_ERR_WRITE_MORE) {
                int rc = nghttp3_conn_add_write_offset(hc->h, sid, (size_t)ndata);
                if (rc != 0) {
                    h3_conn_close_app(hc, nghttp3_err_infer_quic_app_error_code(rc), now);
                    return;
                }
                continue;
            }
            conn_error(hc, (int)n, now);
            return;
        }
        if (ndata >= 0 && hc->h) {
            int rc = nghttp3_conn_add_write_offset(hc->h, sid, (size_t)ndata);
            if (rc != 0) {
                h3_conn_close_app(hc, nghttp3_err_infer_quic_app_error_code(rc), now);
                return;
            }
        }
        /* A FIN alone that did not go: fin_flush's from here on. */
        bool lone_fin = sid >= 0 && fin && nvec == 0 && ndata < 0;
        if (lone_fin)
            fin_due(hc, sid);
        if (n == 0) {
            flushed = asked && sid < 0;
            break; /* nothing more, or the congestion window is full */
        }
        h3_send(ep, &ps.path, pi.ecn, ep->tx, (size_t)n);
        sent++;
        if (lone_fin)
            sent += fin_flush(hc, &ps, now);
    }
    /* The pacer's next slot (a burst cut short resumes at the expiry). */
    ngtcp2_conn_update_pkt_tx_time(hc->q, now);
    /* Draining: a connection whose streams are all done closes itself once
     * its GOAWAY is out and acknowledged, with everything else it sent. Not
     * before: pacing or the congestion window may have kept the GOAWAY
     * back, or it was lost, and a client that gets the close without it
     * must take its requests in flight as maybe processed (RFC 9114 5.2). */
    if (hc->goaway && hc->nstreams == 0 && flushed && nothing_in_flight(hc))
        h3_conn_close_app(hc, NGHTTP3_H3_NO_ERROR, now);
}

uint64_t h3_conn_expiry(h3_conn *hc) {
    if (hc->dead)
        return 0;
    if (hc->closing || hc->draining)
        return hc->close_at;
    uint64_t t = ngtcp2_conn_get_expiry(hc->q);
    return hc->probe_held && t < hc->probe_at ? hc->probe_at : t;
}

/* ngtcp2 0.12 fires a probe timeout (PTO) whose probe the pacer may then
 * hold back: while the pacer's next slot is ahead, writes carry ACKs only.
 * The loss detection timer is computed from the last ack-eliciting packet
 * sent, so when that is old (the application space at the end of a lossy
 * handshake, whose 0.5-RTT packets left a second before; a loop that ran
 * late) the timer is still due after the PTO, and each
 * ngtcp2_conn_handle_expiry fires it again, doubling the backoff with no
 * probe sent: ten PTOs in one turn were seen, the next probe 2^10 PTOs
 * away, past the idle timeout, so a tail loss then stalled the connection
 * until it idled out. Once a PTO's probe is held (the timer still due after
 * the write), the timer only writes, every millisecond (the pacer's
 * granularity), until the probe goes out (ngtcp2 keeps it owed) or one
 * initial RTT has passed. */
static void probe_check(h3_conn *hc, size_t pto_before, uint64_t now) {
    ngtcp2_conn_stat cs;
    ngtcp2_conn_get_conn_stat(hc->q, &cs);
    bool due = cs.loss_detection_timer <= now;
    if (!hc->probe_held && due && cs.pto_count > pto_before) {
        hc->probe_held = true;
        hc->probe_until = now + NGTCP2_DEFAULT_INITIAL_RTT;
    } else if (hc->probe_held && (!due || now >= hc->probe_until)) {
        hc->probe_held = false;
    }
    hc->probe_at = now + NGTCP2_MILLISECONDS;
}

void h3_conn_timer(h3_conn *hc, uint64_t now) {
    if (hc->closing || hc->draining) {
        if (now >= hc->close_at)
            hc->dead = true;
        return;
    }
    if (hc->probe_held && now < hc->probe_until) {
        h3_conn_write(hc, now);
        if (!hc->dead && !hc->closing && !hc->draining)
            probe_check(hc, hc->pto_seen, now);
        return;
    }
    hc->probe_held = false;
    int rc = ngtcp2_conn_handle_expiry(hc->q, now);
    if (rc != 0) {
        conn_error(hc, rc, now);
        return;
    }
    size_t pto_before = hc->pto_seen;
    count_recovery(hc);
    h3_conn_write(hc, now);
    if (!hc->dead && !hc->closing && !hc->draining)
        probe_check(hc, pto_before, now);
}

void h3_conn_kick(h3_conn *hc) {
    if (hc->ep->depth)
        return; /* the engine's own call writes before it returns */
    hc->ep->depth++;
    uint64_t now = sws_h3_now();
    h3_session_more(hc);
    h3_conn_write(hc, now);
    hc->ep->depth--;
    /* A connection that ended here is freed by the endpoint's next call
     * (its expiry is now): the scenario that called may still hold x. */
}
