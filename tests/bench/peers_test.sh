#!/usr/bin/env bash
# One ctest case of scripts/bench-vs-nginx (sol arm, --profile), bench/sol and
# bench/scripts/loops-vs-shared.sh: a short real run of a mode (a few hundred
# requests, bounded) whose JSON is checked, or bad flags refused with exit 2.
# usage: peers_test.sh SRC SCALWSD SOL FIXEDLOAD CASE
set -u
src=$1 scalwsd=$2 sol=$3 fixedload=$4 case=$5
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; cat "$tmp/err" >&2 2>/dev/null; exit 1; }
bvn() { timeout 110 "$src/scripts/bench-vs-nginx" --scalwsd "$scalwsd" --sol "$sol" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?; }
need() { for t in "$@"; do command -v "$t" >/dev/null || { echo "skip: $t missing"; exit 77; }; done; }
refused() { # what ran must exit 2 and say $1
    [ "$rc" -eq 2 ] || fail "exit $rc, wants 2"
    grep -q -- "$1" "$tmp/err" || fail "stderr does not say '$1'"
}

case $case in
bad-flags)
    bvn --arms scalwsd,apache; refused "unknown arm apache"
    bvn --shapes keepalive,slowloris; refused "unknown shape slowloris"
    bvn --rounds 2; refused "at least 3"
    bvn --profile --requests 50; refused "requests 100..10000000"
    bvn --requests many; refused "requests 100..10000000"
    bvn --connections 0; refused "connections 1..10000"
    bvn --arms scalwsd,scalwsd_b; refused "needs --b-env"
    bvn --arms scalwsd,scalwsd_b --b-scalwsd "$tmp/none"; refused "is not executable"
    bvn --latency 0; refused "latency counts 1..10000"
    bvn --latency 4 --profile; refused "separate runs"
    bvn --bogus; refused "unknown option --bogus"
    timeout 10 "$sol" --bogus >/dev/null 2>"$tmp/err"; rc=$?; refused "usage: sol"
    timeout 10 "$fixedload" --port 1 --requests 0 >/dev/null 2>"$tmp/err"; rc=$?; refused "usage: fixedload"
    timeout 10 "$fixedload" --port 1 --requests 10 --shape slow >/dev/null 2>"$tmp/err"; rc=$?; refused "usage: fixedload"
    timeout 10 "$src/bench/scripts/loops-vs-shared.sh" --scalwsd "$scalwsd" --scenarios static >/dev/null 2>"$tmp/err"
    rc=$?; refused "unknown scenario static"
    ;;
sol-answers) # the floor (and the better floor) answers every request of each shape
    for better in 0 1; do
        rm -f "$tmp/ready"
        # Its own output files, and KILL 5 s after a TERM it ignores: a sol that
        # lingers must not hold ctest's pipe open until the test's timeout.
        SOL_BETTER=$better timeout -k 5 60 "$sol" --ready-file "$tmp/ready" >"$tmp/sol.out" 2>"$tmp/err" &
        spid=$!
        for _ in $(seq 1 200); do [ -s "$tmp/ready" ] && break; sleep 0.05; done
        port=$(awk '$1 == "listen" { n = split($2, a, ":"); print a[n] }' "$tmp/ready")
        [ -n "$port" ] || fail "no ready file"
        for shape in keepalive close pipeline keepalive close; do
            timeout 30 "$fixedload" --port "$port" --requests 300 --connections 4 --shape "$shape" >"$tmp/out" ||
                fail "fixedload $shape (SOL_BETTER=$better)"
            grep -q '"requests":300' "$tmp/out" || fail "fixedload $shape line"
        done
        # the better floor closes in the ring: no descriptor left per connection
        [ "$(ls "/proc/$(awk '$1 == "pid" {print $2}' "$tmp/ready")/fd" | wc -l)" -lt 20 ] ||
            fail "sol (SOL_BETTER=$better) holds descriptors after its clients left"
        kill "$spid"
        wait "$spid" 2>/dev/null || true
    done
    ;;
solproxy) # the proxy's floor relays every request of a keep-alive and a pipelined client
    solproxy=$(dirname "$sol")/solproxy
    [ -x "$solproxy" ] || fail "no solproxy next to sol"
    rm -f "$tmp/ready" "$tmp/pready"
    timeout -k 5 60 "$sol" --ready-file "$tmp/ready" >"$tmp/sol.out" 2>"$tmp/err" &
    spid=$!
    for _ in $(seq 1 200); do [ -s "$tmp/ready" ] && break; sleep 0.05; done
    uport=$(awk '$1 == "listen" { n = split($2, a, ":"); print a[n] }' "$tmp/ready")
    [ -n "$uport" ] || fail "no ready file (sol)"
    timeout -k 5 60 "$solproxy" --upstream "127.0.0.1:$uport" --ready-file "$tmp/pready" >"$tmp/p.out" 2>>"$tmp/err" &
    ppid=$!
    for _ in $(seq 1 200); do [ -s "$tmp/pready" ] && break; sleep 0.05; done
    port=$(awk '$1 == "listen" { n = split($2, a, ":"); print a[n] }' "$tmp/pready")
    [ -n "$port" ] || fail "no ready file (solproxy)"
    for shape in keepalive pipeline keepalive; do
        timeout 30 "$fixedload" --port "$port" --requests 300 --connections 4 --shape "$shape" >"$tmp/out" ||
            fail "fixedload $shape through solproxy"
        grep -q '"requests":300' "$tmp/out" || fail "fixedload $shape line"
    done
    kill "$ppid" "$spid"
    wait "$ppid" "$spid" 2>/dev/null || true
    ;;
latency) # the tail arm: p50, p99 and max per arm and connection count, and the ratio
    need wrk nginx jq
    bvn --latency 1,4 --duration 1 --rounds 3 --arms scalwsd,nginx --out "$tmp/l.json"
    [ "$rc" -eq 0 ] || fail "exit $rc"
    for n in 1 4; do
        jq -e --argjson n "$n" '.summary[] | select(.connections == $n) |
            .scalwsd.p99_ms > 0 and .nginx.p99_ms > 0 and .scalwsd.max_ms >= .scalwsd.p99_ms and
            (.scalwsd.p99_vs_nginx > 0)' "$tmp/l.json" >/dev/null || fail "no tail for $n connections"
    done
    [ "$(jq '.runs | length' "$tmp/l.json")" -eq 12 ] || fail "not 2 arms x 2 counts x 3 rounds"
    ;;
sol-arm) # every arm in one interleaved run, a ratio for each
    need wrk nginx jq h2o
    bvn --duration 1 --rounds 3 --shapes pipeline --connections 4 --out "$tmp/r.json"
    [ "$rc" -eq 0 ] || fail "exit $rc"
    for a in nginx h2o sol; do
        # req/s always; per CPU-s may be null when a 1 s arm used no whole CPU tick
        jq -e --arg a "$a" '.summary[0].scalwsd_ratio_rps[$a] > 0 and
            (.summary[0].scalwsd_ratio_req_per_cpu_s | has($a))' "$tmp/r.json" >/dev/null ||
            fail "no ratio against $a"
    done
    jq -e '.machine.sol_ring | length > 0' "$tmp/r.json" >/dev/null || fail "sol's ring mode not stated"
    ;;
profile) # callgrind and strace counts for each arm, over a few hundred requests
    need valgrind callgrind_control strace nginx jq
    bvn --profile --requests 300 --connections 4 --shapes keepalive --arms scalwsd,sol,nginx \
        --out "$tmp/p.json"
    [ "$rc" -eq 0 ] || fail "exit $rc"
    for a in scalwsd sol nginx; do
        jq -e --arg a "$a" '[.runs[] | select(.kind=="callgrind" and .arm==$a and .ir_per_request > 0)] | length == 1' \
            "$tmp/p.json" >/dev/null || fail "no callgrind count for $a"
        jq -e --arg a "$a" '[.runs[] | select(.kind=="strace" and .arm==$a and .calls > 0)] | length == 1' \
            "$tmp/p.json" >/dev/null || fail "no strace count for $a"
    done
    ;;
*) fail "unknown case $case" ;;
esac
echo ok
