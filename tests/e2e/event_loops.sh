#!/usr/bin/env bash
# event_loops auto follows the affinity mask: under taskset -c 0 one loop,
# pinned to CPU 0. --worker-threads N wins over the file; more loops than CPUs
# are unpinned and the log says so.
. "$(dirname "$0")/lib.sh"
SWS_WRAP=(taskset -c 0)
start_sws '\nevent_loops = auto'
s=$(curl -s "http://127.0.0.1:$ADMIN_PORT/status")
[ "$(echo "$s" | jq '.loops | length')" = 1 ] || fail "taskset -c 0 should give one loop: $s"
[ "$(echo "$s" | jq '.loops[0].cpu')" = 0 ] || fail "loop not pinned to CPU 0: $s"
grep -q "1 loop (auto" "$T/log" || fail "log: $(cat "$T/log")"
stop_sws

SWS_WRAP=()
ncpu=$(nproc)
n=$((ncpu + 1))
start_sws '\nevent_loops = 1' --worker-threads "$n"
s=$(curl -s "http://127.0.0.1:$ADMIN_PORT/status")
[ "$(echo "$s" | jq '.loops | length')" = "$n" ] || fail "--worker-threads $n: $s"
[ "$(echo "$s" | jq '.pinned')" = false ] || fail "more loops than CPUs must not pin: $s"
grep -q "loops are not pinned" "$T/log" || fail "log must say unpinned: $(cat "$T/log")"
stop_sws
echo ok
