#!/usr/bin/env bash
# HTTP/3 across SIGUSR2 (issue 33, item 4): the new process inherits the
# quic listener's UDP sockets (one per loop), and the old process's
# connections finish through it (doc/http3.md, "SIGUSR2"). scalwsd with a tls
# and a quic listener on port 0, two loops:
# 1. Twelve 32 MiB answers in flight on three connections, and a connection
#    whose requests go one at a time (h3get --pause): SIGUSR2; the old
#    process exits 0 by itself, every answer arrives whole, the paused
#    connection's requests are answered (on it until the old process's
#    GOAWAY, then on a new connection, as RFC 9114 5.2 lets a client), the
#    new process relayed the old connections' datagrams to it
#    (scalwsd_quic_relayed_total) and serves new connections on the same
#    UDP port.
# 2. Three SIGUSR2 in a row, each as soon as the last new process serves
#    (old processes still draining: a chain), under downloads, paused
#    connections and a stream of new connections: no request fails; a TLS
#    session of the first process resumes on the last (the ticket key passes).
# 3. A restart that fails (the new process refuses the configuration): the
#    process that serves keeps serving QUIC, a connection opened before it
#    goes on without a GOAWAY.
# e2e_http3_restart_unsteered runs it without the kernel's steering program
# (the loops forward, and relay, what the kernel's hash misplaces).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_h3.sh"
mkdir -p "$T/www"
head -c 8388608 /dev/urandom >"$T/www/huge.bin"
head -c 33554432 /dev/urandom >"$T/www/giant.bin"
# Sanitizer builds: a block of 112-128 bytes that Debian's ngtcp2 0.12.1
# allocates inside ngtcp2_conn_read_pkt is sometimes left at an old
# process's exit, after the retransmissions a hand-over causes (its stream
# frames' pool, likely ngtcp2's issue 1244, fixed upstream in 1.6); every
# ngtcp2 connection is deleted (a connection of ours left would be reported
# with our own frames). Only leaks inside libngtcp2 are suppressed.
echo "leak:libngtcp2.so" >"$T/lsan.supp"
export LSAN_OPTIONS="suppressions=$T/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

# new_process: restart_new, on the same quic port too.
new_process() {
    restart_new
    [ "$(ready_listen_port "$T/ready" h3)" = "$QP" ] || fail "the new quic port: $(cat "$T/ready")"
}
gone() { wait_exit "$1" "$2" "process $1"; } # gone PID SECS: exited by itself
# answers FILE N BYTES: FILE has N answers "200 BYTES" of one body (hash).
answers() {
    [ "$(count " 200 $3 " <"$1")" = "$2" ] || fail "$1: $(count " 200 $3 " <"$1") of $2 answers whole: $(tail -5 "$1")"
    [ "$(awk -v b="$3" '$2 == 200 && $3 == b {print $4}' "$1" | sort -u | wc -l)" = 1 ] ||
        fail "$1: the answers differ: $(awk -v b="$3" '$2 == 200 && $3 == b {print $4}' "$1" | sort | uniq -c)"
}
h3() { timeout 120 "$H3GET" -k -t 100 "$@"; }

start_h3 "$(h3_ini "drain_timeout = 120s")"
FIRST=$SWS_PID

# ---------------------------------------------------------------------------
# 1. Answers in flight and a paused connection across one SIGUSR2.
base=$(metric_sum scalwsd_http3_streams_total)
for c in 1 2 3; do
    h3 -n 4 -P 4 "127.0.0.1:$QP" /files/giant.bin >"$T/dl$c.out" 2>&1 &
    eval "DL$c=\$!"
done
h3 --pause 300 --reconnect -n 30 "127.0.0.1:$QP" / >"$T/paused.out" 2>&1 &
PAUSED=$!
# Every download's stream is under way, and the paused connection's first.
wait_metric scalwsd_http3_streams_total $((base + 12)) 60
paused_before=$(count ' 200 19 ' <"$T/paused.out")
new_process
# The old process hands the sockets over about when the new one is ready:
# downloads still running then have their datagrams relayed.
inflight=0
for c in 1 2 3; do
    eval "pid=\$DL$c"
    ! kill -0 "$pid" 2>/dev/null || inflight=$((inflight + 1))
done
# The first process is our child: it drains by itself and exits 0.
gone "$FIRST" 120
st=0
wait "$FIRST" || st=$?
[ "$st" = 0 ] || fail "SIGUSR2: the old process exited $st"
grep -q "new process $SWS_PID serves on every loop" "$T/log" || fail "the old process was not told"
for c in 1 2 3; do
    eval "pid=\$DL$c"
    rc=0
    wait "$pid" || rc=$?
    [ $rc = 0 ] || fail "download $c across SIGUSR2 (h3get $rc): $(tail -5 "$T/dl$c.out")"
    answers "$T/dl$c.out" 4 33554432
done
rc=0
wait $PAUSED || rc=$?
[ $rc = 0 ] || fail "the paused connection (h3get $rc): $(tail -5 "$T/paused.out")"
answers "$T/paused.out" 30 19
grep -q '^goaway' "$T/paused.out" || fail "the paused connection saw no GOAWAY: $(cat "$T/paused.out")"
grep -q '^reconnect' "$T/paused.out" || fail "the paused connection did not go on a new one"
on_old=$(sed '/^goaway/q' "$T/paused.out" | count ' 200 19 ')
[ "$on_old" -ge "$paused_before" ] || fail "the paused connection: $on_old answers before its GOAWAY"
echo "the paused connection: $paused_before answers before SIGUSR2, $((on_old - paused_before)) after it on the same connection, $((30 - on_old)) on a new one"
# The new process relayed the old connections' datagrams to the old one.
if [ "$inflight" -gt 0 ]; then
    wait_metric scalwsd_quic_relayed_total 0 10
else
    echo "note: every download ended before the hand-over (a fast machine): none relayed"
fi
# New connections: the new process, on the same port.
before=$(metric_sum scalwsd_http3_requests_total)
out=$(h3 -n 5 "127.0.0.1:$QP" /) || fail "a new connection after SIGUSR2: $out"
[ "$(count ' 200 19 ' <<<"$out")" = 5 ] || fail "a new connection after SIGUSR2 answered '$out'"
wait_metric scalwsd_http3_requests_total $((before + 4)) 10
echo "1: 12 x 32 MiB ($inflight clients of 3 in flight at the hand-over) and a paused connection across SIGUSR2; relayed $(metric_sum scalwsd_quic_relayed_total)"

# ---------------------------------------------------------------------------
# 2. Three SIGUSR2 in a row under load.
pids=()
for c in 1 2; do
    h3 -n 3 -P 3 "127.0.0.1:$QP" /files/huge.bin >"$T/load-dl$c.out" 2>&1 &
    pids+=($!)
    h3 --pause 40 --reconnect -n 150 "127.0.0.1:$QP" / >"$T/load-paused$c.out" 2>&1 &
    pids+=($!)
done
# A TLS session from before the restarts resumes on the process after them:
# the ticket key passed on with the sockets.
h3 --pause 100 --reconnect -n 60 --resume "127.0.0.1:$QP" "127.0.0.1:$QP" / >"$T/resume.out" 2>&1 &
RESUME=$!
# New connections all along: one after the other until the restarts are over
# (a connection made just before its process hands over gets a GOAWAY before
# its request arrives: it sends it again on a new one, RFC 9114 5.2).
(
    n=0 bad=0
    while [ ! -e "$T/stop" ] && [ $n -lt 2000 ]; do
        timeout 60 "$H3GET" -k -t 50 -q --reconnect "127.0.0.1:$QP" / 2>>"$T/fresh.err" || bad=$((bad + 1))
        n=$((n + 1))
    done
    echo "$n $bad" >"$T/fresh.out"
) &
FRESH=$!
base=$(metric_sum scalwsd_http3_streams_total)
wait_metric scalwsd_http3_streams_total $((base + 6)) 60
olds=()
for r in 1 2 3; do
    new_process
    olds+=("$OLD")
done
touch "$T/stop"
for p in "${olds[@]}"; do gone "$p" 150; done
for p in "${pids[@]}" $FRESH; do
    rc=0
    wait "$p" || rc=$?
    [ $rc = 0 ] || fail "a client under three restarts failed ($rc): $(tail -3 "$T"/load-*.out)"
done
for c in 1 2; do
    answers "$T/load-dl$c.out" 3 8388608
    answers "$T/load-paused$c.out" 150 19
done
rc=0
wait $RESUME || rc=$?
[ $rc = 0 ] || fail "the resuming client (h3get $rc): $(tail -3 "$T/resume.out")"
grep -qx 'resumed 1' "$T/resume.out" || fail "no session resumed across the restarts: $(grep resumed "$T/resume.out")"
read -r n bad <"$T/fresh.out"
[ "$bad" = 0 ] || fail "$bad of $n new connections failed under the restarts: $(tail -3 "$T/fresh.err")"
[ "$n" -gt 0 ] || fail "no new connection made during the restarts"
echo "2: three restarts in a row: 6 x 8 MiB, 300 paused requests, $n new connections, none failed"

# ---------------------------------------------------------------------------
# 3. A restart that fails leaves the serving process serving QUIC.
h3 --pause 200 -n 15 "127.0.0.1:$QP" / >"$T/kept.out" 2>&1 &
KEPT=$!
base=$(metric_sum scalwsd_http3_streams_total)
wait_metric scalwsd_http3_streams_total "$base" 30
cp "$T/sws.ini" "$T/good.ini"
echo "no_such_key = 1" >>"$T/sws.ini"
kill -USR2 "$SWS_PID"
wait_log "ended before it served" 60 || fail "the failed restart was not noticed"
cp "$T/good.ini" "$T/sws.ini"
[ "$(ready_pid "$T/ready")" = "$SWS_PID" ] || fail "the ready file changed after a failed restart"
out=$(h3 -n 3 "127.0.0.1:$QP" /) || fail "quic after a failed restart: $out"
[ "$(count ' 200 19 ' <<<"$out")" = 3 ] || fail "quic after a failed restart answered '$out'"
rc=0
wait $KEPT || rc=$?
[ $rc = 0 ] || fail "a connection across a failed restart (h3get $rc): $(tail -5 "$T/kept.out")"
answers "$T/kept.out" 15 19
! grep -q '^goaway' "$T/kept.out" || fail "a failed restart sent a GOAWAY"
echo "3: a failed restart: QUIC served on"

# Without the kernel's steering (e2e_http3_restart_unsteered) every process
# says so at start: the first one's refusal passes on with its sockets.
if [[ ${TURNLOOP_UDP_DISABLE:-} == *cid_steer* ]]; then
    [ "$(count 'refused the connection-ID steering program' <"$T/log")" = 5 ] ||
        fail "not every process said the kernel does not steer"
fi

kill -TERM "$SWS_PID"
gone "$SWS_PID" 60
SWS_PID=""
grep -q 'stopped after SIGTERM' "$T/log" || fail "the last process's drain"
! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$T/log" || fail "a sanitizer report"
echo "PASS http3_restart (quic port $QP)"
