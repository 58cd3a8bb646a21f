#!/usr/bin/env bash
# systemd socket activation: scalwsd serves the inherited socket (shared by its
# loops, since one socket cannot be bound once per loop) and drains on SIGTERM.
# Skipped (77) without systemd-socket-activate or a build without libsystemd.
. "$(dirname "$0")/lib.sh"
command -v systemd-socket-activate >/dev/null || { echo "SKIP: no systemd-socket-activate"; exit 77; }
# systemd-socket-activate refuses port 0 and execs scalwsd only on the first
# connection: it gets a free port, retried when taken (start_on_free_port).
activate() {
    rm -f "$T/log"
    systemd-socket-activate -l "127.0.0.1:$1" "$SWS" --listen 127.0.0.1:1 --ready-file "$T/ready" \
        2>"$T/log" &
    SWS_PID=$!
    local end=$((SECONDS + SWS_START_SECS))
    while [ "$SECONDS" -le "$end" ]; do
        grep -q "Listening on" "$T/log" 2>/dev/null && return 0
        if ! kill -0 "$SWS_PID" 2>/dev/null; then
            wait "$SWS_PID" || true
            SWS_PID=""
            grep -qi "address already in use" "$T/log" && return 98
            return 1
        fi
        sleep 0.05
    done
    return 1
}
start_on_free_port activate || fail "systemd-socket-activate did not listen: $(cat "$T/log")"
PORT=$FREE_PORT
[ "$(curl -s -m 3 "http://127.0.0.1:$PORT/")" = "Hello from scalwsd" ] || fail "first request"
if ! grep -q "activated socket" "$T/log"; then
    grep -q "Execing" "$T/log" && { echo "SKIP: scalwsd built without libsystemd"; exit 77; }
    fail "log: $(cat "$T/log")"
fi
for i in $(seq 1 10); do
    [ "$(curl -s -m 2 "http://127.0.0.1:$PORT/")" = "Hello from scalwsd" ] || fail "request $i"
done
grep -q "accept exclusive" "$T/log" || fail "route: $(cat "$T/log")"
# The ready file names the inherited socket's real port, not --listen's.
wait_ready "$T/ready" "$SWS_START_SECS" "$SWS_PID" || fail "no ready file"
[ "$(ready_port "$T/ready")" = "$PORT" ] || fail "ready file: $(cat "$T/ready")"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit $SWS_STATUS"
grep -q "stopped after SIGTERM" "$T/log" || fail "drain: $(cat "$T/log")"
echo ok
