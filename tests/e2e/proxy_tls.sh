#!/usr/bin/env bash
# The proxy speaking TLS to its upstream ([proxy] tls = on; doc/tls.md,
# "Upstream TLS"): the test upstream in its TLS mode, with a certificate from a
# CA made here by the openssl CLI. GET and POST go through it, keep-alive reuses
# one upstream connection, large bodies cross both ways, SNI carries tls_name
# (none for an address); a certificate from another CA, or for another name,
# is a 502 counted as kind="tls" (verify off accepts it); a routed proxy does
# the same on its own pool; active health checks speak TLS; tls with pool =
# shared, an unreadable CA file and a changed tls key on reload are refused.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "SKIP: python3"; exit 77; }
command -v openssl >/dev/null || { echo "SKIP: openssl"; exit 77; }
PY=$(dirname "$0")/proxy_upstream.py
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done; cleanup' EXIT

# A CA, the upstream's certificate from it (upstream.test and 127.0.0.1), and
# a second CA that signed nothing of the upstream's.
cd "$T"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=test-ca \
    -keyout ca.key -out ca.pem 2>/dev/null
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=other-ca \
    -keyout other.key -out other.pem 2>/dev/null
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=upstream.test \
    -keyout up.key -out up.csr 2>/dev/null
printf 'subjectAltName=DNS:upstream.test,IP:127.0.0.1\n' >up.ext
openssl x509 -req -in up.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile up.ext \
    -out up.pem 2>/dev/null
cd - >/dev/null
[ -s "$T/up.pem" ] || fail "openssl did not make the upstream's certificate"

# The TLS upstream: notes the SNI of each handshake in $T/rec.sni, counts its
# connections in $T/rec.conns and failed handshakes in $T/rec.tls_fail.
rm -f "$T/up.port"
UP_TLS_CERT=$T/up.pem UP_TLS_KEY=$T/up.key python3 "$PY" "$T/up.port" 100 "$T/rec" &
PIDS+=($!)
wait_ready "$T/up.port" "$SWS_START_SECS" "${PIDS[-1]}" || fail "the TLS upstream did not start"
UP=$(cat "$T/up.port")

sum_metric() { # the sum of a metric's lines whose labels contain $2
    curl -s -m 5 "http://127.0.0.1:$ADMIN_PORT/metrics" |
        awk -v n="$1" -v l="$2" 'index($1, n "{") == 1 && index($1, l) { s += $2 } END { print s + 0 }'
}
TLS_ERRS='kind="tls"'

# ---- verified, with tls_name: GET and POST, keep-alive reuse, SNI ---------
: >"$T/rec.sni"
start_sws "scenario = proxy\nevent_loops = 1\n[proxy]\nupstream = 127.0.0.1:$UP\ntls = on\ntls_ca = $T/ca.pem\ntls_name = upstream.test"
out=$(curl -s -m 10 "http://127.0.0.1:$PORT/a" "http://127.0.0.1:$PORT/b" "http://127.0.0.1:$PORT/c")
[ "$out" = "$(printf 'ok\nok\nok')" ] || fail "three GETs over TLS: '$out'"
out=$(curl -s -m 10 -d 'hello over tls' "http://127.0.0.1:$PORT/echo")
[ "$out" = "hello over tls" ] || fail "POST echo over TLS: '$out'"
# One loop, small requests one after the other (start_sws's GET / first):
# one handshake, the rest on the pooled connection.
connects=$(sum_metric scalwsd_upstream_connects_total 'route="default"')
reuses=$(sum_metric scalwsd_upstream_reuses_total 'route="default"')
[ "$connects" = 1 ] && [ "$reuses" -ge 4 ] ||
    fail "keep-alive over TLS: $connects connects, $reuses reuses"
# 200 KB up and 2 MiB down: many records and writes each way. A response
# that fills the client's output pauses the upstream's receive; the
# connection still goes back to the pool once it ends (rate-limited here so
# that it does pause).
head -c 200000 /dev/urandom | base64 -w0 >"$T/body"
curl -s -m 20 --data-binary @"$T/body" "http://127.0.0.1:$PORT/echo" -o "$T/echoed"
cmp -s "$T/body" "$T/echoed" || fail "a 200 KB POST echoed over TLS differs ($(wc -c <"$T/echoed") bytes)"
n=$(curl -s -m 30 --limit-rate 10M -o /dev/null -w '%{size_download}' "http://127.0.0.1:$PORT/big/2")
[ "$n" = $((2 << 20)) ] || fail "/big/2 over TLS: $n bytes"
n=$(curl -s -m 30 -o /dev/null -w '%{size_download}' "http://127.0.0.1:$PORT/big/2")
[ "$n" = $((2 << 20)) ] || fail "/big/2 over TLS, again: $n bytes"
connects=$(sum_metric scalwsd_upstream_connects_total 'route="default"')
[ "$connects" = 1 ] || fail "large answers over TLS lost their pooled connection: $connects connects"
out=$(curl -s -m 10 "http://127.0.0.1:$PORT/chunked" | wc -c)
[ "$out" = 35000 ] || fail "chunked over TLS: $out bytes"
# Close-delimited: the upstream's close (without close_notify) ends the body.
out=$(curl -s -m 10 "http://127.0.0.1:$PORT/eof" | wc -c)
[ "$out" = 30000 ] || fail "close-delimited over TLS: $out bytes"
# Eight clients at once, 20 keep-alive POSTs each: every answer its own body.
clients=()
for c in $(seq 1 8); do
    args=()
    for i in $(seq 1 20); do args+=(-d "c${c}r$i" "http://127.0.0.1:$PORT/echo" --next); done
    curl -s -m 30 "${args[@]}" -o /dev/null "http://127.0.0.1:$PORT/x" >"$T/par.$c" &
    clients+=($!)
done
for p in "${clients[@]}"; do wait "$p" || true; done # each bounded by curl -m 30
for c in $(seq 1 8); do
    want=$(for i in $(seq 1 20); do printf 'c%dr%d' "$c" "$i"; done)
    [ "$(cat "$T/par.$c")" = "$want" ] || fail "client $c of 8 got '$(cat "$T/par.$c")'"
done
connects=$(sum_metric scalwsd_upstream_connects_total 'route="default"')
[ "$(cat "$T/rec.conns")" = "$connects" ] || fail "the upstream saw $(cat "$T/rec.conns") connections, scalwsd $connects"
grep -qx upstream.test "$T/rec.sni" || fail "SNI: $(cat "$T/rec.sni")"
[ "$(sum_metric scalwsd_upstream_errors_total "$TLS_ERRS")" = 0 ] || fail "tls errors counted"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit $SWS_STATUS"

# ---- the default name: the upstream's host as written, an address ---------
: >"$T/rec.sni"
start_sws "scenario = proxy\nevent_loops = 1\n[proxy]\nupstream = 127.0.0.1:$UP\ntls = on\ntls_ca = $T/ca.pem"
out=$(curl -s -m 10 "http://127.0.0.1:$PORT/x")
[ "$out" = ok ] || fail "verified by address: '$out'"
grep -qx -- - "$T/rec.sni" || fail "an address must not go as SNI: $(cat "$T/rec.sni")"
# A pooled TLS connection the upstream drops at the next request (/die): the
# GET is retried on a fresh connection, whose handshake resumes the session
# the first connection was given (its ticket).
: >"$T/rec.resumed"
[ "$(curl -s -m 10 "http://127.0.0.1:$PORT/die")" = die ] || fail "/die"
out=$(curl -s -m 10 "http://127.0.0.1:$PORT/after-die")
[ "$out" = ok ] || fail "the request after a dropped pooled TLS connection: '$out'"
[ "$(sum_metric scalwsd_upstream_retries_total 'route="default"')" -ge 1 ] || fail "no retry counted"
[ "$(cat "$T/rec.resumed")" = 1 ] || fail "the retry's handshake did not resume: $(cat "$T/rec.resumed")"
# [proxy] tls_verify is a restart key: SIGHUP with it changed is refused.
sed -i 's/^tls = on$/tls = on\ntls_verify = off/' "$T/sws.ini"
kill -HUP "$SWS_PID"
wait_log "reload refused.*\[proxy\] tls_verify changed (on -> off); that needs a restart" ||
    fail "a changed tls_verify was not refused on reload"
stop_sws

# ---- another CA: 502, kind="tls"; verify off accepts it ---------------------
start_sws "scenario = proxy\nevent_loops = 1\n[proxy]\nupstream = 127.0.0.1:$UP\ntls = on\ntls_ca = $T/other.pem\ntls_name = upstream.test"
code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/x")
[ "$code" = 502 ] || fail "another CA: $code"
code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' -d body "http://127.0.0.1:$PORT/echo")
[ "$code" = 502 ] || fail "another CA, POST: $code"
[ "$(sum_metric scalwsd_upstream_errors_total "$TLS_ERRS")" -ge 2 ] ||
    fail "another CA not counted as tls: $(curl -s "http://127.0.0.1:$ADMIN_PORT/metrics" | grep errors_total)"
# One line says why (and only one: at most every 10 s).
wait_log "route default: TLS to upstream 127.0.0.1:$UP (upstream.test) failed: .*certificate refused: unable to get local issuer certificate" ||
    fail "no log line for the refused certificate"
[ "$(grep -c 'TLS to upstream' "$T/log")" = 1 ] || fail "the failure was logged $(grep -c 'TLS to upstream' "$T/log") times"
stop_sws
start_sws "scenario = proxy\nevent_loops = 1\n[proxy]\nupstream = 127.0.0.1:$UP\ntls = on\ntls_ca = $T/other.pem\ntls_verify = off\ntls_name = wrong.test"
out=$(curl -s -m 10 -d 'unverified' "http://127.0.0.1:$PORT/echo")
[ "$out" = unverified ] || fail "tls_verify = off: '$out'"
stop_sws

# ---- a name the certificate does not carry: 502, kind="tls" ---------------
start_sws "scenario = proxy\nevent_loops = 2\n[proxy]\nupstream = 127.0.0.1:$UP\ntls = on\ntls_ca = $T/ca.pem\ntls_name = wrong.test"
code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/x")
[ "$code" = 502 ] || fail "tls_name mismatch: $code"
[ "$(sum_metric scalwsd_upstream_errors_total "$TLS_ERRS")" -ge 1 ] || fail "mismatch not counted as tls"
[ "$(sum_metric scalwsd_upstream_errors_total 'kind="reset"')" = 0 ] || fail "a tls failure counted as reset"
wait_log "certificate refused: hostname mismatch" || fail "no log line for the wrong name"
stop_sws

# ---- an upstream that speaks no TLS: 502; one that never answers: 504 -----
# A plain HTTP upstream answers a ClientHello at once (scalwsd: 400, close).
"$SWS" --listen 127.0.0.1:0 --worker-threads 1 --ready-file "$T/plain.ready" 2>"$T/plain.log" &
PIDS+=($!)
wait_ready "$T/plain.ready" "$SWS_START_SECS" "${PIDS[-1]}" || fail "the plain upstream did not start"
ready_port "$T/plain.ready" >"$T/plain.port"
# A listener that never accepts: the kernel completes the connect, nobody speaks.
rm -f "$T/mute.port"
python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
import os; os.replace(sys.argv[1] + ".tmp", sys.argv[1]); time.sleep(60)' "$T/mute.port" &
PIDS+=($!)
wait_ready "$T/mute.port" "$SWS_START_SECS" "${PIDS[-1]}" || fail "the mute listener did not start"
start_sws "scenario = respond\n[route plain]\npath = /plain\nscenario = proxy\nupstream = 127.0.0.1:$(cat "$T/plain.port")\ntls = on\ntls_verify = off\n[route mute]\npath = /mute\nscenario = proxy\nupstream = 127.0.0.1:$(cat "$T/mute.port")\ntls = on\ntls_verify = off\nconnect_timeout = 500ms"
code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/plain")
[ "$code" = 502 ] || fail "an upstream speaking plain HTTP to tls = on: $code"
[ "$(sum_metric scalwsd_upstream_errors_total 'route="plain",kind="tls"')" = 1 ] || fail "plain: not counted as tls"
code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/mute")
[ "$code" = 504 ] || fail "a handshake that never ends: $code"
[ "$(sum_metric scalwsd_upstream_errors_total 'route="mute",kind="tls"')" = 1 ] || fail "mute: not counted as tls"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit $SWS_STATUS"

# ---- a routed proxy: its own pool, its own instance's completions ---------
start_sws "scenario = respond\nevent_loops = 2\n[route api]\npath_prefix = /api/\nstrip_prefix = on\nscenario = proxy\nupstream = 127.0.0.1:$UP\ntls = on\ntls_ca = $T/ca.pem\ntls_name = upstream.test"
for i in $(seq 1 20); do
    out=$(curl -s -m 10 -d "r$i" "http://127.0.0.1:$PORT/api/echo" "http://127.0.0.1:$PORT/api/echo2")
    [ "$out" = "r${i}r$i" ] || fail "routed POST $i over TLS: '$out'"
done
[ "$(curl -s -m 10 "http://127.0.0.1:$PORT/")" = "Hello from scalwsd" ] || fail "the default route"
[ "$(sum_metric scalwsd_upstream_reuses_total 'route="api"')" -ge 10 ] || fail "routed: no reuse"
[ "$(sum_metric scalwsd_upstream_errors_total 'route="api"')" = 0 ] || fail "routed: errors"
# The route's tls keys need a restart: a reload that changes one is refused.
sed -i 's/^tls_name = upstream.test/tls_name = other.test/' "$T/sws.ini"
kill -HUP "$SWS_PID"
wait_log "tls\* changed.*needs a restart" || fail "a changed route tls_name was not refused on reload"
out=$(curl -s -m 10 "http://127.0.0.1:$PORT/api/x")
[ "$out" = ok ] || fail "after the refused reload: '$out'"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit $SWS_STATUS"

# ---- active health checks over TLS -----------------------------------------
UPM="scalwsd_upstream_up{route=\"default\",upstream=\"127.0.0.1:$UP\",address=\"127.0.0.1:$UP\"}"
OKC="scalwsd_upstream_checks_total{route=\"default\",upstream=\"127.0.0.1:$UP\",address=\"127.0.0.1:$UP\",result=\"ok\"}"
start_sws "scenario = proxy\n[proxy]\nupstream = 127.0.0.1:$UP\ntls = on\ntls_ca = $T/ca.pem\ntls_name = upstream.test\nhealth_check = /health\nhealth_interval = 200ms\nhealth_fall = 2"
for _ in $(seq 1 100); do
    [ "$(metric "$OKC")" -ge 3 ] && break
    sleep 0.1
done
[ "$(metric "$OKC")" -ge 3 ] || fail "no passed TLS health checks: $(metric "$OKC")"
[ "$(metric "$UPM")" = 1 ] || fail "checked over TLS, but down"
stop_sws
# With a CA that does not verify the upstream, the checks fail and take it down.
start_sws_try "scenario = proxy\n[proxy]\nupstream = 127.0.0.1:$UP\ntls = on\ntls_ca = $T/other.pem\ntls_name = upstream.test\nhealth_check = /health\nhealth_interval = 200ms\nhealth_fall = 2" || true
[ -n "$SWS_PID" ] || fail "did not start"
for _ in $(seq 1 100); do
    [ "$(metric "$UPM")" = 0 ] && break
    sleep 0.1
done
[ "$(metric "$UPM")" = 0 ] || fail "TLS health checks with the wrong CA kept it up"
stop_sws

# ---- refusals: pool = shared, an unreadable CA file -------------------------
printf '[server]\nscenario = proxy\n[proxy]\nupstream = 127.0.0.1:%s\ntls = on\npool = shared\n' "$UP" >"$T/bad.ini"
out=$("$SWS" --check-config --config "$T/bad.ini" 2>&1) && fail "tls with pool = shared accepted"
case $out in *"tls = on needs pool = per_loop"*) ;; *) fail "pool = shared: $out" ;; esac
printf '[server]\nscenario = proxy\n[proxy]\nupstream = 127.0.0.1:%s\ntls = on\ntls_ca = %s/none.pem\n' "$UP" "$T" >"$T/bad.ini"
out=$("$SWS" --check-config --config "$T/bad.ini" 2>&1) && fail "a missing tls_ca accepted"
case $out in *"tls_ca $T/none.pem: cannot open"*) ;; *) fail "missing tls_ca: $out" ;; esac
out=$("$SWS" --config "$T/bad.ini" --listen 127.0.0.1:0 2>&1) && fail "started with a missing tls_ca"
case $out in *"tls_ca $T/none.pem"*) ;; *) fail "start with a missing tls_ca: $out" ;; esac
printf '[server]\nscenario = respond\n[route r]\npath = /r\nscenario = proxy\nupstream = 127.0.0.1:%s\ntls = on\ntls_ca = %s/up.key\n' "$UP" "$T" >"$T/bad.ini"
out=$("$SWS" --check-config --config "$T/bad.ini" 2>&1) && fail "a tls_ca without a certificate accepted"
case $out in *"[route r] tls_ca $T/up.key: no PEM certificate"*) ;; *) fail "tls_ca without a certificate: $out" ;; esac
echo ok
