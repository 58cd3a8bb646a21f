/* Between the transport's two files, nothing outside transport/ includes it:
 * conn.c (a connection's phases, receive, held input, write) and conn_tls.c
 * (the TLS pump). Loop thread only. */
#ifndef SWS_CONN_TLS_H
#define SWS_CONN_TLS_H

#include "conn.h"

/* conn.c: the answer in output is the last (linger: a half-close and a drain
 * after it), and the connection's multishot receive armed again. */
void conn_last(sws_worker *w, sws_conn *c, bool linger);
void conn_arm_recv(sws_worker *w, sws_conn *c);

/* conn_tls.c: a read's ciphertext in; after a write, the stash and the
 * engine again; the answers sealed and written (true: a write is in flight or
 * the connection closed); the engine failed; the engine and its buffers freed
 * (only once no write can be in flight). */
void conn_tls_input(sws_worker *w, sws_conn *c, const char *data, uint32_t len);
void conn_tls_resume(sws_worker *w, sws_conn *c);
bool conn_tls_flush(sws_worker *w, sws_conn *c);
void conn_tls_failed(sws_worker *w, sws_conn *c);
void conn_tls_release(sws_worker *w, sws_conn *c);

#endif
