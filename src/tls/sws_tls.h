/* TLS for scalwsd on OpenSSL 3 through memory BIOs: the loop owns the socket
 * and its bytes, OpenSSL only turns ciphertext into plaintext and back, so the
 * same code serves epoll and io_uring and never blocks a loop.
 *
 * Three objects:
 * - sws_tls_keys: the session ticket keys, one set for the whole process,
 *   rotated by the control thread, read by every loop during handshakes.
 * - sws_tls_server: what one configuration builds: its certificates, the
 *   name table that picks one by the client's server name (SNI), one SSL_CTX
 *   per loop for the default certificate (each with its own session cache, so
 *   loops never share its lock) and one per other set of certificates. A
 *   reload builds a new one; connections already open keep the SSL_CTX they
 *   are on (OpenSSL counts its references), new handshakes get the new one.
 * - sws_tls_conn: one connection's engine: an SSL on two memory BIOs.
 *
 * Threads: a sws_tls_conn and the SSL_CTX of loop i belong to loop i's thread;
 * sws_tls_keys_rotate is the control thread's; the rest says so. */
#ifndef SWS_TLS_H
#define SWS_TLS_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tls_config.h"

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;
typedef struct bio_st BIO;

/* Why a connection failed, for /metrics (one counter each). */
typedef enum sws_tls_fail {
    SWS_TLS_FAIL_NONE = 0,
    SWS_TLS_FAIL_NOT_TLS,      /* the first bytes are no TLS record (plain HTTP, garbage) */
    SWS_TLS_FAIL_VERSION,      /* SSLv3, TLS 1.0/1.1 or another version not enabled */
    SWS_TLS_FAIL_NO_SHARED,    /* no cipher, group or ALPN protocol in common */
    SWS_TLS_FAIL_PROTOCOL,     /* any other malformed or unexpected message */
    SWS_TLS_FAIL_PEER_ALERT,   /* the peer sent a fatal alert */
    SWS_TLS_FAIL_TRUNCATED,    /* the peer closed without close_notify mid-handshake */
    SWS_TLS_FAIL_TIMEOUT,      /* the handshake did not finish within handshake_timeout */
    SWS_TLS_FAIL_UNKNOWN_NAME, /* unknown_name = refuse, and no certificate for its SNI */
    SWS_TLS_FAIL_N
} sws_tls_fail;

const char *sws_tls_fail_name(sws_tls_fail f); /* metric label: "not_tls", "version", ... */

/* ---- ticket keys ---------------------------------------------------------------- */

typedef struct sws_tls_keys sws_tls_keys;

/* A key ring with a fresh current key. NULL on failure (no memory, no entropy). */
sws_tls_keys *sws_tls_keys_new(void);
void sws_tls_keys_free(sws_tls_keys *k);
/* Makes a new current key; the previous ones still decrypt (and their tickets
 * are renewed) for two more periods. Control thread; safe while loops handshake. */
int sws_tls_keys_rotate(sws_tls_keys *k);
uint64_t sws_tls_keys_rotations(const sws_tls_keys *k);

/* ---- per configuration ---------------------------------------------------------- */

typedef struct sws_tls_server sws_tls_server;

typedef struct sws_tls_info {
    const char *protocols; /* "TLSv1.2 TLSv1.3" */
    bool ktls_kernel;      /* the kernel has its tls module */
    bool ktls_live;        /* records sealed in the kernel: never with memory BIOs */
    bool ocsp;             /* a response is stapled (for one certificate at least) */
    bool tickets;
    uint32_t session_cache;
    int certs;           /* certificates served */
    size_t names;        /* names and wildcards they serve, each once */
    bool refuse_unknown; /* an unknown or absent SNI is refused, not served the default */
} sws_tls_info;

/* What a server is built from. */
typedef struct sws_tls_build {
    const sws_tls_config *cfg;
    const sws_tls_cert_config *certs; /* [tls]'s pair first when it has one, then [tls NAME]s */
    int ncerts;
    const char *file; /* the configuration file, for "file:line: " in messages; NULL none */
    int nloops;       /* contexts where handshakes start: one per loop */
    sws_tls_keys *keys;
    /* The server in use, on a reload: a certificate whose files are refused
     * keeps what it loaded (and the refusal is reported by
     * sws_tls_server_cert); NULL at start, where every certificate must load. */
    sws_tls_server *prev;
} sws_tls_build;

/* Loads every certificate and builds the contexts: one per loop for the
 * default certificate (each its own session cache), one for each other set of
 * certificates a name selects (an RSA and an ECDSA one for the same names are
 * one set). Any thread. NULL with one line in err ("file:line: [tls NAME]
 * cert /path: why") when the settings are refused, or without prev when a
 * certificate is; nothing is left behind. */
sws_tls_server *sws_tls_server_new(const sws_tls_build *b, char *err, size_t errlen);
/* A server like cur with one certificate loaded again from cc's files, or
 * added when no certificate of cc->name is there; the others keep what cur
 * loaded (no file is read again). For ACME, which hands over one certificate
 * at a time. NULL with err when cc is refused: cur serves on. */
sws_tls_server *sws_tls_server_replace(sws_tls_server *cur, const sws_tls_cert_config *cc,
                                       char *err, size_t errlen);
/* Drops this configuration's reference; the contexts live on while a
 * connection uses them, and the name table while a handshake does. */
void sws_tls_server_free(sws_tls_server *s);
void sws_tls_server_info(const sws_tls_server *s, sws_tls_info *out);
/* Whether this kernel has the tls module (/sys/module/tls). */
bool sws_tls_kernel_has_ktls(void);

/* One certificate of a server, for /status, the log and --print-config. */
typedef struct sws_tls_cert_info {
    const char *section;   /* "[tls]" or "[tls NAME]" */
    const char *file;      /* its cert */
    const char *key_type;  /* "ECDSA P-256", "RSA 2048"; "" when never loaded */
    const char *not_after; /* "2027-01-31T12:00:00Z" */
    int64_t not_after_s;
    int nnames;
    const char *const *names; /* "a.example", "*.example.org" */
    bool is_default;          /* served for an unknown or absent SNI */
    bool ocsp;
    bool served;         /* false: refused, and nothing loaded before to fall back on */
    const char *refused; /* why its files were refused by this load; "" when they were not */
} sws_tls_cert_info;

int sws_tls_server_certs(const sws_tls_server *s);
void sws_tls_server_cert(const sws_tls_server *s, int i, sws_tls_cert_info *out);

/* "a.example *.a.example (ECDSA P-256, notAfter 2027-01-31T12:00:00Z)" for the
 * PEM certificate at path (--print-config), or why it cannot be read: 0 or a
 * negative errno. */
int sws_tls_cert_describe(const char *path, char *out, size_t len);

/* ---- per connection ------------------------------------------------------------- */

typedef struct sws_tls_conn {
    SSL *ssl;
    BIO *in;  /* network -> OpenSSL: sws_tls_feed writes here */
    BIO *out; /* OpenSSL -> network: sws_tls_take reads here */
    bool established;
    bool peer_closed; /* close_notify received */
    bool failed;
    bool notified; /* our close_notify is queued */
    bool seen;     /* some input arrived; first is its first byte */
    uint8_t first;
    uint8_t fail;      /* sws_tls_fail */
    bool sni_known;    /* the client's server name selected a certificate */
    bool refused_name; /* ... or none, and unknown_name = refuse */
    /* A TLS-ALPN-01 validation (RFC 8737): it carries no application data,
     * the connection closes once the handshake is done. */
    bool acme_challenge;
    bool refused_alpn; /* acme-tls/1 offered with no challenge pending for the name */
    /* Server side, until the handshake is done: the names to choose from (a
     * reference). */
    sws_tls_server *srv;
} sws_tls_conn;

/* Results besides byte counts. */
#define SWS_TLS_WANT 0 /* nothing (more) for now: feed input, or send output first */
#define SWS_TLS_EOF (-ESHUTDOWN)

/* A server-side engine of s, started on the context of loop (the default
 * certificate's; the client's server name may choose another). 0 or -ENOMEM. */
int sws_tls_conn_init(sws_tls_conn *t, sws_tls_server *s, int loop);
void sws_tls_conn_free(sws_tls_conn *t);

/* Moves the handshake on with what was fed: 1 once it is done, SWS_TLS_WANT
 * (send the output, feed more), or -EPROTO as sws_tls_read. A client calls it
 * until 1 before it writes; sws_tls_read calls it too. */
int sws_tls_handshake(sws_tls_conn *t);

/* Gives ciphertext received from the peer (all of it is taken). 0 or -ENOMEM. */
int sws_tls_feed(sws_tls_conn *t, const void *data, size_t len);

/* Moves the handshake on and decrypts: > 0 plaintext bytes into buf, SWS_TLS_WANT
 * when nothing more can be had from what was fed, SWS_TLS_EOF after the peer's
 * close_notify, or -EPROTO when the connection failed (t->fail says why; an
 * alert may wait in the output: send it, then close). */
int sws_tls_read(sws_tls_conn *t, void *buf, size_t cap);

/* Encrypts up to len plaintext bytes: the count taken (> 0), SWS_TLS_WANT while
 * the handshake is not done, or -EPROTO. The records wait in the output. */
int sws_tls_write(sws_tls_conn *t, const void *data, size_t len);

/* Ciphertext waiting to be sent (handshake records, application data, alerts). */
size_t sws_tls_pending(const sws_tls_conn *t);
/* Copies up to cap bytes of it into buf and drops them from the engine. */
size_t sws_tls_take(sws_tls_conn *t, void *buf, size_t cap);

/* Queues our close_notify (once). 0, or -EPROTO if the connection failed. */
int sws_tls_close_notify(sws_tls_conn *t);

/* Marks a handshake that ran out of time (counted as SWS_TLS_FAIL_TIMEOUT). */
void sws_tls_timeout(sws_tls_conn *t);

/* The peer closed the socket (EOF) at a point where close_notify was owed. */
void sws_tls_peer_eof(sws_tls_conn *t);

/* After the handshake: "TLSv1.3", the ALPN protocol ("" if none), resumed. */
const char *sws_tls_version(const sws_tls_conn *t);
bool sws_tls_resumed(const sws_tls_conn *t);
/* After the handshake: ALPN chose h2. */
bool sws_tls_alpn_h2(const sws_tls_conn *t);

#endif
