#!/usr/bin/env bash
# Accept that balances (issue 21), end to end. handoff with acceptors = 2 over
# 4 loops: /status and the start line name the accepting loops and whom each
# feeds, each acceptor's connections go only to its own loops, round-robin
# exact within them; /metrics has the imbalance index and one info series per
# loop. reuse-port-cpu on 2 pinned loops: a client on CPU c is served by the
# loop pinned to c, every time (on loopback the SYN is processed on the
# client's CPU). Bad combinations are refused at start with a reason.
. "$(dirname "$0")/lib.sh"
st() { curl -s "http://127.0.0.1:$ADMIN_PORT/status"; }

start_sws '\nevent_loops = 4\naccept = handoff\nacceptors = 2'
grep -q "accept handoff (2 acceptors: loop 0 feeds 0-1, loop 2 feeds 2-3)" "$T/log" ||
    fail "start line: $(cat "$T/log")"
s=$(st)
[ "$(jq -c '[.accept.acceptors[] | {loop, feeds}]' <<<"$s")" = '[{"loop":0,"feeds":[0,1]},{"loop":2,"feeds":[2,3]}]' ] ||
    fail "acceptors and feeds: $s"
[ "$(jq -c '[.loops[] | .accepts]' <<<"$s")" = '[true,false,true,false]' ] || fail "accepts: $s"
[ "$(jq -c '[.loops[] | .fed_by]' <<<"$s")" = '[0,0,2,2]' ] || fail "fed_by: $s"
# One connection per request (counted from here: start-up may have probed).
before=$(st | jq '[.loops[].accepted] | add')
for _ in $(seq 1 60); do curl -s -o /dev/null "http://127.0.0.1:$PORT/"; done
s=$(st)
total=$(($(jq '[.loops[].accepted] | add' <<<"$s") - before))
[ "$total" = 60 ] || fail "60 connections, the loops took $total: $s"
for a in 0 2; do
    handed=$(jq ".accept.acceptors[] | select(.loop == $a) | .handed_on" <<<"$s")
    x=$(jq ".loops[$a].accepted" <<<"$s") y=$(jq ".loops[$((a + 1))].accepted" <<<"$s")
    # Linux hashes SYNs over the two SHARE listeners: 60 all on one is 2^-59.
    [ "$handed" -gt 0 ] || fail "acceptor $a accepted nothing: $s"
    [ $((x + y)) = "$handed" ] || fail "acceptor $a handed $handed, its loops took $x + $y: $s"
    d=$((x - y))
    [ "$d" -ge -1 ] && [ "$d" -le 1 ] || fail "round-robin within loops $a,$((a + 1)) not exact: $x $y"
done
jq -e '.imbalance.requests >= 1 and .imbalance.requests < 4' <<<"$s" >/dev/null ||
    fail "imbalance index: $s"
m=$(curl -s "http://127.0.0.1:$ADMIN_PORT/metrics")
grep -q '^scalwsd_loop_imbalance_ratio{by="requests"} [0-9.]*$' <<<"$m" || fail "metrics: no imbalance"
grep -q '^scalwsd_loop_info{loop="2",accepts="1",fed_by="2",cpu="-1"} 1$' <<<"$m" ||
    fail "metrics: loop info: $(grep loop_info <<<"$m")"
[ "$(grep -c '^scalwsd_requests_total{loop="[0-3]"}' <<<"$m")" = 4 ] || fail "metrics: per-loop requests"
stop_sws

# Refused at start, with the reason: more acceptors than loops, acceptors
# without handoff, reuse-port-cpu on more loops than CPUs.
ncpu=$(nproc)
for bad in "event_loops = 2\naccept = handoff\nacceptors = 3|acceptors = 3: more than the 2 loops" \
    "event_loops = 2\naccept = herd\nacceptors = 2|acceptors = 2 needs accept = handoff" \
    "event_loops = $((ncpu + 1))\naccept = reuse-port-cpu|reuse-port-cpu needs one CPU per loop"; do
    ini=${bad%%|*} want=${bad#*|}
    if start_sws_try "\n$ini"; then
        fail "started with '$ini'"
    fi
    grep -q "$want" "$T/log" || fail "'$ini': log does not say '$want': $(cat "$T/log")"
done

if [ "$ncpu" -lt 2 ] || ! command -v taskset >/dev/null; then
    echo "balance: handoff groups ok; reuse-port-cpu not checked (1 CPU or no taskset)"
    exit 0
fi
start_sws '\nevent_loops = 2\naccept = reuse-port-cpu'
grep -q "accept reuse-port-cpu (the kernel steers each SYN to the loop on its CPU)" "$T/log" ||
    fail "start line: $(cat "$T/log")"
s=$(st)
[ "$(jq -r '.accept.route' <<<"$s")" = reuse-port-cpu ] || fail "route: $s"
jq -e '.pinned and (.loops | all(.cpu >= 0))' <<<"$s" >/dev/null || fail "loops not pinned: $s"
for i in 0 1; do
    cpu=$(jq ".loops[$i].cpu" <<<"$s")
    before=$(st | jq ".loops[$i].accepted")
    for _ in $(seq 1 8); do taskset -c "$cpu" curl -s -o /dev/null "http://127.0.0.1:$PORT/"; done
    after=$(st | jq ".loops[$i].accepted")
    [ $((after - before)) = 8 ] || fail "8 clients on CPU $cpu: loop $i took $((after - before)): $(st)"
done
stop_sws
echo "balance: ok"
