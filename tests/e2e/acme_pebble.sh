#!/usr/bin/env bash
# ACME end to end against Debian's pebble (Let's Encrypt's test CA) on loopback,
# with pebble-challtestsrv as its DNS server (the test domains resolve to
# 127.0.0.1). The HTTP-01 challenge is really fetched from scalwsd (no
# PEBBLE_VA_ALWAYS_VALID). Steps:
#  A. a plaintext scalwsd whose loops answer the challenge; the CA is down at
#     first (counted, retried), then issues; every other request on that
#     listener is redirected to https (its default route: issue 31), and the
#     challenge is answered all the same;
#  B. a TLS scalwsd restarted on the same state_dir serves that certificate at
#     once; a client trusting only Pebble's root gets it; a short validity is
#     renewed while a keep-alive connection stays open;
#  C. challenges made to fail (DNS sends Pebble to 127.0.0.2): the old
#     certificate keeps serving and /status shows the error.
. "$(dirname "$0")/lib.sh"

# [acme] mistakes are one line and exit 2, before anything starts (no pebble
# needed); --check-config writes nothing.
config_refused "[server]\nlisten = 127.0.0.1:1 tls\n[acme]\ndirectory = https://ca/dir\ndomains = a.test" \
    "set [acme] http_listen"
config_refused "[acme]\ndirectory = https://ca/dir" "domains is empty"
config_refused "[acme]\nrenew_before = soon" "bad.ini:2: [acme] renew_before: bad duration 'soon'"
config_refused "[acme]\ndomains = *.a.test" "bad domain '*.a.test'"
printf '[server]\nlisten = 127.0.0.1:1 tls\n[acme]\ndirectory = https://ca/dir\ndomains = a.test\nstate_dir = %s\nhttp_listen = 127.0.0.1:1\n' \
    "$T/never" >"$T/ok.ini"
"$SWS" --check-config --config "$T/ok.ini" >/dev/null || fail "--check-config on a good [acme]"
[ ! -e "$T/never" ] || fail "--check-config created state_dir"

. "$(dirname "$0")/lib_pebble.sh"

D=acme-e2e.test
W=www.acme-e2e.test
STATE=$T/acme-state
# /metrics through admin_get (asked again on a loaded machine), not lib.sh's metric.
metric() { admin_get /metrics | awk -v k="$1" '$1 == k {print $2}'; }
metric_ge() { [ "$(metric "$1")" -ge "$2" ] 2>/dev/null; }
acme_status() { admin_get /status | jq -r "$1"; }

acme_ini() {
    cat <<INI
[acme]
directory = https://127.0.0.1:$PB/dir
ca_file = $T/pebble.pem
email = ops@$D
domains = $D, $W
state_dir = $STATE
renew_before = 75s
retry_min = 1s
retry_max = 4s
$1
INI
}

# ---- A: plaintext listener, challenge answered by the loops; CA down first --------
start_sws "$(acme_ini '')\n[server]\naccess_log = $T/access.log\nscenario = redirect
[redirect]\nto = https://\$host\$request_uri\nany_host = on"
wait_for 20 "a failure counted while the CA is down" \
    metric_ge 'scalwsd_acme_failures_total{cause="network"}' 1
grep -q "acme: $D failed (network)" "$T/log" || fail "the CA-down failure was not logged"
[ "$(stat -c %a "$STATE")" = 700 ] || fail "state_dir is not 0700"

# Pebble: certificates valid 90 s, the HTTP-01 port is scalwsd's listener.
pebble_start "$PORT" "$(free_port)" 90
wait_for 60 "a certificate issued" metric_ge scalwsd_acme_issued_total 1
grep -q "Attempting to validate w/ HTTP: http://$D:$PORT/.well-known/acme-challenge/" \
    "$T/pebble.log" || fail "pebble did not fetch the challenge from scalwsd"
grep -q '"GET /.well-known/acme-challenge/[^ ]* HTTP/1.1" 200' "$T/access.log" ||
    fail "the loop did not answer the challenge (access log)"
got=$(curl -s -m 10 -o /dev/null -w '%{http_code} %{redirect_url}' -H "Host: $D" \
    "http://127.0.0.1:$PORT/.well-known/acme-challenge/unknown")
[ "$got" = "301 https://$D/.well-known/acme-challenge/unknown" ] ||
    fail "a token the ACME thread does not know is the default route's: $got"
grep -q Pebble <<<"$(openssl x509 -in "$STATE/cert.pem" -noout -issuer)" ||
    fail "cert.pem is not Pebble's"
grep -q "DNS:$W" <<<"$(openssl x509 -in "$STATE/cert.pem" -noout -ext subjectAltName)" ||
    fail "the certificate does not name $W"
[ "$(stat -c %a "$STATE/key.pem")" = 600 ] || fail "key.pem is not 0600"
A_FP=$(openssl x509 -in "$STATE/cert.pem" -noout -fingerprint -sha256)
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "scalwsd (A) exited $SWS_STATUS"
HTTP_PORT=$PORT

# ---- B: TLS listener on the same state_dir; renewal under a live connection -------
curl -sf --cacert "$T/pebble.pem" "https://127.0.0.1:$PBM/roots/0" >"$T/root.pem" ||
    fail "no root from pebble's management endpoint"
TP=$(free_port)
ADMIN_PORT=$(free_port)
{
    echo "[server]"
    echo "listen = 127.0.0.1:$TP tls"
    acme_ini "http_listen = 127.0.0.1:$HTTP_PORT"
    echo "[admin]"
    echo "listen = 127.0.0.1:$ADMIN_PORT"
} >"$T/tls.ini"
"$SWS" --config "$T/tls.ini" 2>"$T/log" &
SWS_PID=$!
wait_for 10 "scalwsd (B) listening" curl -sf "http://127.0.0.1:$ADMIN_PORT/status"
served_fp() {
    openssl s_client -connect "127.0.0.1:$TP" -servername "$D" </dev/null 2>/dev/null |
        openssl x509 -noout -fingerprint -sha256
}
# Restart resumes from state_dir: the certificate A got serves at once (unless
# it was already due and renewed in the meantime: then Pebble's newer one).
page=$(curl -sf --cacert "$T/root.pem" --resolve "$D:$TP:127.0.0.1" "https://$D:$TP/") || true
grep -q "Hello from scalwsd" <<<"$page" || fail "a client trusting Pebble's root was refused"
curl -sf --cacert "$T/root.pem" --resolve "$W:$TP:127.0.0.1" "https://$W:$TP/" >/dev/null ||
    fail "$W not served"
[ "$(acme_status .acme.placeholder)" = false ] || fail "B started on the placeholder"
out=$(python3 "$(dirname "$0")/acme_tls_client.py" "$T/root.pem" "$D" "$TP" "$ADMIN_PORT" 60) ||
    fail "keep-alive across the renewal: $out"
echo "renewal: $out"
old=${out#old=}
old=${old%% *}
new=${out##*new=}
[ "$old" != "$new" ] || fail "a new connection still got the old certificate ($out)"
grep -q "acme: loading the new certificate" "$T/log" || fail "no reload logged"
[ "$(acme_status '.acme.domains[0].last_error')" = null ] || fail "an error after success"
exp=$(acme_status '.acme.domains[0].certificate_expires')
nxt=$(acme_status '.acme.domains[0].next_renewal')
[ "$exp" != null ] && [ "$nxt" != null ] || fail "/status lacks expiry or next renewal"

# ---- C: challenges fail; the old certificate keeps serving ------------------------
for h in "$D" "$W"; do
    curl -sf -X POST "http://127.0.0.1:$CT_MGMT/add-a" \
        -d "{\"host\":\"$h.\",\"addresses\":[\"127.0.0.2\"]}" >/dev/null || fail "challtestsrv add-a"
done
wait_for 60 "a failed challenge counted" \
    metric_ge 'scalwsd_acme_failures_total{cause="challenge"}' 1
before=$(served_fp)
[ -n "$before" ] || fail "nothing served after the failure"
wait_for 30 "a second failed attempt" bash -c \
    "[ \"\$(curl -sf -m 10 http://127.0.0.1:$ADMIN_PORT/status | jq .acme.failures_in_a_row)\" -ge 2 ]"
[ "$(served_fp)" = "$before" ] || fail "the served certificate changed after failures"
# One reading of /status: the last error, and the domain it names shows it.
admin_get /status >"$T/status.json" || fail "/status did not answer"
err=$(jq -r .acme.last_error "$T/status.json")
case "$err" in *"challenge for "*"failed"*) ;; *) fail "/status last_error is '$err'" ;; esac
dom=${err#challenge for }
dom=${dom%% failed*}
shown=$(jq -r --arg d "$dom" '.acme.domains[] | select(.domain == $d) | .last_error' "$T/status.json")
[ "$shown" = "$err" ] || fail "/status shows '$shown' for $dom, the last error is '$err'"
grep -q "acme: $D failed (challenge)" "$T/log" || fail "the challenge failure was not logged"
# Logged once per failed attempt: as many lines as the counter says (read
# between two equal readings, as the ACME thread may fail again meanwhile).
for _ in 1 2 3 4 5; do
    m1=$(metric 'scalwsd_acme_failures_total{cause="challenge"}')
    nlog=$(grep -c "acme: $D failed (challenge)" "$T/log" || true)
    m2=$(metric 'scalwsd_acme_failures_total{cause="challenge"}')
    if [ "$m1" = "$m2" ]; then
        [ "$nlog" = "$m1" ] || fail "$m1 challenge failures counted, $nlog logged"
        break
    fi
done
curl -sf --cacert "$T/root.pem" --resolve "$D:$TP:127.0.0.1" "https://$D:$TP/" >/dev/null ||
    fail "the old certificate no longer serves"
[ "$(jq .failures "$STATE/state.json")" -ge 1 ] || fail "state.json does not keep the failures"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "scalwsd (B) exited $SWS_STATUS"
echo "PASS acme_pebble (A_FP $A_FP)"
