/* The combined-format access log (access_log.h). */
#include "access_log.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

/* As nginx escapes log variables: '"', '\\', controls and bytes >= 0x7f as
 * \xHH, so that a client's bytes can neither end a field nor forge a line.
 * out holds 4 * n + 1 bytes; an empty value is "-". */
static const char *log_escape(char *out, const char *s, size_t n) {
    static const char hex[] = "0123456789ABCDEF";
    char *o = out;
    if (n == 0 || !s)
        return "-";
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x20 || ch >= 0x7f || ch == '"' || ch == '\\') {
            *o++ = '\\';
            *o++ = 'x';
            *o++ = hex[ch >> 4];
            *o++ = hex[ch & 15];
        } else {
            *o++ = (char)ch;
        }
    }
    *o = '\0';
    return out;
}

static size_t clamp(size_t n) {
    return n < SWS_HTTP_LOG_FIELD_MAX ? n : SWS_HTTP_LOG_FIELD_MAX;
}

void sws_access_log(sws_worker *w, const sws_log_line *l) {
    if (w->clf_sec != w->date.sec) {
        struct tm tm;
        gmtime_r(&w->date.sec, &tm);
        strftime(w->clf_date, sizeof(w->clf_date), "%d/%b/%Y:%H:%M:%S +0000", &tm);
        w->clf_sec = w->date.sec;
    }
    char req[4 * SWS_HTTP_LOG_FIELD_MAX + 1], ref[4 * SWS_HTTP_LOG_FIELD_MAX + 1],
        ua[4 * SWS_HTTP_LOG_FIELD_MAX + 1];
    /* The route's name last (route names are [A-Za-z0-9_.-]): "-" for a
     * request refused in its head, before it could be routed. */
    fprintf(w->access_log, "%s - - [%s] \"%s\" %d %llu \"%s\" \"%s\" %s\n", l->peer, w->clf_date,
            log_escape(req, l->request, clamp(l->request_len)), l->status,
            (unsigned long long)l->bytes, log_escape(ref, l->referer, clamp(l->referer_len)),
            log_escape(ua, l->user_agent, clamp(l->user_agent_len)),
            w->log_route ? w->log_route : "-");
}

void sws_access_log_parsed(sws_worker *w, const char *peer, const sws_http_parser *p, int status,
                           uint64_t bytes) {
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
        .status = status,
        .bytes = bytes,
    };
    sws_access_log(w, &l);
}

void sws_peer_name(tl_loop *loop, tl_handle h, char *out, size_t cap) {
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    out[0] = '\0';
    if (tl_handle_peername(loop, h, &ss, &sl) == 0) {
        if (ss.ss_family == AF_INET)
            inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, out, (socklen_t)cap);
        else if (ss.ss_family == AF_INET6)
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, out, (socklen_t)cap);
    }
    if (!out[0] && cap > 1)
        strcpy(out, "-");
}
