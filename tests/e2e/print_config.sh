#!/usr/bin/env bash
# --print-config reads back to the same configuration (the man page's promise,
# issue 35): a routed file is printed, the print read back and printed again;
# the two prints say the same, and scalwsd started with the file and with its
# print answers the same requests the same way (404 where no route matches:
# with routes and no [server] scenario, the print keeps scenario unset).
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/www"
printf 'file a\n' >"$T/www/a.txt"
cat >"$T/orig.ini" <<INI
[server]
listen = 127.0.0.1:0
event_loops = 1
[respond]
body = top level\n
[route health]
path = /healthz
scenario = respond
body = ok\n
[route files]
path_prefix = /f/
scenario = static
root = $T/www
strip_prefix = on
cache_control = max-age=60
[route api]
path_prefix = /api/
scenario = proxy
upstream = 127.0.0.1:9
proxy.host = upstream
[route docs]
host = *.docs.example
scenario = respond
status = 203
body = docs; a semicolon\n
INI
"$SWS" --print-config --config "$T/orig.ini" >"$T/p1.ini" || fail "--print-config"
"$SWS" --print-config --config "$T/p1.ini" >"$T/p2.ini" || fail "--print-config of its print"
# The text: the same but for the first line and the origins after ';'.
strip() { grep -v '^; the effective' "$1" | sed 's/ ;.*//'; }
diff <(strip "$T/p1.ini") <(strip "$T/p2.ini") >"$T/diff" || fail "the print of the print differs: $(cat "$T/diff")"
grep -q '^;scenario = respond ; default: unset' "$T/p1.ini" || fail "scenario printed set: $(grep scenario "$T/p1.ini" | head -3)"

# The behaviour: every answer (status and body) the same from the file and its print.
answers() { # INI -> one line per request
    rm -f "$T/ready"
    "$SWS" --config "$1" --ready-file "$T/ready" 2>"$T/log" &
    SWS_PID=$!
    wait_ready "$T/ready" "$SWS_START_SECS" "$SWS_PID" || fail "did not start with $1"
    PORT=$(ready_port "$T/ready")
    local req
    for req in /other / /healthz /f/a.txt /f/missing /api/x "-H Host:a.docs.example /zzz" \
        "-H Host:docs.example /healthz"; do
        # shellcheck disable=SC2086 # the request's words are curl's arguments
        set -- $req
        local path=${!#} opts=("${@:1:$#-1}")
        echo "$req: $(curl -s -m 5 "${opts[@]}" -o "$T/body" -w '%{http_code}' "http://127.0.0.1:$PORT$path") $(tr '\n' '|' <"$T/body")"
    done
    stop_sws
}
answers "$T/orig.ini" >"$T/a1"
answers "$T/p1.ini" >"$T/a2"
grep -q '^/other: 404 ' "$T/a1" || fail "the file's /other: $(grep other "$T/a1")"
grep -q '^/f/a.txt: 200 file a|' "$T/a1" || fail "the file's /f/a.txt: $(grep a.txt "$T/a1")"
diff "$T/a1" "$T/a2" >"$T/diff" || fail "the print answers otherwise: $(cat "$T/diff")"
echo "print_config: ok ($(wc -l <"$T/a1") requests answered alike)"
