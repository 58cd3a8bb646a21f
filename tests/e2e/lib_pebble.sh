# Debian's pebble (Let's Encrypt's test CA) and pebble-challtestsrv (its DNS:
# every test name at 127.0.0.1) on loopback for the ACME tests (sourced after
# lib.sh). No PEBBLE_VA_ALWAYS_VALID: Pebble really fetches each challenge.
command -v pebble >/dev/null && command -v pebble-challtestsrv >/dev/null ||
    { echo "SKIP: pebble not installed (scripts/bootstrap --test)"; exit 77; }
command -v openssl >/dev/null && command -v jq >/dev/null || { echo "SKIP: no openssl/jq"; exit 77; }
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done; cleanup' EXIT

# Pebble and challtestsrv cannot bind port 0 and say which; the kernel picks a
# free port here and it is handed over at once.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# wait_for SECONDS WHAT COMMAND...: polls COMMAND every 0.2 s, bounded.
wait_for() {
    local secs=$1 what=$2
    shift 2
    local end=$((SECONDS + secs))
    until "$@" >/dev/null 2>&1; do
        [ $SECONDS -lt $end ] || fail "$what not within $secs s"
        sleep 0.2
    done
}
# The admin listener is served one request at a time by the control thread: on
# a loaded machine (a sanitizer build) a request may wait; ask again, bounded.
admin_get() { curl -sf -m 10 --retry 3 --retry-all-errors "http://127.0.0.1:$ADMIN_PORT$1"; }

# Pebble's own HTTPS certificate (its ACME API and management endpoint), the
# DNS server started, and the ports Pebble will take: CT_DNS, CT_MGMT (the
# DNS server's management API, e.g. add-a), PB (the ACME API), PBM.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -keyout "$T/pebble.key" -out "$T/pebble.pem" -subj /CN=localhost \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" 2>/dev/null
CT_DNS=$(free_port)
CT_MGMT=$(free_port)
pebble-challtestsrv -dns01 "127.0.0.1:$CT_DNS" -management "127.0.0.1:$CT_MGMT" \
    -http01 "" -https01 "" -tlsalpn01 "" -defaultIPv4 127.0.0.1 -defaultIPv6 "" \
    >"$T/challtestsrv.log" 2>&1 &
PIDS+=($!)
PB=$(free_port)
PBM=$(free_port)

# pebble_start HTTP_PORT TLS_PORT VALIDITY_S: Pebble validating HTTP-01 on
# HTTP_PORT and TLS-ALPN-01 on TLS_PORT, issuing certificates valid VALIDITY_S
# seconds; returns once it listens (log in $T/pebble.log).
pebble_start() {
    cat >"$T/pebble.json" <<JSON
{"pebble": {"listenAddress": "127.0.0.1:$PB", "managementListenAddress": "127.0.0.1:$PBM",
  "certificate": "$T/pebble.pem", "privateKey": "$T/pebble.key",
  "httpPort": $1, "tlsPort": $2, "ocspResponderURL": "",
  "externalAccountBindingRequired": false, "certificateValidityPeriod": $3}}
JSON
    PEBBLE_VA_NOSLEEP=1 PEBBLE_AUTHZREUSE=0 pebble -config "$T/pebble.json" \
        -dnsserver "127.0.0.1:$CT_DNS" >"$T/pebble.log" 2>&1 &
    PIDS+=($!)
    wait_for 90 "pebble listening" grep -q "Listening on" "$T/pebble.log"
}
