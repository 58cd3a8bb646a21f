#!/usr/bin/env bash
# scenario proxy against a small python upstream with one behaviour per path:
# bodies and chunked both ways, close-delimited answers, 204, and each fault
# with its answer (502, 504, a cut answer closes the client, a dead pooled
# connection retried once for idempotent methods only). No client hangs:
# every curl has -m. Idle pooled connections are watched: one the upstream
# closes is dropped at once.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "SKIP: python3"; exit 77; }

start_test_upstream 50

start_sws "scenario = proxy\nevent_loops = 1\n[proxy]\nupstream = 127.0.0.1:$UP\nread_timeout = 1s"
URL="http://127.0.0.1:$PORT"
C=(curl -s -m 10)

# Request headers: hop-by-hop removed, X-Forwarded-For and Via added; the
# client's own X-Forwarded-For is dropped (it is no trusted proxy: see
# proxy_forwarded.sh for trusted_proxies).
"${C[@]}" -D "$T/h" -o /dev/null -H 'Keep-Alive: 5' -H 'X-Secret: 1' -H 'Connection: X-Secret' \
    -H 'X-Forwarded-For: 10.0.0.1' "$URL/echo"
info=$(grep -i '^X-Info:' "$T/h" | tr -d '\r')
case $info in *"xff=127.0.0.1;"*) ;; *) fail "X-Forwarded-For: $info" ;; esac
case $info in *"via=1.1 scalwsd;"*) ;; *) fail "Via: $info" ;; esac
case $info in *keep-alive* | *x-secret* | *connection*) fail "hop-by-hop forwarded: $info" ;; esac

# A Content-Length body both ways (larger than every buffer on the way).
head -c 300000 /dev/urandom >"$T/in"
"${C[@]}" -o "$T/out" --data-binary @"$T/in" -H 'Expect:' "$URL/echo" || fail "echo"
cmp -s "$T/in" "$T/out" || fail "echoed body differs ($(stat -c %s "$T/out") bytes)"
# Chunked upstream, and back to the client chunked as well.
"${C[@]}" -o "$T/out" -H 'Transfer-Encoding: chunked' --data-binary @"$T/in" "$URL/echo" ||
    fail "chunked echo"
cmp -s "$T/in" "$T/out" || fail "chunked request body differs"
"${C[@]}" -D "$T/h" -o "$T/out" "$URL/chunked" || fail "chunked answer"
grep -qi '^Transfer-Encoding: chunked' "$T/h" || fail "answer not chunked: $(cat "$T/h")"
[ "$(stat -c %s "$T/out")" = 35000 ] || fail "chunked answer size $(stat -c %s "$T/out")"
# Expect: 100-continue is answered by the proxy; the body still arrives.
"${C[@]}" -o "$T/out" -H 'Expect: 100-continue' --data-binary @"$T/in" "$URL/echo" ||
    fail "expect"
cmp -s "$T/in" "$T/out" || fail "body after 100-continue differs"

# A close-delimited answer reaches an HTTP/1.1 client chunked (so it can tell
# a complete answer from a cut one), an HTTP/1.0 client close-delimited.
"${C[@]}" -D "$T/h" -o "$T/out" "$URL/eof" || fail "eof answer"
grep -qi '^Transfer-Encoding: chunked' "$T/h" || fail "eof answer not re-chunked"
[ "$(stat -c %s "$T/out")" = 30000 ] || fail "eof answer size"
"${C[@]}" -0 -o "$T/out" "$URL/eof" || fail "eof answer to 1.0"
[ "$(stat -c %s "$T/out")" = 30000 ] || fail "eof answer size (1.0)"

# 204 and HEAD: no body, and the connection stays usable.
out=$(raw 'GET /nocontent HTTP/1.1\r\nHost: x\r\n\r\nHEAD /chunked HTTP/1.1\r\nHost: x\r\n\r\nGET /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' 5)
[ "$(echo "$out" | grep -c '^HTTP/1.1 ')" = 3 ] || fail "204/HEAD then GET: $out"
case $out in *part00*) fail "HEAD answered with a body: $out" ;; esac
[ "$(echo "$out" | tail -n 1)" = ok ] || fail "GET after 204 and HEAD: $out"

# Upstream faults. A generated 504 counts in requests_total and in
# errors_total{status="504"}, one each.
req0=$(metric 'scalwsd_requests_total{loop="0"}')
e504=$(metric 'scalwsd_errors_total{loop="0",status="504"}')
code=$("${C[@]}" -o /dev/null -w '%{http_code}' "$URL/slow")
[ "$code" = 504 ] || fail "slow upstream: $code, want 504"
[ "$(metric 'scalwsd_requests_total{loop="0"}')" = $((req0 + 1)) ] || fail "504 not in requests_total"
[ "$(metric 'scalwsd_errors_total{loop="0",status="504"}')" = $((e504 + 1)) ] ||
    fail "504 not in errors_total: $(curl -s "http://127.0.0.1:$ADMIN_PORT/metrics" | grep errors_total)"
code=$("${C[@]}" -o /dev/null -w '%{http_code}' "$URL/badstatus")
[ "$code" = 502 ] || fail "status line with two spaces (status 0 to llhttp): $code, want 502"
rc=0
"${C[@]}" -o "$T/out" "$URL/cut" || rc=$?
[ "$rc" = 18 ] || fail "cut answer: curl exit $rc, want 18 (partial file)"

# A pooled connection that died: GET is retried on a fresh one, POST is not.
"${C[@]}" -o /dev/null "$URL/die" || fail "die"
sleep 0.2
[ "$("${C[@]}" "$URL/after")" = ok ] || fail "GET after a dead pooled connection"
"${C[@]}" -o /dev/null "$URL/die" || fail "die 2"
sleep 0.2
code=$("${C[@]}" -o /dev/null -w '%{http_code}' --data 'a=1' "$URL/post")
[ "$code" = 502 ] || fail "POST on a dead pooled connection: $code, want 502"
# PUT is retried while what was sent fits the 16 KiB replay copy, not past it.
"${C[@]}" -o /dev/null "$URL/die" || fail "die 3"
sleep 0.2
code=$("${C[@]}" -o /dev/null -w '%{http_code}' -X PUT --data-binary @<(head -c 1000 /dev/zero) "$URL/put")
[ "$code" = 200 ] || fail "small PUT on a dead pooled connection: $code, want 200 (retried)"
"${C[@]}" -o /dev/null "$URL/die" || fail "die 4"
sleep 0.2
code=$("${C[@]}" -o /dev/null -w '%{http_code}' -X PUT -H 'Expect:' --data-binary @<(head -c 20000 /dev/zero) "$URL/put")
[ "$code" = 502 ] || fail "20 KB PUT on a dead pooled connection: $code, want 502 (not retried)"

m=$(curl -s "http://127.0.0.1:$ADMIN_PORT/metrics")
val() { echo "$m" | awk -v n="$1" '$1 == n { print $2 }'; }
[ "$(val 'scalwsd_upstream_retries_total{loop="0",route="default"}')" -ge 1 ] || fail "no retry counted"
[ "$(val 'scalwsd_upstream_errors_total{loop="0",route="default",kind="read_timeout"}')" -ge 1 ] ||
    fail "no read_timeout counted"
[ "$(val 'scalwsd_upstream_errors_total{loop="0",route="default",kind="truncated"}')" -ge 1 ] ||
    fail "no truncated counted: $(echo "$m" | grep upstream_)"
[ "$(val 'scalwsd_upstream_foreign_loop_uses_total{loop="0",route="default"}')" = 0 ] || fail "foreign uses"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit $SWS_STATUS"

# An idle pooled connection the upstream closes leaves the pool at once (its
# watch read sees the end of stream): the next request goes on a fresh
# connection, not through the retry path.
start_sws "scenario = proxy\nevent_loops = 1\n[proxy]\nupstream = 127.0.0.1:$UP"
URL="http://127.0.0.1:$PORT"
[ "$("${C[@]}" "$URL/idleclose")" = bye ] || fail "idleclose"
for _ in $(seq 1 30); do
    [ "$(metric 'scalwsd_upstream_idle_closed_total{loop="0",route="default"}')" = 1 ] && break
    sleep 0.1
done
[ "$(metric 'scalwsd_upstream_idle_closed_total{loop="0",route="default"}')" = 1 ] || fail "idle close not seen"
[ "$(metric 'scalwsd_upstream_pool_idle{loop="0",route="default"}')" = 0 ] || fail "closed connection still pooled"
reuses=$(metric 'scalwsd_upstream_reuses_total{loop="0",route="default"}')
connects=$(metric 'scalwsd_upstream_connects_total{loop="0",route="default"}')
[ "$("${C[@]}" "$URL/after")" = ok ] || fail "GET after an idle close"
[ "$(metric 'scalwsd_upstream_retries_total{loop="0",route="default"}')" = 0 ] || fail "went through the retry path"
[ "$(metric 'scalwsd_upstream_reuses_total{loop="0",route="default"}')" = "$reuses" ] ||
    fail "reused a closed connection"
[ "$(metric 'scalwsd_upstream_connects_total{loop="0",route="default"}')" = $((connects + 1)) ] ||
    fail "no fresh connection"
stop_sws

# pool = shared: a detached idle connection has no read armed; the loop that
# takes one peeks first, so one the upstream closed is dropped, not reused.
start_sws "scenario = proxy\nevent_loops = 1\n[proxy]\nupstream = 127.0.0.1:$UP\npool = shared"
URL="http://127.0.0.1:$PORT"
[ "$("${C[@]}" "$URL/idleclose")" = bye ] || fail "shared: idleclose"
sleep 0.6
[ "$(metric 'scalwsd_upstream_shared_pool_idle')" = 1 ] || fail "shared: not pooled"
[ "$("${C[@]}" "$URL/after")" = ok ] || fail "shared: GET after an idle close"
[ "$(metric 'scalwsd_upstream_idle_closed_total{loop="0",route="default"}')" = 1 ] || fail "shared: close not seen"
[ "$(metric 'scalwsd_upstream_retries_total{loop="0",route="default"}')" = 0 ] ||
    fail "shared: went through the retry path"
stop_sws

# Host upstream: the client's, and for an HTTP/1.0 request without one the
# upstream's name (an HTTP/1.1 upstream requires a Host; nginx answers 400).
start_sws "scenario = proxy\nevent_loops = 1\n[proxy]\nupstream = 127.0.0.1:$UP"
out=$(raw 'GET /echo HTTP/1.0\r\n\r\n')
grep -q "^X-Info: .*;host=127.0.0.1:$UP" <<<"$out" || fail "HTTP/1.0 without Host: $out"
out=$(raw 'GET /echo HTTP/1.1\r\nHost: site.example\r\nConnection: close\r\n\r\n')
grep -q "^X-Info: .*;host=site.example" <<<"$out" || fail "the client's Host: $out"
stop_sws

# Refused: nothing listens on the upstream port.
start_sws "scenario = proxy\n[proxy]\nupstream = 127.0.0.1:1"
URL="http://127.0.0.1:$PORT"
code=$("${C[@]}" -o /dev/null -w '%{http_code}' "$URL/")
[ "$code" = 502 ] || fail "refused upstream: $code, want 502"
m=$(curl -s "http://127.0.0.1:$ADMIN_PORT/metrics")
grep -q 'kind="refused"} [1-9]' <<<"$m" || fail "refused not counted"
grep -q '^scalwsd_errors_total{loop="[0-9]*",status="502"} [1-9]' <<<"$m" ||
    fail "502 not in errors_total: $(echo "$m" | grep errors_total)"
stop_sws

# Bad values: one line naming file, line and key; exit 2.
printf '[server]\nscenario = proxy\n[proxy]\nupstream = nowhere\n' >"$T/bad.ini"
rc=0
"$SWS" --check-config --config "$T/bad.ini" 2>"$T/err" || rc=$?
[ "$rc" = 2 ] || fail "bad upstream: exit $rc"
grep -q "bad.ini:4: \[proxy\] upstream: bad upstream 'nowhere'" "$T/err" || fail "$(cat "$T/err")"
printf '[proxy]\nread_timeout = soon\n' >"$T/bad.ini"
rc=0
"$SWS" --check-config --config "$T/bad.ini" 2>"$T/err" || rc=$?
[ "$rc" = 2 ] && grep -q 'bad.ini:2: \[proxy\] read_timeout' "$T/err" || fail "$(cat "$T/err")"
rc=0
"$SWS" --check-config --scenario proxy 2>"$T/err" || rc=$?
[ "$rc" = 2 ] && grep -q 'needs \[proxy\] upstream' "$T/err" || fail "$(cat "$T/err")"
echo ok
