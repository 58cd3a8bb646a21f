/* Accept-Encoding (sws_accept.h): one pass over the value, no allocation;
 * every byte may be hostile, so every index is checked against len. */
#include "sws_accept.h"

#include <stdbool.h>
#include <strings.h>

static bool ows(char c) {
    return c == ' ' || c == '\t';
}

/* A qvalue: "0" [ "." 0*3DIGIT ] / "1" [ "." 0*3("0") ]; -1 when malformed. */
static int qvalue(const char *v, size_t len) {
    if (len == 0 || (v[0] != '0' && v[0] != '1'))
        return -1;
    int q = (v[0] - '0') * 1000;
    if (len == 1)
        return q;
    if (v[1] != '.' || len > 5)
        return -1;
    int scale = 100;
    for (size_t i = 2; i < len; i++, scale /= 10) {
        if (v[i] < '0' || v[i] > '9')
            return -1;
        q += (v[i] - '0') * scale;
    }
    return q > 1000 ? -1 : q;
}

/* The q of one element's parameters (after the coding, up to its ','): 1000
 * without a q parameter, 0 for a malformed one. */
static int params_q(const char *v, size_t len) {
    size_t i = 0;
    while (i < len) {
        while (i < len && (ows(v[i]) || v[i] == ';'))
            i++;
        size_t s = i;
        while (i < len && v[i] != ';')
            i++;
        size_t e = i;
        while (e > s && ows(v[e - 1]))
            e--;
        if (e - s >= 1 && (v[s] == 'q' || v[s] == 'Q')) {
            size_t k = s + 1;
            while (k < e && ows(v[k]))
                k++;
            if (k == e)
                return 0; /* a bare "q": malformed */
            if (v[k] == '=') {
                k++;
                while (k < e && ows(v[k]))
                    k++;
                int q = qvalue(v + k, e - k);
                return q < 0 ? 0 : q;
            }
        }
    }
    return 1000;
}

void sws_ae_parse(const char *v, size_t len, sws_ae *q) {
    *q = (sws_ae){-1, -1, -1, -1};
    size_t i = 0;
    while (i < len) {
        while (i < len && (ows(v[i]) || v[i] == ','))
            i++;
        size_t s = i;
        while (i < len && v[i] != ',' && v[i] != ';' && !ows(v[i]))
            i++;
        size_t nl = i - s;
        size_t ps = i;
        while (i < len && v[i] != ',')
            i++;
        if (nl == 0)
            continue;
        int16_t qv = (int16_t)params_q(v + ps, i - ps);
        const char *n = v + s;
        if ((nl == 4 && strncasecmp(n, "gzip", 4) == 0) ||
            (nl == 6 && strncasecmp(n, "x-gzip", 6) == 0))
            q->gzip = qv;
        else if (nl == 2 && strncasecmp(n, "br", 2) == 0)
            q->br = qv;
        else if (nl == 8 && strncasecmp(n, "identity", 8) == 0)
            q->identity = qv;
        else if (nl == 1 && n[0] == '*')
            q->star = qv;
    }
}

/* A coding's q: named, else through "*", else not acceptable. */
static int coding_q(int named, int star) {
    return named >= 0 ? named : star >= 0 ? star : 0;
}

unsigned sws_ae_acceptable(const sws_ae *q, unsigned offered) {
    unsigned ok = 0;
    if ((offered & SWS_AE_GZIP) && coding_q(q->gzip, q->star) > 0)
        ok |= SWS_AE_GZIP;
    if ((offered & SWS_AE_BR) && coding_q(q->br, q->star) > 0)
        ok |= SWS_AE_BR;
    return ok;
}

unsigned sws_ae_choose(const sws_ae *q, unsigned offered) {
    int best = 0;
    unsigned pick = 0;
    if (offered & SWS_AE_BR) {
        int b = coding_q(q->br, q->star);
        if (b > best) {
            best = b;
            pick = SWS_AE_BR;
        }
    }
    if (offered & SWS_AE_GZIP) {
        int g = coding_q(q->gzip, q->star);
        if (g > best) { /* strictly: br wins a tie */
            best = g;
            pick = SWS_AE_GZIP;
        }
    }
    /* identity, unnamed, is acceptable but never preferred to a coding the
     * client named; named (or through "*") it competes on its q. */
    int id = q->identity >= 0 ? q->identity : q->star;
    if (pick && id > best)
        return 0;
    return pick;
}
