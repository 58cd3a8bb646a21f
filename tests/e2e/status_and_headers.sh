#!/usr/bin/env bash
# A plain GET answers the configured status, body and headers; HEAD has no body;
# HTTP/1.0 and Connection: close end the connection; keep-alive reuses it.
. "$(dirname "$0")/lib.sh"
start_sws '[respond]\nstatus = 201\nbody = e2e body\\n\ncontent_type = text/x-test'

h=$(curl -s -D - -o "$T/body" "http://127.0.0.1:$PORT/any/path")
grep -q "^HTTP/1.1 201 Created" <<<"$h" || fail "status line: $h"
grep -qi "^Server: scalwsd" <<<"$h" || fail "Server header"
grep -qiE "^Date: [A-Z][a-z]{2}, [0-9]{2} [A-Z][a-z]{2} [0-9]{4} [0-9:]{8} GMT" <<<"$h" || fail "Date header: $h"
grep -qi "^Content-Length: 9" <<<"$h" || fail "Content-Length: $h"
grep -qi "^Content-Type: text/x-test" <<<"$h" || fail "Content-Type"
[ "$(cat "$T/body")" = "e2e body" ] || fail "body: $(cat "$T/body")"

h=$(curl -s -I "http://127.0.0.1:$PORT/")
grep -qi "^Content-Length: 9" <<<"$h" || fail "HEAD Content-Length"
r=$(raw 'HEAD / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
grep -q "e2e body" <<<"$r" && fail "HEAD carried a body"
grep -qi "Connection: close" <<<"$r" || fail "Connection: close not echoed"

r=$(raw 'GET / HTTP/1.0\r\n\r\n')
grep -q "^HTTP/1.1 201" <<<"$r" || fail "HTTP/1.0: $r"
grep -qi "Connection: close" <<<"$r" || fail "HTTP/1.0 must close"

# Keep-alive: curl reuses one connection for two URLs.
v=$(curl -sv "http://127.0.0.1:$PORT/a" "http://127.0.0.1:$PORT/b" 2>&1 >/dev/null)
grep -q "Re-using existing connection" <<<"$v" || fail "keep-alive not reused"

# Request bodies are read and discarded, framed right: the next request parses.
r=$(raw 'POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhelloPOST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n')
[ "$(echo "$r" | count '^HTTP/1.1 201')" = 3 ] || fail "bodies not discarded: $r"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit status $SWS_STATUS"
echo ok
