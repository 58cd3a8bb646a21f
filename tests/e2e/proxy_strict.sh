#!/usr/bin/env bash
# scenario proxy (as the one scenario, or as a route with "routed" as $1): a
# request that breaks a [limits] value, could be read two
# ways (tests/http/test_strict.c's cases that apply to a proxy) or stops
# half-way (408) is answered by scalwsd with the respond scenario's status,
# and the upstream never receives a byte of it: the python upstream records
# every byte it reads.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "SKIP: python3"; exit 77; }

start_test_upstream 120 "$T/rec"

# proxy_strict_routed.sh: the proxy as a [route] (path_prefix /), its heads
# kept until the route is chosen, then handed to it.
if [ "${1:-}" = routed ]; then
    px="[route proxied]\npath_prefix = /\nscenario = proxy\nupstream = 127.0.0.1:$UP"
else
    px="scenario = proxy\n[proxy]\nupstream = 127.0.0.1:$UP"
fi
# HTTP/1.1's own strictness: with http2 on, the preface case below would begin an
# HTTP/2 connection instead of a 505 (tests/e2e/http2.sh covers that).
start_sws "event_loops = 1\nhttp2 = off\n$px\n[limits]\nheader_bytes = 1k\nheader_count = 10\nuri_length = 64\nbody_size = 100\nheader_timeout = 1s"
touch "$T/rec"
recorded() { stat -c %s "$T/rec"; }

# Recording works: a good request reaches the upstream.
before=$(recorded)
r=$(raw 'GET /good HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n')
grep -q '^HTTP/1.1 200' <<<"$r" || fail "good request: $r"
[ "$(recorded)" -gt "$before" ] || fail "the upstream recorded nothing of a good request"

big=$(head -c 2000 /dev/zero | tr '\0' a)
hs=""
for i in $(seq 1 11); do hs="${hs}X-$i: v\\r\\n"; done
long=$(head -c 100 /dev/zero | tr '\0' u)
b100=$(head -c 100 /dev/zero | tr '\0' b)
P='POST / HTTP/1.1\r\nHost: a\r\n'
G='GET / HTTP/1.1\r\nHost: a\r\n'
C="${P}Transfer-Encoding: chunked\r\n\r\n"
# want|request (printf %b escapes)
cases=$(
    cat <<END
431|${G}X-Big: $big\r\n\r\n
431|${G}$hs\r\n
414|GET /$long HTTP/1.1\r\nHost: a\r\n\r\n
413|${P}Content-Length: 101\r\n\r\n
413|${C}64\r\n$b100\r\n1\r\nb\r\n0\r\n\r\n
400|${P}Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n
400|${P}Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n
400|${P}Transfer-Encoding: chunked\r\nContent-Length: 0\r\n\r\n0\r\n\r\n
400|${P}Content-Length: 3\r\nContent-Length: 3\r\n\r\nabc
400|${P}Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd
400|${P}Content-Length: 3, 3\r\n\r\nabc
400|${P}Content-Length: +3\r\n\r\nabc
400|${P}Content-Length: -3\r\n\r\nabc
400|${P}Content-Length: 0x3\r\n\r\nabc
400|${P}Content-Length: 1 2\r\n\r\nabc
400|${P}Content-Length: 3a\r\n\r\nabc
400|${P}Content-Length: \r\n\r\nabc
400|${P}Content-Length: 99999999999999999999999\r\n\r\nabc
400|${P}Transfer-Encoding: gzip\r\n\r\nabc
400|${P}Transfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n
400|${P}Transfer-Encoding: chunkedx\r\n\r\n0\r\n\r\n
400|${P}Transfer-Encoding: identity\r\n\r\n0\r\n\r\n
400|${P}Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n0\r\n\r\n
400|${P}Transfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n
400|${P}Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n
400|${P}Transfer-Encoding: \r\n\r\n0\r\n\r\n
400|${P}Transfer-Encoding: ,\r\n\r\n0\r\n\r\n
400|POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n
501|${P}Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n
501|${P}Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n
400|${C}zz\r\nabc\r\n0\r\n\r\n
400|${C}fffffffffffffffff\r\nabc\r\n0\r\n\r\n
400|${C}-1\r\nabc\r\n0\r\n\r\n
400|${C}0x3\r\nabc\r\n0\r\n\r\n
400|${C}3 \r\nabc\r\n0\r\n\r\n
400|${C} 3\r\nabc\r\n0\r\n\r\n
400|${C}\r\nabc\r\n0\r\n\r\n
400|${C}3\nabc\r\n0\r\n\r\n
400|${C}3\r\nabcX\r\n0\r\n\r\n
400|${G}X: a\r\n b\r\n\r\n
400|${G}X: a\r\n\tb\r\n\r\n
400|${G}X:\r\n b\r\n\r\n
400|GET / HTTP/1.1\r\n Host: a\r\n\r\n
400|${P}Content-Length: 3\r\n \r\n\r\nabc
400|${G}X: a\rb\r\n\r\n
400|GET / HTTP/1.1\rHost: a\r\n\r\n
400|${G}\r\r\n
400|GET /a\rb HTTP/1.1\r\nHost: a\r\n\r\n
400|\rGET / HTTP/1.1\r\nHost: a\r\n\r\n
400|GET / HTTP/1.1\r\nHost: a\r\nX\r: b\r\n\r\n
400|GET / HTTP/1.1\nHost: a\r\n\r\n
400|${G}X: b\n\r\n
400|${G}\n
400|GET / HTTP/1.1\nHost: a\n\n
400|\nGET / HTTP/1.1\r\nHost: a\r\n\r\n
400|GET / HTTP/1.1\r\nHost : a\r\n\r\n
400|GET / HTTP/1.1\r\nHost\t: a\r\n\r\n
400|${P}Content-Length : 3\r\n\r\nabc
400|${P}Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n
400|GET / HTTP/1.1\r\nHo\x01st: a\r\n\r\n
400|GET / HTTP/1.1\r\nHo\0st: a\r\n\r\n
400|${G}X\x7f: a\r\n\r\n
400|${G}X: a\x01z\r\n\r\n
400|${G}X: a\0z\r\n\r\n
400|${G}X: a\x7fz\r\n\r\n
400|${G}: empty name\r\n\r\n
400|GET /a\x01 HTTP/1.1\r\nHost: a\r\n\r\n
400|GET /a\tb HTTP/1.1\r\nHost: a\r\n\r\n
400|GET / HTTP/1.1\r\n\r\n
400|GET / HTTP/1.1\r\nX-Host: a\r\n\r\n
400|GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n
400|GET / HTTP/1.1\r\nHost: a\r\nhOST: b\r\n\r\n
400|GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n
400|GET / HTTP/1.1\r\nHost: a b\r\n\r\n
400|GET / HTTP/1.1\r\nHost: a/b\r\n\r\n
400|GET / HTTP/1.1\r\nHost: u@a\r\n\r\n
400|GET / HTTP/1.1\r\nHost: a\xe9\r\n\r\n
505|GET / HTTP/1.2\r\nHost: a\r\n\r\n
505|GET / HTTP/2.0\r\nHost: a\r\n\r\n
505|GET / HTTP/0.9\r\nHost: a\r\n\r\n
505|PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n
400|GET / HTTP/1.x\r\nHost: a\r\n\r\n
400|GET / HTTP/11.1\r\nHost: a\r\n\r\n
400|GET / http/1.1\r\nHost: a\r\n\r\n
400|GET / HTTP/1.1 \r\nHost: a\r\n\r\n
400|GET /\r\n\r\n
400|GET  / HTTP/1.1\r\nHost: a\r\n\r\n
400|GET /  HTTP/1.1\r\nHost: a\r\n\r\n
400| GET / HTTP/1.1\r\nHost: a\r\n\r\n
400|${C}0\r\nX: a\r\n b\r\n\r\n
400|${C}0\r\nX: a\n\r\n
400|${C}0\r\nX: a\r\n\n
400|${C}0\r\n\n
400|${C}0\r\n\r\r\n
400|${C}3\r\nabc\r\n0;e=1\r\nX: a\rb\r\n\r\n
END
)
# Each case twice, on fresh connections: in one write, and a line per write
# (so the proxy has the head before a fault later in the request). After
# each, the upstream must have recorded nothing more.
printf '%s\n' "$cases" >"$T/cases"
python3 - "$PORT" "$T/rec" "$T/cases" <<'PY' || fail "strict cases"
import os, socket, sys, time
port, rec = int(sys.argv[1]), sys.argv[2]
cases = [l.split("|", 1) for l in open(sys.argv[3], encoding="latin-1").read().split("\n") if l]

def send(data, split):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    parts = data.split(b"\n")
    if split:
        for i, p in enumerate(parts):
            s.sendall(p + (b"\n" if i < len(parts) - 1 else b""))
            time.sleep(0.002)
    else:
        s.sendall(data)
    out = b""
    while True:
        try:
            x = s.recv(65536)
        except ConnectionResetError:
            break
        if not x:
            break
        out += x
    s.close()
    return out.split(b"\r\n", 1)[0].decode("latin-1")

n = 0
for want, req in cases:
    data = req.encode("latin-1").decode("unicode_escape").encode("latin-1")
    for split in (False, True):
        before = os.path.getsize(rec)
        got = send(data, split)
        if not got.startswith("HTTP/1.1 %s " % want):
            sys.exit("case %d (split %s): want %s, got %r for %r" % (n + 1, split, want, got, req))
        if os.path.getsize(rec) != before:
            with open(rec, "rb") as f:
                f.seek(before)
                sys.exit("case %d (split %s): the upstream received %r" % (n + 1, split, f.read()))
    n += 1
print(n, "cases")
PY
n=$(grep -c . "$T/cases")
[ "$n" -ge 90 ] || fail "only $n cases ran"

# Pipelined: the good request is forwarded and answered, the bad one after it
# is refused and never forwarded.
before=$(recorded)
r=$(raw "GET /first HTTP/1.1\r\nHost: a\r\n\r\n${P}Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd")
[ "$(echo "$r" | grep -c '^HTTP/1.1 ')" = 2 ] || fail "pipelined good+bad: $r"
grep -q '^HTTP/1.1 400' <<<"$r" || fail "pipelined bad not refused: $r"
sleep 0.3
got=$(tail -c +$((before + 1)) "$T/rec")
case $got in *first*) ;; *) fail "the good pipelined request was not forwarded: $got" ;; esac
case $got in *Content-Length*) fail "the bad pipelined request reached the upstream: $got" ;; esac

# Late bytes: nothing arrives at the upstream after the answers either.
sleep 0.3
[ "$(recorded)" = "$(($(stat -c %s "$T/rec")))" ] || true
grep -c 'Content-Length: 3' "$T/rec" >/dev/null && fail "a refused request reached the upstream"

# Half a request, then silence: 408 (header_timeout), and nothing forwarded.
before=$(recorded)
r=$(raw 'GET /half HTTP/1.1\r\nHost: a\r\n' 4)
case $r in "HTTP/1.1 408 "*) ;; *) fail "header timeout: $r" ;; esac
[ "$(recorded)" = "$before" ] || fail "half a request reached the upstream"

m=$(curl -s "http://127.0.0.1:$ADMIN_PORT/metrics")
for st in 400 408 413 414 431; do
    echo "$m" | grep -E "scalwsd_errors_total\{loop=\"0\",status=\"$st\"\} [1-9]" >/dev/null ||
        fail "metrics lack errors for $st: $(echo "$m" | grep errors_total)"
done
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit $SWS_STATUS"
echo ok
