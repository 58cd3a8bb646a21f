#!/usr/bin/env bash
# Several listeners (issue 31): a plain one whose route redirects http ->
# https, a TLS one serving static files and an IPv6 ::1 one beside them, each
# on port 0; routes limited to listeners (404 on the others), HTTP/1.1 and
# HTTP/2 on each; the ready file, /status and /metrics name every listener;
# SIGHUP reloads a route's listen and refuses a listener's change; SIGUSR2
# restarts keep all of them listening with no failed request; every accept
# route with two listeners, one with http2=off; the configuration errors (a
# listener that does not exist, an address twice).
. "$(dirname "$0")/lib.sh"
command -v openssl >/dev/null || { echo "SKIP: no openssl(1)"; exit 77; }
python3 -c 'import socket; socket.socket(socket.AF_INET6).bind(("::1", 0))' 2>/dev/null ||
    { echo "SKIP: no IPv6 loopback"; exit 77; }

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj "/CN=localhost" -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
    -keyout "$T/key.pem" -out "$T/cert.pem" 2>/dev/null || fail "openssl req"
mkdir -p "$T/www"
echo "the site" >"$T/www/index.html"

# The configuration errors first: -t names the file, the line and the key.
config_refused '[server]\nlisten = 127.0.0.1:0 name=plain\n[route r]\nhost = a.test\nlisten = plain, nope\nscenario = respond\n' \
    'bad.ini:5: [route r] listen: no listener is named '"'nope'"' (the listeners: plain)'
config_refused '[server]\nlisten = 127.0.0.1:8080\nlisten = 127.0.0.1:8080 tls\n' \
    'bad.ini:3: [server] listen: 127.0.0.1:8080 is listened on already'
config_refused '[server]\nlisten = 127.0.0.1:0 nmae=x\n' "bad listener option 'nmae=x'"
# ACME's HTTP-01 is answered on a plain listener beside a tls one: no
# [acme] http_listen needed then (with tls listeners only, it is).
printf '[server]\nlisten = 127.0.0.1:0 name=plain\nlisten = 127.0.0.1:0 tls\n[acme]\ndirectory = https://ca/dir\ndomains = a.test\nstate_dir = %s/acme\n' \
    "$T" >"$T/acme.ini"
"$SWS" -t -c "$T/acme.ini" >/dev/null 2>&1 || fail "-t refused [acme] beside a plain listener"
config_refused '[server]\nlisten = 127.0.0.1:0 tls\nlisten = [::1]:0 tls\n[acme]\ndirectory = https://ca/dir\ndomains = a.test\n' \
    'with only tls listeners set [acme] http_listen'


SWS_LISTEN_OPTS=name=plain
start_sws "listen = 127.0.0.1:0 tls name=secure
listen = [::1]:0 name=v6
event_loops = 2
[tls]
cert = $T/cert.pem
key = $T/key.pem
[route to-https]
listen = plain
scenario = redirect
to = https://\$host\$request_uri
any_host = on
[route site]
listen = secure, v6
path_prefix = /
scenario = static
root = $T/www
[route v6-only]
listen = v6
path = /v6
scenario = respond
body = six"
TLS_PORT=$(ready_listen_port "$T/ready" secure)
V6_PORT=$(ready_listen_port "$T/ready" v6)
[ -n "$TLS_PORT" ] && [ -n "$V6_PORT" ] || fail "ready file: $(cat "$T/ready")"
# The first line is still the first listener's, for readers of one port.
[ "$(head -1 "$T/ready")" = "listen 127.0.0.1:$PORT name=plain" ] || fail "ready: $(cat "$T/ready")"
grep -qx "listen 127.0.0.1:$TLS_PORT tls name=secure" "$T/ready" || fail "ready: $(cat "$T/ready")"
grep -qx "listen \[::1\]:$V6_PORT name=v6" "$T/ready" || fail "ready: $(cat "$T/ready")"

https() { curl -s -m 10 --cacert "$T/cert.pem" --resolve "localhost:$TLS_PORT:127.0.0.1" "$@"; }

check_all() { # every listener, HTTP/1.1 and HTTP/2
    local h v
    for v in --http1.1 --http2-prior-knowledge; do
        h=$(curl -s -m 10 "$v" -D - -o /dev/null "http://localhost:$PORT/a/b?c=d")
        grep -qi "^location: https://localhost/a/b?c=d" <<<"$h" || fail "plain $v: $h"
        grep -q " 301" <<<"$h" || fail "plain $v status: $h"
        [ "$(curl -s -m 10 "$v" "http://[::1]:$V6_PORT/")" = "the site" ] || fail "v6 $v"
        [ "$(curl -s -m 10 "$v" "http://[::1]:$V6_PORT/v6")" = "six" ] || fail "v6 route $v"
    done
    [ "$(https --http1.1 "https://localhost:$TLS_PORT/")" = "the site" ] || fail "tls http/1.1"
    [ "$(https --http2 -o /dev/null -w '%{http_code} %{http_version}' \
        "https://localhost:$TLS_PORT/")" = "200 2" ] || fail "tls h2"
    # A route limited to one listener is not on the others: the default (404).
    [ "$(https -o /dev/null -w '%{http_code}' "https://localhost:$TLS_PORT/v6")" = 404 ] ||
        fail "v6-only route on the tls listener"
    [ "$(curl -s -m 10 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/v6")" = 301 ] ||
        fail "v6-only route on the plain listener"
    # The plain listener does not speak TLS, the TLS one not plaintext.
    https -o /dev/null "https://localhost:$PORT/" && fail "TLS on the plain listener"
    [ "$(curl -s -m 10 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$TLS_PORT/")" != 200 ] ||
        fail "plaintext on the tls listener"
}
check_all

st=$(curl -s -m 10 "http://127.0.0.1:$ADMIN_PORT/status")
[ "$(jq -r '[.listeners[] | "\(.name) \(.address) \(.tls)"] | join(",")' <<<"$st")" = \
    "plain 127.0.0.1:$PORT false,secure 127.0.0.1:$TLS_PORT true,v6 [::1]:$V6_PORT false" ] ||
    fail "/status listeners: $(jq -c .listeners <<<"$st")"
[ "$(jq -r '.routes[] | select(.name == "site") | .listen | join(",")' <<<"$st")" = "secure,v6" ] ||
    fail "/status routes: $(jq -c .routes <<<"$st")"
m=$(curl -s -m 10 "http://127.0.0.1:$ADMIN_PORT/metrics")
for l in plain secure v6; do
    n=$(awk -v l="listener=\"$l\"" 'index($1, "scalwsd_listener_connections_total{") == 1 &&
        index($1, l) { print $2 }' <<<"$m")
    [ "${n:-0}" -gt 0 ] || fail "/metrics for $l: $(grep listener_connections <<<"$m")"
done

# SIGHUP: a route's listen is reloadable, the listeners are not; a refused
# reload keeps serving the previous configuration on every listener.
reload_says() { # reload_says WANT: SIGHUP, then until the log says WANT (30 s)
    local before end=$((SECONDS + 30))
    before=$(grep -c "SIGHUP: " "$T/log" || true)
    kill -HUP "$SWS_PID"
    until [ "$(grep -c "SIGHUP: " "$T/log" || true)" -gt "$before" ] && grep -q "$1" "$T/log"; do
        [ "$SECONDS" -le "$end" ] || fail "reload: no '$1' in the log"
        sleep 0.05
    done
}
cp "$T/sws.ini" "$T/sws.ini.orig"
sed -i 's/^listen = secure, v6$/listen = secure, nope/' "$T/sws.ini"
reload_says "reload refused, .*\[route site\] listen: no listener is named 'nope'"
sed -i 's/^listen = secure, nope$/listen = secure/' "$T/sws.ini"
reload_says "every loop serves generation 1"
[ "$(curl -s -m 10 -o /dev/null -w '%{http_code}' "http://[::1]:$V6_PORT/")" = 404 ] ||
    fail "the site is still on v6 after the reload"
[ "$(https "https://localhost:$TLS_PORT/")" = "the site" ] || fail "tls after the reload"
sed -i 's/^listen = \[::1\]:0 name=v6$/& http2=off/' "$T/sws.ini"
reload_says "reload refused, .*\[server\] listen changed"
cp "$T/sws.ini.orig" "$T/sws.ini"
reload_says "every loop serves generation 2"
check_all

# SIGUSR2 restarts under requests to the plain and the tls listener: each
# restart keeps both listening, and no request fails.
load() { # load KIND: requests until $T/stop, failures counted in $T/fail.KIND
    local n=0 f=0 code
    while [ ! -e "$T/stop" ] && [ "$n" -lt 20000 ]; do
        if [ "$1" = tls ]; then
            code=$(https -o /dev/null -w '%{http_code}' "https://localhost:$TLS_PORT/" || true)
            [ "$code" = 200 ] || f=$((f + 1))
        else
            code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/" || true)
            [ "$code" = 301 ] || f=$((f + 1))
        fi
        n=$((n + 1))
    done
    echo "$n $f" >"$T/fail.$1"
}
rm -f "$T/stop"
load plain &
lp=$!
load tls &
lt=$!
# And keep-alive, Connection: close and pipelined clients on the IPv6 one.
python3 "$(dirname "$0")/mixed_load.py" ::1 "$V6_PORT" --stop "$T/stop" --seconds 120 --ka 2 \
    --close 2 --pipe 1 --depth 8 --expect-body "the site" >"$T/mixed" 2>"$T/mixed.err" &
lm=$!
# The restarts begin once that load is under way (python3 takes a moment to
# start; three restarts can be over before it): the v6 listener has accepted
# its connections (published once a second).
v6_conns() {
    curl -s -m 5 "http://127.0.0.1:$ADMIN_PORT/metrics" |
        awk '/^scalwsd_listener_connections_total[{]listener="v6"/ { print $2 }'
}
base=$(v6_conns)
end=$((SECONDS + 30))
until [ "$(v6_conns)" -gt $((base + 5)) ]; do
    [ "$SECONDS" -le "$end" ] || fail "no load on ::1 within 30 s: $(cat "$T/mixed.err")"
    sleep 0.1
done
for i in 1 2 3; do
    restart_new "restart $i"
    wait_exit "$OLD" 30 "restart $i: old process $OLD (drained)"
done
touch "$T/stop"
wait "$lp" "$lt"
wait "$lm" || fail "mixed load on ::1: $(cat "$T/mixed.err")"
res=$(cat "$T/mixed")
[ "$(jq '.failed + .resets + .connect_errors' <<<"$res")" = 0 ] ||
    fail "failed requests on ::1 across restarts: $res"
[ "$(jq .ok <<<"$res")" -gt 100 ] || fail "too little load on ::1: $res"
read -r np fp <"$T/fail.plain"
read -r nt ft <"$T/fail.tls"
[ "$fp" = 0 ] && [ "$ft" = 0 ] ||
    fail "failed requests across restarts: plain $fp of $np, tls $ft of $nt"
[ "$np" -gt 0 ] && [ "$nt" -gt 0 ] || fail "no load: plain $np, tls $nt"
# The same ports, each listener on its own socket still.
[ "$(ready_listen_port "$T/ready" secure)" = "$TLS_PORT" ] || fail "ready: $(cat "$T/ready")"
[ "$(ready_listen_port "$T/ready" v6)" = "$V6_PORT" ] || fail "ready: $(cat "$T/ready")"
check_all
echo "listeners: plain $np, tls $nt, ::1 $(jq .ok <<<"$res") requests across 3 restarts, none failed" >&2
stop_by_pid() { # the last process is not this shell's child: stopped by its pid
    kill -TERM "$SWS_PID"
    local end=$((SECONDS + 30))
    while kill -0 "$SWS_PID" 2>/dev/null; do
        [ "$SECONDS" -le "$end" ] || fail "did not stop on SIGTERM"
        sleep 0.05
    done
    SWS_PID=""
}
stop_by_pid

# Every accept route with two listeners, one of them without HTTP/2.
for accept in handoff "handoff\nacceptors = 2" acceptor exclusive herd reuse-port "reuse-port\nevent_loops = 0"; do
    SWS_LISTEN_OPTS=name=a
    start_sws "listen = [::1]:0 name=b http2=off\nevent_loops = 2\naccept = $accept
[route b]\nlisten = b\npath = /\nscenario = respond\nbody = bee"
    B_PORT=$(ready_listen_port "$T/ready" b)
    for i in 1 2 3 4; do
        [ "$(curl -s -m 10 --http2-prior-knowledge "http://127.0.0.1:$PORT/")" = "Not Found" ] ||
            fail "accept $accept: listener a, request $i"
        [ "$(curl -s -m 10 "http://[::1]:$B_PORT/")" = bee ] ||
            fail "accept $accept: listener b, request $i"
    done
    # http2=off: the preface is no HTTP/1.1 request.
    v=$(curl -s -m 10 --http2-prior-knowledge -o /dev/null -w '%{http_code}' "http://[::1]:$B_PORT/" || true)
    [ "$v" != 200 ] || fail "accept $accept: HTTP/2 on an http2=off listener"
    stop_sws
    [ "$SWS_STATUS" = 0 ] || fail "accept $accept: exit $SWS_STATUS"
done
echo ok
