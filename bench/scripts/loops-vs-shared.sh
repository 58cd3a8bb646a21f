#!/usr/bin/env bash
# ADR-0029's experiment at 2 loops (issue 17, section 5): scalwsd with per-core
# loops (event_loops = 2) against the shared model (event_loops = 0,
# --worker-threads 2), for respond and for proxy (in front of an nginx
# `return 200` upstream), interleaved A B A B. Nothing is pinned: on a 2-CPU
# machine the servers, wrk and the upstream share both CPUs, as the ADR's run
# did not (it had 4 CPUs for the server). Reports requests/s and requests per
# server CPU-second (utime+stime of scalwsd from /proc/PID/stat), JSON to --out.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../../scripts/lib/ports.sh
. "$here/scripts/lib/ports.sh"
scalwsd="$here/build/src/scalws/scalwsd" duration=3 rounds=3 conns=64 out="" scenarios="respond,proxy"
usage() { echo "usage: bench/scripts/loops-vs-shared.sh [--scalwsd PATH] [--duration S] [--rounds N>=3] [--connections N] [--scenarios respond,proxy] [--out FILE]"; }
isnum() { case "$1" in '' | *[!0-9]*) return 1 ;; esac; }
while [ $# -gt 0 ]; do
    case "$1" in
    --scalwsd) scalwsd=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --connections) conns=$2; shift 2 ;;
    --scenarios) scenarios=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "loops-vs-shared: unknown option $1" >&2; usage >&2; exit 2 ;;
    esac
done
isnum "$rounds" && [ "$rounds" -ge 3 ] || { echo "loops-vs-shared: --rounds must be at least 3" >&2; exit 2; }
isnum "$duration" && [ "$duration" -ge 1 ] && [ "$duration" -le 120 ] || { echo "loops-vs-shared: --duration 1..120" >&2; exit 2; }
isnum "$conns" && [ "$conns" -ge 2 ] && [ "$conns" -le 10000 ] || { echo "loops-vs-shared: --connections 2..10000" >&2; exit 2; }
IFS=, read -r -a scen_list <<<"$scenarios"
for sc in "${scen_list[@]}"; do
    case "$sc" in respond | proxy) ;; *) echo "loops-vs-shared: unknown scenario $sc" >&2; exit 2 ;; esac
done
[ -x "$scalwsd" ] || { echo "loops-vs-shared: scalwsd not found ($scalwsd)" >&2; exit 2; }
for tool in wrk nginx jq; do
    command -v "$tool" >/dev/null || { echo "loops-vs-shared: $tool missing (scripts/bootstrap)" >&2; exit 2; }
done
[ -n "$out" ] || out="$here/bench/results/loops-vs-shared-$(date -u +%Y%m%d-%H%M%S).json"
tmp=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT

upstream_try() { # PORT
    cat >"$tmp/up.conf" <<CONF
worker_processes 1;
daemon off;
pid $tmp/up.pid;
error_log $tmp/up.err warn;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 100000000;
    server { listen 127.0.0.1:$1 reuseport backlog=4096; location / { return 200 "Hello from upstream\n"; } }
}
CONF
    : >"$tmp/up.err"
    nginx -c "$tmp/up.conf" -p "$tmp" 2>>"$tmp/up.err" &
    pids+=($!)
    wait_port "$1" 30 $! && return 0
    grep -q "Address already in use" "$tmp/up.err" && return 98
    return 1
}
uport=""
if [[ ",$scenarios," == *",proxy,"* ]]; then
    start_on_free_port upstream_try || { echo "loops-vs-shared: upstream did not start" >&2; cat "$tmp/up.err" >&2; exit 1; }
    uport=$FREE_PORT
fi

declare -A port pid
start() { # NAME SCENARIO EVENT_LOOPS [ARGS...]
    local name=$1 sc=$2 el=$3
    shift 3
    {
        printf '[server]\nlisten = 127.0.0.1:0\nevent_loops = %s\nscenario = %s\n' "$el" "$sc"
        printf '[respond]\nbody = Hello from scalwsd\\n\ncontent_type = text/plain\n'
        [ "$sc" = proxy ] && printf '[proxy]\nupstream = 127.0.0.1:%s\n' "$uport"
        printf '[limits]\nmax_connections = 20000\n'
    } >"$tmp/$name.ini"
    "$scalwsd" --config "$tmp/$name.ini" --ready-file "$tmp/$name.ready" "$@" 2>"$tmp/$name.log" &
    pid[$name]=$!
    pids+=($!)
    wait_ready "$tmp/$name.ready" 30 $! || { echo "loops-vs-shared: $name did not start" >&2; cat "$tmp/$name.log" >&2; exit 1; }
    port[$name]=$(ready_port "$tmp/$name.ready")
}
ticks() { local f; f=$(sed 's/.*) //' "/proc/$1/stat"); set -- $f; echo $((${12} + ${13})); }
hz=$(getconf CLK_TCK)
results=$tmp/r.jsonl
: >"$results"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for sc in "${scen_list[@]}"; do
    start "loops-$sc" "$sc" 2
    start "shared-$sc" "$sc" 0 --worker-threads 2
    for arm in loops shared; do wrk -t2 -c"$conns" -d1s "http://127.0.0.1:${port[$arm-$sc]}/" >/dev/null 2>&1; done
    for r in $(seq 1 "$rounds"); do
        for arm in loops shared; do
            n=$arm-$sc
            b=$(ticks "${pid[$n]}")
            wrk -t2 -c"$conns" -d"${duration}s" "http://127.0.0.1:${port[$n]}/" >"$tmp/wrk.txt" 2>&1
            a=$(ticks "${pid[$n]}")
            reqs=$(awk '/requests in/ {print $1}' "$tmp/wrk.txt")
            rps=$(awk '/Requests\/sec/ {print $2}' "$tmp/wrk.txt")
            [ -n "$reqs" ] && ! grep -q Non-2xx "$tmp/wrk.txt" || { echo "loops-vs-shared: wrk failed on $n" >&2; cat "$tmp/wrk.txt" >&2; exit 1; }
            jq -cn --arg sc "$sc" --arg arm "$arm" --argjson r "$r" --argjson rps "$rps" --argjson reqs "$reqs" \
                --argjson t $((a - b)) --argjson hz "$hz" \
                '{scenario:$sc, arm:$arm, round:$r, rps:$rps, requests:$reqs, cpu_s:($t/$hz),
                  req_per_cpu_s:(if $t > 0 then $reqs/($t/$hz) else null end)}' >>"$results"
            printf '  %-8s %-7s round %d: %9.0f req/s\n' "$sc" "$arm" "$r" "$rps" >&2
        done
    done
    kill -TERM "${pid[loops-$sc]}" "${pid[shared-$sc]}"
done
commit=$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)
jq -s --arg kernel "$(uname -r)" --arg commit "$commit" --arg date "$(date -u +%FT%TZ)" \
    --arg load "$load0 / $(cut -d' ' -f1-3 /proc/loadavg)" --argjson ncpu "$(nproc)" \
    --argjson duration "$duration" --argjson conns "$conns" '
  def median: sort | if length % 2 == 1 then .[length/2|floor] else (.[length/2-1] + .[length/2]) / 2 end;
  {machine: {kernel: $kernel, commit: $commit, date: $date, cpus: $ncpu, loadavg_start_end: $load},
   params: {duration_s: $duration, connections: $conns, wrk_threads: 2, pinned: false,
            loops: "event_loops = 2", shared: "event_loops = 0, --worker-threads 2"},
   runs: .,
   summary: (group_by(.scenario) | map(. as $g | {scenario: $g[0].scenario,
      loops_rps: ([$g[] | select(.arm=="loops") | .rps] | median),
      shared_rps: ([$g[] | select(.arm=="shared") | .rps] | median),
      loops_req_per_cpu_s: ([$g[] | select(.arm=="loops") | .req_per_cpu_s] | median),
      shared_req_per_cpu_s: ([$g[] | select(.arm=="shared") | .req_per_cpu_s] | median)}
      | .ratio_rps = .loops_rps / .shared_rps | .ratio_req_per_cpu_s = .loops_req_per_cpu_s / .shared_req_per_cpu_s))}' \
    "$results" >"$out"
jq -r '.summary[] | "\(.scenario): loops \(.loops_rps|floor) req/s, shared \(.shared_rps|floor) req/s (x\(.ratio_rps*1000|round/1000)); per CPU-s \(.loops_req_per_cpu_s|floor) vs \(.shared_req_per_cpu_s|floor) (x\(.ratio_req_per_cpu_s*1000|round/1000))"' "$out"
echo "json: $out (load $load0)"
