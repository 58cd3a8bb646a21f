#!/usr/bin/env bash
# Slow bodies: 50 connections send a whole head with Content-Length: 60, then
# the body one byte per 200 ms. header_timeout bounds the whole request, body
# included, from its first byte (steady progress does not extend it), so each
# is answered 408 after 2 s (by 6 s) and before the body is done; ordinary requests,
# POSTs with a body included, are answered meanwhile.
. "$(dirname "$0")/lib.sh"
start_sws '[limits]\nheader_timeout = 2s' --worker-threads 1
python3 "$(dirname "$0")/hostile.py" slowbody "$PORT" "$SWS_PID" 50 8 >"$T/out" &
hostile=$!
sleep 0.7
for i in 1 2 3; do
    r=$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' --data-binary "body $i" "http://127.0.0.1:$PORT/p$i") || true
    [ "$r" = 200 ] || fail "POST $i during slow bodies: '$r'"
done
wait "$hostile" || fail "hostile.py failed: $(cat "$T/out")"
out=$(cat "$T/out")
echo "$out"
j() { echo "$out" | jq -r "$1"; }
[ "$(j .cut)" = 50 ] || fail "not every slow body was cut: $out"
[ "$(j .answered_408)" = 50 ] || fail "slow bodies not answered 408: $out"
jq -e '.cut_first_s >= 1.9 and .cut_last_s <= 6' <<<"$out" >/dev/null ||
    fail "cut outside 2 s + one sweep: $out"
# The head is 52 bytes: the 60-byte body was still incomplete when it was cut.
jq -e '.bytes_sent_max < 52 + 60' <<<"$out" >/dev/null || fail "a body completed: $out"
jq -e '.probes_failed == 0 and .probes_ok >= 10 and .probe_slowest_s < 5' <<<"$out" >/dev/null ||
    fail "ordinary requests suffered: $out"
