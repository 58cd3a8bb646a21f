#!/usr/bin/env bash
# HTTPS: a "listen = ... tls" listener with certificates made here by openssl req.
# curl --cacert, openssl s_client for protocols, ALPN and resumption
# (-sess_out/-sess_in), keep-alive and pipelining over TLS, the hostile inputs
# (plain HTTP, TLS 1.0, a stalled hello) closed and counted in /metrics, and a
# SIGHUP that gives new handshakes a new certificate while an open connection
# keeps its own, and refuses a bad one.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_tls.sh"

mkcert a ec localhost,127.0.0.1
mkcert b ec localhost,127.0.0.1
cp "$T/a.pem" "$T/cert.pem"
cp "$T/a.key" "$T/key.pem"

sclient() { timeout 10 openssl s_client -connect "127.0.0.1:$PORT" -servername localhost \
    -CAfile "$T/a.pem" "$@" 2>&1; }
REQ='GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n'

# -t reads the certificate, as nginx -t does.
printf '[server]\nlisten = 127.0.0.1:0 tls\n[tls]\ncert = %s\nkey = %s\n' "$T/a.pem" "$T/b.key" \
    >"$T/bad.ini"
out=$("$SWS" -t -c "$T/bad.ini" 2>&1) && fail "-t accepted a key of another certificate"
case $out in *"does not match"*) ;; *) fail "-t said: $out" ;; esac

SWS_LISTEN_OPTS=tls
start_sws "event_loops = 2\n[limits]\nhandshake_timeout = 1s\n[tls]\ncert = $T/cert.pem\nkey = $T/key.pem"
grep -q "tls on 127.0.0.1:$PORT: TLSv1.2 TLSv1.3, ALPN h2 http/1.1, memory BIOs (kTLS not used" \
    "$T/log" || fail "no tls start line"
[ "$(curl -s "http://127.0.0.1:$ADMIN_PORT/status" | jq -r .tls.records)" = memory_bio ] ||
    fail "/status does not say memory_bio"

# curl, verifying against the CA it was given; ALPN h2 (HTTP/2 is on by default).
body=$(curl -sS -m 5 --cacert "$T/a.pem" "https://localhost:$PORT/" 2>&1) || fail "curl: $body"
[ "$body" = "Hello from scalwsd" ] || fail "body over TLS: $body"
v=$(curl -sv -m 5 --cacert "$T/a.pem" "https://localhost:$PORT/" 2>&1 >/dev/null)
case $v in *"ALPN: server accepted h2"*) ;; *) fail "ALPN not h2: $v" ;; esac

# Keep-alive: three requests, one connection, one handshake.
h0=$(metric scalwsd_tls_handshakes_total)
n=$(curl -s --http1.1 -m 5 --cacert "$T/a.pem" "https://localhost:$PORT/[1-3]" | grep -c "Hello from")
[ "$n" = 3 ] || fail "keep-alive over TLS: $n answers"
h1=$(metric scalwsd_tls_handshakes_total)
[ $((h1 - h0)) = 1 ] || fail "keep-alive: $((h1 - h0)) handshakes for one connection"

# Pipelining: 400 requests in one write (more answers than one output buffer holds,
# so decrypted input waits in the stash), 400 answers.
n=$(python3 - "$PORT" "$T/a.pem" <<'PY'
import socket, ssl, sys
ctx = ssl.create_default_context(cafile=sys.argv[2])
s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10),
                    server_hostname="localhost")
s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * 399 + b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
data = b""
while True:
    d = s.recv(65536)
    if not d:
        break
    data += d
print(data.count(b"HTTP/1.1 200 OK"))
PY
)
[ "$n" = 400 ] || fail "pipelined over TLS: $n of 400 answers"

# Protocols: 1.2 and 1.3 served, 1.1 and 1.0 refused (and counted).
# (Output captured before grep -q: a grep that stops early must not fail the
# writer with SIGPIPE under pipefail.)
out=$(sclient -tls1_3 </dev/null) || true
grep -q "TLSv1.3" <<<"$out" || fail "TLS 1.3 refused"
out=$(sclient -tls1_2 </dev/null) || true
grep -q "Protocol  *: TLSv1.2" <<<"$out" || fail "TLS 1.2 refused"
v0=$(metric scalwsd_tls_failed_total 'reason="version"')
for p in -tls1 -tls1_1; do
    out=$(sclient "$p" -cipher 'DEFAULT@SECLEVEL=0' </dev/null) || true
    case $out in *"alert protocol version"* | *"no protocols available"*) ;;
        *) fail "$p was not refused: $out" ;; esac
done
v1=$(metric scalwsd_tls_failed_total 'reason="version"')
[ "$v1" -ge $((v0 + 1)) ] || fail "TLS 1.0/1.1 not counted as version ($v0 -> $v1)"

# ALPN: h2 chosen before http/1.1 (the server's order), http/1.1 for a client
# that offers only it; one that offers neither gets no_application_protocol.
out=$(sclient -alpn http/1.1,h2 </dev/null) || true
grep -q "ALPN protocol: h2" <<<"$out" || fail "ALPN: h2 not chosen first"
out=$(sclient -alpn http/1.1 </dev/null) || true
grep -q "ALPN protocol: http/1.1" <<<"$out" || fail "ALPN http/1.1"
out=$(sclient -alpn spdy/3.1 </dev/null) || true
case $out in *"no application protocol"*) ;; *) fail "an unknown ALPN protocol served: $out" ;; esac

# Resumption: a ticket saved by one s_client resumes in the next (TLS 1.3 and 1.2).
for p in -tls1_3 -tls1_2; do
    rm -f "$T/sess"
    printf "%b" "$REQ" | sclient "$p" -ign_eof -sess_out "$T/sess" >/dev/null
    [ -s "$T/sess" ] || fail "$p: no session saved"
    out=$(printf "%b" "$REQ" | sclient "$p" -ign_eof -sess_in "$T/sess")
    case $out in *"Reused, TLSv1."*) ;; *) fail "$p: not resumed: $(echo "$out" | grep -E 'New|Reused')" ;; esac
done
[ "$(metric scalwsd_tls_resumed_total)" -ge 2 ] || fail "resumptions not counted"

# Hostile: plain HTTP, garbage, and a hello that stops half-way are closed and counted.
nt0=$(metric scalwsd_tls_failed_total 'reason="not_tls"')
raw 'GET / HTTP/1.1\r\nHost: x\r\n\r\n' 5 >"$T/plain"
grep -q "HTTP/1.1" "$T/plain" && fail "plain HTTP answered in the clear on a tls listener"
raw '\x00\x01\x02garbage\r\n\r\n' 5 >/dev/null
nt1=$(metric scalwsd_tls_failed_total 'reason="not_tls"')
[ "$nt1" -ge $((nt0 + 2)) ] || fail "plain HTTP and garbage not counted as not_tls ($nt0 -> $nt1)"
t0=$(metric scalwsd_tls_failed_total 'reason="timeout"')
# A record header and then silence: handshake_timeout (1s) closes it; the guard is 10 s.
start=$(date +%s)
raw '\x16\x03\x01\x02\x00\x01' 10 >/dev/null
[ $(($(date +%s) - start)) -lt 9 ] || fail "a stalled hello was not closed"
[ "$(metric scalwsd_tls_failed_total 'reason="timeout"')" -ge $((t0 + 1)) ] ||
    fail "stalled hello not counted as timeout"
grep -qi "alert\|ssl\|error" "$T/log" && fail "bad TLS input reached the log: $(cat "$T/log")"
[ "$(metric scalwsd_connections_active)" -le 1 ] || fail "slots stuck after the hostile inputs"

# Reload: an open connection keeps certificate a, new handshakes get b.
exec 5< <(hold_tls localhost "$T/a.pem" "$T/held" 20)
for _ in $(seq 1 100); do [ -s "$T/held" ] && break; sleep 0.1; done
[ -s "$T/held" ] || fail "the held connection did not open"
cp "$T/b.pem" "$T/cert.pem"
cp "$T/b.key" "$T/key.pem"
kill -HUP "$SWS_PID"
for _ in $(seq 1 100); do grep -q "every loop serves generation 1" "$T/log" && break; sleep 0.1; done
grep -q "every loop serves generation 1" "$T/log" || fail "reload did not finish"
[ "$(served localhost)" = "$(fingerprint "$T/b.pem")" ] || fail "new handshakes do not get the new cert"
touch "$T/held.go"
read -r -t 20 line <&5 || fail "the held connection did not answer after the reload"
[ "$line" = "after-reload 1" ] || fail "the connection open across the reload: $line"

# A bad certificate at reload: a clear error, and b keeps serving
# (tls_sni.sh: with several certificates, the others are reloaded).
echo "not a certificate" >"$T/cert.pem"
kill -HUP "$SWS_PID"
wait_log "every loop serves generation 2" || fail "reload 2 did not finish"
grep -q "certificate refused: .*\[tls\] cert $T/cert.pem: no PEM certificate.*still serving the one loaded before" \
    "$T/log" || fail "bad cert at reload not refused clearly"
[ "$(served localhost)" = "$(fingerprint "$T/b.pem")" ] || fail "the old cert stopped serving"
grep -q "Hello" <<<"$(curl -s -m 5 --cacert "$T/b.pem" "https://localhost:$PORT/")" ||
    fail "not serving after the refused reload"

stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit status $SWS_STATUS"

# The static scenario over TLS: every byte of a file goes through the engine
# (sendfile would put the file's plaintext on the wire), whole and as a range.
mkdir -p "$T/www"
head -c 3000000 /dev/urandom >"$T/www/big.bin"
cp "$T/b.pem" "$T/cert.pem"
cp "$T/b.key" "$T/key.pem"
start_sws "scenario = static\nevent_loops = 1\n[static]\nroot = $T/www\n[tls]\ncert = $T/cert.pem\nkey = $T/key.pem"
curl -s -m 20 --cacert "$T/b.pem" "https://localhost:$PORT/big.bin" -o "$T/got.bin" ||
    fail "static over tls: curl failed"
cmp -s "$T/got.bin" "$T/www/big.bin" || fail "static over tls: the file came back different"
curl -s -m 10 --cacert "$T/b.pem" -r 1000-1999 "https://localhost:$PORT/big.bin" -o "$T/range.bin"
dd if="$T/www/big.bin" of="$T/want.bin" bs=1000 skip=1 count=1 2>/dev/null
cmp -s "$T/range.bin" "$T/want.bin" || fail "static over tls: the range came back different"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit status $SWS_STATUS (static over tls)"

# keepalive_timeout and a drain close an idle TLS connection with close_notify
# before the FIN (nginx does): the client reads a clean end, not a truncation
# (SSLEOFError with suppress_ragged_eofs off), and then the TCP FIN.
start_sws "event_loops = 1\ndrain_idle_grace = 300ms\n[limits]\nkeepalive_timeout = 1s\n[tls]\ncert = $T/cert.pem\nkey = $T/key.pem"
idle_end() { # PORT CA [PID to SIGTERM after the answer]
    python3 - "$@" <<'PY'
import os, signal, socket, ssl, sys
port, ca = int(sys.argv[1]), sys.argv[2]
ctx = ssl.create_default_context(cafile=ca)
raw = socket.create_connection(("127.0.0.1", port), timeout=20)
s = ctx.wrap_socket(raw, server_hostname="localhost", suppress_ragged_eofs=False)
s.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
head = s.recv(65536)
assert head.startswith(b"HTTP/1.1 200"), head[:40]
if len(sys.argv) > 3:
    os.kill(int(sys.argv[3]), signal.SIGTERM)
try:
    more = s.recv(100)
except ssl.SSLEOFError as e:
    sys.exit("no close_notify: %s" % e)
assert more == b"", more[:40]
tcp = socket.socket(fileno=os.dup(s.fileno()))  # the same socket, below TLS
# The descriptor is non-blocking (the timeout above): wait for the FIN, which
# the server sends once its close_notify write has completed, a turn later.
tcp.settimeout(20)
assert tcp.recv(100) == b"", "no FIN after close_notify"
PY
}
idle_end "$PORT" "$T/b.pem" || fail "keepalive_timeout over tls: no close_notify"
idle_end "$PORT" "$T/b.pem" "$SWS_PID" || fail "drain over tls: no close_notify"
SWS_STATUS=0
wait "$SWS_PID" || SWS_STATUS=$? # the drain ends the process by itself
SWS_PID=""
[ "$SWS_STATUS" = 0 ] || fail "exit status $SWS_STATUS (close_notify)"
echo "ok"
