#!/usr/bin/env bash
# The proxy forwards an upstream's trailer section (RFC 9110 6.5): in the last
# chunk to an HTTP/1.1 client, in a HEADERS frame that ends the stream to an
# HTTP/2 one; never the fields a trailer must not carry on (framing, cookies,
# hop-by-hop), and not at all where the client's framing has no place for
# them (HTTP/1.0, HEAD). The connection stays usable after them.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "SKIP: python3"; exit 77; }
command -v nghttp >/dev/null || { echo "SKIP: nghttp (nghttp2-client)"; exit 77; }
start_test_upstream 90
start_sws "scenario = proxy\n[proxy]\nupstream = 127.0.0.1:$UP"
URL="http://127.0.0.1:$PORT/trailers"

# HTTP/1.1, twice on one connection: the trailers end each body.
out=$(
    raw 'GET /trailers HTTP/1.1\r\nHost: x\r\n\r\nGET /trailers HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'
    printf .
) # (the dot keeps the last CRLF, which $(...) would strip)
out=${out%.}
want=$'0\r\nX-Checksum: sha256=abc\r\nX-Timing: 12ms\r\n\r\n'
[ "$(grep -c "^X-Checksum: sha256=abc" <<<"$out")" = 2 ] || fail "HTTP/1.1 trailers: $out"
# Each last chunk carries exactly the two fields that may go on.
rest=${out#*"$want"}
[ "$rest" != "$out" ] && [[ $rest == *"$want" ]] || fail "HTTP/1.1 last chunks: $out"
[ "$(grep -c '^HTTP/1.1 200' <<<"$out")" = 2 ] || fail "keep-alive after trailers: $out"
# The upstream's Trailer field announcing them is end-to-end (RFC 9110 6.6.2).
[ "$(grep -c '^Trailer: X-Checksum' <<<"$out")" = 2 ] || fail "Trailer field: $out"
# curl reads them as trailers (a body of 11 bytes, then the fields).
curl -s -D "$T/h" -o "$T/b" "$URL" || fail "curl"
[ "$(cat "$T/b")" = "hello world" ] || fail "body: $(cat "$T/b")"
grep -q '^X-Timing: 12ms' "$T/h" || fail "curl saw no trailer: $(cat "$T/h")"

# HTTP/1.0: the body ends with the close; no chunk, no trailer.
out=$(raw 'GET /trailers HTTP/1.0\r\nHost: x\r\n\r\n')
[[ $out == *$'\r\n\r\nhello world' ]] || fail "HTTP/1.0 body: $out"
grep -q '^X-Checksum:' <<<"$out" && fail "HTTP/1.0 got trailers: $out"
# HEAD: the head only.
out=$(raw 'HEAD /trailers HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
grep -q '^X-Checksum:' <<<"$out" && fail "HEAD got trailers: $out"

# HTTP/2: a HEADERS frame after the DATA, ending the stream; names lowercased.
curl -s --http2-prior-knowledge -D "$T/h2" -o "$T/b2" "$URL" || fail "curl --http2"
[ "$(cat "$T/b2")" = "hello world" ] || fail "HTTP/2 body: $(cat "$T/b2")"
grep -q '^HTTP/2 200' "$T/h2" || fail "HTTP/2 status: $(cat "$T/h2")"
grep -q '^x-checksum: sha256=abc' "$T/h2" && grep -q '^x-timing: 12ms' "$T/h2" ||
    fail "HTTP/2 trailers: $(cat "$T/h2")"
grep -qi '^set-cookie\|^content-length: 99' "$T/h2" && fail "HTTP/2 forwarded a refused trailer: $(cat "$T/h2")"
# Many streams on one connection, each with its trailers in a HEADERS frame
# that ends it. (nghttp: curl 7.88 fails the next request on a connection
# after a stream with trailers, against nghttpd too.)
urls=()
for i in $(seq 1 20); do urls+=("$URL?$i"); done
timeout 20 nghttp -nv "${urls[@]}" >"$T/nghttp" 2>&1 || fail "nghttp: $(tail -5 "$T/nghttp")"
n=$(grep -c '^\[.*\] recv (stream_id=[0-9]*) x-timing: 12ms' "$T/nghttp")
[ "$n" = 20 ] || fail "HTTP/2: $n of 20 streams had their trailers: $(tail -20 "$T/nghttp")"
ends=$(grep -A1 'recv HEADERS frame <length=[0-9]*, flags=0x05' "$T/nghttp" | grep -c 'END_STREAM | END_HEADERS')
[ "$ends" = 20 ] || fail "HTTP/2: $ends trailer HEADERS frames ended their streams"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit $SWS_STATUS"
echo ok
