# Shared helpers for scalwsd's end-to-end tests: start the real binary on a
# loopback port the kernel chooses (port 0, read back from --ready-file), talk to it with curl and raw sockets (bash /dev/tcp).
# Every wait is bounded; a test that hangs is killed by ctest's TIMEOUT too.
set -euo pipefail

SWS=${SWS:?path of scalwsd in SWS}
T=$(mktemp -d)
SWS_PID=""
PORT=""
ADMIN_PORT=""

cleanup() {
    if [ -n "$SWS_PID" ] && kill -0 "$SWS_PID" 2>/dev/null; then
        kill -KILL "$SWS_PID" 2>/dev/null || true
    fi
    wait 2>/dev/null || true
    rm -rf "$T"
}
trap cleanup EXIT
# A command that fails outside fail() still says where, with the server's log.
trap 'echo "FAIL: ${BASH_SOURCE[0]}:$LINENO: $BASH_COMMAND" >&2; [ -f "$T/log" ] && cat "$T/log" >&2' ERR

fail() {
    echo "FAIL: $*" >&2
    [ -f "$T/log" ] && { echo "--- scalwsd log:" >&2; cat "$T/log" >&2; }
    exit 1
}

# shellcheck source=../../scripts/lib/ports.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/ports.sh"

# How long a start may take: a sanitizer build on a loaded machine is slow to
# map its shadow memory; a server that exits is seen at once, not after this.
SWS_START_SECS=${SWS_START_SECS:-60}

# config_refused INI-TEXT WANT: scalwsd -t refuses INI-TEXT (printf %b
# escapes) as $T/bad.ini with exit 2, saying WANT (its file:line: [section]
# key: why).
config_refused() {
    printf '%b' "$1" >"$T/bad.ini"
    local out st=0
    out=$("$SWS" -t -c "$T/bad.ini" 2>&1) || st=$?
    [ "$st" = 2 ] || fail "-t exited $st, not 2 (refused), for: $1: $out"
    case $out in *"$2"*) ;; *) fail "-t said '$out', want '$2'" ;; esac
}

# start_sws [ini text] [extra args...]: writes the ini with listen (and admin)
# on port 0, starts scalwsd with --ready-file and sets PORT, ADMIN_PORT and
# SWS_PID from what it bound; then makes one request (GET /) that it answers.
start_sws() {
    start_sws_try "$@" || fail "scalwsd did not start"
}

# start_sws_try: the same, but returns 1 (with the log in $T/log) when scalwsd
# exits (or is not ready within SWS_START_SECS) instead of failing the test.
start_sws_try() {
    local ini=${1:-} scheme=http
    shift || true
    [[ $SWS_LISTEN_OPTS != tls* ]] || scheme=https
    {
        echo "[server]"
        echo "listen = 127.0.0.1:0${SWS_LISTEN_OPTS:+ $SWS_LISTEN_OPTS}"
        printf '%b\n' "$ini"
        echo "[admin]"
        echo "listen = 127.0.0.1:0"
    } >"$T/sws.ini"
    rm -f "$T/ready"
    PORT="" ADMIN_PORT=""
    "${SWS_WRAP[@]}" "$SWS" --config "$T/sws.ini" --ready-file "$T/ready" "$@" 2>"$T/log" &
    SWS_PID=$!
    if ! wait_ready "$T/ready" "$SWS_START_SECS" "$SWS_PID"; then
        kill -KILL "$SWS_PID" 2>/dev/null || true
        wait "$SWS_PID" 2>/dev/null || true
        SWS_PID=""
        return 1
    fi
    PORT=$(ready_port "$T/ready" listen)
    ADMIN_PORT=$(ready_port "$T/ready" admin)
    # One request, as the tests have always seen it (access logs and counters
    # count it): the server answers, not only listens. A guard, not a latency.
    if ! curl -sk -m 30 -o /dev/null "$scheme://127.0.0.1:$PORT/"; then
        kill -KILL "$SWS_PID" 2>/dev/null || true
        wait "$SWS_PID" 2>/dev/null || true
        SWS_PID=""
        return 1
    fi
    # The e2e_epoll_* runs must really be on epoll where the ini left the
    # backend to auto.
    if [ "${TURNLOOP_BACKEND:-}" = epoll ] && ! grep -q "backend = " "$T/sws.ini"; then
        grep -q "backend epoll" "$T/log" || fail "TURNLOOP_BACKEND=epoll ignored"
    fi
    return 0
}
SWS_WRAP=()
# SWS_LISTEN_OPTS=tls (and its options after, "tls name=x") makes start_sws's
# listener HTTPS ([tls] in the ini text).
SWS_LISTEN_OPTS=${SWS_LISTEN_OPTS:-}

# raw REQUEST [seconds]: sends bytes (printf %b escapes) on one connection and
# prints everything the server answers until it closes or the time is up (a
# guard against a hang: the cases that close do so at once, even under load).
raw() {
    local req=$1 secs=${2:-10}
    timeout "$secs" bash -c '
        exec 3<>/dev/tcp/127.0.0.1/'"$PORT"' || exit 1
        printf "%b" "$1" >&3
        cat <&3' _ "$req" || true
}

# start_test_upstream SECONDS [RECORD]: proxy_upstream.py (one behaviour per
# path) on a free port, living at most SECONDS; sets UP to its port and kills
# it on exit.
start_test_upstream() {
    python3 "$(dirname "${BASH_SOURCE[0]}")/proxy_upstream.py" "$T/up.port" "$@" &
    UP_PID=$!
    trap 'kill -KILL $UP_PID 2>/dev/null || true; cleanup' EXIT
    wait_ready "$T/up.port" "$SWS_START_SECS" "$UP_PID" || fail "test upstream did not start"
    UP=$(cat "$T/up.port")
}

# start_sws_upstream [args...]: a second scalwsd (respond, one loop) on port 0,
# the upstream of a proxy test; sets UP (its port) and UP_PID, killed on exit.
start_sws_upstream() {
    rm -f "$T/up.ready"
    "$SWS" --listen 127.0.0.1:0 --worker-threads 1 --ready-file "$T/up.ready" "$@" 2>"$T/up.log" &
    UP_PID=$!
    trap 'kill -KILL $UP_PID 2>/dev/null || true; cleanup' EXIT
    wait_ready "$T/up.ready" "$SWS_START_SECS" "$UP_PID" ||
        fail "upstream scalwsd did not start: $(cat "$T/up.log")"
    UP=$(ready_port "$T/up.ready")
}

# reap_sws SECS: waits up to SECS for scalwsd (already told to stop) to exit,
# then reaps it; sets SWS_STATUS.
reap_sws() {
    for _ in $(seq 1 $(($1 * 10))); do
        kill -0 "$SWS_PID" 2>/dev/null || break
        sleep 0.1
    done
    SWS_STATUS=0
    wait "$SWS_PID" || SWS_STATUS=$?
    SWS_PID=""
}

# stop_sws: SIGTERM and wait (bounded); sets SWS_STATUS.
stop_sws() {
    kill -TERM "$SWS_PID"
    reap_sws 10
}

count() { grep -c "$1" || true; }

# metric NAME: the value of the /metrics line named exactly NAME, labels and
# all (nothing if there is none). metric_sum NAME: the sum of NAME over every
# label set (per loop, per route...; 0 if none, and 0 when the admin port does
# not answer: a process handing over to the next, a slow sanitizer run; the
# caller's deadline decides). Both ask $ADMIN_PORT.
metric() { curl -s -m 5 "http://127.0.0.1:$ADMIN_PORT/metrics" | awk -v k="$1" '$1 == k { print $2 }'; }
metric_sum() {
    { curl -s -m 5 "http://127.0.0.1:$ADMIN_PORT/metrics" || true; } |
        awk -v n="$1" 'index($1, n "{") == 1 { s += $2 } END { print s + 0 }'
}
# wait_metric NAME MIN SECS: until metric_sum NAME exceeds MIN; fails after SECS.
wait_metric() {
    local end=$((SECONDS + $3))
    until [ "$(metric_sum "$1")" -gt "$2" ]; do
        [ "$SECONDS" -le "$end" ] || fail "$1 did not pass $2 within $3 s (now $(metric_sum "$1"))"
        sleep 0.05
    done
}

# restart_new [WHAT]: SIGUSR2 to $SWS_PID, then waits (SWS_START_SECS) for
# the new process's ready file (the same --ready-file) on the same port; sets
# OLD and SWS_PID (the new one, not this shell's child). WHAT (SIGUSR2) leads
# its failures. The old process drains by itself: wait_exit "$OLD".
restart_new() {
    local what=${1:-SIGUSR2} end=$((SECONDS + SWS_START_SECS)) new=""
    OLD=$SWS_PID
    kill -USR2 "$OLD"
    until new=$(ready_pid "$T/ready") && [ -n "$new" ] && [ "$new" != "$OLD" ]; do
        [ "$SECONDS" -le "$end" ] || fail "$what: no ready file from a new process"
        sleep 0.05
    done
    [ "$(ready_port "$T/ready" listen)" = "$PORT" ] || fail "$what: the new process's ready file: $(cat "$T/ready")"
    SWS_PID=$new
}

# wait_exit PID SECS WHAT: until PID has exited (a child not yet waited for
# counts); fails "WHAT did not exit" after SECS.
wait_exit() {
    local end=$((SECONDS + $2))
    while kill -0 "$1" 2>/dev/null && [ "$(ps -o stat= -p "$1" | cut -c1)" != Z ]; do
        [ "$SECONDS" -le "$end" ] || fail "$3 did not exit within $2 s"
        sleep 0.05
    done
}

# stop_ok WHAT: stop_sws, then fail unless it exited 0 with no sanitizer report.
stop_ok() {
    stop_sws
    [ "$SWS_STATUS" = 0 ] || fail "exit $SWS_STATUS ($1)"
    ! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$T/log" || fail "a sanitizer report ($1)"
}

# codes [curl options] URL...: each answer's status and a space, the bodies dropped.
codes() {
    local a=() x
    for x in "$@"; do
        a+=("$x")
        [[ $x != http* ]] || a+=(-o /dev/null)
    done
    curl -s -w '%{http_code} ' "${a[@]}"
}

# wait_log PATTERN [SECS] [FILE]: until PATTERN (grep) is in FILE ($T/log);
# 1 after SECS (30). For what the server logs once it has acted on a signal.
wait_log() {
    local end=$((SECONDS + ${2:-30}))
    until grep -q -- "$1" "${3:-$T/log}" 2>/dev/null; do
        [ "$SECONDS" -le "$end" ] || return 1
        sleep 0.05
    done
}

# start_nginx CONF_FN PROBE: nginx (Debian nginx-light) in the foreground on a
# free port, from the nginx.conf that `CONF_FN PORT` prints (it names
# $T/nginx for its pid, logs and temp files), once GET PROBE answers; sets
# NGINX_PORT and NGINX_PID, stopped on exit. A port taken between
# free_port and nginx's bind is retried (start_on_free_port).
start_nginx() {
    start_on_free_port nginx_try "$1" "$2" || fail "nginx did not start: $(cat "$T/nginx/error.log")"
    NGINX_PORT=$FREE_PORT
    trap 'kill -TERM $NGINX_PID 2>/dev/null || true; cleanup' EXIT
}
# nginx_preamble: the lines every test's nginx.conf begins with (one worker in
# the foreground, its files in $T/nginx).
nginx_preamble() {
    printf 'worker_processes 1;\ndaemon off;\npid %s/nginx/nginx.pid;\nerror_log %s/nginx/error.log warn;\n' "$T" "$T"
}
nginx_try() { # PORT CONF_FN PROBE: 0 serving, 98 port taken, 1 other failure
    mkdir -p "$T/nginx"
    "$2" "$1" >"$T/nginx/nginx.conf"
    : >"$T/nginx/error.log"
    nginx -c "$T/nginx/nginx.conf" -p "$T/nginx" -e "$T/nginx/error.log" 2>>"$T/nginx/error.log" &
    NGINX_PID=$!
    for _ in $(seq 1 100); do
        curl -s -o /dev/null "http://127.0.0.1:$1$3" && return 0
        if ! kill -0 "$NGINX_PID" 2>/dev/null; then
            grep -q "Address already in use" "$T/nginx/error.log" && return 98
            return 1
        fi
        sleep 0.1
    done
    return 1
}

# make_static_tree BIG_BYTES: the tree the static scenario's tests serve, in
# $T/root ($R), with $T/outside beside it: files, an index, a dotfile and a
# dot-directory, links inside, out of and absolute (to a file every peer can
# read), precompressed siblings (bytes differing from the plain file's on
# purpose) and big.bin of BIG_BYTES random bytes. a.txt has a fixed mtime.
make_static_tree() {
    R=$T/root
    mkdir -p "$R/sub" "$R/noindex" "$R/.hidden" "$T/outside"
    printf 'hello\n' >"$R/a.txt"
    printf '<h1>sub</h1>\n' >"$R/sub/index.html"
    printf 'body{}\n' >"$R/style.css"
    printf 'raw\n' >"$R/data.unknownext"
    printf 'secret\n' >"$R/.env"
    printf 'inner\n' >"$R/.hidden/x.txt"
    printf 'outside\n' >"$T/outside/o.txt"
    ln -s a.txt "$R/in_link"
    ln -s ../outside/o.txt "$R/out_link"
    ln -s /etc/hostname "$R/abs_link"
    head -c "$1" /dev/urandom >"$R/big.bin"
    printf 'js plain\n' >"$R/app.js"
    printf 'GZ-BYTES' >"$R/app.js.gz"
    printf 'BR-BYTES!' >"$R/app.js.br"
    touch -d '2020-01-02 03:04:05 UTC' "$R/a.txt"
}
