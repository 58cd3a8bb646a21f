#!/usr/bin/env bash
# scenario proxy in front of another scalwsd (respond): answers pass through,
# keep-alive reuses pooled upstream connections (visible in /metrics) and no
# pooled connection is ever used by a loop that does not own it, with either
# pool (per_loop, shared).
. "$(dirname "$0")/lib.sh"

# The upstream: a second scalwsd in respond mode on its own port.
start_sws_upstream

start_sws "scenario = proxy\nevent_loops = 2\n[proxy]\nupstream = 127.0.0.1:$UP\npool_per_loop = 8"

# One answer, with Via added.
curl -s -D "$T/h" -o "$T/b" "http://127.0.0.1:$PORT/x"
grep -q '^HTTP/1.1 200' "$T/h" || fail "status: $(cat "$T/h")"
grep -qi '^Via: 1.1 scalwsd' "$T/h" || fail "no Via"
[ "$(cat "$T/b")" = "Hello from scalwsd" ] || fail "body: $(cat "$T/b")"

# HEAD: the head only, with the upstream's Content-Length.
out=$(raw 'HEAD / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
case $out in *"Content-Length: 19"*) ;; *) fail "HEAD: $out" ;; esac
case $out in *Hello*) fail "HEAD with a body: $out" ;; esac

# Keep-alive on both sides: 20 requests on each of 5 client connections.
for _ in 1 2 3 4 5; do
    urls=()
    for i in $(seq 1 20); do urls+=("http://127.0.0.1:$PORT/k$i"); done
    n=$(curl -s "${urls[@]}" | count 'Hello from scalwsd')
    [ "$n" = 20 ] || fail "keep-alive answers: $n of 20"
done

# Pipelined requests are answered in order on one connection.
out=$(raw 'GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\nGET /3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
[ "$(echo "$out" | count '^HTTP/1.1 200')" = 3 ] || fail "pipelined: $out"

# A request body (Content-Length and chunked) is forwarded; the upstream answers.
curl -s -o "$T/b" --data-binary @<(head -c 100000 /dev/zero) "http://127.0.0.1:$PORT/post" ||
    fail "POST"
[ "$(cat "$T/b")" = "Hello from scalwsd" ] || fail "POST body: $(cat "$T/b")"
curl -s -o "$T/b" -H 'Transfer-Encoding: chunked' --data-binary @<(head -c 50000 /dev/zero) \
    "http://127.0.0.1:$PORT/chunked" || fail "chunked POST"
[ "$(cat "$T/b")" = "Hello from scalwsd" ] || fail "chunked POST body: $(cat "$T/b")"

# The upstream refuses a body past its limit before reading it: the 413 must
# reach the client every time (the proxy half-closes and drains, never resets
# the answer away while the client is still sending).
head -c 2000000 /dev/zero >"$T/big"
for _ in $(seq 1 10); do
    code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' --data-binary @"$T/big" "http://127.0.0.1:$PORT/big")
    [ "$code" = 413 ] || fail "early 413 from the upstream: got $code"
done

m=$(curl -s "http://127.0.0.1:$ADMIN_PORT/metrics")
sum() { echo "$m" | awk -v n="$1" '$1 ~ "^"n"[{]" { s += $2 } END { print s + 0 }'; }
reuses=$(sum scalwsd_upstream_reuses_total)
connects=$(sum scalwsd_upstream_connects_total)
foreign=$(sum scalwsd_upstream_foreign_loop_uses_total)
[ "$reuses" -gt 50 ] || fail "reuses $reuses (connects $connects)"
[ "$connects" -ge 1 ] && [ "$connects" -le 16 ] || fail "connects $connects (pool 8 per loop)"
[ "$foreign" = 0 ] || fail "foreign-loop uses $foreign"
grep -q '^scalwsd_upstream_pool_idle{loop="1",route="default"}' <<<"$m" || fail "no per-loop pool gauge"
grep -q '^scalwsd_upstream_latency_seconds_count [1-9]' <<<"$m" || fail "no latency histogram"
grep -q '^scalwsd_upstream_errors_total{loop="0",route="default",kind="refused"} 0' <<<"$m" ||
    fail "errors by kind"

stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit $SWS_STATUS"

# pool = shared: one process-wide pool. A connection pooled by one loop is
# taken by the other (a handover, counted), attached there and used only
# there: the foreign-loop counter stays 0.
start_sws "scenario = proxy\nevent_loops = 2\n[proxy]\nupstream = 127.0.0.1:$UP\npool_per_loop = 8\npool = shared"
for _ in $(seq 1 16); do
    urls=()
    for i in $(seq 1 5); do urls+=("http://127.0.0.1:$PORT/s$i"); done
    n=$(curl -s "${urls[@]}" | count 'Hello from scalwsd')
    [ "$n" = 5 ] || fail "shared pool answers: $n of 5"
done
m=$(curl -s "http://127.0.0.1:$ADMIN_PORT/metrics")
s_reuses=$(sum scalwsd_upstream_reuses_total)
s_connects=$(sum scalwsd_upstream_connects_total)
handovers=$(sum scalwsd_upstream_handovers_total)
[ "$s_reuses" -gt 50 ] || fail "shared: reuses $s_reuses (connects $s_connects)"
[ "$s_connects" -le 16 ] || fail "shared: connects $s_connects"
[ "$handovers" -ge 1 ] || fail "shared: no connection changed loops"
[ "$(sum scalwsd_upstream_foreign_loop_uses_total)" = 0 ] || fail "shared: foreign-loop uses"
grep -q '^scalwsd_upstream_shared_pool_idle [1-9]' <<<"$m" || fail "shared: no idle gauge"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "shared: exit $SWS_STATUS"
echo "ok (connects $connects, reuses $reuses, foreign $foreign; shared: connects $s_connects, reuses $s_reuses, handovers $handovers)"
