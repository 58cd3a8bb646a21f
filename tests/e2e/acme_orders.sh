#!/usr/bin/env bash
# ACME per name against Debian's pebble on loopback (challtestsrv as its DNS,
# every test name at 127.0.0.1; no PEBBLE_VA_ALWAYS_VALID): one TLS scalwsd
# with four [acme NAME] orders and no [tls] pair of its own:
#   a   a.orders.test www.a.orders.test  http-01, renewed often
#   b   b.orders.test                    http-01
#   c   c.orders.test                    tls-alpn-01 (on the TLS listener itself)
#   bad bad.orders.test                  http-01, its name sent to 127.0.0.2: fails
# Each name is served its own certificate (SNI, HTTP/1.1 and HTTP/2), the
# failing order does not hold back the others and shows in /status and
# /metrics, a renews while b keeps its certificate, and SIGHUP keeps every
# issued certificate. acme-tls/1 without a pending challenge is refused.
# HTTP-01 is answered on a plain listener beside the TLS one (a :80 beside a
# :443), whose only route redirects http -> https (issue 31).
. "$(dirname "$0")/lib.sh"

# Refusals first (no pebble needed): one line with file:line, exit 2.
ACC="[acme]\ndirectory = https://ca/dir\nstate_dir = $T/never"
config_refused "$ACC\n[acme a]\nchallenge = tls-alpn-01\ndomains = a.test" \
    "bad.ini:5: [acme a] challenge: tls-alpn-01 is answered on a tls listener"
config_refused "$ACC\n[acme a]\nrenew_before = 30d" "bad.ini:4: [acme a] needs domains"
config_refused "$ACC\n[acme a]\ndirectory = https://other/dir" \
    "bad.ini:5: [acme a] directory: not a key of an order"
config_refused "$ACC\n[acme a]\ndomains = a.test\n[acme a]\ndomains = b.test" \
    "bad.ini:6: [acme a] appears twice"
config_refused "[acme a]\ndomains = a.test" "bad.ini:1: [acme a] needs [acme] directory"
config_refused "$ACC\n[acme a]\ndomains = a.test\n[acme b]\ndomains = b.test A.test" \
    "bad.ini:7: [acme b] domains: A.test is ordered by [acme a] already"
config_refused "$ACC\ndomains = a.test\n[acme b]\ndomains = a.test" \
    "bad.ini:6: [acme b] domains: a.test is ordered by [acme] already"
config_refused "[server]\nlisten = 127.0.0.1:1 tls\n$ACC\n[acme a]\ndomains = a.test" \
    "set [acme] http_listen (e.g. 0.0.0.0:80), or challenge = tls-alpn-01"
config_refused "$ACC\n[acme a]\nchallenge = dns-01" "bad.ini:5: [acme a] challenge: bad value"
# tls-alpn-01 alone needs no plaintext listener; nothing is written by -t.
printf '[server]\nlisten = 127.0.0.1:1 tls\n%b\n[acme c]\ndomains = c.test\nchallenge = tls-alpn-01\n' \
    "$ACC" >"$T/ok.ini"
"$SWS" --check-config --config "$T/ok.ini" >/dev/null 2>"$T/err" ||
    fail "--check-config on tls-alpn-01 orders: $(cat "$T/err")"
[ ! -e "$T/never" ] || fail "--check-config created state_dir"
"$SWS" --print-config --config "$T/ok.ini" >"$T/printed.ini" 2>/dev/null || fail "--print-config"
grep -q '^\[acme c\]' "$T/printed.ini" || fail "--print-config lacks [acme c]"
grep -q '^\[tls c\]' "$T/printed.ini" && fail "--print-config shows the order's pair as [tls c]"
"$SWS" --check-config --config "$T/printed.ini" >/dev/null 2>"$T/err" ||
    fail "--print-config does not read back: $(cat "$T/err")"

. "$(dirname "$0")/lib_pebble.sh"

Z=orders.test
STATE=$T/acme-state
order() { admin_get /status | jq -r --arg o "$1" ".acme_orders[] | select(.order == \$o) | $2"; }
order_is() { [ "$(order "$1" "$2")" = "$3" ]; }
order_ge() { [ "$(order "$1" "$2")" -ge "$3" ] 2>/dev/null; }
# served NAME: the fingerprint and issuer of what the listener serves for NAME.
served() {
    openssl s_client -connect "127.0.0.1:$PORT" -servername "$1" </dev/null 2>/dev/null |
        openssl x509 -noout -fingerprint -sha256 -issuer -ext subjectAltName 2>/dev/null
}
fp() { served "$1" | grep -i fingerprint; }

HTTP_PORT=$(free_port)

SWS_LISTEN_OPTS="tls name=secure" start_sws "listen = 127.0.0.1:$HTTP_PORT name=plain
[route site]
listen = secure
scenario = respond
[route to-https]
listen = plain
scenario = redirect
to = https://\$host\$request_uri
any_host = on
[acme]
directory = https://127.0.0.1:$PB/dir
ca_file = $T/pebble.pem
email = ops@$Z
state_dir = $STATE
retry_min = 1s
retry_max = 3s
renew_before = 5s
[acme a]
domains = a.$Z, www.a.$Z
renew_before = 115s
[acme b]
domains = b.$Z
[acme c]
domains = c.$Z
challenge = tls-alpn-01
[acme bad]
domains = bad.$Z"
order_is a .placeholder true || fail "order a does not start on its placeholder"
[ "$(admin_get /status | jq -r .acme)" = null ] || fail "[acme] without domains shows an order"

# acme-tls/1 with no challenge pending: no_application_protocol (alert 120),
# also when the client offers http/1.1 beside it.
for alpn in acme-tls/1 acme-tls/1,http/1.1; do
    out=$(openssl s_client -connect "127.0.0.1:$PORT" -servername "c.$Z" -alpn "$alpn" \
        </dev/null 2>&1 || true)
    grep -qi "no application protocol\|alert number 120" <<<"$out" ||
        fail "acme-tls/1 ($alpn) without a challenge was not refused: $(tail -3 <<<"$out")"
done

# Pebble: 120 s certificates; HTTP-01 on the plain listener, TLS-ALPN-01 on the TLS one.
curl -sf -X POST "http://127.0.0.1:$CT_MGMT/add-a" \
    -d "{\"host\":\"bad.$Z.\",\"addresses\":[\"127.0.0.2\"]}" >/dev/null || fail "challtestsrv add-a"
pebble_start "$HTTP_PORT" "$PORT" 120
for o in a b c; do
    wait_for 90 "order $o issued" order_ge "$o" .installed 1
done
# c was proved on the TLS listener: Pebble never fetched an HTTP-01 token for it
# (and acme_client.c answers only the challenge type of its order).
grep -q "validate w/ HTTP: http://b.$Z:$HTTP_PORT/" "$T/pebble.log" || fail "b not by HTTP-01"
grep -q "validate w/ HTTP: http://c.$Z" "$T/pebble.log" && fail "c was validated by HTTP-01"
# The plain listener redirects everything else, tokens it does not know too.
got=$(curl -s -m 10 -o /dev/null -w '%{http_code} %{redirect_url}' -H "Host: b.$Z" \
    "http://127.0.0.1:$HTTP_PORT/.well-known/acme-challenge/unknown?x=1")
[ "$got" = "301 https://b.$Z/.well-known/acme-challenge/unknown?x=1" ] ||
    fail "the plain listener's route: $got"
order_is c .challenge tls-alpn-01 || fail "order c's challenge: $(order c .challenge)"
curl -sf --cacert "$T/pebble.pem" "https://127.0.0.1:$PBM/roots/0" >"$T/root.pem" ||
    fail "no root from pebble's management endpoint"

# Each name its own certificate, Pebble's, naming it; over HTTP/1.1 and HTTP/2.
for n in a.$Z www.a.$Z b.$Z c.$Z; do
    s=$(served "$n")
    grep -q Pebble <<<"$s" || fail "$n is not served a Pebble certificate: $s"
    grep -q "DNS:$n" <<<"$s" || fail "$n is served a certificate without its name: $s"
    for v in --http1.1 --http2; do
        got=$(curl -s -m 10 $v --cacert "$T/root.pem" --resolve "$n:$PORT:127.0.0.1" \
            -o /dev/null -w '%{http_code} %{http_version}' "https://$n:$PORT/")
        case "$v:$got" in --http1.1:"200 1.1" | --http2:"200 2") ;; *) fail "$n $v: $got" ;; esac
    done
done
[ "$(fp a.$Z)" != "$(fp b.$Z)" ] && [ "$(fp b.$Z)" != "$(fp c.$Z)" ] ||
    fail "two orders serve one certificate"
openssl x509 -in "$STATE/c/cert.pem" -noout -ext subjectAltName | grep -q "DNS:c.$Z" ||
    fail "state_dir/c/cert.pem is not c's"
[ "$(stat -c %a "$STATE/b/key.pem")" = 600 ] || fail "b's key.pem is not 0600"

# The failing order: counted, shown, its placeholder still served, retried.
wait_for 60 "order bad failing twice" order_ge bad .failures_in_a_row 2
case "$(order bad .last_error)" in *"challenge for bad.$Z failed"*) ;;
*) fail "order bad's last_error: $(order bad .last_error)" ;; esac
order_is bad .state failing || fail "order bad is not failing: $(order bad .state)"
order_is b .last_error null || fail "order b shows an error: $(order b .last_error)"
admin_get /metrics >"$T/metrics"
grep -q '^scalwsd_acme_order_state{order="bad",state="failing"} 1$' "$T/metrics" ||
    fail "/metrics: bad is not failing"
grep -q '^scalwsd_acme_order_state{order="b",state="valid"} 1$' "$T/metrics" ||
    grep -q '^scalwsd_acme_order_state{order="b",state="ordering"} 1$' "$T/metrics" ||
    fail "/metrics: b is neither valid nor ordering"
na=$(awk '$1 == "scalwsd_acme_order_not_after_seconds{order=\"c\"}" {print $2}' "$T/metrics")
[ "${na:-0}" -gt "$(date +%s)" ] || fail "/metrics: c's not_after is '$na'"
grep -q "acme: bad.$Z failed (challenge)" "$T/log" || fail "the failure was not logged"
admin_get / | grep -q 'for (const o of s.acme_orders)' || fail "the status page draws no orders"
served "bad.$Z" | grep -q Pebble && fail "bad.$Z got a certificate"

# Renewal: a (renew_before 115 s of 120) is renewed, b keeps its certificate.
B_FP=$(fp b.$Z)
A_FP=$(fp a.$Z)
wait_for 90 "order a renewed" order_ge a .installed 2
wait_for 20 "a's new certificate served" bash -c "[ \"\$(openssl s_client -connect 127.0.0.1:$PORT \
    -servername a.$Z </dev/null 2>/dev/null | openssl x509 -noout -fingerprint -sha256)\" != \"$A_FP\" ]"
[ "$(fp b.$Z)" = "$B_FP" ] || fail "b's certificate changed while a renewed"
order_is b .installed 1 || fail "b was installed again: $(order b .installed)"

# SIGHUP: the configuration's list names the orders' files, so every issued
# certificate is served after it, as it was before.
before_c=$(fp c.$Z)
gens=$(grep -c "every loop serves generation" "$T/log" || true)
kill -HUP "$SWS_PID"
wait_for 30 "the SIGHUP reload" bash -c \
    "[ \$(grep -c 'SIGHUP: every loop serves generation' '$T/log') -ge 1 ]"
for n in a.$Z b.$Z c.$Z; do
    served "$n" | grep -q Pebble || fail "$n lost its certificate in the SIGHUP reload"
done
[ "$(fp b.$Z)" = "$B_FP" ] && [ "$(fp c.$Z)" = "$before_c" ] ||
    fail "SIGHUP changed a served certificate"
echo "reloads before SIGHUP: $gens"
# A changed order needs a restart: refused, logged, the old one serves on.
sed -i "s/^domains = b.$Z\$/domains = b.$Z, b2.$Z/" "$T/sws.ini"
grep -q "^domains = b.$Z, b2.$Z" "$T/sws.ini" || fail "the ini was not edited"
kill -HUP "$SWS_PID"
wait_for 30 "the refused reload" grep -q \
    "SIGHUP: reload refused, still serving the previous configuration: \[acme NAME\] sections changed; that needs a restart" \
    "$T/log"
[ "$(fp b.$Z)" = "$B_FP" ] || fail "b changed after a refused reload"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "scalwsd exited $SWS_STATUS"
echo "PASS acme_orders"
