#!/usr/bin/env bash
# The admin listener's GET /: a self-contained HTML page (no external assets)
# that polls /status; HEAD answers the head only; its script parses (when node
# is installed) and every field it reads is in /status.
. "$(dirname "$0")/lib.sh"
start_sws '\nevent_loops = 2'
for _ in $(seq 1 5); do curl -s -o /dev/null "http://127.0.0.1:$PORT/"; done
code=$(curl -s -D "$T/h" -o "$T/page.html" -w '%{http_code}' "http://127.0.0.1:$ADMIN_PORT/")
[ "$code" = 200 ] || fail "GET / on admin: $code"
grep -qi '^Content-Type: text/html; charset=utf-8' "$T/h" || fail "content type: $(cat "$T/h")"
len=$(sed -n 's/^Content-Length: *\([0-9]*\).*/\1/Ip' "$T/h")
[ "$len" = "$(wc -c <"$T/page.html")" ] || fail "Content-Length $len vs $(wc -c <"$T/page.html")"
grep -q '^<!doctype html>' "$T/page.html" || fail "not an HTML page"
grep -q 'fetch("/status"' "$T/page.html" || fail "the page does not poll /status"
grep -q '<canvas id="rps"' "$T/page.html" || fail "no requests/s chart"
grep -q '<canvas id="conn"' "$T/page.html" || fail "no connections chart"
grep -q '<canvas id="cpu"' "$T/page.html" || fail "no CPU chart"
grep -q 'rate("cpu_seconds", 100)' "$T/page.html" || fail "the CPU chart does not read cpu_seconds"
grep -q 's.imbalance.requests' "$T/page.html" || fail "the page does not show the imbalance index"
grep -q 'l.fed_by' "$T/page.html" || fail "the page does not show which loop feeds each"
# Self-contained: nothing loaded from elsewhere.
if grep -Eiq '(src|href)=|https?://|@import|url\(' "$T/page.html"; then
    fail "external reference: $(grep -Eio '.{0,30}((src|href)=|https?://|@import|url\().{0,30}' "$T/page.html" | head -3)"
fi
# The fields the script reads exist in /status.
s=$(curl -s "http://127.0.0.1:$ADMIN_PORT/status")
echo "$s" | jq -e '(.version and .listen and .backend and .route and .state and .threads and
    (.uptime_ms | type == "number")) and
    ([.loops[] | has("index") and has("cpu") and has("active") and has("requests") and
      has("accepted") and has("closed") and (.cpu_seconds | type == "number") and
      (.accepts | type == "boolean") and (.fed_by | type == "number")] | all) and
    (.accept.description | type == "string") and (.imbalance.requests | type == "number") and
    (.imbalance.active | type == "number")' >/dev/null || fail "/status lacks a field: $s"
# HEAD: the same head, no body.
hl=$(curl -s -I "http://127.0.0.1:$ADMIN_PORT/" | sed -n 's/^Content-Length: *\([0-9]*\).*/\1/Ip')
[ "$hl" = "$len" ] || fail "HEAD Content-Length $hl"
if command -v node >/dev/null; then
    sed -n '/^<script>$/,/^<\/script>$/p' "$T/page.html" | sed '1d;$d' >"$T/page.js"
    [ -s "$T/page.js" ] || fail "no script in the page"
    node --check "$T/page.js" || fail "the page's script does not parse"
fi
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$ADMIN_PORT/nope")" = 404 ] || fail "404"
stop_sws
echo "ok: $len bytes"
