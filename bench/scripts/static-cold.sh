#!/usr/bin/env bash
# What a cold page cache costs the static scenario's loop: one loop serves a
# 1 KiB file on keep-alive to a probe (sequential requests, latency of each)
# while another client downloads a 64 MiB file that was evicted from the page
# cache (fsync + POSIX_FADV_DONTNEED). The same again with the file warm. If a
# disk read ran on the loop, the probe's worst latency would carry it; with the
# helper thread it should not. One JSON line per run into OUT.
#   bench/scripts/static-cold.sh [SCALWSD] [OUT] [BACKEND]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
sws=${1:-$here/build/src/scalws/scalwsd}
out=${2:-$here/bench/results/static-cold-$(date -u +%Y%m%d-%H%M%S).jsonl}
backend=${3:-auto}
tmp=$(mktemp -d "$here/build/static-cold.XXXXXX") # on the build's disk, not a tmpfs
trap 'kill $spid 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$tmp"' EXIT
mkdir -p "$tmp/www"
head -c 1024 /dev/urandom >"$tmp/www/small.bin"
head -c 67108864 /dev/urandom >"$tmp/www/big.bin"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
aport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
printf '[server]\nlisten = 127.0.0.1:%s\nevent_loops = 1\nbackend = %s\nscenario = static\n[static]\nroot = %s\n[admin]\nlisten = 127.0.0.1:%s\n' \
    "$port" "$backend" "$tmp/www" "$aport" >"$tmp/sws.ini"
"$sws" -c "$tmp/sws.ini" 2>"$tmp/log" &
spid=$!
for _ in $(seq 1 50); do curl -sf -o /dev/null "http://127.0.0.1:$port/small.bin" && break; sleep 0.1; done
mkdir -p "$(dirname "$out")"
for state in cold warm; do
    python3 - "$port" "$tmp/www/big.bin" "$state" "$aport" "$(grep -o 'backend [a-z_]*' "$tmp/log" | head -1)" >>"$out" <<'PY'
import http.client, json, os, socket, sys, threading, time, urllib.request
port, big, state, aport, backend = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
fd = os.open(big, os.O_RDONLY)
if state == "cold":
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
else:
    while os.read(fd, 1 << 20):
        pass
os.close(fd)
def cold_reads():
    m = urllib.request.urlopen(f"http://127.0.0.1:{aport}/metrics").read().decode()
    return sum(float(l.split()[-1]) for l in m.splitlines() if l.startswith("scalwsd_file_cold_reads_total{"))
before = cold_reads()
done = threading.Event()
got = [0, 0.0]
def download():
    t0 = time.monotonic()
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /big.bin HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
    n = 0
    while True:
        b = s.recv(1 << 20)
        if not b:
            break
        n += len(b)
    got[0], got[1] = n, time.monotonic() - t0
    done.set()
threading.Thread(target=download, daemon=True).start()
c = http.client.HTTPConnection("127.0.0.1", port)
lat = []
deadline = time.monotonic() + 30
while not done.is_set() and time.monotonic() < deadline:
    t0 = time.monotonic()
    c.request("GET", "/small.bin")
    c.getresponse().read()
    lat.append((time.monotonic() - t0) * 1000)
done.wait(30)
lat.sort()
pick = lambda q: round(lat[min(len(lat) - 1, int(q * len(lat)))], 3) if lat else None
print(json.dumps({"state": state, "backend": backend, "download_bytes": got[0],
                  "download_s": round(got[1], 3), "probe_requests": len(lat),
                  "probe_ms_p50": pick(0.5), "probe_ms_p99": pick(0.99),
                  "probe_ms_max": round(lat[-1], 3) if lat else None,
                  "cold_reads": cold_reads() - before,
                  "loadavg": open("/proc/loadavg").read().split()[:3]}))
PY
done
cat "$out"
