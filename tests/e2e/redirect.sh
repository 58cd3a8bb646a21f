#!/usr/bin/env bash
# Host lists and the redirect scenario (issue 31, items 4 and 5; doc/routes.md),
# over HTTP/1.1 and HTTP/2 (prior knowledge) alike:
#  - a route takes a list of names, exact and *. wildcards, case and a
#    trailing dot ignored; an exact name beats a wildcard, a longer suffix a
#    shorter one; two routes that share one name (and path) are refused,
#    the message naming it; /status and --print-config show the lists;
#  - redirect: each code (301 302 303 307 308) with its reason, Location and
#    a one-line body; the templates ($scheme $host $request_uri $uri $args
#    $is_args, $uri under strip_prefix, a relative target); HEAD: the
#    length, no body; http -> https on the default route for any Host (with
#    any_host), www -> apex by host names;
#  - SIGHUP changes a route's target and code; one that would make an open
#    redirect is refused and the old table served on;
#  - what is refused: a $host target on a route that answers any Host
#    without any_host, a relative target that could start with "//", a
#    query in the host part, respond with a redirect status; a request
#    whose host is not one RFC 3986 allows is answered 400, never put into
#    a Location; a path's escapes go into the Location as they came.
. "$(dirname "$0")/lib.sh"

ini() {
    cat <<EOF
event_loops = 1
access_log = $T/access.log
scenario = redirect
[redirect]
to = https://\$host\$request_uri
any_host = on
[route apex]
host = example.test, EXAMPLE.org., *.apex.test
scenario = respond
body = apex\n
[route deep]
host = *.deep.apex.test
scenario = respond
body = deep\n
[route www]
host = www.example.test
host = www.example.org
scenario = redirect
to = \$scheme://example.test\$request_uri
[route old]
host = codes.test
path_prefix = /old/
strip_prefix = on
scenario = redirect
to = /new\$uri\$is_args\$args
code = 302
EOF
    for c in 301 302 303 307 308; do
        printf '[route c%s]\nhost = codes.test\npath = /%s\nscenario = redirect\nto = https://example.test/moved/%s\ncode = %s\n' \
            "$c" "$c" "$c" "$c"
    done
}
start_sws "$(ini)"
cp "$T/sws.ini" "$T/orig.ini" # the reloads below change sws.ini
URL="http://127.0.0.1:$PORT"

# get [curl args...]: the answer's head into $T/h (CR dropped), body into $T/b.
get() {
    curl -s -m 10 "${H2[@]}" -D "$T/h.raw" -o "$T/b" "$@" "$URL${P:-/}" || fail "curl $*"
    tr -d '\r' <"$T/h.raw" >"$T/h"
}
code() { head -n 1 "$T/h" | awk '{print $2}'; }
field() { awk -v n="$(tr 'A-Z' 'a-z' <<<"$1"):" 'tolower($1) == n {sub(/^[^:]*: /, ""); print; exit}' "$T/h"; }
# expect STATUS LOCATION [curl args...] (LOCATION "-" for none)
expect() {
    local st=$1 loc=$2
    shift 2
    get "$@"
    [ "$(code)" = "$st" ] || fail "$MODE $P $*: status $(code), want $st: $(cat "$T/h")"
    [ "$loc" = - ] || [ "$(field Location)" = "$loc" ] ||
        fail "$MODE $P $*: Location '$(field Location)', want '$loc'"
}
body_is() { [ "$(cat "$T/b")" = "$1" ] || fail "$MODE $P: body '$(cat "$T/b")', want '$1'"; }

for MODE in http1 h2; do
    H2=()
    [ "$MODE" = h2 ] && H2=(--http2-prior-knowledge)

    # Host lists.
    P=/p expect 200 - -H 'Host: example.test'
    body_is apex
    P=/p expect 200 - -H 'Host: Example.ORG'
    body_is apex
    P=/p expect 200 - -H 'Host: a.b.apex.test:8080'
    body_is apex
    P=/p expect 200 - -H 'Host: x.deep.apex.test'
    body_is deep # the longer suffix
    # *.apex.test needs a label before it: the default route (http -> https).
    P='/p?q=1' expect 301 'https://apex.test/p?q=1' -H 'Host: apex.test'
    # www -> apex for either name, on the scheme it came on.
    P='/a/b?c=d&e' expect 301 'http://example.test/a/b?c=d&e' -H 'Host: www.example.org'
    P=/ expect 301 'http://example.test/' -H 'Host: WWW.example.test'
    # http -> https for any host: its port dropped, lowercased.
    P='/x?y' expect 301 'https://other.test/x?y' -H 'Host: Other.TEST:8080'
    [ "$(field Content-Type)" = text/plain ] || fail "$MODE: Content-Type $(field Content-Type)"
    body_is 'Moved Permanently: https://other.test/x?y'
    [ "$(field Content-Length)" = "$(wc -c <"$T/b")" ] || fail "$MODE: Content-Length"

    # Every code, with its reason phrase on HTTP/1.1.
    for c in 301:'Moved Permanently' 302:Found 303:'See Other' 307:'Temporary Redirect' \
        308:'Permanent Redirect'; do
        P=/${c%%:*} expect "${c%%:*}" "https://example.test/moved/${c%%:*}" -H 'Host: codes.test'
        body_is "${c#*:}: https://example.test/moved/${c%%:*}"
        if [ "$MODE" = http1 ]; then
            [ "$(head -n 1 "$T/h")" = "HTTP/1.1 ${c%%:*} ${c#*:}" ] || fail "status line $(head -n 1 "$T/h")"
        fi
    done
    # $uri without the route's prefix (strip_prefix), $is_args and $args.
    P='/old/a/b?x=1&y' expect 302 '/new/a/b?x=1&y' -H 'Host: codes.test'
    P='/old/a' expect 302 '/new/a' -H 'Host: codes.test'
    # HEAD: the GET's length, no body.
    P=/308 expect 308 https://example.test/moved/308 -I -H 'Host: codes.test'
    want=$(printf 'Permanent Redirect: https://example.test/moved/308\n' | wc -c)
    [ "$(field Content-Length)" = "$want" ] || fail "$MODE HEAD: Content-Length $(field Content-Length)"
    # (curl -I writes the head as its output: the raw HTTP/1.1 HEAD below
    # checks that nothing follows it.)
    # Escapes stay as sent: "%0d%0a" is never a line break.
    P='/a%0d%0a/%22' expect 301 'https://q.test/a%0d%0a/%22' -H 'Host: q.test'
    # A '%' that escapes nothing is escaped itself.
    P='/b%zz?c=%' expect 301 'https://q.test/b%25zz?c=%25' -H 'Host: q.test'
done

# HTTP/1.1 on a raw socket: HEAD ends after the head; a bad host is 400.
r=$(raw 'HEAD /x HTTP/1.1\r\nHost: codes.test\r\nConnection: close\r\n\r\n' | tr -d '\r'; echo END)
want=$(printf 'Moved Permanently: https://codes.test/x\n' | wc -c)
[[ "$r" == *$'Connection: close\n\nEND' ]] && grep -q "^Content-Length: $want\$" <<<"$r" ||
    fail "HEAD on a raw socket: $r"
# The absolute-form's authority is the host (RFC 9112 3.2.2); with user
# information it is no host for a Location.
r=$(raw 'GET http://Abs.test:81/p?q HTTP/1.1\r\nHost: other\r\nConnection: close\r\n\r\n')
grep -q '^Location: https://abs.test/p?q' <<<"$r" || fail "absolute-form: $r"
for bad in 'GET http://user@evil.test/ HTTP/1.1\r\nHost: x' 'GET / HTTP/1.1\r\nHost: a.test:8x' \
    'GET / HTTP/1.1\r\nHost: a%zz.test' 'GET / HTTP/1.1\r\nHost: evil.test%2F.a.test' 'GET / HTTP/1.0'; do
    r=$(raw "$bad"'\r\n\r\n')
    grep -q '^HTTP/1.1 400 ' <<<"$r" || fail "not 400: $bad: $r"
    ! grep -qi '^Location' <<<"$r" || fail "a Location for $bad: $r"
done
# A path longer than the parsers keep: 414, not a Location cut short.
long=$(head -c 1100 /dev/zero | tr '\0' a)
[ "$(curl -s -m 10 -o /dev/null -w '%{http_code}' "$URL/$long")" = 414 ] || fail "long path"

# Each answer logged with its route.
wait_log '"GET /old/a HTTP/1.1" 302 ' 10 "$T/access.log" || fail "no access line for /old/a"
grep -q '"GET /old/a HTTP/1.1" 302 .* old$' "$T/access.log" || fail "route not logged"

# /status lists the routes with their names.
curl -s -m 10 "http://127.0.0.1:$ADMIN_PORT/status" >"$T/status.json"
[ "$(jq -c '.routes[] | select(.name == "apex") | .hosts' "$T/status.json")" = \
    '["example.test","example.org","*.apex.test"]' ] || fail "/status routes: $(jq -c .routes "$T/status.json")"
[ "$(jq -r '.routes[] | select(.name == "old") | .path_prefix + " " + .scenario' "$T/status.json")" = \
    "/old/ redirect" ] || fail "/status old route"

# SIGHUP: a route's target and code change at once; a reload that would make
# an open redirect is refused, the old table served on.
MODE=http1 H2=()
sed -i 's|^to = \$scheme://example.test\$request_uri$|to = https://example.test/www$request_uri\ncode = 307|' "$T/sws.ini"
kill -HUP "$SWS_PID"
wait_log "every loop serves generation 1" 30 || fail "no reload logged"
P=/r expect 307 'https://example.test/www/r' -H 'Host: www.example.org'
sed -i 's|^host = www.example.test$|path_prefix = /w/|; /^host = www.example.org$/d; s|^to = https://example.test/www\$request_uri$|to = https://$host/|' "$T/sws.ini"
kill -HUP "$SWS_PID"
wait_log "reload refused.*\[route www\] to = https://\$host/ takes its host from the request" 30 ||
    fail "the open redirect's reload was not refused: $(tail -n 3 "$T/log")"
P=/r expect 307 'https://example.test/www/r' -H 'Host: www.example.org'
stop_sws

# --print-config: the lists and the [redirect] keys, read back the same.
"$SWS" --print-config --config "$T/orig.ini" >"$T/p1.ini" || fail "--print-config"
grep -q '^host = example.test, example.org, \*.apex.test$' "$T/p1.ini" || fail "print: apex hosts"
grep -q '^host = www.example.test, www.example.org$' "$T/p1.ini" || fail "print: two host lines"
grep -q '^to = /new\$uri\$is_args\$args$' "$T/p1.ini" || fail "print: to"
grep -q '^code = 302$' "$T/p1.ini" || fail "print: code"
"$SWS" --print-config --config "$T/p1.ini" >"$T/p2.ini" || fail "--print-config of its print"
diff <(grep -v '^; the effective' "$T/p1.ini" | sed 's/ ;.*//') \
    <(grep -v '^; the effective' "$T/p2.ini" | sed 's/ ;.*//') >/dev/null ||
    fail "the print of the print differs"

# Refused, one line naming file:line and why.
refused() { # WANT INI
    printf '%b' "$2" >"$T/bad.ini"
    local st=0
    "$SWS" --check-config --config "$T/bad.ini" 2>"$T/err" || st=$?
    [ "$st" = 2 ] || fail "exit $st for: $2"
    grep -qF -- "$1" "$T/err" || fail "want '$1', got: $(cat "$T/err")"
}
refused 'bad.ini:4: [route b] overlaps [route a] at '"$T"'/bad.ini:1: host b.test and no path' \
    '[route a]\nhost = a.test, b.test\nscenario = respond\n[route b]\nhost = c.test, B.test\nscenario = respond\n'
refused 'bad.ini:5: [route b] overlaps [route a] at '"$T"'/bad.ini:1: host *.w.test and the same path' \
    '[route a]\nhost = *.w.test\npath = /x\nscenario = respond\n[route b]\nhost = x.test, *.W.test\npath = /x\nscenario = respond\n'
refused "bad.ini:2: [route a] host: host 'A.test' is named twice" \
    '[route a]\nhost = a.test, *.a.test, A.test\nscenario = respond\n'
refused "bad.ini:1: [route open] to = https://\$host/ takes its host from the request (\$host)" \
    '[route open]\npath_prefix = /o/\nscenario = redirect\nto = https://$host/\n'
refused "bad.ini: [server] scenario = redirect: to = https://\$host\$request_uri takes its host" \
    '[server]\nscenario = redirect\n[redirect]\nto = https://$host$request_uri\n'
refused 'bad.ini:4: [route r] to: a relative target needs text after its first' \
    '[route r]\npath = /r\nscenario = redirect\nto = /$uri\n'
refused 'bad.ini:4: [route r] to: $args in the host part' \
    '[route r]\npath = /r\nscenario = redirect\nto = https://example.test$args\n'
refused "bad.ini:4: [route r] code: bad code '300'" '[route r]\npath = /r\nscenario = redirect\ncode = 300\n'
refused 'bad.ini:1: [route r] scenario redirect needs to' '[route r]\npath = /r\nscenario = redirect\n'
refused 'bad.ini:1: [route m] status 301 needs a Location, which respond does not send: use scenario = redirect' \
    '[route m]\npath = /m\nscenario = respond\nstatus = 301\n'
# Limited to its names, a $host target is no open redirect.
printf '[route ok]\nhost = a.test, *.b.test\nscenario = redirect\nto = https://$host$request_uri\n' >"$T/ok.ini"
"$SWS" --check-config --config "$T/ok.ini" 2>"$T/err" || fail "host-limited \$host refused: $(cat "$T/err")"
echo "PASS redirect"
