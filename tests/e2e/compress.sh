#!/usr/bin/env bash
# Compression on the fly ([compress], doc/compression.md), for the static and
# the proxy scenario, over HTTP/1.1 and HTTP/2: every body decoded back (gzip,
# br) and compared byte for byte with the file; the coding chosen by
# Accept-Encoding's q-values; Vary on every answer of a listed type; none of
# it for an unlisted type, a short body, a Range request, a 206, no-transform,
# a precompressed file or an upstream's own coding; HEAD says what GET would;
# a strong ETag becomes weak and If-None-Match still matches it.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "SKIP: python3"; exit 77; }
# Debian's python3-brotli is in the system's python3, which a pyenv may shadow.
PY=python3
"$PY" -c 'import brotli' 2>/dev/null || PY=/usr/bin/python3
"$PY" -c 'import brotli' 2>/dev/null || { echo "SKIP: python3-brotli"; exit 77; }
grep -q HTTP2 <<<"$(curl -V)" || { echo "SKIP: curl without HTTP/2"; exit 77; }

W=$T/www
mkdir -p "$W"
# A text of 3 MiB (many rounds of the filter, and more than its buffers), a
# page, a short text, an unlisted type, a file with a precompressed sibling.
python3 - "$W" <<'PY'
import gzip, random, sys
d = sys.argv[1]
r = random.Random(7)
words = ["alpha", "beta", "gamma", "delta", "<div>", "</div>", "scalwsd", "\n", "x=%d;"]
big = " ".join(r.choice(words) for _ in range(600000)).replace("%d", "17")
open(d + "/big.txt", "w").write(big[: 3 << 20])
open(d + "/page.html", "w").write("<html>" + "<p>hello, compression</p>\n" * 2000 + "</html>")
open(d + "/short.txt", "w").write("short\n" * 10)
open(d + "/blob.bin", "wb").write(bytes(r.randrange(256) for _ in range(50000)))
css = "body { color: red; }\n" * 3000
open(d + "/pre.css", "w").write(css)
open(d + "/pre.css.gz", "wb").write(gzip.compress(b"precompressed sibling\n" * 100, mtime=0))
PY

# decode CODING FILE: the body as it was before the coding ("" for none).
decode() {
    "$PY" - "$1" "$2" <<'PY'
import brotli, gzip, sys
data = open(sys.argv[2], "rb").read()
c = sys.argv[1]
out = gzip.decompress(data) if c == "gzip" else brotli.decompress(data) if c == "br" else data
sys.stdout.buffer.write(out)
PY
}
# get PROTO URL [curl args...]: head into $T/h (lowercased names), body into $T/b.
get() {
    local proto=$1 url=$2
    shift 2
    local p=(--http1.1)
    [ "$proto" = h2 ] && p=(--http2-prior-knowledge)
    curl -s -m 30 "${p[@]}" -D "$T/h" -o "$T/b" "$@" "$url" || fail "curl $proto $url $*"
    tr -d '\r' <"$T/h" | sed 's/^\([^:]*\):/\L\1:/' >"$T/hl"
}
field() { { grep -i "^$1:" "$T/hl" || true; } | head -1 | sed 's/^[^:]*: *//'; }
# expect PROTO URL AE CODING FILE: the coding chosen, the body decoded equal to FILE.
expect() {
    local proto=$1 url=$2 ae=$3 want=$4 file=$5
    if [ -n "$ae" ]; then get "$proto" "$url" -H "Accept-Encoding: $ae"; else get "$proto" "$url"; fi
    local ce
    ce=$(field content-encoding)
    [ "$ce" = "$want" ] || fail "$proto $url [$ae]: Content-Encoding '$ce', want '$want': $(cat "$T/hl")"
    decode "$ce" "$T/b" | cmp -s - "$file" || fail "$proto $url [$ae]: body differs once decoded"
    if [ -n "$want" ]; then
        [ -z "$(field content-length)" ] || fail "$proto $url: Content-Length on a compressed answer"
        [ "$proto" = h2 ] || [ "$(field transfer-encoding)" = chunked ] ||
            fail "$proto $url: not chunked: $(cat "$T/hl")"
        [ -z "$(field accept-ranges)" ] || fail "$proto $url: Accept-Ranges on a compressed answer"
    fi
}
vary_ae() { grep -qi accept-encoding <<<"$(field vary)"; }

ROUTE="scenario = static\nroot = $W\nstrip_prefix = on\ncompress = on"
start_sws "scenario = static\n[static]\nroot = $W\n[compress]\ncompress = on
[route nt]\npath_prefix = /nt/\n$ROUTE\ncache_control = public, no-transform
[route off]\npath_prefix = /off/\nscenario = static\nroot = $W\nstrip_prefix = on\nprecompressed = off
[route lv]\npath_prefix = /lv/\n$ROUTE\ncompress_types = text/*\ncompress_level_gzip = 1\ncompress_level_br = 0\ncompress_min_length = 0\nprecompressed = off"
S=http://127.0.0.1:$PORT

for proto in h1 h2; do
    # The coding by q-values: br when they tie, q=0 refuses, "*" covers the rest.
    expect $proto $S/big.txt "gzip" gzip "$W/big.txt"
    expect $proto $S/big.txt "br" br "$W/big.txt"
    expect $proto $S/page.html "gzip, deflate, br" br "$W/page.html"
    expect $proto $S/page.html "br;q=0.5, gzip" gzip "$W/page.html"
    expect $proto $S/page.html "br;q=0, gzip;q=0.001" gzip "$W/page.html"
    expect $proto $S/page.html "gzip;q=0" "" "$W/page.html"
    expect $proto $S/page.html "*" br "$W/page.html"
    expect $proto $S/page.html "*;q=0, gzip" gzip "$W/page.html"
    expect $proto $S/page.html "br;q=0.5, identity" "" "$W/page.html"
    expect $proto $S/page.html "identity;q=0" "" "$W/page.html"
    expect $proto $S/page.html "gzip;q=2, br;q=x" "" "$W/page.html"
    expect $proto $S/page.html "" "" "$W/page.html"
    vary_ae || fail "$proto: no Vary on a plain answer of a listed type"
    expect $proto $S/page.html "gzip" gzip "$W/page.html"
    vary_ae || fail "$proto: no Vary on a compressed answer"
    # ETag: weak when compressed, strong when not; If-None-Match matches the weak one.
    etag=$(field etag)
    [[ $etag == W/\"* ]] || fail "$proto: ETag '$etag' of a compressed answer is not weak"
    get $proto $S/page.html -H "Accept-Encoding: gzip" -H "If-None-Match: $etag"
    grep -q '^HTTP/[0-9.]* 304' "$T/hl" || fail "$proto: If-None-Match $etag: $(cat "$T/hl")"
    [ "$(field etag)" = "$etag" ] && vary_ae || fail "$proto: 304 without the 200's ETag and Vary: $(cat "$T/hl")"
    get $proto $S/page.html
    [[ $(field etag) == \"* ]] || fail "$proto: ETag of a plain answer: $(field etag)"
    # HEAD: the head a GET would have (the coding, no length), no body.
    get $proto $S/big.txt -I -H "Accept-Encoding: gzip"
    [ "$(field content-encoding)" = gzip ] && [ -z "$(field content-length)" ] ||
        fail "$proto HEAD: $(cat "$T/hl")"
    cmp -s "$T/b" "$T/h" || fail "$proto HEAD: a body" # (-I writes the head where a body would go)
    # Not compressed: a Range request (206, or 200 for a range it ignores),
    # a short body, an unlisted type (no Vary either), a precompressed file
    # (its own bytes), no-transform, a route with compress off.
    get $proto $S/big.txt -H "Accept-Encoding: gzip" -H "Range: bytes=10-19"
    grep -q '^HTTP/[0-9.]* 206' "$T/hl" && [ -z "$(field content-encoding)" ] &&
        [ "$(cat "$T/b")" = "$(head -c 20 "$W/big.txt" | tail -c 10)" ] || fail "$proto Range: $(cat "$T/hl")"
    vary_ae || fail "$proto: no Vary on a 206 of a listed type"
    get $proto $S/big.txt -H "Accept-Encoding: gzip" -H "Range: bytes=9-2"
    [ -z "$(field content-encoding)" ] || fail "$proto: a Range request got a coding"
    expect $proto $S/short.txt "gzip" "" "$W/short.txt"
    vary_ae || fail "$proto: no Vary on a short answer of a listed type"
    expect $proto $S/blob.bin "gzip" "" "$W/blob.bin"
    get $proto $S/pre.css -H "Accept-Encoding: gzip"
    [ "$(field content-encoding)" = gzip ] && cmp -s "$T/b" "$W/pre.css.gz" ||
        fail "$proto: the precompressed sibling was not sent as it is: $(cat "$T/hl")"
    expect $proto $S/nt/page.html "gzip" "" "$W/page.html"
    vary_ae || fail "$proto: no Vary on a no-transform answer"
    expect $proto $S/off/page.html "gzip" "" "$W/page.html"
    vary_ae && fail "$proto: Vary with compress = off"
    # A route's own keys: text/* listed, every length, the fastest levels.
    expect $proto $S/lv/short.txt "gzip" gzip "$W/short.txt"
    expect $proto $S/lv/big.txt "br" br "$W/big.txt"
    expect $proto $S/lv/blob.bin "gzip" "" "$W/blob.bin"
    vary_ae && fail "$proto: Vary on an unlisted type" # (precompressed = off there)
done
# HTTP/1.0: no chunks; the compressed body ends with the close.
out=$(raw 'GET /page.html HTTP/1.0\r\nAccept-Encoding: gzip\r\n\r\n' | tee "$T/raw10" | tr -d '\r' | sed '/^$/q')
grep -qi '^content-encoding: gzip' <<<"$out" && ! grep -qi 'transfer-encoding\|content-length' <<<"$out" ||
    fail "HTTP/1.0: $out"
python3 - "$T/raw10" "$W/page.html" <<'PY' || fail "HTTP/1.0 body"
import gzip, sys
raw = open(sys.argv[1], "rb").read()
assert gzip.decompress(raw.split(b"\r\n\r\n", 1)[1]) == open(sys.argv[2], "rb").read()
PY
# Several at once on one HTTP/2 connection (python3-h2: curl 7.88's -Z with
# prior knowledge runs one), each decoded and compared; and keep-alive after
# compressed answers on HTTP/1.1.
"$PY" - "$PORT" "$W" <<'PY' || fail "HTTP/2 streams at once"
import brotli, gzip, socket, sys
import h2.config, h2.connection, h2.events
port, www = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port), timeout=30)
c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
c.initiate_connection()
want = {}
for i, (name, ae) in enumerate([("big.txt", "br"), ("page.html", "gzip"), ("big.txt", "gzip"),
                                ("short.txt", "br"), ("page.html", "br"), ("big.txt", "br")]):
    sid = c.get_next_available_stream_id()
    c.send_headers(sid, [(":method", "GET"), (":path", "/" + name), (":scheme", "http"),
                         (":authority", "x"), ("accept-encoding", ae)], end_stream=True)
    want[sid] = name
s.sendall(c.data_to_send())
heads, bodies, done = {}, {sid: b"" for sid in want}, set()
while len(done) < len(want):
    data = s.recv(65536)
    assert data, "closed"
    for e in c.receive_data(data):
        if isinstance(e, h2.events.ResponseReceived):
            heads[e.stream_id] = dict(e.headers)
        elif isinstance(e, h2.events.DataReceived):
            bodies[e.stream_id] += e.data
            c.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
        elif isinstance(e, h2.events.StreamEnded):
            done.add(e.stream_id)
        elif isinstance(e, h2.events.StreamReset):
            sys.exit("reset %d" % e.stream_id)
    s.sendall(c.data_to_send())
for sid, name in want.items():
    ce = heads[sid].get(b"content-encoding", b"").decode()
    b = bodies[sid]
    plain = gzip.decompress(b) if ce == "gzip" else brotli.decompress(b) if ce == "br" else b
    assert plain == open(www + "/" + name, "rb").read(), (sid, name, ce)
PY
# More br answers at once than a loop has br encoders for (16): the rest get
# gzip, which these clients take too (one connection: one loop).
"$PY" - "$PORT" <<'PY' || fail "br encoders all busy"
import socket, sys
import h2.config, h2.connection, h2.events
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
c.initiate_connection()
for i in range(20):
    c.send_headers(c.get_next_available_stream_id(),
                   [(":method", "GET"), (":path", "/big.txt?%d" % i), (":scheme", "http"),
                    (":authority", "x"), ("accept-encoding", "br, gzip")], end_stream=True)
s.sendall(c.data_to_send())
codings = {}
while len(codings) < 20:
    data = s.recv(65536)
    assert data, "closed"
    for e in c.receive_data(data):
        if isinstance(e, h2.events.ResponseReceived):
            codings[e.stream_id] = dict(e.headers).get(b"content-encoding")
n = sorted(codings.values())
assert n.count(b"br") == 16 and n.count(b"gzip") == 4, n
PY
curl -s -m 60 --http1.1 -H "Accept-Encoding: gzip" -o "$T/k1" "$S/big.txt" -o "$T/k2" "$S/page.html" \
    -o "$T/k3" "$S/short.txt" || fail "keep-alive"
decode gzip "$T/k1" | cmp -s - "$W/big.txt" && decode gzip "$T/k2" | cmp -s - "$W/page.html" &&
    cmp -s "$T/k3" "$W/short.txt" || fail "HTTP/1.1 keep-alive after compressed answers"
# /metrics counts them: answers by coding, bytes before and after.
curl -s -m 10 "http://127.0.0.1:$ADMIN_PORT/metrics" >"$T/metrics" || fail "metrics"
sum() { awk -v m="$1" 'index($0, m) == 1 { s += $NF } END { print s + 0 }' "$T/metrics"; }
[ "$(sum 'scalwsd_compressed_answers_total{loop="0",coding="br"}')" -ge 16 ] ||
    [ "$(sum 'scalwsd_compressed_answers_total{loop="1",coding="br"}')" -ge 16 ] ||
    fail "br answers not counted: $(grep compress "$T/metrics")"
cin=$(sum scalwsd_compress_input_bytes_total)
cout=$(sum scalwsd_compress_output_bytes_total)
[ "$cin" -gt $((10 << 20)) ] && [ "$cout" -gt 0 ] && [ "$cout" -lt "$cin" ] ||
    fail "compress bytes: in $cin out $cout"
# SIGHUP: a bad [compress] value is refused and the old keys go on serving;
# compress = off then takes effect without a restart. (The ini's listen is
# port 0: the reload keeps the bound port.)
sed -i 's/^compress = on$/compress = on\ncompress_level_gzip = 10/' "$T/sws.ini"
kill -HUP "$SWS_PID"
wait_log 'reload refused.*compress_level_gzip' || fail "a bad compress_level_gzip was not refused"
expect h1 $S/page.html "gzip" gzip "$W/page.html"
sed -i -e '/^compress_level_gzip = 10$/d' -e '0,/^compress = on$/s//compress = off/' "$T/sws.ini"
kill -HUP "$SWS_PID"
wait_log "every loop serves generation" || fail "no reload: $(tail -3 "$T/log")"
expect h1 $S/page.html "gzip" "" "$W/page.html"
expect h2 $S/lv/page.html "br" br "$W/page.html" # a route's own [compress] keys stay
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "static: exit $SWS_STATUS"

# The proxy: compresses what the upstream did not.
python3 "$(dirname "$0")/compress_upstream.py" "$T/up.port" "$W" 90 &
UP_PID=$!
trap 'kill -KILL $UP_PID 2>/dev/null || true; cleanup' EXIT
wait_ready "$T/up.port" "$SWS_START_SECS" "$UP_PID" || fail "upstream did not start"
UP=$(cat "$T/up.port")
start_sws "scenario = proxy\n[proxy]\nupstream = 127.0.0.1:$UP\n[compress]\ncompress = on"
S=http://127.0.0.1:$PORT
for proto in h1 h2; do
    expect $proto $S/file/big.txt "gzip" gzip "$W/big.txt"
    expect $proto $S/file/page.html "br" br "$W/page.html"
    vary_ae || fail "proxy $proto: no Vary"
    expect $proto $S/stream/big.txt "gzip" gzip "$W/big.txt"
    expect $proto $S/stream/page.html "br" br "$W/page.html"
    expect $proto $S/file/short.txt "gzip" "" "$W/short.txt"
    expect $proto $S/file/blob.bin "gzip" "" "$W/blob.bin"
    expect $proto $S/nt/page.html "br" "" "$W/page.html"
    # The upstream's own gzip goes through as it is, never twice.
    get $proto $S/gz/page.html -H "Accept-Encoding: br, gzip"
    [ "$(field content-encoding)" = gzip ] && [ -n "$(field content-length)" ] &&
        decode gzip "$T/b" | cmp -s - "$W/page.html" || fail "proxy $proto: upstream's gzip: $(cat "$T/hl")"
    expect $proto $S/vary/page.html "gzip" gzip "$W/page.html"
    [ "$(grep -ci '^vary:' "$T/hl")" = 1 ] || fail "proxy $proto: Vary twice: $(cat "$T/hl")"
    expect $proto $S/etag/page.html "gzip" gzip "$W/page.html"
    [ "$(field etag)" = 'W/"up-1"' ] || fail "proxy $proto: ETag $(field etag)"
    get $proto $S/file/big.txt -I -H "Accept-Encoding: br"
    [ "$(field content-encoding)" = br ] && [ -z "$(field content-length)" ] ||
        fail "proxy $proto HEAD: $(cat "$T/hl")"
    get $proto $S/file/big.txt -H "Accept-Encoding: gzip" -H "Cache-Control: no-transform"
    [ -z "$(field content-encoding)" ] || fail "proxy $proto: a no-transform request got a coding"
    # An upstream that dies mid-body: the client sees the answer cut short
    # (no last chunk, a reset stream), never a complete one; the server goes on.
    p=(--http1.1)
    [ $proto = h2 ] && p=(--http2-prior-knowledge)
    if curl -s -m 30 "${p[@]}" -H "Accept-Encoding: gzip" -o "$T/cut" "$S/cut/big.txt"; then
        fail "proxy $proto: a cut answer looked complete"
    fi
    expect $proto $S/file/page.html "gzip" gzip "$W/page.html"
done
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "proxy: exit $SWS_STATUS"
echo ok
