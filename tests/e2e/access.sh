#!/usr/bin/env bash
# Access control per route (doc/limits.md): allow and deny lists with CIDR
# prefixes (the most specific entry wins), IPv6 on a [::1] listener and
# through X-Forwarded-For from a trusted proxy; [admin] allow; HTTP Basic
# authentication from an htpasswd file with bcrypt and SHA-512 crypt users:
# good, wrong and malformed credentials, 401 with its challenge, over
# HTTP/1.1 and HTTP/2; a reload that changes the file, one that breaks it
# (refused, the old users serve on), and a file with a refused hash format;
# a slow hash rests its loop (503 for new passwords, the cache answers).
. "$(dirname "$0")/lib.sh"
command -v htpasswd >/dev/null || { echo "SKIP: htpasswd (apache2-utils) not installed"; exit 77; }
htpasswd -bcB -C 4 "$T/users" alice 'open sesame' 2>/dev/null
python3 -W ignore -c 'import crypt; print("bob:" + crypt.crypt("hunter2", crypt.mksalt(crypt.METHOD_SHA512)))' >>"$T/users"
grep -q '^alice:\$2y\$04\$' "$T/users" && grep -q '^bob:\$6\$' "$T/users" || fail "users file: $(cat "$T/users")"

start_sws "\nevent_loops = 2
[route lan]\npath_prefix = /lan\nscenario = respond\nallow = 127.0.0.0/24, ::1\ndeny = 127.0.0.64/26
[route one]\npath_prefix = /one\nscenario = respond\ndeny = all\nallow = 127.0.0.5
[route fwd]\npath_prefix = /fwd\nscenario = respond\nallow = 2001:db8::/32\ntrusted_proxies = 127.0.0.1
[route priv]\npath_prefix = /priv\nscenario = respond\nauth_basic_file = $T/users\nauth_realm = Staff only
[admin]\nallow = 10.0.0.0/8"
U="http://127.0.0.1:$PORT"
b64() { printf '%s' "$1" | base64 -w0; }

# allow/deny: inside the /24 but in the denied /26 -> 403; outside -> 403
# (there is an allow list); the most specific entry wins either way.
[ "$(codes "$U/lan")" = "200 " ] || fail "lan: 127.0.0.1"
[ "$(codes "$U/lan" --interface 127.0.0.70)" = "403 " ] || fail "lan: 127.0.0.70 is in the denied /26"
[ "$(codes "$U/lan" --interface 127.0.1.1)" = "403 " ] || fail "lan: 127.0.1.1 is outside the allow list"
[ "$(codes --http2-prior-knowledge "$U/lan" --interface 127.0.0.70)" = "403 " ] || fail "lan over HTTP/2"
[ "$(codes "$U/one" --interface 127.0.0.5)" = "200 " ] || fail "one: the /32 beats deny all"
[ "$(codes "$U/one")" = "403 " ] || fail "one: everyone else"
r=$(curl -si "$U/one")
grep -q "^HTTP/1.1 403 Forbidden" <<<"$r" && grep -qi "^Content-Length: 10" <<<"$r" || fail "403 answer: $r"
# Other routes are not gated.
[ "$(codes "$U/" --interface 127.0.0.70)" = "404 " ] || fail "an ungated route (the default: 404)"

# IPv6 through X-Forwarded-For from a trusted proxy; an untrusted peer's
# field is not believed.
[ "$(codes -H 'X-Forwarded-For: 2001:db8::7' "$U/fwd")" = "200 " ] || fail "fwd: 2001:db8::7"
[ "$(codes -H 'X-Forwarded-For: 2001:db9::7' "$U/fwd")" = "403 " ] || fail "fwd: 2001:db9::7"
[ "$(codes -H 'X-Forwarded-For: 2001:db8::7' "$U/fwd" --interface 127.0.0.2)" = "403 " ] ||
    fail "fwd: an untrusted peer's X-Forwarded-For"
[ "$(codes -H 'X-Forwarded-For: not-an-address' "$U/fwd")" = "403 " ] || fail "fwd: garbage is the peer"

# [admin] allow 10.0.0.0/8: 127.0.0.1 is refused.
[ "$(codes "http://127.0.0.1:$ADMIN_PORT/metrics")" = "403 " ] || fail "admin allow"

# Basic: no credentials, then good ones (bcrypt and SHA-512 crypt), then
# each kind of bad one; HTTP/1.1 and HTTP/2.
r=$(curl -si "$U/priv")
grep -q "^HTTP/1.1 401 Unauthorized" <<<"$r" || fail "401: $r"
grep -q '^WWW-Authenticate: Basic realm="Staff only", charset="UTF-8"' <<<"$r" || fail "challenge: $r"
for p in --http1.1 --http2-prior-knowledge; do
    [ "$(codes $p "$U/priv")" = "401 " ] || fail "no credentials ($p)"
    [ "$(codes $p -u 'alice:open sesame' "$U/priv")" = "200 " ] || fail "alice, bcrypt ($p)"
    [ "$(codes $p -u bob:hunter2 "$U/priv")" = "200 " ] || fail "bob, SHA-512 crypt ($p)"
    [ "$(codes $p -u bob:hunter3 "$U/priv")" = "401 " ] || fail "wrong password ($p)"
    [ "$(codes $p -u 'alice:open sesame ' "$U/priv")" = "401 " ] || fail "a password one byte longer ($p)"
    [ "$(codes $p -u carol:hunter2 "$U/priv")" = "401 " ] || fail "unknown user ($p)"
    [ "$(codes $p -H "Authorization: Basic $(b64 bobhunter2)" "$U/priv")" = "401 " ] || fail "no colon ($p)"
    [ "$(codes $p -H 'Authorization: Basic Ym9iOmh1bnRlcjI*' "$U/priv")" = "401 " ] || fail "bad base64 ($p)"
    [ "$(codes $p -H 'Authorization: Basic Ym9iOmh1bnRlcj' "$U/priv")" = "401 " ] || fail "cut base64 ($p)"
    [ "$(codes $p -H "Authorization: Bearer $(b64 bob:hunter2)" "$U/priv")" = "401 " ] || fail "another scheme ($p)"
    [ "$(codes $p -H "Authorization: basic $(b64 bob:hunter2)" "$U/priv")" = "200 " ] || fail "the scheme is case-insensitive ($p)"
done
# The second of two Authorization fields makes it unusable.
r=$(raw "GET /priv HTTP/1.1\r\nHost: a\r\nAuthorization: Basic $(b64 bob:hunter2)\r\nAuthorization: Basic $(b64 bob:hunter2)\r\nConnection: close\r\n\r\n")
grep -q "^HTTP/1.1 401" <<<"$r" || fail "two Authorization fields: $r"
# A refused request with a body keeps the connection for the next one.
r=$(raw "POST /priv HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhelloGET /priv HTTP/1.1\r\nHost: a\r\nAuthorization: Basic $(b64 bob:hunter2)\r\nConnection: close\r\n\r\n")
[ "$(grep -c '^HTTP/1.1 ' <<<"$r")" = 2 ] && grep -q "^HTTP/1.1 200" <<<"$r" || fail "401 then 200 on one connection: $r"
m=$(curl -s "http://127.0.0.1:$ADMIN_PORT/metrics" || true) # refused by [admin] allow: counted below after a reload

# A reload that changes the file: bob goes, carol comes; the realm changes.
htpasswd -bcB -C 4 "$T/users.new" carol 'c4rol' 2>/dev/null
mv "$T/users.new" "$T/users"
sed -i 's/^auth_realm = .*/auth_realm = Staff, again/; s|^allow = 10.0.0.0/8|allow = 127.0.0.1|' "$T/sws.ini"
kill -HUP "$SWS_PID"
wait_log "every loop serves generation 1" || fail "reload 1 not acknowledged"
[ "$(codes -u bob:hunter2 "$U/priv")" = "401 " ] || fail "bob after the reload"
[ "$(codes -u carol:c4rol "$U/priv")" = "200 " ] || fail "carol after the reload"
[ "$(codes --http2-prior-knowledge -u carol:c4rol "$U/priv")" = "200 " ] || fail "carol after the reload, HTTP/2"
grep -q 'realm="Staff, again"' <<<"$(curl -si "$U/priv")" || fail "the reloaded realm"
m=$(curl -s "http://127.0.0.1:$ADMIN_PORT/metrics")
grep -q '^scalwsd_limited_total{route="priv",kind="auth"} [1-9]' <<<"$m" || fail "limited_total auth"
grep -q '^scalwsd_limited_total{route="lan",kind="deny"} [1-9]' <<<"$m" || fail "limited_total deny"

# A broken file (a plaintext password) is refused with its line, and the
# users loaded before serve on.
printf 'carol:c4rol\n' >"$T/users"
kill -HUP "$SWS_PID"
wait_log "users:1: not a bcrypt" || fail "a plaintext password was not refused on reload"
[ "$(codes -u carol:c4rol "$U/priv")" = "200 " ] || fail "the old users after a refused reload"

# At start and --check-config: an MD5 hash is refused with the file and line.
printf 'dave:$apr1$x$0123456789abcdefghijkl\n' >"$T/md5"
printf '[server]\nlisten = 127.0.0.1:0\nauth_basic_file = %s\n' "$T/md5" >"$T/md5.ini"
if out=$("$SWS" --config "$T/md5.ini" --check-config 2>&1); then fail "an MD5 htpasswd accepted: $out"; fi
grep -q "auth_basic_file: $T/md5:1: MD5 hashes are refused" <<<"$out" || fail "MD5 message: $out"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit status $SWS_STATUS"

# A listener on [::1]: the IPv6 peer against allow/deny.
cat >"$T/v6.ini" <<EOF
[server]
listen = [::1]:0
scenario = respond
allow = ::1/128
[route v6deny]
path = /no
scenario = respond
deny = ::/0
EOF
"$SWS" --config "$T/v6.ini" --ready-file "$T/v6.ready" 2>"$T/log" &
SWS_PID=$!
wait_ready "$T/v6.ready" "$SWS_START_SECS" "$SWS_PID" || fail "[::1] listener did not start"
P6=$(ready_port "$T/v6.ready" listen)
c=$(codes -g "http://[::1]:$P6/")
[ "$c" = "200 " ] || fail "::1 allowed: $c"
[ "$(codes -g "http://[::1]:$P6/no")" = "403 " ] || fail "::/0 denied"
[ "$(codes -g --http2-prior-knowledge "http://[::1]:$P6/no")" = "403 " ] || fail "::/0 denied, HTTP/2"
stop_sws

# A slow hash (bcrypt cost 13, ~0.5 s) keeps its loop from the next uncached
# check for three times as long: a new password then gets 503 with
# Retry-After, while the credentials already checked are answered from the
# cache; once the rest is over, the good password passes.
htpasswd -bcB -C 13 "$T/slow" erin 'pa55' 2>/dev/null
start_sws "\nevent_loops = 1\nauth_basic_file = $T/slow"
U="http://127.0.0.1:$PORT"
[ "$(codes -u erin:wrong1 "$U/")" = "401 " ] || fail "slow hash: a wrong password"
r=$(curl -si -u erin:wrong2 "$U/")
grep -q "^HTTP/1.1 503" <<<"$r" && grep -qi "^Retry-After: [1-9]" <<<"$r" || fail "slow hash: a second new password during the rest: $r"
[ "$(codes -u erin:wrong1 "$U/")" = "401 " ] || fail "slow hash: a checked password from the cache"
ok=""
for _ in $(seq 1 40); do
    c=$(codes -u erin:pa55 "$U/")
    [ "$c" = "200 " ] && ok=1 && break
    [ "$c" = "503 " ] || fail "slow hash: the good password: $c"
    sleep 0.5
done
[ -n "$ok" ] || fail "slow hash: the good password never passed"
stop_sws
echo "access: ok"
