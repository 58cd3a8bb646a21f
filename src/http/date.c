/* The Date header, cached per loop and formatted at most once per second. The
 * coarse realtime clock is enough: Date has a resolution of one second. */
#include "sws_http.h"

#include <stdio.h>
#include <string.h>

static const char wday[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
static const char mon[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

void sws_date_format(time_t t, char *out) {
    struct tm tm;
    gmtime_r(&t, &tm);
    /* Fields are bounded by gmtime_r; the casts tell the compiler so. */
    snprintf(out, 30, "%s, %02u %s %04u %02u:%02u:%02u GMT", wday[tm.tm_wday % 7],
             (unsigned)tm.tm_mday % 32u, mon[tm.tm_mon % 12],
             (unsigned)(tm.tm_year + 1900) % 10000u, (unsigned)tm.tm_hour % 24u,
             (unsigned)tm.tm_min % 60u, (unsigned)tm.tm_sec % 61u);
}

void sws_date_init(sws_date_cache *c) {
    memset(c, 0, sizeof(*c));
    c->sec = (time_t)-1;
    sws_date_refresh(c);
}

bool sws_date_refresh(sws_date_cache *c) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME_COARSE, &ts);
    if (ts.tv_sec == c->sec)
        return false;
    c->sec = ts.tv_sec;
    sws_date_format(ts.tv_sec, c->str);
    c->version++;
    return true;
}
