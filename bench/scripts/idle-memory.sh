#!/usr/bin/env bash
# User-space memory per idle keep-alive connection: starts scalwsd with one
# loop, opens N connections that each make one request and then stay idle, and
# reports (RSS after - RSS before) / N from /proc/PID/status. Loopback only;
# bounded by N and a 60 s timeout.
# Usage: bench/scripts/idle-memory.sh [N=10000] [scalwsd binary]
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${1:-10000}
sws=${2:-build/src/scalws/scalwsd}
ulimit -n $((n + 1024))
tmp=$(mktemp -d)
pid=""
trap '[ -z "$pid" ] || kill "$pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
# shellcheck source=../../scripts/lib/ports.sh
. scripts/lib/ports.sh
# Port 0: the kernel's choice, read back from the ready file; a bound port is
# never handed to the 10,000 client connections.
"$sws" --listen 127.0.0.1:0 --worker-threads 1 --ready-file "$tmp/ready" 2>"$tmp/log" &
pid=$!
wait_ready "$tmp/ready" 60 "$pid" ||
    { cat "$tmp/log" >&2; echo "idle-memory: scalwsd did not start" >&2; exit 1; }
port=$(ready_port "$tmp/ready")
rss() { awk '/^VmRSS/ {print $2}' "/proc/$pid/status"; }
before=$(rss)
timeout 60 python3 - "$port" "$n" "$pid" "$before" <<'PY'
import socket, sys, json
port, n, pid, before = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
req = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
conns = []
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(req)
    conns.append(s)
for s in conns:  # every answer read: the connection is idle keep-alive now
    got = b""
    while b"\r\n\r\n" not in got:
        got += s.recv(4096)
after = int([l for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS")][0].split()[1])
print(json.dumps({"connections": n, "rss_before_kib": before, "rss_after_kib": after,
                  "bytes_per_idle_connection": round((after - before) * 1024 / n)}))
PY
