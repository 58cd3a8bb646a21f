/* The admin listener, served by the control thread one request at a time:
 * GET /metrics (Prometheus text), GET /status (JSON, jansson) and GET / (a live
 * HTML page drawing /status, status_page.h). It reads only
 * the workers' atomic counters, never a loop. Admin traffic is rare, so
 * blocking I/O with a one-second timeout keeps this small. */
#include "sws.h"

#include "acme_run.h"
#include "acme_tokens.h"
#include "quic_host.h"
#include "route.h"
#include "status_page.h"
#include "upstream_health.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

int sws_admin_listen(const sws_addr *addr, const char *what, bool share, char *err, size_t errlen) {
    int fd = socket(addr->ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        snprintf(err, errlen, "%s: socket: %s", what, strerror(errno));
        return -errno;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (share)
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
    if (bind(fd, (const struct sockaddr *)&addr->ss, addr->len) < 0 || listen(fd, 64) < 0) {
        int e = errno;
        snprintf(err, errlen, "%s: cannot listen on %s: %s", what, addr->text,
                 e == EADDRINUSE ? "address already in use" : strerror(e));
        close(fd);
        return -e;
    }
    return fd;
}

int sws_admin_open(const sws_config *cfg, char *err, size_t errlen) {
    return sws_admin_listen(&cfg->admin, "[admin] listen", false, err, errlen);
}

#define CTR(w, f) atomic_load_explicit(&(w)->ctr.f, memory_order_relaxed)

static bool thread_cpu(pthread_t t, double *out) {
    clockid_t id;
    struct timespec ts;
    if (pthread_getcpuclockid(t, &id) != 0 || clock_gettime(id, &ts) != 0)
        return false;
    *out = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    return true;
}

/* CPU seconds a loop's thread has used, read from the control thread through
 * the thread's CPU clock: nothing on the loops' path. The shared model's one
 * loop counts all its threads. A thread that has ended keeps its last value. */
static double loop_cpu(sws_server *s, int i) {
    sws_worker *w = &s->workers[i];
    double t = 0, one;
    bool ok = true;
    if (s->shared) {
        for (int k = 0; k < s->nthreads && ok; k++) {
            ok = thread_cpu(s->threads[k], &one);
            t += one;
        }
    } else {
        ok = thread_cpu(w->thread, &t);
    }
    if (ok && t > w->cpu_seen)
        w->cpu_seen = t;
    return w->cpu_seen;
}

static void metric(FILE *f, sws_server *s, const char *name, const char *type, const char *help,
                   size_t off) {
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
    for (int i = 0; i < s->nloops; i++)
        fprintf(f, "%s{loop=\"%d\"} %" PRIu64 "\n", name, i,
                atomic_load_explicit((sws_ctr *)((char *)&s->workers[i].ctr + off),
                                     memory_order_relaxed));
}

static char *metrics_text(sws_server *s, size_t *len) {
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    if (!f)
        return NULL;
#define M(name, type, help, field) metric(f, s, name, type, help, offsetof(sws_counters, field))
    M("scalwsd_requests_total", "counter", "Requests answered.", requests);
    M("scalwsd_connections_accepted_total", "counter", "Connections accepted.", accepted);
    M("scalwsd_connections_closed_total", "counter", "Connections closed.", closed);
    M("scalwsd_connections_active", "gauge", "Connections open now.", active);
    M("scalwsd_received_bytes_total", "counter", "Bytes received from clients.", bytes_in);
    M("scalwsd_sent_bytes_total", "counter", "Bytes written to clients.", bytes_out);
    M("scalwsd_drain_forced_total", "counter", "Connections closed by the drain timeout.", forced);
    M("scalwsd_loop_turns_total", "counter", "Loop turns (published once a second).", turns);
    M("scalwsd_accept_pauses_total", "counter", "Times accepting paused at the handle ceiling.",
      accept_pauses);
    M("scalwsd_recv_starved_total", "counter",
      "Receives that waited for a loop buffer (in turn, oldest first).", recv_starved);
    M("scalwsd_send_timeouts_total", "counter", "Writes cut by send_timeout.", send_timeouts);
    M("scalwsd_access_log_failures_total", "counter",
      "Access log lines not written whole (a full disk, a closed pipe).", log_failures);
    M("scalwsd_tunnels_total", "counter",
      "Upgrade tunnels begun through the proxy (a 101 relayed).", tunnels);
    M("scalwsd_tunnels_active", "gauge", "Upgrade tunnels open now.", tunnels_active);
    M("scalwsd_tunnels_drained_total", "counter", "Tunnels closed by the drain timeout.",
      tunnels_drained);
    M("scalwsd_tunnels_idle_closed_total", "counter", "Tunnels closed by tunnel_idle_timeout.",
      tunnels_idle);
    M("scalwsd_tunnel_sent_bytes_total", "counter", "Tunnelled bytes from clients to upstreams.",
      tunnel_bytes_up);
    M("scalwsd_tunnel_received_bytes_total", "counter",
      "Tunnelled bytes from upstreams to clients.", tunnel_bytes_down);
    M("scalwsd_tls_handshakes_total", "counter", "TLS handshakes completed.", tls_handshakes);
    M("scalwsd_tls_resumed_total", "counter", "TLS handshakes that resumed a session.",
      tls_resumed);
    M("scalwsd_http2_connections_total", "counter",
      "Connections that spoke HTTP/2 (the rest of those accepted spoke HTTP/1.1).", h2_conns);
    M("scalwsd_http2_connections_active", "gauge", "HTTP/2 connections open now.", h2_active);
    M("scalwsd_http2_streams_total", "counter", "HTTP/2 streams begun by clients.", h2_streams);
    M("scalwsd_http2_resets_sent_total", "counter", "HTTP/2 RST_STREAM frames sent.", h2_rst_sent);
    M("scalwsd_http2_resets_received_total", "counter", "HTTP/2 RST_STREAM frames received.",
      h2_rst_recv);
    M("scalwsd_http2_goaways_received_total", "counter", "HTTP/2 GOAWAY frames received.",
      h2_goaway_recv);
    M("scalwsd_http2_refused_streams_total", "counter",
      "HTTP/2 streams refused: the loop's streams_per_loop were all in use.", h2_refused);
    M("scalwsd_http2_buffer_waits_total", "counter",
      "HTTP/2 answers that waited for a body buffer ([http2] stream_buffers, loop_buffer).",
      h2_buffer_waits);
    M("scalwsd_compress_input_bytes_total", "counter",
      "Bytes of answers compressed on the fly, before compression.", compress_in);
    M("scalwsd_compress_output_bytes_total", "counter",
      "Bytes of answers compressed on the fly, after compression.", compress_out);
    M("scalwsd_compress_busy_total", "counter",
      "Answers sent uncompressed because the loop's encoders were all in use.", compress_busy);
#undef M
    fprintf(f, "# HELP scalwsd_compressed_answers_total Answers compressed on the fly, by coding.\n"
               "# TYPE scalwsd_compressed_answers_total counter\n");
    for (int i = 0; i < s->nloops; i++)
        for (int k = 0; k < 2; k++)
            fprintf(f, "scalwsd_compressed_answers_total{loop=\"%d\",coding=\"%s\"} %" PRIu64 "\n",
                    i, k ? "br" : "gzip", CTR(&s->workers[i], compress_answers[k]));
    static const char *const ga[SWS_H2_GOAWAY_N] = {"no_error", "protocol_error",
                                                    "enhance_your_calm", "other"};
    fprintf(f, "# HELP scalwsd_http2_goaways_sent_total HTTP/2 GOAWAY frames sent, by code.\n"
               "# TYPE scalwsd_http2_goaways_sent_total counter\n");
    for (int i = 0; i < s->nloops; i++)
        for (int k = 0; k < SWS_H2_GOAWAY_N; k++)
            fprintf(f, "scalwsd_http2_goaways_sent_total{loop=\"%d\",code=\"%s\"} %" PRIu64 "\n", i,
                    ga[k], CTR(&s->workers[i], h2_goaway_sent[k]));
    static const char *const fl[SWS_H2_FLOOD_N] = {"reset", "glitch", "acks", "headers"};
    fprintf(f, "# HELP scalwsd_http2_bound_closes_total HTTP/2 connections ended by a bound "
               "([http2] reset_*, glitch_*, max_queued_acks, max_header_blocks).\n"
               "# TYPE scalwsd_http2_bound_closes_total counter\n");
    for (int i = 0; i < s->nloops; i++)
        for (int k = 0; k < SWS_H2_FLOOD_N; k++)
            fprintf(f, "scalwsd_http2_bound_closes_total{loop=\"%d\",bound=\"%s\"} %" PRIu64 "\n",
                    i, fl[k], CTR(&s->workers[i], h2_floods[k]));
    fprintf(f, "# HELP scalwsd_tls_failed_total TLS connections that failed, by reason.\n"
               "# TYPE scalwsd_tls_failed_total counter\n");
    for (int i = 0; i < s->nloops; i++)
        for (int k = 1; k < SWS_TLS_FAIL_N; k++)
            fprintf(f, "scalwsd_tls_failed_total{loop=\"%d\",reason=\"%s\"} %" PRIu64 "\n", i,
                    sws_tls_fail_name((sws_tls_fail)k), CTR(&s->workers[i], tls_failed[k]));
    static const char *const codes[SWS_ST_N] = {"400", "408", "413", "414",
                                                "431", "502", "504", "other"};
    fprintf(f, "# HELP scalwsd_errors_total Error answers by status.\n"
               "# TYPE scalwsd_errors_total counter\n");
    for (int i = 0; i < s->nloops; i++)
        for (int k = 0; k < SWS_ST_N; k++)
            fprintf(f, "scalwsd_errors_total{loop=\"%d\",status=\"%s\"} %" PRIu64 "\n", i, codes[k],
                    CTR(&s->workers[i], errors[k]));
    fprintf(f, "# HELP scalwsd_loop_cpu_seconds_total CPU time of the loop's thread(s).\n"
               "# TYPE scalwsd_loop_cpu_seconds_total counter\n");
    for (int i = 0; i < s->nloops; i++)
        fprintf(f, "scalwsd_loop_cpu_seconds_total{loop=\"%d\"} %.6f\n", i, loop_cpu(s, i));
    fprintf(f,
            "# HELP scalwsd_draining 1 while draining, 2 after the drain timeout.\n"
            "# TYPE scalwsd_draining gauge\nscalwsd_draining %d\n",
            atomic_load(&s->drain));
    sws_balance_metrics(s, f);
    sws_quic_metrics(s, f);
    fprintf(f, "# HELP scalwsd_listener_connections_total Connections accepted, by listener "
               "(its name= or its address as configured; address: as bound).\n"
               "# TYPE scalwsd_listener_connections_total counter\n");
    for (int li = 0; li < s->nlisteners; li++) {
        uint64_t n = 0;
        for (int i = 0; i < s->nloops; i++)
            n += CTR(&s->workers[i], accepted_on[li]);
        fprintf(f,
                "scalwsd_listener_connections_total{listener=\"%s\",address=\"%s\",tls=\"%d\","
                "http2=\"%d\"} %" PRIu64 "\n",
                sws_listener_label(s->cfg, li), s->listeners[li].text,
                s->cfg->listeners[li].tls ? 1 : 0, sws_listener_h2(s->cfg, li) ? 1 : 0, n);
    }
    /* Each scenario a route served at start, once. */
    for (int k = 0; k < 32; k++) {
        const sws_scenario_ops *ops = sws_scenario_ops_of((sws_scenario_kind)k);
        if ((s->kinds_at_start & (1u << k)) && ops->metrics)
            ops->metrics(s, f);
    }
    sws_route_metrics(s, f);
    const struct sws_up_health *hs[SWS_ROUTE_SLOTS];
    const char *names[SWS_ROUTE_SLOTS];
    int nh = 0;
    for (uint32_t k = 0; k < sws_route_slot_count(); k++) {
        if (s->health[k]) {
            hs[nh] = s->health[k];
            names[nh++] = sws_route_slot_name(k);
        }
    }
    sws_health_metrics(hs, names, nh, f);
    if (s->nacme)
        sws_acme_metrics(s->acme, s->nacme, f);
    fclose(f);
    return buf;
}

/* Every listener: its name (name=, else null), what it bound and was
 * configured with, TLS and HTTP/2, its accept route and its connections. */
static json_t *listeners_json(const sws_server *s) {
    json_t *a = json_array();
    for (int li = 0; a && li < s->nlisteners; li++) {
        const sws_listener_cfg *l = &s->cfg->listeners[li];
        uint64_t n = 0;
        for (int i = 0; i < s->nloops; i++)
            n += CTR(&s->workers[i], accepted_on[li]);
        json_array_append_new(a, json_pack("{s:s?, s:s, s:s, s:b, s:b, s:s, s:I}", "name",
                                           l->name[0] ? l->name : NULL, "address",
                                           s->listeners[li].text, "configured", l->addr.text, "tls",
                                           l->tls, "http2", sws_listener_h2(s->cfg, li), "route",
                                           sws_accept_name(s->listeners[li].route), "accepted",
                                           (json_int_t)n));
    }
    return a;
}

/* The routes as configured now: name, host names ("*.a.b" for a
 * wildcard), path or path_prefix, scenario; the default route first. */
static json_t *routes_json(const sws_config *c, const sws_routes *t) {
    json_t *a = json_array();
    for (int i = 0; a && t && i < t->n; i++) {
        const sws_route *r = &t->r[i];
        json_t *hosts = json_array();
        for (uint32_t at = 0; at < r->hosts_len;) {
            const char *h = r->hosts + at;
            char name[260];
            snprintf(name, sizeof name, "%s%s", h[0] == '.' ? "*" : "", h);
            json_array_append_new(hosts, json_string(name));
            at += (uint32_t)strlen(h) + 1;
        }
        json_t *e = json_pack("{s:s, s:o, s:s}", "name", r->name, "hosts", hosts, "scenario",
                              sws_scenario_name(r->cfg.scenario));
        if (e && r->path_len)
            json_object_set_new(e, r->exact ? "path" : "path_prefix",
                                json_stringn(r->path, r->path_len));
        json_t *ls = r->listeners && e ? json_array() : NULL;
        for (int li = 0; ls && li < c->nlisteners; li++)
            if (r->listeners >> li & 1u)
                json_array_append_new(ls, json_string(sws_listener_label(c, li)));
        if (ls)
            json_object_set_new(e, "listen", ls);
        json_array_append_new(a, e);
    }
    return a;
}

/* /status's "certificates": each one a tls listener serves, with the names
 * it serves, and why its files were refused by the last load if they were. */
static json_t *tls_certificates(const sws_tls_server *ts) {
    json_t *a = json_array();
    for (int i = 0; a && i < sws_tls_server_certs(ts); i++) {
        sws_tls_cert_info ci;
        sws_tls_server_cert(ts, i, &ci);
        json_t *names = json_array();
        for (int k = 0; names && k < ci.nnames; k++)
            json_array_append_new(names, json_string(ci.names[k]));
        json_array_append_new(
            a, json_pack("{s:s, s:s, s:o, s:s, s:s, s:b, s:b, s:b, s:s?}", "section", ci.section,
                         "cert", ci.file, "names", names ? names : json_array(), "key", ci.key_type,
                         "not_after", ci.not_after, "default", ci.is_default, "ocsp", ci.ocsp,
                         "served", ci.served, "refused", ci.refused[0] ? ci.refused : NULL));
    }
    return a ? a : json_null();
}

static char *status_json(sws_server *s, size_t *len) {
    json_t *loops = json_array();
    for (int i = 0; i < s->nloops; i++) {
        sws_worker *w = &s->workers[i];
        json_array_append_new(
            loops, json_pack("{s:i, s:i, s:I, s:I, s:I, s:I, s:f, s:b, s:i}", "index", i, "cpu",
                             w->cpu, "requests", (json_int_t)CTR(w, requests), "accepted",
                             (json_int_t)CTR(w, accepted), "active", (json_int_t)CTR(w, active),
                             "closed", (json_int_t)CTR(w, closed), "cpu_seconds", loop_cpu(s, i),
                             "accepts", w->accepts, "fed_by", w->fed_by));
        json_t *lp = json_array_get(loops, json_array_size(loops) - 1);
        json_object_set_new(lp, "http2",
                            json_pack("{s:I, s:I, s:I, s:I, s:I}", "connections",
                                      (json_int_t)CTR(w, h2_conns), "active",
                                      (json_int_t)CTR(w, h2_active), "streams",
                                      (json_int_t)CTR(w, h2_streams), "resets_sent",
                                      (json_int_t)CTR(w, h2_rst_sent), "resets_received",
                                      (json_int_t)CTR(w, h2_rst_recv)));
        json_object_set_new(
            lp, "tunnels",
            json_pack("{s:I, s:I, s:I, s:I}", "active", (json_int_t)CTR(w, tunnels_active), "total",
                      (json_int_t)CTR(w, tunnels), "bytes_up", (json_int_t)CTR(w, tunnel_bytes_up),
                      "bytes_down", (json_int_t)CTR(w, tunnel_bytes_down)));
        const sws_quic_counters *qc = sws_quic_counters_of(w);
        if (qc) {
#define QC(f) (json_int_t) atomic_load_explicit(&qc->f, memory_order_relaxed)
            json_object_set_new(
                lp, "http3",
                json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f}", "connections",
                          QC(connections), "active", QC(open_connections), "requests", QC(requests),
                          "forwarded", QC(forwarded), "stream_packets_lost",
                          QC(stream_packets_lost), "probe_timeouts", QC(probe_timeouts),
                          "congestion_events", QC(congestion_events), "bytes_in_flight",
                          QC(bytes_in_flight), "smoothed_rtt_ms", QC(smoothed_rtt_us) / 1000.0));
#undef QC
        }
    }
    /* Who accepts and whom each feeds: the loops with a listener, and the
     * loops served from each one's accepts. */
    json_t *acceptors = json_array();
    for (int a = 0; a < s->nloops; a++) {
        if (!s->workers[a].accepts)
            continue;
        json_t *feeds = json_array();
        for (int i = 0; i < s->nloops; i++)
            if (s->workers[i].fed_by == a)
                json_array_append_new(feeds, json_integer(i));
        /* Connections this loop accepted and handed on (handoff), counted by
         * the library; the kernel routes' loops accept only for themselves. */
        uint64_t handed = 0;
        for (size_t j = 0; s->workers[a].handoff && j < json_array_size(feeds); j++)
            handed += tl_handoff_count(s->workers[a].handoff, (int)j);
        json_t *e = json_pack("{s:i, s:o}", "loop", a, "feeds", feeds);
        if (s->workers[a].handoff)
            json_object_set_new(e, "handed_on", json_integer((json_int_t)handed));
        json_array_append_new(acceptors, e);
    }
    char accept_text[160];
    sws_balance_describe(s, accept_text, sizeof(accept_text));
    json_t *accept = json_pack("{s:s, s:s, s:s, s:o}", "route", sws_accept_name(s->route),
                               "configured", sws_accept_name(s->cfg->accept), "description",
                               accept_text, "acceptors", acceptors);
    json_t *imb = json_pack("{s:f, s:f}", "requests", sws_balance_imbalance_requests(s), "active",
                            sws_balance_imbalance_active(s));
    static const char *const drain[] = {"serving", "draining", "forced"};
    json_t *root = json_pack(
        "{s:s, s:s, s:s?, s:s, s:s, s:b, s:i, s:b, s:s, s:I, s:o}", "version", SWS_VERSION,
        "listen", s->listen_text, "admin", s->admin_text[0] ? s->admin_text : NULL, "backend",
        s->backend, "route", sws_accept_name(s->route), "shared", s->shared, "threads", s->nthreads,
        "pinned", s->pinned, "state", drain[atomic_load(&s->drain) % 3], "uptime_ms",
        (json_int_t)(sws_now_ms() - s->started_ms), "loops", loops);
    if (!root) {
        json_decref(accept);
        json_decref(imb);
        return NULL;
    }
    json_object_set_new(root, "accept", accept);
    json_object_set_new(root, "imbalance", imb);
    json_object_set_new(root, "listeners", listeners_json(s));
    if (s->cfg->tls_server) {
        sws_tls_info ti;
        sws_tls_server_info(s->cfg->tls_server, &ti);
        json_t *tls = json_pack(
            "{s:s, s:s, s:b, s:b, s:b, s:i, s:I, s:s, s:o}", "protocols", ti.protocols, "records",
            ti.ktls_live ? "ktls" : "memory_bio", "ktls_kernel_module", ti.ktls_kernel, "tickets",
            ti.tickets, "ocsp", ti.ocsp, "session_cache", (int)ti.session_cache,
            "ticket_key_rotations", (json_int_t)sws_tls_keys_rotations(s->tls_keys), "unknown_name",
            ti.refuse_unknown ? "refuse" : "default", "certificates",
            tls_certificates(s->cfg->tls_server));
        json_object_set_new(root, "tls", tls);
    } else {
        json_object_set_new(root, "tls", json_null());
    }
    /* "acme": [acme]'s own order, as before orders had names; "acme_orders":
     * a row per order, [acme]'s included. */
    json_t *orders = json_array(), *own = NULL;
    for (int i = 0; i < s->nacme; i++) {
        json_t *o = sws_acme_status(s->acme[i]);
        if (!own && !sws_acme_name(s->acme[i])[0])
            own = json_deep_copy(o);
        json_array_append_new(orders, o);
    }
    json_object_set_new(root, "acme", own ? own : json_null());
    json_object_set_new(root, "acme_orders",
                        s->nacme ? orders : (json_decref(orders), json_null()));
    /* Every proxy route's upstreams, each entry naming its route; null
     * without a proxy. */
    json_t *ups = json_array();
    uint64_t now = sws_health_now();
    for (uint32_t k = 0; ups && k < sws_route_slot_count(); k++)
        if (s->health[k])
            sws_health_status(s->health[k], sws_route_slot_name(k), now, ups);
    if (ups && json_array_size(ups) == 0) {
        json_decref(ups);
        ups = NULL;
    }
    json_object_set_new(root, "upstreams", ups ? ups : json_null());
    json_object_set_new(root, "routes", routes_json(s->cfg, s->cfg->routes));
    char *text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    if (text) {
        *len = strlen(text);
        /* A trailing newline makes curl output readable; JSON does not mind. */
        char *t = realloc(text, *len + 2);
        if (t) {
            text = t;
            text[(*len)++] = '\n';
            text[*len] = '\0';
        }
    }
    return text;
}

static void write_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

static void serve(sws_server *s, int listen_fd, bool challenge_only);

void sws_admin_serve_one(sws_server *s, int listen_fd) {
    serve(s, listen_fd, false);
}

void sws_admin_serve_challenge(sws_server *s, int listen_fd) {
    serve(s, listen_fd, true);
}

/* [admin] allow: the peer's address in the list (none: any). */
static bool admin_allowed(const sws_server *s, const struct sockaddr_storage *ss) {
    const sws_acl *allow = &s->cfg->admin_allow;
    if (allow->n == 0)
        return true;
    static const sws_acl none = {0};
    uint8_t a[16] = {0};
    int fam = 0;
    if (ss->ss_family == AF_INET) {
        memcpy(a, &((const struct sockaddr_in *)ss)->sin_addr, 4);
        fam = AF_INET;
    } else if (ss->ss_family == AF_INET6) {
        const uint8_t *a6 = ((const struct sockaddr_in6 *)ss)->sin6_addr.s6_addr;
        static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        bool v4 = memcmp(a6, mapped, 12) == 0;
        memcpy(a, v4 ? a6 + 12 : a6, v4 ? 4 : 16);
        fam = v4 ? AF_INET : AF_INET6;
    }
    return sws_acl_allows(allow, &none, fam, a);
}

static void serve(sws_server *s, int listen_fd, bool challenge_only) {
    struct sockaddr_storage ss = {0};
    socklen_t sl = sizeof ss;
    int fd = accept4(listen_fd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
    if (fd < 0)
        return;

    /* [acme] http_listen faces the internet: a slow client there must not
     * hold the control thread for long (a CA sends its GET in one segment). */
    struct timeval tv = {.tv_sec = challenge_only ? 0 : 1, .tv_usec = challenge_only ? 250000 : 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    if (!challenge_only && !admin_allowed(s, &ss)) {
        /* Its request is read first: a close with unread input would reset
         * the connection before the answer is read. */
        char in[8192], date[32], head[512];
        (void)!recv(fd, in, sizeof in, 0);
        sws_date_format(time(NULL), date);
        write_all(fd, head, sws_http_error(head, sizeof(head), 403, date, false));
        close(fd);
        return;
    }
    static const sws_http_limits lim = SWS_HTTP_DEFAULT_LIMITS;
    sws_http_parser p;
    sws_http_parser_init(&p, &lim);
    char in[8192];
    int rc = SWS_HTTP_NEED_MORE, status = 0;
    /* Bounded: at most a few reads, each with the one-second timeout. */
    for (int reads = 0; rc == SWS_HTTP_NEED_MORE && reads < (challenge_only ? 4 : 16); reads++) {
        ssize_t n = recv(fd, in, sizeof(in), 0);
        if (n <= 0)
            break;
        size_t used;
        rc = sws_http_feed(&p, in, (size_t)n, &used, &status);
    }
    char date[32], head[512];
    sws_date_format(time(NULL), date);
    if (rc == SWS_HTTP_REQUEST) {
        char *body = NULL;
        size_t blen = 0;
        const char *ctype = "text/plain";
        int st = 200;
        bool get = p.req.method == HTTP_GET || p.req.method == HTTP_HEAD;
        size_t plen = strlen(p.req.path);
        char keyauth[SWS_ACME_KEYAUTH_MAX];
        if (challenge_only) {
            /* HTTP-01 (RFC 8555 8.3): the key authorization as the body. */
            blen = get ? sws_acme_token_answer(p.req.path, plen, keyauth, sizeof(keyauth)) : 0;
            if (blen && (body = malloc(blen)))
                memcpy(body, keyauth, blen);
            else
                st = get ? 404 : 405;
            ctype = "application/octet-stream";
        } else if (get && strcmp(p.req.path, "/") == 0) {
            blen = sizeof(sws_status_page) - 1;
            body = malloc(blen);
            if (body)
                memcpy(body, sws_status_page, blen);
            ctype = "text/html; charset=utf-8";
        } else if (get && strcmp(p.req.path, "/metrics") == 0) {
            body = metrics_text(s, &blen);
            ctype = "text/plain; version=0.0.4";
        } else if (get && strcmp(p.req.path, "/status") == 0) {
            body = status_json(s, &blen);
            ctype = "application/json";
        } else {
            st = get ? 404 : 405;
        }
        if (body) {
            size_t hl = sws_http_head(head, sizeof(head), st, date, ctype, blen, false);
            write_all(fd, head, hl);
            if (!p.req.head)
                write_all(fd, body, blen);
            free(body);
        } else {
            size_t n = sws_http_error(head, sizeof(head), st == 200 ? 500 : st, date, p.req.head);
            write_all(fd, head, n);
        }
    } else if (rc < 0) {
        size_t n = sws_http_error(head, sizeof(head), status, date, false);
        write_all(fd, head, n);
    }
    close(fd);
}
