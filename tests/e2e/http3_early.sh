#!/usr/bin/env bash
# 0-RTT over HTTP/3 (issue 33, RFC 9001 4.6, RFC 8470): off by default, a
# resumed connection's early data is not taken (its requests are sent again
# after the handshake); with [http3] early_data = on a GET in 0-RTT is
# served and a POST in 0-RTT is answered 425 Too Early, on a connection
# resumed on either loop, and a replay of its first flight is not answered
# again; a SIGHUP that changes a transport parameter ends 0-RTT for the
# tickets issued before it; SIGHUP turns it off again. The proxy forwards a
# GET taken in 0-RTT with Early-Data: 1 (RFC 8470 5.1), and the same GET
# after the handshake without it; over HTTP/1.1 and HTTP/2 a POST marked
# Early-Data: 1 (an intermediary's early data) is 425 too. h3get --early sends
# the second connection's requests as early data and says whether they
# were taken ("early 0|1").
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_h3.sh"
printf 'hello' >"$T/post.txt"
start_test_upstream 280

conf() { # conf EARLY_DATA
    printf '%s' "listen = 127.0.0.1:0 quic name=h3
event_loops = 2
scenario = respond
[tls]
cert = $T/cert.pem
key = $T/key.pem
[route up]
path_prefix = /up/
scenario = proxy
upstream = 127.0.0.1:$UP
strip_prefix = on
[http3]
early_data = $1"
}
start_h3 "$(conf off)"

total() { # total METRIC: the sum over the loops
    curl -s "http://127.0.0.1:$ADMIN_PORT/metrics" | awk -v m="$1" '$1 ~ "^"m"[{]" { s += $2 } END { print s + 0 }'
}
settled() { # settled METRIC: its sum once two readings a publication apart agree
    local a b
    a=$(total "$1")
    for _ in $(seq 1 20); do
        sleep 1.5
        b=$(total "$1")
        [ "$a" = "$b" ] && break
        a=$b
    done
    echo "$b"
}
early() { # early [h3get options]: two connections, the second resumed with 0-RTT
    timeout 60 "$H3GET" -k -t 50 --resume "127.0.0.1:$QP" --early "$@" "127.0.0.1:$QP" / 2>&1
}
# The first connection's answer, "resumed 1", "early EARLY", the second's answer.
expect() { # expect OUTPUT EARLY STATUS
    local got
    got=$(awk '/^resumed / { r = $2 } /^early / { e = $2 } /^0 / { s[n++] = $2 }
        END { print s[0], r, e, s[1] }' <<<"$1")
    [ "$got" = "200 1 $2 $3" ] || fail "want '200 1 $2 $3' (answer, resumed, early, answer), got '$got': $1"
}

# Off (the default): no ticket offers 0-RTT; the requests go after the handshake.
out=$(early) || fail "resumed GET, early_data off: $out"
expect "$out" 0 200
out=$(early -X POST -d "$T/post.txt") || fail "resumed POST, early_data off: $out"
expect "$out" 0 200
[ "$(settled scalwsd_http3_early_data_total)" = 0 ] || fail "early data taken with early_data off"

# On: a GET in 0-RTT is served, a POST in 0-RTT is answered 425; several
# times, so that second connections land on both loops.
printf '[server]\nlisten = 127.0.0.1:0 tls name=tls\n%s\n[admin]\nlisten = 127.0.0.1:0\n' \
    "$(conf on)" >"$T/sws.ini"
kill -HUP "$SWS_PID"
wait_log "every loop serves generation 1" 30 || fail "SIGHUP: the loops did not take the reload"
for _ in 1 2 3 4; do
    out=$(early) || fail "GET in 0-RTT: $out"
    expect "$out" 1 200
    out=$(early -X POST -d "$T/post.txt") || fail "POST in 0-RTT: $out"
    expect "$out" 1 425
done
out=$(early -X OPTIONS) || fail "OPTIONS in 0-RTT: $out"
expect "$out" 1 200

# Through the proxy: the upstream names the fields it got (X-Info). The
# first connection's GET (1-RTT) goes up without Early-Data; the second's,
# taken in 0-RTT, with it, once.
out=$(timeout 60 "$H3GET" -k -t 50 -i --resume "127.0.0.1:$QP" --early "127.0.0.1:$QP" /up/echo 2>&1) ||
    fail "a proxied GET in 0-RTT: $out"
got=$(awk '/^early / { e = $2; next } /< x-info:/ { n++; m = $0 ~ /names=[^;]*early-data/ ? "marked" : "unmarked"
    if (n == 1) a = m; else b = m } END { print a, e, b }' <<<"$out")
[ "$got" = "unmarked 1 marked" ] ||
    fail "Early-Data upstream: want 'unmarked 1 marked' (1-RTT, early, 0-RTT), got '$got': $out"

[ "$(settled scalwsd_http3_early_data_total)" -ge 9 ] ||
    fail "scalwsd_http3_early_data_total: $(total scalwsd_http3_early_data_total), want 9"
[ "$(total scalwsd_http3_too_early_total)" = 4 ] ||
    fail "scalwsd_http3_too_early_total: $(total scalwsd_http3_too_early_total), want 4"

# A replay: the second connection goes through a relay that copies its
# first flight (the ClientHello and the 0-RTT GET) and, once the connection
# is over, sends it again from another port. The server makes a connection
# of it, but the anti-replay (one memory for every loop) has taken that
# ClientHello's early data already: the GET is not answered twice.
python3 "$(dirname "$0")/udp_replay.py" "$T/relay" "$QP" 90 &
RELAY_PID=$!
for _ in $(seq 1 100); do [ -s "$T/relay" ] && break; sleep 0.1; done
RP=$(cat "$T/relay")
out=$(timeout 60 "$H3GET" -k -t 50 --resume "127.0.0.1:$RP" --early "127.0.0.1:$QP" / 2>&1) ||
    fail "GET in 0-RTT through the relay: $out"
expect "$out" 1 200
requests=$(settled scalwsd_http3_requests_total)
conns=$(total scalwsd_http3_connections_total)
touch "$T/relay.go"
for _ in $(seq 1 100); do [ -s "$T/relay.done" ] && break; sleep 0.1; done
[ -s "$T/relay.done" ] || fail "the relay did not replay"
wait "$RELAY_PID" || true
[ "$(settled scalwsd_http3_connections_total)" -gt "$conns" ] ||
    fail "the replayed first flight made no connection: the test proves nothing"
[ "$(total scalwsd_http3_requests_total)" = "$requests" ] ||
    fail "a replayed 0-RTT GET was answered again ($requests requests before, $(total scalwsd_http3_requests_total) after)"

# A SIGHUP between a ticket and its use: one that changes nothing a ticket
# promised keeps 0-RTT; one that changes stream_window (a transport
# parameter the client's 0-RTT counts on, RFC 9000 7.4.1) takes no early
# data from the tickets issued before it.
across_reload() { # across_reload HTTP3-LINE GENERATION: h3get's output, a SIGHUP between its connections
    rm -f "$T/go"
    timeout 60 "$H3GET" -k -t 50 --resume "127.0.0.1:$QP" --early --resume-after "$T/go" \
        "127.0.0.1:$QP" / >"$T/across" 2>&1 &
    local pid=$!
    for _ in $(seq 1 300); do
        grep -q '^0 ' "$T/across" && break
        sleep 0.1
    done
    printf '[server]\nlisten = 127.0.0.1:0 tls name=tls\n%s\n%s\n[admin]\nlisten = 127.0.0.1:0\n' \
        "$(conf on)" "$1" >"$T/sws.ini"
    kill -HUP "$SWS_PID"
    wait_log "every loop serves generation $2" 30 || fail "SIGHUP: the loops did not take generation $2"
    touch "$T/go"
    wait "$pid" || true
    cat "$T/across"
}
out=$(across_reload "" 2)
expect "$out" 1 200
out=$(across_reload "stream_window = 128k" 3)
expect "$out" 0 200

# Off again: tickets no longer offer it, and early data is not taken.
printf '[server]\nlisten = 127.0.0.1:0 tls name=tls\n%s\n[admin]\nlisten = 127.0.0.1:0\n' \
    "$(conf off)" >"$T/sws.ini"
kill -HUP "$SWS_PID"
wait_log "every loop serves generation 4" 30 || fail "SIGHUP: the loops did not take the last reload"
out=$(early -X POST -d "$T/post.txt") || fail "resumed POST, early_data off again: $out"
expect "$out" 0 200

# RFC 8470 5.1 over HTTP/1.1 and HTTP/2 (early data an intermediary took):
# an unsafe method marked Early-Data: 1 cannot be processed safely, 425; a
# safe one is served, and so is one not marked.
for v in --http1.1 --http2; do
    c() { curl -sk "$v" -o /dev/null -w '%{http_code} ' "$@" "https://127.0.0.1:$PORT/"; }
    got="$(c -H 'Early-Data: 1' -d x)$(c -H 'Early-Data: 1')$(c -d x)$(c -H 'Early-Data: 1' -X OPTIONS)"
    [ "$got" = "425 200 200 200 " ] || fail "$v: want 425 200 200 200 (POST marked, GET marked, POST, OPTIONS marked), got $got"
done
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "scalwsd exited $SWS_STATUS"
echo "PASS http3_early"
