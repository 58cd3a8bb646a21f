/* The quic listener on the loops (doc/http3.md, "How scalwsd serves it"):
 * one UDP socket per loop on one port, steered by connection ID
 * (tl_route_udp_cid), and one HTTP/3 endpoint per loop that takes that
 * socket's datagrams, writes through it and keeps one loop timer at its
 * next expiry. Built only with the HTTP/3 packages (SWS_HAVE_QUIC); without
 * them a quic listener is refused at start. */
#ifndef SWS_QUIC_HOST_H
#define SWS_QUIC_HOST_H

#include "sws.h"

/* The quic socket's receive buffers per loop with [http3] gro: a datagram
 * pool of 64 KiB buffers (turnloop's udp_recv_buffers), 4 MiB a loop. */
#define SWS_QUIC_GRO_BUFFERS 64

/* What a loop's endpoint counted, published by its loop once a second (the
 * sweep) for the control thread's /metrics. */
typedef struct sws_quic_counters {
    sws_ctr datagrams_in, datagrams_out, send_errors, forwarded, relayed;
    sws_ctr sends, gso_batches; /* server/quic_send.c */
    /* GRO: payloads of several datagrams received, and those datagrams */
    sws_ctr gro_receives, gro_datagrams;
    sws_ctr connections, streams, requests;
    sws_ctr early_connections, too_early;
    sws_ctr stateless_resets;
    sws_ctr open_connections;
    /* Loss recovery (sws_h3_stats says what each one is). */
    sws_ctr stream_packets_lost, probe_timeouts, congestion_events;
    sws_ctr bytes_in_flight, smoothed_rtt_us;
} sws_quic_counters;

#ifdef SWS_HAVE_QUIC
/* Sizes the loop for its endpoint before its scenarios exist (exchange ids
 * past the TCP ones; the UDP handle). Loop thread or start-up. */
int sws_quic_reserve(sws_worker *w);
/* Start-up, main thread, after the loops exist: listener li's sockets (one per
 * loop), every loop's endpoint and first receive. 0 or a negative errno with
 * "origin: why" in err. */
int sws_quic_start(sws_server *s, int li, char *err, size_t errlen);
/* Loop thread: a completion of one of the worker tags of QUIC. */
void sws_quic_dispatch(sws_worker *w, const tl_completion *e);
/* Loop thread, after each turn: the timer at the endpoint's next expiry. */
void sws_quic_turn_done(sws_worker *w);
/* Loop thread, once a second: the counters published. */
void sws_quic_publish(sws_worker *w);
/* Control thread: the quic lines of /metrics, per loop (none without a
 * quic listener). */
void sws_quic_metrics(const sws_server *s, FILE *f);
/* Control thread: the loop's published counters, for /status; NULL without
 * a quic listener. */
const sws_quic_counters *sws_quic_counters_of(const sws_worker *w);
/* Loop thread: draining (GOAWAY on every connection); forced (w->forced:
 * the drain timeout), every connection closed at once. */
void sws_quic_drain(sws_worker *w);
/* Loop thread: whether its connections have all closed (and then its socket). */
bool sws_quic_finished(sws_worker *w);
/* Loop thread, SIGHUP: the certificate for new connections; errors logged. */
void sws_quic_reload(sws_worker *w, const sws_config *next);
/* After the loop's thread has ended, before the loop is freed. */
void sws_quic_free(sws_worker *w);
/* For quic_handover.c, loop thread: a datagram taken in as if received on
 * the loop's socket; the receive armed (unless closing); the receive
 * stopped (false: none was armed, so it has stopped already); a datagram
 * relayed to the predecessor (sent: not dropped on a full link). */
void sws_quic_take(sws_worker *w, const uint8_t *data, size_t len, const tl_udp_meta *m);
void sws_quic_receive(sws_worker *w);
bool sws_quic_stop_receiving(sws_worker *w);
void sws_quic_count_relayed(sws_worker *w, bool sent);
#else
static inline int sws_quic_reserve(sws_worker *w) {
    (void)w;
    return 0;
}
static inline int sws_quic_start(sws_server *s, int li, char *err, size_t errlen) {
    snprintf(err, errlen, "%s: scalwsd was built without HTTP/3 (libngtcp2, libnghttp3, gnutls)",
             s->cfg->listeners[li].origin);
    return -EOPNOTSUPP;
}
static inline void sws_quic_dispatch(sws_worker *w, const tl_completion *e) {
    (void)w;
    (void)e;
}
static inline void sws_quic_turn_done(sws_worker *w) {
    (void)w;
}
static inline void sws_quic_publish(sws_worker *w) {
    (void)w;
}
static inline void sws_quic_metrics(const sws_server *s, FILE *f) {
    (void)s;
    (void)f;
}
static inline const sws_quic_counters *sws_quic_counters_of(const sws_worker *w) {
    (void)w;
    return NULL;
}
static inline void sws_quic_drain(sws_worker *w) {
    (void)w;
}
static inline bool sws_quic_finished(sws_worker *w) {
    (void)w;
    return true;
}
static inline void sws_quic_reload(sws_worker *w, const sws_config *next) {
    (void)w;
    (void)next;
}
static inline void sws_quic_free(sws_worker *w) {
    (void)w;
}
#endif

#endif
