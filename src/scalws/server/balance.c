/* How scalwsd's loops share the accept beyond one listener per loop: the
 * CPU-steered reuse-port route and handoff with several acceptors, and what
 * /status, /metrics and the start line say about who accepts and who feeds
 * whom, with the imbalance index (busiest loop / mean). Start-up calls in here
 * once; afterwards only the control thread reads, and only atomics. */
#include "sws.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

bool sws_balance_accepts(const sws_server *s, sws_accept_route route, int i) {
    if (route != SWS_ACCEPT_HANDOFF)
        return route == SWS_ACCEPT_REUSE_PORT || route == SWS_ACCEPT_REUSE_PORT_CPU ||
               route == SWS_ACCEPT_EXCLUSIVE || route == SWS_ACCEPT_HERD;
    /* The first loop of each subset accepts for it, so an acceptor serves
     * its own connections too, as the single acceptor (loop 0) always has. */
    int k = s->cfg->acceptors < s->nloops ? s->cfg->acceptors : s->nloops;
    for (int a = 0; a < k; a++) {
        int first;
        if (tl_handoff_subset(s->nloops, k, a, &first) > 0 && first == i)
            return true;
    }
    return false;
}

/* A listener after the first under handoff: bound on the accepting loops
 * only (a group of them with SO_REUSEPORT), which feed their subsets
 * through the handoffs the first made. */
static int more_handoff(sws_server *s, int li, const struct sockaddr *addr, socklen_t len) {
    int k = s->nhandoffs, rc;
    tl_loop *acc[k];
    tl_handle ls[k];
    int firsts[k];
    for (int a = 0; a < k; a++) {
        tl_handoff_subset(s->nloops, k, a, &firsts[a]);
        acc[a] = s->loops[firsts[a]];
    }
    if (k == 1) {
        tl_listen_options lo = {.reuse_port = TL_REUSE_PORT_NO};
        rc = tl_listen(acc[0], addr, len, &lo, &ls[0]);
    } else {
        rc = tl_route_reuse_port(acc, k, addr, len, 0, ls);
    }
    for (int a = 0; rc == 0 && a < k; a++)
        s->workers[firsts[a]].listener[li] = ls[a];
    return rc;
}

int sws_balance_listen(sws_server *s, sws_accept_route route, int li, const struct sockaddr *addr,
                       socklen_t len, char *err, size_t errlen) {
    int n = s->nloops, rc;
    err[0] = '\0'; /* set only when this file has the better reason to give */
    if (route == SWS_ACCEPT_REUSE_PORT_CPU) {
        /* The program maps a CPU to the loop pinned there; unpinned loops
         * would make it a hash with extra steps, so refuse instead. */
        if (!s->pinned) {
            snprintf(err, errlen,
                     "accept reuse-port-cpu needs one CPU per loop: %d loops, %d CPUs in the "
                     "affinity mask",
                     n, s->cpus.in_mask);
            return -EINVAL;
        }
        tl_handle hs[n];
        rc = tl_route_reuse_port_cpu(s->loops, n, addr, len, 0, s->cpus.list, hs);
        if (rc == -EOPNOTSUPP) {
            snprintf(err, errlen,
                     "accept reuse-port-cpu: this kernel cannot steer by CPU "
                     "(SO_ATTACH_REUSEPORT_CBPF, Linux 4.5+); use accept = reuse-port");
            return rc;
        }
        for (int i = 0; rc == 0 && i < n; i++) {
            s->workers[i].listener[li] = hs[i];
            s->workers[i].fed_by = i;
        }
        return rc;
    }
    if (s->handoffs)
        return more_handoff(s, li, addr, len);
    /* handoff, with one acceptor or several */
    int k = s->cfg->acceptors;
    if (k > n) {
        snprintf(err, errlen,
                 "[server] acceptors = %d: more than the %d loops (each feeds one at least)", k, n);
        return -EINVAL;
    }
    s->handoffs = calloc((size_t)k, sizeof(*s->handoffs));
    if (!s->handoffs)
        return -ENOMEM;
    s->nhandoffs = k;
    tl_loop *acc[k];
    tl_handle ls[k];
    int firsts[k], counts[k];
    for (int a = 0; a < k; a++) {
        counts[a] = tl_handoff_subset(n, k, a, &firsts[a]);
        acc[a] = s->loops[firsts[a]];
    }
    if (k == 1) { /* one acceptor: its own port, as before acceptors existed */
        tl_listen_options lo = {.reuse_port = TL_REUSE_PORT_NO};
        rc = tl_listen(acc[0], addr, len, &lo, &ls[0]);
        if (rc == 0)
            rc = tl_handoff_new(&s->handoffs[0], s->loops, n, TL_HANDOFF_ROUND_ROBIN);
    } else {
        rc = tl_route_handoff_group(acc, k, s->loops, n, TL_HANDOFF_ROUND_ROBIN, addr, len, 0, ls,
                                    s->handoffs);
    }
    if (rc < 0)
        return rc;
    for (int a = 0; a < k; a++) {
        sws_worker *w = &s->workers[firsts[a]];
        w->listener[li] = ls[a];
        w->handoff = s->handoffs[a];
        for (int j = 0; j < counts[a]; j++)
            s->workers[firsts[a] + j].fed_by = firsts[a];
    }
    return 0;
}

void sws_balance_free(sws_server *s) {
    for (int a = 0; a < s->nhandoffs; a++)
        tl_handoff_free(s->handoffs[a]);
    free(s->handoffs);
    s->handoffs = NULL;
    s->nhandoffs = 0;
}

void sws_balance_describe(const sws_server *s, char *buf, size_t len) {
    const char *name = sws_accept_name(s->route);
    if (s->route == SWS_ACCEPT_REUSE_PORT_CPU) {
        snprintf(buf, len, "%s (the kernel steers each SYN to the loop on its CPU)", name);
    } else if (s->route == SWS_ACCEPT_HANDOFF && s->nhandoffs > 1) {
        int off = snprintf(buf, len, "%s (%d acceptors:", name, s->nhandoffs);
        for (int a = 0; a < s->nhandoffs && off > 0 && (size_t)off < len; a++) {
            int first, cnt = tl_handoff_subset(s->nloops, s->nhandoffs, a, &first);
            off += snprintf(buf + off, len - (size_t)off, "%s loop %d feeds %d-%d", a ? "," : "",
                            first, first, first + cnt - 1);
        }
        if (off > 0 && (size_t)off < len)
            snprintf(buf + off, len - (size_t)off, ")");
    } else {
        snprintf(buf, len, "%s", name);
    }
}

/* Busiest loop / mean over the loops: 1.0 is an even split; n is one loop
 * carrying everything. 0 when there is nothing to split yet. */
static double imbalance(const sws_server *s, size_t off) {
    uint64_t sum = 0, mx = 0;
    for (int i = 0; i < s->nloops; i++) {
        uint64_t v = atomic_load_explicit((sws_ctr *)((char *)&s->workers[i].ctr + off),
                                          memory_order_relaxed);
        sum += v;
        mx = v > mx ? v : mx;
    }
    return sum ? (double)mx * s->nloops / (double)sum : 0;
}

double sws_balance_imbalance_requests(const sws_server *s) {
    return imbalance(s, offsetof(sws_counters, requests));
}

double sws_balance_imbalance_active(const sws_server *s) {
    return imbalance(s, offsetof(sws_counters, active));
}

void sws_balance_metrics(const sws_server *s, FILE *f) {
    fprintf(f, "# HELP scalwsd_loop_imbalance_ratio Busiest loop over the mean (1 is even): "
               "requests since start, or connections open now.\n"
               "# TYPE scalwsd_loop_imbalance_ratio gauge\n");
    fprintf(f, "scalwsd_loop_imbalance_ratio{by=\"requests\"} %.4f\n",
            sws_balance_imbalance_requests(s));
    fprintf(f, "scalwsd_loop_imbalance_ratio{by=\"active\"} %.4f\n",
            sws_balance_imbalance_active(s));
    fprintf(f, "# HELP scalwsd_loop_info Who accepts: 1 per loop; accepts=\"1\" for a loop with "
               "a listener, fed_by the loop whose accepts it serves (-1: acceptor threads).\n"
               "# TYPE scalwsd_loop_info gauge\n");
    for (int i = 0; i < s->nloops; i++)
        fprintf(f, "scalwsd_loop_info{loop=\"%d\",accepts=\"%d\",fed_by=\"%d\",cpu=\"%d\"} 1\n", i,
                s->workers[i].accepts ? 1 : 0, s->workers[i].fed_by, s->workers[i].cpu);
}
