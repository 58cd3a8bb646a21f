/* The quic listener's hand-over across a SIGUSR2 restart (quic_handover.h).
 * Invariants: exactly one process receives on the shared UDP sockets at a
 * time (the new one holds its receive until the old one says "go" on every
 * link, or is gone); a link's descriptor stays open until the relay thread
 * is joined (a loop may be sending on it), so a closed one is only marked
 * dead; a link carries one datagram or one word per SOCK_SEQPACKET record,
 * so nothing is ever half-sent. */
#include "quic_handover.h"

#include "http3.h"
#include "quic_host.h"

#include <errno.h>
#include <fcntl.h>
#include <gnutls/crypto.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

/* A relay link's records: a datagram ('D') with where it came from and to,
 * or the old process's "go" ('G': it no longer receives on the sockets). */
enum { RELAY_DGRAM = 'D', RELAY_GO = 'G' };

typedef struct relay_hdr {
    uint8_t kind;
    uint8_t ecn;
    uint8_t has_local;
    uint8_t reserved;
    uint32_t len;
    tl_sockaddr peer, local;
} relay_hdr;

/* The largest datagram relayed: a client's are at most its path's MTU
 * (QUIC pads Initials to 1200; 1500-byte Ethernet leaves 1472). */
#define RELAY_MAX 2048
/* Relayed datagrams read by the thread and not yet taken in by their loop;
 * past it they are dropped, which QUIC recovers as a loss. */
#define RELAY_SLOTS 128

typedef struct relay_msg {
    relay_hdr h;
    uint8_t data[RELAY_MAX];
} relay_msg;

typedef struct relay_link {
    int fd;            /* -1: none */
    _Atomic bool dead; /* its other end closed (or a send found it so) */
    bool go;           /* a predecessor's: it said go (relay thread only) */
    /* A successor's: datagrams the thread read for the loop. The thread
     * fills ring[head % RELAY_SLOTS] and posts it; the loop takes the posts
     * in order and moves tail. */
    relay_msg *ring;
    uint32_t head;
    _Atomic uint32_t tail;
} relay_link;

/* Loop i's own (only its thread touches them). */
typedef struct loop_side {
    bool hold;    /* waits for every "go" before it receives */
    bool handing; /* stopped receiving for the successor */
} loop_side;

#define GEN_MAX_LOOPS 256 /* TL_CID_STEER_MAX_LOOPS: one CID byte names the loop */

/* What the state descriptor holds, in this order. */
typedef struct handover_state {
    char magic[8];
    uint8_t gen;
    uint8_t steered; /* 0 no, 1 yes */
    uint8_t reserved[6];
    uint8_t ticket_key[SWS_H3_TICKET_KEY_LEN];
    uint8_t secrets[GEN_MAX_LOOPS][SWS_H3_RESET_SECRET_LEN];
} handover_state;

static const char STATE_MAGIC[8] = "SWSQHO1";

struct sws_quic_handover {
    sws_server *s;
    handover_state st; /* this process's generation, key and secrets */
    int *sock_in;      /* inherited sockets, by loop (start-up only) */
    int nsock_in;
    int *sock; /* the loops' sockets (theirs: never closed here), for a SIGUSR2 */
    int nsock;
    relay_link *pred; /* to the predecessor, by its loop index */
    int npred;
    bool started;     /* every predecessor link said go or is gone: START posted */
    relay_link *succ; /* to the successor, by loop index (nsock of them) */
    int *succ_child;  /* a SIGUSR2 under way: the child's ends, and the state */
    int state_fd;
    loop_side *side;
    pthread_mutex_t lock; /* succ's descriptors and rings, against the thread */
    pthread_t thread;
    bool thread_on;
    int wake_fd;
    _Atomic bool stop;
};

/* Posts of the relay thread and the control thread to a loop (the token's
 * index; the value is a ring slot for RELAY_POST_DGRAM). */
enum { RELAY_POST_DGRAM, RELAY_POST_START, RELAY_POST_HAND, RELAY_POST_SUCC_GONE };

/* ---- which process a datagram is for -------------------------------------------------- */

bool sws_quic_older_generation(const uint8_t *pkt, size_t len, uint8_t gen) {
    if (len < 1 + SWS_H3_CID_LEN)
        return false;
    size_t at;
    if (!(pkt[0] & 0x80)) { /* short header: our DCID at 1 */
        at = 1;
    } else {
        if (len < 6 + SWS_H3_CID_LEN || pkt[5] != SWS_H3_CID_LEN)
            return false;
        uint32_t version = (uint32_t)pkt[1] << 24 | (uint32_t)pkt[2] << 16 | pkt[3] << 8 | pkt[4];
        /* Another version is answered by a version negotiation, whoever
         * sends it; a v1 Initial opens a connection here. */
        if (version != 1 || (pkt[0] & 0x30) == 0x00)
            return false;
        at = 6;
    }
    return pkt[at + SWS_QUIC_CID_GEN_BYTE] != gen;
}

/* ---- start-up ------------------------------------------------------------------------ */

static int name_index(const char *name, const char *prefix) {
    size_t pl = strlen(prefix);
    if (strncmp(name, prefix, pl) != 0 || !name[pl])
        return -1;
    char *end;
    long i = strtol(name + pl, &end, 10);
    return *end == '\0' && i >= 0 && i < GEN_MAX_LOOPS ? (int)i : -1;
}

static int read_state(struct sws_quic_handover *h, int fd, char *err, size_t errlen) {
    handover_state st;
    ssize_t n = pread(fd, &st, sizeof(st), 0);
    if (n != (ssize_t)sizeof(st) || memcmp(st.magic, STATE_MAGIC, sizeof(st.magic)) != 0) {
        snprintf(err, errlen, "quic: the state the old process passed is not readable (%zd bytes)",
                 n);
        return -EINVAL;
    }
    h->st = st;
    h->st.gen = (uint8_t)(st.gen + 1); /* the next generation: apart from every older one */
    explicit_bzero(&st, sizeof(st));
    return 0;
}

static int fresh_state(struct sws_quic_handover *h, char *err, size_t errlen) {
    memcpy(h->st.magic, STATE_MAGIC, sizeof(h->st.magic));
    if (gnutls_rnd(GNUTLS_RND_NONCE, &h->st.gen, 1) != 0 ||
        sws_h3_ticket_key(h->st.ticket_key) != 0 ||
        gnutls_rnd(GNUTLS_RND_KEY, h->st.secrets, sizeof(h->st.secrets)) != 0) {
        snprintf(err, errlen, "quic: no random bytes for the ticket key and reset secrets");
        return -EIO;
    }
    return 0;
}

static void close_all(int *fds, int n) {
    for (int i = 0; i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

int sws_quic_handover_init(sws_server *s, char *err, size_t errlen) {
    struct sws_quic_handover *h = calloc(1, sizeof(*h));
    if (!h) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    s->quic_handover = h;
    h->s = s;
    h->state_fd = -1;
    h->wake_fd = -1;
    pthread_mutex_init(&h->lock, NULL);
    int sock[GEN_MAX_LOOPS], links[GEN_MAX_LOOPS], nsock = 0, nlink = 0, state = -1;
    for (int i = 0; i < GEN_MAX_LOOPS; i++)
        sock[i] = links[i] = -1;
    for (int k = 0; k < s->ninherited_named; k++) {
        const sws_named_fd *nf = &s->inherited_named[k];
        int i;
        if ((i = name_index(nf->name, "quic-relay-")) >= 0 && links[i] < 0) {
            links[i] = nf->fd;
            nlink = i + 1 > nlink ? i + 1 : nlink;
        } else if ((i = name_index(nf->name, "quic-")) >= 0 && sock[i] < 0) {
            sock[i] = nf->fd;
            nsock = i + 1 > nsock ? i + 1 : nsock;
        } else if (strcmp(nf->name, "quic-state") == 0 && state < 0) {
            state = nf->fd;
        } else {
            close(nf->fd); /* passed twice, or by a scalwsd that named it otherwise */
        }
    }
    int rc = 0;
    bool whole = nsock > 0 && state >= 0 && nlink == nsock;
    for (int i = 0; i < nsock && whole; i++)
        whole = sock[i] >= 0 && links[i] >= 0;
    if (nsock + nlink > 0 || state >= 0) {
        if (!whole) {
            snprintf(err, errlen,
                     "quic: the old process passed %d sockets and %d links, not one "
                     "of each per loop and its state",
                     nsock, nlink);
            rc = -EINVAL;
        } else {
            rc = read_state(h, state, err, errlen);
        }
    } else {
        rc = fresh_state(h, err, errlen);
    }
    if (state >= 0)
        close(state);
    if (rc == 0 && whole) {
        h->sock_in = malloc((size_t)nsock * sizeof(int));
        h->pred = calloc((size_t)nsock, sizeof(*h->pred));
        if (!h->sock_in || !h->pred) {
            snprintf(err, errlen, "out of memory");
            rc = -ENOMEM;
        } else {
            memcpy(h->sock_in, sock, (size_t)nsock * sizeof(int));
            h->nsock_in = nsock;
            for (int i = 0; i < nsock; i++) {
                h->pred[i].fd = links[i];
                links[i] = -1;
            }
            h->npred = nsock;
            nsock = 0;
        }
    }
    close_all(sock, nsock);
    close_all(links, nlink);
    return rc;
}

int sws_quic_handover_sockets(const sws_server *s, const int **fds) {
    const struct sws_quic_handover *h = s->quic_handover;
    *fds = h ? h->sock_in : NULL;
    return h ? h->nsock_in : 0;
}

void sws_quic_handover_drop_sockets(sws_server *s) {
    struct sws_quic_handover *h = s->quic_handover;
    if (!h)
        return;
    close_all(h->sock_in, h->nsock_in);
    h->nsock_in = 0;
    /* No predecessor shares a socket with us: nothing to relay, no go to
     * wait for (its end sees ours close and keeps receiving). */
    for (int i = 0; i < h->npred; i++)
        close(h->pred[i].fd);
    free(h->pred);
    h->pred = NULL;
    h->npred = 0;
}

const uint8_t *sws_quic_handover_ticket_key(const sws_server *s) {
    return s->quic_handover->st.ticket_key;
}

const uint8_t *sws_quic_handover_reset_secret(const sws_server *s, int i) {
    return s->quic_handover->st.secrets[i % GEN_MAX_LOOPS];
}

bool sws_quic_handover_steered(const sws_server *s) {
    return s->quic_handover->st.steered;
}

void sws_quic_handover_sockets_taken(sws_server *s) {
    struct sws_quic_handover *h = s->quic_handover;
    free(h->sock_in);
    h->sock_in = NULL;
    h->nsock_in = 0;
}

static void *relay_main(void *arg);

static int start_thread(struct sws_quic_handover *h) {
    if (h->thread_on)
        return 0;
    if (h->wake_fd < 0 && (h->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
        return -errno;
    int rc = -pthread_create(&h->thread, NULL, relay_main, h);
    h->thread_on = rc == 0;
    return rc;
}

static void wake(struct sws_quic_handover *h) {
    uint64_t one = 1;
    if (h->wake_fd >= 0 && write(h->wake_fd, &one, sizeof(one)) < 0)
        return; /* a wake already pending */
}

int sws_quic_handover_start(sws_server *s, const int *fds, char *err, size_t errlen) {
    struct sws_quic_handover *h = s->quic_handover;
    h->nsock = s->nloops;
    h->sock = malloc((size_t)h->nsock * sizeof(int));
    h->side = calloc((size_t)h->nsock, sizeof(*h->side));
    h->succ = calloc((size_t)h->nsock, sizeof(*h->succ));
    if (!h->sock || !h->side || !h->succ) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    memcpy(h->sock, fds, (size_t)h->nsock * sizeof(int));
    for (int i = 0; i < h->nsock; i++) {
        h->succ[i].fd = -1;
        h->side[i].hold = h->npred > 0;
    }
    h->st.steered = s->quic_steered;
    if (h->npred > 0) {
        int rc = start_thread(h);
        if (rc < 0) {
            snprintf(err, errlen, "quic: cannot start the relay thread: %s", strerror(-rc));
            return rc;
        }
    }
    return 0;
}

/* ---- the loop's side ------------------------------------------------------------------ */

bool sws_quic_handover_hold(const sws_worker *w) {
    const struct sws_quic_handover *h = w->srv->quic_handover;
    return h && h->side && h->side[w->index].hold;
}

bool sws_quic_handover_relaying(const sws_worker *w) {
    const struct sws_quic_handover *h = w->srv->quic_handover;
    return h && w->index < h->npred && !atomic_load(&h->pred[w->index].dead);
}

bool sws_quic_handover_handing(const sws_worker *w) {
    const struct sws_quic_handover *h = w->srv->quic_handover;
    return h && h->side && h->side[w->index].handing;
}

void sws_quic_handover_make_cid(void *ud, uint8_t *cid, size_t len) {
    const sws_worker *w = ud;
    (void)gnutls_rnd(GNUTLS_RND_NONCE, cid, len);
    cid[SWS_QUIC_CID_GEN_BYTE] = w->srv->quic_handover->st.gen;
    cid[SWS_H3_CID_LOOP_BYTE] = (uint8_t)w->index;
}

/* One record on a link, all or nothing (SOCK_SEQPACKET); 0, or a negative
 * errno: -EAGAIN (full: the datagram is dropped), -EPIPE (gone). */
static int link_send(relay_link *L, const relay_hdr *hd, const uint8_t *data, size_t len) {
    struct iovec iov[2] = {{(void *)hd, sizeof(*hd)}, {(void *)data, len}};
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = len ? 2 : 1};
    ssize_t n;
    do
        n = sendmsg(L->fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n >= 0)
        return 0;
    int e = errno;
    if (e != EAGAIN && e != ENOBUFS)
        atomic_store(&L->dead, true);
    return -e;
}

bool sws_quic_handover_relay_up(sws_worker *w, const uint8_t *data, size_t len,
                                const tl_udp_meta *m) {
    struct sws_quic_handover *h = w->srv->quic_handover;
    if (!h || w->index >= h->npred)
        return false;
    relay_link *L = &h->pred[w->index];
    if (atomic_load_explicit(&L->dead, memory_order_relaxed) || len > RELAY_MAX ||
        !sws_quic_older_generation(data, len, h->st.gen))
        return false;
    relay_hdr hd = {.kind = RELAY_DGRAM,
                    .ecn = m->ecn,
                    .has_local = (m->flags & TL_UDP_META_LOCAL) != 0,
                    .len = (uint32_t)len,
                    .peer = m->peer,
                    .local = m->local};
    int rc = link_send(L, &hd, data, len);
    /* Full: dropped, as a full socket buffer would. Gone: the predecessor
     * has exited, and its connections are this process's to reset. */
    if (rc == 0 || rc == -EAGAIN || rc == -ENOBUFS) {
        sws_quic_count_relayed(w, rc == 0);
        return true;
    }
    return false;
}

/* The loop's receive on the shared socket has ended: the successor may
 * read it now. A link that is gone leaves this loop receiving again. */
void sws_quic_handover_stopped(sws_worker *w) {
    struct sws_quic_handover *h = w->srv->quic_handover;
    relay_link *L = &h->succ[w->index];
    relay_hdr go = {.kind = RELAY_GO};
    if (L->fd < 0 || atomic_load(&L->dead) || link_send(L, &go, NULL, 0) < 0) {
        h->side[w->index].handing = false;
        sws_quic_receive(w);
    }
}

static void take_relayed(sws_worker *w, struct sws_quic_handover *h, uint32_t slot) {
    relay_link *L = &h->succ[w->index];
    const relay_msg *msg = &L->ring[slot % RELAY_SLOTS];
    tl_udp_meta m = {.peer = msg->h.peer,
                     .local = msg->h.local,
                     .ecn = msg->h.ecn,
                     .flags = msg->h.has_local ? TL_UDP_META_LOCAL : 0};
    /* An older generation's still (a chain of restarts): further up. */
    if (!sws_quic_handover_relay_up(w, msg->data, msg->h.len, &m))
        sws_quic_take(w, msg->data, msg->h.len, &m);
    atomic_fetch_add_explicit(&L->tail, 1, memory_order_release);
}

void sws_quic_handover_dispatch(sws_worker *w, const tl_completion *e) {
    struct sws_quic_handover *h = w->srv->quic_handover;
    if (!h || !h->side)
        return;
    loop_side *side = &h->side[w->index];
    switch (sws_token_index(e->token)) {
    case RELAY_POST_DGRAM:
        take_relayed(w, h, (uint32_t)e->u.msg.value);
        break;
    case RELAY_POST_START:
        if (side->hold) {
            side->hold = false;
            if (side->handing) /* a successor serves already: it reads instead */
                sws_quic_handover_stopped(w);
            else
                sws_quic_receive(w);
        }
        break;
    case RELAY_POST_HAND:
        /* The successor serves: it reads the sockets once every loop here
         * has stopped (the receive's last completion: stopped()). A loop
         * still waiting for its own predecessor's go says go when it gets
         * it (START): before, that predecessor may still be reading. */
        if (!side->handing && h->succ[w->index].fd >= 0 && !atomic_load(&h->succ[w->index].dead)) {
            side->handing = true;
            if (!side->hold && !sws_quic_stop_receiving(w))
                sws_quic_handover_stopped(w);
        }
        break;
    case RELAY_POST_SUCC_GONE:
        /* It ended after we stopped receiving: receive again, so that our
         * own connections can finish. */
        if (side->handing) {
            side->handing = false;
            if (!side->hold)
                sws_quic_receive(w);
        }
        break;
    }
}

/* ---- the relay thread ----------------------------------------------------------------- */

static void post(sws_server *s, int i, unsigned kind, uint64_t value) {
    tl_message m = {.value = value};
    if (tl_loop_post(s->loops[i], sws_token(kind, SWS_T_QUIC_RELAY), &m) < 0)
        fprintf(stderr, "scalwsd: quic: cannot post to loop %d\n", i);
}

/* Every predecessor link said go or is gone: the loops receive. */
static void maybe_start(struct sws_quic_handover *h) {
    if (h->started)
        return;
    for (int i = 0; i < h->npred; i++)
        if (!h->pred[i].go && !atomic_load(&h->pred[i].dead))
            return;
    h->started = true;
    for (int i = 0; i < h->nsock; i++)
        post(h->s, i, RELAY_POST_START, 0);
}

static void on_pred(struct sws_quic_handover *h, int i) {
    relay_link *L = &h->pred[i];
    relay_hdr hd;
    ssize_t n = recv(L->fd, &hd, sizeof(hd), MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n == (ssize_t)sizeof(hd) && hd.kind == RELAY_GO)
        L->go = true;
    else /* its end closed (0), or an error: the old process is gone */
        atomic_store(&L->dead, true);
    maybe_start(h);
}

static void on_succ(struct sws_quic_handover *h, int i) {
    relay_link *L = &h->succ[i];
    uint32_t used = L->head - atomic_load_explicit(&L->tail, memory_order_acquire);
    relay_msg scratch, *msg = used < RELAY_SLOTS ? &L->ring[L->head % RELAY_SLOTS] : &scratch;
    ssize_t n = recv(L->fd, msg, sizeof(*msg), MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        atomic_store(&L->dead, true);
        post(h->s, i, RELAY_POST_SUCC_GONE, 0);
        return;
    }
    if (msg == &scratch || (size_t)n < sizeof(msg->h) || msg->h.kind != RELAY_DGRAM ||
        msg->h.len != (size_t)n - sizeof(msg->h))
        return; /* the ring is full (dropped: QUIC recovers it), or not a datagram */
    tl_message m = {.value = L->head % RELAY_SLOTS};
    if (tl_loop_post(h->s->loops[i], sws_token(RELAY_POST_DGRAM, SWS_T_QUIC_RELAY), &m) == 0)
        L->head++;
}

/* Polls the live links (predecessor's: go or its end; successor's:
 * datagrams), and the wake eventfd for a new set of links or the stop. */
static void *relay_main(void *arg) {
    struct sws_quic_handover *h = arg;
    int n = 1 + h->npred + h->nsock;
    struct pollfd *p = calloc((size_t)n, sizeof(*p));
    int *who = calloc((size_t)n, sizeof(*who)); /* >= 0 pred i; < 0 succ -1-i */
    if (!p || !who) {
        fprintf(stderr, "scalwsd: quic: relay thread: out of memory\n");
        free(p);
        free(who);
        return NULL;
    }
    while (!atomic_load(&h->stop)) {
        int k = 0;
        p[k++] = (struct pollfd){.fd = h->wake_fd, .events = POLLIN};
        pthread_mutex_lock(&h->lock);
        for (int i = 0; i < h->npred; i++)
            if (!atomic_load(&h->pred[i].dead)) {
                who[k] = i;
                p[k++] = (struct pollfd){.fd = h->pred[i].fd, .events = POLLIN};
            }
        for (int i = 0; i < h->nsock; i++)
            if (h->succ[i].fd >= 0 && !atomic_load(&h->succ[i].dead)) {
                who[k] = -1 - i;
                p[k++] = (struct pollfd){.fd = h->succ[i].fd, .events = POLLIN};
            }
        pthread_mutex_unlock(&h->lock);
        if (poll(p, (nfds_t)k, -1) < 0) {
            if (errno == EINTR)
                continue;
            fprintf(stderr, "scalwsd: quic: relay thread: poll: %s\n", strerror(errno));
            break;
        }
        if (p[0].revents) {
            uint64_t v;
            if (read(h->wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
                break;
            continue; /* the set changed: poll it anew */
        }
        pthread_mutex_lock(&h->lock);
        for (int j = 1; j < k; j++) {
            if (!p[j].revents)
                continue;
            if (who[j] >= 0)
                on_pred(h, who[j]);
            else
                on_succ(h, -1 - who[j]);
        }
        pthread_mutex_unlock(&h->lock);
    }
    free(p);
    free(who);
    return NULL;
}

/* ---- SIGUSR2 (control thread) --------------------------------------------------------- */

static void close_pending(struct sws_quic_handover *h) {
    if (h->succ_child) {
        close_all(h->succ_child, h->nsock);
        free(h->succ_child);
        h->succ_child = NULL;
    }
    if (h->state_fd >= 0)
        close(h->state_fd);
    h->state_fd = -1;
}

static int make_state(struct sws_quic_handover *h) {
    int fd = memfd_create("scalwsd-quic-state", MFD_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (pwrite(fd, &h->st, sizeof(h->st), 0) != (ssize_t)sizeof(h->st)) {
        close(fd);
        return -EIO;
    }
    return fd;
}

int sws_quic_handover_prepare(sws_server *s, sws_named_fd *out, int max) {
    struct sws_quic_handover *h = s->quic_handover;
    if (!h || !h->sock || !h->nsock)
        return 0; /* no quic listener */
    if (2 * h->nsock + 1 > max)
        return -E2BIG;
    close_pending(h);
    h->succ_child = malloc((size_t)h->nsock * sizeof(int));
    relay_link *next = calloc((size_t)h->nsock, sizeof(*next));
    if (!h->succ_child || !next) {
        free(next);
        free(h->succ_child);
        h->succ_child = NULL;
        return -ENOMEM;
    }
    int rc = 0, i = 0;
    for (; i < h->nsock && rc == 0; i++) {
        int sv[2];
        next[i].ring = malloc(RELAY_SLOTS * sizeof(relay_msg));
        if (!next[i].ring || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
            rc = next[i].ring ? -errno : -ENOMEM;
            free(next[i].ring);
            break;
        }
        next[i].fd = sv[0];
        h->succ_child[i] = sv[1];
    }
    if (rc == 0 && (h->state_fd = make_state(h)) < 0)
        rc = h->state_fd;
    if (rc < 0) {
        for (int j = 0; j < i; j++) {
            close(next[j].fd);
            close(h->succ_child[j]);
            free(next[j].ring);
        }
        free(h->succ_child);
        h->succ_child = NULL;
        free(next);
        h->state_fd = -1;
        return rc;
    }
    /* Each link buffers what the loop relays while the old loop turns. */
    int buf = 1 << 20;
    for (i = 0; i < h->nsock; i++)
        setsockopt(h->succ_child[i], SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
    /* The earlier links are dead (no successor is running, or this SIGUSR2
     * would have been refused), so no loop and no poll uses them. */
    pthread_mutex_lock(&h->lock);
    relay_link *old = h->succ;
    h->succ = next;
    pthread_mutex_unlock(&h->lock);
    for (i = 0; i < h->nsock; i++) {
        if (old[i].fd >= 0)
            close(old[i].fd);
        free(old[i].ring);
    }
    free(old);
    int n = 0;
    for (i = 0; i < h->nsock; i++) {
        out[n].fd = h->sock[i];
        snprintf(out[n++].name, sizeof(out->name), "quic-%d", i);
        out[n].fd = h->succ_child[i];
        snprintf(out[n++].name, sizeof(out->name), "quic-relay-%d", i);
    }
    out[n].fd = h->state_fd;
    snprintf(out[n++].name, sizeof(out->name), "quic-state");
    return n;
}

void sws_quic_handover_forked(sws_server *s, bool started) {
    struct sws_quic_handover *h = s->quic_handover;
    if (!h || !h->succ_child)
        return;
    close_pending(h); /* the child has its copies */
    if (!started) {
        for (int i = 0; i < h->nsock; i++)
            atomic_store(&h->succ[i].dead, true);
        return;
    }
    if (h->thread_on)
        wake(h);
    else if (start_thread(h) < 0)
        fprintf(stderr, "scalwsd: quic: cannot start the relay thread: the old connections "
                        "will not be handed their datagrams\n");
}

void sws_quic_handover_hand(sws_server *s) {
    struct sws_quic_handover *h = s->quic_handover;
    if (!h || !h->sock || !h->thread_on)
        return;
    for (int i = 0; i < h->nsock; i++)
        post(s, i, RELAY_POST_HAND, 0);
}

void sws_quic_handover_free(sws_server *s) {
    struct sws_quic_handover *h = s->quic_handover;
    if (!h)
        return;
    if (h->thread_on) {
        atomic_store(&h->stop, true);
        wake(h);
        pthread_join(h->thread, NULL);
    }
    close_pending(h);
    close_all(h->sock_in, h->nsock_in);
    for (int i = 0; i < h->npred; i++)
        close(h->pred[i].fd);
    for (int i = 0; h->succ && i < h->nsock; i++) {
        if (h->succ[i].fd >= 0)
            close(h->succ[i].fd);
        free(h->succ[i].ring);
    }
    if (h->wake_fd >= 0)
        close(h->wake_fd);
    explicit_bzero(&h->st, sizeof(h->st));
    pthread_mutex_destroy(&h->lock);
    free(h->sock_in);
    free(h->sock);
    free(h->pred);
    free(h->succ);
    free(h->side);
    free(h);
    s->quic_handover = NULL;
}
