#!/usr/bin/env bash
# Memory per idle keep-alive connection, scalwsd (one loop, epoll and io_uring)
# against nginx (one worker) in the same run, so the figure is a ratio. For each
# arm: start the server, warm its per-loop buffers with 512 requests on one
# connection (closed again), then open N connections that each make one request,
# read its answer and stay idle. With --http2 the connections are HTTP/2 with
# prior knowledge (h2c): each sends the preface, its SETTINGS and one GET on
# stream 1 (a literal header block, no Huffman, nothing indexed), acknowledges
# the server's SETTINGS, reads the whole answer and its own SETTINGS' ack, and
# stays idle; nginx listens with `http2`. Reported per connection:
#   user_bytes       (VmRSS after - before) / N, from /proc/PID/status
#   user_marginal    (VmRSS after - at N/2) / (N - N/2): per-loop constants excluded
#   kernel_bytes     (slab after - before) / N, from /proc/slabinfo (pages of every
#                    cache), else /proc/meminfo; both ends of each loopback
#                    connection are counted, the client's end is the same in every arm
#   kernel_unreclaimable_bytes  the same without the caches the kernel reclaims
#                    (dentries, inodes: /sys/kernel/slab/*/reclaim_account)
# Loopback only; every phase bounded by the connection count and a timeout.
set -euo pipefail
cd "$(dirname "$0")/../.."

usage() {
    cat <<'EOF'
usage: bench/scripts/idle-memory.sh [options]
  --connections N   idle connections per arm, 100..1000000 (default 10000); each
                    server and the client need N + 256 descriptors (ulimit -Hn)
  --backend B       scalwsd arms: epoll, uring or both (default both)
  --no-nginx        leave the nginx arm out (its figure is the ratio's peer)
  --sources K       client source addresses 127.0.0.1..127.0.0.K, 1..250 (default:
                    one per 25,000 connections, past the ephemeral port range)
  --scalwsd BIN     the binary (default build/src/scalws/scalwsd)
  --sws-env VAR=VAL an environment variable for the scalwsd arms (a turnloop
                    variant: TURNLOOP_URING_DISABLE=buf_ring, doc/turnloop.md)
  --http2           idle HTTP/2 connections (h2c, prior knowledge) instead of
                    HTTP/1.1 keep-alive; nginx's listener gets `http2`
  --out FILE        JSON output (default bench/results/idle-memory-<commit>-<N>.json,
                    with --http2 idle-memory-h2-<commit>-<N>.json)
EOF
}
n=10000 backend=both nginx=1 sources="" sws=build/src/scalws/scalwsd out="" sws_env=() proto=http1
isnum() { [[ $1 =~ ^[0-9]+$ ]]; }
while [ $# -gt 0 ]; do
    case $1 in
    --connections) n=${2:-}; shift 2 || shift ;;
    --backend) backend=${2:-}; shift 2 || shift ;;
    --no-nginx) nginx=0; shift ;;
    --http2) proto=h2c; shift ;;
    --sources) sources=${2:-}; shift 2 || shift ;;
    --scalwsd) sws=${2:-}; shift 2 || shift ;;
    --out) out=${2:-}; shift 2 || shift ;;
    --sws-env)
        [[ ${2:-} =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || { echo "idle-memory: --sws-env VAR=VALUE" >&2; exit 2; }
        sws_env+=("$2"); shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "idle-memory: unknown option $1" >&2; usage >&2; exit 2 ;;
    esac
done
isnum "$n" && [ "$n" -ge 100 ] && [ "$n" -le 1000000 ] ||
    { echo "idle-memory: --connections 100..1000000" >&2; exit 2; }
case $backend in
epoll | uring) arms="scalwsd-$backend" ;;
both) arms="scalwsd-epoll scalwsd-uring" ;;
*) echo "idle-memory: --backend epoll, uring or both" >&2; exit 2 ;;
esac
[ -n "$sources" ] || sources=$(((n + 24999) / 25000))
isnum "$sources" && [ "$sources" -ge 1 ] && [ "$sources" -le 250 ] ||
    { echo "idle-memory: --sources 1..250" >&2; exit 2; }
[ -x "$sws" ] || { echo "idle-memory: scalwsd not found ($sws); build it or pass --scalwsd" >&2; exit 2; }
if [ "$nginx" = 1 ]; then
    command -v nginx >/dev/null || { echo "idle-memory: nginx missing (scripts/bootstrap --bench), or --no-nginx" >&2; exit 2; }
    arms="$arms nginx"
fi
command -v jq >/dev/null || { echo "idle-memory: jq missing (scripts/bootstrap --bench)" >&2; exit 2; }
# One process holds N sockets (each server; the client too): the hard limit
# is what an unprivileged raise can reach.
need=$((n + 256)) hard=$(ulimit -Hn)
if [ "$hard" != unlimited ] && [ "$hard" -lt "$need" ]; then
    echo "idle-memory: $n connections need $need descriptors per process; this machine allows $hard (ulimit -Hn)" >&2
    exit 2
fi
ulimit -n "$need"
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -z "$out" ]; then
    case $proto in
    h2c) out="bench/results/idle-memory-h2-$commit-$n.json" ;;
    *) out="bench/results/idle-memory-$commit-$n.json" ;;
    esac
fi
# nginx 1.22: `http2` on a listener without ssl is HTTP/2 with prior knowledge.
listen_http2=""
[ "$proto" = h2c ] && listen_http2=" http2"

tmp=$(mktemp -d)
pid=""
stop() {
    [ -z "$pid" ] || { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
    pid=""
}
trap 'stop; rm -rf "$tmp"' EXIT
# shellcheck source=../../scripts/lib/ports.sh
. scripts/lib/ports.sh

# start_scalwsd BACKEND: sets pid (the process measured) and port.
start_scalwsd() {
    cat >"$tmp/sws.ini" <<EOF
[server]
listen = 127.0.0.1:0
event_loops = 1
backend = $1
[limits]
max_connections = $((n + 16))
EOF
    rm -f "$tmp/ready"
    env "${sws_env[@]}" "$sws" --config "$tmp/sws.ini" --ready-file "$tmp/ready" 2>"$tmp/log" &
    pid=$!
    wait_ready "$tmp/ready" 60 "$pid" ||
        { cat "$tmp/log" >&2; echo "idle-memory: scalwsd ($1) did not start" >&2; exit 1; }
    port=$(ready_port "$tmp/ready")
}

# As scripts/bench-vs-nginx's peer: one worker, return 200, keep-alive, no log.
nginx_try() {
    local nport=$1
    : >"$tmp/nginx.err"
    cat >"$tmp/nginx.conf" <<EOF
worker_processes 1;
daemon off;
pid $tmp/nginx.pid;
error_log $tmp/nginx.err warn;
worker_rlimit_nofile $need;
events { worker_connections $((n + 64)); }
http {
    access_log off;
    keepalive_requests 100000000;
    keepalive_timeout 75s;
    server {
        listen 127.0.0.1:$nport$listen_http2 reuseport backlog=4096 deferred;
        location / { return 200 "hello\n"; }
    }
}
EOF
    nginx -c "$tmp/nginx.conf" -p "$tmp" 2>>"$tmp/nginx.err" &
    pid=$!
    port=$nport
    wait_port "$nport" 30 "$pid" && return 0
    grep -q "Address already in use" "$tmp/nginx.err" && return 98
    return 1
}
# The worker is what holds the connections: its RSS is measured, not the master's.
worker_pid() {
    local w=""
    for _ in $(seq 1 100); do
        w=$(pgrep -P "$pid" | head -1) && [ -n "$w" ] && { echo "$w"; return; }
        sleep 0.05
    done
    return 1
}

for arm in $arms; do
    case $arm in
    scalwsd-*) start_scalwsd "${arm#scalwsd-}"; measured=$pid ;;
    nginx)
        start_on_free_port nginx_try ||
            { cat "$tmp/nginx.err" >&2; echo "idle-memory: nginx did not start" >&2; exit 1; }
        measured=$(worker_pid) || { echo "idle-memory: no nginx worker" >&2; exit 1; }
        ;;
    esac
    timeout 300 python3 - "$arm" "$port" "$n" "$measured" "$sources" "$proto" >"$tmp/$arm.json" <<'PY'
import json, socket, struct, sys, time
arm, port, n, pid, sources = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
proto = sys.argv[6]
REQ = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
IP_BIND_ADDRESS_NO_PORT = 24  # the port is chosen at connect, per destination

def rss_kib():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1])

def reclaimable(cache):
    """Dentries and inodes (of /proc too, which any process listing fds fills)
    are caches the kernel gives back under pressure; a socket is not."""
    try:
        return open(f"/sys/kernel/slab/{cache}/reclaim_account").read().strip() == "1"
    except OSError:
        return cache == "SReclaimable"

def slab():
    """Bytes in slab pages per cache (slabinfo), or meminfo's two totals."""
    try:
        caches = {}
        with open("/proc/slabinfo") as f:
            for line in f.readlines()[2:]:
                p = line.split()
                # name active num objsize perslab pagesperslab : tunables ... : slabdata active num shared
                caches[p[0]] = int(p[14]) * int(p[5]) * 4096
        return "slabinfo", caches
    except OSError:
        m = {l.split(":")[0]: int(l.split()[1]) * 1024 for l in open("/proc/meminfo")}
        return "meminfo", {"SUnreclaim": m["SUnreclaim"], "SReclaimable": m["SReclaimable"]}

def answer(s):
    got = b""
    while b"\r\n\r\n" not in got:
        chunk = s.recv(4096)
        if not chunk:
            sys.exit(f"idle-memory: {arm} closed a connection")
        got += chunk

# HTTP/2 with prior knowledge, raw frames (RFC 9113 4.1): 9-byte header, then
# the payload. No library: the request's header block is written by hand.
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY = 0, 1, 3, 4, 6, 7
END_STREAM, ACK, END_HEADERS = 0x1, 0x1, 0x4

def frame(ftype, flags, sid, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", sid) + payload

# HPACK (RFC 7541): indexed :method GET (2), :scheme http (6), :path / (4);
# :authority x as a literal without indexing, name index 1, raw (no Huffman).
# Nothing enters either side's dynamic table.
H2_BLOCK = bytes([0x82, 0x86, 0x84, 0x01, 0x01]) + b"x"
# SETTINGS_ENABLE_PUSH = 0, as browsers send it.
H2_HELLO = H2_PREFACE + frame(SETTINGS, 0, 0, struct.pack(">HI", 2, 0))

def h2_get(sid):
    return frame(HEADERS, END_STREAM | END_HEADERS, sid, H2_BLOCK)

class H2:
    """One client connection's frame reader: the server's SETTINGS are
    acknowledged (and PINGs answered) as they come."""
    def __init__(self, s):
        self.s, self.buf = s, b""
        self.peer_settings = self.settings_acked = False

    def read_frame(self):
        while True:
            if len(self.buf) >= 9:
                ln = int.from_bytes(self.buf[:3], "big")
                if len(self.buf) >= 9 + ln:
                    hd, self.buf = self.buf[:9 + ln], self.buf[9 + ln:]
                    return hd[3], hd[4], int.from_bytes(hd[5:9], "big") & 0x7FFFFFFF, hd[9:]
            chunk = self.s.recv(65536)
            if not chunk:
                sys.exit(f"idle-memory: {arm} closed an HTTP/2 connection")
            self.buf += chunk

    def answer(self, sid):
        """Until stream sid has ended and both SETTINGS exchanges are done."""
        ended = False
        while not (ended and self.peer_settings and self.settings_acked):
            ftype, flags, fsid, payload = self.read_frame()
            if ftype == SETTINGS:
                if flags & ACK:
                    self.settings_acked = True
                else:
                    self.peer_settings = True
                    self.s.sendall(frame(SETTINGS, ACK, 0))
            elif ftype == PING and not flags & ACK:
                self.s.sendall(frame(PING, ACK, 0, payload))
            elif ftype == GOAWAY:
                sys.exit(f"idle-memory: {arm} sent GOAWAY {payload[4:8].hex()}")
            elif ftype == RST_STREAM and fsid == sid:
                sys.exit(f"idle-memory: {arm} reset stream {sid} ({payload.hex()})")
            elif ftype in (HEADERS, DATA) and fsid == sid and flags & END_STREAM:
                ended = True
        if self.buf:
            sys.exit(f"idle-memory: {arm} sent more than the answer ({self.buf[:9].hex()})")

def connect(i):
    s = socket.socket()
    s.setsockopt(socket.IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, 1)
    s.bind((f"127.0.0.{1 + i % sources}", 0))
    s.connect(("127.0.0.1", port))
    return s

# Warm-up: the loop's receive buffers (a provided-buffer ring goes round all
# of them), the output buffer, the parser: per-loop, not per-connection.
w = connect(0)
# Idle means idle for a while: a server may set an idle connection's state
# aside on its periodic sweep (scalwsd gives an idle HTTP/2 session's frame
# buffer pages back after a quiet second), so each reading waits past two.
SETTLE = 2.5
if proto == "h2c":
    wh = H2(w)
    w.sendall(H2_HELLO)
    for k in range(512):  # stream ids 1, 3, ... 1023: 3 KiB of DATA, inside the window
        w.sendall(h2_get(2 * k + 1))
        wh.answer(2 * k + 1)
else:
    for _ in range(512):
        w.sendall(REQ)
        answer(w)
w.close()
time.sleep(0.3)
kind, slab0 = slab()
rss0 = rss_kib()
conns = []
for i in range(n):
    s = connect(i)
    if proto == "h2c":
        s.sendall(H2_HELLO + h2_get(1))
        H2(s).answer(1)  # one stream, answered, SETTINGS both ways: idle from here
    else:
        s.sendall(REQ)
        answer(s)  # one request each, answered: idle keep-alive from here
    conns.append(s)
    if i + 1 == n // 2:
        time.sleep(SETTLE)
        rss_mid = rss_kib()
time.sleep(SETTLE)
rss1 = rss_kib()
_, slab1 = slab()
delta = {k: slab1.get(k, 0) - slab0.get(k, 0) for k in set(slab0) | set(slab1)}
top = sorted(((v, k) for k, v in delta.items() if v > 0), reverse=True)[:8]
half = n - n // 2
print(json.dumps({
    "arm": arm, "protocol": "HTTP/2 (h2c)" if proto == "h2c" else "HTTP/1.1", "connections": n,
    "rss_before_kib": rss0, "rss_mid_kib": rss_mid, "rss_after_kib": rss1,
    "user_bytes": round((rss1 - rss0) * 1024 / n),
    "user_marginal": round((rss1 - rss_mid) * 1024 / half),
    "kernel_source": kind,
    "kernel_bytes": round(sum(delta.values()) / n),
    "kernel_unreclaimable_bytes": round(sum(v for k, v in delta.items() if not reclaimable(k)) / n),
    "kernel_top_caches": {k: round(v / n) for v, k in top},
}))
for s in conns:
    s.close()
PY
    stop
    jq -r '"\(.arm): user \(.user_bytes) B (marginal \(.user_marginal) B), kernel \(.kernel_unreclaimable_bytes) B (\(.kernel_bytes) B with reclaimable caches) per idle connection"' "$tmp/$arm.json"
done

jq -s --arg commit "$commit" --arg proto "$proto" --arg sws_env "${sws_env[*]}" --arg kernel "$(uname -r)" --arg cpu "$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)" \
    --argjson sources "$sources" '
    (map(select(.arm == "nginx"))[0]) as $ng |
    {commit: $commit, protocol: (if $proto == "h2c" then "HTTP/2 (h2c)" else "HTTP/1.1" end), kernel: $kernel, cpu: $cpu, sources: $sources, sws_env: $sws_env, arms: .,
     ratio_to_nginx: (if $ng then
        # A peer figure that noise took to zero or below has no ratio (null).
        def ratio($a; $b): if $b > 0 then ($a / $b * 100 | round / 100) else null end;
        (map(select(.arm != "nginx") | {key: .arm, value: {
            user: ratio(.user_bytes; $ng.user_bytes),
            kernel: ratio(.kernel_unreclaimable_bytes; $ng.kernel_unreclaimable_bytes),
            total: ratio(.user_bytes + .kernel_unreclaimable_bytes;
                         $ng.user_bytes + $ng.kernel_unreclaimable_bytes)}})
         | from_entries) else null end)}' "$tmp"/*.json >"$out"
jq -c '.ratio_to_nginx' "$out"
echo "idle-memory: $out"
