#!/usr/bin/env bash
# One ctest case of bench/scripts/idle-memory.sh: bad flags refused with exit 2
# and a reason, or a small real run (200 connections, every arm; run-h2: the
# same over HTTP/2 with prior knowledge) whose JSON is checked. A missing peer
# or tool skips (77).
# usage: idle_memory_test.sh SRC SCALWSD CASE
set -u
src=$1 scalwsd=$2 case=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; cat "$tmp/err" >&2 2>/dev/null; exit 1; }
im() { timeout 110 "$src/bench/scripts/idle-memory.sh" --scalwsd "$scalwsd" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?; }
refused() { # what ran must exit 2, say $1, and write no result
    [ "$rc" -eq 2 ] || fail "exit $rc, wants 2"
    grep -q -- "$1" "$tmp/err" || fail "stderr does not say '$1'"
    [ ! -e "$tmp/r.json" ] || fail "a refused run wrote its JSON"
}

case $case in
bad-flags)
    im --connections 99 --out "$tmp/r.json"; refused "connections 100..1000000"
    im --connections lots --out "$tmp/r.json"; refused "connections 100..1000000"
    im --backend kqueue --out "$tmp/r.json"; refused "epoll, uring or both"
    im --sources 0 --out "$tmp/r.json"; refused "sources 1..250"
    im --sws-env novalue --out "$tmp/r.json"; refused "sws-env VAR=VALUE"
    im --bogus --out "$tmp/r.json"; refused "unknown option --bogus"
    # Past what one process may open: refused with the machine's limit, not
    # a run that dies half-way.
    im --connections 1000000 --out "$tmp/r.json"; refused "descriptors per process"
    ;;
run | run-h2)
    command -v jq >/dev/null || { echo "skip: jq missing"; exit 77; }
    peer=() h2=() protocol=HTTP/1.1
    [ "$case" = run-h2 ] && h2=(--http2) protocol="HTTP/2 (h2c)"
    command -v nginx >/dev/null || { echo "nginx missing: scalwsd arms only"; peer=(--no-nginx); }
    im --connections 200 --sources 2 "${h2[@]}" "${peer[@]}" --out "$tmp/r.json"
    [ "$rc" -eq 0 ] || fail "exit $rc"
    jq -e --arg p "$protocol" '.protocol == $p and all(.arms[]; .protocol == $p)' "$tmp/r.json" >/dev/null ||
        fail "the run is not $protocol"
    for a in scalwsd-epoll scalwsd-uring; do
        jq -e --arg a "$a" '.arms[] | select(.arm == $a) |
            .connections == 200 and .user_bytes >= 0 and .user_marginal != null and
            (.kernel_bytes | type) == "number" and (.kernel_unreclaimable_bytes | type) == "number"' \
            "$tmp/r.json" >/dev/null || fail "no figures for $a"
    done
    if [ ${#peer[@]} -eq 0 ]; then
        # Ratios, not their size: 200 connections on a loaded machine are
        # noisy (a figure may even come out at or below zero: null there).
        jq -e '[.ratio_to_nginx["scalwsd-epoll", "scalwsd-uring"][]] | length == 6 and
            all(. == null or type == "number") and (map(select(. != null)) | length) >= 4' \
            "$tmp/r.json" >/dev/null || fail "no ratio to nginx: $(jq -c '.ratio_to_nginx, [.arms[] | {arm, user_bytes, kernel_unreclaimable_bytes}]' "$tmp/r.json")"
    fi
    grep -q "scalwsd-uring: user" "$tmp/out" || fail "no summary line"
    ;;
*) fail "unknown case $case" ;;
esac
