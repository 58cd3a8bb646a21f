#!/usr/bin/env bash
# Instructions per proxied request (callgrind), for an A/B of two scalwsd
# builds and of the [proxy] balance modes: scalwsd (epoll, one loop) in
# front of three respond upstreams, N1 and then N2 keep-alive requests from
# curl; (Ir(N2) - Ir(N1)) / (N2 - N1) is the cost of one request, start-up
# and shutdown cancelled out. Counts, not rates: a loaded machine does not
# change them. Usage: bench/scripts/proxy-request-cost.sh SCALWSD [BALANCE...]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib/ports.sh"
usage() { echo "usage: bench/scripts/proxy-request-cost.sh SCALWSD [round_robin|least_conn|p2c|none ...]" >&2; exit 2; }
[ $# -ge 1 ] && [ -x "$1" ] || usage
sws=$1
shift
modes=("$@")
[ ${#modes[@]} -gt 0 ] || modes=(none)
for m in "${modes[@]}"; do
    case $m in round_robin | least_conn | p2c | none) ;; *) echo "proxy-request-cost: unknown balance $m" >&2; usage ;; esac
done
N1=${N1:-500} N2=${N2:-1500}
tmp=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$tmp"' EXIT
ups=()
for i in 1 2 3; do
    "$sws" --listen 127.0.0.1:0 --worker-threads 1 --ready-file "$tmp/up$i.ready" 2>/dev/null &
    pids+=($!)
    wait_ready "$tmp/up$i.ready" 30 $! || { echo "upstream $i did not start" >&2; exit 1; }
    ups+=("127.0.0.1:$(ready_port "$tmp/up$i.ready")")
done
list=$(IFS=,; echo "${ups[*]}")
run() { # balance n: prints Ir
    local bal=$1 n=$2 ini=$tmp/px.ini urls=() i
    printf '[server]\nlisten = 127.0.0.1:0\nscenario = proxy\nevent_loops = 1\n[proxy]\nupstream = %s\n' "$list" >"$ini"
    [ "$bal" = none ] || printf 'balance = %s\n' "$bal" >>"$ini"
    rm -f "$tmp/px.ready" "$tmp/cg.out"
    TURNLOOP_BACKEND=epoll valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" \
        "$sws" --config "$ini" --ready-file "$tmp/px.ready" 2>"$tmp/vg.log" &
    local pid=$!
    wait_ready "$tmp/px.ready" 120 "$pid" || { cat "$tmp/vg.log" >&2; exit 1; }
    local port
    port=$(ready_port "$tmp/px.ready")
    for i in $(seq 1 "$n"); do urls+=("http://127.0.0.1:$port/r"); done
    curl -s "${urls[@]}" >/dev/null
    kill -TERM "$pid"
    wait "$pid" || true
    [ -z "${KEEP_CG:-}" ] || cp "$tmp/cg.out" "$KEEP_CG" # for callgrind_annotate
    awk '/^summary:/ {print $2}' "$tmp/cg.out"
}
for m in "${modes[@]}"; do
    a=$(run "$m" "$N1")
    b=$(run "$m" "$N2")
    echo "{\"scalwsd\":\"$sws\",\"balance\":\"$m\",\"ir_per_request\":$(((b - a) / (N2 - N1)))}"
done
