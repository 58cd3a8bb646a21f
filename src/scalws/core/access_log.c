/* The access log's lines (access_log.h): the route's format rendered into
 * the loop's buffer, one write(2) per line. */
#include "access_log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "route.h"

#define TIMES ((1u << SWS_LV_TIME_LOCAL) | (1u << SWS_LV_TIME_ISO8601))

void sws_access_log(sws_worker *w, sws_log_line *l) {
    const sws_route *r = w->log_route;
    /* A line not routed is written as the default route's, named "-". */
    const sws_route *as = r ? r : &w->cfg->routes->r[0];
    int fd = sws_log_files_fd(w->logs, as);
    if (fd < 0)
        return; /* access_log = off for this route */
    const sws_log_format *f = &as->log_fmt;
    if ((f->uses & TIMES) && w->clf_sec != w->date.sec) {
        struct tm tm;
        gmtime_r(&w->date.sec, &tm);
        strftime(w->clf_date, sizeof(w->clf_date), "%d/%b/%Y:%H:%M:%S +0000", &tm);
        strftime(w->iso_date, sizeof(w->iso_date), "%Y-%m-%dT%H:%M:%S+00:00", &tm);
        w->clf_sec = w->date.sec;
    }
    l->time_local = w->clf_date;
    l->time_iso8601 = w->iso_date;
    if (f->uses & (1u << SWS_LV_MSEC)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        l->now_ms = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
    }
    l->route = r ? r->name : NULL;
    l->upstream = w->log_up_addr;
    l->upstream_us = w->log_up_addr ? w->log_up_us : -1;
    size_t n = sws_log_render(f, l, w->log_buf);
    /* One write: O_APPEND puts it whole at the end of a regular file. A
     * short write (a full disk) leaves the rest unwritten, never split, and
     * is counted: one stderr line per answer would flood the journal. */
    ssize_t rc;
    do
        rc = write(fd, w->log_buf, n);
    while (rc < 0 && errno == EINTR);
    if (rc != (ssize_t)n)
        SWS_ADD(w->ctr.log_failures, 1);
}

void sws_access_log_parsed(sws_worker *w, const char *peer, const sws_http_parser *p, int status,
                           uint64_t bytes, bool secure, uint32_t start_ms) {
    const sws_http_request *r = &p->req;
    const char *f = r->log_fields;
    sws_log_line l = {
        .peer = peer,
        .request = f ? f + SWS_HTTP_LOG_LINE : NULL,
        .request_len = r->line_len,
        .referer = f ? f + SWS_HTTP_LOG_REFERER : NULL,
        .referer_len = r->referer_len,
        .user_agent = f ? f + SWS_HTTP_LOG_UA : NULL,
        .user_agent_len = r->user_agent_len,
        .host = r->host,
        .host_len = r->host_len,
        .status = status,
        .bytes = bytes,
        .secure = secure,
        .elapsed_ms = (uint32_t)tl_loop_now(w->loop) - start_ms,
    };
    sws_access_log(w, &l);
}

void sws_access_log_switch(sws_worker *w, sws_log_files *s) {
    if (s && s->routes != w->cfg->routes) {
        sws_log_files_unref(s);
        return;
    }
    sws_log_files_unref(w->logs);
    w->logs = s;
}

/* An IPv4 address as text without inet_ntop, whose sprintf was a third of
 * a log line's cost (once per line, and per proxied request). */
static void ipv4_text(const struct in_addr *a, char *out, size_t cap) {
    const unsigned char *b = (const unsigned char *)&a->s_addr;
    char tmp[16], *o = tmp;
    for (int i = 0; i < 4; i++) {
        unsigned v = b[i];
        if (v >= 100)
            *o++ = (char)('0' + v / 100);
        if (v >= 10)
            *o++ = (char)('0' + v / 10 % 10);
        *o++ = (char)('0' + v % 10);
        *o++ = i < 3 ? '.' : '\0';
    }
    if ((size_t)(o - tmp) <= cap)
        memcpy(out, tmp, (size_t)(o - tmp));
}

void sws_peer_name(tl_loop *loop, tl_handle h, char *out, size_t cap) {
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    out[0] = '\0';
    if (tl_handle_peername(loop, h, &ss, &sl) == 0) {
        if (ss.ss_family == AF_INET)
            ipv4_text(&((struct sockaddr_in *)&ss)->sin_addr, out, cap);
        else if (ss.ss_family == AF_INET6)
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, out, (socklen_t)cap);
    }
    if (!out[0] && cap > 1)
        strcpy(out, "-");
}
