#!/usr/bin/env bash
# try_files and autoindex (issue 31, item 5), over HTTP/1.1 and HTTP/2: the
# candidates' order and =CODE; a single-page application's fallback keeping
# 304, ranges, HEAD and the precompressed sibling; a candidate that would
# leave the root refused (by --check-config for '..', with 403 for a link out
# of the root); the slash redirect; a listing with hostile names escaped,
# sorted directories first, without dotfiles; listings off by default (403).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib_curl.sh"
export LC_ALL=C # names that are not UTF-8 are bytes to grep

R=$T/root
mkdir -p "$R/docs" "$R/list/sub" "$R/list/.dotdir" "$T/outside"
printf 'spa-index\n' >"$R/index.html"
printf 'GZ-INDEX' >"$R/index.html.gz" # differs from the file on purpose
printf 'about\n' >"$R/about.html"
printf 'docs\n' >"$R/docs/index.html"
printf 'plain\n' >"$R/order"
printf 'html\n' >"$R/order.html"
printf 'secret\n' >"$T/outside/secret.html"
ln -s ../outside/secret.html "$R/escape"
printf 'abc\n' >"$R/list/file.txt"
for n in '<script>alert(1)<' 'a"b' "it's" 'a b' 'x&y' 'javascript:alert(1)' '?q#f' \
    "$(printf 'bad\xff\xfeutf8')" "$(printf 'ctl\x01')" 'Zeta' 'alpha' .hidden; do
    printf 'x' >"$R/list/$n"
done
mkfifo "$R/list/fifo"
# More names than a listing shows: its page is far larger than the output
# buffer, so it goes out in many writes.
mkdir "$R/many"
(cd "$R/many" && seq -f 'file%05g.txt' 1 10050 | xargs touch)

ini="scenario = static
[static]
root = $R
try_files = \$uri \$uri.html \$uri/ /index.html
autoindex = on"
start_sws "$ini"

for P in http1.1 http2-prior-knowledge; do
    # --- the order of the candidates
    expect "$P /about" "$(H "$(U /about)")" about
    expect "$P /order (\$uri first)" "$(H "$(U /order)")" plain
    expect "$P /docs/ (\$uri/)" "$(H "$(U /docs/)")" docs
    expect "$P /docs redirect" "$(code /docs)" 301
    expect "$P /docs Location" "$(hdr Location '/docs?x=1')" "/docs/?x=1"
    # --- the SPA fallback is a file answer like any other
    expect "$P fallback" "$(H "$(U /app/route/42)")" spa-index
    expect "$P fallback type" "$(hdr Content-Type /app/route/42)" text/html
    etag=$(hdr ETag /app/route/42)
    [ -n "$etag" ] || fail "$P: no ETag on the fallback"
    expect "$P fallback 304" "$(code /app/route/42 -H "If-None-Match: $etag")" 304
    expect "$P fallback 206" "$(code /app/x -H 'Range: bytes=0-2')" 206
    expect "$P fallback range" "$(H -H 'Range: bytes=0-2' "$(U /app/x)")" spa
    expect "$P fallback Content-Range" "$(hdr Content-Range /app/x -H 'Range: bytes=0-2')" \
        "bytes 0-2/10"
    expect "$P fallback HEAD" "$(code /app/x -I)" 200
    expect "$P fallback HEAD length" "$(hdr Content-Length /app/x -I)" 10
    expect "$P fallback gzip" "$(H -H 'Accept-Encoding: gzip' "$(U /app/x)")" GZ-INDEX
    expect "$P fallback Content-Encoding" "$(hdr Content-Encoding /app/x -H 'Accept-Encoding: gzip')" \
        gzip
    # --- never out of the root: a link leaving it is refused, not fallen back from
    expect "$P link out of the root" "$(code /escape)" 403
    grep -q secret <<<"$(H "$(U /escape)")" && fail "$P: /escape served the file outside the root"
    expect "$P traversal" "$(code /../outside/secret.html)" 400
    # --- the listing
    expect "$P /list redirect" "$(code /list)" 301
    expect "$P /list/" "$(code /list/)" 200
    expect "$P listing type" "$(hdr Content-Type /list/)" "text/html; charset=utf-8"
    page=$(H "$(U /list/)")
    for want in '&lt;script&gt;alert(1)&lt;' 'href="%3Cscript%3Ealert%281%29%3C"' 'a&quot;b' \
        'href="a%22b"' 'it&#39;s' 'href="a%20b"' 'x&amp;y' 'href="javascript%3Aalert%281%29"' \
        'href="%3Fq%23f"' 'bad&#xFFFD;&#xFFFD;utf8' 'href="bad%FF%FEutf8"' 'ctl&#xFFFD;' \
        'href="sub/"' 'href="file.txt">file.txt</a></td><td>4</td>' 'Index of /list/'; do
        grep -qF -- "$want" <<<"$page" || fail "$P listing: no '$want' in: $page"
    done
    for bad in '<script>' 'a"b' '.hidden' '.dotdir' 'fifo' "$(printf '\xff')" "$(printf '\x01')"; do
        grep -qF -- "$bad" <<<"$page" && fail "$P listing: '$bad' in: $page"
    done
    # Directories first, then names in byte order.
    order=$(grep -o 'href="[^"]*"' <<<"$page" | tr '\n' ' ')
    expect "$P listing order" "$order" 'href="../" href="sub/" href="%3Cscript%3Ealert%281%29%3C" href="%3Fq%23f" href="Zeta" href="a%20b" href="a%22b" href="alpha" href="bad%FF%FEutf8" href="ctl%01" href="file.txt" href="it%27s" href="javascript%3Aalert%281%29" href="x%26y" '
    # HEAD: the GET's length, no body.
    expect "$P listing HEAD" "$(hdr Content-Length /list/ -I)" "$(H "$(U /list/)" | wc -c)"
    expect "$P listing HEAD body" "$(H -I "$(U /list/)" | tr -d '\r' | sed '1,/^$/d' | wc -c)" 0
    expect "$P empty dir" "$(H "$(U /list/sub/)" | grep -c 'href=')" 1
    H "$(U /many/)" >"$T/many.$P"
    expect "$P large listing rows" "$(grep -c '^<tr><td><a href="file' "$T/many.$P")" 10000
    grep -q '^<p>50 more entries are not listed' "$T/many.$P" || fail "$P: no truncation note"
    expect "$P large listing end" "$(tail -1 "$T/many.$P")" '</body></html>'
done
cmp -s "$T/many.http1.1" "$T/many.http2-prior-knowledge" || fail "the large listing differs by protocol"
# --- cost: an existing file makes one lookup, as without try_files; a miss
# pays for the candidates (open-file cache lookups, hits and misses summed)
lookups() {
    curl -s -m 5 "http://127.0.0.1:$ADMIN_PORT/metrics" |
        awk '/^scalwsd_file_cache_(hits|misses)_total/ { n += $2 } END { print n + 0 }'
}
before=$(lookups)
for _ in $(seq 1 10); do curl -s -m 5 -o /dev/null "$(U /about.html)"; done
expect "lookups of an existing file" "$(($(lookups) - before))" 10
before=$(lookups)
for _ in $(seq 1 10); do curl -s -m 5 -o /dev/null "$(U /app/x)"; done
expect "lookups of a fallback" "$(($(lookups) - before))" 40 # $uri, $uri.html, $uri/, /index.html
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit status $SWS_STATUS"

# --- the order the other way, =404 at the end, listings off (the default)
start_sws "scenario = static
[static]
root = $R
try_files = \$uri.html \$uri =404"
for P in http1.1 http2-prior-knowledge; do
    expect "$P /order (\$uri.html first)" "$(H "$(U /order)")" html
    expect "$P =404" "$(code /nope)" 404
    # "\$uri" of "/list/" asks for a directory (its slash), as nginx: no
    # index, no listing: 403.
    expect "$P no listing" "$(code /list/)" 403
done
stop_sws
start_sws "scenario = static
[static]
root = $R"
for P in http1.1 http2-prior-knowledge; do
    expect "$P listing off by default" "$(code /list/)" 403
    expect "$P no try_files: missing" "$(code /app/x)" 404
done
stop_sws

# --- a fallback that is a link out of the root: refused, never served
start_sws "scenario = static
[static]
root = $R
try_files = \$uri /escape"
for P in http1.1 http2-prior-knowledge; do
    expect "$P fallback out of the root" "$(code /nope)" 403
done
stop_sws

# --- refused by --check-config: '..', a status not last, another variable
for v in '$uri /../outside/secret.html' '=404 $uri' '$uri $args' '$uri =99'; do
    printf '[static]\nroot = %s\ntry_files = %s\n' "$R" "$v" >"$T/bad.ini"
    if "$SWS" --config "$T/bad.ini" --check-config 2>"$T/err"; then
        fail "try_files = $v accepted"
    fi
    grep -q "bad.ini:3: \[static\] try_files: " "$T/err" || fail "try_files = $v: $(cat "$T/err")"
done
echo "static_fallback: ok"
