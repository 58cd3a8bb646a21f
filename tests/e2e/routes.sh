#!/usr/bin/env bash
# Every accept route serves, and serves every connection: 30 short connections
# per route, all answered; reuse-port and handoff spread them over both loops.
# event_loops = 0 (the shared baseline) serves too.
. "$(dirname "$0")/lib.sh"
check_route() {
    local route=$1 ini=$2 n=30
    start_sws "$ini"
    local ok=0
    for i in $(seq 1 $n); do
        [ "$(curl -s -m 10 "http://127.0.0.1:$PORT/")" = "Hello from scalwsd" ] && ok=$((ok + 1))
    done
    [ "$ok" = "$n" ] || fail "$route: $ok of $n answered"
    s=$(curl -s "http://127.0.0.1:$ADMIN_PORT/status")
    echo "$s" | jq -e --argjson n "$n" '[.loops[].accepted] | add >= $n' >/dev/null || fail "$route: $s"
    if [ "$route" = reuse-port ] || [ "$route" = handoff ]; then
        echo "$s" | jq -e '[.loops[].accepted] | all(. > 0)' >/dev/null || fail "$route: a loop got nothing: $s"
    fi
    stop_sws
    [ "$SWS_STATUS" = 0 ] || fail "$route: exit $SWS_STATUS"
}
for r in reuse-port handoff exclusive acceptor herd; do
    check_route "$r" "\nevent_loops = 2\naccept = $r"
done
check_route shared '\nevent_loops = 0\nworker_threads = 2'
grep -q "shared model" "$T/log" || fail "shared model log"
echo ok
