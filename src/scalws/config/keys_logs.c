/* The custom keys of files the server writes and what it writes in them:
 * access_log, pid_file and log_format in [server], a route's own access_log
 * and log_format (log_format.c compiles a format). */
#include "keys.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* A file for a log or the pid: one line; "off" is none. */
static int log_path(char *dst, size_t cap, const char *v, bool off_ok, char *why, size_t len) {
    if (strlen(v) >= cap || strpbrk(v, "\r\n")) {
        snprintf(why, len, "bad file name (one line, at most %zu bytes)", cap - 1);
        return -EINVAL;
    }
    snprintf(dst, cap, "%s", strcmp(v, "off") == 0 && !off_ok ? "" : v);
    return 0;
}
int sws_key_parse_access_log(sws_config *c, const char *v, char *why, size_t len) {
    return log_path(c->access_log, sizeof(c->access_log), v, false, why, len);
}
void sws_key_format_access_log(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->access_log);
}
int sws_key_parse_pid_file(sws_config *c, const char *v, char *why, size_t len) {
    return log_path(c->pid_file, sizeof(c->pid_file), v, false, why, len);
}
void sws_key_format_pid_file(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->pid_file);
}
int sws_key_parse_log_format(sws_config *c, const char *v, char *why, size_t len) {
    if (strlen(v) >= sizeof(c->log_format)) {
        snprintf(why, len, "format longer than %zu bytes", sizeof(c->log_format) - 1);
        return -EINVAL;
    }
    int rc = sws_log_format_compile(&c->log_fmt, v, why, len);
    if (rc == 0)
        snprintf(c->log_format, sizeof(c->log_format), "%s", v);
    return rc;
}
void sws_key_format_log_format(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->log_format);
}
/* A route's: "" until set, so that an unset one takes [server]'s. */
int sws_key_parse_route_access_log(sws_config *c, const char *v, char *why, size_t len) {
    if (!*v) {
        snprintf(why, len, "empty (want a file, or off)");
        return -EINVAL;
    }
    return log_path(c->rt.access_log, sizeof(c->rt.access_log), v, true, why, len);
}
void sws_key_format_route_access_log(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->rt.access_log);
}
int sws_key_parse_route_log_format(sws_config *c, const char *v, char *why, size_t len) {
    if (strlen(v) >= sizeof(c->rt.log_format)) {
        snprintf(why, len, "format longer than %zu bytes", sizeof(c->rt.log_format) - 1);
        return -EINVAL;
    }
    int rc = sws_log_format_compile(&c->rt.log_fmt, v, why, len);
    if (rc == 0)
        snprintf(c->rt.log_format, sizeof(c->rt.log_format), "%s", v);
    return rc;
}
void sws_key_format_route_log_format(const sws_config *c, char *out, size_t len) {
    snprintf(out, len, "%s", c->rt.log_format);
}
