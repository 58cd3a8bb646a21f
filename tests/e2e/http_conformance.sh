#!/usr/bin/env bash
# The HTTP/1.1 cases an outside conformance suite found, end to end with the
# default limits: a request line of 8000 octets is served; "GET *" is 400 (the
# asterisk-form is for OPTIONS); several chunk extensions and quoted-string
# values with \" are accepted and ignored; 20 KiB of extensions is 400 and a
# close ([limits] chunk_ext_bytes). (Expect: 100-continue: expect_continue.sh.)
# Then the requests every server must refuse (414, 431, 413, 400, 505).
# With "proxy" as $1 (http_conformance_proxy.sh), the same suite runs in front
# of the recording test upstream, which must never have seen a refused request;
# with "proxy-routed", the proxy is the default beside a [route] (so request
# heads are kept until the route is chosen, then handed to the proxy).
. "$(dirname "$0")/lib.sh"
MODE=${1:-respond}
if [ "$MODE" = proxy ] || [ "$MODE" = proxy-routed ]; then
    command -v python3 >/dev/null || { echo "SKIP: python3"; exit 77; }
    start_test_upstream 60 "$T/rec"
    other=""
    [ "$MODE" = proxy ] || other="\n[route other]\npath = /other\nscenario = respond"
    start_sws "scenario = proxy\n[proxy]\nupstream = 127.0.0.1:$UP$other"
    MODE=proxy
else
    start_sws ''
fi

path=/$(head -c $((8000 - 14)) /dev/zero | tr '\0' p) # "GET " + path + " HTTP/1.1" = 8000
line="GET $path HTTP/1.1"
[ "${#line}" = 8000 ] || fail "test bug: line is ${#line} octets"
r=$(raw "$line\r\nHost: a\r\nConnection: close\r\n\r\n")
grep -q "^HTTP/1.1 200" <<<"$r" || fail "8000-octet request line: $(echo "$r" | head -1)"

r=$(raw 'GET * HTTP/1.1\r\nHost: a\r\n\r\n')
grep -q "^HTTP/1.1 400" <<<"$r" || fail "GET *: $(echo "$r" | head -1)"
r=$(raw 'OPTIONS * HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n')
grep -q "^HTTP/1.1 200" <<<"$r" || fail "OPTIONS *: $(echo "$r" | head -1)"

C='POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n'
r=$(raw "${C}3;a=1;b=2;c=3\r\nabc\r\n0\r\n\r\nGET /next HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
[ "$(echo "$r" | count '^HTTP/1.1 200')" = 2 ] || fail "several extensions: $r"
r=$(raw "${C}3;name=\"va\\\\\"lue\";x=\"a b\"\r\nabc\r\n0\r\n\r\nGET /next HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
[ "$(echo "$r" | count '^HTTP/1.1 200')" = 2 ] || fail "quoted-pair in an extension: $r"

ext=$(head -c 20480 /dev/zero | tr '\0' v)
r=$(raw "${C}1;x=$ext\r\na\r\n0\r\n\r\n")
grep -q "^HTTP/1.1 400" <<<"$r" || fail "20 KiB of extensions: $(echo "$r" | head -1)"
grep -qi "^Connection: close" <<<"$r" || fail "400 must close"

# Refused: every path names its status ("/refused-414-..."); after each the
# next request on a new connection is served.
refused() { # STATUS REQUEST
    local r
    r=$(raw "$2")
    grep -q "^HTTP/1.1 $1 " <<<"$r" || fail "want $1 for ${2:0:60}...: $(echo "$r" | head -1)"
}
refused 414 "GET /refused-414-$(head -c 9000 /dev/zero | tr '\0' p) HTTP/1.1\r\nHost: a\r\n\r\n"
refused 431 "GET /refused-431 HTTP/1.1\r\nHost: a\r\nX-Big: $(head -c 17000 /dev/zero | tr '\0' h)\r\n\r\n"
refused 413 'POST /refused-413 HTTP/1.1\r\nHost: a\r\nContent-Length: 2000000\r\n\r\n'
refused 400 'GET /refused-400-cl HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n'
refused 400 'POST /refused-400-te HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n'
refused 400 'GET /refused-400-sp HTTP/1.1\r\nHost : a\r\n\r\n'
refused 505 'GET /refused-505 HTTP/2.0\r\nHost: a\r\n\r\n'
if [ "$MODE" = proxy ]; then
    refused 501 'CONNECT refused.example:443 HTTP/1.1\r\nHost: refused.example:443\r\n\r\n'
    # A request after the refusals reaches it: the log is complete up to here.
    r=$(raw 'GET /last HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n')
    grep -q "^HTTP/1.1 200" <<<"$r" || fail "/last: $(echo "$r" | head -1)"
    for _ in $(seq 1 50); do grep -q '^GET /last$' "$T/rec.requests" 2>/dev/null && break; sleep 0.1; done
    grep -q '^GET /last$' "$T/rec.requests" || fail "the upstream's log lacks /last"
    grep -q '^GET /ppp' "$T/rec.requests" || fail "the 8000-octet request did not reach the upstream"
    [ "$(grep -c '^GET /next' "$T/rec.requests")" = 2 ] ||
        fail "the requests after the chunk extensions: $(cut -c1-40 "$T/rec.requests")"
    ! grep -q 'refused\|^GET \*' "$T/rec.requests" ||
        fail "a refused request reached the upstream: $(grep 'refused\|^GET \*' "$T/rec.requests" | cut -c1-80)"
    ! grep -aq 'refused\|vvvvvvvvvvvvvvvv' "$T/rec" || fail "bytes of a refused request reached the upstream"
fi
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit status $SWS_STATUS"
echo ok
