#!/usr/bin/env bash
# UDP GSO on the quic listener's sends ([http3] gso, server/quic_send.c): a
# 1 MiB static file over HTTP/3, byte for byte, three ways: gso = on
# (the burst of each turn goes out as GSO sends: scalwsd_quic_gso_batches_total
# counts them), gso = off (one send per datagram: none counted, as many
# sends as datagrams), and on with a kernel without GSO simulated
# (TURNLOOP_UDP_DISABLE=gso: one send per datagram too, and said at start).
# A bad value is refused with the file and line.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_h3.sh"
mkdir -p "$T/www"
head -c 1048576 /dev/urandom >"$T/www/big.bin"

printf '[server]\nlisten = 127.0.0.1:0\n[http3]\ngso = maybe\n' >"$T/bad.ini"
out=$("$SWS" -t -c "$T/bad.ini" 2>&1) && fail "-t accepted gso = maybe"
case $out in *"bad.ini:4: [http3] gso:"*) ;; *) fail "-t said '$out'" ;; esac
"$SWS" --print-config | grep -q '^gso = on' || fail "--print-config has no gso = on"

metric() { # metric NAME: its value on loop 0
    curl -s "http://127.0.0.1:$ADMIN_PORT/metrics" | awk -v m="$1" '$1 == m"{loop=\"0\"}" { print $2 }'
}

# serve GSO: starts scalwsd with gso = GSO, downloads the file twice
# (each compared), and leaves the counters of loop 0 once they are published
# (a second) in BATCHES, SENDS and DGRAMS.
serve() {
    start_h3 "listen = 127.0.0.1:0 quic name=h3
event_loops = 1
[tls]
cert = $T/cert.pem
key = $T/key.pem
[http3]
gso = $1
[static]
root = $T/www" --scenario static
    local i out
    for i in 1 2; do
        out=$(timeout 120 "$H3GET" -k -t 100 -o "$T/got.bin" "127.0.0.1:$QP" /big.bin) ||
            fail "gso = $1: download $i: $out"
        [ "$(awk '{print $2, $3}' <<<"$out")" = "200 1048576" ] || fail "gso = $1: answered '$out'"
        cmp -s "$T/got.bin" "$T/www/big.bin" || fail "gso = $1: the file came back different"
    done
    # 2 MiB is some 1,500 datagrams: wait until the loop has published them.
    for _ in $(seq 1 100); do
        DGRAMS=$(metric scalwsd_quic_datagrams_sent_total)
        [ "${DGRAMS:-0}" -ge 1400 ] && break
        sleep 0.1
    done
    [ "${DGRAMS:-0}" -ge 1400 ] || fail "gso = $1: $DGRAMS datagrams sent for 2 MiB"
    BATCHES=$(metric scalwsd_quic_gso_batches_total)
    SENDS=$(metric scalwsd_quic_sends_total)
    stop_sws
}

serve on
if [[ ${TURNLOOP_UDP_DISABLE:-} == *gso* ]]; then
    [ "$BATCHES" = 0 ] || fail "no GSO in the kernel, yet $BATCHES GSO sends"
else
    # Each turn's burst to the client is coalesced: far fewer sends than datagrams.
    [ "$BATCHES" -gt 0 ] || fail "gso = on: no GSO send ($SENDS sends for $DGRAMS datagrams)"
    [ $((SENDS * 2)) -lt "$DGRAMS" ] || fail "gso = on: $SENDS sends for $DGRAMS datagrams"
fi
serve off
[ "$BATCHES" = 0 ] || fail "gso = off: $BATCHES GSO sends"
[ "$SENDS" -ge "$DGRAMS" ] || fail "gso = off: $SENDS sends for $DGRAMS datagrams"
# The kernel without GSO (simulated): one send each, and the start says why.
export TURNLOOP_UDP_DISABLE=gso
serve on
[ "$BATCHES" = 0 ] || fail "TURNLOOP_UDP_DISABLE=gso: $BATCHES GSO sends"
grep -q "no UDP GSO" "$T/log" || fail "the start did not say the kernel has no UDP GSO"
echo PASS
