#!/usr/bin/env bash
# scripts/bench-routes: bad flags exit 2 with the usage; a short real run
# (200 requests, 1 and 100 routes) prints a JSON line whose cells count
# instructions per request, the 100-route one at least the 1-route one's.
set -euo pipefail
root=$1 sws=$2 fixedload=$3 case=$4
b=$root/scripts/bench-routes
fail() { echo "FAIL: $*" >&2; exit 1; }
case $case in
bad-flags)
    err=$(mktemp)
    trap 'rm -f "$err"' EXIT
    for args in "--routes 1,x" "--routes 300" "--requests 5" "--connections 0" "--bogus"; do
        rc=0
        # shellcheck disable=SC2086
        "$b" --scalwsd "$sws" --fixedload "$fixedload" $args >/dev/null 2>"$err" || rc=$?
        grep -q "usage: scripts/bench-routes" "$err" || fail "$args: no usage"
        [ "$rc" = 2 ] || fail "$args: exit $rc, want 2"
    done
    echo "bench-routes refuses bad flags" ;;
run)
    command -v valgrind >/dev/null || { echo "SKIP: no valgrind"; exit 77; }
    line=$("$b" --scalwsd "$sws" --fixedload "$fixedload" --routes 1,100 --requests 200 | tail -1)
    echo "$line"
    echo "$line" | jq -e '.bench == "routes" and (.cells | length) == 2 and
        (.cells[0].ir_per_request > 0) and (.cells[1].ir_per_request >= .cells[0].ir_per_request)' \
        >/dev/null || fail "bad line: $line" ;;
*) fail "unknown case $case" ;;
esac
