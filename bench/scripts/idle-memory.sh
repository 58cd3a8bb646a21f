#!/usr/bin/env bash
# Memory per idle keep-alive connection, scalwsd (one loop, epoll and io_uring)
# against nginx (one worker) in the same run, so the figure is a ratio. For each
# arm: start the server, warm its per-loop buffers with 512 requests on one
# connection (closed again), then open N connections that each make one request,
# read its answer and stay idle. Reported per connection:
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
  --idle-wait S     seconds every arm's connections stay idle before the second
                    reading (default 0.3; io_uring parks a receive idle for 1 to 2 s,
                    so its idle figure needs 2.5)
  --out FILE        JSON output (default bench/results/idle-memory-<commit>-<N>.json)
EOF
}
n=10000 backend=both nginx=1 sources="" sws=build/src/scalws/scalwsd out="" sws_env=() idle_wait=0.3
isnum() { [[ $1 =~ ^[0-9]+$ ]]; }
while [ $# -gt 0 ]; do
    case $1 in
    --connections) n=${2:-}; shift 2 || shift ;;
    --backend) backend=${2:-}; shift 2 || shift ;;
    --no-nginx) nginx=0; shift ;;
    --sources) sources=${2:-}; shift 2 || shift ;;
    --scalwsd) sws=${2:-}; shift 2 || shift ;;
    --out) out=${2:-}; shift 2 || shift ;;
    --idle-wait) idle_wait=${2:-}; shift 2 || shift ;;
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
[[ $idle_wait =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "idle-memory: --idle-wait seconds" >&2; exit 2; }
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
[ -n "$out" ] || out="bench/results/idle-memory-$commit-$n.json"

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
        listen 127.0.0.1:$nport reuseport backlog=4096 deferred;
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
    timeout 300 python3 - "$arm" "$port" "$n" "$measured" "$sources" "$idle_wait" >"$tmp/$arm.json" <<'PY'
import json, socket, sys, time
arm, port, n, pid, sources = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
idle_wait = float(sys.argv[6])
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

def connect(i):
    s = socket.socket()
    s.setsockopt(socket.IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, 1)
    s.bind((f"127.0.0.{1 + i % sources}", 0))
    s.connect(("127.0.0.1", port))
    return s

# Warm-up: the loop's receive buffers (a provided-buffer ring goes round all
# of them), the output buffer, the parser: per-loop, not per-connection.
w = connect(0)
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
    s.sendall(REQ)
    answer(s)  # one request each, answered: idle keep-alive from here
    conns.append(s)
    if i + 1 == n // 2:
        time.sleep(0.1)
        rss_mid = rss_kib()
time.sleep(idle_wait)
rss1 = rss_kib()
_, slab1 = slab()
delta = {k: slab1.get(k, 0) - slab0.get(k, 0) for k in set(slab0) | set(slab1)}
top = sorted(((v, k) for k, v in delta.items() if v > 0), reverse=True)[:8]
half = n - n // 2
print(json.dumps({
    "arm": arm, "connections": n,
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

jq -s --arg commit "$commit" --arg sws_env "${sws_env[*]}" --arg kernel "$(uname -r)" --arg cpu "$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)" \
    --argjson sources "$sources" --argjson idle_wait "$idle_wait" '
    (map(select(.arm == "nginx"))[0]) as $ng |
    {commit: $commit, kernel: $kernel, cpu: $cpu, sources: $sources, sws_env: $sws_env, idle_wait_s: $idle_wait, arms: .,
     ratio_to_nginx: (if $ng then
        (map(select(.arm != "nginx") | {key: .arm, value: {
            user: (.user_bytes / $ng.user_bytes * 100 | round / 100),
            kernel: (.kernel_unreclaimable_bytes / $ng.kernel_unreclaimable_bytes * 100 | round / 100),
            total: ((.user_bytes + .kernel_unreclaimable_bytes) /
                    ($ng.user_bytes + $ng.kernel_unreclaimable_bytes) * 100 | round / 100)}})
         | from_entries) else null end)}' "$tmp"/*.json >"$out"
jq -c '.ratio_to_nginx' "$out"
echo "idle-memory: $out"
