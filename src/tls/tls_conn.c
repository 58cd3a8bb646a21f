/* One connection's TLS engine: an SSL between two memory BIOs. The caller
 * feeds what it received and takes what must be sent; nothing here reads or
 * writes a socket or waits, so a handshake is a few calls inside a loop turn.
 * Every failure is classified once (sws_tls_fail) and OpenSSL's per-thread
 * error queue is left empty, so one connection never blames the next. */
#include "tls_internal.h"

#include <errno.h>
#include <openssl/err.h>
#include <string.h>

static const char *const fail_names[SWS_TLS_FAIL_N] = {
    "none",       "not_tls",   "version", "no_shared",    "protocol",
    "peer_alert", "truncated", "timeout", "unknown_name",
};

const char *sws_tls_fail_name(sws_tls_fail f) {
    return (unsigned)f < SWS_TLS_FAIL_N ? fail_names[f] : "unknown";
}

/* The SSL on its two memory BIOs, either side (tls_internal.h). */
int sws_tls_conn_wrap(sws_tls_conn *t, SSL_CTX *ctx) {
    memset(t, 0, sizeof(*t));
    t->ssl = SSL_new(ctx);
    t->in = BIO_new(BIO_s_mem());
    t->out = BIO_new(BIO_s_mem());
    if (!t->ssl || !t->in || !t->out) {
        SSL_free(t->ssl);
        BIO_free(t->in);
        BIO_free(t->out);
        memset(t, 0, sizeof(*t));
        ERR_clear_error();
        return -ENOMEM;
    }
    /* An empty input BIO means "more later", never end of file: EOF is the
     * socket's to report (sws_tls_peer_eof). */
    BIO_set_mem_eof_return(t->in, -1);
    BIO_set_mem_eof_return(t->out, -1);
    SSL_set_bio(t->ssl, t->in, t->out); /* the SSL owns both from here */
    return 0;
}

int sws_tls_conn_init(sws_tls_conn *t, sws_tls_server *s, int loop) {
    int rc = sws_tls_server_wrap(t, s, loop);
    if (rc == 0)
        SSL_set_accept_state(t->ssl);
    return rc;
}

/* The name table is needed until the ClientHello is answered: drop it then,
 * so that a long connection never holds a reloaded-away table. */
static void let_go(sws_tls_conn *t) {
    if (t->srv) {
        sws_tls_server_release(t->srv);
        t->srv = NULL;
    }
}

void sws_tls_conn_free(sws_tls_conn *t) {
    let_go(t);
    if (t->ssl) {
        /* A session is dropped from the cache when its SSL is freed without
         * a shutdown; a peer that closes TCP without close_notify after a good
         * handshake (most browsers and curl) must keep its session. */
        if (t->established && !t->failed)
            SSL_set_shutdown(t->ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
        SSL_free(t->ssl); /* and both BIOs; drops its SSL_CTX reference */
    }
    memset(t, 0, sizeof(*t));
}

int sws_tls_feed(sws_tls_conn *t, const void *data, size_t len) {
    if (!t->seen) {
        t->seen = true;
        t->first = len ? *(const unsigned char *)data : 0;
    }
    size_t n;
    while (len) {
        if (BIO_write_ex(t->in, data, len, &n) != 1) {
            ERR_clear_error();
            return -ENOMEM;
        }
        data = (const char *)data + n;
        len -= n;
    }
    return 0;
}

static int fail(sws_tls_conn *t, sws_tls_fail why) {
    if (!t->failed) {
        t->failed = true;
        t->fail = (uint8_t)why;
    }
    ERR_clear_error();
    return -EPROTO;
}

/* What OpenSSL's reason says, in our classes. A first byte other than 22
 * (handshake record) means the peer never spoke TLS: plain HTTP, a scanner. */
static sws_tls_fail classify(const sws_tls_conn *t) {
    unsigned long e = ERR_peek_error();
    int r = ERR_GET_REASON(e);
    if (!t->established && t->first != 22)
        return SWS_TLS_FAIL_NOT_TLS;
    if (t->refused_name)
        return SWS_TLS_FAIL_UNKNOWN_NAME;
    if (t->refused_alpn)
        return SWS_TLS_FAIL_NO_SHARED;
    if (ERR_GET_LIB(e) == ERR_LIB_SSL && r >= SSL_AD_REASON_OFFSET)
        return SWS_TLS_FAIL_PEER_ALERT;
    switch (r) {
    case SSL_R_UNSUPPORTED_PROTOCOL:
    case SSL_R_VERSION_TOO_LOW:
    case SSL_R_WRONG_VERSION_NUMBER:
    case SSL_R_UNSUPPORTED_SSL_VERSION:
        return SWS_TLS_FAIL_VERSION;
    case SSL_R_NO_SHARED_CIPHER:
    case SSL_R_NO_SHARED_GROUPS:
    case SSL_R_NO_SUITABLE_KEY_SHARE:
    case SSL_R_NO_APPLICATION_PROTOCOL:
    case SSL_R_NO_SUITABLE_SIGNATURE_ALGORITHM:
        return SWS_TLS_FAIL_NO_SHARED;
    case SSL_R_HTTP_REQUEST:
    case SSL_R_HTTPS_PROXY_REQUEST:
        return SWS_TLS_FAIL_NOT_TLS;
    }
    return SWS_TLS_FAIL_PROTOCOL;
}

/* SSL_get_error's answer to a failed call: would-block, clean close or failure. */
static int after(sws_tls_conn *t, int rc) {
    switch (SSL_get_error(t->ssl, rc)) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE: /* a memory BIO never fills; kept for completeness */
        ERR_clear_error();
        return SWS_TLS_WANT;
    case SSL_ERROR_ZERO_RETURN:
        t->peer_closed = true;
        ERR_clear_error();
        return SWS_TLS_EOF;
    default:
        return fail(t, classify(t));
    }
}

int sws_tls_handshake(sws_tls_conn *t) {
    if (t->failed)
        return -EPROTO;
    if (t->established)
        return 1;
    ERR_clear_error();
    int rc = SSL_do_handshake(t->ssl);
    if (rc == 1) {
        t->established = true;
        let_go(t);
        return 1;
    }
    return after(t, rc);
}

int sws_tls_read(sws_tls_conn *t, void *buf, size_t cap) {
    if (t->failed)
        return -EPROTO;
    if (t->peer_closed)
        return SWS_TLS_EOF;
    int rc = sws_tls_handshake(t);
    if (rc <= 0)
        return rc;
    size_t n = 0;
    ERR_clear_error();
    if (SSL_read_ex(t->ssl, buf, cap, &n) == 1)
        return (int)n;
    return after(t, 0);
}

int sws_tls_write(sws_tls_conn *t, const void *data, size_t len) {
    if (t->failed)
        return -EPROTO;
    if (!t->established)
        return SWS_TLS_WANT;
    if (len == 0)
        return 0;
    size_t n = 0;
    ERR_clear_error();
    if (SSL_write_ex(t->ssl, data, len, &n) == 1)
        return (int)n;
    int rc = after(t, 0);
    return rc == SWS_TLS_EOF ? -EPROTO : rc;
}

size_t sws_tls_pending(const sws_tls_conn *t) {
    return t->out ? BIO_ctrl_pending(t->out) : 0;
}

size_t sws_tls_take(sws_tls_conn *t, void *buf, size_t cap) {
    size_t n = 0;
    if (!t->out || !cap || BIO_ctrl_pending(t->out) == 0)
        return 0;
    if (BIO_read_ex(t->out, buf, cap, &n) != 1)
        n = 0;
    ERR_clear_error();
    return n;
}

int sws_tls_close_notify(sws_tls_conn *t) {
    if (t->failed)
        return -EPROTO;
    if (!t->established || t->notified)
        return 0;
    t->notified = true;
    ERR_clear_error();
    SSL_shutdown(t->ssl); /* 0: ours is queued; the peer's is not waited for */
    ERR_clear_error();
    return 0;
}

void sws_tls_timeout(sws_tls_conn *t) {
    if (!t->established)
        fail(t, SWS_TLS_FAIL_TIMEOUT);
}

void sws_tls_peer_eof(sws_tls_conn *t) {
    if (!t->established)
        fail(t, t->seen && t->first != 22 ? SWS_TLS_FAIL_NOT_TLS : SWS_TLS_FAIL_TRUNCATED);
}

const char *sws_tls_version(const sws_tls_conn *t) {
    return t->ssl ? SSL_get_version(t->ssl) : "";
}

bool sws_tls_resumed(const sws_tls_conn *t) {
    return t->ssl && SSL_session_reused(t->ssl);
}

bool sws_tls_alpn_h2(const sws_tls_conn *t) {
    const unsigned char *p = NULL;
    unsigned int n = 0;
    if (t->ssl)
        SSL_get0_alpn_selected(t->ssl, &p, &n);
    return n == 2 && p[0] == 'h' && p[1] == '2';
}
