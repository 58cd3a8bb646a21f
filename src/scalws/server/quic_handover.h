/* The quic listener across a SIGUSR2 restart (doc/http3.md, "SIGUSR2"):
 * the new process inherits the old one's UDP sockets (one per loop, so the
 * reuse-port group, its indices and its steering program stay), its ticket
 * key and stateless-reset secrets, and a relay link per loop (a unix
 * SOCK_SEQPACKET pair). Every connection ID carries its process's
 * generation (byte 0); once the new process serves, the old one stops
 * receiving and says "go" on each link, the new one receives everything and
 * relays to the old one each datagram whose DCID names an older generation,
 * which the old one takes in as if received, answering through its copy of
 * the socket. The old process drains as for TCP and exits when its
 * connections are done. */
#ifndef SWS_QUIC_HANDOVER_H
#define SWS_QUIC_HANDOVER_H

#include "sws.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

/* A descriptor passed by name besides the HTTP listeners (reexec.c parses
 * and passes them; quic_handover.c names them: "quic-N" a loop's UDP
 * socket, "quic-relay-N" loop N's link, "quic-state" the secrets). */
typedef struct sws_named_fd {
    int fd;
    char name[24];
} sws_named_fd;

/* Loop sockets, links and the state: at most 1024 loops. */
#define SWS_NAMED_MAX (2 * 1024 + 1)

/* The CID byte that holds the process's generation (byte 1 is the loop's,
 * SWS_H3_CID_LOOP_BYTE; the other 14 are random). */
#define SWS_QUIC_CID_GEN_BYTE 0

/* Whether a datagram belongs to an older process than generation gen: its
 * DCID is one of our 16-byte IDs whose generation byte is not gen, and it
 * is no v1 Initial (an Initial's DCID is the client's own choice until it
 * has our ID; a new connection is this process's). Pure: unit-tested. */
bool sws_quic_older_generation(const uint8_t *pkt, size_t len, uint8_t gen);

#ifdef SWS_HAVE_QUIC
/* Start-up, main thread, before the quic listener opens: reads what a
 * SIGUSR2's parent passed (s->inherited_named), or draws this process's
 * generation and secrets. The inherited sockets are left for
 * sws_quic_handover_sockets. 0 or a negative errno with why in err. */
int sws_quic_handover_init(sws_server *s, char *err, size_t errlen);
/* The inherited UDP sockets of the quic listener, in loop order (the count
 * decides the loops, as inherited TCP sockets do), or 0. */
int sws_quic_handover_sockets(const sws_server *s, const int **fds);
/* The sockets were not taken (another address, or none configured): closed. */
void sws_quic_handover_drop_sockets(sws_server *s);
/* The loops took them (tl_route_udp_cid_adopt owns them, even on error). */
void sws_quic_handover_sockets_taken(sws_server *s);
/* What loop i's endpoint is made with: the ticket key, its reset secret. */
const uint8_t *sws_quic_handover_ticket_key(const sws_server *s);
const uint8_t *sws_quic_handover_reset_secret(const sws_server *s, int i);
/* Whether the kernel steered the predecessor's sockets by connection ID
 * (the group's program is the first process's). */
bool sws_quic_handover_steered(const sws_server *s);
/* After the loops exist and their sockets are open (main thread): records
 * each loop's socket for a later SIGUSR2 and starts the relay thread when
 * there is a predecessor. fds: the loops' sockets. */
int sws_quic_handover_start(sws_server *s, const int *fds, char *err, size_t errlen);
/* Loop thread: whether the loop must wait for the predecessor's "go"
 * before it receives (it reads the same sockets until then). */
bool sws_quic_handover_hold(const sws_worker *w);
/* The make_cid hook: random, the generation at byte 0, the loop's index at
 * byte 1. ud: the worker. */
void sws_quic_handover_make_cid(void *ud, uint8_t *cid, size_t len);
/* Loop thread, a datagram this loop took (from its socket, or relayed by a
 * successor): true when it went to the predecessor instead (an older
 * generation's, and the predecessor is there to take it). */
bool sws_quic_handover_relay_up(sws_worker *w, const uint8_t *data, size_t len,
                                const tl_udp_meta *m);
/* Loop thread: the loop's receive on the socket has ended for good after
 * sws_quic_handover_handing said so: "go" to the successor. */
void sws_quic_handover_stopped(sws_worker *w);
/* Loop thread: a SWS_T_QUIC_RELAY post (a relayed datagram, start, the
 * successor gone), which calls back into quic_host.c. */
void sws_quic_handover_dispatch(sws_worker *w, const tl_completion *e);
/* Loop thread: the loop stopped receiving for a successor (handing) and has
 * not taken it back. */
bool sws_quic_handover_handing(const sws_worker *w);
/* Loop thread: the predecessor is there to take its datagrams through this
 * loop. A draining loop waits for it to be gone (or for the drain timeout):
 * in a chain of restarts the newest process relays the oldest one's
 * datagrams through each one in between. */
bool sws_quic_handover_relaying(const sws_worker *w);

/* Control thread, SIGUSR2: the descriptors to pass (fills out, returns the
 * count, or a negative errno), and after the fork whether it went. */
int sws_quic_handover_prepare(sws_server *s, sws_named_fd *out, int max);
void sws_quic_handover_forked(sws_server *s, bool started);
/* Control thread: the new process serves: every loop stops receiving on
 * the sockets it shares with it and says "go" on its link. */
void sws_quic_handover_hand(sws_server *s);
/* After the loops stopped, before they are freed: the relay thread joined,
 * the links closed. */
void sws_quic_handover_free(sws_server *s);
#else
/* Without HTTP/3 a quic listener is refused at start: what was passed is closed. */
static inline int sws_quic_handover_init(sws_server *s, char *err, size_t errlen) {
    (void)err;
    (void)errlen;
    for (int k = 0; k < s->ninherited_named; k++)
        close(s->inherited_named[k].fd);
    return 0;
}
static inline int sws_quic_handover_sockets(const sws_server *s, const int **fds) {
    (void)s;
    *fds = NULL;
    return 0;
}
static inline void sws_quic_handover_drop_sockets(sws_server *s) {
    (void)s;
}
static inline int sws_quic_handover_prepare(sws_server *s, sws_named_fd *out, int max) {
    (void)s;
    (void)out;
    (void)max;
    return 0;
}
static inline void sws_quic_handover_forked(sws_server *s, bool started) {
    (void)s;
    (void)started;
}
static inline void sws_quic_handover_hand(sws_server *s) {
    (void)s;
}
static inline void sws_quic_handover_free(sws_server *s) {
    (void)s;
}
#endif

#endif
