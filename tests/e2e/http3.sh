#!/usr/bin/env bash
# HTTP/3 served by scalwsd (issue 33): a tls listener and a quic listener,
# both on port 0, two loops. h3get (tests/h3) GETs and POSTs on respond,
# downloads a 1 MiB static file (its bytes compared), runs 100 streams on
# one connection and 16 connections that land on both loops (per-loop
# counters in /metrics), a stateless reset for an unknown connection ID
# (counted); the tls listener's answers advertise the quic port
# (Alt-Svc); SIGHUP reloads the certificate QUIC serves; a drain (SIGTERM)
# answers every request in flight; without the kernel's steering it says so
# and serves. The configuration errors first.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_h3.sh"

config_refused '[server]\nlisten = 127.0.0.1:0\nlisten = 127.0.0.1:0 quic\n' \
    'bad.ini:3: [server] listen: a quic listener needs [tls] cert and key'
config_refused "[server]\nlisten = 127.0.0.1:0 quic\n[tls]\ncert = $T/cert.pem\nkey = $T/key.pem\n" \
    'a quic listener needs a TCP listener beside it'
config_refused "[server]\nlisten = 127.0.0.1:0\nlisten = 127.0.0.1:0 quic tls\n[tls]\ncert = $T/cert.pem\nkey = $T/key.pem\n" \
    'bad.ini:3: [server] listen: quic is TLS 1.3 and HTTP/3 already'
config_refused "[server]\nlisten = 127.0.0.1:0\nlisten = 127.0.0.1:0 quic\nlisten = 127.0.0.1:0 quic\n[tls]\ncert = $T/cert.pem\nkey = $T/key.pem\n" \
    'bad.ini:4: [server] listen: one quic listener at most'
# UDP and TCP ports are apart: one address for a tls and a quic listener.
printf '[server]\nlisten = 127.0.0.1:8443 tls\nlisten = 127.0.0.1:8443 quic\n[tls]\ncert = %s\nkey = %s\n' \
    "$T/cert.pem" "$T/key.pem" >"$T/same.ini"
"$SWS" -t -c "$T/same.ini" >/dev/null 2>&1 || fail "-t refused tls and quic on one address"

mkdir -p "$T/www"
head -c 1048576 /dev/urandom >"$T/www/big.bin"
head -c 8388608 /dev/urandom >"$T/www/huge.bin"
head -c 300000 /dev/urandom >"$T/post.bin"

start_h3 "$(h3_ini "drain_timeout = 120s")"
grep -q "listening on .*127.0.0.1:$QP quic" "$T/log" || fail "the start line names no quic listener"

h3() { timeout 120 "$H3GET" -k -t 100 "$@"; }

# GET and POST on respond.
out=$(h3 "127.0.0.1:$QP" /) || fail "GET over HTTP/3: $out"
[ "$(awk '{print $2, $3}' <<<"$out")" = "200 19" ] || fail "GET over HTTP/3 answered '$out'"
out=$(h3 -X POST -d "$T/post.bin" "127.0.0.1:$QP" /) || fail "POST over HTTP/3: $out"
[ "$(awk '{print $2}' <<<"$out")" = 200 ] || fail "POST over HTTP/3 answered '$out'"

# A static file of 1 MiB, byte for byte.
out=$(h3 -o "$T/got.bin" "127.0.0.1:$QP" /files/big.bin) || fail "static over HTTP/3: $out"
[ "$(awk '{print $2, $3}' <<<"$out")" = "200 1048576" ] || fail "static answered '$out'"
cmp -s "$T/got.bin" "$T/www/big.bin" || fail "the 1 MiB file came back different"
out=$(h3 "127.0.0.1:$QP" /files/nope) || true
[ "$(awk '{print $2}' <<<"$out")" = 404 ] || fail "a missing file answered '$out'"

# 100 streams on one connection.
out=$(h3 -n 100 -P 100 "127.0.0.1:$QP" /) || fail "100 streams: $(tail -3 <<<"$out")"
[ "$(count ' 200 19 ' <<<"$out")" = 100 ] || fail "100 streams: $(count ' 200 ' <<<"$out") answered 200"

# The tls listener advertises the quic port, over HTTP/2 and HTTP/1.1.
curl -sk --http2 -D- -o /dev/null "https://127.0.0.1:$PORT/" | tr -d '\r' |
    grep -qix "alt-svc: h3=\":$QP\"; ma=86400" || fail "no Alt-Svc over HTTP/2"
curl -sk --http1.1 -D- -o /dev/null "https://127.0.0.1:$PORT/files/big.bin" | tr -d '\r' |
    grep -qix "alt-svc: h3=\":$QP\"; ma=86400" || fail "no Alt-Svc over HTTP/1.1"

# Connections land on both loops: 16 of them, each a new port and CIDs;
# every datagram of one connection on one loop (the endpoint of another
# would not know it: its requests would fail).
for i in $(seq 1 16); do
    out=$(h3 "127.0.0.1:$QP" /) || fail "connection $i: $out"
done
# Each loop publishes its counters once a second, each at its own moment.
for _ in $(seq 1 100); do
    read -r c0 c1 <<<"$(per_loop scalwsd_http3_connections_total)"
    read -r r0 r1 <<<"$(per_loop scalwsd_http3_requests_total)"
    [ $((c0 + c1)) -ge 21 ] && [ $((r0 + r1)) -ge 120 ] && break
    sleep 0.1
done
[ $((c0 + c1)) -ge 21 ] || fail "HTTP/3 connections counted: $c0 + $c1, want 21"
[ "$c0" -gt 0 ] && [ "$c1" -gt 0 ] || fail "HTTP/3 connections all on one loop: $c0 and $c1"
[ $((r0 + r1)) -ge 120 ] || fail "HTTP/3 requests counted: $r0 + $r1, want 120"
# A short-header packet naming a connection ID of loop 1 that no connection
# has: loop 1 answers it with a stateless reset (RFC 9000 10.3), counted.
python3 - "$QP" <<'PY' || fail "could not send the unknown short-header packet"
import os, socket, sys
cid = bytes([os.urandom(1)[0], 1]) + os.urandom(14)
pkt = bytes([0x40 | (os.urandom(1)[0] & 0x3f)]) + cid + os.urandom(40)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.sendto(pkt, ("127.0.0.1", int(sys.argv[1])))
s.settimeout(10)
data = s.recv(2048)
assert len(data) < len(pkt) and (data[0] & 0xc0) == 0x40, "not a stateless reset"
PY
for _ in $(seq 1 100); do
    read -r _ sr1 <<<"$(per_loop scalwsd_quic_stateless_resets_total)"
    [ "$sr1" -ge 1 ] && break
    sleep 0.1
done
[ "$sr1" -ge 1 ] || fail "the stateless reset was not counted on loop 1: $(per_loop scalwsd_quic_stateless_resets_total)"
# Without the kernel's steering (TURNLOOP_UDP_DISABLE=cid_steer: the
# e2e_http3_unsteered run) the start says so and every request above was
# answered all the same (the kernel's 4-tuple hash keeps a connection on the
# loop that took its Initial; a datagram on another loop would be forwarded).
if [[ ${TURNLOOP_UDP_DISABLE:-} == *cid_steer* ]]; then
    grep -q "refused the connection-ID steering program" "$T/log" ||
        fail "no word of the refused steering program at start"
fi

# SIGHUP: QUIC's certificate is read again (a new one for new connections).
h3_cert "$T/cert2.pem" "$T/key2.pem" 3
cp "$T/cert2.pem" "$T/cert.pem"
cp "$T/key2.pem" "$T/key.pem"
kill -HUP "$SWS_PID"
wait_log "every loop serves generation 1" 30 || fail "SIGHUP: the loops did not take the reload"
out=$(timeout 60 "$H3GET" --cacert "$T/cert2.pem" -t 50 "127.0.0.1:$QP" /) ||
    fail "after SIGHUP the quic listener does not serve the new certificate: $out"

# A drain with requests in flight: 20 answers of 8 MiB on one connection;
# SIGTERM once the server has counted their streams; every one arrives whole.
read -r s0 s1 <<<"$(per_loop scalwsd_http3_streams_total)"
want=$((s0 + s1 + 20))
"$H3GET" -k -t 100 -n 20 -P 20 "127.0.0.1:$QP" /files/huge.bin >"$T/drain.out" 2>&1 &
H3PID=$!
for _ in $(seq 1 300); do
    read -r s0 s1 <<<"$(per_loop scalwsd_http3_streams_total)"
    [ $((s0 + s1)) -ge "$want" ] && break
    kill -0 $H3PID 2>/dev/null || break
    sleep 0.1
done
kill -0 $H3PID 2>/dev/null || echo "note: the 20 downloads ended before SIGTERM (a fast machine)"
kill -TERM "$SWS_PID"
h3rc=0
wait $H3PID || h3rc=$?
[ $h3rc = 0 ] || fail "a request in flight at the drain was not answered (h3get $h3rc): $(tail -5 "$T/drain.out")"
[ "$(count ' 200 8388608 ' <"$T/drain.out")" = 20 ] ||
    fail "drain: $(count ' 200 8388608 ' <"$T/drain.out") of 20 answers whole"
[ "$(awk '$2 == 200 {print $4}' "$T/drain.out" | sort -u | wc -l)" = 1 ] || fail "drain: the answers differ"
reap_sws 30
[ "$SWS_STATUS" = 0 ] || fail "scalwsd exited $SWS_STATUS after the drain"
echo "PASS http3 (quic port $QP, connections per loop $c0 $c1)"
