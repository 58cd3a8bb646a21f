#!/usr/bin/env bash
# WebSocket over HTTP/3 through the proxy: RFC 9220 extended CONNECT
# (doc/http3.md, doc/operations.md). h3get --ws (tests/h3/h3get_ws.c)
# against a python3-websockets upstream (ws_tunnel.py), two loops: masked
# text messages echoed up to 1 MiB (past [limits] body_size: a tunnel's
# bytes are no body), two tunnels on one connection, the client's close
# and the upstream's (FIN both ways), the upstream vanishing (the stream
# ends), a refused upgrade (403 relayed), an unknown
# :protocol, a route that does not tunnel and a plain CONNECT (501);
# tunnels counting as streams (streams_per_loop: those past it rejected,
# H3_REQUEST_REJECTED, the others served); tunnel_idle_timeout (reset
# H3_REQUEST_CANCELLED, counted); a drain held until drain_timeout, the
# tunnel counted as drained; no route that tunnels: :protocol is
# malformed (H3_MESSAGE_ERROR); the tunnels in /metrics and the access log.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_ws.sh"
ws_need websockets
H3GET=${H3GET:?path of h3get in H3GET}

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj "/CN=localhost" -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
    -keyout "$T/key.pem" -out "$T/cert.pem" 2>/dev/null || fail "openssl req"
up WSUP server 280 "$T"

conf() { # conf [SERVER [ROUTE]]: quic beside tls, the tunnel's route; more keys for either
    printf '%s' "listen = 127.0.0.1:0 quic name=h3
event_loops = 2
scenario = respond
access_log = $T/access.log
${1:-}
[tls]
cert = $T/cert.pem
key = $T/key.pem
[limits]
body_size = 65536
[route ws]
path_prefix = /ws/
scenario = proxy
upstream = 127.0.0.1:$WSUP
strip_prefix = on
${2:-}"
}
SWS_LISTEN_OPTS="tls name=tls"
qport() {
    QP=$(ready_listen_port "$T/ready" h3)
    [ -n "$QP" ] || fail "the ready file names no quic listener: $(cat "$T/ready")"
    H="127.0.0.1:$QP"
}
# ws OUT [h3get options] PATH: one run, its stdout and stderr in OUT; its exit status.
ws() {
    local out=$1 rc=0
    shift
    timeout 120 "$H3GET" -k -t 100 "$@" >"$out" 2>&1 || rc=$?
    return $rc
}
# want OUT LINE...: every line is in OUT, in that order.
want() {
    local out=$1
    shift
    python3 - "$out" "$@" <<'EOF' || fail "$(basename "$out"): want '$*', got: $(cat "$out")"
import sys
got = open(sys.argv[1]).read().split("\n")
at = 0
for w in sys.argv[2:]:
    while at < len(got) and got[at] != w:
        at += 1
    if at == len(got):
        sys.exit(1)
    at += 1
EOF
}

start_sws "$(conf)"
qport

# Several messages each way, one of 1 MiB (past body_size), then the
# client's close: the upstream's close frame back, then FIN both ways.
ws "$T/echo" --ws 5,1048576,70000,1 "$H" /ws/echo || fail "echo: $(cat "$T/echo")"
want "$T/echo" "0 tunnel 200" "0 echo 5" "0 echo 1048576" "0 echo 70000" "0 echo 1" \
    "0 close 1000 client" "0 end"
# Two tunnels on one connection, beside each other.
ws "$T/two" --ws 300,3 -n 2 "$H" /ws/echo || fail "two tunnels: $(cat "$T/two")"
[ "$(grep -c ' end$' "$T/two")" = 2 ] || fail "two tunnels: $(cat "$T/two")"
# The upstream closes first: its close frame, ours back, the FINs.
ws "$T/bye" --ws 7 --ws-server-close "$H" /ws/bye || fail "the upstream's close: $(cat "$T/bye")"
want "$T/bye" "0 tunnel 200" "0 echo 7" "0 close 4000 server" "0 end"
# The upstream drops its TCP connection after the first message, without a
# close frame: the stream ends with it (its FIN, or H3_REQUEST_CANCELLED
# for a TCP reset: RFC 9220 3), and the tunnel is not taken for whole.
! ws "$T/vanish" --ws 5,5 "$H" /ws/vanish || fail "a vanished upstream: $(cat "$T/vanish")"
grep -qE "error 0x10c|no close frame" "$T/vanish" || fail "vanish: $(cat "$T/vanish")"
# No 101: the upstream's answer goes to the client as it is.
ws "$T/refused" --ws 5 "$H" /ws/other || fail "refused: $(cat "$T/refused")"
want "$T/refused" "0 tunnel 403"
grep -q "^0 403 7 " "$T/refused" || fail "the 403's body: $(cat "$T/refused")"
# A protocol [proxy] upgrade does not allow; a route that does not proxy.
ws "$T/proto" --ws 5 --ws-protocol x-unknown "$H" /ws/echo || fail "$(cat "$T/proto")"
want "$T/proto" "0 tunnel 501"
ws "$T/plainroute" --ws 5 "$H" /other || fail "$(cat "$T/plainroute")"
want "$T/plainroute" "0 tunnel 501"
# A plain CONNECT (RFC 9114 4.4): no tunnel of TCP here.
ws "$T/connect" -X CONNECT "$H" example.com:443 || fail "plain CONNECT: $(cat "$T/connect")"
grep -q "^0 501 " "$T/connect" || fail "plain CONNECT: $(cat "$T/connect")"
# Ordinary requests on the same listener still work.
ws "$T/get" "$H" /plain-get || fail "GET beside: $(cat "$T/get")"
grep -q "^0 200 " "$T/get" || fail "GET beside: $(cat "$T/get")"

# The counters, once the loops published them.
for _ in $(seq 1 50); do
    [ "$(metric_sum scalwsd_tunnels_active)" = 0 ] && [ "$(metric_sum scalwsd_tunnels_total)" -ge 5 ] && break
    sleep 0.2
done
[ "$(metric_sum scalwsd_tunnels_total)" -ge 5 ] || fail "tunnels_total $(metric_sum scalwsd_tunnels_total)"
[ "$(metric_sum scalwsd_tunnels_active)" = 0 ] || fail "tunnels_active $(metric_sum scalwsd_tunnels_active)"
[ "$(metric_sum scalwsd_tunnel_sent_bytes_total)" -gt 1048576 ] || fail "bytes up"
[ "$(metric_sum scalwsd_tunnel_received_bytes_total)" -gt 1048576 ] || fail "bytes down"
grep -q '"CONNECT /ws/echo HTTP/3.0" 200 ' "$T/access.log" || fail "access log: $(cat "$T/access.log")"
stop_ok tunnels

# A tunnel counts as a stream: with 16 streams per loop, 16 of 20 tunnels
# at once are served and the others rejected (a client may retry them).
start_sws "$(conf "" "")
[http3]
streams_per_loop = 16"
qport
! ws "$T/limit" --ws 9 -n 20 "$H" /ws/echo || fail "20 tunnels past the limit all served"
[ "$(grep -c ' end$' "$T/limit")" = 16 ] || fail "16 tunnels: $(cat "$T/limit")"
[ "$(grep -c 'error 0x10b' "$T/limit")" = 4 ] || fail "4 rejected: $(cat "$T/limit")"
stop_ok limit

# tunnel_idle_timeout: a tunnel that carries nothing is reset, and counted.
start_sws "$(conf "" "tunnel_idle_timeout = 1s")"
qport
! ws "$T/idle" --ws 5 --ws-server-close "$H" /ws/echo || fail "an idle tunnel kept: $(cat "$T/idle")"
want "$T/idle" "0 tunnel 200" "0 echo 5"
grep -q "error 0x10c" "$T/idle" || fail "idle: no H3_REQUEST_CANCELLED: $(cat "$T/idle")"
for _ in $(seq 1 50); do
    [ "$(metric_sum scalwsd_tunnels_idle_closed_total)" = 1 ] && break
    sleep 0.2
done
[ "$(metric_sum scalwsd_tunnels_idle_closed_total)" = 1 ] || fail "idle closes"
stop_ok idle

# Drain: GOAWAY, and an open tunnel keeps the process until drain_timeout
# closes it, counted as a drained tunnel.
start_sws "$(conf "drain_timeout = 3s")"
qport
timeout 60 "$H3GET" -k -t 50 --ws 5 --ws-server-close "$H" /ws/echo >"$T/drain" 2>&1 &
DRAIN=$!
for _ in $(seq 1 300); do grep -q '^0 echo 5$' "$T/drain" && break; sleep 0.1; done
grep -q '^0 echo 5$' "$T/drain" || fail "the tunnel for the drain did not open: $(cat "$T/drain")"
kill -TERM "$SWS_PID"
reap_sws 30
[ "$SWS_STATUS" = 0 ] || fail "exit $SWS_STATUS after the drain"
! wait "$DRAIN" || fail "the tunnel outlived the drain: $(cat "$T/drain")"
grep -q "^goaway " "$T/drain" || fail "no GOAWAY: $(cat "$T/drain")"
grep -q "(1 tunnels)" "$T/log" || fail "the drained tunnel not counted: $(tail -3 "$T/log")"
! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$T/log" || fail "a sanitizer report (drain)"

# No route tunnels: no SETTINGS_ENABLE_CONNECT_PROTOCOL, so :protocol is
# malformed (RFC 8441 4 as RFC 9220 takes it): the stream's H3_MESSAGE_ERROR.
start_sws "$(conf "" "upgrade = off")"
qport
! ws "$T/nosetting" --ws 5 "$H" /ws/echo || fail ":protocol taken without the setting"
grep -q "error 0x10e" "$T/nosetting" || fail "no H3_MESSAGE_ERROR: $(cat "$T/nosetting")"
stop_ok nosetting
echo ok
