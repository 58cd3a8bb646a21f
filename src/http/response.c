/* Response heads and small error answers, written into the caller's buffer.
 * Every function here either writes a whole response or reports that it does
 * not fit (0): a half-written head never reaches the wire. */
#include "sws_http.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

const char *sws_http_reason(int status) {
    switch (status) {
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 204:
        return "No Content";
    case 206:
        return "Partial Content";
    case 301:
        return "Moved Permanently";
    case 302:
        return "Found";
    case 303:
        return "See Other";
    case 304:
        return "Not Modified";
    case 307:
        return "Temporary Redirect";
    case 308:
        return "Permanent Redirect";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 408:
        return "Request Timeout";
    case 413:
        return "Content Too Large";
    case 414:
        return "URI Too Long";
    case 416:
        return "Range Not Satisfiable";
    case 425:
        return "Too Early";
    case 429:
        return "Too Many Requests";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    case 505:
        return "HTTP Version Not Supported";
    default:
        return "Unknown";
    }
}

size_t sws_http_head(char *out, size_t cap, int status, const char *date, const char *content_type,
                     uint64_t content_length, bool keep_alive) {
    return sws_http_head_fields(out, cap, status, date, content_type, content_length, keep_alive,
                                NULL, 0);
}

size_t sws_http_head_fields(char *out, size_t cap, int status, const char *date,
                            const char *content_type, uint64_t content_length, bool keep_alive,
                            const char *fields, size_t fields_len) {
    int n = snprintf(out, cap,
                     "HTTP/1.1 %d %s\r\nServer: " SWS_HTTP_SERVER "\r\nDate: %s\r\n"
                     "Content-Type: %s\r\nContent-Length: %" PRIu64 "\r\n",
                     status, sws_http_reason(status), date, content_type, content_length);
    const char *tail = keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
    size_t tl = strlen(tail);
    if (n < 0 || (size_t)n + fields_len + tl >= cap)
        return 0;
    if (fields_len)
        memcpy(out + n, fields, fields_len);
    memcpy(out + (size_t)n + fields_len, tail, tl + 1);
    return (size_t)n + fields_len + tl;
}

/* The body of an error answer: "404 Not Found\n". */
static int error_body(char *body, size_t cap, int status) {
    return snprintf(body, cap, "%d %s\n", status, sws_http_reason(status));
}

size_t sws_http_error_body_len(int status) {
    char body[64];
    int bl = error_body(body, sizeof(body), status);
    return bl < 0 || (size_t)bl >= sizeof(body) ? 0 : (size_t)bl;
}

size_t sws_http_error(char *out, size_t cap, int status, const char *date, bool head) {
    return sws_http_error_fields(out, cap, status, date, head, NULL, 0);
}

size_t sws_http_error_fields(char *out, size_t cap, int status, const char *date, bool head,
                             const char *fields, size_t fields_len) {
    char body[64];
    int bl = error_body(body, sizeof(body), status);
    if (bl < 0 || (size_t)bl >= sizeof(body))
        return 0;
    size_t hl = sws_http_head_fields(out, cap, status, date, "text/plain", (uint64_t)bl, false,
                                     fields, fields_len);
    if (hl == 0)
        return 0;
    if (head)
        return hl;
    if (hl + (size_t)bl > cap)
        return 0;
    for (int i = 0; i < bl; i++)
        out[hl + (size_t)i] = body[i];
    return hl + (size_t)bl;
}
