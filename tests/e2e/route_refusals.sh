#!/usr/bin/env bash
# Refusals and routes (doc/routes.md, "Which route answers"; issue 35 item 5):
# a request refused once its head is complete and sound is its route's, in
# the access log's route field and in /metrics: a Content-Length past
# [limits] body_size (413 from the head alone), a chunked body past it, a
# malformed chunk, each with the fault in the same read as the head (the case
# that was logged with route "-" and counted to no route), after a request
# served on the same connection, routed by Host too, and to the default route
# when no route matches. A refusal of the head itself (431, a malformed
# request line, two Hosts or none, even with a Content-Length past the limit)
# stays no route's. Twice: with a proxy route (heads are kept for it until
# they are routed) and without.
. "$(dirname "$0")/lib.sh"
start_sws_upstream
LOG=$T/access.log

# counts ROUTE REQUESTS 4XX
counts() {
    local req err
    req=$(metric "scalwsd_route_requests_total{route=\"$1\"}")
    err=$(metric "scalwsd_route_errors_total{route=\"$1\",class=\"4xx\"}")
    [ "$req $err" = "$2 $3" ] || fail "$MODE: route $1: requests, 4xx: want $2 $3, got $req $err"
}
# status REQUEST WANT: the first status line of the answer to REQUEST.
status() {
    local got
    got=$(raw "$1" | head -n 1 | tr -d '\r')
    [ "$got" = "HTTP/1.1 $2" ] || fail "$MODE: want $2, got '$got' for: $1"
}
# logged FIXED-STRING ROUTE: one access log line with that text ends with ROUTE.
logged() {
    grep -q -- " $2\$" <<<"$(grep -F -- "$1" "$LOG")" ||
        fail "$MODE: no line with $1 and route $2: $(cat "$LOG")"
}

# big PATH HOST: a POST whose Content-Length is past body_size, in raw's escapes.
big() { printf '%s' "POST $1 HTTP/1.1\\r\\nHost: $2\\r\\nContent-Length: 5000\\r\\n\\r\\n"; }

run() {
    MODE=$1
    local api=''
    [ "$MODE" = proxy ] && api="[route api]\npath_prefix = /api/\nscenario = proxy\nupstream = 127.0.0.1:$UP"
    rm -f "$LOG"
    # No [server] scenario: what no route takes is the default route's 404.
    start_sws "event_loops = 1\naccess_log = $LOG\n[limits]\nbody_size = 1k\nheader_bytes = 1k
[route app]\npath_prefix = /app/\nscenario = respond\nbody = app
[route vhost]\nhost = v.example\nscenario = respond\nbody = vhost
$api"
    # Refused once the head is in: the route's.
    status "$(big /app/cl a)" '413 Content Too Large'
    status 'POST /app/chunked HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n500\r\n'"$(head -c 1280 /dev/zero | tr '\0' x)"'\r\n0\r\n\r\n' \
        '413 Content Too Large'
    status 'POST /app/badchunk HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n' '400 Bad Request'
    # After a request served on the same connection, in the same read.
    r=$(raw 'GET /app/ok HTTP/1.1\r\nHost: a\r\n\r\n'"$(big /app/second a)" | grep -ao 'HTTP/1.1 [0-9]*')
    [ "$r" = "$(printf 'HTTP/1.1 200\nHTTP/1.1 413')" ] || fail "$MODE: pipelined: $r"
    # By Host first, as any request; the default route when nothing matches.
    status "$(big /app/vhost v.example)" '413 Content Too Large'
    status "$(big /nowhere a)" '413 Content Too Large'
    # Refused in the head: no route's, whatever its Content-Length.
    status 'GET /app/long HTTP/1.1\r\nHost: a\r\nX-Long: '"$(head -c 2000 /dev/zero | tr '\0' y)"'\r\n\r\n' \
        '431 Request Header Fields Too Large'
    status 'GET /app/a\x01b HTTP/1.1\r\nHost: a\r\n\r\n' '400 Bad Request'
    status 'POST /app/twohosts HTTP/1.1\r\nHost: a\r\nHost: b\r\nContent-Length: 5000\r\n\r\n' '400 Bad Request'
    status 'POST /app/nohost HTTP/1.1\r\nContent-Length: 5000\r\n\r\n' '400 Bad Request'
    local lines=12
    if [ "$MODE" = proxy ]; then
        status "$(big /api/cl a)" '413 Content Too Large'
        lines=13
    fi

    for _ in $(seq 1 30); do [ "$(wc -l <"$LOG")" -ge $lines ] && break; sleep 0.1; done
    [ "$(wc -l <"$LOG")" = $lines ] || fail "$MODE: want $lines access lines: $(cat "$LOG")"
    logged '"POST /app/cl HTTP/1.1" 413' app
    logged '"POST /app/chunked HTTP/1.1" 413' app
    logged '"POST /app/badchunk HTTP/1.1" 400' app
    logged '"GET /app/ok HTTP/1.1" 200' app
    logged '"POST /app/second HTTP/1.1" 413' app
    logged '"POST /app/vhost HTTP/1.1" 413' vhost
    logged '"POST /nowhere HTTP/1.1" 413' default
    logged '"GET /app/long HTTP/1.1" 431' -
    logged '"GET /app/a\x01b HTTP/1.1" 400' -
    logged '"POST /app/twohosts HTTP/1.1" 400' -
    logged '"POST /app/nohost HTTP/1.1" 400' -
    counts app 5 4
    counts vhost 1 1
    counts default 2 2 # start_sws's GET / (404) and /nowhere
    if [ "$MODE" = proxy ]; then
        logged '"POST /api/cl HTTP/1.1" 413' api
        counts api 1 1
    fi
    stop_sws
    [ "$SWS_STATUS" = 0 ] || fail "$MODE: exit status $SWS_STATUS"
}

run proxy
run respond
echo "route_refusals: ok"
