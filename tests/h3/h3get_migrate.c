/* h3get --migrate and --nat-rebind: the connection moves to a new UDP
 * socket after every N answers, ngtcp2 told (a migration) or not (a NAT
 * that changed the port). */
#include "h3get.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

unsigned port_of(const struct sockaddr_storage *a) {
    return ntohs(a->ss_family == AF_INET6 ? ((const struct sockaddr_in6 *)a)->sin6_port
                                          : ((const struct sockaddr_in *)a)->sin_port);
}

int path_validation_cb(ngtcp2_conn *q, uint32_t flags, const ngtcp2_path *path,
                       ngtcp2_path_validation_result res, void *ud) {
    (void)q;
    (void)flags;
    client *c = ud;
    const struct sockaddr *a = path->local.addr;
    unsigned port = ntohs(a->sa_family == AF_INET6 ? ((const struct sockaddr_in6 *)a)->sin6_port
                                                   : ((const struct sockaddr_in *)a)->sin_port);
    if (!c->quiet)
        printf("path %u %s\n", port,
               res == NGTCP2_PATH_VALIDATION_RESULT_SUCCESS   ? "validated"
               : res == NGTCP2_PATH_VALIDATION_RESULT_FAILURE ? "failed"
                                                              : "aborted");
    return 0;
}

/* A new socket to the server in place of the old one (closed: what the
 * server still sends there is lost, and QUIC recovers it). A migration
 * waits while ngtcp2 cannot start one yet (the handshake not confirmed, no
 * spare connection ID of the server's): the next turn tries again. */
void rebind(client *c) {
    int fd = socket(c->remote.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&c->remote, c->remote_len) != 0)
        die("rebind: %s", strerror(errno));
    struct sockaddr_storage local;
    socklen_t local_len = sizeof(local);
    if (getsockname(fd, (struct sockaddr *)&local, &local_len) != 0)
        die("rebind: getsockname: %s", strerror(errno));
    if (!c->rebind_nat) {
        ngtcp2_path path = {{(struct sockaddr *)&local, local_len},
                            {(struct sockaddr *)&c->remote, c->remote_len},
                            NULL};
        int rc = ngtcp2_conn_initiate_immediate_migration(c->q, &path, now_ns());
        if (rc == NGTCP2_ERR_INVALID_STATE || rc == NGTCP2_ERR_CONN_ID_BLOCKED) {
            close(fd);
            return;
        }
        if (rc != 0)
            die("ngtcp2_conn_initiate_immediate_migration: %s", ngtcp2_strerror(rc));
        memcpy(&c->local, &local, local_len);
        c->local_len = local_len;
    }
    close(c->fd);
    c->fd = fd;
    c->rebinds++;
    c->rebind_at += c->rebind_every;
    if (!c->quiet)
        printf("rebind %d %u %u\n", c->rebinds, c->fd_port, port_of(&local));
    c->fd_port = port_of(&local);
}
