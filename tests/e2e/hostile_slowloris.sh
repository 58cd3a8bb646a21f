#!/usr/bin/env bash
# Slowloris: 200 connections each send a request head one byte per 200 ms.
# header_timeout (2 s here) counts from a request's first byte, so every one is
# answered 408 at the first sweep (once a second) after 2 s, never earlier (the
# bound is 6 s: room for a loaded machine; the clients keep sending for 8 s);
# while they are open, ordinary requests (curl, and a probe every
# 100 ms) are answered.
. "$(dirname "$0")/lib.sh"
start_sws '[limits]\nheader_timeout = 2s' --worker-threads 1
python3 "$(dirname "$0")/hostile.py" slowloris "$PORT" "$SWS_PID" 200 8 >"$T/out" &
hostile=$!
sleep 0.7
for i in 1 2 3 4 5; do
    r=$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/c$i") || true
    [ "$r" = 200 ] || fail "curl $i during slowloris: '$r'"
done
wait "$hostile" || fail "hostile.py failed: $(cat "$T/out")"
out=$(cat "$T/out")
echo "$out"
j() { echo "$out" | jq -r "$1"; }
[ "$(j .cut)" = 200 ] || fail "not every slow connection was cut: $out"
[ "$(j .answered_408)" = 200 ] || fail "slow connections not answered 408: $out"
jq -e '.cut_first_s >= 1.9 and .cut_last_s <= 6' <<<"$out" >/dev/null ||
    fail "cut outside 2 s + one sweep: $out"
jq -e '.probes_failed == 0 and .probes_ok >= 10 and .probe_slowest_s < 5' <<<"$out" >/dev/null ||
    fail "ordinary requests suffered: $out"
n=$(curl -s "http://127.0.0.1:$ADMIN_PORT/metrics" | awk 'index($1, "status=\"408\"") {s += $2} END {print s + 0}')
[ "$n" -ge 200 ] || fail "408 counter $n"
