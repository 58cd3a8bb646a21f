#!/usr/bin/env bash
# OCSP stapling over QUIC (doc/http3.md, "TLS: GnuTLS beside OpenSSL"): the
# [tls] ocsp file the TCP side staples goes with the certificate on the
# quic listener too. A CA of the test's own issues the certificate and
# signs a "good" OCSP response (openssl ocsp); h3get --ocsp-out, verifying
# the chain against that CA, gets the response stapled byte for byte; a
# SIGHUP after the file changed staples the new one; a response for another
# certificate (which GnuTLS refuses, OpenSSL does not) leaves QUIC with the
# certificates and response it had, said in the log; without the key,
# nothing is stapled.
. "$(dirname "$0")/lib.sh"
command -v openssl >/dev/null || { echo "SKIP: no openssl(1)"; exit 77; }
H3GET=${H3GET:?path of h3get in H3GET}

# A CA, a certificate for localhost it signs, and its index for the responder.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj "/CN=test ca" -keyout "$T/ca.key" -out "$T/ca.pem" 2>/dev/null || fail "openssl: the CA"
leaf() { # leaf NAME: $T/NAME.pem and its key, signed by the CA
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=localhost" \
        -keyout "$T/$1.key" -out "$T/$1.csr" 2>/dev/null &&
        printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$T/ext" &&
        openssl x509 -req -in "$T/$1.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" -CAcreateserial \
            -days 2 -extfile "$T/ext" -out "$T/$1.pem" 2>/dev/null || fail "openssl: $1"
}
# respond NAME OUT: a "good" OCSP response for $T/NAME.pem, signed by the CA.
respond() {
    local serial exp
    serial=$(openssl x509 -in "$T/$1.pem" -noout -serial | cut -d= -f2)
    exp=$(date -u -d '+2 days' +%y%m%d%H%M%SZ)
    printf 'V\t%s\t\t%s\tunknown\t/CN=localhost\n' "$exp" "$serial" >"$T/index.txt"
    openssl ocsp -issuer "$T/ca.pem" -cert "$T/$1.pem" -no_nonce -reqout "$T/ocsp.req" \
        >/dev/null 2>&1 &&
        openssl ocsp -index "$T/index.txt" -rsigner "$T/ca.pem" -rkey "$T/ca.key" -CA "$T/ca.pem" \
            -reqin "$T/ocsp.req" -respout "$2" -ndays 1 >/dev/null 2>&1 || fail "openssl ocsp"
}
leaf site
leaf other
respond site "$T/ocsp.der"

conf() { # conf OCSP-LINE
    printf '%s' "listen = 127.0.0.1:0 quic name=h3
scenario = respond
[tls]
cert = $T/site.pem
key = $T/site.key
$1"
}
SWS_LISTEN_OPTS="tls name=tls"
start_sws "$(conf "ocsp = $T/ocsp.der")"
QP=$(ready_listen_port "$T/ready" h3)
[ -n "$QP" ] || fail "the ready file names no quic listener: $(cat "$T/ready")"
# stapled OUT: one verified request; h3get's "ocsp N" line in OUT, the response in OUT.der.
stapled() {
    timeout 60 "$H3GET" --cacert "$T/ca.pem" -t 50 --ocsp-out "$1.der" "127.0.0.1:$QP" / >"$1" 2>&1 ||
        fail "h3get: $(cat "$1")"
    grep -q '^0 200 ' "$1" || fail "no answer: $(cat "$1")"
}
stapled "$T/first"
grep -q "^ocsp $(stat -c %s "$T/ocsp.der")$" "$T/first" || fail "not stapled: $(cat "$T/first")"
cmp -s "$T/first.der" "$T/ocsp.der" || fail "the stapled response is not the file's"

# A fresher response in the file: a SIGHUP staples it (the TCP side's refresh).
sleep 1.1 # its producedAt is in seconds: a second later, other bytes
respond site "$T/ocsp2.der"
cmp -s "$T/ocsp2.der" "$T/ocsp.der" && fail "the second response is the first one's bytes"
cp "$T/ocsp2.der" "$T/ocsp.der"
kill -HUP "$SWS_PID"
wait_log "every loop serves generation 1" 30 || fail "SIGHUP: the loops did not take the reload"
stapled "$T/second"
cmp -s "$T/second.der" "$T/ocsp2.der" || fail "the reload did not staple the new response"

# A response for another certificate: GnuTLS refuses it, and QUIC keeps
# what it had (the TCP side, OpenSSL, staples any response).
respond other "$T/ocsp.der"
kill -HUP "$SWS_PID"
wait_log "quic keeps its certificates.*ocsp" 30 || fail "a mismatched response taken: $(tail -3 "$T/log")"
stapled "$T/third"
cmp -s "$T/third.der" "$T/ocsp2.der" || fail "the refused reload changed the stapled response"
stop_ok ocsp

# No ocsp key: nothing stapled.
start_sws "$(conf "")"
QP=$(ready_listen_port "$T/ready" h3)
stapled "$T/none"
grep -q '^ocsp 0$' "$T/none" || fail "stapled without a file: $(cat "$T/none")"
stop_ok none
echo ok
