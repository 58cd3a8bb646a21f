#!/usr/bin/env bash
# systemd socket activation: scalwsd serves the inherited socket (shared by its
# loops, since one socket cannot be bound once per loop) and drains on SIGTERM.
# Skipped (77) without systemd-socket-activate or a build without libsystemd.
. "$(dirname "$0")/lib.sh"
command -v systemd-socket-activate >/dev/null || { echo "SKIP: no systemd-socket-activate"; exit 77; }
for _ in 1 2 3 4 5; do
    PORT=$(rand_port)
    systemd-socket-activate -l "127.0.0.1:$PORT" "$SWS" --listen 127.0.0.1:1 2>"$T/log" &
    SWS_PID=$!
    sleep 0.3
    kill -0 "$SWS_PID" 2>/dev/null && break
    wait "$SWS_PID" || true
done
[ "$(curl -s -m 3 "http://127.0.0.1:$PORT/")" = "Hello from scalwsd" ] || fail "first request"
if ! grep -q "activated socket" "$T/log"; then
    grep -q "Execing" "$T/log" && { echo "SKIP: scalwsd built without libsystemd"; exit 77; }
    fail "log: $(cat "$T/log")"
fi
for i in $(seq 1 10); do
    [ "$(curl -s -m 2 "http://127.0.0.1:$PORT/")" = "Hello from scalwsd" ] || fail "request $i"
done
grep -q "accept exclusive" "$T/log" || fail "route: $(cat "$T/log")"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit $SWS_STATUS"
grep -q "stopped after SIGTERM" "$T/log" || fail "drain: $(cat "$T/log")"
echo ok
