#!/usr/bin/env bash
# One ctest case of the proxy's bench modes: scripts/bench-proxy-vs-nginx
# (with --close and --routed), bench/scripts/idle-memory-proxy.sh and
# bench/scripts/proxy-request-cost.sh. A short real run (bounded: 1 s arms, a
# few hundred connections or requests) whose output is checked, or bad flags
# refused with exit 2. usage: proxy_bench_test.sh SRC SCALWSD CASE
set -u
src=$1 scalwsd=$2 case=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; cat "$tmp/err" >&2 2>/dev/null; exit 1; }
need() { for t in "$@"; do command -v "$t" >/dev/null || { echo "skip: $t missing"; exit 77; }; done; }
run() { timeout 150 "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?; }
refused() { # what ran must exit 2 and say $1
    [ "$rc" -eq 2 ] || fail "exit $rc, wants 2"
    grep -q -- "$1" "$tmp/err" || fail "stderr does not say '$1'"
}
bpn=$src/scripts/bench-proxy-vs-nginx
case $case in
bad-flags)
    run "$bpn" --scalwsd "$scalwsd" --rounds 2; refused "at least 3"
    run "$bpn" --scalwsd "$scalwsd" --loops 0; refused "loops 1..64"
    run "$bpn" --scalwsd "$scalwsd" --duration 0; refused "duration 1..120"
    run "$bpn" --scalwsd "$scalwsd" --bogus; refused "unknown option --bogus"
    run "$src/bench/scripts/idle-memory-proxy.sh" 10 "$scalwsd" sideways; refused "mode respond or proxy"
    run "$src/bench/scripts/proxy-request-cost.sh"; refused "usage: bench/scripts/proxy-request-cost.sh"
    run "$src/bench/scripts/proxy-request-cost.sh" "$scalwsd" fastest; refused "unknown balance fastest"
    ;;
vs-nginx) # every arm, --close too, one interleaved run; reuse stated from /metrics
    need wrk nginx jq taskset curl
    run "$bpn" --scalwsd "$scalwsd" --duration 1 --rounds 3 --connections 4 --loops 1 --close \
        --routed --out "$tmp/r.json"
    [ "$rc" -eq 0 ] || fail "exit $rc"
    for a in nginx per_loop shared per_loop_close respond_close routed nginx_routed; do
        jq -e --arg a "$a" '[.summary[] | select(.arm == $a and .rps_median > 0)] | length == 1' \
            "$tmp/r.json" >/dev/null || fail "no figure for arm $a"
    done
    jq -e '.per_loop_upstream_after_warmup | has("connects") and has("reuses")' "$tmp/r.json" \
        >/dev/null || fail "upstream reuse not stated"
    ;;
idle-memory-proxy) # 200 idle proxied clients: a figure per connection
    need curl python3
    run "$src/bench/scripts/idle-memory-proxy.sh" 200 "$scalwsd" proxy
    [ "$rc" -eq 0 ] || fail "exit $rc"
    grep -q '"idle_proxied_client":{"connections":200,.*"bytes_per_idle_connection":[0-9]' \
        "$tmp/out" || fail "no per-connection figure: $(cat "$tmp/out")"
    ;;
request-cost) # callgrind instructions per proxied request, one balance mode
    need valgrind curl
    N1=20 N2=60 run "$src/bench/scripts/proxy-request-cost.sh" "$scalwsd" p2c
    [ "$rc" -eq 0 ] || fail "exit $rc"
    grep -q '"balance":"p2c","ir_per_request":[1-9]' "$tmp/out" ||
        fail "no instruction count: $(cat "$tmp/out")"
    ;;
*) fail "unknown case $case" ;;
esac
echo ok
