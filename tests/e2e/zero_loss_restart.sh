#!/usr/bin/env bash
# Zero-loss restart: under a bounded Connection: close load, SIGUSR2 starts a
# new scalwsd on the same listening sockets, then SIGTERM drains the old one.
# Every failed request counts (connect error, reset, timeout, short or non-200
# answer) and the count must be zero; both processes must have served. Runs for
# reuse_port (one socket per loop), exclusive and acceptor threads (one shared
# socket) on epoll, and reuse_port on io_uring when the kernel allows it.
# ZLR_BREAK=restart (stop, then start a fresh one: the usual restart) shows that
# the test sees lost requests: it then asserts that errors were counted.
. "$(dirname "$0")/lib.sh"

# load SECONDS OUT: 8 client threads, one request per connection, until the
# time is up; prints "ok errors" to OUT and the first few failures to stderr.
load() {
    python3 - "$PORT" "$1" >"$2" <<'PY' &
import socket, sys, threading, time
port, secs = int(sys.argv[1]), float(sys.argv[2])
end = time.monotonic() + secs
ok = [0]; errs = [0]; lock = threading.Lock(); shown = [0]
req = b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
def one():
    s = socket.create_connection(("127.0.0.1", port), timeout=3)
    try:
        s.sendall(req)
        data = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
    finally:
        s.close()
    if not data.startswith(b"HTTP/1.1 200") or b"\r\n\r\nHello from scalwsd" not in data:
        raise RuntimeError("answer %r" % data[:80])
def worker():
    while time.monotonic() < end:
        try:
            one(); r = ok
        except Exception as e:
            r = errs
            with lock:
                if shown[0] < 5:
                    shown[0] += 1; print("client error: %r" % e, file=sys.stderr)
        with lock:
            r[0] += 1
ts = [threading.Thread(target=worker) for _ in range(8)]
for t in ts: t.start()
for t in ts: t.join()
print(ok[0], errs[0])
PY
    LOAD_PID=$!
}

# wait_for TEXT COUNT: until TEXT is in the log COUNT times (bounded, 5 s).
wait_for() {
    for _ in $(seq 1 50); do
        [ "$(count "$1" <"$T/log")" -ge "$2" ] && return 0
        sleep 0.1
    done
    fail "no $2 x '$1' in the log"
}

metric_sum() {
    curl -s -m 2 "http://127.0.0.1:$ADMIN_PORT/metrics" |
        awk -v m="$1" '$1 ~ "^"m"[{]" {s += $2} END {print s + 0}'
}

run() {
    local label=$1 ini=$2
    start_sws "$ini"
    local old=$SWS_PID
    load 5 "$T/load"
    sleep 1.5
    case "${ZLR_BREAK:-}" in
    restart)
        stop_sws
        start_sws "$ini"
        ;;
    *)
        kill -USR2 "$old"
        wait_for "started new process" 1
        wait_for "listening on" 2
        local new
        new=$(grep -o 'started new process [0-9]*' "$T/log" | awk '{print $4}')
        kill -0 "$new" 2>/dev/null || fail "$label: new process $new is not running"
        sleep 0.5
        stop_sws # the old one: SIGTERM, drain, exit status
        [ "$SWS_STATUS" = 0 ] || fail "$label: old process exited $SWS_STATUS"
        SWS_PID=$new
        ;;
    esac
    wait "$LOAD_PID" || fail "$label: load client failed"
    local ok errors
    read -r ok errors <"$T/load"
    # The old one's "stopped" line comes first: its requests, before the drain.
    local old_requests new_requests
    old_requests=$({ grep -m1 'stopped after' "$T/log" || true; } | sed -E 's/.*; ([0-9]+) requests.*/\1/')
    new_requests=$(metric_sum scalwsd_requests_total)
    echo "$label: $ok requests, $errors errors; old served $old_requests, new $new_requests" >&2
    if [ -n "${ZLR_BREAK:-}" ]; then
        [ "$errors" -gt 0 ] || fail "$label: ZLR_BREAK=$ZLR_BREAK but no error was counted"
        kill -KILL "$SWS_PID" 2>/dev/null || true
        wait "$SWS_PID" 2>/dev/null || true
        SWS_PID=""
        return 0
    fi
    [ "$errors" = 0 ] || fail "$label: $errors failed requests across the restart"
    [ "$ok" -gt 100 ] || fail "$label: only $ok requests"
    [ "${old_requests:-0}" -gt 0 ] || fail "$label: the old process served nothing"
    [ "$new_requests" -gt 0 ] || fail "$label: the new process served nothing"
    grep -q "activated socket" "$T/log" || fail "$label: the new process did not adopt the sockets"
    # Not our child (the old one was its parent): no exit status to wait for,
    # but "stopped after SIGTERM" is printed only on the way to exit 0.
    kill -TERM "$SWS_PID"
    for _ in $(seq 1 100); do
        kill -0 "$SWS_PID" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "$SWS_PID" 2>/dev/null && fail "$label: the new process did not stop"
    SWS_PID=""
    [ "$(count 'stopped after SIGTERM' <"$T/log")" = 2 ] || fail "$label: the new one's drain"
    : >"$T/log"
}

run "reuse_port epoll" "event_loops = 2\naccept = reuse-port\nbackend = epoll"
run "exclusive epoll" "event_loops = 2\naccept = exclusive\nbackend = epoll"
run "acceptor epoll" "event_loops = 2\naccept = acceptor\nbackend = epoll"
if start_sws_try "event_loops = 2\nbackend = uring" && grep -q "backend uring" "$T/log"; then
    stop_sws
    : >"$T/log"
    run "reuse_port uring" "event_loops = 2\naccept = reuse-port\nbackend = uring"
else
    [ -n "$SWS_PID" ] && stop_sws
    echo "io_uring unavailable: uring case skipped"
fi
echo ok
