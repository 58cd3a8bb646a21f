/* What scalwsd tells the world once it serves: the addresses its listeners
 * really bound (port 0 asks the kernel for one, so only the socket knows) and
 * the --ready-file, written whole or not at all (temp file + rename), so a
 * reader never sees half of it. */
#include "sws.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int sws_sockname_text(int fd, char *out, size_t cap) {
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    char host[INET6_ADDRSTRLEN];
    if (cap)
        out[0] = '\0';
    if (fd < 0 || getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
        return fd < 0 ? -EBADF : -errno;
    if (ss.ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;
        inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
        snprintf(out, cap, "%s:%u", host, ntohs(a->sin_port));
    } else if (ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&ss;
        inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
        snprintf(out, cap, "[%s]:%u", host, ntohs(a->sin6_port));
    } else {
        return -EAFNOSUPPORT;
    }
    return 0;
}

int sws_file_commit(FILE *f, const char *tmp, const char *path) {
    int rc = 0;
    if (fflush(f) != 0 || fsync(fileno(f)) < 0)
        rc = -errno;
    if (fclose(f) != 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && rename(tmp, path) < 0)
        rc = -errno;
    if (rc < 0)
        unlink(tmp);
    return rc;
}

int sws_ready_write(const char *path, const sws_server *s) {
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid()) >= sizeof(tmp))
        return -ENAMETOOLONG;
    FILE *f = fopen(tmp, "we");
    if (!f)
        return -errno;
    /* One line per listener, in the configuration's order, as its listen
     * line would be written with the address it bound: the first is the
     * first listener's, which readers of one port take (ready_port). */
    for (int li = 0; li < s->nlisteners; li++) {
        const sws_listener_cfg *l = &s->cfg->listeners[li];
        fprintf(f, "listen %s%s%s%s\n", s->listeners[li].text,
                l->tls    ? " tls"
                : l->quic ? " quic"
                          : "",
                l->name[0] ? " name=" : "", l->name);
    }
    if (s->admin_text[0])
        fprintf(f, "admin %s\n", s->admin_text);
    fprintf(f, "pid %ld\n", (long)getpid());
    return sws_file_commit(f, tmp, path);
}
