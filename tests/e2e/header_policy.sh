#!/usr/bin/env bash
# Header policy (issue 31, item 6; doc/routes.md "Header policy"), over
# HTTP/1.1 and HTTP/2 (prior knowledge; names lowercased there):
#  - [server] add_header on the 2xx and 3xx answers of every scenario
#    (respond's fixed answer, static's files and its 304, the proxy's relayed
#    answer, redirect), add_header_always on every answer, the server's own
#    errors too (the default route's 404, static's 404, 413, the proxy's 502);
#  - a route with lines of its own takes none of [server]'s (an empty
#    add_header line: none at all), as nginx inherits add_header;
#  - the proxy keeps an upstream's field of the same name beside ours;
#  - SIGHUP changes the fields; a reload with a bad line is refused and
#    logged, the old fields served on; bad lines are refused by --check-config.
. "$(dirname "$0")/lib.sh"
make_static_tree 4096
printf '[server]\nadd_header = Cache-Control: no-cache\n' >"$T/up.ini"
start_sws_upstream --config "$T/up.ini"
hold_port "$T/dead.port" 120
trap 'kill -KILL $UP_PID $HOLD_PID 2>/dev/null || true; cleanup' EXIT
wait_ready "$T/dead.port" "$SWS_START_SECS" "$HOLD_PID" || fail "no port held for the dead upstream"
DEAD=$(cat "$T/dead.port")

ini() { # STS_VALUE
    cat <<EOF
event_loops = 1
add_header = X-Content-Type-Options: nosniff
add_header = Cache-Control: max-age=60, public
add_header_always = Strict-Transport-Security: $1
[limits]
body_size = 1k
[route files]
path_prefix = /f/
strip_prefix = on
scenario = static
root = $R
[route api]
path_prefix = /api/
scenario = proxy
upstream = 127.0.0.1:$UP
[route dead]
path_prefix = /dead/
scenario = proxy
upstream = 127.0.0.1:$DEAD
add_header_always = X-Route: dead
[route own]
path = /own
scenario = respond
add_header = X-Own: 1
[route none]
path = /none
scenario = respond
add_header =
[route moved]
path = /moved
scenario = redirect
to = https://example.test/
EOF
}
STS='max-age=63072000\; includeSubDomains'
start_sws "$(ini "$STS")"
URL="http://127.0.0.1:$PORT"

# get PATH [curl args...]: the head into $T/h (CR dropped).
get() {
    local p=$1
    shift
    curl -s -m 10 "${H2[@]}" -D "$T/h.raw" -o /dev/null "$@" "$URL$p" || fail "curl $p $*"
    tr -d '\r' <"$T/h.raw" >"$T/h"
}
# has PATH STATUS FIELD... ; FIELD is "Name: value" (its count as "Name: value #2"),
# or "!Name" for none.
has() {
    local p=$1 st=$2
    shift 2
    local got
    got=$(head -n 1 "$T/h" | awk '{print $2}')
    [ "$got" = "$st" ] || fail "$MODE $p: status $got, want $st: $(cat "$T/h")"
    local f name
    for f in "$@"; do
        if [ "${f:0:1}" = '!' ]; then
            name=${f:1}
            [ "$MODE" = h2 ] && name=$(tr 'A-Z' 'a-z' <<<"$name")
            ! grep -q "^$name:" "$T/h" || fail "$MODE $p: $name present: $(cat "$T/h")"
            continue
        fi
        local n=1
        [[ "$f" == *' #'* ]] && n=${f##* #} && f=${f% #*}
        name=${f%%:*}
        [ "$MODE" = h2 ] && name=$(tr 'A-Z' 'a-z' <<<"$name")
        [ "$(grep -cxF "$name:${f#*:}" "$T/h")" = "$n" ] || fail "$MODE $p: want $n x '$name:${f#*:}': $(cat "$T/h")"
    done
}
ALL=('X-Content-Type-Options: nosniff' 'Cache-Control: max-age=60, public'
    'Strict-Transport-Security: max-age=63072000; includeSubDomains')
ALWAYS=('!X-Content-Type-Options' '!Cache-Control' 'Strict-Transport-Security: max-age=63072000; includeSubDomains')

for MODE in http1 h2; do
    H2=()
    [ "$MODE" = h2 ] && H2=(--http2-prior-knowledge)
    get /f/a.txt
    has /f/a.txt 200 "${ALL[@]}"
    etag=$(awk 'tolower($1) == "etag:" {print $2}' "$T/h")
    get /f/a.txt -H "If-None-Match: $etag"
    has /f/a.txt 304 "${ALL[@]}"
    get /f/missing
    has /f/missing 404 "${ALWAYS[@]}"
    get /nowhere # the default route: 404, what no route takes
    has /nowhere 404 "${ALWAYS[@]}"
    get /moved
    has /moved 301 "${ALL[@]}" 'Location: https://example.test/'
    # The upstream's Cache-Control and ours, both (as nginx).
    get /api/x
    has /api/x 200 'X-Content-Type-Options: nosniff' 'Cache-Control: max-age=60, public' \
        'Cache-Control: no-cache' 'Strict-Transport-Security: max-age=63072000; includeSubDomains'
    # Its own lines only: the always one on the proxy's 502.
    get /dead/x
    has /dead/x 502 'X-Route: dead' '!Strict-Transport-Security' '!X-Content-Type-Options'
    get /own
    has /own 200 'X-Own: 1' '!Strict-Transport-Security' '!Cache-Control'
    get /none
    has /none 200 '!X-Own' '!Strict-Transport-Security' '!Cache-Control' '!X-Content-Type-Options'
    # 413 from the head (a Content-Length past body_size), the route's error;
    # on HTTP/1.1 (over HTTP/2 a 413 for a static route sometimes reaches
    # curl as a reset stream, on main as here: not this test's subject).
    if [ "$MODE" = http1 ]; then
        head -c 2000 /dev/zero >"$T/big"
        # (curl may see the close while it still sends: its status is not the answer's.)
        curl -s -m 10 -D "$T/h.raw" -o /dev/null --data-binary @"$T/big" "$URL/f/up" || true
        tr -d '\r' <"$T/h.raw" >"$T/h"
        has /f/up 413 "${ALWAYS[@]}"
    fi
done

# HTTP/1.1 errors the protocol answers itself, before a scenario: the
# default route's always fields (a request line nothing parses has no route).
r=$(raw 'GET /f/a.txt HTTP/1.1\r\nHost: a\r\nContent-Length: 5000\r\n\r\n' | tr -d '\r')
grep -q '^HTTP/1.1 413' <<<"$r" && grep -q '^Strict-Transport-Security: max-age' <<<"$r" ||
    fail "raw 413: $r"
r=$(raw 'BAD\x01 / HTTP/1.1\r\n\r\n' | tr -d '\r')
grep -q '^HTTP/1.1 400' <<<"$r" && grep -q '^Strict-Transport-Security: max-age' <<<"$r" ||
    fail "raw 400: $r"

# SIGHUP: new fields at once, respond's framed answer and the errors alike.
sed -i 's/^add_header_always = Strict-Transport-Security: .*/add_header_always = Strict-Transport-Security: max-age=1/' \
    "$T/sws.ini"
kill -HUP "$SWS_PID"
wait_log "every loop serves generation 1" 30 || fail "no reload logged"
MODE=http1 H2=()
for _ in $(seq 1 50); do
    get /nowhere
    grep -q '^Strict-Transport-Security: max-age=1$' "$T/h" && break
    sleep 0.1
done
has /nowhere 404 'Strict-Transport-Security: max-age=1'
get /moved
has /moved 301 'Strict-Transport-Security: max-age=1' 'X-Content-Type-Options: nosniff'
# A bad line: refused and logged, the fields of now served on.
sed -i 's/^add_header = X-Content-Type-Options: nosniff$/add_header = Connection: close/' "$T/sws.ini"
kill -HUP "$SWS_PID"
wait_log "Connection frames the message" 30 || fail "the bad reload was not logged"
get /moved
has /moved 301 'Strict-Transport-Security: max-age=1' 'X-Content-Type-Options: nosniff'
stop_sws

# --print-config: every line, a route's own (an empty one too), read back the same.
sed -i 's/^add_header = Connection: close$/add_header = X-Content-Type-Options: nosniff/' "$T/sws.ini"
"$SWS" --print-config --config "$T/sws.ini" >"$T/p1.ini" || fail "--print-config"
grep -q '^add_header = X-Content-Type-Options: nosniff$' "$T/p1.ini" || fail "print: add_header"
grep -q '^add_header = Cache-Control: max-age=60, public ; ' "$T/p1.ini" || fail "print: 2nd line"
grep -q '^add_header_always = Strict-Transport-Security: max-age=1 ; ' "$T/p1.ini" || fail "print: always"
grep -q '^add_header_always = X-Route: dead$' "$T/p1.ini" || fail "print: a route's own"
[ "$(grep -c '^add_header = $' "$T/p1.ini")" = 1 ] || fail "print: a route's empty line"
"$SWS" --print-config --config "$T/p1.ini" >"$T/p2.ini" || fail "--print-config of its print"
diff <(grep -v '^; the effective' "$T/p1.ini" | sed 's/ ;.*//') \
    <(grep -v '^; the effective' "$T/p2.ini" | sed 's/ ;.*//') >"$T/diff" ||
    fail "the print of the print differs: $(cat "$T/diff")"

# Refused at load, one line each.
refused() { # WANT LINE
    printf '[server]\n%s\n' "$2" >"$T/bad.ini"
    local st=0
    "$SWS" --check-config --config "$T/bad.ini" 2>"$T/err" || st=$?
    [ "$st" = 2 ] || fail "exit $st for: $2"
    grep -qF -- "$1" "$T/err" || fail "want '$1', got: $(cat "$T/err")"
}
refused "bad.ini:2: [server] add_header: Transfer-Encoding frames the message" 'add_header = Transfer-Encoding: x'
refused "bad.ini:2: [server] add_header_always: content-length frames" 'add_header_always = content-length: 1'
refused "bad.ini:2: [server] add_header: Date is written by the server" 'add_header = Date: x'
refused "bad.ini:2: [server] add_header: bad field 'X Y: 1'" 'add_header = X Y: 1'
refused "bad.ini:2: [server] add_header: X-A has no value" 'add_header = X-A:'
refused "bad.ini:2: [server] add_header: X-A: the value holds a control character" \
    "add_header = X-A: a$(printf '\x01')b"
echo "PASS header_policy"
