#!/usr/bin/env bash
# The static scenario with curl: every status it answers (200 206 301 304 400
# 403 404 405 416) and every header it sets (Content-Type from mime.types and
# default_type, ETag and Last-Modified, Accept-Ranges, Content-Range,
# Content-Encoding and Vary for precompressed siblings, Cache-Control, Allow,
# Location); path safety (traversal, %00, %2F, symlinks out of the root,
# dotfiles) through openat2 and through the fallback walk; large and cold files
# byte for byte; the open-file cache in /metrics; pipelining behind a large
# body; the access log; a reload to another root.
. "$(dirname "$0")/lib.sh"

make_static_tree 4194304

# The open-file cache's entries live 60 s here, not 1 s: the hits counted
# below must not depend on how fast a loaded machine runs the checks.
ini="scenario = static
access_log = $T/access.log
[static]
root = $R
open_file_cache_valid = 60s
cache_control = public, max-age=60"

U() { echo "http://127.0.0.1:$PORT$1"; }
# code PATH [curl args...]: the status only.
code() {
    local p=$1
    shift
    curl -s --path-as-is -o /dev/null -w '%{http_code}' "$@" "$(U "$p")"
}
# hdr NAME PATH [curl args...]: one response header's value (CR stripped).
hdr() {
    local n=$1 p=$2
    shift 2
    curl -s --path-as-is -o /dev/null -D - "$@" "$(U "$p")" | tr -d '\r' |
        awk -v n="$(echo "$n" | tr A-Z a-z)" -F': ' 'tolower($1) == n { print $2; exit }'
}
expect() { [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"; }

run_checks() {
    local mode=$1
    # --- 200 and its headers
    expect "$mode GET /a.txt" "$(code /a.txt)" 200
    expect "$mode body" "$(curl -s "$(U /a.txt)")" hello
    expect "$mode Content-Type" "$(hdr Content-Type /a.txt)" text/plain
    expect "$mode css type" "$(hdr Content-Type /style.css)" text/css
    expect "$mode default_type" "$(hdr Content-Type /data.unknownext)" application/octet-stream
    local mtime size
    mtime=$(stat -c %Y "$R/a.txt")
    size=$(stat -c %s "$R/a.txt")
    local etag
    etag=$(printf '"%x-%x"' "$mtime" "$size")
    expect "$mode ETag (nginx's form)" "$(hdr ETag /a.txt)" "$etag"
    expect "$mode Last-Modified" "$(hdr Last-Modified /a.txt)" "Thu, 02 Jan 2020 03:04:05 GMT"
    expect "$mode Accept-Ranges" "$(hdr Accept-Ranges /a.txt)" bytes
    expect "$mode Content-Length" "$(hdr Content-Length /a.txt)" 6
    expect "$mode Cache-Control" "$(hdr Cache-Control /a.txt)" "public, max-age=60"
    # --- HEAD: the same head, no body
    expect "$mode HEAD" "$(code /a.txt -I)" 200
    expect "$mode HEAD length" "$(hdr Content-Length /a.txt -I)" 6
    expect "$mode HEAD body" "$(curl -s -I "$(U /a.txt)" | tr -d '\r' | sed '1,/^$/d' | wc -c)" 0
    # --- conditionals
    expect "$mode If-None-Match" "$(code /a.txt -H "If-None-Match: $etag")" 304
    expect "$mode If-None-Match W/" "$(code /a.txt -H "If-None-Match: W/$etag")" 304
    expect "$mode If-None-Match list" "$(code /a.txt -H "If-None-Match: \"x\", $etag")" 304
    expect "$mode If-None-Match *" "$(code /a.txt -H 'If-None-Match: *')" 304
    expect "$mode If-None-Match other" "$(code /a.txt -H 'If-None-Match: "nope"')" 200
    expect "$mode 304 keeps ETag" "$(hdr ETag /a.txt -H "If-None-Match: $etag")" "$etag"
    expect "$mode If-Modified-Since same" \
        "$(code /a.txt -H 'If-Modified-Since: Thu, 02 Jan 2020 03:04:05 GMT')" 304
    expect "$mode If-Modified-Since later" \
        "$(code /a.txt -H 'If-Modified-Since: Fri, 03 Jan 2020 00:00:00 GMT')" 304
    expect "$mode If-Modified-Since earlier" \
        "$(code /a.txt -H 'If-Modified-Since: Wed, 01 Jan 2020 00:00:00 GMT')" 200
    expect "$mode INM wins over IMS" \
        "$(code /a.txt -H 'If-None-Match: "nope"' -H 'If-Modified-Since: Fri, 03 Jan 2020 00:00:00 GMT')" 200
    # --- ranges
    expect "$mode Range" "$(code /a.txt -H 'Range: bytes=1-3')" 206
    expect "$mode Range body" "$(curl -s -H 'Range: bytes=1-3' "$(U /a.txt)")" ell
    expect "$mode Content-Range" "$(hdr Content-Range /a.txt -H 'Range: bytes=1-3')" "bytes 1-3/6"
    expect "$mode Range length" "$(hdr Content-Length /a.txt -H 'Range: bytes=1-3')" 3
    expect "$mode suffix" "$(hdr Content-Range /a.txt -H 'Range: bytes=-2')" "bytes 4-5/6"
    expect "$mode open end" "$(hdr Content-Range /a.txt -H 'Range: bytes=2-')" "bytes 2-5/6"
    expect "$mode past end clipped" "$(hdr Content-Range /a.txt -H 'Range: bytes=2-99')" "bytes 2-5/6"
    expect "$mode unsatisfiable" "$(code /a.txt -H 'Range: bytes=6-')" 416
    expect "$mode 416 Content-Range" "$(hdr Content-Range /a.txt -H 'Range: bytes=6-')" "bytes */6"
    expect "$mode several ranges: whole" "$(code /a.txt -H 'Range: bytes=0-0,2-3')" 200
    expect "$mode several ranges length" "$(hdr Content-Length /a.txt -H 'Range: bytes=0-0,2-3')" 6
    expect "$mode bad unit ignored" "$(code /a.txt -H 'Range: items=0-1')" 200
    expect "$mode If-Range etag" "$(code /a.txt -H 'Range: bytes=0-0' -H "If-Range: $etag")" 206
    expect "$mode If-Range date" \
        "$(code /a.txt -H 'Range: bytes=0-0' -H 'If-Range: Thu, 02 Jan 2020 03:04:05 GMT')" 206
    expect "$mode If-Range stale" "$(code /a.txt -H 'Range: bytes=0-0' -H 'If-Range: "old"')" 200
    expect "$mode big range" \
        "$(curl -s -H 'Range: bytes=4194000-' "$(U /big.bin)" | cmp - <(tail -c 304 "$R/big.bin") && echo same)" same
    expect "$mode large range" \
        "$(curl -s -H 'Range: bytes=1000-2999999' "$(U /big.bin)" |
            cmp - <(tail -c +1001 "$R/big.bin" | head -c 2999000) && echo same)" same
    # --- precompressed siblings
    expect "$mode gzip sibling" "$(curl -s -H 'Accept-Encoding: gzip' "$(U /app.js)")" GZ-BYTES
    expect "$mode gzip encoding" "$(hdr Content-Encoding /app.js -H 'Accept-Encoding: gzip')" gzip
    expect "$mode sibling type" "$(hdr Content-Type /app.js -H 'Accept-Encoding: gzip')" \
        "$(hdr Content-Type /app.js)"
    expect "$mode Vary" "$(hdr Vary /app.js -H 'Accept-Encoding: gzip')" Accept-Encoding
    expect "$mode br first" "$(curl -s -H 'Accept-Encoding: gzip, br' "$(U /app.js)")" BR-BYTES!
    expect "$mode br q=0" "$(curl -s -H 'Accept-Encoding: br;q=0, gzip' "$(U /app.js)")" GZ-BYTES
    expect "$mode all q=0" "$(curl -s -H 'Accept-Encoding: gzip;q=0' "$(U /app.js)")" "js plain"
    expect "$mode no Accept-Encoding" "$(curl -s "$(U /app.js)")" "js plain"
    expect "$mode no Content-Encoding" "$(hdr Content-Encoding /app.js)" ""
    # --- directories
    expect "$mode dir index" "$(curl -s "$(U /sub/)")" "<h1>sub</h1>"
    expect "$mode index type" "$(hdr Content-Type /sub/)" text/html
    expect "$mode dir no slash" "$(code /sub)" 301
    expect "$mode Location" "$(hdr Location '/sub?x=1')" "/sub/?x=1"
    expect "$mode root no index" "$(code /)" 403
    expect "$mode dir no index" "$(code /noindex/)" 403
    expect "$mode file with slash" "$(code /a.txt/)" 404
    # --- methods
    expect "$mode POST" "$(code /a.txt -X POST)" 405
    expect "$mode Allow" "$(hdr Allow /a.txt -X DELETE)" "GET, HEAD"
    expect "$mode PUT" "$(code /a.txt -X PUT -d x)" 405
    # --- path safety
    expect "$mode missing" "$(code /nope)" 404
    expect "$mode ../" "$(code /../etc/passwd)" 400
    expect "$mode %2e%2e" "$(code /%2e%2e/etc/passwd)" 400
    expect "$mode inner .." "$(code /sub/../a.txt)" 200
    expect "$mode %2F as /" "$(code /sub%2F..%2Fa.txt)" 200
    expect "$mode %2F above root" "$(code /sub%2F..%2F..%2Fetc/passwd)" 400
    expect "$mode %00" "$(code /a.txt%00.html)" 400
    expect "$mode bad escape" "$(code /a%zz)" 400
    expect "$mode %252e decoded once" "$(code /%252e%252e/a.txt)" 404
    expect "$mode dotfile" "$(code /.env)" 404
    expect "$mode dot dir" "$(code /.hidden/x.txt)" 404
    expect "$mode link inside" "$(curl -s "$(U /in_link)")" hello
    expect "$mode link out" "$(code /out_link)" 403
    expect "$mode absolute link" "$(code /abs_link)" 403
}

start_sws "$ini"
run_checks openat2
# --- a large file byte for byte, and the same file cold (out of the page
# cache: read by the helper thread, never by the loop)
curl -s "$(U /big.bin)" | cmp - "$R/big.bin" || fail "big.bin differs"
# POSIX_FADV_DONTNEED is advice: on a loaded machine a page may stay (under
# writeback, or read back by readahead), so it is tried up to three times
# until the server counts a cold read.
cold_reads() {
    curl -s "http://127.0.0.1:$ADMIN_PORT/metrics" |
        awk '/^scalwsd_file_cold_reads_total/ { s += $2 } END { print s + 0 }'
}
for _ in 1 2 3; do
    python3 -c "import os,sys
fd = os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd)  # dirty pages are not dropped
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)" "$R/big.bin"
    curl -s "$(U /big.bin)" | cmp - "$R/big.bin" || fail "cold big.bin differs"
    [ "$(cold_reads)" -gt 0 ] && break
    sleep 1
done
# Pipelined: a large body, then a small one, answered in order on one connection.
out=$(raw 'GET /big.bin HTTP/1.1\r\nHost: a\r\n\r\nGET /a.txt HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n' 10 |
    tail -c 6)
expect "pipelined after big" "$out" hello
# Slow readers: 20 connections ask for the 4 MiB file and read nothing. Each
# holds its output buffer (64 KiB) and a descriptor, never the file: the
# server's resident memory grows by far less than the 80 MiB they asked for.
rss() { awk '/^VmRSS/ {print $2}' "/proc/$SWS_PID/status"; }
before=$(rss)
during=$(python3 - "$PORT" "$SWS_PID" <<'PY'
import socket, sys, time
port = int(sys.argv[1])
socks = []
for _ in range(20):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.sendall(b"GET /big.bin HTTP/1.1\r\nHost: a\r\n\r\n")
    socks.append(s)
time.sleep(1.5)  # the server fills what the sockets take, then waits
rss = int([l for l in open(f"/proc/{sys.argv[2]}/status") if l.startswith("VmRSS")][0].split()[1])
print(rss)
for s in socks:
    s.close()
PY
)
[ $((during - before)) -lt 20480 ] || fail "20 slow readers grew the server by $((during - before)) KiB"
m=$(curl -s "http://127.0.0.1:$ADMIN_PORT/metrics")
hits=$(echo "$m" | awk '/^scalwsd_file_cache_hits_total/ { s += $2 } END { print s + 0 }')
misses=$(echo "$m" | awk '/^scalwsd_file_cache_misses_total/ { s += $2 } END { print s + 0 }')
cold=$(cold_reads)
[ "$hits" -gt "$misses" ] || fail "open-file cache: $hits hits, $misses misses"
[ "$cold" -gt 0 ] || fail "no cold read counted after POSIX_FADV_DONTNEED"
# The access log has the static answers' lines, with their status and bytes.
grep -q '"GET /a.txt HTTP/1.1" 200 6 ' "$T/access.log" || fail "no 200 line in the access log"
grep -q '"GET /a.txt HTTP/1.1" 206 3 ' "$T/access.log" || fail "no 206 line in the access log"
grep -q '"GET /nope HTTP/1.1" 404 ' "$T/access.log" || fail "no 404 line in the access log"

# --- reload to another root (SIGHUP): the new tree is served
mkdir -p "$T/root2"
printf 'second\n' >"$T/root2/a.txt"
sed -i "s|^root = .*|root = $T/root2|" "$T/sws.ini"
kill -HUP "$SWS_PID"
for _ in $(seq 1 50); do
    [ "$(curl -s "$(U /a.txt)")" = second ] && break
    sleep 0.1
done
expect "after reload" "$(curl -s "$(U /a.txt)")" second
# --- limits apply as in every scenario: too many header bytes is 431
big_header=$(head -c 17000 /dev/zero | tr '\0' a) # over header_bytes (16k)
expect "header limit" "$(code /a.txt -H "X-Big: $big_header")" 431
# --- drain: a body being sent when SIGTERM comes is finished, then scalwsd exits 0
head -c 4194304 /dev/urandom >"$T/root2/big.bin"
curl -s --limit-rate 1M -o "$T/drained.bin" "$(U /big.bin)" &
cpid=$!
for _ in $(seq 1 50); do
    [ -s "$T/drained.bin" ] && break
    sleep 0.1
done
[ -s "$T/drained.bin" ] || fail "the slow download did not start"
stop_sws
wait "$cpid" || fail "the download was cut by the drain"
cmp "$T/drained.bin" "$T/root2/big.bin" || fail "the drained download differs"
[ "$SWS_STATUS" = 0 ] || fail "exit status $SWS_STATUS"

# --- the fallback walk (a kernel without openat2) answers the same; and
# bodies go by copy only (no sendfile), as on a kernel without cachestat
export SWS_STATIC_OPEN_FALLBACK=1 SWS_STATIC_SENDFILE=0
start_sws "$ini"
unset SWS_STATIC_OPEN_FALLBACK SWS_STATIC_SENDFILE
run_checks walk
curl -s "$(U /big.bin)" | cmp - "$R/big.bin" || fail "big.bin differs (copy only)"
stop_sws

# --- dotfiles = allow, follow_symlinks = on
start_sws "$ini
dotfiles = allow
follow_symlinks = on"
expect "dotfiles allow" "$(curl -s "$(U /.env)")" secret
expect "link out followed" "$(curl -s "$(U /out_link)")" outside
expect "traversal still refused" "$(code /../outside/o.txt)" 400
stop_sws

# --- --root on the command line implies scenario static
start_sws "" --root "$R"
expect "--root" "$(curl -s "$(U /a.txt)")" hello
stop_sws
echo "ok: static"
