#!/usr/bin/env bash
# Upstream health with one of three upstreams dead: under a steady keep-alive
# load no request is answered 502 (a refused connect goes to another upstream
# at once, and health then skips the dead one: active checks, or max_fails
# alone), /metrics and /status show it down, and once it listens again it is
# checked back up and serves its share. Then the same with passive health only.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "SKIP: python3"; exit 77; }
PY=$(dirname "$0")/proxy_upstream.py
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done; cleanup' EXIT

# upstream NAME [PORT]: one that answers NAME on every path; sets UPORT.
upstream() {
    rm -f "$T/$1.port"
    python3 "$PY" "$T/$1.port" 90 "" "$1" ${2:+"$2"} &
    PIDS+=($!)
    LAST_PID=$!
    wait_ready "$T/$1.port" "$SWS_START_SECS" "$LAST_PID" || fail "upstream $1 did not start"
    UPORT=$(cat "$T/$1.port")
}
upstream up1
P1=$UPORT
upstream up2
P2=$UPORT
# up3 starts dead: its port is held by a socket that never listens, so no
# other test's server can be handed it while it is down (a 404 from a stranger
# there once failed this test); up3 binds it again later (SO_REUSEADDR).
hold_port "$T/up3.held" 120
PIDS+=("$HOLD_PID")
wait_ready "$T/up3.held" "$SWS_START_SECS" "$HOLD_PID" || fail "no port held for up3"
P3=$(cat "$T/up3.held")

UP3_UP="scalwsd_upstream_up{route=\"default\",upstream=\"127.0.0.1:$P3\",address=\"127.0.0.1:$P3\"}"
# load N: N requests in batches of 25 on keep-alive connections; bodies in
# $T/bodies, status codes in $T/codes.
load() {
    : >"$T/bodies"
    : >"$T/codes"
    local urls=() i
    for i in $(seq 1 25); do urls+=("http://127.0.0.1:$PORT/r$i"); done
    for _ in $(seq 1 $(($1 / 25))); do
        curl -s -m 20 -w '\n%{http_code}\n' "${urls[@]}" >>"$T/out" || true
    done
    # Each answer is "NAME\n" then the "\n%{http_code}\n" of -w.
    awk 'NR % 3 == 1' "$T/out" >"$T/bodies"
    awk 'NR % 3 == 0' "$T/out" >"$T/codes"
    rm -f "$T/out"
}
count() { grep -c "^$1\$" "$2" || true; }
wait_metric() { # NAME VALUE: bounded wait (10 s)
    for _ in $(seq 1 100); do
        [ "$(metric "$1")" = "$2" ] && return 0
        sleep 0.1
    done
    fail "$1 stayed $(metric "$1"), want $2: $(curl -s "http://127.0.0.1:$ADMIN_PORT/metrics" | grep upstream_up)"
}

start_sws "scenario = proxy\nevent_loops = 2\n[proxy]\nupstream = 127.0.0.1:$P1, 127.0.0.1:$P2, 127.0.0.1:$P3\nhealth_check = /health\nhealth_interval = 500ms\nhealth_rise = 2\nhealth_fall = 2\nmax_fails = 1\nfail_timeout = 2s"
load 200
[ "$(wc -l <"$T/codes")" = 200 ] || fail "$(wc -l <"$T/codes") answers of 200"
[ "$(count 200 "$T/codes")" = 200 ] || fail "with one upstream dead: $(sort "$T/codes" | uniq -c)"
[ "$(count up3 "$T/bodies")" = 0 ] || fail "a dead upstream answered"
[ "$(count up1 "$T/bodies")" -gt 0 ] && [ "$(count up2 "$T/bodies")" -gt 0 ] ||
    fail "not spread over the live two: $(sort "$T/bodies" | uniq -c)"
wait_metric "$UP3_UP" 0
# Down by the checks too (max_fails may have taken it out first): health_fall
# failed checks, within a bounded wait.
CHK3="scalwsd_upstream_checks_total{route=\"default\",upstream=\"127.0.0.1:$P3\",address=\"127.0.0.1:$P3\",result=\"failed\"}"
for _ in $(seq 1 100); do
    [ "$(metric "$CHK3")" -ge 2 ] && break
    sleep 0.1
done
[ "$(metric "$CHK3")" -ge 2 ] || fail "no failed checks counted: $(metric "$CHK3")"
st=$(curl -s -m 5 "http://127.0.0.1:$ADMIN_PORT/status")
echo "$st" | jq -e --arg a "127.0.0.1:$P3" '.upstreams[] | select(.address == $a) | .up == false' >/dev/null ||
    fail "/status: $(echo "$st" | jq -c .upstreams)"
# Down by the checks: no connect is tried any more (no new failures).
fails=$(metric "scalwsd_upstream_fails_total{route=\"default\",upstream=\"127.0.0.1:$P3\",address=\"127.0.0.1:$P3\"}")
load 100
[ "$(count 200 "$T/codes")" = 100 ] || fail "second load: $(sort "$T/codes" | uniq -c)"
[ "$(metric "scalwsd_upstream_fails_total{route=\"default\",upstream=\"127.0.0.1:$P3\",address=\"127.0.0.1:$P3\"}")" = "$fails" ] ||
    fail "a checked-down upstream was still tried"

# It comes back: checked up (rise 2), then it serves its share again.
upstream up3 "$P3"
wait_metric "$UP3_UP" 1
load 150
[ "$(count 200 "$T/codes")" = 150 ] || fail "after the return: $(sort "$T/codes" | uniq -c)"
# (A third would be 50; a check of a live upstream that times out on a loaded
# machine may take it out for a while, so only "a share" is asserted.)
[ "$(count up3 "$T/bodies")" -ge 10 ] || fail "up3 back but serves $(count up3 "$T/bodies") of 150"
grep -q "upstream 127.0.0.1:$P3 (127.0.0.1:$P3) is down" "$T/log" || fail "no 'down' line in the log"
grep -q "upstream 127.0.0.1:$P3 (127.0.0.1:$P3) is up" "$T/log" || fail "no 'up' line in the log"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit $SWS_STATUS"

# Passive only (no health_check): the first failures go elsewhere, max_fails
# then skips it; after fail_timeout it is tried again and, alive, serves.
kill -KILL "$LAST_PID"
wait "$LAST_PID" 2>/dev/null || true
start_sws "scenario = proxy\nevent_loops = 2\n[proxy]\nupstream = 127.0.0.1:$P1, 127.0.0.1:$P2, 127.0.0.1:$P3\nbalance = least_conn\nmax_fails = 1\nfail_timeout = 5s"
load 200
[ "$(count 200 "$T/codes")" = 200 ] || fail "passive: $(sort "$T/codes" | uniq -c)"
[ "$(count up3 "$T/bodies")" = 0 ] || fail "passive: a dead upstream answered"
f=$(metric "scalwsd_upstream_fails_total{route=\"default\",upstream=\"127.0.0.1:$P3\",address=\"127.0.0.1:$P3\"}")
# Without skips it would be a third of 200; with them one trial per loop
# every fail_timeout (5 s).
[ "$f" -ge 1 ] && [ "$f" -le 20 ] || fail "passive: $f failures for 200 requests (want skips)"
upstream up3 "$P3"
sleep 5.2
load 150
[ "$(count 200 "$T/codes")" = 150 ] || fail "passive, after the return: $(sort "$T/codes" | uniq -c)"
[ "$(count up3 "$T/bodies")" -ge 10 ] || fail "passive: up3 serves $(count up3 "$T/bodies") of 150"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit $SWS_STATUS"
echo ok
