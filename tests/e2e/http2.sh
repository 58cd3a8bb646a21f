#!/usr/bin/env bash
# HTTP/2 end to end (issue 30) with curl, nghttp and h2load:
# - negotiation: prior knowledge on the plaintext port (the 24-byte preface),
#   ALPN h2 on a TLS port (curl --http2, openssl s_client), HTTP/1.1 still on
#   both ports (curl --http1.1, a raw request), "Upgrade: h2c" answered as
#   HTTP/1.1 without a 101 (RFC 9113 3.1 deprecates it); [server] http2 = off:
#   the preface is no HTTP/2 (an HTTP/1.1 error or a close) and TLS offers only
#   http/1.1;
# - every scenario over h2c and over h2 on TLS: respond (body, HEAD), static (a
#   4 MiB file byte for byte, HEAD, Range 206, If-None-Match 304, a .gz
#   sibling, 404), the proxy in front of proxy_upstream.py (GET, a 1 MiB POST
#   with a Content-Length and one without, which goes upstream chunked, echoed
#   back byte for byte; a chunked and a 4 MiB answer), routes chosen by
#   :authority;
# - the access log says HTTP/2.0, one line per stream (2000 under h2load
#   too); /metrics counts HTTP/2 connections and streams exactly;
# - h2load -n 2000 -c 4 -m 10, h2c and TLS: 2000 2xx, nothing failed; every
#   scenario on one connection, 10 streams at a time, every byte.
. "$(dirname "$0")/lib.sh"
for tool in nghttp h2load openssl; do
    command -v "$tool" >/dev/null || { echo "SKIP: no $tool (nghttp2-client, openssl)"; exit 77; }
done
case $(curl -V) in *HTTP2*) ;; *) echo "SKIP: curl without HTTP/2"; exit 77 ;; esac

expect() { [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"; }
# wait_lines FILE PATTERN N: until FILE has N lines matching PATTERN (the
# access log is written as the streams end); 1 after 30 s.
wait_lines() {
    local end=$((SECONDS + 30))
    until [ "$(count "$2" <"$1")" -ge "$3" ]; do
        [ "$SECONDS" -le "$end" ] || return 1
        sleep 0.05
    done
}

# A certificate for the names the :authority routes answer and 127.0.0.1.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=localhost" \
    -addext "subjectAltName=DNS:localhost,DNS:a.example,DNS:b.example,IP:127.0.0.1" \
    -keyout "$T/key.pem" -out "$T/cert.pem" 2>/dev/null || fail "openssl req"
TLS_INI="[tls]\ncert = $T/cert.pem\nkey = $T/key.pem"

# req PATH [curl args...]: one request over HTTP/2 (H2: prior knowledge or
# ALPN) to $SCHEME://$HOST:$PORT; the body in $T/body, the head in $T/head,
# the status in CODE, the body's size in SIZE; fails unless curl spoke
# HTTP/2. Counts the requests (each on its own connection) in NREQ.
H2=()
SCHEME=http
HOST=127.0.0.1
NREQ=0
req() {
    local p=$1 out
    shift
    out=$(curl -sS -m 30 "${H2[@]}" --resolve "$HOST:$PORT:127.0.0.1" -o "$T/body" -D "$T/head" \
        -w '%{http_version} %{http_code} %{size_download}' "$@" "$SCHEME://$HOST:$PORT$p" 2>&1) ||
        fail "curl ${H2[*]} $* $p: $out"
    NREQ=$((NREQ + 1))
    [ "${out%% *}" = 2 ] || fail "$p $*: HTTP version ${out%% *}, want 2"
    out=${out#* }
    CODE=${out% *}
    SIZE=${out#* } # body bytes (with -I, curl writes the head to -o as well)
}
hv() { # hv NAME: a field of the last answer's head (lower-case names in HTTP/2)
    tr -d '\r' <"$T/head" | awk -v n="$1" -F': ' 'tolower($1) == n { print $2; exit }'
}
body() { cat "$T/body"; }

# ---------------------------------------------------------------------------
# 1. Negotiation on the plaintext port (respond): prior knowledge, HTTP/1.1,
# Upgrade: h2c; the access log and the counters.
start_sws "access_log = $T/access.log"
U="http://127.0.0.1:$PORT"
expect "h2 connections before any" "$(metric_sum scalwsd_http2_connections_total)" 0
expect "h2 streams before any" "$(metric_sum scalwsd_http2_streams_total)" 0

out=$(curl -sS -m 30 --http2-prior-knowledge -w '|%{http_version} %{http_code}' "$U/pk-get") || fail "curl: $out"
expect "curl --http2-prior-knowledge" "$out" "Hello from scalwsd
|2 200"
out=$(curl -sS -m 30 --http2-prior-knowledge -I -D "$T/head" -o "$T/body" \
    -w '%{http_version} %{http_code} %{size_download}' "$U/pk-head") || fail "curl -I: $out"
expect "HEAD over h2c" "$out" "2 200 0"
expect "HEAD content-length" "$(hv content-length)" 19
# nghttp: three streams on one connection, each answered.
out=$(nghttp -t 30 "$U/ng-1" "$U/ng-2" "$U/ng-3") || fail "nghttp: $out"
expect "nghttp bodies" "$(grep -c '^Hello from scalwsd$' <<<"$out")" 3
out=$(nghttp -v -t 30 "$U/ng-v") || fail "nghttp -v: $out"
grep -q 'recv SETTINGS frame' <<<"$out" || fail "nghttp: no SETTINGS from the server: $out"
grep -q '(stream_id=[0-9]*) :status: 200' <<<"$out" || fail "nghttp: no :status 200: $out"
expect "h2 connections after 4 clients" "$(metric_sum scalwsd_http2_connections_total)" 4
expect "h2 streams after 6 streams" "$(metric_sum scalwsd_http2_streams_total)" 6

# HTTP/1.1 on the same port, and an Upgrade: h2c request, both HTTP/1.1.
out=$(curl -sS -m 30 --http1.1 -w '|%{http_version} %{http_code}' "$U/h1") || fail "curl --http1.1: $out"
expect "HTTP/1.1 on the plaintext port" "$out" "Hello from scalwsd
|1.1 200"
out=$(raw 'GET /h1-raw HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n')
expect "raw HTTP/1.1 status line" "$(head -1 <<<"$out" | tr -d '\r')" "HTTP/1.1 200 OK"
# curl --http2 on http:// asks for the upgrade (Upgrade: h2c, HTTP2-Settings).
out=$(curl -sS -m 30 --http2 -D "$T/head" -w '|%{http_version} %{http_code}' "$U/upgrade-curl") ||
    fail "curl --http2 (h2c upgrade): $out"
expect "Upgrade: h2c by curl" "$out" "Hello from scalwsd
|1.1 200"
grep -q '101' <(head -1 "$T/head") && fail "Upgrade: h2c answered 101: $(cat "$T/head")"
out=$(raw 'GET /upgrade-raw HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n' 5)
expect "raw Upgrade: h2c status line" "$(head -1 <<<"$out" | tr -d '\r')" "HTTP/1.1 200 OK"
grep -qi '^upgrade:' <<<"$out" && fail "Upgrade: h2c answered with an Upgrade field: $out"
grep -q '^Hello from scalwsd' <<<"$out" || fail "Upgrade: h2c not answered: $out"
expect "h2 connections after HTTP/1.1 requests" "$(metric_sum scalwsd_http2_connections_total)" 4
expect "h2 streams after HTTP/1.1 requests" "$(metric_sum scalwsd_http2_streams_total)" 6

# The access log: each stream one line that says HTTP/2.0; HTTP/1.1 stays so.
L=$T/access.log
wait_lines "$L" 'upgrade-raw' 1 || fail "access log: no line for the last request: $(cat "$L")"
for p in pk-get ng-1 ng-2 ng-3 ng-v; do
    expect "access log lines for $p" "$(count "\"GET /$p HTTP/2.0\" 200 19 " <"$L")" 1
done
expect "access log HEAD line" "$(count '"HEAD /pk-head HTTP/2.0" 200 0 ' <"$L")" 1
for p in h1 h1-raw upgrade-curl upgrade-raw; do
    expect "access log lines for $p" "$(count "\"GET /$p HTTP/1.1\" 200 19 " <"$L")" 1
done

# h2load: 2000 streams on 4 connections, 10 at a time.
# h2load_ok LABEL URL: -n 2000 -c 4 -m 10; every request answered 2xx.
h2load_ok() {
    local out
    out=$(timeout 60 h2load -n 2000 -c 4 -m 10 "$2" 2>&1) || fail "$1: h2load exited: $out"
    grep -q '^requests: 2000 total, 2000 started, 2000 done, 2000 succeeded, 0 failed, 0 errored, 0 timeout' \
        <<<"$out" || fail "$1: h2load: $(grep -E '^(requests|status codes)' <<<"$out")"
    grep -q '^status codes: 2000 2xx, 0 3xx, 0 4xx, 0 5xx' <<<"$out" || fail "$1: h2load: $out"
    echo "$1: $(grep -E '^(finished|Application protocol)' <<<"$out" | tr '\n' ' ')"
    grep -E "^time (for request|to 1st)" <<<"$out"
}
h2load_ok "h2load h2c respond" "$U/h2load"
grep -q 'Application protocol: h2c' <<<"$(timeout 30 h2load -n 1 "$U/" 2>&1)" || fail "h2load did not speak h2c"
expect "h2 connections after h2load" "$(metric_sum scalwsd_http2_connections_total)" 9
expect "h2 streams after h2load" "$(metric_sum scalwsd_http2_streams_total)" 2007
wait_lines "$L" '"GET /h2load HTTP/2.0" 200 19 .*"h2load' 2000 ||
    fail "access log: $(count '/h2load HTTP/2.0' <"$L") lines of 2000 h2load streams"
expect "access log lines of h2load" "$(count '"GET /h2load HTTP/2.0"' <"$L")" 2000
# Every connection ends: the gauge of open ones returns to 0.
end=$((SECONDS + 30))
until [ "$(metric_sum scalwsd_http2_connections_active)" = 0 ]; do
    [ "$SECONDS" -le "$end" ] || fail "h2 connections still open: $(metric_sum scalwsd_http2_connections_active)"
    sleep 0.05
done
# The preface in two writes, as TCP may deliver it (RFC 9113 3.4 defines it
# as a sequence of octets, with no boundary in it): its first K bytes alone,
# the rest 0.2 s later. The server's first bytes must be its SETTINGS frame
# (type 4), not an HTTP/1.1 answer.
# split_preface K: the first four bytes the server sends, in hex.
split_preface() {
    { timeout 5 bash -c '
        exec 3<>/dev/tcp/127.0.0.1/'"$PORT"' || exit 1
        printf "%s" "${1:0:$2}" >&3
        sleep 0.2 # the pause is the point: two reads on the server side
        printf "%s" "${1:$2}" >&3
        timeout 2 cat <&3' _ $'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n' "$1" || true; } |
        head -c 4 | od -An -tx1 | tr -d ' \n'
}
for k in 4 16; do
    out=$(split_preface $k)
    [ "${out:0:4}${out:6:2}" = 000004 ] || fail "a preface split after $k bytes: the server began with $out"
done
# A first read of 1, 2 or 3 bytes cannot tell the preface from "POST": the
# server waits for more before it chooses (proto_sniff in transport/conn.c).
for k in 1 2 3; do
    out=$(split_preface $k)
    [ "${out:0:4}${out:6:2}" = 000004 ] || fail "a preface split after $k bytes: the server began with $out"
done
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit status $SWS_STATUS"

# ---------------------------------------------------------------------------
# 2. Every scenario over HTTP/2: one routed server (static by default, a
# respond route, a proxy route, two routes by host), first on h2c, then on TLS.
make_static_tree 4194304
head -c 1048576 /dev/urandom >"$T/post.bin"
start_test_upstream 110
# What /up/chunked answers (proxy_upstream.py): 50 chunks "partNN-" x 100.
for i in $(seq 0 49); do for _ in $(seq 1 100); do printf 'part%02d-' "$i"; done; done >"$T/chunked.want"
SC_INI="scenario = static
[static]
root = $R
[route resp]
path_prefix = /resp/
scenario = respond
body = resp-route\\\\n
[route up]
path_prefix = /up/
scenario = proxy
upstream = 127.0.0.1:$UP
strip_prefix = on
[route hosta]
host = a.example
path = /who
scenario = respond
body = host-a\\\\n
[route hostb]
host = b.example
path = /who
scenario = respond
body = host-b\\\\n"

# scenarios LABEL: every check over HTTP/2 (H2, SCHEME set by the caller).
scenarios() {
    local m=$1 etag
    HOST=127.0.0.1
    # respond: body and HEAD
    req /resp/x
    expect "$m respond" "$CODE $(body)" "200 resp-route"
    req /resp/x -I
    expect "$m respond HEAD" "$CODE $(hv content-length) $SIZE" "200 11 0"
    # static: a 4 MiB file byte for byte, HEAD, a range, a validator, a
    # precompressed sibling, a missing file
    req /big.bin
    expect "$m static big" "$CODE $(hv content-length)" "200 4194304"
    cmp -s "$T/body" "$R/big.bin" || fail "$m: /big.bin differs from the file"
    req /big.bin -I
    expect "$m static HEAD" "$CODE $(hv content-length) $SIZE" "200 4194304 0"
    req /big.bin -H 'Range: bytes=1000000-1999999'
    expect "$m Range" "$CODE $(hv content-range) $(hv content-length)" "206 bytes 1000000-1999999/4194304 1000000"
    cmp -s "$T/body" <(tail -c +1000001 "$R/big.bin" | head -c 1000000) || fail "$m: the range's bytes differ"
    req /a.txt
    etag=$(hv etag)
    expect "$m a.txt" "$CODE $(body)" "200 hello"
    [ -n "$etag" ] || fail "$m: no etag"
    req /a.txt -H "If-None-Match: $etag"
    expect "$m If-None-Match" "$CODE $(hv etag) $SIZE" "304 $etag 0"
    req /app.js -H 'Accept-Encoding: gzip'
    expect "$m gzip sibling" "$CODE $(body) $(hv content-encoding) $(hv vary)" "200 GZ-BYTES gzip Accept-Encoding"
    req /app.js
    expect "$m no gzip asked" "$CODE $(body)" "200 js plain"
    req /nope.txt
    expect "$m 404" "$CODE" 404
    # the proxy: GET, a 1 MiB POST with and without a Content-Length (the
    # latter goes upstream chunked: streamed, not gathered), a chunked and a
    # 4 MiB answer
    req /up/echo
    expect "$m proxy GET" "$CODE $(stat -c %s "$T/body")" "200 0"
    case $(hv x-info) in *";len=0;"*) ;; *) fail "$m proxy GET upstream saw: $(hv x-info)" ;; esac
    req /up/echo --data-binary "@$T/post.bin"
    expect "$m proxy POST" "$CODE" 200
    cmp -s "$T/body" "$T/post.bin" || fail "$m: the echoed 1 MiB body differs ($(stat -c %s "$T/body") bytes)"
    case $(hv x-info) in *"content-length"*";te=;len=1048576;"*) ;; *) fail "$m POST upstream saw: $(hv x-info)" ;; esac
    req /up/echo -X POST -T - <"$T/post.bin"
    expect "$m proxy POST without length" "$CODE" 200
    cmp -s "$T/body" "$T/post.bin" || fail "$m: the echoed body without length differs ($(stat -c %s "$T/body") bytes)"
    case $(hv x-info) in *";te=chunked;len=1048576;"*) ;; *) fail "$m POST without length, upstream saw: $(hv x-info)" ;; esac
    req /up/chunked
    expect "$m proxy chunked answer" "$CODE $(hv transfer-encoding)" "200 "
    cmp -s "$T/body" "$T/chunked.want" || fail "$m: the chunked answer differs"
    req /up/big/4
    expect "$m proxy 4 MiB answer" "$CODE $(stat -c %s "$T/body")" "200 4194304"
    # routes by :authority (curl sends the URL's host as :authority)
    HOST=a.example req /who
    expect "$m :authority a.example" "$CODE $(body)" "200 host-a"
    HOST=b.example req /who
    expect "$m :authority b.example" "$CODE $(body)" "200 host-b"
    req /who
    expect "$m :authority 127.0.0.1 (no route)" "$CODE" 404
    # nghttp with its own :authority, on another connection
    out=$(nghttp -t 30 -H ':authority: b.example' "$SCHEME://127.0.0.1:$PORT/who") || fail "$m nghttp: $out"
    expect "$m nghttp :authority b.example" "$out" "host-b"
    NREQ=$((NREQ + 1))
}

# scenario_log LABEL FILE: the lines those requests left (HTTP/2.0, routes),
# one per stream. FILE holds no other HTTP/2 line.
scenario_log() {
    local m=$1 f=$2
    wait_lines "$f" 'HTTP/2.0"' "$NREQ" || fail "$m access log: $(count 'HTTP/2.0"' <"$f") of $NREQ lines"
    for l in '"GET /resp/x HTTP/2.0" 200 11 .* resp$' '"HEAD /resp/x HTTP/2.0" 200 0 .* resp$' \
        '"GET /big.bin HTTP/2.0" 200 4194304 .* default$' '"GET /big.bin HTTP/2.0" 206 1000000 .* default$' \
        '"GET /a.txt HTTP/2.0" 304 0 .* default$' '"GET /nope.txt HTTP/2.0" 404 ' \
        '"POST /up/echo HTTP/2.0" 200 1048576 .* up$' '"GET /up/big/4 HTTP/2.0" 200 4194304 .* up$' \
        '"GET /who HTTP/2.0" 200 7 .* hosta$' '"GET /who HTTP/2.0" 200 7 .* hostb$'; do
        grep -q "$l" "$f" || fail "$m access log: no line like $l: $(cat "$f")"
    done
    expect "$m access log: one line per stream" "$(count 'HTTP/2.0"' <"$f")" "$NREQ"
}

# multiplexed LABEL BASE: every scenario at once on one connection, 10
# streams at a time (h2load -c 1 -m 10 cycles through the five URLs): each
# answer whole, to the byte: 10 x (4 MiB + 1 MiB + 11 + 35000 + 6).
multiplexed() {
    local out
    out=$(timeout 60 h2load -n 50 -c 1 -m 10 "$2/big.bin" "$2/up/big/1" "$2/resp/x" "$2/up/chunked" \
        "$2/a.txt" 2>&1) || fail "$1: h2load: $out"
    grep -q '^requests: 50 total, 50 started, 50 done, 50 succeeded, 0 failed, 0 errored, 0 timeout' \
        <<<"$out" || fail "$1: $(grep -E '^(requests|status codes)' <<<"$out")"
    grep -q '^status codes: 50 2xx' <<<"$out" || fail "$1: $(grep '^status codes' <<<"$out")"
    grep -q '^traffic: .* (52778970) data$' <<<"$out" || fail "$1: bytes: $(grep '^traffic' <<<"$out")"
}

start_sws "access_log = $T/access-h2c.log\n$SC_INI"
H2=(--http2-prior-knowledge)
SCHEME=http
NREQ=0
scenarios h2c
scenario_log h2c "$T/access-h2c.log"
expect "h2c: h2 connections, one per request" "$(metric_sum scalwsd_http2_connections_total)" "$NREQ"
expect "h2c: h2 streams" "$(metric_sum scalwsd_http2_streams_total)" "$NREQ"
h2load_ok "h2load h2c static" "http://127.0.0.1:$PORT/a.txt"
multiplexed "h2c: every scenario on one connection" "http://127.0.0.1:$PORT"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit status $SWS_STATUS"

# ---------------------------------------------------------------------------
# 3. TLS: ALPN chooses h2 for a client that offers it, http/1.1 for one that
# does not, on the same port; the same scenarios over h2; h2load over TLS.
SWS_LISTEN_OPTS=tls start_sws "access_log = $T/access-tls.log\n$SC_INI\n$TLS_INI"
# start_sws's probe (curl over https) is on the log already: it counts.
grep -q "tls on 127.0.0.1:$PORT: .*ALPN h2 http/1.1" "$T/log" ||
    fail "the tls start line does not name h2 first: $(grep 'tls on' "$T/log")"
T1=https://127.0.0.1:$PORT
v=$(curl -sS -v -m 30 --http2 --cacert "$T/cert.pem" -o "$T/body" -w '%{http_version} %{http_code}\n' "$T1/resp/alpn" 2>&1)
grep -q 'ALPN: server accepted h2' <<<"$v" || fail "ALPN did not choose h2: $v"
expect "curl --http2 over TLS" "$(tail -1 <<<"$v") $(body)" "2 200 resp-route"
v=$(curl -sS -v -m 30 --http1.1 --cacert "$T/cert.pem" -o "$T/body" -w '%{http_version} %{http_code}\n' "$T1/resp/h1" 2>&1)
grep -q 'ALPN: server accepted http/1.1' <<<"$v" || fail "ALPN http/1.1 not chosen for curl --http1.1: $v"
expect "curl --http1.1 over TLS" "$(tail -1 <<<"$v") $(body)" "1.1 200 resp-route"
# Its line splits the log: the scenarios' lines come after it.
wait_lines "$T/access-tls.log" '"GET /resp/h1 HTTP/1.1" 200 11 ' 1 || fail "tls: the HTTP/1.1 request's line"
# (after the handshake the server's SETTINGS come, NUL bytes and all)
out=$({ timeout 10 openssl s_client -connect "127.0.0.1:$PORT" -alpn h2,http/1.1 </dev/null 2>&1 || true; } | tr -d '\0')
grep -q 'ALPN protocol: h2' <<<"$out" || fail "openssl s_client -alpn h2,http/1.1: $(grep -i alpn <<<"$out")"
out=$(timeout 10 openssl s_client -connect "127.0.0.1:$PORT" -alpn http/1.1 </dev/null 2>&1 || true)
grep -q 'ALPN protocol: http/1.1' <<<"$out" || fail "openssl s_client -alpn http/1.1: $(grep -i alpn <<<"$out")"
wait_lines "$T/access-tls.log" '"GET / HTTP/' 1 || fail "tls: the probe's line"
wait_lines "$T/access-tls.log" '"GET /resp/alpn HTTP/2.0" 200 11 ' 1 || fail "tls: the ALPN request's line"
lines0=$(count 'HTTP/2.0"' <"$T/access-tls.log")
c0=$(metric_sum scalwsd_http2_connections_total)
s0=$(metric_sum scalwsd_http2_streams_total)
H2=(--http2 --cacert "$T/cert.pem")
SCHEME=https
NREQ=0
scenarios tls
expect "tls: h2 connections" "$(metric_sum scalwsd_http2_connections_total)" $((c0 + NREQ))
expect "tls: h2 streams" "$(metric_sum scalwsd_http2_streams_total)" $((s0 + NREQ))
# The scenarios' lines: after the probe's, the ALPN one and the HTTP/1.1 one.
wait_lines "$T/access-tls.log" 'HTTP/2.0"' $((lines0 + NREQ)) || fail "tls: access log lines"
sed -n '/"GET \/resp\/h1 HTTP\/1.1"/,$p' "$T/access-tls.log" | tail -n +2 >"$T/access-tls-sc.log"
scenario_log tls "$T/access-tls-sc.log"
expect "tls: access log lines in all" "$(count 'HTTP/2.0"' <"$T/access-tls.log")" $((lines0 + NREQ))
h2load_ok "h2load TLS respond" "$T1/resp/h2load"
grep -q 'Application protocol: h2$' <<<"$(timeout 30 h2load -n 1 "$T1/resp/x" 2>&1)" || fail "h2load did not speak h2 over TLS"
h2load_ok "h2load TLS static" "$T1/a.txt"
multiplexed "TLS: every scenario on one connection" "$T1"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit status $SWS_STATUS"

# ---------------------------------------------------------------------------
# 4. [server] http2 = off: the preface is not HTTP/2 any more, TLS offers only
# http/1.1; HTTP/1.1 is served as before.
start_sws "http2 = off"
out=$("$SWS" --config "$T/sws.ini" --print-config 2>&1) || fail "--print-config: $out"
grep -q '^http2 = off' <<<"$out" || fail "--print-config: no http2 = off: $out"
raw 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n' 10 >"$T/preface"
out=$(head -c 9 "$T/preface" | od -An -c | tr -s ' ')
case $out in "" | " H T T P / 1 . 1"*) ;; *) fail "http2 = off: the preface got: $out" ;; esac
out=$(curl -sS -m 10 --http2-prior-knowledge -o /dev/null -w '%{http_version}' "http://127.0.0.1:$PORT/" 2>/dev/null || true)
[ "$out" != 2 ] || fail "http2 = off: curl --http2-prior-knowledge spoke HTTP/2"
out=$(curl -sS -m 30 -w '|%{http_version} %{http_code}' "http://127.0.0.1:$PORT/") || fail "curl: $out"
expect "http2 = off: HTTP/1.1" "$out" "Hello from scalwsd
|1.1 200"
expect "http2 = off: h2 connections" "$(metric_sum scalwsd_http2_connections_total)" 0
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit status $SWS_STATUS"

SWS_LISTEN_OPTS=tls start_sws "http2 = off\n$TLS_INI"
v=$(curl -sS -v -m 30 --http2 --cacert "$T/cert.pem" -o "$T/body" -w '%{http_version} %{http_code}\n' "https://127.0.0.1:$PORT/" 2>&1)
grep -q 'ALPN: server accepted http/1.1' <<<"$v" || fail "http2 = off: ALPN: $v"
expect "http2 = off: curl --http2 over TLS" "$(tail -1 <<<"$v")" "1.1 200"
out=$(timeout 10 openssl s_client -connect "127.0.0.1:$PORT" -alpn h2 </dev/null 2>&1 || true)
grep -q 'ALPN protocol: h2' <<<"$out" && fail "http2 = off: ALPN h2 chosen: $out"
expect "http2 = off over TLS: h2 connections" "$(metric_sum scalwsd_http2_connections_total)" 0
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit status $SWS_STATUS"
echo ok
