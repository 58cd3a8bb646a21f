#!/usr/bin/env bash
# At max_connections a loop stops accepting, and the connection waits in the
# kernel's queue: it is answered once a slot frees, never dropped.
. "$(dirname "$0")/lib.sh"
start_sws '\nevent_loops = 1\n[limits]\nmax_connections = 2'
# start_sws's readiness probe has closed; hold both slots with idle connections.
( exec 3<>/dev/tcp/127.0.0.1/$PORT; printf 'GET / HTTP/1.1\r\nHost: a\r\n\r\n' >&3; sleep 2; exec 3>&- ) >/dev/null 2>&1 &
a=$!
( exec 3<>/dev/tcp/127.0.0.1/$PORT; printf 'GET / HTTP/1.1\r\nHost: a\r\n\r\n' >&3; sleep 4; exec 3>&- ) >/dev/null 2>&1 &
b=$!
sleep 0.5
SECONDS=0
r=$(raw 'GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n' 6)
grep -q "^HTTP/1.1 200" <<<"$r" || fail "third connection dropped: $r"
[ "$SECONDS" -ge 1 ] || fail "third connection served while the loop was full"
wait "$a" "$b" || true
stop_sws
echo ok
