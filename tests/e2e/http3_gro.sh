#!/usr/bin/env bash
# UDP GRO on the quic listener's receives ([http3] gro, server/quic_host.c
# and quic_gro.c, turnloop's datagram pool): h3get --gso uploads 1 MiB three
# times through the proxy to the test upstream's echo, each echoed byte for
# byte, three ways: gro = on (the client's GSO runs reach the server
# coalesced: scalwsd_quic_gro_receives_total counts them, and
# scalwsd_quic_gro_datagrams_total the datagrams they carried), gro = off
# (none coalesced), and on with a kernel without GRO simulated
# (TURNLOOP_UDP_DISABLE=gro: none coalesced, said at start). A bad value is
# refused with the file and line; [server] quic_gso is still read, as
# [http3] gso, with a warning that names it.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
. "$(dirname "$0")/lib_h3.sh"
head -c 1048576 /dev/urandom >"$T/post.bin"

config_refused '[server]\nlisten = 127.0.0.1:0\n[http3]\ngro = maybe\n' 'bad.ini:4: [http3] gro:'
"$SWS" --print-config | grep -q '^gro = on' || fail "--print-config has no gro = on"
printf '[server]\nlisten = 127.0.0.1:0\nquic_gso = off\n' >"$T/old.ini"
out=$("$SWS" -t -c "$T/old.ini" 2>&1) || fail "-t refused the deprecated quic_gso: $out"
case $out in *"old.ini:3: [server] quic_gso is deprecated"*"[http3] gso"*) ;;
    *) fail "-t did not warn of quic_gso: '$out'" ;; esac

start_test_upstream 200
# fnv FILE: h3get's hash of FILE's bytes (fnv1a-64, hex).
fnv() {
    python3 -c 'import sys
h = 14695981039346656037
for b in open(sys.argv[1], "rb").read():
    h = ((h ^ b) * 1099511628211) & 0xffffffffffffffff
print("%016x" % h)' "$1"
}
WANT="200 1048576 $(fnv "$T/post.bin")"

metric() { # metric NAME: its value on loop 0
    curl -s "http://127.0.0.1:$ADMIN_PORT/metrics" | awk -v m="$1" '$1 == m"{loop=\"0\"}" { print $2 }'
}

# serve GRO: starts scalwsd with gro = GRO, uploads the file three times
# with --gso (each echoed whole), and leaves the counters of loop 0 once
# they are published (a second) in RECEIVES and COALESCED.
serve() {
    start_h3 "listen = 127.0.0.1:0 quic name=h3
event_loops = 1
scenario = respond
[tls]
cert = $T/cert.pem
key = $T/key.pem
[http3]
gro = $1
[route up]
path_prefix = /up/
scenario = proxy
upstream = 127.0.0.1:$UP
strip_prefix = on"
    local i out
    for i in 1 2 3; do
        out=$(timeout 120 "$H3GET" -k -t 100 --gso -o "$T/echo.bin" -d "$T/post.bin" \
            "127.0.0.1:$QP" /up/echo) || fail "gro = $1: upload $i: $out"
        [ "$(awk '{print $2, $3, $4}' <<<"$out")" = "$WANT" ] || fail "gro = $1: upload $i answered '$out'"
        cmp -s "$T/echo.bin" "$T/post.bin" || fail "gro = $1: upload $i came back different"
    done
    # 3 MiB is some 2,300 datagrams in: wait until the loop has published them.
    local got=0
    for _ in $(seq 1 100); do
        got=$(metric scalwsd_quic_datagrams_received_total)
        [ "${got:-0}" -ge 2200 ] && break
        sleep 0.1
    done
    [ "${got:-0}" -ge 2200 ] || fail "gro = $1: $got datagrams received for 3 MiB"
    RECEIVES=$(metric scalwsd_quic_gro_receives_total)
    COALESCED=$(metric scalwsd_quic_gro_datagrams_total)
    stop_sws
}

serve on
if [[ ${TURNLOOP_UDP_DISABLE:-} == *gro* ]]; then
    [ "$RECEIVES" = 0 ] || fail "no GRO in the kernel, yet $RECEIVES coalesced receives"
else
    [ "$RECEIVES" -gt 0 ] || fail "gro = on: no coalesced receive"
    # Each counted receive carried two datagrams at least.
    [ "$COALESCED" -ge $((RECEIVES * 2)) ] || fail "gro = on: $COALESCED datagrams in $RECEIVES receives"
fi
echo "gro = on: $RECEIVES coalesced receives carried $COALESCED datagrams"
serve off
[ "$RECEIVES" = 0 ] || fail "gro = off: $RECEIVES coalesced receives"
[ "$COALESCED" = 0 ] || fail "gro = off: $COALESCED coalesced datagrams"
# The kernel without GRO (simulated): none coalesced, and the start says why.
export TURNLOOP_UDP_DISABLE=gro
serve on
[ "$RECEIVES" = 0 ] || fail "TURNLOOP_UDP_DISABLE=gro: $RECEIVES coalesced receives"
grep -q "no UDP GRO" "$T/log" || fail "the start did not say the kernel has no UDP GRO"
echo PASS
