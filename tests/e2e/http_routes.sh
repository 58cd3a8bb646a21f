#!/usr/bin/env bash
# Routes (issue 22, doc/routes.md), checked with curl: / is static, /healthz
# is respond, /assets/ is static under another root with strip_prefix, a
# wildcard host has its own answer, and what no route matches is a 404 (no
# [server] scenario). Each answer's route is the access log's last field and
# a /metrics label (requests, 4xx, latency histogram). A reload adds a route
# and changes another's body: new requests see both at once, the removed
# route's requests go to what matches now. --check-config refuses two routes
# with the same match, naming both with file:line.
. "$(dirname "$0")/lib.sh"
make_static_tree 4096
mkdir -p "$T/assets"
printf 'asset\n' >"$T/assets/app.js"
LOG=$T/access.log
routes() {
    cat <<EOF
event_loops = 2
access_log = $LOG
[route site]
path_prefix = /
scenario = static
root = $R
[route health]
path = /healthz
scenario = respond
body = ok$1
[route assets]
path_prefix = /assets/
scenario = static
root = $T/assets
strip_prefix = on
[route vhost]
host = *.example.test
scenario = respond
status = 203
body = vhost
$2
EOF
}
start_sws "$(routes 1 '')"
URL="http://127.0.0.1:$PORT"
[ "$(curl -s -m 5 "$URL/a.txt")" = hello ] || fail "/a.txt (static)"
[ "$(curl -s -m 5 "$URL/healthz")" = ok1 ] || fail "/healthz (respond)"
[ "$(curl -s -m 5 "$URL/healthz?x=1")" = ok1 ] || fail "/healthz?x=1 (the query is not matched)"
[ "$(curl -s -m 5 "$URL/assets/app.js")" = asset ] || fail "/assets/app.js (strip_prefix)"
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$URL/assets/a.txt")
[ "$code" = 404 ] || fail "/assets/a.txt is looked up under the assets root: $code"
[ "$(curl -s -m 5 -H 'Host: A.Example.TEST:8080' "$URL/a.txt")" = vhost ] || fail "wildcard host"
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' -H 'Host: example.test' "$URL/healthz")
[ "$code" = 200 ] || fail "example.test is not under *.example.test: $code"
# HTTP/1.0 without Host: only routes without a host.
r=$(raw 'GET /healthz HTTP/1.0\r\n\r\n')
grep -q '^ok1' <<<"$r" || fail "HTTP/1.0 without Host: $r"
# Keep-alive across routes on one connection.
out=$(curl -s -m 5 "$URL/healthz" "$URL/a.txt" "$URL/assets/app.js" "$URL/healthz")
[ "$out" = "$(printf 'ok1hello\nasset\nok1')" ] || fail "one connection, several routes: $out"

[ "$(metric 'scalwsd_route_requests_total{route="health"}')" = 6 ] || fail "health requests: $(metric 'scalwsd_route_requests_total{route="health"}')"
[ "$(metric 'scalwsd_route_errors_total{route="assets",class="4xx"}')" = 1 ] || fail "assets 4xx"
[ "$(metric 'scalwsd_route_request_duration_seconds_count{route="vhost"}')" = 1 ] || fail "vhost latency count"
[ -n "$(metric 'scalwsd_route_request_duration_seconds_bucket{route="site",le="0.001"}')" ] || fail "site histogram"

for _ in $(seq 1 20); do [ "$(wc -l <"$LOG")" -ge 12 ] && break; sleep 0.1; done
grep -q '"GET /assets/app.js HTTP/1.1" 200 6 "-" "curl/[^"]*" assets$' "$LOG" || fail "access log route: $(cat "$LOG")"
grep -q '"GET /healthz?x=1 HTTP/1.1" 200 3 .* health$' "$LOG" || fail "access log health"
grep -q '"GET /a.txt HTTP/1.1" 203 5 .* vhost$' "$LOG" || fail "access log vhost"

drop_route() { awk -v s="[route $1]" '/^\[/ {skip = ($0 == s)} !skip'; }

# A reload that removes a route while one of its answers is being sent: the
# retired instance finishes it (and is freed once it holds nothing).
# 16 MiB at 4 MiB/s: more than loopback's socket buffers hold, so the server
# is still sending when the reload lands.
head -c 16777216 /dev/urandom >"$T/assets/big.bin"
curl -s -m 30 --limit-rate 4M -o "$T/big.out" "$URL/assets/big.bin" &
DL=$!
sleep 0.5
routes 1 '' | drop_route assets >"$T/r1"
{ echo "[server]"; echo "listen = 127.0.0.1:0"; cat "$T/r1"; echo "[admin]"; echo "listen = 127.0.0.1:0"; } >"$T/sws.ini"
kill -HUP "$SWS_PID"
wait_log "every loop serves generation 1;" || fail "reload removing assets: $(cat "$T/log")"
kill -0 "$DL" 2>/dev/null || fail "the download ended before the reload: nothing was pending"
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$URL/assets/app.js")
[ "$code" = 404 ] || fail "the removed route still answers: $code"
wait "$DL" || fail "the download under the removed route failed"
cmp -s "$T/big.out" "$T/assets/big.bin" || fail "the download under the removed route is not whole"

# Reload: a new route, a changed body, and vhost removed (the heredoc's body
# lines have no escapes: the ini is written as it is, not through %b).
routes 2 "[route new]
path = /new
scenario = respond
body = new" | drop_route vhost >"$T/r2"
{ echo "[server]"; echo "listen = 127.0.0.1:0"; cat "$T/r2"; echo "[admin]"; echo "listen = 127.0.0.1:0"; } >"$T/sws.ini"
kill -HUP "$SWS_PID"
wait_log "every loop serves generation 2;" || fail "reload: $(tail -3 "$T/log")"
[ "$(curl -s -m 5 "$URL/new")" = new ] || fail "the route the reload added"
[ "$(curl -s -m 5 "$URL/healthz")" = ok2 ] || fail "the route the reload changed"
[ "$(curl -s -m 5 -H 'Host: a.example.test' "$URL/a.txt")" = hello ] || fail "the removed route's request"
[ "$(metric 'scalwsd_route_requests_total{route="new"}')" = 1 ] || fail "new route's metrics"

# Routes without [server] scenario and without a catch-all: a 404.
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit $SWS_STATUS"
start_sws "[route health]\npath = /healthz\nscenario = respond\nbody = ok"
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/other")
[ "$code" = 404 ] || fail "no route matched: $code"
[ "$(curl -s -m 5 "http://127.0.0.1:$PORT/healthz")" = ok ] || fail "healthz without a default"
stop_sws

# --check-config: an overlap names both routes with their lines.
printf '[route a]\npath_prefix = /x\nscenario = respond\n[route b]\npath_prefix = /x\nscenario = respond\n' >"$T/bad.ini"
out=$("$SWS" --check-config --config "$T/bad.ini" 2>&1) && fail "--check-config accepted an overlap"
case $out in *"bad.ini:4: [route b] overlaps [route a] at $T/bad.ini:1"*) ;; *) fail "--check-config said: $out" ;; esac
# examples/routes.ini is accepted, and --print-config writes routes that read
# back to the same routes.
# --check-config opens the roots and the access log's directory, as the start
# does: the example's paths are moved below $T, where they exist.
EX=$(cd "$(dirname "$0")/../.." && pwd)/examples/routes.ini
if [ ! -d /srv/www ]; then
    out=$("$SWS" --check-config --config "$EX" 2>&1) && fail "examples/routes.ini passed without its roots"
    case $out in *"examples/routes.ini:"*": [server] access_log /var/log/scalwsd/access.log: "* | *"[route site] root /srv/www: "*) ;;
    *) fail "examples/routes.ini without its paths: $out" ;; esac
fi
mkdir -p "$T/ex/srv/www" "$T/ex/srv/assets" "$T/ex/srv/docs" "$T/ex/log"
sed "s#/srv/#$T/ex/srv/#; s#/var/log/scalwsd/#$T/ex/log/#" "$EX" >"$T/routes-example.ini"
EX=$T/routes-example.ini
out=$("$SWS" --check-config --config "$EX" 2>&1) || fail "examples/routes.ini: $out"
"$SWS" --print-config --config "$EX" >"$T/p1.ini" || fail "--print-config"
grep -q '^\[route assets\]' "$T/p1.ini" || fail "--print-config has no routes"
"$SWS" --print-config --config "$T/p1.ini" >"$T/p2.ini" || fail "--print-config of its own output"
diff <(grep -v '^; the effective' "$T/p1.ini" | sed 's/ ;.*//') \
    <(grep -v '^; the effective' "$T/p2.ini" | sed 's/ ;.*//') >/dev/null ||
    fail "--print-config does not read back to the same routes"
echo "http_routes: ok"
