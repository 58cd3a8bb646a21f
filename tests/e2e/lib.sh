# Shared helpers for scalwsd's end-to-end tests: start the real binary on a
# free loopback port, talk to it with curl and raw sockets (bash /dev/tcp).
# Every wait is bounded; a test that hangs is killed by ctest's TIMEOUT too.
set -euo pipefail

SWS=${SWS:?path of scalwsd in SWS}
T=$(mktemp -d)
SWS_PID=""
PORT=""
ADMIN_PORT=""

cleanup() {
    if [ -n "$SWS_PID" ] && kill -0 "$SWS_PID" 2>/dev/null; then
        kill -KILL "$SWS_PID" 2>/dev/null || true
    fi
    wait 2>/dev/null || true
    rm -rf "$T"
}
trap cleanup EXIT
# A command that fails outside fail() still says where, with the server's log.
trap 'echo "FAIL: ${BASH_SOURCE[0]}:$LINENO: $BASH_COMMAND" >&2; [ -f "$T/log" ] && cat "$T/log" >&2' ERR

fail() {
    echo "FAIL: $*" >&2
    [ -f "$T/log" ] && { echo "--- scalwsd log:" >&2; cat "$T/log" >&2; }
    exit 1
}

# Below the kernel's ephemeral range (ip_local_port_range, 32768.. by default):
# a port picked there can collide with the local port of any client connection
# a parallel test has open, which made starts fail under load.
rand_port() { echo $(((RANDOM % 20000) + 11000)); }

# start_sws [ini text] [extra args...]: writes the ini with listen (and admin)
# on random ports and starts scalwsd; retries when a port is taken.
start_sws() {
    start_sws_try "$@" || fail "scalwsd did not start"
}

# start_sws_try: the same, but returns 1 (with the log in $T/log) when scalwsd
# exits for another reason than a taken port.
start_sws_try() {
    local ini=${1:-} scheme=http
    shift || true
    [ "$SWS_LISTEN_OPTS" != tls ] || scheme=https
    for _ in 1 2 3 4 5 6 7 8; do
        PORT=$(rand_port)
        ADMIN_PORT=$(rand_port)
        [ "$ADMIN_PORT" != "$PORT" ] || ADMIN_PORT=$((PORT + 1))
        {
            echo "[server]"
            echo "listen = 127.0.0.1:$PORT${SWS_LISTEN_OPTS:+ $SWS_LISTEN_OPTS}"
            printf '%b\n' "$ini"
            echo "[admin]"
            echo "listen = 127.0.0.1:$ADMIN_PORT"
        } >"$T/sws.ini"
        "${SWS_WRAP[@]}" "$SWS" --config "$T/sws.ini" "$@" 2>"$T/log" &
        SWS_PID=$!
        for _ in $(seq 1 50); do
            if grep -q "listening on" "$T/log" 2>/dev/null &&
                curl -sk -o /dev/null "$scheme://127.0.0.1:$PORT/"; then
                # The e2e_epoll_* runs must really be on epoll where the ini left
                # the backend to auto.
                if [ "${TURNLOOP_BACKEND:-}" = epoll ] && ! grep -q "backend = " "$T/sws.ini"; then
                    grep -q "backend epoll" "$T/log" || fail "TURNLOOP_BACKEND=epoll ignored"
                fi
                return 0
            fi
            if ! kill -0 "$SWS_PID" 2>/dev/null; then
                break
            fi
            sleep 0.1
        done
        wait "$SWS_PID" 2>/dev/null || true
        SWS_PID=""
        grep -q "address already in use" "$T/log" || return 1
    done
    fail "no free port"
}
SWS_WRAP=()
# SWS_LISTEN_OPTS=tls makes start_sws's listener HTTPS ([tls] in the ini text).
SWS_LISTEN_OPTS=${SWS_LISTEN_OPTS:-}

# raw REQUEST [seconds]: sends bytes (printf %b escapes) on one connection and
# prints everything the server answers until it closes or the time is up.
raw() {
    local req=$1 secs=${2:-3}
    timeout "$secs" bash -c '
        exec 3<>/dev/tcp/127.0.0.1/'"$PORT"' || exit 1
        printf "%b" "$1" >&3
        cat <&3' _ "$req" || true
}

# start_test_upstream SECONDS [RECORD]: proxy_upstream.py (one behaviour per
# path) on a free port, living at most SECONDS; sets UP to its port and kills
# it on exit.
start_test_upstream() {
    python3 "$(dirname "${BASH_SOURCE[0]}")/proxy_upstream.py" "$T/up.port" "$@" &
    UP_PID=$!
    trap 'kill -KILL $UP_PID 2>/dev/null || true; cleanup' EXIT
    for _ in $(seq 1 50); do [ -s "$T/up.port" ] && break; sleep 0.1; done
    [ -s "$T/up.port" ] || fail "test upstream did not start"
    UP=$(cat "$T/up.port")
}

# stop_sws: SIGTERM and wait (bounded); sets SWS_STATUS.
stop_sws() {
    kill -TERM "$SWS_PID"
    for _ in $(seq 1 100); do
        kill -0 "$SWS_PID" 2>/dev/null || break
        sleep 0.1
    done
    SWS_STATUS=0
    wait "$SWS_PID" || SWS_STATUS=$?
    SWS_PID=""
}

count() { grep -c "$1" || true; }
