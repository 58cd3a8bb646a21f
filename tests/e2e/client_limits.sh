#!/usr/bin/env bash
# Per-client limits (doc/limits.md), two loops sharing one limiter:
# 1000 source addresses in 127.0.0.0/8 each get exactly their burst; 200
# addresses each held to limit_rate within 10 % while one address floods
# (and is held to it too); 429 with Retry-After, 503 with limit_status; over
# HTTP/2 each stream is a request; limit_conn counts the peer's connections
# (both protocols); behind trusted_proxies the X-Forwarded-For client is
# limited, from anyone else the field is ignored; scalwsd_limited_total
# counts each kind by route; a reload changes a limit.
. "$(dirname "$0")/lib.sh"
here=$(dirname "$0")
start_sws '\nevent_loops = 2
[route burst]\npath = /burst\nscenario = respond\nlimit_rate = 1r/m\nlimit_burst = 2
[route rate]\npath = /rate\nscenario = respond\nlimit_rate = 4r/s\nlimit_burst = 1
[route busy]\npath = /busy\nscenario = respond\nlimit_rate = 1r/m\nlimit_status = 503
[route h2]\npath = /h2\nscenario = respond\nlimit_rate = 1r/m\nlimit_burst = 2
[route conn]\npath = /conn\nscenario = respond\nlimit_conn = 2
[route fwd]\npath = /fwd\nscenario = respond\nlimit_rate = 1r/m\ntrusted_proxies = 127.0.0.1'
U="http://127.0.0.1:$PORT"

# 1000 addresses, each its burst (limit_burst + 1) and no more: the count
# is exact, as no time refills a 1r/m bucket within the run.
out=$(python3 "$here/client_limits.py" burst "$PORT" /burst 1000 4)
[ "$(jq -c '.errors' <<<"$out")" = "[]" ] || fail "burst clients: $out"
[ "$(jq -c '."200"' <<<"$out")" = '{"3":1000}' ] || fail "1000 addresses, 3 each: $out"
[ "$(jq -c '."429"' <<<"$out")" = '{"1":1000}' ] || fail "1000 addresses, the 4th refused: $out"

# 200 addresses, one request each 125 ms for 5 s against 4r/s (burst 1):
# each is admitted what the GCRA admits of the requests it sent, at the
# instants it sent them (about 2 + 4 per second, half of what it sends), within 10 %
# and 2 requests (the time between a client's send and the server's arrival
# moves a request across a slot's edge on a loaded machine); one address
# flooding over 4 connections meanwhile changes nothing for them.
out=$(python3 "$here/client_limits.py" rate "$PORT" /rate 200 5 0.125 4 4 1)
[ "$(jq -c '.errors' <<<"$out")" = "[]" ] || fail "rate clients: $out"
off='select(((.ok - .gcra) | fabs) > 2 + 0.1 * .gcra)'
jq -e '[.clients[].sent] | add >= 200 * 10' <<<"$out" >/dev/null || fail "the rate clients hardly sent: $out"
bad=$(jq "[.clients[] | $off] | length" <<<"$out")
[ "$bad" = 0 ] || fail "$bad of 200 addresses not held to 4r/s: $(jq -c "[.clients[] | $off][:5]" <<<"$out")"
jq -e '.flood_sent > 5 * .flood_ok and ((.flood_ok - .flood_gcra) | fabs) <= 2 + 0.1 * .flood_gcra' <<<"$out" >/dev/null ||
    fail "the flooding address was not held to its rate: $(jq -c '{flood_ok, flood_sent, flood_gcra}' <<<"$out")"

# 429 with Retry-After (a whole number of seconds, at least 1), HTTP/1.1 and
# HTTP/2; the 503 of limit_status.
r=$(curl -si "$U/burst" --interface 127.0.0.1)
r=$(curl -si "$U/burst" --interface 127.0.0.1)
r=$(curl -si "$U/burst" --interface 127.0.0.1)
r=$(curl -si "$U/burst" --interface 127.0.0.1)
grep -q "^HTTP/1.1 429 Too Many Requests" <<<"$r" || fail "429: $r"
ra=$(grep -i "^Retry-After:" <<<"$r" | tr -dc 0-9)
[ -n "$ra" ] && [ "$ra" -ge 1 ] && [ "$ra" -le 60 ] || fail "Retry-After of a 1r/m bucket: $r"
r=$(curl -si --http2-prior-knowledge "$U/burst" --interface 127.0.0.1)
grep -q "^HTTP/2 429" <<<"$r" && grep -qi "^retry-after: [0-9]" <<<"$r" || fail "HTTP/2 429: $r"
c=$(codes "$U/busy" "$U/busy" --interface 127.0.0.7)
[ "$c" = "200 503 " ] || fail "limit_status 503: $c"
grep -qi "^Retry-After: [0-9]" <<<"$(curl -si "$U/busy" --interface 127.0.0.7)" || fail "503 Retry-After"

# HTTP/2: each stream of one connection is a request (h2load: four
# streams, one after the other, on one connection).
h=$(h2load -n 4 -c 1 -m 1 "$U/h2" | grep "status codes")
[ "$h" = "status codes: 3 2xx, 0 3xx, 1 4xx, 0 5xx" ] || fail "HTTP/2 streams against the burst: $h"

# limit_conn 2: a third open connection from the same peer is refused, on
# either protocol; once one closes the peer is served again.
for proto in http1.1 http2-prior-knowledge; do
    exec 5<>/dev/tcp/127.0.0.1/"$PORT" 6<>/dev/tcp/127.0.0.1/"$PORT"
    printf 'GET /x HTTP/1.1\r\nHost: a\r\n\r\n' >&5
    printf 'GET /x HTTP/1.1\r\nHost: a\r\n\r\n' >&6
    head -c 12 <&5 >/dev/null && head -c 12 <&6 >/dev/null # both accepted and answered
    [ "$(codes --$proto "$U/conn")" = "429 " ] || fail "limit_conn 2, a third connection ($proto)"
    [ "$(codes --$proto "$U/conn" --interface 127.0.0.9)" = "200 " ] || fail "limit_conn: another peer ($proto)"
    exec 5<&- 6<&-
    for _ in $(seq 1 50); do
        [ "$(codes --$proto "$U/conn")" = "200 " ] && break
        sleep 0.1
    done
    [ "$(codes --$proto "$U/conn")" = "200 " ] || fail "limit_conn: served again once they closed ($proto)"
done

# trusted_proxies: from 127.0.0.1 each X-Forwarded-For client has its own
# budget (the rightmost address that is not a trusted proxy); from
# 127.0.0.10 the field is not believed: one budget, the peer's.
[ "$(codes -H 'X-Forwarded-For: 192.0.2.1' "$U/fwd" "$U/fwd")" = "200 429 " ] || fail "forwarded client 1"
[ "$(codes -H 'X-Forwarded-For: 192.0.2.2' "$U/fwd")" = "200 " ] || fail "forwarded client 2"
[ "$(codes -H 'X-Forwarded-For: 192.0.2.3, 127.0.0.1' "$U/fwd")" = "200 " ] || fail "a trusted hop is skipped"
[ "$(codes -H 'X-Forwarded-For: 192.0.2.3' "$U/fwd")" = "429 " ] || fail "the same client through two hops"
[ "$(codes --http2-prior-knowledge -H 'X-Forwarded-For: 2001:db8::1' "$U/fwd")" = "200 " ] &&
    [ "$(codes --http2-prior-knowledge -H 'X-Forwarded-For: [2001:db8::1]:4711' "$U/fwd")" = "429 " ] ||
    fail "an IPv6 forwarded client over HTTP/2"
[ "$(codes --interface 127.0.0.10 -H 'X-Forwarded-For: 192.0.2.4' "$U/fwd")" = "200 " ] || fail "untrusted peer"
[ "$(codes --interface 127.0.0.10 -H 'X-Forwarded-For: 192.0.2.5' "$U/fwd")" = "429 " ] ||
    fail "an untrusted peer's X-Forwarded-For must not give it another budget"

# The counters, by route and kind.
m=$(curl -s "http://127.0.0.1:$ADMIN_PORT/metrics")
n=$(grep '^scalwsd_limited_total{route="burst",kind="rate"}' <<<"$m" | awk '{print $2}')
[ "${n:-0}" -ge 1002 ] || fail "limited_total burst/rate: $n"
grep -q '^scalwsd_limited_total{route="conn",kind="conn"} [1-9]' <<<"$m" || fail "limited_total conn"
grep -q '^scalwsd_limited_total{route="busy",kind="rate"} [1-9]' <<<"$m" || fail "limited_total busy"
grep -q '^scalwsd_limited_total{route="rate",kind="deny"} 0' <<<"$m" || fail "limited_total deny"

# A reload changes the limit: /busy's address gets a fresh route budget of 5.
sed -i 's|^limit_status = 503|limit_status = 503\nlimit_burst = 4|' "$T/sws.ini"
kill -HUP "$SWS_PID"
wait_log "every loop serves generation 1" || fail "reload not acknowledged"
[ "$(codes "$U/busy" "$U/busy" "$U/busy" "$U/busy" "$U/busy" --interface 127.0.0.11)" = "200 200 200 200 200 " ] ||
    fail "reloaded limit_burst"
# A bad value is refused and the old one serves on.
sed -i 's|^limit_burst = 4|limit_burst = 4\nlimit_rate = 10r/h|' "$T/sws.ini"
kill -HUP "$SWS_PID"
wait_log "limit_rate: bad rate '10r/h'" || fail "bad limit_rate not refused on reload"
[ "$(codes "$U/busy" --interface 127.0.0.11)" = "503 " ] || fail "the old limits after a refused reload"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit status $SWS_STATUS"

# The proxy as the default route, gated: its request (head and body) waits
# for the gate's word before a byte goes upstream; a refused one never
# reaches the upstream and its body is read and dropped, the connection goes
# on. HTTP/1.1 and HTTP/2.
start_sws_upstream
start_sws "\nevent_loops = 2\nscenario = proxy\nlimit_rate = 1r/m\nlimit_burst = 2\n[proxy]\nupstream = 127.0.0.1:$UP"
U="http://127.0.0.1:$PORT"
# start_sws's own GET / took one of the three.
[ "$(codes -d hello "$U/a" --interface 127.0.0.1)" = "200 " ] || fail "proxy: a POST within the burst"
r=$(raw "POST /b HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhelloPOST /c HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")
[ "$(grep -c '^HTTP/1.1 ' <<<"$r")" = 2 ] && grep -q '^HTTP/1.1 200' <<<"$r" && grep -q '^HTTP/1.1 429' <<<"$r" ||
    fail "proxy: pipelined POSTs, the second past the burst: $r"
[ "$(codes --http2-prior-knowledge -d hello "$U/d" --interface 127.0.0.1)" = "429 " ] || fail "proxy: HTTP/2 past the burst"
[ "$(codes --http2-prior-knowledge -d hello "$U/d" --interface 127.0.0.12)" = "200 " ] || fail "proxy: HTTP/2, another client"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit status $SWS_STATUS"
echo "client_limits: ok"
