#!/usr/bin/env bash
# Each limit answers its status and closes: header bytes and count 431, URI 414,
# body 413, malformed 400, header timeout 408; an idle keep-alive connection is
# closed silently after keepalive_timeout.
. "$(dirname "$0")/lib.sh"
start_sws '[limits]\nheader_bytes = 1k\nheader_count = 10\nuri_length = 64\nbody_size = 100\nheader_timeout = 1s\nkeepalive_timeout = 1s'

big=$(head -c 2000 /dev/zero | tr '\0' a)
r=$(raw "GET / HTTP/1.1\r\nHost: a\r\nX-Big: $big\r\n\r\n")
grep -q "^HTTP/1.1 431" <<<"$r" || fail "header bytes: $r"
grep -qi "Connection: close" <<<"$r" || fail "431 must close"

hs=""
for i in $(seq 1 11); do hs="${hs}X-$i: v\r\n"; done
r=$(raw "GET / HTTP/1.1\r\nHost: a\r\n${hs}\r\n")
grep -q "^HTTP/1.1 431" <<<"$r" || fail "header count: $r"

r=$(raw "GET /$(head -c 100 /dev/zero | tr '\0' u) HTTP/1.1\r\nHost: a\r\n\r\n")
grep -q "^HTTP/1.1 414" <<<"$r" || fail "uri: $r"

r=$(raw "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 101\r\n\r\n")
grep -q "^HTTP/1.1 413" <<<"$r" || fail "body length: $r"
r=$(raw "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n64\r\n$(head -c 100 /dev/zero | tr '\0' b)\r\n1\r\nb\r\n0\r\n\r\n")
grep -q "^HTTP/1.1 413" <<<"$r" || fail "chunked body: $r"

r=$(raw "GET / HTTP/1.1\r\nHost: a\r\nBad Header Line\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n")
grep -q "^HTTP/1.1 400" <<<"$r" || fail "malformed: $r"
[ "$(echo "$r" | count '^HTTP/1.1')" = 1 ] || fail "400 must close before the next request"

# Header timeout: half a request, then silence -> 408 and close (bounded at 4 s).
r=$(raw "GET / HTTP/1.1\r\nHost: a\r\n" 4)
grep -q "^HTTP/1.1 408" <<<"$r" || fail "header timeout: $r"

# Idle keep-alive connection: closed without an answer after the timeout.
start=$(date +%s)
r=$(raw "GET / HTTP/1.1\r\nHost: a\r\n\r\n" 5)
took=$(($(date +%s) - start))
[ "$(echo "$r" | count '^HTTP/1.1 200')" = 1 ] || fail "keep-alive answer: $r"
[ "$took" -lt 5 ] || fail "idle keep-alive connection not closed by the server"

m=$(curl -s "http://127.0.0.1:$ADMIN_PORT/metrics")
for st in 400 408 413 414 431; do
    echo "$m" | grep -E "scalwsd_errors_total\{loop=\"[0-9]+\",status=\"$st\"\} [1-9]" >/dev/null ||
        fail "metrics lack errors for $st"
done
stop_sws
echo ok
