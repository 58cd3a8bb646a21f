/* The client side of scalwsd's TLS: what the reverse proxy speaks to an
 * upstream with [proxy] tls = on. One sws_tls_client per proxy route, built
 * from its tls_ca and tls_verify keys when the configuration is checked and
 * kept for the server's life (those keys need a restart); its SSL_CTX is
 * shared by every loop (SSL_new only takes a reference, and a client keeps no
 * session cache to contend on). A connection is the same sws_tls_conn engine
 * on memory BIOs as the server side's, started in connect state with the name
 * to send as SNI and to verify the certificate against.
 *
 * Threads: sws_tls_client_new/free are the control thread's; the context may
 * be used by any thread (loops, the health check thread) in between. */
#ifndef SWS_TLS_CLIENT_H
#define SWS_TLS_CLIENT_H

#include "sws_tls.h"

typedef struct sws_tls_client sws_tls_client;
typedef struct ssl_session_st SSL_SESSION;

/* ca_file: PEM roots to trust ("" or NULL: the system's default paths).
 * verify false: any certificate is accepted (the name is still sent as SNI).
 * NULL with one line in err ("tls_ca /path: why") on failure. */
sws_tls_client *sws_tls_client_new(const char *ca_file, bool verify, char *err, size_t errlen);
void sws_tls_client_free(sws_tls_client *c);
SSL_CTX *sws_tls_client_ctx(const sws_tls_client *c);

/* Points ssl at name: SNI for a host name (never for an IP literal, RFC 6066
 * 3), and the name or address the certificate must carry when verifying.
 * name "" or NULL: neither. 0, or -EINVAL when OpenSSL refuses the name. */
int sws_tls_client_name(SSL *ssl, const char *name);

/* A client engine on c's context for the server called name, ready for
 * sws_tls_handshake (its first call queues the ClientHello). 0, -ENOMEM or
 * -EINVAL (a name OpenSSL refuses).
 *
 * slot (NULL: none) is where sessions for this server are kept, by the
 * caller, for as long as the engine lives: the engine offers the session in
 * it to resume, and each new one the server gives (a TLS 1.3 ticket, after
 * the handshake) replaces it. A slot belongs to one thread (a loop's pool)
 * and one server name, so a session is only offered where it was verified. */
int sws_tls_conn_init_client(sws_tls_conn *t, const sws_tls_client *c, const char *name,
                             SSL_SESSION **slot);
/* Frees what a slot holds. */
void sws_tls_client_slot_free(SSL_SESSION **slot);

/* Why the peer's certificate was refused ("certificate has expired", "ok"),
 * for logs. */
const char *sws_tls_verify_error(const sws_tls_conn *t);

#endif
