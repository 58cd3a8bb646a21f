/* QUIC connection-ID steering: one UDP socket per loop on one port, a classic
 * BPF reuseport program that picks the socket named by a byte of the
 * datagram's destination connection ID, the same rule in C for hosts that
 * forward by themselves, and the loop-to-loop datagram handoff they forward
 * with. The kernel runs the program with the UDP payload at offset 0. */
#include "internal.h"

#include <errno.h>
#include <linux/filter.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The index a reuseport program returns to say "not mine to pick": anything
 * past the group makes the kernel fall back to its own 4-tuple hash. */
#define STEER_BY_HASH 0xffffffffu

static int resolve_cfg(const tl_cid_steer *cfg, tl_cid_steer *out) {
    tl_cid_steer c = {.cid_len = TL_CID_STEER_DEFAULT_LEN, .index_byte = TL_CID_STEER_DEFAULT_BYTE};
    if (cfg)
        c = *cfg;
    if (c.cid_len < 1 || c.cid_len > 20 || c.index_byte >= c.cid_len)
        return -EINVAL;
    *out = c;
    return 0;
}

int tl_cid_loop_index(const void *pkt, size_t len, const tl_cid_steer *cfg, int n) {
    tl_cid_steer c;
    if (resolve_cfg(cfg, &c) < 0 || n <= 0 || !pkt)
        return -1;
    const uint8_t *p = pkt;
    size_t at;
    if (len < 1u + c.cid_len)
        return -1;
    if (!(p[0] & 0x80)) { /* short header: DCID at 1, of our own length */
        at = 1u + c.index_byte;
    } else { /* long header: DCID length at 5, DCID at 6 */
        if (len < 6u + c.cid_len || p[5] != c.cid_len)
            return -1;
        at = 6u + c.index_byte;
    }
    return p[at] < n ? p[at] : -1;
}

/* The program, the same rule as tl_cid_loop_index:
 *   0 ld len;        jge 1+L ? 2 : hash
 *   2 ldb [0];       jset 0x80 ? long : 4
 *   4 ldb [1+B];     jge n ? hash : ret A
 *   long: ld len;    jge 6+L ? next : hash
 *         ldb [5];   jeq L ? next : hash
 *         ldb [6+B]; jge n ? hash : ret A
 *   hash: ret STEER_BY_HASH */
#define STEER_PROG_LEN 15
static void steer_program(const tl_cid_steer *c, int n, struct sock_filter *f) {
    uint32_t L = c->cid_len, B = c->index_byte;
    const int lng = 7, hash = 14; /* the labels above, by position */
    int i = 0;
#define AT(k) ((uint8_t)((k) - (i + 1))) /* a jump to k from the instruction at i */
    f[i] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_LEN, 0), i++;
    f[i] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 1 + L, 0, AT(hash)), i++;
    f[i] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 0), i++;
    f[i] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x80, AT(lng), 0), i++;
    f[i] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 1 + B), i++;
    f[i] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, (uint32_t)n, AT(hash), 0), i++;
    f[i] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_A, 0), i++;
    /* i == lng */
    f[i] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_LEN, 0), i++;
    f[i] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 6 + L, 0, AT(hash)), i++;
    f[i] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 5), i++;
    f[i] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, L, 0, AT(hash)), i++;
    f[i] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 6 + B), i++;
    f[i] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, (uint32_t)n, AT(hash), 0), i++;
    f[i] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_A, 0), i++;
    /* i == hash */
    f[i] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, STEER_BY_HASH);
#undef AT
}

static int attach_cid_steer(tl_loop **loops, int n, const tl_cid_steer *c, int fd) {
#if defined(SO_ATTACH_REUSEPORT_CBPF)
    for (int i = 0; i < n; i++)
        if (loops[i]->flags & TL_LOOP_NO_CID_STEER)
            return -EOPNOTSUPP; /* what a kernel without the option answers */
    struct sock_filter code[STEER_PROG_LEN];
    steer_program(c, n, code);
    struct sock_fprog prog = {.len = STEER_PROG_LEN, .filter = code};
    int err =
        setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &prog, sizeof prog) < 0 ? -errno : 0;
    return err == -ENOPROTOOPT ? -EOPNOTSUPP : err;
#else
    (void)loops;
    (void)n;
    (void)c;
    (void)fd;
    return -EOPNOTSUPP;
#endif
}

int tl_route_udp_cid(tl_loop **loops, int n, const struct sockaddr *addr, socklen_t addrlen,
                     const tl_cid_steer *cfg, tl_handle *out, int *steer_err) {
    tl_cid_steer c;
    if (n <= 0 || n > TL_CID_STEER_MAX_LOOPS || resolve_cfg(cfg, &c) < 0 ||
        addrlen > sizeof(struct sockaddr_storage))
        return -EINVAL;
    struct sockaddr_storage a;
    memcpy(&a, addr, addrlen);
    /* In loop order: a UDP socket joins the kernel's group when it binds, so
     * socket i is index i of the group, the index the program returns. */
    tl_udp_options o = {.reuse_port = TL_REUSE_PORT_DISTRIBUTE};
    int err = 0;
    int made = 0;
    for (; made < n; made++) {
        err = tl_udp_open(loops[made], (struct sockaddr *)&a, addrlen, &o, &out[made]);
        if (err < 0)
            break;
        if (made == 0) { /* port 0: the others join the port the first one got */
            struct sockaddr_storage got;
            socklen_t gl;
            if (tl_handle_sockname(loops[0], out[0], &got, &gl) == 0 && gl == addrlen)
                memcpy(&a, &got, addrlen);
        }
    }
    if (err < 0) {
        tl__undo_handles(loops, made, out);
        return err;
    }
    uint32_t hi;
    err = tl__handle_lookup(loops[0], out[0], &hi);
    /* Attached once, to any member, after all are bound: the program is the group's. */
    *steer_err = err < 0 ? err : attach_cid_steer(loops, n, &c, loops[0]->h[hi].fd);
    return 0;
}

int tl_route_udp_cid_adopt(tl_loop **loops, int n, const int *fds, int nfds,
                           const tl_cid_steer *cfg, tl_handle *out, int *steer_err) {
    tl_cid_steer c;
    if (n <= 0 || n > TL_CID_STEER_MAX_LOOPS || nfds < 1 || nfds > n || resolve_cfg(cfg, &c) < 0) {
        for (int i = 0; i < nfds; i++)
            close(fds[i]);
        return -EINVAL;
    }
    *steer_err = 0;
    int err = 0, made = 0;
    for (; made < nfds && err == 0; made++)
        err = tl_udp_adopt(loops[made], fds[made], NULL, &out[made]);
    if (err < 0) {
        made--; /* the failed adoption closed its own */
        for (int i = made + 1; i < nfds; i++)
            close(fds[i]);
        tl__undo_handles(loops, made, out);
        return err;
    }
    if (n == nfds)
        return 0; /* the group and its program are the parent's, unchanged */
    /* More loops than the parent had: new members after its own, in loop
     * order, and the program again for the group's new size. */
    struct sockaddr_storage a;
    socklen_t al = sizeof a;
    err = tl_handle_sockname(loops[0], out[0], &a, &al);
    tl_udp_options o = {.reuse_port = TL_REUSE_PORT_DISTRIBUTE};
    while (made < n && err == 0)
        if ((err = tl_udp_open(loops[made], (struct sockaddr *)&a, al, &o, &out[made])) == 0)
            made++;
    if (err < 0) {
        tl__undo_handles(loops, made, out);
        return err;
    }
    uint32_t hi;
    err = tl__handle_lookup(loops[0], out[0], &hi);
    *steer_err = err < 0 ? err : attach_cid_steer(loops, n, &c, loops[0]->h[hi].fd);
    return 0;
}

/* ---- the loop-to-loop handoff ------------------------------------------------ */

int tl_udp_forward(tl_loop *from, const tl_completion *c, tl_loop *to, uint64_t token) {
    tl_udp_meta m;
    if (c->kind != TL_OP_UDP_RECV || c->res < 0 || tl_udp_meta_get(from, c, &m) < 0)
        return -EINVAL;
    uint32_t len = (uint32_t)c->res;
    tl_udp_datagram *d = malloc(sizeof *d + len);
    if (!d)
        return -ENOMEM;
    d->meta = m;
    d->len = len;
    memcpy(d->data, c->u.buf.data, len);
    return tl__loop_post_datagram(to, token, d); /* frees d on error */
}

void tl_udp_datagram_free(tl_udp_datagram *d) {
    free(d);
}

void tl__udp_free_forwarded(tl_loop *loop) {
    tl_cqueue *q = &loop->cq;
    for (uint32_t i = 0; i < q->len; i++) {
        tl_completion *c = &q->rec[(q->head + i) & (q->cap - 1)];
        if (c->kind == TL_OP_UDP_FORWARDED)
            free(c->u.msg.ptr);
    }
}
