#!/usr/bin/env bash
# The same answers on every backend the machine has: keep-alive, pipelining, a
# limit, and the access log. A backend this kernel refuses is reported as
# skipped (exit 77), never silently passed.
. "$(dirname "$0")/lib.sh"
skipped=0
for be in epoll uring; do
    st=0
    printf '[server]\nlisten = 127.0.0.1:1\nbackend = %s\n' "$be" >"$T/probe.ini"
    "$SWS" --check-config --config "$T/probe.ini" >/dev/null || fail "$be: config"
    if ! start_sws_try "\nbackend = $be\naccess_log = $T/access-$be.log"; then
        if grep -q "cannot create loop" "$T/log"; then
            echo "SKIP: backend $be: $(cat "$T/log")"
            skipped=$((skipped + 1))
            continue
        fi
        fail "$be: did not start"
    fi
    grep -q "backend $be" "$T/log" || fail "$be: log says $(cat "$T/log")"
    v=$(curl -sv "http://127.0.0.1:$PORT/a" "http://127.0.0.1:$PORT/b" 2>&1 >/dev/null)
    grep -q "Re-using existing connection" <<<"$v" || fail "$be: keep-alive"
    req=""
    for i in $(seq 1 31); do req="${req}GET /$i HTTP/1.1\r\nHost: a\r\n\r\n"; done
    req="${req}GET /32 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
    r=$(raw "$req" 5)
    [ "$(echo "$r" | count '^HTTP/1.1 200')" = 32 ] || fail "$be: pipelined"
    # A flood read late: on uring many buffers arrive after the receive is
    # cancelled, and each must wait for room, never end the connection.
    ( exec 3<>/dev/tcp/127.0.0.1/$PORT
      { printf 'GET / HTTP/1.1\r\nHost: a\r\n\r\n%.0s' $(seq 1 4999)
        printf 'GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n'; } >&3 &
      sleep 1
      timeout 10 cat <&3
      wait ) >"$T/flood" 2>&1
    [ "$(grep -c '^HTTP/1.1 200' "$T/flood" || true)" = 5000 ] || fail "$be: slow reader"
    r=$(raw "GET / HTTP/1.1\r\nHost: a\r\nBad Line\r\n\r\n")
    grep -q "^HTTP/1.1 400" <<<"$r" || fail "$be: malformed: $r"
    stop_sws
    [ "$SWS_STATUS" = 0 ] || fail "$be: exit $SWS_STATUS"
    grep -qE '^127\.0\.0\.1 - - \[[0-9]{2}/[A-Z][a-z]{2}/[0-9]{4}:[0-9:]{8} \+0000\] "GET /32 HTTP/1\.1" 200 [0-9]+ "[^"]*" "[^"]*" default$' \
        "$T/access-$be.log" || fail "$be: access log: $(tail -2 "$T/access-$be.log")"
done
[ "$skipped" -lt 2 ] || fail "no backend could run"
[ "$skipped" = 0 ] || exit 77
echo ok
