#!/usr/bin/env bash
# What the proxy tells its upstream about the client ([proxy] forwarded,
# trusted_proxies, host): a client's own X-Forwarded-* and Forwarded fields
# are replaced unless it is a trusted proxy, then appended to; RFC 7239
# Forwarded; Host as the client's, the upstream's name or a fixed value (and
# the upstream's name for an HTTP/1.0 request without one). Upstreams by name
# (localhost: every address it resolves to is used), and a name that does not
# resolve is a config error naming the file, line and key.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "SKIP: python3"; exit 77; }
start_test_upstream 60
C=(curl -s -m 10)
SPOOF=(-H 'X-Forwarded-For: 6.6.6.6' -H 'X-Forwarded-Proto: https' -H 'X-Forwarded-Host: evil'
    -H 'Forwarded: for=6.6.6.6')
info() { "${C[@]}" -D - -o /dev/null "$@" | grep -i '^X-Info:' | tr -d '\r'; }
has() { case $1 in *"$2"*) ;; *) fail "$3: want '$2' in: $1" ;; esac; }

# Not trusted (the default): every forwarding field of the client is replaced.
start_sws "scenario = proxy\nevent_loops = 1\n[proxy]\nupstream = 127.0.0.1:$UP"
i=$(info "${SPOOF[@]}" "http://127.0.0.1:$PORT/echo")
has "$i" "xff=127.0.0.1;" "untrusted X-Forwarded-For"
has "$i" "xfp=http;" "untrusted X-Forwarded-Proto"
has "$i" "xfh=127.0.0.1:$PORT;" "untrusted X-Forwarded-Host"
has "$i" "fwd=" "untrusted Forwarded is dropped"
case $i in *6.6.6.6* | *evil*) fail "a client's forwarding field reached the upstream: $i" ;; esac
has "$i" "host=127.0.0.1:$PORT;" "Host is the client's by default"
stop_sws

# Trusted: appended to (For), kept (Proto, Host), the other scheme passed on.
start_sws "scenario = proxy\nevent_loops = 1\n[proxy]\nupstream = 127.0.0.1:$UP\ntrusted_proxies = 10.0.0.0/8, 127.0.0.0/8, ::1"
i=$(info "${SPOOF[@]}" "http://127.0.0.1:$PORT/echo")
has "$i" "xff=6.6.6.6, 127.0.0.1;" "trusted X-Forwarded-For"
has "$i" "xfp=https;" "trusted X-Forwarded-Proto"
has "$i" "xfh=evil;" "trusted X-Forwarded-Host"
has "$i" "fwd=for=6.6.6.6" "trusted Forwarded passes in x-forwarded mode"
stop_sws

# RFC 7239, not trusted, a Host with a port (quoted), and host = upstream.
start_sws "scenario = proxy\nevent_loops = 1\n[proxy]\nupstream = 127.0.0.1:$UP\nforwarded = rfc7239\nhost = upstream"
i=$(info "${SPOOF[@]}" -H 'Host: site.example:8443' "http://127.0.0.1:$PORT/echo")
has "$i" 'fwd=for=127.0.0.1;proto=http;host="site.example:8443"' "Forwarded"
has "$i" "xff=;" "rfc7239: no X-Forwarded-For (the client's dropped)"
has "$i" "host=127.0.0.1:$UP;" "host = upstream"
stop_sws

# host = a fixed value; forwarded = off passes the client's fields untouched.
start_sws "scenario = proxy\nevent_loops = 1\n[proxy]\nupstream = 127.0.0.1:$UP\nforwarded = off\nhost = app.internal"
i=$(info "${SPOOF[@]}" "http://127.0.0.1:$PORT/echo")
has "$i" "host=app.internal;" "a fixed host"
has "$i" "xff=6.6.6.6;" "forwarded = off"
# An HTTP/1.0 request without Host gets one (the fixed value here).
out=$(raw 'GET /echo HTTP/1.0\r\n\r\n')
has "$out" "host=app.internal;" "HTTP/1.0 without Host"
stop_sws

# By name: localhost is 127.0.0.1 (the test upstream's) and maybe ::1, where
# nothing listens: a connect refused there goes to the other address, so every
# request is answered; /status lists each address under the name.
start_sws "scenario = proxy\nevent_loops = 1\n[proxy]\nupstream = localhost:$UP\nhost = upstream"
for n in 1 2 3 4 5 6; do
    i=$(info "http://127.0.0.1:$PORT/echo")
    has "$i" "host=localhost:$UP;" "by name, request $n"
done
st=$(curl -s -m 5 "http://127.0.0.1:$ADMIN_PORT/status")
echo "$st" | jq -e --arg u "localhost:$UP" '.upstreams | length >= 1 and all(.upstream == $u)' >/dev/null ||
    fail "/status upstreams: $(echo "$st" | jq -c .upstreams)"
echo "$st" | jq -e --arg a "127.0.0.1:$UP" '[.upstreams[].address] | index($a) != null' >/dev/null ||
    fail "127.0.0.1 not among the addresses: $(echo "$st" | jq -c .upstreams)"
# A reload resolves the name again: the same addresses, and a reloadable key
# (forwarded) changes; a name that no longer resolves refuses the reload.
sed -i 's/^host = upstream$/host = upstream\nforwarded = rfc7239/' "$T/sws.ini"
kill -HUP "$SWS_PID"
for _ in $(seq 1 50); do
    case $(info "http://127.0.0.1:$PORT/echo") in *"fwd=for=127.0.0.1;"*) break ;; esac
    sleep 0.1
done
has "$(info "http://127.0.0.1:$PORT/echo")" "fwd=for=127.0.0.1;proto=http" "forwarded after a reload"
sed -i "s/^upstream = localhost:$UP\$/upstream = no-such-host.invalid:$UP/" "$T/sws.ini"
kill -HUP "$SWS_PID"
for _ in $(seq 1 50); do grep -q 'reload refused' "$T/log" && break; sleep 0.1; done
grep -q "reload refused.*sws.ini:[0-9]*: \[proxy\] upstream: cannot resolve upstream 'no-such-host.invalid:$UP'" "$T/log" ||
    fail "reload with an unresolvable name: $(grep -i reload "$T/log")"
has "$(info "http://127.0.0.1:$PORT/echo")" "host=localhost:$UP;" "after a refused reload"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit $SWS_STATUS"

# A name that does not resolve: the file, the line and the key.
printf '[server]\nscenario = proxy\n[proxy]\nupstream = 127.0.0.1:1, no-such-host.invalid:80\n' >"$T/bad.ini"
out=$("$SWS" --check-config --config "$T/bad.ini" 2>&1) && fail "unresolvable upstream accepted"
has "$out" "$T/bad.ini:4: [proxy] upstream: cannot resolve upstream 'no-such-host.invalid:80'" "config error"
printf '[proxy]\ntrusted_proxies = 10.0.0.0/40\n' >"$T/bad.ini"
out=$("$SWS" --check-config --config "$T/bad.ini" 2>&1) && fail "bad CIDR accepted"
has "$out" "$T/bad.ini:2: [proxy] trusted_proxies: bad CIDR '10.0.0.0/40'" "CIDR error"
# The deployment example is a valid configuration.
EX=$(cd "$(dirname "$0")/../.." && pwd)/examples/proxy.ini
out=$("$SWS" --check-config --config "$EX" 2>&1) || fail "examples/proxy.ini: $out"
echo ok
