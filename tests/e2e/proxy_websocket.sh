#!/usr/bin/env bash
# WebSocket through the proxy (Upgrade tunnels, doc/operations.md): a real
# client and server (Debian python3-websockets, tests/e2e/ws_tunnel.py).
# Echo of text and binary frames, ping/pong and the close handshake; 4 MiB
# both ways; 16 MiB to a slow reader, the proxy's memory bounded meanwhile;
# the upstream vanishing and the client vanishing; 1,000 tunnels at once, and
# the memory of 300 quiet ones; a
# plain request before an upgrade on one connection; an upgrade the upstream
# refuses (403 relayed, the connection goes on); a 101 never asked for (502);
# half-close passed on each way; a route's tunnel across a reload removing it;
# upgrade = off; tunnel_idle_timeout; a TLS listener with a TLS upstream; a
# drain that keeps a tunnel until its timeout, then closes and counts it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_ws.sh"
ws_need websockets
client() { timeout 150 "$PY" "$WS" client "$@" || fail "client $*"; }

# A certificate for 127.0.0.1, its own CA: the listener's and the TLS upstream's.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=127.0.0.1 \
    -addext subjectAltName=IP:127.0.0.1 -keyout "$T/key.pem" -out "$T/cert.pem" 2>/dev/null
up WSUP server 280 "$T"
up WSTLS server 280 "$T" "$T/cert.pem" "$T/key.pem"
up LIAR liar 280

start_sws "scenario = proxy\n[proxy]\nupstream = 127.0.0.1:$WSUP"
URL=ws://127.0.0.1:$PORT
client "$URL" echo
client "$URL" plain_then_upgrade
client "$URL" refused
client "$URL" large 4194304
# 16 MiB read slowly: back-pressure holds the upstream, the proxy keeps a
# buffer or two, never the message.
hwm() { awk '/^VmHWM/ { print $2 }' "/proc/$SWS_PID/status"; }
before=$(hwm)
client "$URL" slow_reader 16777216
grew=$(($(hwm) - before))
[ "$grew" -lt 8192 ] || fail "the proxy grew by $grew KiB for a 16 MiB message"
client "$URL" vanish
rm -f "$T/watch.closed"
client "$URL" client_vanish
for _ in $(seq 1 300); do [ -s "$T/watch.closed" ] && break; sleep 0.1; done
[ -s "$T/watch.closed" ] || fail "the upstream never saw the client vanish"
# 1,000 tunnels open at once, each echoing; the gauge counts them. Each
# tunnel is two descriptors here and one in each peer: the soft limit is
# raised to the hard one (ulimit -n), and a machine whose hard limit is too
# low for that says so and opens what it can hold.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
MANY_N=1000
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt 2200 ]; then
    MANY_N=250
    echo "note: ulimit -n $(ulimit -n) holds 250 tunnels, not 1,000"
fi
rm -f "$T/hold"
timeout 240 "$PY" "$WS" client "$URL" many "$MANY_N" "$T/hold" &
MANY=$!
for _ in $(seq 1 1800); do [ -s "$T/hold" ] && break; sleep 0.1; done
[ -s "$T/hold" ] || fail "$MANY_N tunnels did not open"
n=$(metric_sum scalwsd_tunnels_active)
[ "$n" = "$MANY_N" ] || fail "tunnels_active $n with $MANY_N open"
curl -s -m 5 "http://127.0.0.1:$ADMIN_PORT/status" |
    jq -e "[.loops[].tunnels.active] | add == $MANY_N" >/dev/null || fail "/status tunnels"
rm -f "$T/hold"
wait "$MANY" || fail "$MANY_N tunnels: $(cat "$T/log")"
for _ in $(seq 1 300); do [ "$(metric_sum scalwsd_tunnels_active)" = 0 ] && break; sleep 0.1; done
[ "$(metric_sum scalwsd_tunnels_active)" = 0 ] || fail "tunnels left open: $(metric_sum scalwsd_tunnels_active)"
[ "$(metric_sum scalwsd_tunnels_total)" -ge $((MANY_N + 6)) ] || fail "tunnels_total $(metric_sum scalwsd_tunnels_total)"
[ "$(metric_sum scalwsd_tunnel_sent_bytes_total)" -gt 4194304 ] || fail "bytes up"
[ "$(metric_sum scalwsd_tunnel_received_bytes_total)" -gt 20971520 ] || fail "bytes down"
# HTTP/2 on the same listener still proxies plain requests.
[ "$(curl -s --http2-prior-knowledge "http://127.0.0.1:$PORT/plain")" = "plain ok" ] || fail "HTTP/2"
stop_ok plain

# A proxy route (the default answers itself): tunnels through the route's
# instance; a reload that removes the route leaves an open tunnel working on
# the retired instance until it ends.
ROUTE="[route ws]\npath_prefix = /echo\nscenario = proxy\nupstream = 127.0.0.1:$WSUP"
start_sws "$ROUTE"
client "ws://127.0.0.1:$PORT" echo
rm -f "$T/flag" "$T/flag.go"
timeout 60 "$PY" "$WS" client "ws://127.0.0.1:$PORT" hold "$T/flag" &
HOLD=$!
for _ in $(seq 1 300); do [ -s "$T/flag" ] && break; sleep 0.1; done
sed -i '/^\[route ws\]/,/^upstream/d' "$T/sws.ini"
kill -HUP "$SWS_PID"
wait_log "every loop serves generation 1;" || fail "reload removing the route"
touch "$T/flag.go"
wait "$HOLD" || fail "the tunnel under the removed route"
client "ws://127.0.0.1:$PORT" status /echo 200 # the default answers now
stop_ok routed

# Quiet tunnels hold no parser, no output buffer, no exchange: 300 of them
# grow the RSS by a few hundred bytes each on epoll, 3.6 KiB on io_uring on
# first touch (two sockets' handles and receives); one output buffer or
# parser each would be ten times the bound. Not under a sanitizer, whose
# redzones are its own memory.
if ! grep -q __asan_init "$SWS"; then
    start_sws "event_loops = 1\nscenario = proxy\n[proxy]\nupstream = 127.0.0.1:$WSUP
[limits]\nmax_connections = 50000"
    client "ws://127.0.0.1:$PORT" idle_memory 300 "$SWS_PID" 8192
    stop_ok idle_memory
fi

# A 101 the request did not ask for is a bad answer; an asked-for one from
# it goes through.
start_sws "scenario = proxy\n[proxy]\nupstream = 127.0.0.1:$LIAR"
client "ws://127.0.0.1:$PORT" status /plain 502
# Half-close passed on both ways: the client's FIN, then the upstream's answer and FIN.
client "ws://127.0.0.1:$PORT" half_close
stop_ok liar

# upgrade = off: the Upgrade is not forwarded (the upstream sees a plain GET).
start_sws "scenario = proxy\n[proxy]\nupstream = 127.0.0.1:$WSUP\nupgrade = off"
client "ws://127.0.0.1:$PORT" status /echo 403
[ "$(metric_sum scalwsd_tunnels_total)" = 0 ] || fail "a tunnel with upgrade = off"
stop_ok off

# tunnel_idle_timeout closes a tunnel that carries nothing.
start_sws "scenario = proxy\n[proxy]\nupstream = 127.0.0.1:$WSUP\ntunnel_idle_timeout = 1s"
client "ws://127.0.0.1:$PORT" idle
[ "$(metric_sum scalwsd_tunnels_idle_closed_total)" = 1 ] || fail "idle closes"
stop_ok idle

# A TLS listener, and TLS to the upstream.
SWS_LISTEN_OPTS=tls start_sws "scenario = proxy\n[tls]\ncert = $T/cert.pem\nkey = $T/key.pem
[proxy]\nupstream = 127.0.0.1:$WSTLS\ntls = on\ntls_ca = $T/cert.pem"
client "wss://127.0.0.1:$PORT" echo
client "wss://127.0.0.1:$PORT" plain_then_upgrade
client "wss://127.0.0.1:$PORT" large 4194304
stop_ok TLS

# Drain: a tunnel keeps working after SIGTERM, until drain_timeout closes it.
start_sws "drain_timeout = 3s\nscenario = proxy\n[proxy]\nupstream = 127.0.0.1:$WSUP"
rm -f "$T/flag" "$T/flag.draining"
timeout 60 "$PY" "$WS" client "ws://127.0.0.1:$PORT" drain "$T/flag" &
DRAIN=$!
for _ in $(seq 1 300); do [ -s "$T/flag" ] && break; sleep 0.1; done
kill -TERM "$SWS_PID"
wait_log "draining" || fail "no drain"
touch "$T/flag.draining"
wait "$DRAIN" || fail "the tunnel during the drain"
reap_sws 30
[ "$SWS_STATUS" = 0 ] || fail "exit $SWS_STATUS after the drain"
grep -q "1 closed by the drain timeout (1 tunnels)" "$T/log" || fail "drained tunnel not counted"
! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$T/log" || fail "a sanitizer report (drain)"

# SIGUSR2: the new process serves new tunnels; the old one keeps its tunnel
# working until the drain timeout closes it, then exits by itself.
start_sws "drain_timeout = 3s\nscenario = proxy\n[proxy]\nupstream = 127.0.0.1:$WSUP"
OLD=$SWS_PID
rm -f "$T/flag" "$T/flag.draining"
timeout 60 "$PY" "$WS" client "ws://127.0.0.1:$PORT" drain "$T/flag" &
DRAIN=$!
for _ in $(seq 1 300); do [ -s "$T/flag" ] && break; sleep 0.1; done
kill -USR2 "$OLD"
wait_log "serves on every loop" 60 || fail "the new process did not serve"
NEWPID=$(grep -o "started new process [0-9]*" "$T/log" | tail -1 | awk '{print $4}')
PIDS+=("$NEWPID")
wait_log "SIGUSR2: draining\|draining (timeout" 30 || fail "the old process does not drain"
touch "$T/flag.draining"
client "ws://127.0.0.1:$PORT" echo # a new tunnel, on the new process
wait "$DRAIN" || fail "the old process's tunnel during its drain"
for _ in $(seq 1 300); do kill -0 "$OLD" 2>/dev/null || break; sleep 0.1; done
kill -0 "$OLD" 2>/dev/null && fail "the old process did not exit"
wait "$OLD" || fail "the old process's exit status"
SWS_PID=""
grep -q "(1 tunnels)" "$T/log" || fail "the old process's drained tunnel not counted"
kill -TERM "$NEWPID"
for _ in $(seq 1 300); do kill -0 "$NEWPID" 2>/dev/null || break; sleep 0.1; done
wait_log "stopped after SIGTERM" 30 || fail "the new process did not stop"
! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$T/log" || fail "a sanitizer report (SIGUSR2)"
echo ok
