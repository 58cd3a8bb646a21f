#!/usr/bin/env bash
# The [http3] keys and [limits] over HTTP/3 (issue 33): a bad value is
# refused with its file and line; --print-config shows them; the stream
# table of a loop (streams_per_loop) refuses the requests past it, and a
# smaller max_concurrent_streams, taken on SIGHUP, keeps a client under it;
# a [limits] uri_length taken on SIGHUP answers 414 over HTTP/3. Respond's
# prebuilt HTTP/1.1 answers carry Alt-Svc on the tls listener, not on the
# plaintext one.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_h3.sh"

config_refused '[http3]\nmax_concurrent_streams = 0\n' 'bad.ini:2: [http3] max_concurrent_streams:'
config_refused '[http3]\n\nstream_window = 10\n' 'bad.ini:3: [http3] stream_window: bad size'
config_refused '[http3]\nqpack_table_size = 2m\n' 'bad.ini:2: [http3] qpack_table_size: bad size'
config_refused '[http3]\nidle_timeout = 90m\n' "bad.ini:2: [http3] idle_timeout: '90m' is too long: at most 3600s"
config_refused '[http3]\nidle_timeout = 10ms\n' 'bad.ini:2: [http3] idle_timeout:'
config_refused '[http3]\nstreams_per_loop = 8\n' 'bad.ini:2: [http3] streams_per_loop:'
config_refused '[http3]\nearly_data = maybe\n' 'bad.ini:2: [http3] early_data:'
config_refused '[http3]\nmax_stream = 3\n' 'bad.ini:2: [http3] max_stream: unknown key'

printf '[http3]\nmax_concurrent_streams = 7\nconnection_window = 2m\nearly_data = on\n' >"$T/keys.ini"
"$SWS" -c "$T/keys.ini" --print-config >"$T/printed" 2>&1 || fail "--print-config: $(cat "$T/printed")"
h3_key() { awk -v k="$1" '/^\[/ { s = $0 } s == "[http3]" && $1 == k { print $3; exit }' "$T/printed"; }
[ "$(h3_key max_concurrent_streams)" = 7 ] || fail "--print-config: max_concurrent_streams $(h3_key max_concurrent_streams)"
[ "$(h3_key connection_window)" = 2m ] || fail "--print-config: connection_window $(h3_key connection_window)"
[ "$(h3_key early_data)" = on ] || fail "--print-config: early_data $(h3_key early_data)"
[ "$(h3_key qpack_table_size)" = 4k ] || fail "--print-config: qpack_table_size $(h3_key qpack_table_size)"

conf() { # conf MAX_CONCURRENT_STREAMS URI_LENGTH
    printf '%s' "listen = 127.0.0.1:0 quic name=h3
listen = 127.0.0.1:0 name=plain
event_loops = 1
scenario = respond
[tls]
cert = $T/cert.pem
key = $T/key.pem
[limits]
uri_length = $2
[http3]
streams_per_loop = 16
max_concurrent_streams = $1"
}
start_h3 "$(conf 100 8k)"
PP=$(ready_listen_port "$T/ready" plain)
[ -n "$PP" ] || fail "the ready file: $(cat "$T/ready")"
h3() { timeout 60 "$H3GET" -k -t 50 "$@"; }

# Respond's fixed answer over HTTP/1.1: Alt-Svc on the tls listener (GET and
# HEAD, keep-alive and close), none on the plaintext one.
alt="alt-svc: h3=\":$QP\"; ma=86400"
for how in "" "-I" "-H Connection:close"; do
    # shellcheck disable=SC2086
    curl -sk --http1.1 $how -D- -o /dev/null "https://127.0.0.1:$PORT/" | tr -d '\r' |
        grep -qix "$alt" || fail "respond over HTTP/1.1 ($how): no Alt-Svc"
done
curl -s --http1.1 -D- -o /dev/null "http://127.0.0.1:$PP/" | tr -d '\r' | grep -qi "^alt-svc:" &&
    fail "respond on the plaintext listener advertised HTTP/3"
curl -sk --http2 -D- -o /dev/null "https://127.0.0.1:$PORT/" | tr -d '\r' |
    grep -qix "$alt" || fail "respond over HTTP/2: no Alt-Svc"

long="/$(printf 'a%.0s' $(seq 1 100))"
out=$(h3 "127.0.0.1:$QP" "$long") || fail "a 101-byte path: $out"
[ "$(awk '{print $2}' <<<"$out")" = 200 ] || fail "a 101-byte path answered '$out'"


# 40 requests at once on one connection: the loop's table has 16 entries,
# the rest are refused (H3_REQUEST_REJECTED, 0x10b), which a client may retry.
out=$(h3 -n 40 -P 40 "127.0.0.1:$QP" / 2>&1) && fail "40 streams past streams_per_loop = 16 all answered"
n=$(count ' 200 19 ' <<<"$out")
[ "$n" -ge 1 ] && [ "$n" -le 16 ] || fail "streams_per_loop = 16: $n of 40 answered"
grep -q "error 0x10b" <<<"$out" || fail "no request refused with H3_REQUEST_REJECTED: $(tail -3 <<<"$out")"
# The connection's entries come back to the table when the client closes
# it (not after its draining period): the next request is served.
out=$(h3 "127.0.0.1:$QP" /) || fail "the stream table did not come back: $out"

# A bad [http3] value on SIGHUP: refused with its line, the old one served.
printf '[server]\nlisten = 127.0.0.1:0 tls name=tls\n%s\n[admin]\nlisten = 127.0.0.1:0\n' \
    "$(conf 0 8k)" >"$T/sws.ini"
kill -HUP "$SWS_PID"
wait_log 'reload refused, still serving the previous configuration: .*\[http3\] max_concurrent_streams' 30 ||
    fail "a bad max_concurrent_streams on SIGHUP was not refused"
out=$(h3 "127.0.0.1:$QP" /) || fail "after a refused reload: $out"

# SIGHUP: at most 4 streams a connection (MAX_STREAMS): the client keeps 40
# requests within the table; uri_length 64 answers the long path 414.
# The same listeners as start_sws wrote them (port 0: unchanged for a reload).
printf '[server]\nlisten = 127.0.0.1:0 tls name=tls\n%s\n[admin]\nlisten = 127.0.0.1:0\n' \
    "$(conf 4 64)" >"$T/sws.ini"
kill -HUP "$SWS_PID"
wait_log "every loop serves generation 1" 30 || fail "SIGHUP: the loops did not take the reload"
out=$(h3 -n 40 -P 40 "127.0.0.1:$QP" /) || fail "40 streams, 4 at once: $(tail -3 <<<"$out")"
[ "$(count ' 200 19 ' <<<"$out")" = 40 ] || fail "40 streams, 4 at once: $(count ' 200 ' <<<"$out") answered"
out=$(h3 "127.0.0.1:$QP" "$long") || true
[ "$(awk '{print $2}' <<<"$out")" = 414 ] || fail "after SIGHUP (uri_length 64) a 101-byte path answered '$out'"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "scalwsd exited $SWS_STATUS"
echo "PASS http3_keys"
