#!/usr/bin/env bash
# The access log in the combined format: every line parses as
#   %h - - [%t] "%r" %>s %b "Referer" "User-Agent" route
# (route: the route that answered, "default" without [route] sections, "-"
# for a request refused in its head, before it could be routed)
# and a hostile User-Agent (quotes, backslashes, tabs, bytes >= 0x80) is
# escaped as \xHH, so it can neither add a field nor forge a line. A reload
# (SIGHUP) reopens the file: a moved log is recreated (rotation); a reload that
# turns the log on covers connections already open. Error answers are logged
# with the request line as it came (escaped); a connection that sent nothing
# leaves no line. The proxy scenario logs every exchange the same way: the
# upstream's status and body bytes, its own 502/504, 499 for a client that
# left before its answer began, and the status begun for an answer cut short.
. "$(dirname "$0")/lib.sh"
LOG="$T/access.log"
start_sws "\naccess_log = $LOG\n[limits]\nheader_timeout = 1s"

curl -s -o /dev/null -A 'curl-test/1.0' -e 'http://ref.example/a?b=c' "http://127.0.0.1:$PORT/x/y?q=1"
curl -s -o /dev/null -A '' -H 'User-Agent:' "http://127.0.0.1:$PORT/noua"
# A forged second line and forged fields, in the User-Agent and the Referer.
raw 'GET /evil HTTP/1.1\r\nHost: a\r\nUser-Agent: x" 200 9 "-" "y\\\t\x80\xff end\r\nReferer: r"\r\nConnection: close\r\n\r\n' >"$T/evil"
grep -q "^HTTP/1.1 200" "$T/evil" || fail "hostile request not answered: $(cat "$T/evil")"
# Trailing whitespace of a value is not part of it; a second User-Agent line is ignored.
raw 'HEAD /two HTTP/1.1\r\nHost: a\r\nUser-Agent: first  \r\nUser-Agent: second\r\nConnection: close\r\n\r\n' >/dev/null
# Errors: a control byte in the target (400), an unknown method (501), a head
# that never ends (408 after header_timeout). Silence and blank lines: no line.
raw 'GET /a\x01b HTTP/1.1\r\nHost: a\r\n\r\n' >/dev/null
raw 'BREW /pot HTTP/1.1\r\nHost: a\r\n\r\n' >/dev/null
raw 'GET /partial HTTP/1.1\r\nHost: a\r\nUser-Agent: slow\r\n' 3 >/dev/null
raw '' 1.5 >/dev/null
raw '\r\n' 1.5 >/dev/null

for _ in $(seq 1 20); do [ "$(wc -l <"$LOG")" -ge 8 ] && break; sleep 0.1; done
cat "$LOG"
# 1 request from start_sws's probe, then the 4 above and the 3 errors.
[ "$(wc -l <"$LOG")" = 8 ] || fail "want 8 access lines, got $(wc -l <"$LOG")"
re='^[0-9a-f.:]+ - - \[[0-9]{2}/[A-Z][a-z]{2}/[0-9]{4}:[0-9]{2}:[0-9]{2}:[0-9]{2} \+0000\] "[A-Z]+ [^" ]+ HTTP/1\.[01]" [0-9]{3} [0-9]+ "[^"]*" "[^"]*" [A-Za-z0-9_.-]+$'
bad=$(LC_ALL=C grep -Evc "$re" "$LOG" || true)
[ "$bad" = 0 ] || fail "$bad lines are not in the combined format"
grep -q '^127.0.0.1 - - \[.*\] "GET /x/y?q=1 HTTP/1.1" 200 19 "http://ref.example/a?b=c" "curl-test/1.0" default$' "$LOG" ||
    fail "normal line wrong"
grep -q '"GET /noua HTTP/1.1" 200 [0-9]* "-" "-" default$' "$LOG" || fail "missing fields must be -"
grep -qF '"GET /evil HTTP/1.1" 200' "$LOG" || fail "hostile line missing"
grep -qF '"r\x22" "x\x22 200 9 \x22-\x22 \x22y\x5C\x09\x80\xFF end"' "$LOG" ||
    fail "hostile fields not escaped: $(grep evil "$LOG")"
grep -q '"HEAD /two HTTP/1.1" 200 0 "-" "first" default$' "$LOG" || fail "trailing OWS or second field line"
grep -qF '"GET /a\x01b HTTP/1.1" 400 16 "-" "-" -' "$LOG" || fail "400 line"
grep -qF '"BREW /pot HTTP/1.1" 501 20 "-" "-"' "$LOG" || fail "501 line"
grep -qF '"GET /partial HTTP/1.1" 408 20 "-" "slow"' "$LOG" || fail "408 line"

# Rotation: move the file away, HUP, the next line goes to a new file.
mv "$LOG" "$LOG.1"
kill -HUP "$SWS_PID"
for _ in $(seq 1 30); do grep -q "every loop serves generation 1;" "$T/log" && break; sleep 0.1; done
curl -s -o /dev/null "http://127.0.0.1:$PORT/after-rotate"
for _ in $(seq 1 20); do [ -s "$LOG" ] && break; sleep 0.1; done
grep -q '"GET /after-rotate HTTP/1.1" 200' "$LOG" || fail "no line in the reopened log"
! grep -q after-rotate "$LOG.1" || fail "line went to the rotated file"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit status $SWS_STATUS"

# A reload that turns the log on: a connection opened before it logs its
# next request with its User-Agent.
start_sws "\nevent_loops = 1"
exec 3<>/dev/tcp/127.0.0.1/$PORT
printf 'GET /before HTTP/1.1\r\nHost: a\r\n\r\n' >&3
IFS= read -r -t 3 line <&3 || fail "no answer on the kept connection"
sed -i "s|^event_loops = 1|event_loops = 1\naccess_log = $LOG.2|" "$T/sws.ini"
kill -HUP "$SWS_PID"
for _ in $(seq 1 30); do grep -q "every loop serves generation 1;" "$T/log" && break; sleep 0.1; done
printf 'GET /kept HTTP/1.1\r\nHost: a\r\nUser-Agent: kept-ua\r\nConnection: close\r\n\r\n' >&3
timeout 3 cat <&3 >/dev/null || true
exec 3<&-
for _ in $(seq 1 20); do [ -s "$LOG.2" ] && break; sleep 0.1; done
grep -q '^127.0.0.1 - - .*"GET /kept HTTP/1.1" 200 19 "-" "kept-ua" default$' "$LOG.2" || fail "kept connection after the log was turned on: $(cat "$LOG.2" 2>/dev/null)"
! grep -q before "$LOG.2" || fail "a request before the reload was logged"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit status $SWS_STATUS"

# The proxy scenario, against the test upstream (proxy_upstream.py).
command -v python3 >/dev/null || { echo "SKIP: proxy part (no python3)"; exit 77; }
start_test_upstream 20
PLOG="$T/proxy.log"
start_sws "scenario = proxy\nevent_loops = 1\naccess_log = $PLOG\n[proxy]\nupstream = 127.0.0.1:$UP\nread_timeout = 1s"
URL="http://127.0.0.1:$PORT"
curl -s -m 10 -o /dev/null -A 'px-ua' -e 'http://ref/' "$URL/chunked?x=1"
curl -s -m 10 -o /dev/null -I "$URL/echo"
curl -s -m 10 -o /dev/null "$URL/nocontent"
curl -s -m 10 -o /dev/null "$URL/slow"
curl -s -m 10 -o /dev/null "$URL/badstatus"
curl -s -m 10 -o /dev/null "$URL/cut" || true # cut short: curl fails
raw 'GET /b\x7f HTTP/1.1\r\nHost: a\r\n\r\n' >/dev/null
# A client that leaves in the middle of its body: no answer began. It leaves
# 0.2 s after sending, well before read_timeout (1 s): leaving at 1 s raced the
# proxy's own 504 and the line was 504 now and then.
( exec 3<>"/dev/tcp/127.0.0.1/$PORT"
  printf 'POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\nabc' >&3
  sleep 0.2
  exec 3>&- )
for _ in $(seq 1 30); do [ "$(wc -l <"$PLOG")" -ge 9 ] && break; sleep 0.1; done
cat "$PLOG"
# start_sws's probe, then the 8 above.
[ "$(wc -l <"$PLOG")" = 9 ] || fail "proxy: want 9 access lines, got $(wc -l <"$PLOG")"
bad=$(LC_ALL=C grep -Evc "$re" "$PLOG" || true)
[ "$bad" = 0 ] || fail "proxy: $bad lines are not in the combined format"
want() { grep -qF "$1" "$PLOG" || fail "proxy: no line with: $1"; }
want '"GET /chunked?x=1 HTTP/1.1" 200 35000 "http://ref/" "px-ua"'
want '"HEAD /echo HTTP/1.1" 200 0 "-" "curl/'
want '"GET /nocontent HTTP/1.1" 204 0 "-"'
want '"GET /slow HTTP/1.1" 504 20 "-"'
want '"GET /badstatus HTTP/1.1" 502 16 "-"'
want '"GET /cut HTTP/1.1" 200 1000 "-"'
want '"GET /b\x7F HTTP/1.1" 400 16 "-" "-"'
want '"POST /echo HTTP/1.1" 499 0 "-" "-"'
# The route field: "default" for every exchange the proxy answered (also the
# ones that ended after `answer`, when the upstream's last byte came), "-"
# for the request refused while its head was read.
grep -q '"GET /chunked?x=1 HTTP/1.1" 200 35000 .* default$' "$PLOG" || fail "proxy: route field of a streamed answer"
grep -q '"GET /slow HTTP/1.1" 504 .* default$' "$PLOG" || fail "proxy: route field of a 504"
want '"GET /b\x7F HTTP/1.1" 400 16 "-" "-" -'
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit status $SWS_STATUS"
echo "access_log: ok"
