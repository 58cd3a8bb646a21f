#!/usr/bin/env bash
# User-space memory per idle proxied keep-alive connection (idle-memory.sh's
# RSS-delta method, for the proxy scenario; respond runs in the same script
# for the comparison): scalwsd with one loop proxies to a second scalwsd
# (respond). Its N clients make
# their requests one after another (so one pooled upstream serves them all) and
# stay idle: bytes per idle proxied client connection. (An idle pooled upstream
# connection is its sws_up_conn and nothing else, checked at compile time in
# upstream.c: a burst that pools a few hundred of them moves RSS less than the
# heap's high-water mark of the burst itself, so RSS cannot show it.)
# Loopback only; bounded by N and a 60 s timeout per phase.
# Usage: bench/scripts/idle-memory-proxy.sh [N=10000] [scalwsd binary] [respond|proxy]
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${1:-10000}
sws=${2:-build/src/scalws/scalwsd}
mode=${3:-respond}
case $mode in respond | proxy) ;; *) echo "idle-memory: mode respond or proxy, not $mode" >&2; exit 2 ;; esac
ulimit -n $((n + 1024))
tmp=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"' EXIT
# shellcheck source=../../scripts/lib/ports.sh
. scripts/lib/ports.sh
# start NAME ARGS...: scalwsd on port 0 (the kernel's choice, read back from
# the ready file; a bound port is never handed to the client connections).
start() {
    local name=$1
    shift
    "$sws" --ready-file "$tmp/$name.ready" "$@" 2>"$tmp/$name.log" &
    pid=$!
    pids+=("$pid")
    wait_ready "$tmp/$name.ready" 60 "$pid" ||
        { cat "$tmp/$name.log" >&2; echo "idle-memory: scalwsd ($name) did not start" >&2; exit 1; }
    port=$(ready_port "$tmp/$name.ready")
}
# clients PORT N PID SEQUENTIAL: JSON with the RSS delta per idle connection.
clients() {
    timeout 60 python3 - "$@" <<'PY'
import socket, sys, json, time
port, n, pid, seq = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4] == "1"
req = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
def rss():
    return int([l for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS")][0].split()[1])
def answer(s):
    got = b""
    while b"\r\n\r\n" not in got:
        got += s.recv(4096)
time.sleep(1.5)  # free lists trimmed once a second after the start's probe
before = rss()
conns = []
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(req)
    if seq:
        answer(s)
    conns.append(s)
if not seq:
    for s in conns:  # every answer read: the connection is idle keep-alive now
        answer(s)
time.sleep(2.5 if seq else 0)
after = rss()
print(json.dumps({"connections": n, "rss_before_kib": before, "rss_after_kib": after,
                  "bytes_per_idle_connection": round((after - before) * 1024 / n)}))
PY
}
if [ "$mode" = respond ]; then
    start sws --listen 127.0.0.1:0 --worker-threads 1
    clients "$port" "$n" "$pid" 0
    exit 0
fi
start up --listen 127.0.0.1:0 --worker-threads 1
up=$port
proxy() { # NAME POOL: the proxy scalwsd; sets pid and port
    printf '[server]\nlisten = 127.0.0.1:0\nscenario = proxy\nevent_loops = 1\n[limits]\nmax_connections = %s\n[proxy]\nupstream = 127.0.0.1:%s\npool_per_loop = %s\n' \
        $((n + 1024)) "$up" "$2" >"$tmp/$1.ini"
    start "$1" --config "$tmp/$1.ini"
}
proxy px 256
clients "$port" "$n" "$pid" 1 | jq -c '{idle_proxied_client: .}'
