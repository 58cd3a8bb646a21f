/* h3get: the project's HTTP/3 client for tests, on ngtcp2 (client side),
 * nghttp3 and GnuTLS, as Debian 12 packages them. One QUIC connection to
 * host:port over UDP, the requests given (each path -n times, up to -P of
 * them at once), then a clean CONNECTION_CLOSE. For each answer one line
 * on stdout:
 *     <index> <status> <body bytes> <fnv1a-64 of the body, hex>
 * with -i its fields too ("< name: value"), and "goaway <stream id>" when
 * the server sends one ("early 0|1" too with --early: whether the server
 * took the second connection's 0-RTT); -o writes every body, in the
 * order the requests were made, to a file. With --migrate N or
 * --nat-rebind N the client moves to a new UDP socket (a new local port)
 * after every N answers and goes on on the same connection: a migration
 * tells ngtcp2 (a new path and connection ID, validated: "path PORT
 * validated"), a NAT rebinding does not (the server alone sees the port
 * change); each prints "rebind K OLDPORT NEWPORT". --pause MS makes the
 * requests one at a time with MS between an answer and the next request on
 * the connection; --reconnect sends the requests a GOAWAY left unsent (or
 * the server rejected) on a new connection, as a browser does ("reconnect
 * N" before them). With --reset-after N each request is given up (its
 * stream reset both ways, H3_REQUEST_CANCELLED) once N bytes of its answer
 * came, and counts as answered. Exit 0 when every request was
 * answered, 1 when one was not (reset, or the connection ended), 2 for a
 * usage error, 3 on the timeout.
 * --gso sends the packets each write gathers back to back to the server as
 * UDP GSO sends (UDP_SEGMENT, as scalwsd's quic_send.c does), so that a
 * server with GRO receives an upload's datagrams coalesced.
 * --load SECONDS makes it a load generator (scripts/bench-h3-vs-h2): the
 * requests, -P at a time, until -n per path are made or SECONDS have
 * passed, then those in flight are finished; request slots are reused, no
 * body is hashed or kept, and one line sums it up:
 *     load <answered 2xx> <failed> <body bytes> <seconds>
 * --ws SIZES makes each request a WebSocket tunnel (RFC 9220 extended
 * CONNECT) whose messages come back echoed (h3get_ws.c says its lines);
 * --ocsp-out FILE writes the OCSP response the server stapled ("ocsp N"). */
#include "h3get.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

_Noreturn void usage(void) {
    fprintf(stderr,
            "usage: h3get [options] HOST:PORT PATH...\n"
            "  -n N            each path N times (1)\n"
            "  -P N            at most N requests at once (all)\n"
            "  -X METHOD       the method (GET; POST with -d); CONNECT names PATH as the\n"
            "                  authority (RFC 9114 4.4)\n"
            "  -d FILE         send FILE as the request body\n"
            "  --no-length     ... without a content-length\n"
            "  -o FILE         write every answer's body to FILE\n"
            "  -i              print the answers' fields\n"
            "  -H 'NAME: VALUE' a request field (NAME lowercase; up to 8)\n"
            "  --reset-after N reset each request once N bytes of its answer came\n"
            "  -k, --insecure  do not verify the server's certificate\n"
            "  --cacert FILE   trust the certificates in FILE (default: the system's)\n"
            "  --sni NAME      the server name (default: HOST; localhost for an address)\n"
            "  --resume H:P    then the same requests on a second connection to H:P,\n"
            "                  offering the first one's TLS session (\"resumed 0|1\")\n"
            "  --resume-sni N  with --resume: the second connection's server name (--sni's)\n"
            "  --resume-after F  with --resume: the second connection once file F exists\n"
            "                  (within -t), the first one's answers printed first\n"
            "  --early         with --resume: the second connection's requests in 0-RTT\n"
            "                  (\"early 0|1\": whether the server took them; if not, they\n"
            "                  are sent again after the handshake)\n"
            "  -t SECONDS      give up after SECONDS (10)\n"
            "  --migrate N     after every N answers a new local port, migrated to\n"
            "  --nat-rebind N  after every N answers a new local port, ngtcp2 not told\n"
            "  --pause MS      one request at a time, MS after each answer\n"
            "  --reconnect     what a GOAWAY left unsent goes on a new connection\n"
            "  -q              no line per answer\n"
            "  --gso           send back-to-back packets as UDP GSO sends\n"
            "  --load SECONDS  a load: -P at a time until -n each or SECONDS, then\n"
            "                  \"load <2xx> <failed> <body bytes> <seconds>\"\n"
            "  --ws SIZES      each request a WebSocket tunnel (RFC 9220 extended CONNECT):\n"
            "                  a text message of each size (\"5,1048576\") echoed, then a close\n"
            "  --ws-server-close  ... then wait for the server's close instead\n"
            "  --ws-protocol P the :protocol (websocket)\n"
            "  --ocsp-out FILE the OCSP response the server staples, into FILE (\"ocsp N\")\n");
    exit(2);
}

static char *read_file(const char *path, size_t *len) {
    int fd = open(path, O_RDONLY);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0)
        die("%s: %s", path, strerror(errno));
    char *p = malloc((size_t)sb.st_size + 1);
    size_t have = 0;
    while (p && have < (size_t)sb.st_size) {
        ssize_t n = read(fd, p + have, (size_t)sb.st_size - have);
        if (n <= 0)
            die("%s: short read", path);
        have += (size_t)n;
    }
    close(fd);
    if (!p)
        die("out of memory");
    *len = have;
    return p;
}

int main(int argc, char **argv) {
    client c = {.method = NULL, .parallel = 1 << 30};
    int repeat = 1;
    bool insecure = false;
    const char *cafile = NULL, *out = NULL, *datafile = NULL, *sni = NULL;
    char *resume = NULL;
    const char *resume_sni = NULL, *resume_after = NULL;
    bool early = false;
    double timeout = 10, load_s = 0;
    static const struct option longs[] = {{"insecure", no_argument, NULL, 'k'},
                                          {"cacert", required_argument, NULL, 'C'},
                                          {"sni", required_argument, NULL, 'S'},
                                          {"resume", required_argument, NULL, 'R'},
                                          {"migrate", required_argument, NULL, 'M'},
                                          {"nat-rebind", required_argument, NULL, 'B'},
                                          {"early", no_argument, NULL, 'E'},
                                          {"resume-sni", required_argument, NULL, 'N'},
                                          {"resume-after", required_argument, NULL, 'A'},
                                          {"pause", required_argument, NULL, 'W'},
                                          {"reconnect", no_argument, NULL, 'Y'},
                                          {"reset-after", required_argument, NULL, 'Z'},
                                          {"no-length", no_argument, NULL, 'L'},
                                          {"load", required_argument, NULL, 'G'},
                                          {"ws", required_argument, NULL, 'J'},
                                          {"ws-server-close", no_argument, NULL, 'K'},
                                          {"ws-protocol", required_argument, NULL, 'O'},
                                          {"ocsp-out", required_argument, NULL, 'U'},
                                          {"gso", no_argument, NULL, 'V'},
                                          {NULL, 0, NULL, 0}};
    /* A line at a time: a test that takes stdout and stderr in one file
     * gets whole lines, never one cut by the other. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    int opt;
    while ((opt = getopt_long(argc, argv, "n:P:X:d:o:ikt:qH:", longs, NULL)) != -1) {
        switch (opt) {
        case 'n':
            repeat = atoi(optarg);
            break;
        case 'P':
            c.parallel = atoi(optarg);
            break;
        case 'X':
            c.method = optarg;
            break;
        case 'd':
            datafile = optarg;
            break;
        case 'o':
            out = optarg;
            break;
        case 'i':
            c.show_fields = true;
            break;
        case 'k':
            insecure = true;
            break;
        case 'C':
            cafile = optarg;
            break;
        case 'S':
            sni = optarg;
            break;
        case 'R':
            resume = optarg;
            break;
        case 'M':
        case 'B':
            c.rebind_every = atoi(optarg);
            c.rebind_at = c.rebind_every;
            c.rebind_nat = opt == 'B';
            if (c.rebind_every < 1)
                usage();
            break;
        case 'E':
            early = true;
            break;
        case 'N':
            resume_sni = optarg;
            break;
        case 'A':
            resume_after = optarg;
            break;
        case 't':
            timeout = atof(optarg);
            break;
        case 'W':
            c.pause_ns = (uint64_t)atoi(optarg) * 1000000u;
            c.parallel = 1;
            break;
        case 'Y':
            c.reconnect = true;
            break;
        case 'q':
            c.quiet = true;
            break;
        case 'H':
            if (c.nfields == 8 || !strchr(optarg, ':'))
                usage();
            c.fields[c.nfields++] = optarg;
            break;
        case 'Z':
            c.reset_after = strtoull(optarg, NULL, 10);
            break;
        case 'L':
            c.no_length = true;
            break;
        case 'V':
            c.gso = true;
            break;
        case 'G':
            load_s = atof(optarg);
            c.load = c.quiet = true;
            break;
        case 'J':
            ws_parse_sizes(&c, optarg);
            c.method = "CONNECT";
            break;
        case 'K':
            c.ws_server_close = true;
            break;
        case 'O':
            c.ws_protocol = optarg;
            break;
        case 'U':
            c.ocsp_out = optarg;
            break;
        default:
            usage();
        }
    }
    if (argc - optind < 2 || repeat < 1 || c.parallel < 1 || timeout <= 0 ||
        ((early || resume_sni || resume_after) && !resume))
        usage();
    if (c.load && (load_s <= 0 || out || resume || c.show_fields || c.reconnect))
        die("--load takes a duration above 0, and none of -o, -i, --resume, --reconnect");
    if (c.ws_nmsg && (datafile || resume || c.load || c.reconnect || c.reset_after))
        die("--ws takes none of -d, --resume, --load, --reconnect, --reset-after");
    if ((c.ws_server_close || c.ws_protocol) && !c.ws_nmsg)
        usage();
    if (!c.ws_protocol)
        c.ws_protocol = "websocket";
    char *hostport = argv[optind++], *host;
    c.authority = strdup(hostport);
    struct addrinfo *ai = resolve(hostport, &host);
    unsigned char probe[16];
    bool numeric = inet_pton(AF_INET, host, probe) == 1 || inet_pton(AF_INET6, host, probe) == 1;
    c.sni = sni ? sni : numeric ? "localhost" : host;
    if (datafile) {
        c.data = read_file(datafile, &c.data_len);
        if (!c.method)
            c.method = "POST";
    }
    if (!c.method)
        c.method = "GET";
    requests_init(&c, argv + optind, argc - optind, repeat, out != NULL);
    connect_to(&c, ai);
    ngtcp2_connection_close_error_default(&c.err);
    tls_init(&c, insecure, cafile, NULL);
    if (c.load) {
        /* A load takes the server's bursts whole: the default queue (208 KiB
         * here) holds some 70 full datagrams, and each overflow is a loss
         * that shrinks the server's congestion window. Up to rmem_max. */
        int rcvbuf = 4 << 20;
        setsockopt(c.fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    }
    quic_init(&c);
    uint64_t t0 = now_ns();
    c.load_end = t0 + (uint64_t)(load_s * 1e9);
    int rc = run(&c, timeout);
    for (int round = 0; rc == 1 && c.reconnect && round < 8; round++)
        rc = reconnect(&c, ai, insecure, cafile, timeout);
    freeaddrinfo(ai);
    if (c.load)
        printf("load %" PRIu64 " %" PRIu64 " %" PRIu64 " %.3f\n", c.load_ok, c.load_failed,
               c.load_bytes, (double)(now_ns() - t0) / 1e9);
    if (out) {
        FILE *f = fopen(out, "wb");
        if (!f)
            die("%s: %s", out, strerror(errno));
        for (int i = 0; i < c.nreq; i++)
            fwrite(c.reqs[i].body, 1, c.reqs[i].body_len, f);
        fclose(f);
    }
    if (resume && rc == 0) {
        resume_args ra = {.hostport = resume,
                          .sni = resume_sni,
                          .after = resume_after,
                          .early = early,
                          .paths = argv + optind,
                          .npaths = argc - optind,
                          .repeat = repeat,
                          .insecure = insecure,
                          .cafile = cafile,
                          .timeout = timeout};
        rc = resume_run(&c, &ra);
    } else {
        conn_free(&c);
    }
    free((void *)c.data);
    free((void *)c.authority);
    free(c.ws_msg);
    return rc;
}
