/* The quic listener's host on each loop (quic_host.h): turnloop's UDP
 * socket of the loop on one side, the loop's HTTP/3 endpoint (http3.h) on
 * the other. Datagrams go in as they come (a misrouted one forwarded to
 * the loop its connection ID names), out through the loop's send arena
 * (quic_send.c: tl_udp_send keeps the caller's bytes until it completes;
 * bursts coalesced for GSO), and one loop timer follows the endpoint's next
 * expiry. */
#include "quic_host.h"

#include "gate.h"
#include "http3.h"
#include "quic_gro.h"
#include "quic_handover.h"
#include "quic_send.h"
#include "route.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct sws_quic sws_quic;

struct sws_quic {
    sws_worker *w;
    sws_h3_endpoint *ep;
    tl_handle udp;
    int li;
    bool closing;    /* the socket's close was asked: no more sends or receives */
    bool recv_armed; /* the multishot receive is under way (recv_op) */
    tl_op recv_op;
    tl_sockaddr bound;   /* the socket's address: the source when pktinfo says none */
    socklen_t bound_len; /* 0: unknown (no source given) */
    uint32_t xid_base;   /* the endpoint's exchange ids start here (sws_quic_reserve) */
    sws_quic_tx *tx;     /* datagrams out */
    /* The one timer: armed for timer_at (ns); a completion whose token's
     * index is not timer_gen is a cancelled one's. */
    bool timer_armed;
    uint64_t timer_at;
    uint32_t timer_gen;
    tl_op timer_op;
    /* The gate's entries of the endpoint's connections start here
     * (w->npeers): a QUIC connection is a client connection as a TCP one. */
    uint32_t peer_base;
    uint64_t forwarded;
    uint64_t relayed;                     /* to the predecessor of a SIGUSR2 (quic_handover.c) */
    uint64_t gro_receives, gro_datagrams; /* payloads of several datagrams, and those */
    sws_quic_counters ctr;
};

/* ---- the endpoint's hooks ---------------------------------------------------------- */

static int send_dgram(void *ud, const struct sockaddr *local, socklen_t local_len,
                      const struct sockaddr *remote, socklen_t remote_len, unsigned ecn,
                      const uint8_t *data, size_t len) {
    struct sws_quic *q = ud;
    if (q->closing)
        return -EAGAIN;
    if (len > SWS_H3_MAX_DATAGRAM)
        return -EMSGSIZE;
    return sws_quic_tx_send(q->tx, local_len ? local : NULL, local_len, remote, remote_len, ecn,
                            data, len);
}

/* The route's instance as HTTP/2's streams get it (by :authority and path,
 * among the routes that serve this listener), through the gate as any
 * request: the client is its QUIC connection's peer. */
static sws_scenario *route(void *ud, sws_exchange *x, const sws_http_request *req) {
    struct sws_quic *q = ud;
    sws_scenario *sc = sws_route_of(q->w, (unsigned)q->li, req);
    return sws_gate_pick(q->w, sc, x, q->peer_base + sws_h3_conn_slot(x), req);
}

/* A QUIC connection counts for limit_conn as a TCP one, from its handshake
 * to its end, for the address it opened from; its entry is cleared at its
 * end whatever the gate learnt of it. */
static void peer(void *ud, uint32_t slot, const struct sockaddr *addr, socklen_t len) {
    (void)len;
    struct sws_quic *q = ud;
    sws_worker *w = q->w;
    if (!w->gate_sc)
        return;
    if (!addr)
        sws_gate_conn_close(w, q->peer_base + slot);
    else if (w->gate_conn)
        sws_gate_conn_addr(w, q->peer_base + slot, addr);
}

/* ---- start ----------------------------------------------------------------------- */

int sws_quic_reserve(sws_worker *w) {
    struct sws_quic *q = calloc(1, sizeof(*q));
    if (!q || !(q->tx = sws_quic_tx_new())) {
        free(q);
        return -ENOMEM;
    }
    q->w = w;
    /* Exchange ids past the TCP connections' and HTTP/2's, so that the
     * scenarios' per-exchange tables (static's, the proxy's, the gate's)
     * cover them; the gate's peer entries likewise. */
    q->xid_base = w->nexchanges;
    w->nexchanges += w->cfg->h3.streams_per_loop;
    q->peer_base = w->nslots;
    w->npeers = w->nslots + w->cfg->h3.max_connections;
    w->quic = q;
    return 0;
}

static void arm_recv(struct sws_quic *q) {
    if (q->closing || q->recv_armed)
        return;
    int rc = tl_udp_recv(q->w->loop, q->udp, sws_token(0, SWS_T_UDP_RECV), &q->recv_op);
    q->recv_armed = rc == 0;
    if (rc < 0)
        fprintf(stderr, "scalwsd: loop %d: cannot receive on the quic socket: %s\n", q->w->index,
                tl_strerror(rc));
}

/* Alt-Svc (RFC 7838) for the tls listeners' answers: the port the quic
 * socket bound (the same host: a client keeps the authority it asked). */
static void advertise(sws_server *s) {
    const sws_quic *q0 = s->workers[0].quic;
    if (!s->cfg->alt_svc || !q0->bound_len)
        return;
    unsigned port =
        ntohs(q0->bound.sa.sa_family == AF_INET6 ? q0->bound.in6.sin6_port : q0->bound.in.sin_port);
    for (int i = 0; i < s->nloops; i++) {
        sws_worker *w = &s->workers[i];
        int n = snprintf(w->alt_svc, sizeof(w->alt_svc), "h3=\":%u\"; ma=86400", port);
        w->alt_svc_len = (uint8_t)n;
    }
}

/* ---- [http3] and the certificates, at start and on SIGHUP -------------------------- */

static void params_of(const sws_config *cfg, sws_h3_params *p) {
    const sws_h3_config *h = &cfg->h3;
    *p = (sws_h3_params){.max_streams_bidi = h->max_concurrent_streams,
                         .stream_window = h->stream_window,
                         .conn_window = h->connection_window,
                         .qpack_table = h->qpack_table,
                         .qpack_blocked = h->qpack_blocked,
                         .idle_timeout_ms = h->idle_timeout_ms,
                         .max_connections = h->max_connections,
                         .early_data = h->early_data,
                         .early_window_ms = h->early_data_window_ms};
}

/* [tls]'s pair and the [tls NAME] sections, as the TCP side serves them
 * by SNI; the caller frees *out. Their count, or -ENOMEM. */
static int certs_of(const sws_config *cfg, sws_h3_cert **out) {
    const sws_tls_certs *l = cfg->tls_certs;
    int n = l ? l->n : 0;
    *out = calloc(n ? (size_t)n : 1, sizeof(**out));
    if (!*out)
        return -ENOMEM;
    if (n == 0) { /* not settled into tls_certs: [tls]'s own pair */
        (*out)[0] = (sws_h3_cert){.cert_file = cfg->tls.cert,
                                  .key_file = cfg->tls.key,
                                  .ocsp_file = cfg->tls.ocsp,
                                  .optional = cfg->tls_from_acme};
        return 1;
    }
    /* ACME's pairs may not be there yet: served once they are (a reload). */
    for (int i = 0; i < n; i++) {
        const sws_tls_cert_config *cc = &l->c[i];
        (*out)[i] = (sws_h3_cert){.cert_file = cc->cert,
                                  .key_file = cc->key,
                                  .ocsp_file = cc->ocsp,
                                  .is_default = cc->is_default,
                                  .optional = cc->name[0] ? sws_acme_is_order_cert(cfg, cc->name)
                                                          : cfg->tls_from_acme};
    }
    return n;
}

/* SO_REUSEPORT would let a second scalwsd of the same user join a UDP port
 * in use, and the datagrams be shared between them: a plain bind tells a
 * busy port first. Not after a SIGUSR2 (inherited sockets), whose old
 * process still holds the port while it drains: the two share it then. */
static int probe_busy(const sws_server *s, const sws_addr *addr) {
    if (s->ninherited)
        return 0;
    int fd = socket(addr->ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1, rc = 0;
    if (addr->ss.ss_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    if (bind(fd, (const struct sockaddr *)&addr->ss, addr->len) < 0)
        rc = -errno;
    close(fd);
    return rc;
}

/* Whether an inherited socket is on the listener's address (its port, or
 * any where the listener asks for port 0). */
static bool inherited_fits(const sws_addr *want, int fd) {
    tl_sockaddr got;
    socklen_t gl = sizeof(got);
    if (getsockname(fd, &got.sa, &gl) < 0 || got.sa.sa_family != want->ss.ss_family)
        return false;
    const tl_sockaddr *w = (const tl_sockaddr *)&want->ss;
    if (got.sa.sa_family == AF_INET)
        return got.in.sin_addr.s_addr == w->in.sin_addr.s_addr &&
               (w->in.sin_port == 0 || w->in.sin_port == got.in.sin_port);
    return memcmp(&got.in6.sin6_addr, &w->in6.sin6_addr, sizeof(got.in6.sin6_addr)) == 0 &&
           (w->in6.sin6_port == 0 || w->in6.sin6_port == got.in6.sin6_port);
}

/* The loops' sockets: a SIGUSR2's predecessor's, as they are (quic_handover.h),
 * or new ones. */
static int open_sockets(sws_server *s, const sws_listener_cfg *lc, tl_handle *hs, int *steer_err) {
    const int *fds;
    int n = sws_quic_handover_sockets(s, &fds);
    if (n > s->nloops) /* the shared model: one loop */
        return -EXDEV;
    if (n > 0 && inherited_fits(&lc->addr, fds[0])) {
        bool steered = sws_quic_handover_steered(s);
        int rc = tl_route_udp_cid_adopt(s->loops, s->nloops, fds, n, NULL, hs, steer_err);
        sws_quic_handover_sockets_taken(s);
        if (rc == 0 && n == s->nloops)
            *steer_err = steered ? 0 : -EOPNOTSUPP; /* the group's program is as it was */
        return rc;
    }
    if (n > 0) {
        fprintf(stderr, "scalwsd: quic: the old process's sockets are not on %s: bound anew\n",
                lc->addr.text);
        sws_quic_handover_drop_sockets(s);
    }
    int rc = probe_busy(s, &lc->addr);
    if (rc == 0)
        rc = tl_route_udp_cid(s->loops, s->nloops, (const struct sockaddr *)&lc->addr.ss,
                              lc->addr.len, NULL, hs, steer_err);
    return rc;
}

/* [http3] gro on every loop's socket, or off (an inherited socket may have
 * it from a predecessor that had it on). Without it, or on a kernel
 * without UDP_GRO (said at start), one receive per datagram, as before. */
static void set_gro(sws_server *s, const sws_listener_cfg *lc, const tl_handle *hs) {
    bool on = s->cfg->h3.gro;
    for (int i = 0; i < s->nloops; i++) {
        int rc = tl_udp_gro(s->loops[i], hs[i], on);
        if (rc == -EOPNOTSUPP && i == 0)
            fprintf(stderr,
                    "scalwsd: quic on %s: the kernel has no UDP GRO: one receive per datagram\n",
                    lc->addr.text);
        else if (rc < 0 && rc != -EOPNOTSUPP)
            fprintf(stderr, "scalwsd: quic on %s: loop %d: GRO stays %s: %s\n", lc->addr.text, i,
                    on ? "off" : "on", tl_strerror(rc));
    }
}

int sws_quic_start(sws_server *s, int li, char *err, size_t errlen) {
    const sws_config *cfg = s->cfg;
    const sws_listener_cfg *lc = &cfg->listeners[li];
    tl_handle hs[s->nloops];
    int steer_err = 0;
    int rc = open_sockets(s, lc, hs, &steer_err);
    if (rc < 0) {
        snprintf(err, errlen, "%s: cannot listen on %s (quic): %s", lc->origin, lc->addr.text,
                 rc == -EADDRINUSE ? "address already in use"
                 : rc == -EXDEV    ? "the old process's sockets are one per loop, and this one "
                                     "has fewer loops (event_loops = 0?)"
                                   : tl_strerror(rc));
        return rc;
    }
    if (steer_err)
        fprintf(stderr,
                "scalwsd: quic on %s: the kernel refused the connection-ID steering program "
                "(%s): datagrams that reach another loop are forwarded to theirs\n",
                lc->addr.text, tl_strerror(steer_err));
    s->quic_steered = steer_err == 0;
    bool gso = cfg->h3.gso && (tl_loop_features(s->loops[0]) & TL_FEATURE_UDP_GSO);
    if (cfg->h3.gso && !gso)
        fprintf(stderr, "scalwsd: quic on %s: the kernel has no UDP GSO: one send per datagram\n",
                lc->addr.text);
    set_gro(s, lc, hs);
    sws_h3_params params;
    params_of(cfg, &params);
    sws_h3_cert *certs;
    int ncerts = certs_of(cfg, &certs);
    /* One replay memory for every loop: a replayed 0-RTT may reach any. */
    sws_h3_replay *replay = sws_h3_replay_new();
    if (ncerts < 0 || !replay) {
        if (ncerts >= 0)
            free(certs);
        sws_h3_replay_unref(replay);
        snprintf(err, errlen, "%s: quic: out of memory", lc->origin);
        return -ENOMEM;
    }
    int fds[s->nloops];
    for (int i = 0; i < s->nloops; i++)
        fds[i] = tl_handle_fd(s->loops[i], hs[i]);
    if ((rc = sws_quic_handover_start(s, fds, err, errlen)) < 0) {
        free(certs);
        sws_h3_replay_unref(replay);
        return rc;
    }
    for (int i = 0; i < s->nloops; i++) {
        sws_worker *w = &s->workers[i];
        struct sws_quic *q = w->quic;
        q->udp = hs[i];
        q->li = li;
        /* GSO where asked and the kernel has it (else one send per
         * datagram, which is what turnloop would make of a GSO send). */
        sws_quic_tx_bind(q->tx, w->loop, q->udp,
                         gso && (tl_loop_features(w->loop) & TL_FEATURE_UDP_GSO));
        q->bound_len = sizeof(q->bound);
        if (getsockname(tl_handle_fd(w->loop, q->udp), &q->bound.sa, &q->bound_len) < 0)
            q->bound_len = 0;
        /* One ticket key for every loop, so that a session resumes on
         * whichever loop the client's next Initial reaches; it and each
         * loop's reset secret pass to the next process on a SIGUSR2, and
         * every CID names this process's generation (quic_handover.h). */
        sws_h3_settings st = {.certs = certs,
                              .ncerts = (uint32_t)ncerts,
                              .refuse_unknown = cfg->tls.refuse_unknown,
                              .params = &params,
                              .replay = replay,
                              .max_streams = cfg->h3.streams_per_loop,
                              .loop_index = (uint8_t)i,
                              .make_cid = sws_quic_handover_make_cid,
                              .cid_ud = w,
                              .reset_secret = sws_quic_handover_reset_secret(s, i),
                              .send = send_dgram,
                              .send_ud = q,
                              .w = w,
                              .route = route,
                              .route_ud = q,
                              .peer = peer,
                              .limits = w->limits,
                              .xid_base = q->xid_base,
                              .ticket_key = sws_quic_handover_ticket_key(s)};
        char why[256];
        rc = sws_h3_endpoint_new(&q->ep, &st, why, sizeof(why));
        if (rc < 0) {
            snprintf(err, errlen, "%s: quic: %s", lc->origin, why);
            break;
        }
        if (!sws_quic_handover_hold(w))
            arm_recv(q); /* else once the old process stops receiving */
    }
    free(certs);
    sws_h3_replay_unref(replay);
    if (rc < 0)
        return rc;
    if (sws_sockname_text(tl_handle_fd(s->loops[0], hs[0]), s->listeners[li].text,
                          sizeof(s->listeners[li].text)) < 0)
        snprintf(s->listeners[li].text, sizeof(s->listeners[li].text), "%s", lc->addr.text);
    advertise(s);
    return 0;
}

/* ---- datagrams and the timer ------------------------------------------------------- */

static void input(struct sws_quic *q, const uint8_t *data, size_t len, const tl_udp_meta *m) {
    socklen_t pl = m->peer.sa.sa_family == AF_INET6 ? sizeof(m->peer.in6) : sizeof(m->peer.in);
    const struct sockaddr *local = &q->bound.sa;
    socklen_t ll = q->bound_len;
    if (m->flags & TL_UDP_META_LOCAL) {
        local = &m->local.sa;
        ll = m->local.sa.sa_family == AF_INET6 ? sizeof(m->local.in6) : sizeof(m->local.in);
    }
    sws_h3_input(q->ep, data, len, &m->peer.sa, pl, local, ll, m->ecn, sws_h3_now());
}

/* A payload of this loop's: one datagram, or with GRO several of one flow
 * (quic_gro.h), each with the payload's path and ECN, to the engine or, if
 * its connection ID names an older process (a SIGUSR2), relayed to it one
 * datagram at a time. */
static void take_payload(struct sws_quic *q, const uint8_t *data, size_t len,
                         const tl_udp_meta *m) {
    sws_gro_cut cut;
    sws_gro_cut_init(&cut, data, len, m->segment_size);
    const uint8_t *p;
    size_t n, count = 0;
    while (sws_gro_cut_next(&cut, &p, &n)) {
        if (!sws_quic_handover_relay_up(q->w, p, n, m))
            input(q, p, n, m);
        count++;
    }
    if (count > 1) {
        q->gro_receives++;
        q->gro_datagrams += count;
    }
}

/* A datagram of this loop's socket: ours, or the loop's that its
 * connection ID names (where the kernel does not steer, or a client's
 * Initial spread by hash before it knew our CIDs... which the program and
 * tl_cid_loop_index judge alike, so only the unsteered case forwards). */
static void on_recv(struct sws_quic *q, const tl_completion *e) {
    sws_worker *w = q->w;
    if (e->flags & TL_CQE_BUFFER) {
        tl_udp_meta m;
        const uint8_t *data = e->u.buf.data;
        size_t len = e->res > 0 ? (size_t)e->res : 0;
        int to = tl_cid_loop_index(data, len, NULL, w->srv->nloops);
        if (to >= 0 && to != w->index) {
            if (tl_udp_forward(w->loop, e, w->srv->loops[to], sws_token(0, SWS_T_UDP_FWD)) == 0)
                q->forwarded++;
        } else if (tl_udp_meta_get(w->loop, e, &m) == 0 && !(m.flags & TL_UDP_META_TRUNCATED)) {
            take_payload(q, data, len, &m);
        }
        tl_buffer_release(w->loop, e->u.buf.id);
    }
    if (e->flags & TL_CQE_FINAL)
        q->recv_armed = false;
    if ((e->flags & TL_CQE_FINAL) && sws_quic_handover_handing(w)) {
        sws_quic_handover_stopped(w); /* the successor reads the socket from now on */
    } else if ((e->flags & TL_CQE_FINAL) && !q->closing) {
        if (e->res >= 0 || e->res == -ENOBUFS)
            arm_recv(q);
        else if (e->res != -ECANCELED)
            fprintf(stderr, "scalwsd: loop %d: quic socket: %s\n", w->index, tl_strerror(e->res));
    }
}

void sws_quic_dispatch(sws_worker *w, const tl_completion *e) {
    struct sws_quic *q = w->quic;
    switch (sws_token_tag(e->token)) {
    case SWS_T_UDP_RECV:
        if (q)
            on_recv(q, e);
        else if (e->flags & TL_CQE_BUFFER)
            tl_buffer_release(w->loop, e->u.buf.id);
        break;
    case SWS_T_UDP_SEND:
        if (q)
            sws_quic_tx_done(q->tx, sws_token_index(e->token));
        break;
    case SWS_T_UDP_FWD: {
        tl_udp_datagram *d = e->u.msg.ptr;
        if (q && q->ep && !q->closing)
            take_payload(q, d->data, d->len, &d->meta);
        tl_udp_datagram_free(d);
        break;
    }
    case SWS_T_QUIC_RELAY:
        if (q && q->ep)
            sws_quic_handover_dispatch(w, e);
        break;
    case SWS_T_QUIC_TIMER:
        if (q && sws_token_index(e->token) == q->timer_gen)
            q->timer_armed = false; /* sws_quic_turn_done runs the endpoint's timers */
        break;
    default:
        break;
    }
}

static void cancel_timer(struct sws_quic *q) {
    if (!q->timer_armed)
        return;
    q->timer_gen++; /* its completion, when it comes, is a stale one */
    tl_cancel(q->w->loop, q->timer_op);
    q->timer_armed = false;
}

void sws_quic_turn_done(sws_worker *w) {
    struct sws_quic *q = w->quic;
    if (!q || !q->ep || q->closing)
        return;
    uint64_t now = sws_h3_now(), at = sws_h3_next_expiry(q->ep);
    if (at <= now) {
        sws_h3_on_timer(q->ep, now);
        at = sws_h3_next_expiry(q->ep);
    }
    /* What the turn wrote goes out before the loop waits again. */
    sws_quic_tx_flush(q->tx);
    if (at == UINT64_MAX) {
        cancel_timer(q);
        return;
    }
    /* It fires first, or within its millisecond's rounding: the next
     * turn_done looks again. (Re-arming for an expiry a fraction of a
     * millisecond earlier made every turn cancel it, and the cancel's
     * completion made the next turn: the timer never fired.) */
    if (q->timer_armed && q->timer_at < at + 1000000)
        return;
    cancel_timer(q);
    uint64_t ms = at <= now ? 0 : (at - now + 999999) / 1000000;
    if (tl_timer(w->loop, ms, sws_token(q->timer_gen, SWS_T_QUIC_TIMER), &q->timer_op) == 0) {
        q->timer_armed = true;
        q->timer_at = now + ms * 1000000;
    }
}

/* ---- counters, drain, reload, end ----------------------------------------------------- */

void sws_quic_publish(sws_worker *w) {
    struct sws_quic *q = w->quic;
    if (!q || !q->ep)
        return;
    sws_h3_stats st = sws_h3_stats_of(q->ep);
    sws_quic_tx_stats tx = sws_quic_tx_stats_of(q->tx);
    sws_quic_counters *c = &q->ctr;
    atomic_store_explicit(&c->datagrams_in, st.datagrams_in, memory_order_relaxed);
    atomic_store_explicit(&c->datagrams_out, st.datagrams_out, memory_order_relaxed);
    /* The engine counts what the hook refused; a batch refused later by
     * tl_udp_send is the arena's. */
    atomic_store_explicit(&c->send_errors, st.send_errors + tx.dropped, memory_order_relaxed);
    atomic_store_explicit(&c->sends, tx.sends, memory_order_relaxed);
    atomic_store_explicit(&c->gso_batches, tx.batches, memory_order_relaxed);
    atomic_store_explicit(&c->forwarded, q->forwarded, memory_order_relaxed);
    atomic_store_explicit(&c->relayed, q->relayed, memory_order_relaxed);
    atomic_store_explicit(&c->gro_receives, q->gro_receives, memory_order_relaxed);
    atomic_store_explicit(&c->gro_datagrams, q->gro_datagrams, memory_order_relaxed);
    atomic_store_explicit(&c->connections, st.connections, memory_order_relaxed);
    atomic_store_explicit(&c->streams, st.streams, memory_order_relaxed);
    atomic_store_explicit(&c->requests, st.requests, memory_order_relaxed);
    atomic_store_explicit(&c->early_connections, st.early_connections, memory_order_relaxed);
    atomic_store_explicit(&c->too_early, st.too_early, memory_order_relaxed);
    atomic_store_explicit(&c->stateless_resets, st.stateless_resets, memory_order_relaxed);
    atomic_store_explicit(&c->open_connections, st.open_connections, memory_order_relaxed);
    atomic_store_explicit(&c->stream_packets_lost, st.stream_packets_lost, memory_order_relaxed);
    atomic_store_explicit(&c->probe_timeouts, st.probe_timeouts, memory_order_relaxed);
    atomic_store_explicit(&c->congestion_events, st.congestion_events, memory_order_relaxed);
    atomic_store_explicit(&c->bytes_in_flight, st.bytes_in_flight, memory_order_relaxed);
    atomic_store_explicit(&c->smoothed_rtt_us, st.smoothed_rtt_ns / 1000, memory_order_relaxed);
}

const sws_quic_counters *sws_quic_counters_of(const sws_worker *w) {
    return w->quic ? &w->quic->ctr : NULL;
}

void sws_quic_metrics(const sws_server *s, FILE *f) {
    if (!s->nloops || !s->workers[0].quic)
        return;
    static const struct {
        const char *name, *type, *help;
        size_t off;
        bool us; /* kept in microseconds, shown in seconds */
    } m[] = {
#define Q(n, t, h, fld) {n, t, h, offsetof(sws_quic_counters, fld), false}
        Q("scalwsd_quic_datagrams_received_total", "counter",
          "QUIC datagrams the loop's endpoint took (its own and those forwarded to it).",
          datagrams_in),
        Q("scalwsd_quic_datagrams_sent_total", "counter", "QUIC datagrams the loop sent.",
          datagrams_out),
        Q("scalwsd_quic_send_errors_total", "counter",
          "QUIC datagrams dropped at sending (recovered by QUIC as losses).", send_errors),
        Q("scalwsd_quic_sends_total", "counter",
          "UDP sends the loop made for QUIC (a GSO send carries several datagrams).", sends),
        Q("scalwsd_quic_gso_batches_total", "counter",
          "UDP GSO sends of more than one datagram ([http3] gso).", gso_batches),
        Q("scalwsd_quic_gro_receives_total", "counter",
          "UDP receives that carried several datagrams coalesced by GRO ([http3] gro).",
          gro_receives),
        Q("scalwsd_quic_gro_datagrams_total", "counter",
          "QUIC datagrams that arrived in such coalesced receives.", gro_datagrams),
        Q("scalwsd_quic_forwarded_total", "counter",
          "QUIC datagrams this loop received for another loop's connection and forwarded.",
          forwarded),
        Q("scalwsd_quic_relayed_total", "counter",
          "QUIC datagrams of an older process's connections relayed to it after a SIGUSR2.",
          relayed),
        Q("scalwsd_http3_connections_total", "counter", "QUIC connections opened.", connections),
        Q("scalwsd_http3_connections_active", "gauge", "QUIC connections open now.",
          open_connections),
        Q("scalwsd_http3_streams_total", "counter", "HTTP/3 request streams begun by clients.",
          streams),
        Q("scalwsd_http3_requests_total", "counter", "HTTP/3 requests answered.", requests),
        Q("scalwsd_quic_stream_packets_lost_total", "counter",
          "QUIC packets carrying a stream's data that ngtcp2 declared lost (their frames sent "
          "again), counted per stream as it closes: a lower bound (doc/http3.md).",
          stream_packets_lost),
        Q("scalwsd_quic_probe_timeouts_total", "counter",
          "QUIC probe timeouts that fired (no acknowledgement in time: a tail loss).",
          probe_timeouts),
        Q("scalwsd_quic_congestion_events_total", "counter",
          "QUIC congestion events: a loss or ECN-CE mark that began a recovery period.",
          congestion_events),
        Q("scalwsd_quic_in_flight_bytes", "gauge",
          "Bytes the loop's QUIC connections sent and were not yet acknowledged.", bytes_in_flight),
        {"scalwsd_quic_smoothed_rtt_seconds", "gauge",
         "The mean smoothed RTT of the loop's QUIC connections with an RTT sample (0: none).",
         offsetof(sws_quic_counters, smoothed_rtt_us), true},
        Q("scalwsd_http3_early_data_total", "counter",
          "QUIC connections whose 0-RTT early data was taken ([http3] early_data).",
          early_connections),
        Q("scalwsd_http3_too_early_total", "counter",
          "HTTP/3 requests in 0-RTT answered 425 Too Early (an unsafe method).", too_early),
        Q("scalwsd_quic_stateless_resets_total", "counter",
          "QUIC stateless resets sent: short-header packets of a connection the loop does not "
          "know.",
          stateless_resets),
#undef Q
    };
    for (size_t k = 0; k < sizeof(m) / sizeof(m[0]); k++) {
        fprintf(f, "# HELP %s %s (published once a second)\n# TYPE %s %s\n", m[k].name, m[k].help,
                m[k].name, m[k].type);
        for (int i = 0; i < s->nloops; i++) {
            const sws_ctr *c = (const sws_ctr *)((const char *)&s->workers[i].quic->ctr + m[k].off);
            uint64_t v = atomic_load_explicit(c, memory_order_relaxed);
            if (m[k].us)
                fprintf(f, "%s{loop=\"%d\"} %" PRIu64 ".%06" PRIu64 "\n", m[k].name, i, v / 1000000,
                        v % 1000000);
            else
                fprintf(f, "%s{loop=\"%d\"} %" PRIu64 "\n", m[k].name, i, v);
        }
    }
}

void sws_quic_drain(sws_worker *w) {
    if (!w->quic || !w->quic->ep)
        return;
    sws_h3_drain(w->quic->ep);
    /* The drain's timeout: what is still open (a tunnel, a proxied answer)
     * ends now, and the scenarios let go of its streams before the loop
     * asks whether they are finished. */
    if (w->forced)
        sws_h3_close_all(w->quic->ep);
}

bool sws_quic_finished(sws_worker *w) {
    struct sws_quic *q = w->quic;
    if (!q || !q->ep)
        return true;
    if (q->closing)
        return true;
    if (!w->forced && (sws_h3_stats_of(q->ep).open_connections || sws_quic_handover_relaying(w)))
        return false;
    sws_quic_tx_flush(q->tx);
    sws_quic_publish(w);
    cancel_timer(q);
    q->closing = true;
    if (tl_close(w->loop, q->udp, sws_token(0, SWS_T_UDP_CLOSE)) < 0)
        q->udp = 0;
    return true;
}

void sws_quic_reload(sws_worker *w, const sws_config *next) {
    struct sws_quic *q = w->quic;
    if (!q || !q->ep)
        return;
    sws_h3_params params;
    params_of(next, &params);
    sws_h3_endpoint_tune(q->ep, &params, &next->limits);
    char why[256];
    sws_h3_cert *certs;
    int ncerts = certs_of(next, &certs);
    if (ncerts < 0)
        snprintf(why, sizeof(why), "out of memory");
    if (ncerts < 0 || sws_h3_endpoint_reload_certs(q->ep, certs, (uint32_t)ncerts,
                                                   next->tls.refuse_unknown, why, sizeof(why)) < 0)
        fprintf(stderr, "scalwsd: loop %d: reload: quic keeps its certificates: %s\n", w->index,
                why);
    if (ncerts >= 0)
        free(certs);
}

void sws_quic_free(sws_worker *w) {
    struct sws_quic *q = w->quic;
    if (!q)
        return;
    if (q->ep)
        sws_h3_endpoint_free(q->ep);
    sws_quic_tx_free(q->tx);
    free(q);
    w->quic = NULL;
}

/* ---- for the SIGUSR2 hand-over (quic_handover.c) ------------------------------------- */

void sws_quic_take(sws_worker *w, const uint8_t *data, size_t len, const tl_udp_meta *m) {
    struct sws_quic *q = w->quic;
    if (q && q->ep && !q->closing)
        input(q, data, len, m);
}

void sws_quic_receive(sws_worker *w) {
    if (w->quic && w->quic->ep)
        arm_recv(w->quic);
}

bool sws_quic_stop_receiving(sws_worker *w) {
    struct sws_quic *q = w->quic;
    if (!q || !q->recv_armed)
        return false;
    /* Armed: its final completion is still to come, whatever the cancel
     * answers (-ENOENT: it is on its way already). */
    (void)tl_cancel(w->loop, q->recv_op);
    return true;
}

void sws_quic_count_relayed(sws_worker *w, bool sent) {
    if (sent && w->quic)
        w->quic->relayed++;
}
