#!/usr/bin/env bash
# HTTP/3 on a lossy network (issue 33): in a network namespace of its own
# (unshare -n: its loopback only), scalwsd and h3get with `tc netem` on the
# loopback losing, delaying and reordering datagrams both ways. GETs, POSTs
# and a 16 MiB static file arrive whole (the bytes compared), and /metrics
# and /status count the losses ngtcp2 recovered. A kernel without netem
# (CONFIG_NET_SCH_NETEM) gets its losses from nftables instead, if nft(8) is
# there (said so: no delay, no reordering then); neither, or no namespace:
# skipped with the reason.
set -euo pipefail
if [ -z "${SWS_NETNS:-}" ]; then
    command -v unshare >/dev/null || { echo "SKIP: no unshare(1)"; exit 77; }
    command -v ip >/dev/null || { echo "SKIP: no ip(8) (iproute2)"; exit 77; }
    why=$(unshare -n true 2>&1) || { echo "SKIP: cannot make a network namespace: $why"; exit 77; }
    export SWS_NETNS=1
    exec unshare -n bash "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_h3.sh"
command -v jq >/dev/null || { echo "SKIP: no jq(1)"; exit 77; }
ip link set lo up || fail "cannot bring the namespace's loopback up"
mkdir -p "$T/www"
head -c $((16 << 20)) /dev/urandom >"$T/www/16m.bin"
head -c 1048576 /dev/urandom >"$T/www/1m.bin"
head -c 300000 /dev/urandom >"$T/post.bin"

start_h3 "$(h3_ini)"

# The bad network, once scalwsd serves: every packet on the loopback (both
# ways) 3% lost, 2 ms late, a quarter of them sent at once (out of order).
if tc qdisc add dev lo root netem loss 3% delay 2ms reorder 25% 50% 2>"$T/tc.err"; then
    echo "netem: loss 3% delay 2ms reorder 25% 50%"
elif command -v nft >/dev/null &&
    nft -f - <<'EOF' 2>"$T/nft.err"; then
table inet lossy {
    chain out {
        type filter hook output priority 0;
        meta l4proto udp numgen random mod 100 < 3 drop
    }
}
EOF
    echo "note: no netem ($(cat "$T/tc.err")): 3% of UDP datagrams dropped by nftables," \
        "no delay or reordering"
else
    echo "SKIP: no netem qdisc ($(cat "$T/tc.err")) and no nft(8) to drop datagrams" \
        "$(cat "$T/nft.err" 2>/dev/null)"
    exit 77
fi

h3() { timeout 200 "$H3GET" -k -t 180 "$@"; }

# GETs: 40 on one connection, 8 at a time.
out=$(h3 -n 40 -P 8 "127.0.0.1:$QP" /) || fail "GETs: $(tail -3 <<<"$out")"
[ "$(count ' 200 19 ' <<<"$out")" = 40 ] || fail "GETs: $(count ' 200 19 ' <<<"$out") of 40 answered"
# POSTs of 300 kB (past a stream window: the client's losses too).
out=$(h3 -n 4 -P 2 -d "$T/post.bin" "127.0.0.1:$QP" /) || fail "POSTs: $out"
[ "$(count ' 200 19 ' <<<"$out")" = 4 ] || fail "POSTs: $(count ' 200 19 ' <<<"$out") of 4 answered"
# Four 1 MiB files at once, then 16 MiB on one stream: byte for byte.
out=$(h3 -n 4 -o "$T/got4.bin" "127.0.0.1:$QP" /files/1m.bin) || fail "4 x 1 MiB: $out"
cat "$T/www/1m.bin" "$T/www/1m.bin" "$T/www/1m.bin" "$T/www/1m.bin" >"$T/want4.bin"
cmp -s "$T/got4.bin" "$T/want4.bin" || fail "4 x 1 MiB came back different: $out"
out=$(h3 -o "$T/got16.bin" "127.0.0.1:$QP" /files/16m.bin) || fail "16 MiB: $out"
[ "$(awk '{print $2, $3}' <<<"$out")" = "200 16777216" ] || fail "16 MiB answered '$out'"
cmp -s "$T/got16.bin" "$T/www/16m.bin" || fail "the 16 MiB file came back different"

# The losses, counted: /metrics (per loop) and /status, once published.
sum() { # sum METRIC: over the loops
    curl -s --max-time 10 "http://127.0.0.1:$ADMIN_PORT/metrics" |
        awk -v m="$1" '$1 ~ "^"m"[{]" { s += $2 } END { print s + 0 }'
}
# stream_packets_lost is a lower bound (read per stream as it closes; what a
# probe had resent already is not counted) and reads 0 in some runs whose
# losses ngtcp2 did recover (seen on epoll; doc/http3.md, "Left for after"):
# a loss that began a recovery period (a congestion event) must be counted,
# in /metrics and /status, and the other counts be there.
for _ in $(seq 1 100); do
    events=$(sum scalwsd_quic_congestion_events_total)
    [ "$events" -gt 0 ] && break
    sleep 0.1
done
[ "$events" -gt 0 ] || fail "no congestion event counted in /metrics"
m=$(curl -s --max-time 10 "http://127.0.0.1:$ADMIN_PORT/metrics")
for n in stream_packets_lost_total probe_timeouts_total in_flight_bytes smoothed_rtt_seconds; do
    grep -q "^scalwsd_quic_${n}{loop=\"1\"} " <<<"$m" || fail "/metrics has no scalwsd_quic_$n per loop"
done
lost=$(sum scalwsd_quic_stream_packets_lost_total)
pto=$(sum scalwsd_quic_probe_timeouts_total)
status=$(curl -s --max-time 10 "http://127.0.0.1:$ADMIN_PORT/status")
status_events=$(jq '[.loops[].http3.congestion_events] | add' <<<"$status")
[ "$status_events" -gt 0 ] || fail "/status counts no congestion event: $status_events"
jq -e '[.loops[].http3.stream_packets_lost | numbers] | length == 2' <<<"$status" >/dev/null ||
    fail "/status has no stream_packets_lost per loop"
tc qdisc del dev lo root 2>/dev/null || true
echo "PASS http3_netem (stream packets lost $lost, congestion events $events, probe timeouts $pto)"
