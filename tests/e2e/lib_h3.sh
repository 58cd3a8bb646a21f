# Helpers for the HTTP/3 tests (sourced after lib.sh): h3get (tests/h3), a
# certificate for localhost made here ($T/cert.pem, $T/key.pem), scalwsd with
# a tls listener beside the test's quic one, and the per-loop counters.
command -v openssl >/dev/null || { echo "SKIP: no openssl(1)"; exit 77; }
H3GET=${H3GET:?path of h3get in H3GET}

# h3_cert CERT KEY [DAYS]: a self-signed certificate for localhost and
# 127.0.0.1 (EC P-256, DAYS days: 2) in CERT and its key in KEY.
h3_cert() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days "${3:-2}" \
        -subj "/CN=localhost" -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
        -keyout "$2" -out "$1" 2>/dev/null || fail "openssl req"
}
h3_cert "$T/cert.pem" "$T/key.pem"

# h3_ini [SERVER-KEYS]: the server most HTTP/3 tests start: two loops
# answering respond, SERVER-KEYS (lines) beside them, [tls] with the
# certificate above, and $T/www served under /files/ (static). Its quic
# listener is named h3.
h3_ini() {
    printf '%s' "listen = 127.0.0.1:0 quic name=h3
event_loops = 2
scenario = respond${1:+
$1}
[tls]
cert = $T/cert.pem
key = $T/key.pem
[route files]
path_prefix = /files/
scenario = static
root = $T/www
strip_prefix = on"
}

# start_h3 INI-TEXT [args...]: start_sws with a tls listener (named tls)
# beside INI-TEXT's, whose quic listener is named h3; sets QP, its port.
start_h3() {
    SWS_LISTEN_OPTS="tls name=tls" start_sws "$@"
    QP=$(ready_listen_port "$T/ready" h3)
    [ -n "$QP" ] || fail "the ready file names no quic listener: $(cat "$T/ready")"
}

# per_loop METRIC: "N0 N1", its values on loops 0 and 1 as last published
# (each loop publishes once a second).
per_loop() {
    curl -s "http://127.0.0.1:$ADMIN_PORT/metrics" | awk -v m="$1" \
        '$1 ~ "^"m"[{]" { split($1, a, "\""); v[a[2]] = $2 } END { print v[0] + 0, v[1] + 0 }'
}
