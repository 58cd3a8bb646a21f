#!/usr/bin/env bash
# Pipelined requests are answered in order: GET, HEAD, GET, then a last GET
# with Connection: close; only the HEAD answer lacks a body, and only the last
# says close. 64 pipelined requests in one write all get answers. A client that
# sends 5000 requests before reading any answer gets all 5000: the server stops
# reading while its output is full and resumes as the client reads.
. "$(dirname "$0")/lib.sh"
start_sws '[respond]\nbody = B\\n'

r=$(raw 'GET /1 HTTP/1.1\r\nHost: a\r\n\r\nHEAD /2 HTTP/1.1\r\nHost: a\r\n\r\nGET /3 HTTP/1.1\r\nHost: a\r\n\r\nGET /4 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n')
# One token per answer: B for a body, H for a head without body.
shape=$(echo "$r" | tr -d '\r' | awk '/^HTTP\/1.1/ {if (n) printf "%s", (b ? "B" : "H"); n=1; b=0} /^B$/ {b=1} END {printf "%s", (b ? "B" : "H")}')
[ "$shape" = "BHBB" ] || fail "order/bodies: got $shape: $r"
[ "$(echo "$r" | count 'Connection: close')" = 1 ] || fail "close on the last only"
[ "$(echo "$r" | tr -d '\r' | grep -i '^Connection:' | tail -1)" = "Connection: close" ] || fail "last not close"

req=""
for i in $(seq 1 63); do req="${req}GET /$i HTTP/1.1\r\nHost: a\r\n\r\n"; done
req="${req}GET /64 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
r=$(raw "$req" 5)
[ "$(echo "$r" | count '^HTTP/1.1 200')" = 64 ] || fail "64 pipelined: $(echo "$r" | count '^HTTP/1.1 200')"

# The writer blocks once the server stops reading; the reader starts a second
# later, so the server's output is full first.
( exec 3<>/dev/tcp/127.0.0.1/$PORT
  { printf 'GET / HTTP/1.1\r\nHost: a\r\n\r\n%.0s' $(seq 1 4999)
    printf 'GET /last HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n'; } >&3 &
  sleep 1
  timeout 10 cat <&3
  wait ) >"$T/flood" 2>&1
n=$(grep -c '^HTTP/1.1 200' "$T/flood" || true)
[ "$n" = 5000 ] || fail "slow reader: $n of 5000 answered"
stop_sws
echo ok
