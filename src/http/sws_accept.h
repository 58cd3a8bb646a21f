/* Accept-Encoding (RFC 9110 12.5.3): the q-value a request gives each coding
 * we can send, and the coding to answer with. A pure function of the field's
 * value (from the network: anything malformed counts against the coding, so
 * a client never gets a coding it may not have asked for). */
#ifndef SWS_ACCEPT_H
#define SWS_ACCEPT_H

#include <stddef.h>
#include <stdint.h>

/* The codings, as bits of an offer. 0 is identity (no coding). */
#define SWS_AE_GZIP 0x1u
#define SWS_AE_BR 0x2u

/* q-values in thousandths (0..1000); -1: the value does not name it. */
typedef struct sws_ae {
    int16_t gzip; /* "gzip" or "x-gzip" */
    int16_t br;
    int16_t identity;
    int16_t star; /* "*": every coding not named */
} sws_ae;

/* Reads an Accept-Encoding value (several field lines joined by ','). A
 * coding with a malformed q parameter (not 0[.ddd] or 1[.000]) counts as
 * q=0, as nginx reads it; a coding named twice keeps the last. */
void sws_ae_parse(const char *v, size_t len, sws_ae *q);

/* The coding to send among offered (SWS_AE_* bits): the one with the highest
 * q above 0, br when they tie; 0 (identity) when none is acceptable or the
 * value prefers identity (named, or through "*", with a higher q). When
 * identity is refused too (identity;q=0, or *;q=0 without identity) and no
 * offered coding is acceptable, identity is still the answer: RFC 9110
 * 12.5.3 lets a server send it rather than 415. */
unsigned sws_ae_choose(const sws_ae *q, unsigned offered);

/* Every offered coding the value accepts (q > 0, named or through "*"). */
unsigned sws_ae_acceptable(const sws_ae *q, unsigned offered);

#endif
