#!/usr/bin/env bash
# error_page (issue 31, item 6), over HTTP/1.1 and HTTP/2: a static route's
# 404 and 403, a proxy route's 502 and a respond route's 410 answer with the
# route's file as the body, the original status and the file's type; HEAD gets
# the length and no body; a request refused before its route is known keeps
# the plain text; a route without pages keeps it too. The files are read at
# load: a missing or oversized one is refused by --check-config and by a
# reload, which keeps serving the old page; a reload with a changed file
# serves the new one.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_curl.sh"

R=$T/root E=$T/err
mkdir -p "$R/noindex" "$E"
printf 'hello\n' >"$R/a.txt"
printf '<h1>not here</h1>\n' >"$E/404.html"
printf 'forbidden, as text\n' >"$E/403.txt"
printf '<h1>the upstream is down</h1>\n' >"$E/50x.html"
printf '{"gone": true}\n' >"$E/gone.json"
head -c 20000 /dev/zero | tr '\0' 'x' >"$E/big.html"

# A dead upstream: its port held by a socket that never listens.
hold_port "$T/held" 120
trap 'kill -KILL $HOLD_PID 2>/dev/null || true; cleanup' EXIT
wait_ready "$T/held" "$SWS_START_SECS" "$HOLD_PID" || fail "no port held"
DEAD=$(cat "$T/held")

ini="scenario = static
error_page = 404 $E/404.html, 403 $E/403.txt
[static]
root = $R
[route up]
path_prefix = /up
scenario = proxy
upstream = 127.0.0.1:$DEAD
error_page = 502 503 504 $E/50x.html
[route gone]
path = /gone
scenario = respond
status = 410
error_page = 410 $E/gone.json
[route bare]
path_prefix = /bare
scenario = proxy
upstream = 127.0.0.1:$DEAD"
start_sws "$ini"

for P in http1.1 http2-prior-knowledge; do
    # --- static: 404 and 403 with their pages, the status kept
    expect "$P 404" "$(code /missing)" 404
    expect "$P 404 body" "$(H "$(U /missing)")" '<h1>not here</h1>'
    expect "$P 404 type" "$(hdr Content-Type /missing)" text/html
    expect "$P 404 length" "$(hdr Content-Length /missing)" 18
    expect "$P 404 HEAD" "$(code /missing -I)" 404
    expect "$P 404 HEAD length" "$(hdr Content-Length /missing -I)" 18
    expect "$P 404 HEAD body" "$(H -I "$(U /missing)" | tr -d '\r' | sed '1,/^$/d' | wc -c)" 0
    expect "$P dotfile 404" "$(H "$(U /.env)")" '<h1>not here</h1>'
    expect "$P 403" "$(code /noindex/)" 403
    expect "$P 403 body" "$(H "$(U /noindex/)")" 'forbidden, as text'
    expect "$P 403 type" "$(hdr Content-Type /noindex/)" text/plain
    expect "$P 200 untouched" "$(H "$(U /a.txt)")" hello
    # --- proxy: 502 from a dead upstream, the status kept
    expect "$P 502" "$(code /up/x)" 502
    expect "$P 502 body" "$(H "$(U /up/x)")" '<h1>the upstream is down</h1>'
    expect "$P 502 type" "$(hdr Content-Type /up/x)" text/html
    # --- a route without pages: the plain text
    expect "$P 502 plain" "$(H "$(U /bare/x)")" '502 Bad Gateway'
    # --- respond: an error status answers with the page
    expect "$P 410" "$(code /gone)" 410
    expect "$P 410 body" "$(H "$(U /gone)")" '{"gone": true}'
    expect "$P 410 type" "$(hdr Content-Type /gone)" application/json
done
# A request refused before its route is known keeps the plain text.
ans=$(raw 'GET /missing HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n')
grep -q '^HTTP/1.1 400' <<<"$ans" || fail "malformed head: $ans"
grep -q 'not here' <<<"$ans" && fail "malformed head answered with a route's page: $ans"

# --- reload: a changed file is served; a missing one is refused, the old page kept
printf '<h1>moved on</h1>\n' >"$E/404.html"
kill -HUP "$SWS_PID"
wait_log "every loop serves generation 1; older configurations freed" || fail "reload 1"
for P in http1.1 http2-prior-knowledge; do
    expect "$P reloaded page" "$(H "$(U /missing)")" '<h1>moved on</h1>'
done
mv "$E/404.html" "$E/404.gone"
kill -HUP "$SWS_PID"
wait_log "reload refused, still serving the previous configuration: .*sws.ini:4: \[server\] error_page: $E/404.html: No such file or directory" ||
    fail "reload with a missing error page not refused"
for P in http1.1 http2-prior-knowledge; do
    expect "$P old page kept" "$(H "$(U /missing)")" '<h1>moved on</h1>'
done
mv "$E/404.gone" "$E/404.html"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit status $SWS_STATUS"

# --- without routes: the default route's pages, also for the proxy's 502
start_sws "scenario = proxy
error_page = 502 $E/50x.html
[proxy]
upstream = 127.0.0.1:$DEAD"
for P in http1.1 http2-prior-knowledge; do
    expect "$P no routes: 502" "$(code /x)" 502
    expect "$P no routes: 502 body" "$(H "$(U /x)")" '<h1>the upstream is down</h1>'
done
ans=$(raw 'GET /x HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n')
grep -q '^HTTP/1.1 400' <<<"$ans" || fail "no routes: malformed head: $ans"
stop_sws

# --- a reload whose page would not fit the buffers sized at start: refused
# (respond's buffers hold four answers of a quarter each: 16 KiB, 4 KiB)
head -c 6000 /dev/zero | tr '\0' 'y' >"$E/6k.html"
start_sws "[respond]
status = 404"
printf '[server]\nlisten = 127.0.0.1:0\nerror_page = 404 %s\n[respond]\nstatus = 404\n[admin]\nlisten = 127.0.0.1:0\n' \
    "$E/6k.html" >"$T/sws.ini"
kill -HUP "$SWS_PID"
wait_log "reload refused, .*\[server\] error_page of 6000 bytes does not fit the connection buffers sized at start (up to 3072 bytes); that needs a restart" ||
    fail "a reload with a page too large for the buffers not refused"
expect "page kept out" "$(curl -s -m 5 "$(U /)")" "Hello from scalwsd"
stop_sws

# --- refused by --check-config: missing, too large, no type, a route's, syntax
check_refused() { # VALUE SECTION WANT
    printf '[static]\nroot = %s\n%s\nerror_page = %s\n' "$R" "$2" "$1" >"$T/bad.ini"
    if "$SWS" --config "$T/bad.ini" --check-config 2>"$T/msg"; then
        fail "error_page = $1 accepted"
    fi
    grep -q -- "$3" "$T/msg" || fail "error_page = $1: $(cat "$T/msg")"
}
check_refused "404 $E/none.html" "[server]" "bad.ini:4: \[server\] error_page: $E/none.html: No such file"
check_refused "404 $E/big.html" "[server]" "error_page: $E/big.html: larger than 16384 bytes"
check_refused "404 $E/404.php" "[server]" "error_page: $E/404.php: no type for its extension"
check_refused "404 $E/none.html" "[route r]
path = /r
scenario = respond" "bad.ini:6: \[route r\] error_page: $E/none.html: No such file"
check_refused "200 $E/404.html" "[server]" "status 200 is not an error"
check_refused "404 $E/404.html, 404 $E/403.txt" "[server]" "status 404 is given twice"
check_refused "404" "[server]" "want CODE \[CODE...\] FILE"
echo "error_pages: ok"
