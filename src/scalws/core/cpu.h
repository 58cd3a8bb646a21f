/* Which CPUs scalwsd may use: the affinity mask, reduced by a cgroup v2
 * cpu.max quota (rounded up). Read once at start-up. */
#ifndef SWS_CPU_H
#define SWS_CPU_H

#include <sched.h>

typedef struct sws_cpus {
    cpu_set_t mask;
    int in_mask;           /* CPUs in the affinity mask */
    int quota_cpus;        /* ceil(quota / period) from cpu.max; 0 when unlimited or unknown */
    int available;         /* min(in_mask, quota_cpus if set), at least 1 */
    int list[CPU_SETSIZE]; /* the mask's CPUs in order, in_mask of them */
} sws_cpus;

int sws_cpus_probe(sws_cpus *out);

/* ceil(quota/period) from the text of a cpu.max file ("max 100000" = 0). */
int sws_cpu_max_parse(const char *text);

#endif
