#!/usr/bin/env bash
# WebSocket over HTTP/2 through the proxy: RFC 8441 extended CONNECT (doc/http2.md,
# doc/operations.md), a python3-h2 client writing its own WebSocket frames
# (tests/e2e/ws_h2.py) against a python3-websockets upstream (ws_tunnel.py).
# SETTINGS_ENABLE_CONNECT_PROTOCOL offered when a route tunnels and not
# otherwise; echo of text and binary, the close handshake; 1 MiB both ways;
# 1 MiB to a reader with a 16 KiB window it opens slowly, the proxy's memory
# bounded meanwhile; the upstream vanishing (the stream ends, the connection
# goes on); a refused upgrade (403 relayed); two tunnels and ordinary
# requests on one connection; half-close both ways; a 101 without the
# Sec-WebSocket-Accept our key asks for (502); malformed extended CONNECTs
# (stream PROTOCOL_ERROR) and a plain CONNECT (501, on a respond route too);
# tunnel_idle_timeout (RST_STREAM CONNECT_ERROR); a drain that keeps a tunnel until its timeout,
# then closes and counts it; the tunnels in /metrics; over TLS too.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_ws.sh"
ws_need websockets h2
H2=$(dirname "$0")/ws_h2.py
# h2 CASE [tls] [ARGS]: one client case against $PORT.
h2() { timeout 150 "$PY" "$H2" "$1" "$PORT" "${@:2}" || fail "h2 client $*"; }

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=127.0.0.1 \
    -addext subjectAltName=IP:127.0.0.1 -keyout "$T/key.pem" -out "$T/cert.pem" 2>/dev/null
up WSUP server 280 "$T"
up LIAR liar 280

PROXY="scenario = proxy\n[proxy]\nupstream = 127.0.0.1:$WSUP\nupgrade = websocket, x-raw"
start_sws "$PROXY"
h2 echo
h2 large 1048576
hwm() { awk '/^VmHWM/ { print $2 }' "/proc/$SWS_PID/status"; }
before=$(hwm)
h2 slow 1048576
grew=$(($(hwm) - before))
[ "$grew" -lt 4096 ] || fail "the proxy grew by $grew KiB for a 1 MiB message to a slow reader"
h2 vanish
h2 refused
h2 mixed
h2 malformed
[ "$(metric_sum scalwsd_tunnels_total)" -ge 6 ] || fail "tunnels_total $(metric_sum scalwsd_tunnels_total)"
[ "$(metric_sum scalwsd_tunnels_active)" = 0 ] || fail "tunnels_active $(metric_sum scalwsd_tunnels_active)"
[ "$(metric_sum scalwsd_tunnel_sent_bytes_total)" -gt 1048576 ] || fail "bytes up"
[ "$(metric_sum scalwsd_tunnel_received_bytes_total)" -gt 2097152 ] || fail "bytes down"
# The HTTP/1.1 upgrade on the same listener still tunnels.
timeout 60 "$PY" "$WS" client "ws://127.0.0.1:$PORT" echo || fail "an HTTP/1.1 upgrade beside"
stop_ok h2c

# Half-close each way, and an upstream whose 101 does not prove our key.
start_sws "scenario = proxy\n[proxy]\nupstream = 127.0.0.1:$LIAR\nupgrade = websocket, x-raw"
h2 halfclose
h2 badproof
stop_ok liar

# No route tunnels: the setting is not offered, and a :protocol is refused.
start_sws "scenario = proxy\n[proxy]\nupstream = 127.0.0.1:$WSUP\nupgrade = off"
h2 nosetting
stop_ok nosetting
# A route that does not proxy cannot carry a tunnel: 501, the proxy's route can.
start_sws "[route ws]\npath_prefix = /echo\nscenario = proxy\nupstream = 127.0.0.1:$WSUP"
h2 echo
h2 status /other 501
h2 plain
stop_ok routed

# tunnel_idle_timeout resets a tunnel that carries nothing.
start_sws "$PROXY\ntunnel_idle_timeout = 1s"
h2 idle
[ "$(metric_sum scalwsd_tunnels_idle_closed_total)" = 1 ] || fail "idle closes"
stop_ok idle

# Drain: an open tunnel keeps the process until drain_timeout closes it,
# counted as a drained tunnel.
start_sws "drain_timeout = 3s\n$PROXY"
rm -f "$T/flag"
timeout 60 "$PY" "$H2" drain "$PORT" "$T/flag" &
DRAIN=$!
for _ in $(seq 1 300); do [ -s "$T/flag" ] && break; sleep 0.1; done
[ -s "$T/flag" ] || fail "the tunnel for the drain did not open"
kill -TERM "$SWS_PID"
wait "$DRAIN" || fail "the tunnel during the drain"
reap_sws 30
[ "$SWS_STATUS" = 0 ] || fail "exit $SWS_STATUS after the drain"
grep -q "(1 tunnels)" "$T/log" || fail "the drained tunnel not counted: $(tail -3 "$T/log")"
! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$T/log" || fail "a sanitizer report (drain)"

# A TLS listener: h2 by ALPN.
SWS_LISTEN_OPTS=tls start_sws "$PROXY\n[tls]\ncert = $T/cert.pem\nkey = $T/key.pem"
h2 echo tls
h2 large tls 1048576
h2 mixed tls
stop_ok TLS
echo ok
