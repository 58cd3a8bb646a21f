#!/usr/bin/env bash
# Instructions per request (callgrind), per scenario and shape, for an A/B of
# scalwsd builds: scalwsd (epoll, one loop) serving respond, a 1 KiB static
# file, or a proxy in front of a respond upstream, driven by bench's
# fixedload with N1 and then N2 requests (50 connections), or, for the shapes
# h2m1 and h2m10, by h2load over HTTP/2 with prior knowledge (10 connections,
# 1 or 10 streams each); (Ir(N2) - Ir(N1)) /
# (N2 - N1) is the cost of one request, start-up and shutdown cancelled out.
# Counts, not rates: a loaded machine does not change them.
# SERVER_KEYS='limit_rate = 100000r/s\nallow = 127.0.0.0/8' adds [server] lines
# to every run's ini (printf %b escapes): the cost with those keys set.
# Usage: bench/scripts/request-cost.sh [--fixedload PATH] SCALWSD [SCALWSD...]
# Prints one JSON line per binary, scenario and shape. KEEP_CG=PREFIX keeps each
# run's callgrind file as PREFIX.SCENARIO.SHAPE.N.BUILD for callgrind_annotate.
# STATIC_BYTES: the static file's size (1024).
# SERVER_INI='access_log = /tmp/a.log' adds [server] lines (printf %b) to each run.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/scripts/lib/ports.sh"
usage() { echo "usage: bench/scripts/request-cost.sh [--fixedload PATH] SCALWSD [SCALWSD...]" >&2; exit 2; }
fixedload=$here/build/bench/fixedload
if [ "${1:-}" = --fixedload ]; then fixedload=$2; shift 2; fi
[ $# -ge 1 ] || usage
for b in "$@"; do [ -x "$b" ] || { echo "request-cost: $b is not an executable" >&2; usage; }; done
[ -x "$fixedload" ] || { echo "request-cost: no fixedload at $fixedload (build bench first)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "request-cost: valgrind is needed (scripts/bootstrap --bench)" >&2; exit 2; }
N1=${N1:-2000} N2=${N2:-6000} SHAPES=${SHAPES:-keepalive close pipeline} SCENARIOS=${SCENARIOS:-respond static proxy}
tmp=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir -p "$tmp/www"
head -c "${STATIC_BYTES:-1024}" /dev/zero | tr '\0' 'a' >"$tmp/www/index.html"

# The proxy's upstream: the first binary, respond, outside callgrind.
"$1" --listen 127.0.0.1:0 --worker-threads 1 --ready-file "$tmp/up.ready" 2>/dev/null &
pids+=($!)
wait_ready "$tmp/up.ready" 30 $! || { echo "request-cost: the upstream did not start" >&2; exit 1; }
upstream="127.0.0.1:$(ready_port "$tmp/up.ready")"

run() { # binary scenario shape n: prints Ir
    local sws=$1 sc=$2 shape=$3 n=$4 ini=$tmp/s.ini
    printf '[server]\nlisten = 127.0.0.1:0\nevent_loops = 1\nscenario = %s\n' "$sc" >"$ini"
    [ -z "${SERVER_INI:-}" ] || printf '%b\n' "$SERVER_INI" >>"$ini"
    [ -z "${SERVER_KEYS:-}" ] || printf '%b\n' "$SERVER_KEYS" >>"$ini"
    case $sc in
    static) printf '[static]\nroot = %s\n' "$tmp/www" >>"$ini" ;;
    proxy) printf '[proxy]\nupstream = %s\n' "$upstream" >>"$ini" ;;
    esac
    rm -f "$tmp/s.ready" "$tmp/cg.out"
    TURNLOOP_BACKEND=epoll valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" \
        "$sws" --config "$ini" --ready-file "$tmp/s.ready" 2>"$tmp/vg.log" &
    local pid=$!
    wait_ready "$tmp/s.ready" 120 "$pid" || { cat "$tmp/vg.log" >&2; exit 1; }
    local port
    port=$(ready_port "$tmp/s.ready")
    case $shape in
    h2m*)
        h2load -n "$n" -c 10 -m "${shape#h2m}" "http://127.0.0.1:$port/" >"$tmp/h2load.log" 2>&1
        grep -q " $n succeeded" "$tmp/h2load.log" || { cat "$tmp/h2load.log" >&2; exit 1; } ;;
    *)
        "$fixedload" --port "$port" --requests "$n" --connections 50 \
            --shape "$shape" --timeout 120 >/dev/null ;;
    esac
    kill -TERM "$pid"
    wait "$pid" || true
    [ -z "${KEEP_CG:-}" ] || cp "$tmp/cg.out" "$KEEP_CG.$sc.$shape.$n.$(basename "$(dirname "$(dirname "$(dirname "$sws")")")")" # for callgrind_annotate
    awk '/^summary:/ {print $2}' "$tmp/cg.out"
}
for sc in $SCENARIOS; do
    for shape in $SHAPES; do
        for sws in "$@"; do
            a=$(run "$sws" "$sc" "$shape" "$N1")
            b=$(run "$sws" "$sc" "$shape" "$N2")
            echo "{\"scalwsd\":\"$sws\",\"scenario\":\"$sc\",\"shape\":\"$shape\",\"server_keys\":\"${SERVER_KEYS:-}\",\"ir_per_request\":$(((b - a) / (N2 - N1)))}"
        done
    done
done
