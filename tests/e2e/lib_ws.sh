# WebSocket peers for the tunnel tests (sourced after lib.sh): Debian's
# python3-websockets (and whatever more modules the test names) and
# tests/e2e/ws_tunnel.py's upstreams.
#
# ws_need MODULE...: sets PY to a python3 that imports them all, or skips.
ws_need() {
    local p mods
    mods=$(IFS=,; echo "$*")
    PY=""
    for p in /usr/bin/python3 python3; do
        if "$p" -c "import $mods" 2>/dev/null; then
            PY=$p
            break
        fi
    done
    [ -n "$PY" ] || { echo "SKIP: python3 modules $mods"; exit 77; }
    command -v openssl >/dev/null || { echo "SKIP: openssl"; exit 77; }
}
WS=$(dirname "${BASH_SOURCE[0]}")/ws_tunnel.py
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done; cleanup' EXIT

# up NAME MODE [args...]: a ws_tunnel.py peer on a free port; sets its port in $NAME.
up() {
    local name=$1 mode=$2
    shift 2
    rm -f "$T/$name.port"
    "$PY" "$WS" "$mode" "$T/$name.port" "$@" 2>"$T/$name.log" &
    PIDS+=($!)
    wait_ready "$T/$name.port" "$SWS_START_SECS" "${PIDS[-1]}" || fail "$name did not start"
    printf -v "$name" '%s' "$(ready_port "$T/$name.port")"
}
