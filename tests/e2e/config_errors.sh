#!/usr/bin/env bash
# A wrong key, a bad value or a busy port is one line naming the file, line and
# key, and exit 2; --check-config validates; --help and --version answer.
. "$(dirname "$0")/lib.sh"
# Through a file: grep -q leaves at the first match, and the longer help
# (the key table) then meets a closed pipe, which pipefail counts as failure.
"$SWS" --help >"$T/help" || fail "--help exit status"
grep -q -- "--worker-threads" "$T/help" || fail "--help"
grep -q "^scalwsd [0-9]" <<<"$("$SWS" --version)" || fail "--version"
st=0; "$SWS" --bogus 2>/dev/null || st=$?
[ "$st" = 2 ] || fail "unknown option exit $st"

printf '[server]\nlisten = 127.0.0.1:1\nevnt_loops = 2\n' >"$T/bad.ini"
st=0; "$SWS" --config "$T/bad.ini" 2>"$T/err" || st=$?
[ "$st" = 2 ] || fail "unknown key exit $st"
[ "$(wc -l <"$T/err")" = 1 ] || fail "one line: $(cat "$T/err")"
grep -q "bad.ini:3: \[server\] evnt_loops: unknown key" "$T/err" || fail "message: $(cat "$T/err")"

printf '[limits]\nbody_size = lots\n' >"$T/bad2.ini"
st=0; "$SWS" --check-config --config "$T/bad2.ini" 2>"$T/err" || st=$?
[ "$st" = 2 ] || fail "bad value exit $st"
grep -q "bad2.ini:2: \[limits\] body_size: bad size 'lots'" "$T/err" || fail "message: $(cat "$T/err")"

printf '[server]\nevent_loops = 2\n[respond]\nstatus = 204\n' >"$T/good.ini"
"$SWS" --check-config --config "$T/good.ini" >/dev/null || fail "--check-config on a good file"
# Valid but likely not meant: a proxy route's `host` (what it matches) set to
# a word of [proxy] host. A note on stderr, and the file is still good.
printf '[route api]\npath_prefix = /api/\nscenario = proxy\nupstream = 127.0.0.1:9\nhost = upstream\n' >"$T/note.ini"
"$SWS" --check-config --config "$T/note.ini" >/dev/null 2>"$T/err" || fail "a noted file refused: $(cat "$T/err")"
grep -q "note.ini:1: \[route api\] host = upstream is the Host this route matches; the Host sent upstream is proxy.host" "$T/err" ||
    fail "no note: $(cat "$T/err")"
printf '[route api]\npath_prefix = /api/\nscenario = proxy\nupstream = 127.0.0.1:9\nproxy.host = upstream\n' >"$T/note.ini"
"$SWS" --check-config --config "$T/note.ini" >/dev/null 2>"$T/err" || fail "proxy.host refused: $(cat "$T/err")"
[ ! -s "$T/err" ] || fail "a note for proxy.host: $(cat "$T/err")"
st=0; "$SWS" --listen nowhere:xx --check-config 2>"$T/err" || st=$?
[ "$st" = 2 ] || fail "--listen bad exit $st"
grep -q -- "--listen" "$T/err" || fail "message: $(cat "$T/err")"

# Routes (doc/routes.md): each refusal one line naming the route and its
# file:line, exit 2; an overlap names both routes.
route_err() { # WANT INI
    printf '%b' "$2" >"$T/route.ini"
    st=0; "$SWS" --check-config --config "$T/route.ini" 2>"$T/err" || st=$?
    [ "$st" = 2 ] || fail "route config exit $st for: $2"
    [ "$(wc -l <"$T/err")" = 1 ] || fail "one line: $(cat "$T/err")"
    grep -qF -- "$1" "$T/err" || fail "want '$1', got: $(cat "$T/err")"
}
route_err "route.ini:4: [route b] overlaps [route a] at $T/route.ini:1" \
    '[route a]\npath = /x\nscenario = respond\n[route b]\npath = /x\nscenario = respond\n'
route_err "route.ini:1: [route a] scenario proxy needs upstream" \
    '[route a]\npath_prefix = /api/\nscenario = proxy\n'
route_err "route.ini:1: [route a] pool = shared is for a proxy without [route] sections" \
    '[route a]\npath_prefix = /api/\nscenario = proxy\nupstream = 127.0.0.1:9\npool = shared\n'
route_err "route.ini:1: [route a] matches every request" '[route a]\nscenario = respond\n'
route_err "route.ini:3: [route a] colour: unknown key" '[route a]\npath = /x\ncolour = red\n'
route_err "route.ini:2: [route a] index: bad index 'a/b'" '[route a]\nindex = a/b\n'

# Issue 35: what the start refuses, --check-config refuses first, with the
# same one line naming file:line and the key; the start says the same line
# and never a turnloop error ("cannot create loop", "stale id").
refused_at_t_and_start() { # WANT INI-TEXT
    printf '%b' "$2" >"$T/pre.ini"
    local where
    for where in check start; do
        st=0
        if [ $where = check ]; then
            "$SWS" --check-config --config "$T/pre.ini" >"$T/out" 2>"$T/err" || st=$?
        else
            # Bounded: a start that wrongly succeeds serves until the timeout (124).
            timeout 10 "$SWS" --config "$T/pre.ini" >"$T/out" 2>"$T/err" || st=$?
        fi
        [ "$st" = 2 ] || fail "$where: exit $st for: $2 ($(cat "$T/err"))"
        [ "$(wc -l <"$T/err")" = 1 ] || fail "$where: one line: $(cat "$T/err")"
        grep -qF -- "$1" "$T/err" || fail "$where: want '$1', got: $(cat "$T/err")"
        ! grep -qE "cannot create loop|stale id|turnloop" "$T/err" || fail "$where: a turnloop error: $(cat "$T/err")"
    done
}
L='[server]\nlisten = 127.0.0.1:0\n'
mkdir -p "$T/www"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
    -keyout "$T/k.key" -out "$T/c.pem" 2>/dev/null || fail "openssl req"
: >"$T/plainfile"
refused_at_t_and_start "pre.ini:3: [server] access_log $T/nodir/a.log: cannot create it: directory $T/nodir: No such file or directory" \
    "$L"'access_log = '"$T/nodir/a.log"'\n'
refused_at_t_and_start "pre.ini:3: [server] access_log $T/plainfile/a.log: Not a directory" \
    "$L"'access_log = '"$T/plainfile/a.log"'\n'
refused_at_t_and_start "pre.ini:3: [server] access_log $T/www: is a directory" "$L"'access_log = '"$T/www"'\n'
# A directory the server's user cannot write to (root writes anywhere: the
# check is then made as nobody, as a unit's DynamicUser would run it).
mkdir -p "$T/ro"
chmod 0555 "$T/ro"
chmod 0755 "$T"
as_user=()
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
    as_user=(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups)
    # A clone under a private directory (mktemp -d is 0700) is not nobody's to run.
    if ! "${as_user[@]}" "$SWS" --version >/dev/null 2>&1; then
        echo "note: nobody cannot run $SWS here: the unwritable-directory case is not checked"
        as_user=(skip)
    fi
fi
if [ "${as_user[*]}" = skip ]; then
    :
elif [ "$(id -u)" != 0 ] || [ ${#as_user[@]} -gt 0 ]; then
    printf '%b' "$L"'access_log = '"$T/ro/a.log"'\n' >"$T/ro.ini"
    chmod 0644 "$T/ro.ini"
    st=0; "${as_user[@]}" "$SWS" --check-config --config "$T/ro.ini" 2>"$T/err" || st=$?
    [ "$st" = 2 ] || fail "unwritable access log directory: exit $st ($(cat "$T/err"))"
    grep -qF "ro.ini:3: [server] access_log $T/ro/a.log: cannot create it in $T/ro: Permission denied" "$T/err" ||
        fail "unwritable access log directory: $(cat "$T/err")"
    st=0; timeout 10 "${as_user[@]}" "$SWS" --config "$T/ro.ini" 2>"$T/err" || st=$?
    [ "$st" = 2 ] && grep -qF "cannot create it in $T/ro: Permission denied" "$T/err" ||
        fail "unwritable access log directory at start: exit $st ($(cat "$T/err"))"
else
    echo "note: root without setpriv: the unwritable-directory case is not checked"
fi
refused_at_t_and_start "pre.ini:5: [static] root $T/nowww: No such file or directory" \
    "$L"'scenario = static\n[static]\nroot = '"$T/nowww"'\n'
refused_at_t_and_start "pre.ini:5: [static] root $T/plainfile: Not a directory" \
    "$L"'scenario = static\n[static]\nroot = '"$T/plainfile"'\n'
refused_at_t_and_start "pre.ini:6: [static] mime_types $T/no.types: No such file or directory" \
    "$L"'scenario = static\n[static]\nroot = '"$T/www"'\nmime_types = '"$T/no.types"'\n'
# A route's root is the route's: "[route api] root", never "[static] root".
refused_at_t_and_start "pre.ini:6: [route files] root $T/nowww: No such file or directory" \
    "$L"'[route files]\npath_prefix = /f/\nscenario = static\nroot = '"$T/nowww"'\n'
# The issue's set-up: HTTPS static files with an /api/ proxy route.
https='[server]\nlisten = 127.0.0.1:0 tls\nscenario = static\n[static]\nroot = '"$T/www"'\n[route api]\npath_prefix = /api/\nscenario = proxy\nupstream = 127.0.0.1:9\n[tls]\n'
refused_at_t_and_start "pre.ini:11: [tls] cert $T/no.pem: cannot open: No such file or directory" \
    "$https"'cert = '"$T/no.pem"'\nkey = '"$T/k.key"'\n'
refused_at_t_and_start "pre.ini:12: [tls] key $T/no.key: cannot open: No such file or directory" \
    "$https"'cert = '"$T/c.pem"'\nkey = '"$T/no.key"'\n'
refused_at_t_and_start "pre.ini:11: [tls] cert $T/k.key: no PEM certificate" \
    "$https"'cert = '"$T/k.key"'\nkey = '"$T/k.key"'\n'
refused_at_t_and_start "pre.ini:5: [server] acceptors = 3: more than the 2 loops" \
    "$L"'event_loops = 2\naccept = handoff\nacceptors = 3\n'
cpus=$(nproc)
refused_at_t_and_start "pre.ini:3: [server] accept = reuse-port-cpu needs one CPU per loop: event_loops = $((cpus + 1))" \
    "$L"'accept = reuse-port-cpu\nevent_loops = '"$((cpus + 1))"'\n'
# Refused by the loader: the message says what is wrong as the reader wrote it.
refused_at_t_and_start "pre.ini:4: [proxy] health_interval: '10ms' is too short: at least 100ms" \
    "$L"'[proxy]\nhealth_interval = 10ms\n'
refused_at_t_and_start "pre.ini:6: [route b] overlaps [route a] at $T/pre.ini:3: host a.example and no path, so one of them can never win" \
    "$L"'[route a]\nhost = a.example\nscenario = respond\n[route b]\nhost = a.example\nscenario = respond\n'
refused_at_t_and_start "pre.ini:6: [route a] appears twice (first at $T/pre.ini:3)" \
    "$L"'[route a]\npath = /a\nscenario = respond\n[route a]\npath = /b\n'
refused_at_t_and_start "pre.ini:3: [server] evnt_loops: unknown key (did you mean event_loops?)" "$L"'evnt_loops = 2\n'
refused_at_t_and_start "pre.ini:6: [route api] upstrem: unknown key (did you mean upstream?)" \
    "$L"'[route api]\npath_prefix = /api/\nscenario = proxy\nupstrem = 127.0.0.1:9\n'

# Valid but likely not meant: a warning at -t and at start, which then serves.
warned_at_t_and_start() { # WANT INI-TEXT
    printf '%b' "$2" >"$T/warn.ini"
    "$SWS" --check-config --config "$T/warn.ini" >/dev/null 2>"$T/err" || fail "-t refused: $(cat "$T/err")"
    grep -qF -- "$1" "$T/err" || fail "-t: want '$1', got: $(cat "$T/err")"
    rm -f "$T/ready"
    "$SWS" --config "$T/warn.ini" --ready-file "$T/ready" 2>"$T/log" &
    SWS_PID=$!
    wait_ready "$T/ready" "$SWS_START_SECS" "$SWS_PID" || fail "did not start with: $2"
    grep -qF -- "$1" "$T/log" || fail "start: want '$1', got: $(cat "$T/log")"
    stop_sws
}
warned_at_t_and_start "scalwsd: warning: $T/warn.ini:4: [tls] is not used: no listener is tls" \
    "$L"'[tls]\ncert = '"$T/c.pem"'\nkey = '"$T/k.key"'\n'
warned_at_t_and_start "scalwsd: warning: $T/warn.ini:5: [respond] appears twice (first at line 3)" \
    "$L"'[respond]\nstatus = 200\n[respond]\nbody = x\n'

# --print-config: each value with where it came from, and read back as a
# file it gives the same configuration.
printf '[server]\nevent_loops = 2\n[respond]\nstatus = 204\n' >"$T/print.ini"
"$SWS" --print-config --config "$T/print.ini" --scenario respond >"$T/printed" || fail "--print-config"
grep -q "^event_loops = 2 ; $T/print.ini:2$" "$T/printed" || fail "file origin: $(cat "$T/printed")"
grep -q "^scenario = respond ; command line$" "$T/printed" || fail "flag origin"
grep -q "^accept = reuse-port ; default$" "$T/printed" || fail "default origin"
"$SWS" --print-config --config "$T/printed" | grep -v '^;' | sed 's/ ;.*//' >"$T/again"
grep -v '^;' "$T/printed" | sed 's/ ;.*//' | cmp -s - "$T/again" || fail "print-config does not read back"

# Busy port: a second server on the same port fails with one clear line.
start_sws ''
printf '[server]\nlisten = 127.0.0.1:%s\n' "$PORT" >"$T/busy.ini"
st=0; timeout 5 "$SWS" --config "$T/busy.ini" 2>"$T/err" || st=$?
[ "$st" = 2 ] || fail "busy port exit $st"
[ "$(wc -l <"$T/err")" = 1 ] || fail "one line: $(cat "$T/err")"
grep -q "busy.ini:2: \[server\] listen.*address already in use" "$T/err" || fail "message: $(cat "$T/err")"
st=0; timeout 5 "$SWS" --listen "127.0.0.1:$PORT" --worker-threads 1 2>"$T/err" || st=$?
[ "$st" = 2 ] || fail "busy port via --listen exit $st"
grep -q -- "--listen.*address already in use" "$T/err" || fail "message: $(cat "$T/err")"
stop_sws
echo ok
