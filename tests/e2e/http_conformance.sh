#!/usr/bin/env bash
# The HTTP/1.1 cases an outside conformance suite found, end to end with the
# default limits: a request line of 8000 octets is served; "GET *" is 400 (the
# asterisk-form is for OPTIONS); several chunk extensions and quoted-string
# values with \" are accepted and ignored; 20 KiB of extensions is 400 and a
# close ([limits] chunk_ext_bytes). (Expect: 100-continue: expect_continue.sh.)
. "$(dirname "$0")/lib.sh"
start_sws ''

path=/$(head -c $((8000 - 14)) /dev/zero | tr '\0' p) # "GET " + path + " HTTP/1.1" = 8000
line="GET $path HTTP/1.1"
[ "${#line}" = 8000 ] || fail "test bug: line is ${#line} octets"
r=$(raw "$line\r\nHost: a\r\nConnection: close\r\n\r\n")
echo "$r" | grep -q "^HTTP/1.1 200" || fail "8000-octet request line: $(echo "$r" | head -1)"

r=$(raw 'GET * HTTP/1.1\r\nHost: a\r\n\r\n')
echo "$r" | grep -q "^HTTP/1.1 400" || fail "GET *: $(echo "$r" | head -1)"
r=$(raw 'OPTIONS * HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n')
echo "$r" | grep -q "^HTTP/1.1 200" || fail "OPTIONS *: $(echo "$r" | head -1)"

C='POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n'
r=$(raw "${C}3;a=1;b=2;c=3\r\nabc\r\n0\r\n\r\nGET /next HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
[ "$(echo "$r" | count '^HTTP/1.1 200')" = 2 ] || fail "several extensions: $r"
r=$(raw "${C}3;name=\"va\\\\\"lue\";x=\"a b\"\r\nabc\r\n0\r\n\r\nGET /next HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
[ "$(echo "$r" | count '^HTTP/1.1 200')" = 2 ] || fail "quoted-pair in an extension: $r"

ext=$(head -c 20480 /dev/zero | tr '\0' v)
r=$(raw "${C}1;x=$ext\r\na\r\n0\r\n\r\n")
echo "$r" | grep -q "^HTTP/1.1 400" || fail "20 KiB of extensions: $(echo "$r" | head -1)"
echo "$r" | grep -qi "^Connection: close" || fail "400 must close"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit status $SWS_STATUS"
echo ok
