#!/usr/bin/env bash
# HTTP/2 across reloads, restarts and drains (issue 30, point 5), on h2c:
# 1. SIGHUP: three reloads under h2load -c 4 -m 10 -D 6: h2load reports 0
#    failed, 0 errored, 0 timeout; every stream it began in the main duration
#    was answered 2xx, but the last ones in flight when it stopped.
# 2. SIGUSR2 under h2load -c 4 -m 10 -D 20: the old process drains with a
#    graceful GOAWAY and exits 0; every stream it took was answered and
#    reached h2load (h2load's successes == the old process's requests). h2load
#    1.52 itself counts as failed the requests it had queued but could not
#    send once the GOAWAY came (nghttp2 refuses a new stream after a GOAWAY,
#    RFC 9113 6.8) and it does not open a new connection: those, at most
#    -c x -m, are all it may report failed. Then h2load -n 2000 against the
#    new process: 0 failed.
# 3. SIGUSR2 under h2_client.py load, which does what h2load does not: after a
#    GOAWAY it opens no stream, lets the ones it covers finish and goes on on
#    a new connection: 0 streams lost, and both processes served.
# 4. SIGTERM: a stream in flight (a 4 MiB file read slowly) gets the shutdown
#    notice (GOAWAY, last stream id 2^31-1), then the GOAWAY with its own id,
#    and completes byte for byte; so does a proxied stream whose upstream
#    answers 3 s later (nghttp); an idle connection gets both GOAWAYs and is
#    closed after drain_idle_grace; scalwsd exits 0, nothing forced.
# The counting discipline is zero_loss_restart's: the ports from the ready
# file, each step waits for what it needs (bounded), every failure counts.
. "$(dirname "$0")/lib.sh"
command -v h2load >/dev/null || { echo "SKIP: no h2load (nghttp2-client)"; exit 77; }
# python3-hpack and python3-hyperframe are Debian's: the system python3 has
# them where another python3 comes first in PATH.
PY=python3
"$PY" -c 'import hpack, hyperframe' 2>/dev/null || PY=/usr/bin/python3
"$PY" -c 'import hpack, hyperframe' 2>/dev/null ||
    { echo "SKIP: no python3-hpack, python3-hyperframe"; exit 77; }
H2C="$PY $(dirname "$0")/h2_client.py"

# h2load_counts OUT: STARTED, ENDED ("done"), OK ("succeeded"), FAILED,
# ERRORED, TIMEDOUT from h2load's "requests:" line, N2XX from "status codes:".
h2load_counts() {
    read -r _ STARTED ENDED OK FAILED ERRORED TIMEDOUT <<<"$(sed -n 's/^requests: //p' "$1" | tr -cs '0-9' ' ')"
    N2XX=$(sed -n 's/^status codes: \([0-9]*\) 2xx.*/\1/p' "$1")
    [ -n "$TIMEDOUT" ] && [ -n "$N2XX" ] || fail "no h2load summary: $(cat "$1")"
}
h2load_summary() { grep -E '^(requests|status codes|finished)' "$1" | tr '\n' ' '; }
# restart_to_new: restart_new, then the old process's exit (0, by itself,
# having been told that the new one serves); sets OLD_REQUESTS too (from the
# old one's last line).
restart_to_new() {
    restart_new
    wait_exit "$OLD" 30 "SIGUSR2: the old process $OLD (drained by itself)"
    local st=0
    wait "$OLD" || st=$?
    [ "$st" = 0 ] || fail "SIGUSR2: the old process exited $st"
    grep -q "new process $SWS_PID serves on every loop" "$T/log" || fail "the old process was not told"
    OLD_REQUESTS=$(grep 'stopped after SIGUSR2' "$T/log" | tail -1 | sed -E 's/.*; ([0-9]+) requests.*/\1/')
}
# stop_new: SIGTERM to the new process (not our child: no status to wait
# for; "stopped after SIGTERM" is printed only on the way to exit 0).
stop_new() {
    kill -TERM "$SWS_PID"
    wait_exit "$SWS_PID" 30 "the new process (SIGTERM)"
    SWS_PID=""
    grep -q 'stopped after SIGTERM' "$T/log" || fail "the new process's drain: $(cat "$T/log")"
    # Its exit status is not ours to read: a sanitizer build's report is in the log.
    ! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$T/log" || fail "a sanitizer report"
}
INI="event_loops = 2\naccept = reuse-port"

# ---------------------------------------------------------------------------
# 1. SIGHUP under h2load.
start_sws "$INI"
timeout 60 h2load -c 4 -m 10 -D 6 "http://127.0.0.1:$PORT/" >"$T/h2load" 2>&1 &
load=$!
wait_metric scalwsd_http2_streams_total 1000 30
for g in 1 2 3; do
    kill -HUP "$SWS_PID"
    wait_log "every loop serves generation $g;" || fail "reload $g not acknowledged"
done
kill -0 "$load" 2>/dev/null || fail "h2load ended before the third reload: $(cat "$T/h2load")"
wait "$load" || fail "h2load: $(cat "$T/h2load")"
echo "SIGHUP x3: $(h2load_summary "$T/h2load")"
h2load_counts "$T/h2load"
if [ "$FAILED" != 0 ] || [ "$ERRORED" != 0 ] || [ "$TIMEDOUT" != 0 ]; then
    fail "SIGHUP: h2load failed $FAILED, errored $ERRORED, timeout $TIMEDOUT"
fi
[ "$OK" = "$ENDED" ] || fail "SIGHUP: $(h2load_summary "$T/h2load")"
[ "$N2XX" = "$OK" ] || fail "SIGHUP: $(h2load_summary "$T/h2load")"
# What h2load had in flight when its time was up is not done: -c x -m at most.
[ $((STARTED - ENDED)) -le 40 ] || fail "SIGHUP: $((STARTED - ENDED)) streams begun and not done"
[ "$OK" -gt 1000 ] || fail "SIGHUP: only $OK requests"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit status $SWS_STATUS"

# ---------------------------------------------------------------------------
# 2. SIGUSR2 under h2load. Its 20 s hold the whole restart (an ASan start
# on a loaded machine took more than 6): streams h2load still had in flight
# when its time was up are not done for it, though the old process answers them.
start_sws "$INI"
timeout 60 h2load -c 4 -m 10 -D 20 "http://127.0.0.1:$PORT/" >"$T/h2load" 2>&1 &
load=$!
wait_metric scalwsd_http2_streams_total 1000 30
# All of h2load's connections are the old process's (it never opens another).
wait_metric scalwsd_http2_connections_total 3 30
kill -0 "$load" 2>/dev/null || fail "h2load ended before the restart: $(cat "$T/h2load")"
restart_to_new
wait "$load" || fail "h2load: $(cat "$T/h2load")"
echo "SIGUSR2: $(h2load_summary "$T/h2load"); the old process served $OLD_REQUESTS"
h2load_counts "$T/h2load"
[ "$N2XX" = "$OK" ] || fail "SIGUSR2: $(h2load_summary "$T/h2load")"
[ "$OK" -gt 1000 ] || fail "SIGUSR2: only $OK requests"
[ "$TIMEDOUT" = 0 ] || fail "SIGUSR2: $TIMEDOUT streams timed out"
# Every request the old process answered reached h2load whole (start_sws's
# probe, HTTP/1.1, is the one more).
[ "$OLD_REQUESTS" = $((OK + 1)) ] ||
    fail "SIGUSR2: the old process answered $OLD_REQUESTS requests, h2load received $OK (+1 probe)"
# Everything h2load began ended: answered, or refused by nghttp2 itself once
# the GOAWAY had come (never sent), at most one window of streams per connection.
[ "$STARTED" = "$ENDED" ] || fail "SIGUSR2: $(h2load_summary "$T/h2load")"
[ $((OK + FAILED)) = "$ENDED" ] || fail "SIGUSR2: $(h2load_summary "$T/h2load")"
[ "$FAILED" -le 40 ] || fail "SIGUSR2: h2load failed $FAILED streams, more than it can have queued (4 x 10)"
out=$(timeout 60 h2load -n 2000 -c 4 -m 10 "http://127.0.0.1:$PORT/" 2>&1) || fail "h2load after SIGUSR2: $out"
grep -q '^requests: 2000 total, 2000 started, 2000 done, 2000 succeeded, 0 failed, 0 errored, 0 timeout' <<<"$out" ||
    fail "h2load against the new process: $out"
stop_new
: >"$T/log"

# ---------------------------------------------------------------------------
# 3. SIGUSR2 under a client that goes on on a new connection after a GOAWAY.
start_sws "$INI"
rm -f "$T/stop"
$H2C load "$PORT" 90 "$T/stop" 4 10 >"$T/load" 2>"$T/load.err" &
load=$!
trap 'touch "$T/stop"; cleanup' EXIT
wait_metric scalwsd_http2_streams_total 500 30
restart_to_new
# Only the new process is on the admin port now: let it serve some.
wait_metric scalwsd_http2_streams_total 500 30
touch "$T/stop"
wait "$load" || fail "h2_client.py load: $(cat "$T/load.err")"
res=$(cat "$T/load")
echo "SIGUSR2, reconnecting client: $res; the old process served $OLD_REQUESTS"
[ "$(jq .lost <<<"$res")" = 0 ] || fail "SIGUSR2: streams lost: $res"
[ "$(jq .ok <<<"$res")" -gt 800 ] || fail "SIGUSR2: only $(jq .ok <<<"$res") streams: $res"
[ "$(jq .goaways <<<"$res")" -ge 1 ] || fail "SIGUSR2: no GOAWAY reached the client: $res"
[ "$(jq .connections <<<"$res")" -gt 4 ] || fail "SIGUSR2: the client never went on on a new connection: $res"
[ "$OLD_REQUESTS" -gt 500 ] || fail "SIGUSR2: the old process served $OLD_REQUESTS"
stop_new
: >"$T/log"

# ---------------------------------------------------------------------------
# 4. SIGTERM with a stream in flight and an idle connection.
make_static_tree 4194304
start_test_upstream 100
start_sws "$INI\nscenario = static\n[static]\nroot = $R\n[route up]\npath_prefix = /up/
scenario = proxy\nupstream = 127.0.0.1:$UP\nstrip_prefix = on"
$H2C slow "$PORT" /big.bin "$T/slow.ready" >"$T/slow" 2>"$T/slow.err" &
slow=$!
$H2C idle "$PORT" /a.txt "$T/idle.ready" >"$T/idle" 2>"$T/idle.err" &
idle=$!
end=$((SECONDS + 30))
until [ -e "$T/slow.ready" ] && [ -e "$T/idle.ready" ]; do
    [ "$SECONDS" -le "$end" ] || fail "the clients did not begin: $(cat "$T/slow.err" "$T/idle.err")"
    kill -0 "$slow" 2>/dev/null || [ -e "$T/slow.ready" ] || fail "slow client: $(cat "$T/slow.err")"
    sleep 0.05
done
# The upstream answers /slow after 3 s: the stream is under way at the signal.
nghttp -v -t 30 "http://127.0.0.1:$PORT/up/slow" >"$T/ng" 2>&1 &
ng=$!
wait_metric scalwsd_http2_streams_total 2 30
stop_sws
wait "$slow" || fail "slow client: $(cat "$T/slow.err")"
wait "$idle" || fail "idle client: $(cat "$T/idle.err")"
wait "$ng" || fail "nghttp through the proxy: $(cat "$T/ng")"
echo "SIGTERM: in flight $(cat "$T/slow"); idle $(cat "$T/idle")"
# nghttp's request stream (it opens idle ones for its priorities first).
sid=$(sed -n 's/.*send HEADERS frame <.*stream_id=\([0-9]*\)>.*/\1/p' "$T/ng" | head -1)
grep -q 'last_stream_id=2147483647, error_code=NO_ERROR' "$T/ng" || fail "proxied stream: no shutdown notice: $(cat "$T/ng")"
grep -q "last_stream_id=$sid, error_code=NO_ERROR" "$T/ng" || fail "proxied stream $sid: no final GOAWAY: $(cat "$T/ng")"
grep -q "recv (stream_id=$sid) :status: 200" "$T/ng" && grep -q '^slow' "$T/ng" ||
    fail "proxied stream in flight not answered: $(cat "$T/ng")"
[ "$SWS_STATUS" = 0 ] || fail "exit status $SWS_STATUS after the drain"
grep -q 'stopped after SIGTERM: .* 0 closed by the drain timeout' "$T/log" || fail "the drain forced: $(cat "$T/log")"
res=$(cat "$T/slow")
expect_json() { [ "$(jq -c "$2" <<<"$3")" = "$4" ] || fail "$1: $(jq -c "$2" <<<"$3"), want $4: $3"; }
expect_json "in flight: its answer" '[.status, .bytes, .ended, .reset, .eof]' "$res" "[200,4194304,true,null,true]"
expect_json "in flight: its bytes" .sha256 "$res" "\"$(sha256sum "$R/big.bin" | cut -d' ' -f1)\""
# The shutdown notice, then (later) the GOAWAY with the last stream id, 1.
expect_json "in flight: the GOAWAYs" '[.goaways[] | .[1:]]' "$res" "[[2147483647,0],[1,0]]"
jq -e '.goaways[1][0] > .goaways[0][0]' <<<"$res" >/dev/null || fail "both GOAWAYs at once: $res"
jq -e '.bytes_after_goaway > 0' <<<"$res" >/dev/null || fail "nothing came after the GOAWAY: $res"
res=$(cat "$T/idle")
expect_json "idle: its answer" .status "$res" 200
expect_json "idle: the GOAWAYs" '[.goaways[] | .[1:]]' "$res" "[[2147483647,0],[1,0]]"
# Closed after drain_idle_grace (1 s); 10 s is a guard against a hang only.
jq -e '.closed_after != null and .closed_after < 10' <<<"$res" >/dev/null || fail "idle: not closed: $res"
echo ok
