#!/usr/bin/env bash
# Scale-out: two scalwsd instances behind HAProxy (contrib/haproxy/haproxy.cfg
# as shipped, addresses from the environment), all on 127.0.0.1. A bounded
# load (2000 requests or 20 s, 4 keep-alive clients) runs through HAProxy;
# after 500 requests instance A gets SIGTERM. Every request must succeed, A
# must drain and exit 0, and B must have answered every request after that.
# Skipped (77) without haproxy (scripts/bootstrap --test installs it).
. "$(dirname "$0")/lib.sh"
command -v haproxy >/dev/null || { echo "SKIP: no haproxy"; exit 77; }
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CFG=$ROOT/contrib/haproxy/haproxy.cfg
A_PID="" B_PID="" HA_PID=""
cleanup_all() {
    local p
    for p in "$A_PID" "$B_PID"; do
        if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then
            kill -KILL "$p" 2>/dev/null || true
        fi
    done
    if [ -n "$HA_PID" ] && kill -0 "$HA_PID" 2>/dev/null; then
        kill -TERM "$HA_PID" 2>/dev/null || true
    fi
    cleanup
}
trap cleanup_all EXIT
show_logs() {
    local f
    for f in a.log b.log haproxy.log load.out; do
        [ -f "$T/$f" ] && { echo "--- $f:" >&2; tail -n 30 "$T/$f" >&2; }
    done
    return 0
}
die() {
    show_logs
    fail "$@"
}

# Two instances, each with its own log, ini and admin port (lib.sh's
# start_sws writes $T/log and $T/sws.ini; the open files follow the rename).
start_instance() {
    start_sws "[server]\nevent_loops = 2\ndrain_timeout = 5s"
    mv "$T/log" "$T/$1.log"
    mv "$T/sws.ini" "$T/$1.ini"
}
start_instance a
A_PID=$SWS_PID A_PORT=$PORT
start_instance b
B_PID=$SWS_PID B_PORT=$PORT B_ADMIN=$ADMIN_PORT
SWS_PID=""

# HAProxy in the foreground (-db) on a third port; retried when it is taken.
for _ in 1 2 3 4 5; do
    FRONT=$(rand_port)
    SCALWSD_FRONTEND=127.0.0.1:$FRONT SCALWSD_A=127.0.0.1:$A_PORT SCALWSD_B=127.0.0.1:$B_PORT \
        haproxy -db -f "$CFG" >"$T/haproxy.log" 2>&1 &
    HA_PID=$!
    up=""
    for _ in $(seq 1 50); do
        kill -0 "$HA_PID" 2>/dev/null || break
        if [ "$(curl -s -m 1 "http://127.0.0.1:$FRONT/")" = "Hello from scalwsd" ]; then
            up=1
            break
        fi
        sleep 0.1
    done
    [ -n "$up" ] && break
    kill -KILL "$HA_PID" 2>/dev/null || true
    wait "$HA_PID" 2>/dev/null || true
    HA_PID=""
done
[ -n "$HA_PID" ] || die "haproxy did not start"
# Both servers up (rise 2 at 100 ms) before the load starts.
sleep 0.5

metric_b() {
    curl -s -m 2 "http://127.0.0.1:$B_ADMIN/metrics" |
        awk '/^scalwsd_requests_total/ { n += $2 } END { print n + 0 }'
}

python3 - "$FRONT" "$A_PID" "$B_ADMIN" >"$T/load.out" 2>&1 <<'PY' || die "load generator failed"
import http.client, json, os, signal, sys, threading, time, urllib.request
front, a_pid, b_admin = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
TOTAL, SECONDS, CLIENTS, KILL_AT = 2000, 20.0, 4, 500
lock = threading.Lock()
state = {"sent": 0, "ok": 0, "failed": 0, "after_kill": 0, "killed": False, "errors": []}
b_at_kill = [None]
end = time.monotonic() + SECONDS

def b_requests():
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % b_admin, timeout=2) as r:
        return sum(int(float(l.split()[1])) for l in r.read().decode().splitlines()
                   if l.startswith("scalwsd_requests_total"))

def client():
    conn = None
    while time.monotonic() < end:
        with lock:
            if state["sent"] >= TOTAL:
                return
            state["sent"] += 1
            n = state["sent"]
            if n == KILL_AT + 1 and not state["killed"]:
                b_at_kill[0] = b_requests()
                os.kill(a_pid, signal.SIGTERM)
                state["killed"] = True
            after = state["killed"]
        try:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", front, timeout=5)
            conn.request("GET", "/")
            r = conn.getresponse()
            body = r.read()
            good = r.status == 200 and body == b"Hello from scalwsd\n"
            why = "status %d body %r" % (r.status, body[:60])
            if r.getheader("Connection", "").lower() == "close":
                conn.close()
                conn = None
        except Exception as e:  # a failed request, whatever the cause
            good, why = False, repr(e)
            if conn is not None:
                conn.close()
            conn = None
        with lock:
            if good:
                state["ok"] += 1
                if after:
                    state["after_kill"] += 1
            else:
                state["failed"] += 1
                if len(state["errors"]) < 10:
                    state["errors"].append("request %d: %s" % (n, why))

threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
for t in threads:
    t.start()
for t in threads:
    t.join(SECONDS + 10)
state["b_at_kill"] = b_at_kill[0]
print(json.dumps(state))
PY
res=$(tail -n 1 "$T/load.out")
ok=$(jq -r .ok <<<"$res")
failed=$(jq -r .failed <<<"$res")
after=$(jq -r .after_kill <<<"$res")
killed=$(jq -r .killed <<<"$res")
b_at_kill=$(jq -r .b_at_kill <<<"$res")
[ "$killed" = true ] || die "the load ended before instance A was signalled: $res"
[ "$failed" = 0 ] || die "$failed failed requests: $(jq -c .errors <<<"$res")"
[ "$ok" -ge 1000 ] || die "only $ok requests in 20 s: $res"
[ "$after" -ge 100 ] || die "only $after requests after the SIGTERM: $res"

# A drained and exited cleanly.
for _ in $(seq 1 100); do
    kill -0 "$A_PID" 2>/dev/null || break
    sleep 0.1
done
a_status=0
wait "$A_PID" || a_status=$?
A_PID=""
[ "$a_status" = 0 ] || die "instance A exited $a_status"
grep -q "stopped after SIGTERM" "$T/a.log" || die "instance A did not drain"
a_served=$(sed -n 's/.*drained in [0-9]* ms; \([0-9]*\) requests.*/\1/p' "$T/a.log")
[ "${a_served:-0}" -gt 0 ] || die "instance A served nothing before the drain"

# B answered at least every request after the SIGTERM (health checks add more).
b_now=$(metric_b)
[ $((b_now - b_at_kill)) -ge "$after" ] ||
    die "B answered $((b_now - b_at_kill)) requests after the SIGTERM, clients got $after"
kill -0 "$B_PID" 2>/dev/null || die "instance B died"
echo "ok: $ok requests, 0 failed; A served $a_served then drained; B took the $after after SIGTERM"
