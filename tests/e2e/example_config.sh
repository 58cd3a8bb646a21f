#!/usr/bin/env bash
# contrib/scalwsd.ini, the installed example, cannot rot: scalwsd accepts it,
# it names every key of the key table (in the right section; commented out
# only when the key has no default), and scalwsd
# started with it serves the default response.
. "$(dirname "$0")/lib.sh"
INI=$(cd "$(dirname "$0")/../.." && pwd)/contrib/scalwsd.ini
[ -f "$INI" ] || fail "no $INI"

out=$("$SWS" --check-config --config "$INI" 2>&1) || fail "--check-config: $out"
case $out in *"configuration ok"*) ;; *) fail "--check-config said: $out" ;; esac

# Every [section] key of the key table, in its order, as --print-config lists
# them: "key = value", or ";key =" for a key without a default.
"$SWS" --print-config | awk '/^\[[a-z0-9]+\]$/{print "section", substr($0, 2, length($0) - 2)}
     /^;?[a-z0-9_]+ =/ {k = $1; sub(/^;/, "", k); print "key", k}' >"$T/keys"
section=""
checked=0
while read -r kind name; do
    if [ "$kind" = section ]; then
        section=$name
        continue
    fi
    # The key must appear inside its section of the example: set, or commented
    # out (";key = example") for a key that has no default.
    awk -v s="[$section]" -v k="$name" '
        /^\[/ { in_s = ($0 == s); next }
        in_s && $0 ~ "^;?" k "[ \t]*=" { found = 1 }
        END { exit !found }' "$INI" || fail "contrib/scalwsd.ini lacks [$section] $name"
    checked=$((checked + 1))
done <"$T/keys"
[ "$checked" -ge 15 ] || fail "found only $checked keys in --print-config"

# Started with it (on a port the kernel chooses), scalwsd answers with the
# default response.
"$SWS" --config "$INI" --listen 127.0.0.1:0 --ready-file "$T/ready" 2>"$T/log" &
SWS_PID=$!
wait_ready "$T/ready" "$SWS_START_SECS" "$SWS_PID" || fail "scalwsd did not start with the example"
PORT=$(ready_port "$T/ready")
[ "$(curl -s -m 3 "http://127.0.0.1:$PORT/")" = "Hello from scalwsd" ] || fail "default response"
stop_sws
[ "$SWS_STATUS" = 0 ] || fail "exit $SWS_STATUS"
echo "ok ($checked keys)"
