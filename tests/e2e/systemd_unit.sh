#!/usr/bin/env bash
# contrib/systemd/scalwsd.service run the way systemd runs it, without systemd:
# ExecStartPre and ExecStart as written in the unit (binary and config path
# swapped for the build's), the socket of scalwsd.socket bound by a launcher
# and passed in as fd 3 (LISTEN_FDS=1, LISTEN_PID = scalwsd's pid), and
# NOTIFY_SOCKET pointing at a datagram socket that must receive READY=1 once
# scalwsd serves (Type=notify). ExecReload (SIGHUP) with a changed body: RELOADING=1,
# READY=1 again, the new body on the same activated socket. Then SIGTERM (KillSignal) drains it, exit 0.
# Skipped (77) when scalwsd was built without libsystemd.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
UNIT=$ROOT/contrib/systemd/scalwsd.service
SOCKET_UNIT=$ROOT/contrib/systemd/scalwsd.socket
NOTIFY_PID=""
cleanup_unit() {
    if [ -n "$NOTIFY_PID" ]; then
        kill "$NOTIFY_PID" 2>/dev/null || true
    fi
    cleanup
}
trap cleanup_unit EXIT

key() { sed -n "s/^$1=//p" "$2"; }
[ "$(key Type "$UNIT")" = notify ] || fail "Type is not notify"
[ "$(key KillSignal "$UNIT")" = SIGTERM ] || fail "KillSignal is not SIGTERM"
[ "$(key ExecReload "$UNIT")" = '/bin/kill -HUP $MAINPID' ] || fail "ExecReload is not kill -HUP"
listen=$(key ListenStream "$SOCKET_UNIT")
[ "${listen%:*}" = 127.0.0.1 ] || fail "scalwsd.socket ListenStream '$listen' (want loopback)"

# scalwsd@.service (one instance per config) is scalwsd.service with the
# config named by the instance: the same lines otherwise, so they cannot drift.
TEMPLATE=$ROOT/contrib/systemd/scalwsd@.service
unit_lines() { grep -v -e '^#' -e '^$' -e '^Description=' -e '^After=' "$1"; }
diff <(unit_lines "$UNIT") \
     <(unit_lines "$TEMPLATE" | sed 's#/etc/scalwsd/%i\.ini#/etc/scalwsd/scalwsd.ini#; s#^LogsDirectory=scalwsd/%i$#LogsDirectory=scalwsd#') \
     >"$T/template.diff" || fail "scalwsd@.service differs from scalwsd.service: $(cat "$T/template.diff")"
grep -q '^ExecStart=/usr/sbin/scalwsd --config /etc/scalwsd/%i.ini$' "$TEMPLATE" || fail "template ExecStart"

# The unit's command lines with the build's binary and a config of the test's.
cp "$ROOT/contrib/scalwsd.ini" "$T/scalwsd.ini"
unitcmd() {
    local line
    line=$(key "$1" "$UNIT")
    [ -n "$line" ] || fail "no $1 in the unit"
    line=${line//\/usr\/sbin\/scalwsd/$SWS}
    line=${line//\/etc\/scalwsd\/scalwsd.ini/$T\/scalwsd.ini}
    echo "$line"
}
read -r -a pre <<<"$(unitcmd ExecStartPre)"
read -r -a start <<<"$(unitcmd ExecStart)"
[ "${start[0]}" = "$SWS" ] || fail "ExecStart does not run /usr/sbin/scalwsd: ${start[*]}"
"${pre[@]}" >"$T/pre" 2>&1 || fail "ExecStartPre: $(cat "$T/pre")"
# The template's check as systemd runs it for scalwsd@a: a good a.ini passes, a broken one fails.
tpre=$(key ExecStartPre "$TEMPLATE")
tpre=${tpre//\/usr\/sbin\/scalwsd/$SWS}
tpre=${tpre//\/etc\/scalwsd\/%i.ini/$T\/a.ini}
read -r -a tpre <<<"$tpre"
printf '[server]\nlisten = 127.0.0.1:8081\n[admin]\nlisten = 127.0.0.1:9091\n' >"$T/a.ini"
"${tpre[@]}" >"$T/tpre" 2>&1 || fail "template ExecStartPre for a: $(cat "$T/tpre")"
printf '[server]\nlisten = nowhere\n' >"$T/a.ini"
if "${tpre[@]}" >"$T/tpre" 2>&1; then fail "template ExecStartPre accepted a broken a.ini"; fi

# The notify socket: one datagram per line in $T/notify, for at most 30 s.
python3 - "$T/notify.sock" "$T/notify" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(0.2)
end = time.monotonic() + 30
with open(sys.argv[2], "a", buffering=1) as out:
    while time.monotonic() < end:
        try:
            out.write(s.recv(4096).decode(errors="replace").replace("\n", " ") + "\n")
        except socket.timeout:
            pass
PY
NOTIFY_PID=$!
for _ in $(seq 1 50); do
    [ -S "$T/notify.sock" ] && break
    sleep 0.1
done
[ -S "$T/notify.sock" ] || fail "notify socket not created"

# The launcher binds the socket unit's address (on a free port), moves it to
# fd 3 and execs the unit's command, so LISTEN_PID is scalwsd's own pid.
launch() {
    NOTIFY_SOCKET=$T/notify.sock python3 -c '
import os, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(98)
s.listen(4096)
os.dup2(s.fileno(), 3)
os.set_inheritable(3, True)
os.environ.update(LISTEN_FDS="1", LISTEN_PID=str(os.getpid()), LISTEN_FDNAMES="scalwsd.socket")
os.execv(sys.argv[2], sys.argv[2:])
' "$PORT" "${start[@]}" 2>"$T/log" &
    SWS_PID=$!
}
# Each try waits (bounded) for READY=1 or the launcher's exit; 98 is a taken port.
for _ in 1 2 3 4 5; do
    PORT=$(rand_port)
    launch
    for _ in $(seq 1 100); do
        grep -q "READY=1" "$T/notify" 2>/dev/null && break
        kill -0 "$SWS_PID" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "$SWS_PID" 2>/dev/null && break
    rc=0
    wait "$SWS_PID" || rc=$?
    SWS_PID=""
    [ "$rc" = 98 ] || fail "scalwsd exited ($rc) before READY=1: $(cat "$T/log")"
done
[ -n "$SWS_PID" ] || fail "no free port"
if ! grep -q "READY=1" "$T/notify" 2>/dev/null; then
    grep -q "built without sd_notify\|Execing" "$T/log" && { echo "SKIP: no libsystemd"; exit 77; }
    fail "no READY=1 on NOTIFY_SOCKET (got: $(cat "$T/notify" 2>/dev/null))"
fi
grep -q "activated socket" "$T/log" || fail "scalwsd did not serve the passed socket"
# Ready means serving: the passed socket answers at once.
for i in $(seq 1 20); do
    [ "$(curl -s -m 2 "http://127.0.0.1:$PORT/")" = "Hello from scalwsd" ] || fail "request $i"
done
# ExecReload as written, $MAINPID being scalwsd's pid.
sed -i 's/^body = .*/body = reloaded\\n/' "$T/scalwsd.ini"
reload=$(key ExecReload "$UNIT")
read -r -a rl <<<"${reload//\$MAINPID/$SWS_PID}"
"${rl[@]}" || fail "ExecReload: ${rl[*]}"
for _ in $(seq 1 100); do
    [ "$(grep -c "READY=1" "$T/notify")" -ge 2 ] && break
    sleep 0.1
done
grep -q "RELOADING=1 MONOTONIC_USEC=[0-9]" "$T/notify" || fail "no RELOADING=1: $(cat "$T/notify")"
[ "$(grep -c "READY=1" "$T/notify")" -ge 2 ] || fail "no READY=1 after the reload: $(cat "$T/notify")"
for i in $(seq 1 10); do
    b=$(curl -s -m 5 "http://127.0.0.1:$PORT/" || true)
    [ "$b" = "reloaded" ] || fail "reloaded body, request $i: '$b'"
done
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit $SWS_STATUS after SIGTERM"
grep -q "stopped after SIGTERM" "$T/log" || fail "drain: $(cat "$T/log")"
echo "ok: $(tr '\n' ' ' <"$T/notify")"
