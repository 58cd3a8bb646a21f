/* Validators and ranges (RFC 9110 8.8, 13, 14) and Accept-Encoding (12.5.3),
 * each a pure function of a field value and the file's size and mtime, so
 * that the scenario only picks the status. Field values come from the network:
 * every malformed one is treated as absent (or as no match), never trusted. */
#include "sws_static.h"

#include "sws_accept.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

size_t sws_static_etag(char *out, time_t mtime, uint64_t size) {
    return (size_t)snprintf(out, 40, "\"%llx-%llx\"", (unsigned long long)mtime,
                            (unsigned long long)size);
}

static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";

static int month(const char *s) {
    for (int m = 0; m < 12; m++)
        if (strncmp(s, months + 3 * m, 3) == 0)
            return m;
    return -1;
}

time_t sws_static_parse_date(const char *s, size_t len) {
    char b[64];
    if (len >= sizeof(b))
        return -1;
    memcpy(b, s, len);
    b[len] = '\0';
    struct tm tm = {0};
    char wd[16], mon[4], tz[4], extra;
    int d, y, H, M, S, n;
    /* IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT */
    if ((n = sscanf(b, "%15[A-Za-z], %2d %3s %4d %2d:%2d:%2d %3s%c", wd, &d, mon, &y, &H, &M, &S,
                    tz, &extra)) == 8 &&
        strlen(wd) == 3) {
        /* RFC 850: Sunday, 06-Nov-94 08:49:37 GMT */
    } else if ((n = sscanf(b, "%15[A-Za-z], %2d-%3s-%2d %2d:%2d:%2d %3s%c", wd, &d, mon, &y, &H, &M,
                           &S, tz, &extra)) == 8) {
        y += y < 70 ? 2000 : 1900;
    } else if ((n = sscanf(b, "%15[A-Za-z] %3s %2d %2d:%2d:%2d %4d%c", wd, mon, &d, &H, &M, &S, &y,
                           &extra)) == 7) {
        /* asctime: Sun Nov  6 08:49:37 1994 */
        strcpy(tz, "GMT");
    } else {
        return -1;
    }
    int m = month(mon);
    if (m < 0 || strcmp(tz, "GMT") != 0 || d < 1 || d > 31 || H > 23 || M > 59 || S > 60 ||
        y < 1970 || H < 0 || M < 0 || S < 0)
        return -1;
    tm.tm_year = y - 1900;
    tm.tm_mon = m;
    tm.tm_mday = d;
    tm.tm_hour = H;
    tm.tm_min = M;
    tm.tm_sec = S;
    return timegm(&tm);
}

static bool ows(char c) {
    return c == ' ' || c == '\t';
}

bool sws_static_inm_match(const char *v, size_t len, const char *etag) {
    size_t el = strlen(etag);
    size_t i = 0;
    while (i < len) {
        while (i < len && (ows(v[i]) || v[i] == ','))
            i++;
        if (i == len)
            break;
        if (v[i] == '*')
            return true;
        if (len - i >= 2 && v[i] == 'W' && v[i + 1] == '/')
            i += 2; /* weak comparison: W/"x" matches "x" */
        size_t s = i;
        if (i < len && v[i] == '"') {
            i++;
            while (i < len && v[i] != '"')
                i++;
            if (i < len)
                i++;
        } else {
            while (i < len && v[i] != ',')
                i++;
        }
        if (i - s == el && memcmp(v + s, etag, el) == 0)
            return true;
    }
    return false;
}

bool sws_static_if_range(const char *v, size_t len, const char *etag, time_t mtime) {
    while (len && ows(*v))
        v++, len--;
    while (len && ows(v[len - 1]))
        len--;
    if (len >= 1 && v[0] == '"') /* strong comparison only: a W/ tag never matches */
        return len == strlen(etag) && memcmp(v, etag, len) == 0;
    if (len >= 2 && v[0] == 'W' && v[1] == '/')
        return false;
    time_t t = sws_static_parse_date(v, len);
    return t >= 0 && t == mtime;
}

/* Digits into *out; false on none or overflow. */
static bool number(const char *v, size_t len, size_t *i, uint64_t *out) {
    size_t s = *i;
    uint64_t n = 0;
    while (*i < len && v[*i] >= '0' && v[*i] <= '9') {
        uint64_t dg = (uint64_t)(v[*i] - '0');
        if (n > UINT64_MAX / 10 || (n == UINT64_MAX / 10 && dg > UINT64_MAX % 10))
            return false;
        n = n * 10 + dg;
        (*i)++;
    }
    *out = n;
    return *i > s;
}

int sws_static_range(const char *v, size_t len, uint64_t size, uint64_t *first, uint64_t *last) {
    size_t i = 0;
    while (i < len && ows(v[i]))
        i++;
    if (len - i < 6 || strncasecmp(v + i, "bytes=", 6) != 0)
        return SWS_RANGE_NONE;
    i += 6;
    while (i < len && ows(v[i]))
        i++;
    uint64_t a = 0, b = 0;
    bool suffix = false, open_end = false;
    if (i < len && v[i] == '-') {
        i++;
        if (!number(v, len, &i, &b))
            return SWS_RANGE_NONE;
        suffix = true;
    } else {
        if (!number(v, len, &i, &a) || i == len || v[i] != '-')
            return SWS_RANGE_NONE;
        i++;
        if (!number(v, len, &i, &b))
            open_end = true;
    }
    while (i < len && ows(v[i]))
        i++;
    if (i != len)
        return SWS_RANGE_NONE; /* several ranges (or junk): the whole file */
    if (suffix) {
        if (b == 0 || size == 0)
            return SWS_RANGE_UNSATISFIABLE;
        *first = b >= size ? 0 : size - b;
        *last = size - 1;
        return SWS_RANGE_ONE;
    }
    if (!open_end && b < a)
        return SWS_RANGE_NONE; /* invalid: ignored (RFC 9110 14.1.1) */
    if (a >= size)
        return SWS_RANGE_UNSATISFIABLE;
    *first = a;
    *last = open_end || b >= size ? size - 1 : b;
    return SWS_RANGE_ONE;
}

unsigned sws_static_accept_encoding(const char *v, size_t len) {
    sws_ae q;
    sws_ae_parse(v, len, &q);
    unsigned ok = sws_ae_acceptable(&q, SWS_AE_GZIP | SWS_AE_BR);
    return (ok & SWS_AE_GZIP ? SWS_ENC_GZIP : 0) | (ok & SWS_AE_BR ? SWS_ENC_BR : 0);
}
