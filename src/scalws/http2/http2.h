/* HTTP/2 on a connection (session.c), as http1.h is HTTP/1.1: the table the
 * transport reaches it through once a connection's preface or ALPN chose it. */
#ifndef SWS_HTTP2_H
#define SWS_HTTP2_H

#include "conn.h"

extern const sws_conn_proto sws_http2_conn;

#endif
