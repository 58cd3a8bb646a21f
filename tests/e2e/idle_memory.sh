#!/usr/bin/env bash
# An idle keep-alive connection stays small (issue 17 §3): on every backend the
# machine has, 1,000 connections that each made one request and wait grow the
# server's RSS by less than 500 bytes each, twice the 250-byte target
# (bench/README.md, "Idle memory"). Not a timing: a fat field added to the
# connection, a parser kept per connection or a table touched whole fails it.
. "$(dirname "$0")/lib.sh"

# max_connections far above n: tables sized for it are large enough to be
# mappings whose pages are touched as slots are used, as in production (a
# small table can come from the heap already touched, and hide a fat slot).
n=1000 bound=500 max=50000
# A sanitizer's redzones and shadow are its own memory, not the server's.
if grep -q __asan_init "$SWS"; then
    echo "skip: RSS under AddressSanitizer measures the sanitizer"
    exit 77
fi
ulimit -n $((n + 256)) 2>/dev/null || { echo "skip: cannot open $n descriptors (ulimit -Hn)"; exit 77; }

ran=0
for backend in epoll uring; do
    if ! start_sws_try "\nevent_loops = 1\nbackend = $backend\n[limits]\nmax_connections = $max"; then
        # io_uring refused by this kernel: said, never silently absent.
        [ "$backend" = uring ] && grep -qi "uring" "$T/log" || fail "scalwsd ($backend) did not start"
        echo "uring: not available here ($(head -1 "$T/log"))"
        continue
    fi
    got=$(timeout 60 python3 - "$PORT" "$SWS_PID" "$n" <<'PY'
import socket, sys, time
port, pid, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
REQ = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
def rss():
    return int([l for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS")][0].split()[1])
def answer(s):
    got = b""
    while b"\r\n\r\n" not in got:
        chunk = s.recv(4096)
        if not chunk:
            sys.exit("closed")
        got += chunk
# The loop's own buffers first (a buffer ring goes round all of them): per
# loop, not per connection.
w = socket.create_connection(("127.0.0.1", port))
for _ in range(512):
    w.sendall(REQ)
    answer(w)
w.close()
time.sleep(0.2)
before = rss()
conns = []
for _ in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(REQ)
    answer(s)
    conns.append(s)
time.sleep(0.2)
print(round((rss() - before) * 1024 / n))
PY
    ) || fail "$backend: the client failed"
    echo "$backend: $got bytes per idle connection (bound $bound)"
    [ "$got" -lt "$bound" ] || fail "$backend: an idle connection costs $got bytes, the bound is $bound"
    stop_sws
    ran=$((ran + 1))
done
[ "$ran" -ge 1 ] || fail "no backend ran"
echo ok
