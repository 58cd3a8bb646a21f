#!/usr/bin/env bash
# scalwsd's static scenario beside nginx (Debian nginx-light) on the same tree:
# every request below goes to both, and the statuses must match, or differ
# exactly as the table of differences says (and doc/static.md repeats, with
# the reasons). For 206 answers Content-Range must match too. nginx runs with
# its own config in the test's temp dir, on a port from a socket bound to 0.
. "$(dirname "$0")/lib.sh"
command -v nginx >/dev/null || { echo "skip: nginx not installed (nginx-light)"; exit 77; }

make_static_tree 100000
chmod -R a+rX "$T"

# As a person would set nginx up for a directory, plus if_modified_since
# before (RFC 9110's rule; nginx's default "exact" answers 200 to a later date).
nginx_conf() { # PORT
    nginx_preamble
    cat <<CONF
    events { worker_connections 64; }
    http {
        access_log off;
        types_hash_max_size 4096;
        include /etc/nginx/mime.types;
        default_type application/octet-stream;
        client_body_temp_path $T/nginx/body;
        server {
            listen 127.0.0.1:$1;
            root $R;
            index index.html;
            gzip_static on;
            if_modified_since before;
        }
    }
CONF
}
start_nginx nginx_conf /a.txt
nport=$NGINX_PORT

start_sws "scenario = static
[static]
root = $R"

etag=$(curl -s -o /dev/null -D - "http://127.0.0.1:$PORT/a.txt" | tr -d '\r' | awk -F': ' 'tolower($1)=="etag" {print $2}')
netag=$(curl -s -o /dev/null -D - "http://127.0.0.1:$nport/a.txt" | tr -d '\r' | awk -F': ' 'tolower($1)=="etag" {print $2}')
[ "$etag" = "$netag" ] || fail "ETag differs: scalwsd $etag, nginx $netag"

# method|target|header (one, may be empty)
requests=(
    "GET|/a.txt|"
    "HEAD|/a.txt|"
    "GET|/a.txt?x=1|"
    "GET|//a.txt|"
    "GET|/%61.txt|"
    "GET|/nope|"
    "GET|/big.bin|"
    "GET|/data.unknownext|"
    "GET|/sub|"
    "GET|/sub?q=1|"
    "GET|/sub/|"
    "GET|/sub/index.html|"
    "GET|/sub/./index.html|"
    "GET|/noindex/|"
    "GET|/noindex|"
    "GET|/|"
    "GET|/a.txt/|"
    "GET|/../etc/passwd|"
    "GET|/sub/../../etc/passwd|"
    "GET|/%2e%2e/etc/passwd|"
    "GET|/%2E%2E/%2E%2E/etc/passwd|"
    "GET|/sub/../a.txt|"
    "GET|/sub/%2e%2e/a.txt|"
    "GET|/sub%2F..%2Fa.txt|"
    "GET|/sub%2f..%2f..%2fetc/passwd|"
    "GET|/a.txt%00.html|"
    "GET|/%00|"
    "GET|/a%zz|"
    "GET|/%252e%252e/a.txt|"
    "GET|/.env|"
    "GET|/.hidden/x.txt|"
    "GET|/in_link|"
    "GET|/out_link|"
    "GET|/abs_link|"
    "GET|/a.txt|Range: bytes=1-3"
    "GET|/a.txt|Range: bytes=-2"
    "GET|/a.txt|Range: bytes=2-"
    "GET|/a.txt|Range: bytes=2-99"
    "GET|/a.txt|Range: bytes=6-"
    "GET|/a.txt|Range: bytes=-0"
    "GET|/a.txt|Range: bytes=0-0,2-3"
    "GET|/a.txt|Range: items=0-1"
    "GET|/a.txt|Range: bytes=5-2"
    "GET|/a.txt|If-None-Match: $etag"
    "GET|/a.txt|If-None-Match: W/$etag"
    "GET|/a.txt|If-None-Match: \"nope\""
    "GET|/a.txt|If-None-Match: *"
    "GET|/a.txt|If-Modified-Since: Thu, 02 Jan 2020 03:04:05 GMT"
    "GET|/a.txt|If-Modified-Since: Wed, 01 Jan 2020 00:00:00 GMT"
    "GET|/a.txt|If-Modified-Since: Fri, 03 Jan 2020 00:00:00 GMT"
    "GET|/a.txt|If-Modified-Since: not a date"
    "RANGE_IF|/a.txt|If-Range: $etag"
    "RANGE_IF|/a.txt|If-Range: \"old\""
    "RANGE_IF|/a.txt|If-Range: Thu, 02 Jan 2020 03:04:05 GMT"
    "GET|/app.js|Accept-Encoding: gzip"
    "GET|/app.js|Accept-Encoding: gzip;q=0"
    "ABS|http://localhost/a.txt|"
    "ABS|http://localhost/sub|"
    "ABS|http://localhost|"
    "POST|/a.txt|"
    "PUT|/a.txt|"
    "DELETE|/a.txt|"
    "OPTIONS|/a.txt|"
)

# target|header -> "scalwsd nginx: why" (doc/static.md has the same table)
declare -A differs=(
    ["/.env|"]="404 200: dotfiles are refused unless [static] dotfiles = allow; nginx serves them"
    ["/.hidden/x.txt|"]="404 200: a dot directory is a dotfile too"
    ["/out_link|"]="403 200: follow_symlinks = off refuses a link that leaves the root; nginx follows (disable_symlinks off)"
    ["/abs_link|"]="403 200: the same for an absolute link"
    ["/a.txt|Range: bytes=0-0,2-3"]="200 206: several ranges get the whole file; nginx builds multipart/byteranges"
    ["/a.txt|Range: bytes=5-2"]="200 416: RFC 9110 14.1.1: an invalid range is ignored; nginx answers 416"
)

n=0 same=0 listed=0
for r in "${requests[@]}"; do
    IFS='|' read -r method target header <<<"$r"
    args=(-s --path-as-is -o /dev/null -w '%{http_code} %header{content-range}')
    case "$method" in
    HEAD) args+=(-I) ;;
    RANGE_IF) args+=(-H 'Range: bytes=0-0') ;;
    ABS) args+=(--request-target "$target") ;;
    GET) ;;
    *) args+=(-X "$method") ;;
    esac
    [ -n "$header" ] && args+=(-H "$header")
    # One answer per connection: nginx closes after some errors, and a
    # reused connection must not carry one request's fate into the next.
    path=$target
    [ "$method" = ABS ] && path=/ # the target is --request-target's
    s=$(curl "${args[@]}" "http://127.0.0.1:$PORT$path")
    g=$(curl "${args[@]}" "http://127.0.0.1:$nport$path")
    n=$((n + 1))
    key="$target|$header"
    key=${key//$etag/ETAG}
    if [ -n "${differs[$key]:-}" ]; then
        want=${differs[$key]}
        ws=${want%% *}
        rest=${want#* }
        wn=${rest%%:*}
        [ "${s%% *}" = "$ws" ] && [ "${g%% *}" = "$wn" ] ||
            fail "$method $target [$header]: scalwsd ${s%% *}, nginx ${g%% *}; the table says $ws $wn"
        listed=$((listed + 1))
        printf '  %-8s %-34s %-44s scalwsd %s nginx %s (listed)\n' "$method" "$target" "$header" "${s%% *}" "${g%% *}"
    else
        [ "$s" = "$g" ] || fail "$method $target [$header]: scalwsd '$s', nginx '$g'"
        same=$((same + 1))
        printf '  %-8s %-34s %-44s %s\n' "$method" "$target" "$header" "${s%% *}"
    fi
done
[ "$n" -ge 40 ] || fail "only $n requests"
stop_sws
echo "ok: static_vs_nginx: $n requests, $same the same status, $listed listed differences"
