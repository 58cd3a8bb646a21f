#!/usr/bin/env bash
# [server] pid_file (issue 31, item 7): written once the server serves (whole:
# temp file + rename), taken over by the new process of a SIGUSR2 restart
# (the old one, leaving, does not remove it), removed at a normal exit; a
# file that names another process is left alone at exit.
. "$(dirname "$0")/lib.sh"
PIDF="$T/run/sws.pid"
mkdir -p "$T/run"
start_sws "pid_file = $PIDF"
[ "$(cat "$PIDF")" = "$SWS_PID" ] || fail "pid_file: $(cat "$PIDF" 2>&1), want $SWS_PID"
[ -z "$(find "$T/run" -name '*.tmp')" ] || fail "a temp file was left"

# SIGUSR2: the new process writes its pid once it serves; the old one drains
# and exits without removing it.
OLD=$SWS_PID
kill -USR2 "$OLD"
wait_log "SIGUSR2: started new process" || fail "SIGUSR2: no new process"
STARTED=$(sed -n 's/.*SIGUSR2: started new process \([0-9]*\) .*/\1/p' "$T/log" | head -1)
# Not our child: stopped on the way out whatever happens.
trap 'kill -KILL "$STARTED" 2>/dev/null || true; cleanup' EXIT
end=$((SECONDS + SWS_START_SECS))
until NEW=$(cat "$PIDF" 2>/dev/null) && [ -n "$NEW" ] && [ "$NEW" != "$OLD" ]; do
    [ "$SECONDS" -le "$end" ] || fail "SIGUSR2: pid_file not taken over: $(cat "$PIDF" 2>&1)"
    sleep 0.05
done
end=$((SECONDS + 30))
while kill -0 "$OLD" 2>/dev/null; do
    [ "$SECONDS" -le "$end" ] || fail "SIGUSR2: the old process did not drain"
    sleep 0.05
done
wait "$OLD" || fail "the old process exited $?"
SWS_PID=""
[ "$(cat "$PIDF" 2>&1)" = "$NEW" ] || fail "the old process touched the new one's pid_file"
[ "$NEW" = "$STARTED" ] || fail "pid_file names $NEW, the new process is $STARTED"
grep -q "new process $NEW serves on every loop" "$T/log" || fail "not the new process's pid"
curl -s -m 10 -o /dev/null "http://127.0.0.1:$PORT/" || fail "the new process does not serve"

# A normal exit removes it (the new process is not our child: wait by its pid).
kill -TERM "$NEW"
end=$((SECONDS + 30))
while kill -0 "$NEW" 2>/dev/null; do
    [ "$SECONDS" -le "$end" ] || fail "the new process did not stop"
    sleep 0.05
done
[ ! -e "$PIDF" ] || fail "pid_file left after a normal exit: $(cat "$PIDF")"

# A file that names someone else (another server took it over) is left.
start_sws "pid_file = $PIDF"
echo 1 >"$PIDF"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit status $SWS_STATUS"
[ "$(cat "$PIDF" 2>&1)" = 1 ] || fail "a pid_file naming another process was removed"

# Refused at config check: a directory that does not exist, or not writable.
printf '[server]\npid_file = %s/none/p.pid\n' "$T" >"$T/bad.ini"
! out=$("$SWS" --config "$T/bad.ini" --check-config 2>&1) || fail "accepted a pid_file in a missing directory"
grep -qF "bad.ini:2: [server] pid_file $T/none/p.pid: cannot create it" <<<"$out" || fail "message: $out"
if [ "$(id -u)" != 0 ]; then
    mkdir -p "$T/ro" && chmod 555 "$T/ro"
    printf '[server]\npid_file = %s/ro/p.pid\n' "$T" >"$T/bad.ini"
    ! out=$("$SWS" --config "$T/bad.ini" --check-config 2>&1) || fail "accepted an unwritable directory"
    grep -qF "[server] pid_file $T/ro/p.pid: cannot create it in $T/ro" <<<"$out" || fail "message: $out"
fi
echo "pid_file: ok"
