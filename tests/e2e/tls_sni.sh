#!/usr/bin/env bash
# A certificate per name (SNI) on one tls listener: [tls NAME] sections made
# here by openssl req, each serving the names of its own subjectAltName.
# Three names get their own certificate (openssl s_client -servername, curl
# --resolve), a wildcard covers one label, an unknown or absent name gets the
# default; an RSA and an ECDSA certificate for one name are chosen by the
# client's signature algorithms; HTTP/2 over ALPN for every name; a session
# of one name does not resume under another; /status and --print-config list
# each certificate; a SIGHUP replaces one certificate while a connection to
# another stays open, and a broken one is refused while the others reload;
# unknown_name = refuse answers alert 112 (unrecognized_name).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_tls.sh"

mkcert a ec a.test,www.a.test
mkcert a-rsa rsa a.test,www.a.test
mkcert b ec b.test
mkcert b2 ec b.test
mkcert c ec '*.c.test'
mkcert c2 ec '*.c.test'
mkcert d ec d.test
for f in a b c; do cp "$T/$f.pem" "$T/$f.live.pem"; cp "$T/$f.key" "$T/$f.live.key"; done
cp "$T/a.pem" "$T/a2.pem" # the same a again on reload: its names keep being served

sections() { # the [tls NAME] sections: b first (the default unless marked)
    printf '[tls b]\ncert = %s\nkey = %s\n' "$T/b.live.pem" "$T/b.live.key"
    printf '[tls a]\ncert = %s\nkey = %s\n' "$T/a.live.pem" "$T/a.live.key"
    printf '[tls a-rsa]\ncert = %s\nkey = %s\n' "$T/a-rsa.pem" "$T/a-rsa.key"
    printf '[tls c]\ncert = %s\nkey = %s\n' "$T/c.live.pem" "$T/c.live.key"
}

# --print-config shows each section and what its certificate serves; -t reads them.
printf '[server]\nlisten = 127.0.0.1:0 tls\n%s\n' "$(sections)" >"$T/p.ini"
out=$("$SWS" --print-config -c "$T/p.ini") || fail "--print-config: $out"
grep -q "^\[tls a-rsa\] ; $T/p.ini:" <<<"$out" || fail "--print-config lacks [tls a-rsa]: $out"
grep -q "^; serves a.test www.a.test (RSA 2048, notAfter 20" <<<"$out" ||
    fail "--print-config does not say what a-rsa serves: $out"
grep -q "^; serves \*.c.test (ECDSA P-256, notAfter" <<<"$out" || fail "--print-config: c: $out"
"$SWS" -c <(printf '%s\n' "$out") -t >/dev/null 2>&1 || fail "--print-config does not read back"
"$SWS" -t -c "$T/p.ini" >/dev/null || fail "-t refused the sections"

# Refusals, with file and line: a key of another certificate, a name two
# certificates of one key type claim, two defaults, a section without a key.
printf '[server]\nlisten = 127.0.0.1:0 tls\n[tls x]\ncert = %s\nkey = %s\n' "$T/a.pem" "$T/b.key" \
    >"$T/bad.ini"
out=$("$SWS" -t -c "$T/bad.ini" 2>&1) && fail "-t accepted a key of another certificate"
case $out in *"bad.ini:5: [tls x] key $T/b.key does not match the certificate"*) ;;
    *) fail "-t said: $out" ;; esac
printf '[server]\nlisten = 127.0.0.1:0 tls\n%s\n[tls b-again]\ncert = %s\nkey = %s\n' \
    "$(sections)" "$T/b2.pem" "$T/b2.key" >"$T/bad.ini"
out=$("$SWS" -t -c "$T/bad.ini" 2>&1) && fail "-t accepted b.test twice"
case $out in *"bad.ini:16: [tls b-again] cert $T/b2.pem: b.test is served by [tls b] already"*) ;;
    *) fail "-t said: $out" ;; esac
printf '[server]\nlisten = 127.0.0.1:0 tls\n[tls a]\ncert = %s\nkey = %s\ndefault = on\n[tls b]\ncert = %s\nkey = %s\ndefault = on\n' \
    "$T/a.pem" "$T/a.key" "$T/b.pem" "$T/b.key" >"$T/bad.ini"
out=$("$SWS" -t -c "$T/bad.ini" 2>&1) && fail "-t accepted two defaults"
case $out in *"bad.ini:7: [tls b] default = on: [tls a] is the default already"*) ;;
    *) fail "-t said: $out" ;; esac
printf '[server]\nlisten = 127.0.0.1:0 tls\n[tls a]\ncert = %s\n' "$T/a.pem" >"$T/bad.ini"
out=$("$SWS" -t -c "$T/bad.ini" 2>&1) && fail "-t accepted a section without a key"
case $out in *"bad.ini:3: [tls a] needs cert and key"*) ;; *) fail "-t said: $out" ;; esac
printf '[server]\nlisten = 127.0.0.1:0 tls\n[tls a]\ncert = %s\nkey = %s\nnames = x\n' \
    "$T/a.pem" "$T/a.key" >"$T/bad.ini"
out=$("$SWS" -t -c "$T/bad.ini" 2>&1) && fail "-t accepted an unknown key"
case $out in *"bad.ini:6: [tls a] names: unknown key"*) ;; *) fail "-t said: $out" ;; esac

SWS_LISTEN_OPTS=tls
start_sws "event_loops = 2\n$(sections)"
grep -q "tls: 4 certificates for 4 names; an unknown or absent name gets \[tls b\]" "$T/log" ||
    fail "no certificate summary at start"

# Each name its own certificate; the wildcard covers one label only.
[ "$(served a.test)" = "$(fingerprint "$T/a.pem")" ] || fail "a.test not served a"
[ "$(served WWW.A.test.)" = "$(fingerprint "$T/a.pem")" ] || fail "WWW.A.test. (case, dot) not served a"
[ "$(served b.test)" = "$(fingerprint "$T/b.pem")" ] || fail "b.test not served b"
[ "$(served x.c.test)" = "$(fingerprint "$T/c.pem")" ] || fail "x.c.test not served the wildcard"
# A HelloRetryRequest (no key share the server takes): the second ClientHello
# meets the callback again, on the context the first one chose.
[ "$(served x.c.test -groups ffdhe2048:X25519)" = "$(fingerprint "$T/c.pem")" ] ||
    fail "x.c.test after a HelloRetryRequest not served the wildcard"
[ "$(served y.x.c.test)" = "$(fingerprint "$T/b.pem")" ] || fail "two labels under *.c.test matched it"
[ "$(served c.test)" = "$(fingerprint "$T/b.pem")" ] || fail "c.test matched *.c.test"
[ "$(served unknown.test)" = "$(fingerprint "$T/b.pem")" ] || fail "an unknown name not served the default"
[ "$(served -)" = "$(fingerprint "$T/b.pem")" ] || fail "no SNI not served the default"

# RSA or ECDSA by the client's signature algorithms (TLS 1.3), and by the
# cipher suite's (TLS 1.2).
[ "$(served a.test -sigalgs rsa_pss_rsae_sha256:rsa_pkcs1_sha256)" = "$(fingerprint "$T/a-rsa.pem")" ] ||
    fail "an RSA-only client not served the RSA certificate"
[ "$(served a.test -sigalgs ecdsa_secp256r1_sha256)" = "$(fingerprint "$T/a.pem")" ] ||
    fail "an ECDSA-only client not served the ECDSA certificate"
[ "$(served a.test -tls1_2 -cipher ECDHE-RSA-AES128-GCM-SHA256)" = "$(fingerprint "$T/a-rsa.pem")" ] ||
    fail "TLS 1.2 ECDHE-RSA not served the RSA certificate"
[ "$(served a.test -tls1_2 -cipher ECDHE-ECDSA-AES128-GCM-SHA256)" = "$(fingerprint "$T/a.pem")" ] ||
    fail "TLS 1.2 ECDHE-ECDSA not served the ECDSA certificate"

# curl, verifying each name against its own certificate, over HTTP/2 (ALPN)
# and HTTP/1.1.
for n in a.test www.a.test b.test x.c.test; do
    ca=$T/a.pem
    case $n in b.test) ca=$T/b.pem ;; x.c.test) ca=$T/c.pem ;; esac
    out=$(curl -sS -m 10 -o /dev/null -w '%{http_version} %{http_code}' --cacert "$ca" \
        --resolve "$n:$PORT:127.0.0.1" "https://$n:$PORT/" 2>&1) || fail "curl $n: $out"
    [ "$out" = "2 200" ] || fail "$n over HTTP/2: $out"
    out=$(curl -sS -m 10 --http1.1 --cacert "$ca" --resolve "$n:$PORT:127.0.0.1" \
        "https://$n:$PORT/" 2>&1) || fail "curl --http1.1 $n: $out"
    [ "$out" = "Hello from scalwsd" ] || fail "$n over HTTP/1.1: $out"
done

# Resumption: under the name the session was made for, not under another
# name (another certificate, or another name of the same wildcard).
for p in -tls1_3 -tls1_2; do
    rm -f "$T/sess"
    sc() { printf 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' |
        timeout 10 openssl s_client -connect "127.0.0.1:$PORT" "$p" -ign_eof "$@" 2>&1; }
    sc -servername x.c.test -sess_out "$T/sess" >/dev/null
    [ -s "$T/sess" ] || fail "$p: no session saved"
    case $(sc -servername x.c.test -sess_in "$T/sess") in *"Reused, TLSv1."*) ;;
        *) fail "$p: x.c.test did not resume its own session" ;; esac
    for other in a.test y.c.test; do
        out=$(sc -servername "$other" -sess_in "$T/sess")
        case $out in *"Reused, TLSv1."*) fail "$p: a session of x.c.test resumed as $other" ;; esac
        case $out in *"New, TLSv1."*) ;; *) fail "$p: $other: no full handshake: $out" ;; esac
    done
done

# /status: every certificate, its names, key type and notAfter.
st=$(curl -s "http://127.0.0.1:$ADMIN_PORT/status")
[ "$(jq -r '.tls.certificates | length' <<<"$st")" = 4 ] || fail "/status: $st"
[ "$(jq -r '.tls.certificates[] | select(.section == "[tls a-rsa]") | .key' <<<"$st")" = "RSA 2048" ] ||
    fail "/status key type: $st"
[ "$(jq -r '.tls.certificates[] | select(.section == "[tls c]") | .names[0]' <<<"$st")" = "*.c.test" ] ||
    fail "/status names: $st"
[ "$(jq -r '.tls.certificates[] | select(.default) | .section' <<<"$st")" = "[tls b]" ] ||
    fail "/status default: $st"
jq -e '.tls.certificates[0].not_after | test("^20[0-9-]+T[0-9:]+Z$")' <<<"$st" >/dev/null ||
    fail "/status notAfter: $st"

# Reload: a connection to a.test stays open while b's certificate is
# replaced and a new section (d) is added.
exec 5< <(hold_tls a.test "$T/a.pem" "$T/held" 30)
for _ in $(seq 1 100); do [ -s "$T/held" ] && break; sleep 0.1; done
[ -s "$T/held" ] || fail "the held connection did not open"
cp "$T/b2.pem" "$T/b.live.pem"
cp "$T/b2.key" "$T/b.live.key"
{ printf '[server]\nlisten = 127.0.0.1:0 tls\nevent_loops = 2\n%s\n' "$(sections)"
  printf '[tls d]\ncert = %s\nkey = %s\n[admin]\nlisten = 127.0.0.1:0\n' "$T/d.pem" "$T/d.key"; } \
    >"$T/sws.ini"
kill -HUP "$SWS_PID"
wait_log "every loop serves generation 1" || fail "reload 1 did not finish"
grep -q "certificate refused" "$T/log" && fail "reload 1 refused a certificate"
[ "$(served b.test)" = "$(fingerprint "$T/b2.pem")" ] || fail "b.test not served the new b"
[ "$(served d.test)" = "$(fingerprint "$T/d.pem")" ] || fail "the added d.test not served"
[ "$(served a.test)" = "$(fingerprint "$T/a.pem")" ] || fail "a.test changed"

# A broken certificate on reload: refused and logged, the one it had keeps
# serving, and the others are reloaded (b goes back to the first b).
echo "not a certificate" >"$T/c.live.pem"
cp "$T/b.pem" "$T/b.live.pem"
cp "$T/b.key" "$T/b.live.key"
kill -HUP "$SWS_PID"
wait_log "every loop serves generation 2" || fail "reload 2 did not finish"
grep -q "SIGHUP: certificate refused: $T/sws.ini:[0-9]*: \[tls c\] cert $T/c.live.pem: no PEM certificate .*; still serving the one loaded before" \
    "$T/log" || fail "the broken certificate not refused clearly"
[ "$(served x.c.test)" = "$(fingerprint "$T/c.pem")" ] || fail "the refused c stopped serving"
[ "$(served b.test)" = "$(fingerprint "$T/b.pem")" ] || fail "b not reloaded beside a refused c"
st=$(curl -s "http://127.0.0.1:$ADMIN_PORT/status")
jq -e '.tls.certificates[] | select(.section == "[tls c]") | .served and (.refused | test("no PEM certificate"))' \
    <<<"$st" >/dev/null || fail "/status does not show c refused: $st"
# A key that no longer matches: the same.
cp "$T/c2.pem" "$T/c.live.pem"
kill -HUP "$SWS_PID"
wait_log "every loop serves generation 3" || fail "reload 3 did not finish"
grep -q "\[tls c\] key $T/c.live.key does not match the certificate in $T/c.live.pem; still serving" \
    "$T/log" || fail "a mismatched key not refused"
[ "$(served x.c.test)" = "$(fingerprint "$T/c.pem")" ] || fail "c changed after a mismatched key"

touch "$T/held.go"
read -r -t 30 line <&5 || fail "the held connection did not answer after the reloads"
[ "$line" = "after-reload 1" ] || fail "the connection open across the reloads: $line"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit status $SWS_STATUS"

# unknown_name = refuse: a known name is served, an unknown one or none gets
# unrecognized_name (112); both counted.
cp "$T/c.pem" "$T/c.live.pem"
{ printf '[server]\nlisten = 127.0.0.1:0 tls\nevent_loops = 1\n[tls]\nunknown_name = refuse\n%s\n' \
    "$(sections)"; printf '[admin]\nlisten = 127.0.0.1:0\n'; } >"$T/refuse.ini"
rm -f "$T/ready"
"$SWS" -c "$T/refuse.ini" --ready-file "$T/ready" 2>"$T/log" &
SWS_PID=$!
wait_ready "$T/ready" "$SWS_START_SECS" "$SWS_PID" || fail "scalwsd did not start (refuse)"
PORT=$(ready_port "$T/ready" listen)
ADMIN_PORT=$(ready_port "$T/ready" admin)
grep -q "an unknown or absent name is refused" "$T/log" || fail "the start line does not say refuse"
[ "$(served b.test)" = "$(fingerprint "$T/b.pem")" ] || fail "refuse: b.test not served"
out=$(timeout 10 openssl s_client -connect "127.0.0.1:$PORT" -servername nope.test </dev/null 2>&1) || true
case $out in *"alert unrecognized name"* | *"alert number 112"*) ;;
    *) fail "refuse: an unknown name got no unrecognized_name: $out" ;; esac
out=$(timeout 10 openssl s_client -connect "127.0.0.1:$PORT" -noservername </dev/null 2>&1) || true
case $out in *"alert unrecognized name"* | *"alert number 112"*) ;;
    *) fail "refuse: no SNI got no unrecognized_name: $out" ;; esac
[ "$(metric scalwsd_tls_failed_total 'reason="unknown_name"')" = 2 ] ||
    fail "refusals not counted as unknown_name: $(curl -s "http://127.0.0.1:$ADMIN_PORT/metrics" | grep tls_failed)"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit status $SWS_STATUS (refuse)"
echo "ok"
