/* The start-up that sol and solproxy share: an IPv4 address from the command
 * line, the ring of provided receive buffers, and the ready file (the format
 * of scalwsd's --ready-file) or stdout naming the port. Bench only. */
#ifndef SOL_SETUP_H
#define SOL_SETUP_H

#include <liburing.h>
#include <netinet/in.h>

/* "A.B.C.D:PORT" into *sa: 0, or -1 for anything else. */
int sol_parse_addr(const char *s, struct sockaddr_in *sa);

/* nbuf buffers of bufsz bytes (nbuf a power of two) in *bufs, handed to the
 * kernel as buffer group bgid through the ring *br: 0 or a negative errno. */
int sol_buf_ring_setup(struct io_uring *ring, unsigned nbuf, unsigned bufsz, unsigned short bgid,
                       struct io_uring_buf_ring **br, char **bufs);

/* "prog: listening on 127.0.0.1:PORT, ring MODE" on stderr, then the ready
 * file renamed into place whole (listen, ring and pid lines), or the listen
 * line on stdout without one: 0, or -1 (said on stderr). */
int sol_announce(const char *prog, const char *ready, unsigned port, const char *mode);

#endif
