#!/usr/bin/env bash
# The proxy in front of a real upstream, nginx (Debian nginx-light), as people
# deploy it (issue 22's "real upstreams"): routes with strip_prefix, the Host
# sent upstream (the client's, the upstream's name, a fixed value, and one for
# an HTTP/1.0 request that had none: nginx answers 400 to an HTTP/1.1 request
# without Host), forwarding fields replaced for an untrusted client, RFC 7239
# Forwarded, bodies, keep-alive reuse of nginx connections, and active health
# checks that nginx logs and /status reports. nginx echoes what it received in
# its answer (`return 200 "..."`), so each check reads what the upstream saw.
. "$(dirname "$0")/lib.sh"
command -v nginx >/dev/null || { echo "SKIP: nginx not installed (nginx-light)"; exit 77; }
# nginx_conf PORT: an upstream that answers with what it received.
nginx_conf() {
    nginx_preamble
    cat <<CONF
events { worker_connections 256; }
http {
    log_format seen '\$request \$http_host';
    access_log $T/nginx/access.log seen;
    client_body_temp_path $T/nginx/body;
    keepalive_requests 1000;
    server {
        listen 127.0.0.1:$1;
        location = /health { return 200 "up\n"; }
        location / {
            return 200 "uri=\$request_uri host=\$http_host proto=\$server_protocol xff=\$http_x_forwarded_for xfp=\$http_x_forwarded_proto xfh=\$http_x_forwarded_host fwd=\$http_forwarded len=\$content_length nreq=\$connection_requests\n";
        }
    }
}
CONF
}
start_nginx nginx_conf /health
NP=$NGINX_PORT

start_sws "event_loops = 2
[route site]\npath_prefix = /\nscenario = respond\nbody = site
[route api]\npath_prefix = /api/\nscenario = proxy\nupstream = 127.0.0.1:$NP\nstrip_prefix = on
health_check = /health\nhealth_interval = 1s
[route named]\npath_prefix = /named/\nscenario = proxy\nupstream = localhost:$NP\nproxy.host = upstream
forwarded = rfc7239\nstrip_prefix = on
[route fixed]\npath_prefix = /fixed/\nscenario = proxy\nupstream = 127.0.0.1:$NP\nproxy.host = app.example
forwarded = off"
URL="http://127.0.0.1:$PORT"
get() { curl -s -m 10 "$@"; }
expect() { # what-it-is, answer, pattern...
    local what=$1 got=$2
    shift 2
    for p in "$@"; do
        [[ "$got" == *"$p"* ]] || fail "$what: no '$p' in: $got"
    done
}

[ "$(get "$URL/")" = site ] || fail "the respond route"
# The client's Host, X-Forwarded-* naming it; a path with its query, stripped.
a=$(get "$URL/api/x/y?q=1")
expect "/api/ (site proxy)" "$a" "uri=/x/y?q=1 " "host=127.0.0.1:$PORT " "proto=HTTP/1.1 " \
    "xff=127.0.0.1 " "xfp=http " "xfh=127.0.0.1:$PORT " "fwd= "
# An untrusted client's forwarding fields are replaced, not appended to.
a=$(get -H 'X-Forwarded-For: 6.6.6.6' -H 'X-Forwarded-Proto: https' -H 'Forwarded: for=6.6.6.6' \
    "$URL/api/spoof")
expect "spoofed fields" "$a" "xff=127.0.0.1 " "xfp=http " "fwd= "
# HTTP/1.0 without Host: forwarded with one, so nginx does not answer 400.
a=$(raw 'GET /api/old HTTP/1.0\r\n\r\n')
expect "HTTP/1.0 without Host" "$a" "HTTP/1.1 200" "Connection: close" "uri=/old " "host=127.0.0.1:$NP "
# host = upstream (a name, resolved at start) and RFC 7239 Forwarded.
a=$(get "$URL/named/n")
expect "host = upstream" "$a" "uri=/n " "host=localhost:$NP " "xff= " "fwd=for=127.0.0.1;"
# A fixed Host; forwarded = off adds nothing and passes the client's fields
# as they came (doc/operations.md).
a=$(get -H 'X-Forwarded-For: 6.6.6.6' "$URL/fixed/f")
expect "host = app.example" "$a" "uri=/fixed/f " "host=app.example " "xff=6.6.6.6 " "xfp= " "fwd= "

# Bodies: nginx reads (discards) them, and the next request on the same
# upstream connection is framed right.
head -c 300000 /dev/zero >"$T/body"
w='%{http_code} '
out=$(curl -s -m 20 -w "$w" -o "$T/o1" --data-binary @"$T/body" "$URL/api/post" \
    --next -w "$w" -o "$T/o2" -H 'Transfer-Encoding: chunked' --data-binary @"$T/body" "$URL/api/chunked" \
    --next -w "$w" -o "$T/o3" "$URL/api/after")
[ "$out" = "200 200 200 " ] || fail "bodies through to nginx: $out"
expect "POST" "$(cat "$T/o1")" "len=300000 "
expect "after the bodies" "$(cat "$T/o3")" "uri=/after "

# Keep-alive to nginx: 40 requests on one client connection (so on one
# loop), then a 41st whose answer says how many requests nginx has had on
# the upstream connection that carried it: more than one, it was reused.
args=()
for i in $(seq 1 40); do args+=(-o /dev/null "$URL/api/k$i"); done
out=$(curl -s -m 30 -w '%{http_code}\n' "${args[@]}" -o "$T/last" "$URL/api/last" | sort | uniq -c | tr -s ' ')
[ "$out" = " 41 200" ] || fail "41 keep-alive requests: $out"
n=$(sed -n 's/.*nreq=\([0-9]*\).*/\1/p' "$T/last")
[ "${n:-0}" -gt 1 ] || fail "nginx saw the last request on a new connection: $(cat "$T/last")"
m=$(get "http://127.0.0.1:$ADMIN_PORT/metrics")
reuses=$(echo "$m" | awk '$1 ~ /^scalwsd_upstream_reuses_total[{].*route="api"/ { s += $2 } END { print s + 0 }')
[ "$reuses" -ge 30 ] || fail "api upstream reuses $reuses"

# Active health checks reach nginx's /health, and /status has the route's
# upstream up; after nginx stops, the checks take it down and requests get
# the proxy's 502 at once.
for _ in $(seq 1 50); do grep -q "^GET /health HTTP/1.1" "$T/nginx/access.log" && break; sleep 0.1; done
grep -q "^GET /health HTTP/1.1 127.0.0.1:$NP$" "$T/nginx/access.log" ||
    fail "no health check with the upstream's Host in nginx's log: $(grep health "$T/nginx/access.log" | head -3)"
up() { get "http://127.0.0.1:$ADMIN_PORT/status" |
    jq -r --arg a "127.0.0.1:$NP" '.upstreams[] | select(.route == "api" and .address == $a) | .up'; }
[ "$(up)" = true ] || fail "/status before: $(get "http://127.0.0.1:$ADMIN_PORT/status" | jq -c .upstreams)"
kill -TERM "$NGINX_PID"
wait "$NGINX_PID" 2>/dev/null || true
for _ in $(seq 1 200); do [ "$(up)" = false ] && break; sleep 0.1; done
[ "$(up)" = false ] || fail "/status after nginx stopped: $(get "http://127.0.0.1:$ADMIN_PORT/status" | jq -c .upstreams)"
code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' "$URL/api/gone")
[ "$code" = 502 ] || fail "with nginx gone: $code"
[ "$(get "$URL/")" = site ] || fail "the respond route after the upstream went"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit $SWS_STATUS"
echo "proxy_nginx: ok"
