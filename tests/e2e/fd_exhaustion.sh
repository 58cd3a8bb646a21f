#!/usr/bin/env bash
# Out of descriptors (EMFILE, from RLIMIT_NOFILE, below max_connections so the
# process and not turnloop's handle ceiling is the limit): the accept path
# backs off instead of spinning, a connection already open is still served,
# and the connections waiting in the kernel's queue are accepted and answered
# once descriptors are freed. Every route that owns a listener, on epoll and
# io_uring (skipped when the kernel refuses io_uring).
. "$(dirname "$0")/lib.sh"
NOFILE=48

# probe LABEL: run by python against $PORT and $SWS_PID; fails the test on error.
probe() {
    NOFILE=$NOFILE python3 - "$PORT" "$SWS_PID" "$1" <<'PY'
import os, socket, sys, time
port, pid, label = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
tck = os.sysconf("SC_CLK_TCK")
def fail(msg):
    print("FAIL: %s: %s" % (label, msg), file=sys.stderr); sys.exit(1)
def cpu():
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / tck  # utime + stime, every thread
def ka(close=False):
    return ("GET / HTTP/1.1\r\nHost: t\r\n%s\r\n" % ("Connection: close\r\n" if close else "")).encode()
def answered(s, t):
    """True when a whole answer arrived within t seconds."""
    s.settimeout(t)
    try:
        data = b""
        while b"Hello from scalwsd" not in data:
            b = s.recv(4096)
            if not b:
                return False
            data += b
        return data.startswith(b"HTTP/1.1 200")
    except socket.timeout:
        return False
def connect():
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    return s
NOFILE = int(os.environ["NOFILE"])
def out_of_fds():
    return len(os.listdir("/proc/%d/fd" % pid)) >= NOFILE
def queued():
    """Connections in the accept queues of our port (rx_queue of a LISTEN line)."""
    n = 0
    for f in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(f).read().splitlines()[1:]
        except OSError:
            continue
        for l in lines:
            x = l.split()
            if x[3] == "0A" and int(x[1].rsplit(":", 1)[1], 16) == port:
                n += int(x[4].split(":")[1], 16)
    return n
def answered_or_refused(s, t):
    """True when answered; False once the process is out of fds and s waits in
    the accept queue; None when neither happened within t seconds. (Was: not
    answered within 0.3 s, which a loaded machine took for exhaustion.)"""
    end = time.monotonic() + t
    while time.monotonic() < end:
        if answered(s, 0.05):
            return True
        if out_of_fds() and queued() > 0:
            return False
    return None
# Guards, not latency bounds: a loaded machine took over 2 s for the first.
a = connect(); a.sendall(ka())
if not answered(a, 10): fail("first request")
held, pending = [], []
# Keep-alive connections until one is not answered: the process is out of fds.
for i in range(200):
    s = connect(); s.sendall(ka())
    r = answered_or_refused(s, 20)
    if r is None: fail("connection %d neither answered nor queued at exhaustion in 20 s" % i)
    if r:
        held.append(s)
    else:
        pending.append(s); break
if not pending: fail("200 connections accepted under RLIMIT_NOFILE: the limit was not hit")
# A few more, with Connection: close, so that each one accepted later frees its fd.
for i in range(10):
    s = connect(); s.sendall(ka(close=True)); pending.append(s)
time.sleep(0.3)
c0 = cpu(); time.sleep(2.0); used = cpu() - c0
print("%s: %d held, %d pending, %.2f s CPU in 2 s at exhaustion" % (label, len(held), len(pending), used), file=sys.stderr)
if used > 0.2: fail("%.2f s of CPU in 2 s at exhaustion: the accept path spins" % used)
a.sendall(ka())
if not answered(a, 10): fail("a held keep-alive connection is not served at exhaustion")
for s in pending:
    s.settimeout(0.05)
    try:
        if s.recv(1): fail("a pending connection was answered while out of fds")
    except socket.timeout:
        pass
# Free some descriptors: every pending connection must now be answered.
for s in held[:5]:
    s.close()
t0 = time.monotonic()
for n, s in enumerate(pending):
    if not answered(s, 10): fail("pending connection %d of %d not answered after fds were freed" % (n, len(pending)))
    s.close()
b = connect(); b.sendall(ka(close=True))
if not answered(b, 10): fail("a new connection after recovery")
print("%s: recovered in %.2f s" % (label, time.monotonic() - t0), file=sys.stderr)
PY
}

run() {
    local label=$1 ini=$2
    SWS_WRAP=(prlimit --nofile=$NOFILE:$NOFILE --)
    if ! start_sws_try "$ini\n[limits]\nmax_connections = 1000"; then
        grep -q "cannot create loop" "$T/log" && { echo "$label: skipped: $(cat "$T/log")"; return 0; }
        fail "$label: did not start"
    fi
    [ "$(awk '/Max open files/ {print $4}' "/proc/$SWS_PID/limits")" = $NOFILE ] || fail "$label: limit"
    probe "$label" || fail "$label: see above"
    stop_sws
    [ "$SWS_STATUS" = 0 ] || fail "$label: exit $SWS_STATUS"
}

command -v prlimit >/dev/null || { echo "SKIP: no prlimit"; exit 77; }
run "epoll reuse-port" "event_loops = 2\nbackend = epoll\naccept = reuse-port"
run "epoll exclusive" "event_loops = 2\nbackend = epoll\naccept = exclusive"
run "epoll acceptor" "event_loops = 2\nbackend = epoll\naccept = acceptor"
run "uring reuse-port" "event_loops = 2\nbackend = uring\naccept = reuse-port"
run "uring herd" "event_loops = 2\nbackend = uring\naccept = herd"
echo ok
