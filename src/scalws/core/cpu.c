/* CPU discovery for the auto loop count and for pinning. The cgroup v2 quota is
 * found through /proc/self/cgroup ("0::/path") under /sys/fs/cgroup or, on a
 * hybrid hierarchy, /sys/fs/cgroup/unified; a missing file means no quota. */
#include "cpu.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sws_cpu_max_parse(const char *text) {
    char q[32];
    long long period = 0;
    if (sscanf(text, "%31s %lld", q, &period) < 1)
        return 0;
    if (strcmp(q, "max") == 0)
        return 0;
    char *e;
    long long quota = strtoll(q, &e, 10);
    if (*e || quota <= 0)
        return 0;
    if (period <= 0)
        period = 100000;
    return (int)((quota + period - 1) / period);
}

static int read_file(const char *path, char *buf, size_t len) {
    FILE *f = fopen(path, "r");
    if (!f)
        return -errno;
    size_t n = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[n] = '\0';
    return (int)n;
}

static int cgroup_quota(void) {
    char cg[4096], path[4352], text[128];
    if (read_file("/proc/self/cgroup", cg, sizeof(cg)) < 0)
        return 0;
    char *line = strstr(cg, "0::");
    if (line != cg && (!line || line[-1] != '\n'))
        return 0;
    char *rel = line + 3, *nl = strchr(rel, '\n');
    if (nl)
        *nl = '\0';
    if (strcmp(rel, "/") == 0)
        rel = "";
    static const char *const roots[] = {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"};
    for (int r = 0; r < 2; r++) {
        /* The quota of any ancestor binds too: take the smallest on the path. */
        int best = 0;
        char sub[4096];
        snprintf(sub, sizeof(sub), "%s", rel);
        for (;;) {
            snprintf(path, sizeof(path), "%s%s/cpu.max", roots[r], sub);
            if (read_file(path, text, sizeof(text)) > 0) {
                int q = sws_cpu_max_parse(text);
                if (q > 0 && (best == 0 || q < best))
                    best = q;
            }
            char *slash = strrchr(sub, '/');
            if (!slash)
                break;
            *slash = '\0';
        }
        if (best)
            return best;
    }
    return 0;
}

int sws_cpus_probe(sws_cpus *out) {
    memset(out, 0, sizeof(*out));
    if (sched_getaffinity(0, sizeof(out->mask), &out->mask) < 0)
        return -errno;
    for (int i = 0; i < CPU_SETSIZE; i++)
        if (CPU_ISSET(i, &out->mask))
            out->list[out->in_mask++] = i;
    out->quota_cpus = cgroup_quota();
    out->available = out->in_mask;
    if (out->quota_cpus > 0 && out->quota_cpus < out->available)
        out->available = out->quota_cpus;
    if (out->available < 1)
        out->available = 1;
    return 0;
}
