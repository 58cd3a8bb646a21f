#!/usr/bin/env bash
# The admin listener: /metrics in Prometheus text with per-loop counters,
# /status as JSON with loops, CPUs, backend and route; anything else 404.
. "$(dirname "$0")/lib.sh"
start_sws '\nevent_loops = 2'
for i in $(seq 1 10); do curl -s -o /dev/null "http://127.0.0.1:$PORT/"; done
m=$(curl -s -D "$T/h" "http://127.0.0.1:$ADMIN_PORT/metrics")
grep -qi "^Content-Type: text/plain; version=0.0.4" "$T/h" || fail "metrics content type"
grep -q '^# TYPE scalwsd_requests_total counter' <<<"$m" || fail "TYPE line"
total=$(echo "$m" | awk '/^scalwsd_requests_total\{/ {s += $2} END {print s+0}')
[ "$total" -ge 10 ] || fail "requests_total $total < 10"
grep -q '^scalwsd_connections_active{loop="1"}' <<<"$m" || fail "per-loop gauge"
grep -q '^scalwsd_draining 0' <<<"$m" || fail "drain state"
# CPU per loop: a counter in seconds per loop, and cpu_seconds in /status; it
# grows with load (a bounded burst of requests on one keep-alive connection).
grep -q '^# TYPE scalwsd_loop_cpu_seconds_total counter' <<<"$m" || fail "cpu TYPE line"
[ "$(echo "$m" | grep -cE '^scalwsd_loop_cpu_seconds_total\{loop="[01]"\} [0-9]+\.[0-9]+$')" = 2 ] ||
    fail "cpu per loop: $(echo "$m" | grep cpu_seconds)"
cpu0=$(curl -s "http://127.0.0.1:$ADMIN_PORT/status" | jq '[.loops[].cpu_seconds] | add')
urls=()
for _ in $(seq 1 3000); do urls+=(-o /dev/null "http://127.0.0.1:$PORT/"); done
curl -s --max-time 20 "${urls[@]}"
cpu1=$(curl -s "http://127.0.0.1:$ADMIN_PORT/status" | jq '[.loops[].cpu_seconds] | add')
awk -v a="$cpu0" -v b="$cpu1" 'BEGIN {exit !(b > a && b < 1000)}' || fail "cpu_seconds did not grow: $cpu0 -> $cpu1"
s=$(curl -s "http://127.0.0.1:$ADMIN_PORT/status")
echo "$s" | jq -e '.loops | length == 2' >/dev/null || fail "status loops: $s"
echo "$s" | jq -e '.route == "reuse-port" and (.backend | length > 0) and .state == "serving"' >/dev/null ||
    fail "status fields: $s"
echo "$s" | jq -e '[.loops[].requests] | add >= 10' >/dev/null || fail "status counts: $s"
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$ADMIN_PORT/nope")" = 404 ] || fail "404"
stop_sws
echo ok
