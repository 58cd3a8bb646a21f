/* h3get --resume and --reconnect: a second connection, offering the first
 * one's TLS session, or taking the requests a GOAWAY left unsent. */
#include "h3get.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void wait_for(const char *path, double timeout) {
    fflush(stdout);
    uint64_t until = now_ns() + (uint64_t)(timeout * 1e9);
    struct stat sb;
    while (stat(path, &sb) != 0) {
        if (now_ns() >= until)
            die("%s: not there within %g s", path, timeout);
        poll(NULL, 0, 20);
    }
}

/* --reconnect: the requests the server's GOAWAY left unsent or rejected
 * (not processed: RFC 9114 5.2) on a new connection, their answers back in
 * c's table; after a graceful close (H3_NO_ERROR, or APPLICATION_ERROR
 * before the handshake was confirmed) without a GOAWAY, GET and HEAD ones
 * in flight too, as idempotent requests may be (RFC 9110 9.2.2).
 * The other requests must all have been answered: one that failed
 * otherwise is no reason to send anything again. 0 when every request of c
 * is answered now, else run()'s. */
int reconnect(client *c, struct addrinfo *ai, bool insecure, const char *cafile, double timeout) {
    int left = 0;
    bool idempotent = strcmp(c->method, "GET") == 0 || strcmp(c->method, "HEAD") == 0;
    for (int i = 0; i < c->nreq; i++) {
        const req *r = &c->reqs[i];
        bool unprocessed = r->rejected || (c->goaway && r->sid >= c->goaway_id) ||
                           (c->graceful_close && idempotent);
        if (r->failed || (r->started && !r->done && !unprocessed))
            return 1;
        left += !r->done;
    }
    if (!(c->goaway || c->graceful_close) || !left)
        return left ? 1 : 0;
    client n = {.method = c->method,
                .parallel = c->parallel,
                .authority = c->authority,
                .sni = c->sni,
                .data = c->data,
                .data_len = c->data_len,
                .show_fields = c->show_fields,
                .quiet = c->quiet,
                .reconnect = true,
                .pause_ns = c->pause_ns,
                .nreq = left};
    if (!(n.reqs = calloc((size_t)left, sizeof(*n.reqs))))
        die("out of memory");
    for (int i = 0, j = 0; i < c->nreq; i++)
        if (!c->reqs[i].done)
            n.reqs[j++] = (req){.path = c->reqs[i].path,
                                .index = c->reqs[i].index,
                                .hash = 14695981039346656037ull,
                                .body_cap = c->reqs[i].body_cap};
    for (int j = 0; j < left; j++)
        if (n.reqs[j].body_cap && !(n.reqs[j].body = malloc(n.reqs[j].body_cap)))
            die("out of memory");
    if (!c->quiet)
        printf("reconnect %d\n", left);
    connect_to(&n, ai);
    ngtcp2_connection_close_error_default(&n.err);
    tls_init(&n, insecure, cafile, NULL);
    quic_init(&n);
    int rc = run(&n, timeout);
    for (int j = 0; j < left; j++) {
        req *to = &c->reqs[n.reqs[j].index], *from = &n.reqs[j];
        free(to->body);
        *to = *from;
        from->body = NULL;
    }
    c->goaway = n.goaway;
    c->goaway_id = n.goaway_id;
    c->graceful_close = n.graceful_close;
    conn_free(&n);
    return rc;
}

int resume_run(client *c, const resume_args *a) {
    /* The ticket the server sent after its handshake, offered to the
     * second address (another loop's endpoint, say). */
    gnutls_datum_t session = {NULL, 0};
    if (gnutls_session_get_data2(c->tls, &session) != 0)
        die("no session to resume");
    /* What 0-RTT may count on: the first server's transport parameters. */
    ngtcp2_transport_params tp = *ngtcp2_conn_get_remote_transport_params(c->q);
    if (a->after)
        wait_for(a->after, a->timeout);
    client c2 = {.method = c->method,
                 .parallel = c->parallel,
                 .authority = c->authority,
                 .sni = a->sni ? a->sni : c->sni,
                 .data = c->data,
                 .data_len = c->data_len,
                 .show_fields = c->show_fields,
                 .quiet = c->quiet,
                 .early = a->early};
    conn_free(c);
    char *host;
    struct addrinfo *ai2 = resolve(a->hostport, &host);
    requests_init(&c2, a->paths, a->npaths, a->repeat, false);
    connect_to(&c2, ai2);
    freeaddrinfo(ai2);
    ngtcp2_connection_close_error_default(&c2.err);
    tls_init(&c2, a->insecure, a->cafile, &session);
    gnutls_free(session.data);
    quic_init(&c2);
    if (a->early && early_start(&c2, &tp) != 0)
        die("cannot make the 0-RTT requests");
    int rc = run(&c2, a->timeout);
    conn_free(&c2);
    return rc;
}
