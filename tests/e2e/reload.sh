#!/usr/bin/env bash
# SIGHUP reload: a new [respond] body is served after HUP on the same
# listening sockets, a connection opened before the reload keeps working, no
# request fails during a bounded load across several reloads; a broken file
# or a changed listen address is refused with one log line and the old
# configuration keeps serving. scalwsd exits 0 after it all; every reload must
# say that the older configs were freed. The same in the proxy scenario.
. "$(dirname "$0")/lib.sh"
start_sws '\nevent_loops = 2\n[respond]\nbody = gen-zero\\n'
INI="$T/sws.ini"
base=$(cat "$INI")

# Listening sockets' inodes (state 0A = LISTEN) on our port, sorted.
listeners() {
    local hex
    hex=$(printf '%04X' "$PORT")
    awk -v p=":$hex" '$2 ~ p"$" && $4 == "0A" {print $10}' /proc/net/tcp | sort | tr '\n' ' '
}
# set_body TEXT: the same file with another body.
set_body() { printf '%s\n' "$base" | sed "s/^body = .*/body = $1\\\\n/" >"$INI.new" && mv "$INI.new" "$INI"; }
# answer_on_3 TEXT: the kept connection (fd 3) answers with body TEXT.
answer_on_3() {
    local line
    while IFS= read -r -t 2 line <&3; do
        [ "$line" = "$1" ] && return 0
    done
    fail "kept connection: no body '$1'"
}
# hup N: SIGHUP, then wait (bounded) for "generation N" to be served everywhere
# and every older config to be freed (the log line says both).
hup() {
    kill -HUP "$SWS_PID"
    wait_log "every loop serves generation $1; older configurations freed" ||
        fail "reload $1 not acknowledged"
}
# every_answer TEXT: six new connections all get TEXT (both loops are asked).
every_answer() {
    for _ in $(seq 1 6); do
        b=$(curl -s --max-time 5 "http://127.0.0.1:$PORT/")
        [ "$b" = "$1" ] || fail "expected body '$1', got '$b'"
    done
}

before=$(listeners)
[ -n "$before" ] || fail "no listening socket found for port $PORT"
every_answer gen-zero

# A keep-alive connection opened before the reload.
exec 3<>/dev/tcp/127.0.0.1/$PORT
printf 'GET / HTTP/1.1\r\nHost: a\r\n\r\n' >&3
answer_on_3 gen-zero

set_body gen-one
hup 1
every_answer gen-one
printf 'GET / HTTP/1.1\r\nHost: a\r\n\r\n' >&3
answer_on_3 gen-one
[ "$(listeners)" = "$before" ] || fail "listening sockets changed: $before -> $(listeners)"

# Bounded load across several reloads: keep-alive and new connections.
urls=()
for _ in $(seq 1 300); do urls+=(-o /dev/null "http://127.0.0.1:$PORT/"); done
( curl -s --max-time 30 -w '%{http_code}\n' "${urls[@]}" >"$T/ka" 2>&1 || true ) &
ka=$!
# A failed request prints 000 (curl's code for no answer).
( for _ in $(seq 1 40); do curl -s --max-time 5 -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$PORT/" || true; done >"$T/fresh" 2>&1 ) &
fresh=$!
for g in 2 3 4 5 6; do
    set_body "gen-$g"
    hup "$g"
    sleep 0.1
done
wait "$ka" "$fresh"
n_ok=$(cat "$T/ka" "$T/fresh" | count '^200$')
n_all=$(cat "$T/ka" "$T/fresh" | wc -l)
[ "$n_all" = 340 ] && [ "$n_ok" = 340 ] || fail "requests during reloads: $n_ok of $n_all answered 200 (want 340)"
every_answer gen-6
[ "$(listeners)" = "$before" ] || fail "listening sockets changed after reloads"

# A broken file: refused, one line, the old body still served.
good=$(cat "$INI")
printf '%s\n[respond]\nno_such_key = 1\n' "$good" >"$INI"
kill -HUP "$SWS_PID"
# (was a fixed 0.5 s sleep before reading the log: too short under load)
wait_log 'reload refused, still serving the previous configuration: .*no_such_key' || true
[ "$(count 'reload refused, still serving the previous configuration: .*no_such_key' <"$T/log")" = 1 ] ||
    fail "no log line for the broken file"
every_answer gen-6

# A changed listen address: refused, the old listener still serves.
# (a text change only: the reload refuses it before binding anything)
other=1
printf '%s\n' "$good" | sed "0,/^listen = .*/s//listen = 127.0.0.1:$other/" | sed 's/^body = .*/body = gen-new\\n/' >"$INI"
kill -HUP "$SWS_PID"
wait_log "reload refused.*\[server\] listen changed (127.0.0.1:0 -> 127.0.0.1:$other); that needs a restart" ||
    fail "no log line for the listen change"
every_answer gen-6
[ "$(listeners)" = "$before" ] || fail "listening sockets changed after a refused reload"

# The file fixed again: the next reload works.
printf '%s\n' "$good" | sed 's/^body = .*/body = gen-7\\n/' >"$INI"
hup 7
every_answer gen-7

stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit status $SWS_STATUS after reloads"

# The proxy scenario: the pool's timeouts switch with the config (a slow
# upstream answer, 3 s, passes with read_timeout 60s and is a 504 after a
# reload to 1s); a changed upstream list needs a restart.
command -v python3 >/dev/null || { echo "reload: ok (respond; proxy part skipped: no python3)"; exit 0; }
start_test_upstream 40
start_sws "scenario = proxy\nevent_loops = 2\n[proxy]\nupstream = 127.0.0.1:$UP\nread_timeout = 60s"
base=$(cat "$INI")
code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/slow")
[ "$code" = 200 ] || fail "slow upstream with read_timeout 60s: $code"
for g in 1 2; do
    printf '%s\n' "$base" | sed "s/^read_timeout = .*/read_timeout = $((3 - g))s/" >"$INI"
    hup "$g"
    for _ in $(seq 1 4); do
        b=$(curl -s -m 5 "http://127.0.0.1:$PORT/ok")
        [ "$b" = "ok" ] || fail "proxy after reload $g: '$b'"
    done
done
code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/slow")
[ "$code" = 504 ] || fail "slow upstream after the reload to read_timeout 1s: $code, want 504"
printf '%s\n' "$base" | sed "s/^upstream = .*/upstream = 127.0.0.1:1/" >"$INI"
kill -HUP "$SWS_PID"
wait_log "reload refused.*\[proxy\] upstream changed" || fail "no log line for the upstream change"
[ "$(curl -s --max-time 5 "http://127.0.0.1:$PORT/ok")" = "ok" ] || fail "proxy after a refused reload"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "proxy: exit status $SWS_STATUS after reloads"
echo "reload: ok ($n_ok requests during 5 reloads, listeners $before)"
