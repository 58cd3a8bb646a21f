#!/usr/bin/env bash
# [tls NAME] certificates by SNI over QUIC (issue 33): GnuTLS serves each
# name the certificate holding it (exact, and *. one label), as OpenSSL
# does on the tls listener; an unknown name gets the default, or nothing
# with unknown_name = refuse; SIGHUP reloads one of them. Each certificate
# is checked by h3get verifying it (--cacert, --sni).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_tls.sh"
. "$(dirname "$0")/lib_h3.sh"

mkcert a ec a.test,www.a.test
mkcert b rsa b.test
mkcert c ec '*.c.test'

conf() { # conf UNKNOWN_NAME
    printf '%s' "listen = 127.0.0.1:0 quic name=h3
event_loops = 2
scenario = respond
[tls]
unknown_name = $1
[tls a]
cert = $T/a.pem
key = $T/a.key
[tls b]
cert = $T/b.pem
key = $T/b.key
default = on
[tls c]
cert = $T/c.pem
key = $T/c.key"
}
start_h3 "$(conf default)"

get() { # get NAME CA: h3get verifying NAME's certificate against CA
    timeout 60 "$H3GET" -t 50 --sni "$1" --cacert "$2" "127.0.0.1:$QP" / 2>&1
}
for pair in a.test:a www.a.test:a b.test:b x.c.test:c; do
    name=${pair%:*} ca=$T/${pair#*:}.pem
    out=$(get "$name" "$ca") || fail "$name over HTTP/3 with its own certificate: $out"
    [ "$(awk '$1 == 0 {print $2}' <<<"$out")" = 200 ] || fail "$name answered '$out'"
done
# Another section's certificate does not verify: the name chose its own.
out=$(get b.test "$T/a.pem") && fail "b.test was served a.test's certificate: $out"
out=$(get a.test "$T/b.pem") && fail "a.test was served b.test's certificate: $out"
# *. covers one label: a.b.c.test is not c's; it gets the default (b).
out=$(get a.b.c.test "$T/c.pem") && fail "a.b.c.test was served *.c.test: $out"
out=$(timeout 60 "$H3GET" -k -t 50 --sni nobody.test "127.0.0.1:$QP" /) ||
    fail "an unknown name got no certificate: $out"
# A session resumes under the name it was made for only (RFC 6066 3), even
# where one certificate holds both names.
resumed() { # resumed NAME SECOND-NAME: h3get's "resumed 0|1"
    timeout 60 "$H3GET" -t 50 --sni "$1" --cacert "$T/a.pem" --resume "127.0.0.1:$QP" \
        --resume-sni "$2" "127.0.0.1:$QP" / 2>&1 | awk '$1 == "resumed" { print $2 }'
}
[ "$(resumed a.test a.test)" = 1 ] || fail "a.test's session did not resume under a.test"
[ "$(resumed a.test www.a.test)" = 0 ] || fail "a.test's session resumed under www.a.test"

# SIGHUP: b's certificate replaced; the others unchanged; refuse unknown names.
mkcert b2 rsa b.test
cp "$T/b2.pem" "$T/b.pem"
cp "$T/b2.key" "$T/b.key"
printf '[server]\nlisten = 127.0.0.1:0 tls name=tls\n%s\n[admin]\nlisten = 127.0.0.1:0\n' \
    "$(conf refuse)" >"$T/sws.ini"
kill -HUP "$SWS_PID"
wait_log "every loop serves generation 1" 30 || fail "SIGHUP: the loops did not take the reload"
out=$(get b.test "$T/b2.pem") || fail "after SIGHUP b.test is not served its new certificate: $out"
out=$(get a.test "$T/a.pem") || fail "after SIGHUP a.test lost its certificate: $out"
out=$(timeout 60 "$H3GET" -k -t 20 --sni nobody.test "127.0.0.1:$QP" / 2>&1) &&
    fail "unknown_name = refuse: an unknown name was served: $out"
grep -qi "alert\|crypto\|closed\|handshake" <<<"$out" || fail "unknown_name = refuse: h3get said '$out'"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "scalwsd exited $SWS_STATUS"
echo "PASS http3_sni"
