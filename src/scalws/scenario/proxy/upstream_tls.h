/* TLS to an upstream ([proxy] tls = on): the glue between a pooled upstream
 * connection (upstream.h) and its client engine (sws_tls_client.h, memory
 * BIOs). The loop keeps owning the socket: ciphertext received is fed to the
 * engine and the loop buffer given back at once (what is not decrypted yet
 * waits in the engine, the TLS twin of held buffers); plaintext is sealed into
 * a wire buffer lent from the pool while its write is in flight. So a pooled
 * idle TLS connection holds its SSL and no buffer of ours.
 *
 * Every function runs on the pool's loop. A connection's engine is made after
 * its connect (sws_up_tls_start) and freed with its slot (after the close
 * completion: a write in flight still owns the wire until then). */
#ifndef SWS_UPSTREAM_TLS_H
#define SWS_UPSTREAM_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "upstream.h"

/* Plaintext sealed per write, and decrypted per read (one record's worth). */
#define SWS_UP_TLS_PLAIN 16384
/* A wire buffer: one record of SWS_UP_TLS_PLAIN sealed, and room before it
 * for handshake records still waiting (a Finished, a key update). */
#define SWS_UP_TLS_WIRE (SWS_UP_TLS_PLAIN + 2048)

typedef struct sws_up_tls sws_up_tls;

/* The pool speaks TLS through client (owned by the route's table, which
 * outlives the instance; NULL: plaintext). Its decrypt scratch and wire
 * buffers are made here. 0 or -ENOMEM. */
int sws_up_tls_pool_init(sws_pool *p, const struct sws_tls_client *client);
void sws_up_tls_pool_free(sws_pool *p);
/* Gives back wire buffers beyond what the last second needed. */
void sws_up_tls_pool_trim(sws_pool *p);

/* After u's connect: an engine for the name its upstream is verified as
 * ([proxy] tls_name, else the host of the upstream as written, never its
 * resolved address), and the ClientHello queued. 0, -ENOMEM or -EINVAL. */
int sws_up_tls_start(sws_pool *p, sws_up_conn *u);
/* That name for upstream up of cfg (the health checks' too). */
void sws_up_tls_name(const sws_proxy_config *cfg, int up, char *out, size_t cap);

/* Moves the handshake on: 1 done, 0 waiting for the upstream, -EPROTO failed
 * (a verify failure, an alert, not TLS at all). */
int sws_up_tls_handshake(sws_up_conn *u);
bool sws_up_tls_established(const sws_up_conn *u);
/* A handshake failed: one line on stderr saying why (the certificate check's
 * reason when it refused), at most every 10 s per pool, so that a 502 storm
 * from a wrong CA writes a line, not a flood. route names the section. */
void sws_up_tls_log_failure(sws_pool *p, const sws_up_conn *u, const char *route);

/* Ciphertext received from the upstream. 0 or -ENOMEM. */
int sws_up_tls_feed(sws_up_conn *u, const void *data, size_t len);

/* Plaintext of the response into buf: > 0 bytes, SWS_TLS_WANT (nothing whole
 * to decrypt), SWS_TLS_EOF (the upstream's close_notify) or -EPROTO. */
int sws_up_tls_read(sws_up_conn *u, void *buf, size_t cap);

/* Bytes fed and not read yet: ciphertext, and the plaintext left of a record
 * read in part (the receive pauses when it is large). */
size_t sws_up_tls_backlog(const sws_up_conn *u);
/* Nothing at all is left in the engine, nor failed: a connection kept for
 * reuse must be clean. True without TLS. */
bool sws_up_tls_clean(const sws_up_conn *u);

/* Starts one write (SWS_T_UP_WRITE) unless one is in flight: what the engine
 * has to send (handshake records first), and once established up to
 * SWS_UP_TLS_PLAIN bytes of plain sealed after it. Returns the plaintext bytes
 * sealed (also in u->wlen: the caller's wpos moves by them when the write
 * completes), 0 when none, or a negative errno when the write cannot start. */
int sws_up_tls_send(sws_pool *p, sws_up_conn *u, const char *plain, uint32_t len);
/* u's write completed (whatever its result): the wire goes back. */
void sws_up_tls_written(sws_pool *p, sws_up_conn *u);

/* Before u's socket is closed: our close_notify, best effort. */
void sws_up_tls_close(sws_pool *p, sws_up_conn *u);
/* u's slot is being freed: the engine and any wire go. */
void sws_up_tls_free(sws_pool *p, sws_up_conn *u);

#endif
