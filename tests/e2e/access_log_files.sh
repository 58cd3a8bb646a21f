#!/usr/bin/env bash
# Access log files (issue 31, item 7): logrotate-style rotation under load
# with SIGUSR1 (mv, signal; twice) on two loops writing one file, every
# request logged exactly once across the files and every line whole (5 KiB
# lines, longer than the stdio buffer that used to split them); a log per
# route and `off`; log_format templates with every variable; JSON lines that
# jq parses, with a hostile User-Agent and Referer escaped (quotes, backslash,
# controls, bytes that are not UTF-8 as U+FFFD, UTF-8 kept); the proxy's
# upstream address and time; HTTP/2 lines; https over TLS (both protocols);
# bad values refused by --check-config and by a SIGHUP, which keeps the old
# config; a line that cannot be written (/dev/full) counted in /metrics.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }

# ---- 1. rotation under load ----------------------------------------------------
LOG="$T/access.log"
# Lines of about 5 KiB: the User-Agent five times, each byte escaped 4 for 1.
start_sws "event_loops = 2\naccess_log = $LOG
log_format = \$request_uri \"\$http_user_agent\" \$http_user_agent \$http_user_agent \$http_user_agent \$http_user_agent end"
# 6 keep-alive clients, each request named /r/CLIENT-N, until $T/stop exists
# or 20 s are up; prints the names of the requests answered 200.
rm -f "$T/stop"
python3 - "$PORT" "$T/stop" >"$T/sent" <<'PY' &
import os, socket, sys, threading, time
port, stop = int(sys.argv[1]), sys.argv[2]
end = time.monotonic() + 20
ua = b"\xff\x80" * 127  # 254 bytes, each escaped as \xHH
done, lock = [], threading.Lock()
def client(k):
    s, n, buf = None, 0, b""
    while time.monotonic() < end and not os.path.exists(stop):
        if s is None:
            s, buf = socket.create_connection(("127.0.0.1", port), timeout=5), b""
        name = "%d-%d" % (k, n)
        n += 1
        s.sendall(b"GET /r/" + name.encode() + b" HTTP/1.1\r\nHost: t\r\nUser-Agent: " + ua + b"\r\n\r\n")
        while b"\r\n\r\n" not in buf:
            b = s.recv(65536)
            if not b:
                raise SystemExit("closed")
            buf += b
        head, _, rest = buf.partition(b"\r\n\r\n")
        clen = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
        while len(rest) < clen:
            rest += s.recv(65536)
        buf = rest[clen:]
        if head.startswith(b"HTTP/1.1 200"):
            with lock:
                done.append(name)
        time.sleep(0.005)  # a bounded load: the lines are 5 KiB each
ts = [threading.Thread(target=client, args=(k,)) for k in range(6)]
for t in ts: t.start()
for t in ts: t.join()
print("\n".join(done))
PY
LOAD=$!
sleep 1
mv "$LOG" "$LOG.1"
kill -USR1 "$SWS_PID"
wait_log "SIGUSR1: access log reopened (1 file)" || fail "no reopen after SIGUSR1"
sleep 1
mv "$LOG" "$LOG.2"
kill -USR1 "$SWS_PID"
for _ in $(seq 1 100); do [ "$(count "access log reopened" <"$T/log")" -ge 2 ] && break; sleep 0.05; done
sleep 1
touch "$T/stop"
wait "$LOAD" || fail "the load client failed"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit status $SWS_STATUS"
sent=$(wc -l <"$T/sent")
[ "$sent" -gt 100 ] || fail "only $sent requests under load"
for f in "$LOG.1" "$LOG.2" "$LOG"; do
    [ -s "$f" ] || fail "$f is empty: the load did not span both rotations"
done
# Every line whole: the name, then the five escaped User-Agents, then "end".
python3 - "$LOG.1" "$LOG.2" "$LOG" <<'PY' || fail "lines split or interleaved"
import re, sys
u = "\\xFF\\x80" * 127
tail = ' "%s" %s %s %s %s end\n' % (u, u, u, u, u)
bad = 0
for f in sys.argv[1:]:
    for line in open(f, encoding="ascii"):
        if line.startswith("/r/") and not (re.match(r"/r/[0-9]+-[0-9]+ ", line) and line.endswith(tail)
                                           and line.count("end") == 1):
            bad += 1
            print("%s: %r" % (f, line[:80]), file=sys.stderr)
sys.exit(1 if bad else 0)
PY
cat "$LOG.1" "$LOG.2" "$LOG" | awk '/^\/r\//{print substr($1, 4)}' | sort >"$T/logged"
sort "$T/sent" >"$T/sent.sorted"
dups=$(uniq -d "$T/logged" | wc -l)
[ "$dups" = 0 ] || fail "$dups requests logged twice"
diff "$T/sent.sorted" "$T/logged" >/dev/null ||
    fail "requests answered and lines differ: $(diff "$T/sent.sorted" "$T/logged" | head -5)"
[ "$(grep -m1 '^/r/' "$LOG.2" | wc -c)" -gt 5000 ] || fail "the lines are not longer than 5000 bytes"
echo "rotation: $sent requests, each logged once across 3 files"

# ---- 2. a log per route, off, templates --------------------------------------------
# Every variable, in two templates (an ini line holds 198 characters).
T1='$remote_addr|$time_local|$time_iso8601|$msec|$request|$request_method|$request_uri|$server_protocol|$scheme|$host|$$'
T2='$status|$body_bytes_sent|$http_referer|$http_user_agent|$request_time|${request_time_ms}ms|$route|$upstream_addr|$upstream_response_time|$upstream_time_ms'
start_sws "access_log = $LOG.main
[route api]
path_prefix = /api
scenario = respond
access_log = $LOG.api
log_format = $T1
[route api2]
path_prefix = /api2
scenario = respond
access_log = $LOG.api
log_format = $T2
[route quiet]
path_prefix = /quiet
scenario = respond
access_log = off
[route same]
path_prefix = /same
scenario = respond
log_format = common"
curl -s -o /dev/null -H 'Host: api.example:8' "http://127.0.0.1:$PORT/api/x?y=1"
curl -s -o /dev/null -A 'ua/1' -e 'http://r/' "http://127.0.0.1:$PORT/api2/x"
curl -s -o /dev/null "http://127.0.0.1:$PORT/quiet/z"
curl -s -o /dev/null "http://127.0.0.1:$PORT/same/q"
curl -s -o /dev/null --http2-prior-knowledge "http://127.0.0.1:$PORT/api/h2"
curl -s -o /dev/null --http2-prior-knowledge "http://127.0.0.1:$PORT/quiet/h2"
for _ in $(seq 1 50); do [ "$(wc -l <"$LOG.api" 2>/dev/null || echo 0)" -ge 3 ] && [ "$(wc -l <"$LOG.main")" -ge 2 ] && break; sleep 0.1; done
cat "$LOG.api" "$LOG.main"
[ "$(wc -l <"$LOG.api")" = 3 ] || fail "want 3 lines in the routes' file"
[ "$(wc -l <"$LOG.main")" = 2 ] || fail "want 2 lines in [server]'s file"
! grep -q quiet "$LOG.main" "$LOG.api" || fail "a route with access_log = off was logged"
grep -q '"GET /same/q HTTP/1.1" 200 [0-9]*$' "$LOG.main" || fail "a route's own format to [server]'s file (common)"
grep -q '"GET / HTTP/1.1" 404 .* default$' "$LOG.main" || fail "the default route's line (combined)"
re='^127\.0\.0\.1\|[0-9]{2}/[A-Z][a-z]{2}/[0-9]{4}:[0-9:]{8} \+0000\|[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\+00:00\|[0-9]{10}\.[0-9]{3}\|GET /api/x\?y=1 HTTP/1\.1\|GET\|/api/x\?y=1\|HTTP/1\.1\|http\|api\.example:8\|\$$'
line=$(grep '/api/x' "$LOG.api")
[[ "$line" =~ $re ]] || fail "template line: $line"
re='^200\|19\|http://r/\|ua/1\|[0-9]+\.[0-9]{3}\|[0-9]+ms\|api2\|-\|-\|-$'
line=$(grep '|api2|' "$LOG.api")
[[ "$line" =~ $re ]] || fail "template line: $line"
grep -q '|GET /api/h2 HTTP/2.0|GET|/api/h2|HTTP/2.0|http|127.0.0.1:'"$PORT"'|\$$' "$LOG.api" ||
    fail "HTTP/2 template line: $(grep h2 "$LOG.api")"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit status $SWS_STATUS"

# ---- 3. JSON lines: hostile fields, HTTP/2, the proxy's upstream ---------------------
start_sws_upstream
hold_port "$T/dead.port" 40
for _ in $(seq 1 50); do [ -s "$T/dead.port" ] && break; sleep 0.1; done
DEAD=$(cat "$T/dead.port")
start_sws "access_log = $LOG.json\nlog_format = json
[route px]
path_prefix = /px
scenario = proxy
upstream = 127.0.0.1:$UP
[route dead]
path_prefix = /dead
scenario = proxy
upstream = 127.0.0.1:$DEAD"
raw 'GET /evil?a=%22 HTTP/1.1\r\nHost: h\r\nUser-Agent: q" b\\s t\tab \xc3\xa9 \x80\xff \xed\xa0\x80 end\r\nReferer: "},"x":1,{"\r\nConnection: close\r\n\r\n' >"$T/evil"
grep -q "^HTTP/1.1" "$T/evil" || fail "hostile request not answered"
curl -s -o /dev/null "http://127.0.0.1:$PORT/px/a"
curl -s -o /dev/null "http://127.0.0.1:$PORT/dead/b"
curl -s -o /dev/null --http2-prior-knowledge -A h2ua "http://127.0.0.1:$PORT/px/h2"
for _ in $(seq 1 50); do [ "$(wc -l <"$LOG.json")" -ge 5 ] && break; sleep 0.1; done
cat "$LOG.json"
[ "$(wc -l <"$LOG.json")" = 5 ] || fail "want 5 JSON lines"
jq -e . "$LOG.json" >/dev/null || fail "a line is not JSON"
j() { jq -r "select(.request_uri == \"$1\") | $2" "$LOG.json"; }
want_ua=$(python3 -c 'print("q\" b\\s t\tab \u00e9 \ufffd\ufffd \ufffd\ufffd\ufffd end", end="")')
[ "$(j '/evil?a=%22' '.http_user_agent')" = "$want_ua" ] ||
    fail "hostile User-Agent: $(j '/evil?a=%22' '.http_user_agent' | od -c | head -5)"
[ "$(j '/evil?a=%22' '.http_referer')" = '"},"x":1,{"' ] || fail "hostile Referer"
[ "$(j '/evil?a=%22' '.host')" = h ] || fail "Host"
[ "$(j '/evil?a=%22' '.upstream_addr')" = null ] || fail "upstream_addr of a respond answer"
[ "$(j '/px/a' '.upstream_addr')" = "127.0.0.1:$UP" ] || fail "upstream_addr"
[ "$(j '/px/a' '.upstream_time_ms | type')" = number ] || fail "upstream_time_ms"
[ "$(j '/px/a' '.status')" = 200 ] || fail "proxied status"
[ "$(j '/dead/b' '.status')" = 502 ] || fail "a dead upstream's 502"
[ "$(j '/dead/b' '.upstream_addr')" = "127.0.0.1:$DEAD" ] || fail "the 502 names its upstream"
[ "$(j '/px/h2' '.server_protocol')" = HTTP/2.0 ] || fail "HTTP/2 line"
[ "$(j '/px/h2' '.http_user_agent')" = h2ua ] || fail "HTTP/2 User-Agent"
[ "$(j '/px/h2' '.upstream_addr')" = "127.0.0.1:$UP" ] || fail "HTTP/2 through the proxy"
[ "$(j '/px/h2' '.request_time_ms | type')" = number ] || fail "request_time_ms"

# ---- 4. bad values refused ------------------------------------------------------------
bad() { # INI_TEXT WANT: --check-config refuses it, saying WANT
    printf '[server]\nlisten = 127.0.0.1:0\n%b\n' "$1" >"$T/bad.ini"
    if out=$("$SWS" --config "$T/bad.ini" --check-config 2>&1); then
        fail "accepted: $1"
    fi
    grep -qF -- "$2" <<<"$out" || fail "for '$1' want '$2', got: $out"
}
bad 'log_format = $remote_addr $nosuch' 'bad.ini:3: [server] log_format: unknown variable '"'"'nosuch'"'"
bad 'log_format = json status bogus' "unknown variable 'bogus'"
bad 'log_format = no variables' "no variable"
bad 'log_format = ${status' "unknown variable"
bad "access_log = $T/no/such/dir/a.log" "bad.ini:3: [server] access_log $T/no/such/dir/a.log: cannot create it"
bad "pid_file = $T/no/such/dir/p" "bad.ini:3: [server] pid_file $T/no/such/dir/p: cannot create it"
bad "[route r]\npath_prefix = /r\nscenario = respond\naccess_log = $T/nodir/r.log" "bad.ini:6: [route r] access_log $T/nodir/r.log: cannot create it"
bad '[route r]\npath_prefix = /r\nscenario = respond\nlog_format = $bad' "[route r] log_format: unknown variable 'bad'"
bad '[route r]\npath_prefix = /r\nscenario = respond\naccess_log =' "[route r] access_log: empty"
# A reload with a bad format is refused; the old one goes on.
sed -i 's/^log_format = json$/log_format = $nope/' "$T/sws.ini"
kill -HUP "$SWS_PID"
wait_log "reload refused" || fail "a bad log_format was not refused on SIGHUP"
grep -q "unknown variable 'nope'" "$T/log" || fail "the refusal does not say why"
curl -s -o /dev/null "http://127.0.0.1:$PORT/after-bad-reload"
for _ in $(seq 1 50); do grep -q after-bad-reload "$LOG.json" && break; sleep 0.1; done
grep -qx 404 <<<"$(j /after-bad-reload .status)" ||
    fail "not served with the old format after a refused reload"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit status $SWS_STATUS"
kill "$HOLD_PID" 2>/dev/null || true # the exit's wait would wait for it

# ---- 5. over TLS: $scheme is https, for HTTP/1.1 and HTTP/2 (ALPN h2) -------------------
if command -v openssl >/dev/null; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj "/CN=localhost" -addext "subjectAltName=IP:127.0.0.1" \
        -keyout "$T/key.pem" -out "$T/cert.pem" 2>/dev/null || fail "openssl req"
    SWS_LISTEN_OPTS=tls
    start_sws "access_log = $LOG.tls\nlog_format = \$scheme \$server_protocol \$request_uri\n[tls]\ncert = $T/cert.pem\nkey = $T/key.pem"
    curl -sk --http1.1 -o /dev/null "https://127.0.0.1:$PORT/t1"
    curl -sk --http2 -o /dev/null "https://127.0.0.1:$PORT/t2"
    for _ in $(seq 1 50); do [ "$(wc -l <"$LOG.tls")" -ge 3 ] && break; sleep 0.1; done
    grep -qx 'https HTTP/1.1 /t1' "$LOG.tls" || fail "TLS HTTP/1.1 line: $(cat "$LOG.tls")"
    grep -qx 'https HTTP/2.0 /t2' "$LOG.tls" || fail "TLS HTTP/2 line: $(cat "$LOG.tls")"
    stop_sws
    [ "$SWS_STATUS" = 0 ] || fail "exit status $SWS_STATUS"
    SWS_LISTEN_OPTS=
fi

# ---- 6. a line that cannot be written is counted --------------------------------------
if [ -w /dev/full ]; then
    start_sws "access_log = /dev/full"
    curl -s -o /dev/null "http://127.0.0.1:$PORT/full"
    n=$(curl -s "http://127.0.0.1:$ADMIN_PORT/metrics" |
        awk '/^scalwsd_access_log_failures_total/ {s += $2} END {print s + 0}')
    [ "$n" -ge 2 ] || fail "scalwsd_access_log_failures_total is $n after 2 lines to /dev/full"
    stop_sws
    [ "$SWS_STATUS" = 0 ] || fail "exit status $SWS_STATUS"
fi
echo "access_log_files: ok"
