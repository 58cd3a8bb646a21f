#!/usr/bin/env bash
# HTTP/3 connections that change their path (issue 33): h3get moves to a
# new UDP port every two answers, telling its QUIC stack (a migration: a new
# connection ID, the path validated) or not (a NAT rebinding: the server
# alone sees the port change). Every request after a move is answered on the
# same connection, and every datagram of it was taken by one loop's endpoint
# (per-loop counters in /metrics, two loops): the kernel's steering by
# connection ID kept it there, or, without it (TURNLOOP_UDP_DISABLE=cid_steer:
# the e2e_http3_migration_unsteered run, where a new port is hashed to either
# loop), the forwarding did (scalwsd_quic_forwarded_total > 0). Then a
# 64 MiB download, compared by hash.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_h3.sh"
mkdir -p "$T/www"
head -c $((64 << 20)) /dev/urandom >"$T/www/64m.bin"

start_h3 "$(h3_ini)"
unsteered=false
[[ ${TURNLOOP_UDP_DISABLE:-} != *cid_steer* ]] || unsteered=true

# Each loop publishes once a second: wait until both show WANT connections
# in all and none open (the connection's last datagram counted with them).
settle() { # settle WANT
    local c0 c1 a0 a1
    for _ in $(seq 1 100); do
        read -r c0 c1 <<<"$(per_loop scalwsd_http3_connections_total)"
        read -r a0 a1 <<<"$(per_loop scalwsd_http3_connections_active)"
        [ $((c0 + c1)) -ge "$1" ] && [ $((a0 + a1)) = 0 ] && { sleep 1.2; return 0; }
        sleep 0.1
    done
    fail "the loops did not count $1 HTTP/3 connections closed: $c0 + $c1, $a0 + $a1 open"
}

conns=0
fwd_total=0
for how in migrate nat-rebind; do
    read -r d0 d1 <<<"$(per_loop scalwsd_quic_datagrams_received_total)"
    read -r f0 f1 <<<"$(per_loop scalwsd_quic_forwarded_total)"
    out=$(timeout 120 "$H3GET" -k -t 100 "--$how" 2 -n 24 -P 1 "127.0.0.1:$QP" /) ||
        fail "--$how: not every request answered: $(tail -5 <<<"$out")"
    [ "$(count ' 200 19 ' <<<"$out")" = 24 ] || fail "--$how: $(count ' 200 19 ' <<<"$out") of 24 answered 200"
    rebinds=$(count '^rebind ' <<<"$out")
    [ "$rebinds" -ge 4 ] || fail "--$how: the client moved $rebinds times, want at least 4: $out"
    ! grep -q ' failed$' <<<"$out" || fail "--$how: a path validation failed: $out"
    if [ "$how" = migrate ]; then
        grep -q ' validated$' <<<"$out" || fail "--migrate: no path validated: $out"
    fi
    conns=$((conns + 1))
    settle "$conns"
    read -r c0 c1 <<<"$(per_loop scalwsd_http3_connections_total)"
    [ $((c0 + c1)) = "$conns" ] || fail "--$how: $((c0 + c1)) connections counted, want $conns (one per run)"
    read -r e0 e1 <<<"$(per_loop scalwsd_quic_datagrams_received_total)"
    read -r g0 g1 <<<"$(per_loop scalwsd_quic_forwarded_total)"
    in0=$((e0 - d0)) in1=$((e1 - d1))
    # One loop's endpoint took every datagram of the connection.
    [ "$in0" = 0 ] || [ "$in1" = 0 ] ||
        fail "--$how: the connection's datagrams reached two endpoints: $in0 and $in1"
    [ $((in0 + in1)) -gt 24 ] || fail "--$how: only $((in0 + in1)) datagrams counted"
    fwd=$((g0 - f0 + g1 - f1))
    fwd_total=$((fwd_total + fwd))
    # The kernel steers by connection ID: nothing to forward, new port or not.
    $unsteered || [ "$fwd" = 0 ] || fail "--$how: $fwd datagrams forwarded with the kernel steering"
    echo "--$how: $rebinds moves, datagrams per loop $in0 $in1, forwarded $fwd"
done
# Without steering, the new ports hash to either loop: over 22 moves, the
# chance that none reached the other loop is 2^-22.
if $unsteered; then
    grep -q "refused the connection-ID steering program" "$T/log" ||
        fail "no word of the refused steering program at start"
    [ "$fwd_total" -gt 0 ] || fail "no datagram forwarded between the loops without steering"
fi

# 64 MiB on one stream, compared by hash.
out=$(timeout 240 "$H3GET" -k -t 200 -o "$T/got.bin" "127.0.0.1:$QP" /files/64m.bin) ||
    fail "64 MiB over HTTP/3: $out"
[ "$(awk '{print $2, $3}' <<<"$out")" = "200 67108864" ] || fail "64 MiB answered '$out'"
[ "$(sha256sum <"$T/got.bin")" = "$(sha256sum <"$T/www/64m.bin")" ] ||
    fail "the 64 MiB file came back different"
rm -f "$T/got.bin"
echo "PASS http3_migration (quic port $QP, forwarded $fwd_total)"
