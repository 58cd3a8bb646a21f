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

# Two activated sockets and three listeners: each socket is matched to its
# listener by address (the routes tell which answered), the listener without
# one is bound; then a socket no listener has is refused with a message.
activate_two() { # activate_two PORT [EXTRA-PORT]: sockets on PORT and PORT2 (and EXTRA)
    PORT2=$(free_port)
    printf '[server]\nlisten = 127.0.0.1:%s name=a\nlisten = 127.0.0.1:0 name=c\n' "$1" >"$T/two.ini"
    printf 'listen = 127.0.0.1:%s name=b\n' "$PORT2" >>"$T/two.ini"
    printf '[route b]\nlisten = b\npath = /\nscenario = respond\nbody = b\n' >>"$T/two.ini"
    printf '[route c]\nlisten = c\npath = /\nscenario = respond\nbody = c\n' >>"$T/two.ini"
    rm -f "$T/log" "$T/ready"
    local extra=()
    [ -z "${2:-}" ] || extra=(-l "127.0.0.1:$2")
    systemd-socket-activate -l "127.0.0.1:$PORT2" -l "127.0.0.1:$1" "${extra[@]}" "$SWS" \
        --config "$T/two.ini" --ready-file "$T/ready" 2>"$T/log" &
    SWS_PID=$!
    local end=$((SECONDS + SWS_START_SECS))
    while [ "$SECONDS" -le "$end" ]; do
        [ "$(grep -c "Listening on" "$T/log" 2>/dev/null)" -ge 2 ] && return 0
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
start_on_free_port activate_two || fail "systemd-socket-activate did not listen: $(cat "$T/log")"
PORT=$FREE_PORT
# body = Hello... for the default route, which a and every other request gets
[ "$(curl -s -m 3 "http://127.0.0.1:$PORT/")" = "Not Found" ] || fail "listener a"
[ "$(curl -s -m 3 "http://127.0.0.1:$PORT2/")" = "b" ] || fail "listener b"
wait_ready "$T/ready" "$SWS_START_SECS" "$SWS_PID" || fail "no ready file"
grep -q "2 activated sockets" "$T/log" || fail "log: $(cat "$T/log")"
C_PORT=$(ready_listen_port "$T/ready" c)
[ -n "$C_PORT" ] && [ "$C_PORT" != 0 ] || fail "ready: $(cat "$T/ready")"
[ "$(curl -s -m 3 "http://127.0.0.1:$C_PORT/")" = "c" ] || fail "listener c (bound, not activated)"
[ "$(ready_listen_port "$T/ready" b)" = "$PORT2" ] || fail "ready: $(cat "$T/ready")"
stop_sws

extra=$(free_port)
start_on_free_port activate_two "$extra" || fail "systemd-socket-activate: $(cat "$T/log")"
curl -s -m 3 "http://127.0.0.1:$FREE_PORT/" >/dev/null || true # execs scalwsd, which refuses
end=$((SECONDS + SWS_START_SECS))
until grep -q "is none of the \[server\] listen lines" "$T/log"; do
    [ "$SECONDS" -le "$end" ] || fail "a socket without a listener was not refused: $(cat "$T/log")"
    sleep 0.05
done
grep -q "inherited socket 127.0.0.1:$extra " "$T/log" || fail "refusal: $(cat "$T/log")"
kill -TERM "$SWS_PID" 2>/dev/null || true
wait "$SWS_PID" 2>/dev/null || true
SWS_PID=""
echo ok
