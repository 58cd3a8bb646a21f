#!/usr/bin/env bash
# The proxy answers on the HTTP connection (issue 17): behind a tls listener
# (curl -k) with chunked bodies both ways and keep-alive; back-pressure both
# ways, proved by scalwsd's RSS staying bounded while a client reads a large
# answer slowly and while an upstream reads a large body slowly (both answers
# complete and exact); an idle client connection costs a few KiB, not the
# ~150 KB a proxy session and its upstream held before. The retry of a dead
# pooled connection is proxy_faults.sh's. Every curl has -m.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "SKIP: python3"; exit 77; }
command -v openssl >/dev/null || { echo "SKIP: openssl"; exit 77; }

start_test_upstream 110
rss() { awk '/^VmRSS/ {print $2}' "/proc/$SWS_PID/status"; }
# peak_rss_during CMD...: runs CMD, sampling scalwsd's RSS; prints the peak (KiB).
peak_rss_during() {
    "$@" &
    local job=$! peak=0 r
    while kill -0 "$job" 2>/dev/null; do
        r=$(rss)
        [ "$r" -gt "$peak" ] && peak=$r
        sleep 0.05
    done
    wait "$job" || true
    echo "$peak"
}

# ---- behind a tls listener ----------------------------------------------------
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj "/CN=localhost" -keyout "$T/key.pem" -out "$T/cert.pem" 2>/dev/null || fail "openssl req"
SWS_LISTEN_OPTS=tls
start_sws "scenario = proxy\nevent_loops = 1\n[proxy]\nupstream = 127.0.0.1:$UP\n[tls]\ncert = $T/cert.pem\nkey = $T/key.pem"
URL="https://127.0.0.1:$PORT"
C=(curl -sk --http1.1 -m 10) # HTTP/1.1 framing is what this checks (ALPN would choose h2)
h0=$(metric_sum scalwsd_tls_handshakes_total)
n=$("${C[@]}" "$URL/a/[1-3]" | grep -c '^ok')
[ "$n" = 3 ] || fail "tls: $n of 3 keep-alive answers"
[ $(($(metric_sum scalwsd_tls_handshakes_total) - h0)) = 1 ] || fail "tls: keep-alive took several handshakes"
head -c 300000 /dev/urandom >"$T/in"
# A chunked request body, twice on one connection, echoed back.
h0=$(metric_sum scalwsd_tls_handshakes_total)
"${C[@]}" -H 'Transfer-Encoding: chunked' --data-binary @"$T/in" "$URL/echo" -o "$T/o1" \
    "$URL/echo" -o "$T/o2" || fail "tls: chunked echo"
cmp -s "$T/in" "$T/o1" && cmp -s "$T/in" "$T/o2" || fail "tls: chunked request body differs"
[ $(($(metric_sum scalwsd_tls_handshakes_total) - h0)) = 1 ] || fail "tls: two bodies took two handshakes"
# A chunked answer, re-chunked to the client.
"${C[@]}" -D "$T/h" -o "$T/out" "$URL/chunked" || fail "tls: chunked answer"
grep -qi '^Transfer-Encoding: chunked' "$T/h" || fail "tls: answer not chunked"
[ "$(stat -c %s "$T/out")" = 35000 ] || fail "tls: chunked answer size $(stat -c %s "$T/out")"
[ "$(metric_sum scalwsd_upstream_reuses_total)" -ge 4 ] || fail "tls: upstream connections not reused"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "tls: exit $SWS_STATUS"
SWS_LISTEN_OPTS=

# ---- back-pressure -----------------------------------------------------------------
start_sws "scenario = proxy\nevent_loops = 1\n[limits]\nbody_size = 64m\n[proxy]\nupstream = 127.0.0.1:$UP\nread_timeout = 30s"
URL="http://127.0.0.1:$PORT"
curl -s -m 10 -o /dev/null "$URL/big/1" || fail "warm-up"
r0=$(rss)
# A client that reads 2 MB/s of a 200 MiB answer for 3 s: the upstream could
# send it all in that time; scalwsd holds at most a few buffers of it.
peak=$(peak_rss_during curl -s -m 3 --limit-rate 2M -o /dev/null "$URL/big/200")
[ $((peak - r0)) -lt 16384 ] || fail "slow reader: RSS grew $((peak - r0)) KiB (buffered the answer)"
# The same path read whole, slowly: every byte arrives.
size=$(curl -s -m 20 --limit-rate 16M -o /dev/null -w '%{size_download}' "$URL/big/16")
[ "$size" = 16777216 ] || fail "slow reader: $size bytes of 16 MiB"
# An upstream that reads a 48 MiB body at a few MB/s: the client is held, not
# buffered, and the upstream saw every byte.
head -c $((48 << 20)) /dev/zero >"$T/big"
r0=$(rss)
peak=$(peak_rss_during curl -s -m 40 -H 'Expect:' --data-binary @"$T/big" -o "$T/got" "$URL/slowread")
[ "$(cat "$T/got")" = "got=$((48 << 20))" ] || fail "slow upstream: answer $(cat "$T/got")"
[ $((peak - r0)) -lt 16384 ] || fail "slow upstream: RSS grew $((peak - r0)) KiB (buffered the body)"
rm -f "$T/big"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "back-pressure: exit $SWS_STATUS"

# ---- idle connections ------------------------------------------------------------------
N=1000
ulimit -n 4096
start_sws "scenario = proxy\nevent_loops = 1\n[proxy]\nupstream = 127.0.0.1:$UP"
curl -s -m 10 -o /dev/null "http://127.0.0.1:$PORT/warm" || fail "warm-up"
per=$(timeout 60 python3 - "$PORT" "$N" "$SWS_PID" <<'PY'
import socket, sys, time
port, n, pid = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
def rss():
    return int([l for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS")][0].split()[1])
def ask(s):
    s.sendall(b"GET /idle HTTP/1.1\r\nHost: x\r\n\r\n")
    got = b""
    while not got.endswith(b"ok\n"):
        part = s.recv(4096)
        if not part:
            raise SystemExit("closed")
        got += part
warm = [socket.create_connection(("127.0.0.1", port)) for _ in range(50)]
for s in warm:
    ask(s)
time.sleep(2.5)  # the free lists are trimmed once a second
before = rss()
conns = []
for _ in range(n):  # one request each, one after the other: then idle keep-alive
    s = socket.create_connection(("127.0.0.1", port))
    ask(s)
    conns.append(s)
time.sleep(2.5)
print(round((rss() - before) * 1024 / n))
PY
) || fail "idle connections: the client failed"
echo "idle proxied keep-alive connection: $per bytes"
[ "$per" -lt 6144 ] || fail "an idle client connection costs $per bytes (target <= 4 KiB)"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "idle: exit $SWS_STATUS"
echo ok
