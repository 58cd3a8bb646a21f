# Ports for tests, benchmarks and scripts, sourced by tests/e2e/lib.sh and the
# scripts in scripts/ and bench/scripts/. scalwsd binds port 0 and reports the
# port (--ready-file): read_ready. Peers that cannot report a port (nginx,
# HAProxy, h2o, Chromium) get one from free_port, and the race between
# free_port's close and the peer's bind is retried in one place:
# start_on_free_port. Every wait here is bounded.

# free_port: a port the kernel hands out for 127.0.0.1:0, released at once.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# hold_port FILE SECS: in the background, a socket bound to 127.0.0.1:0 that
# never listens, held for at most SECS; its port is written to FILE and the
# holder's pid left in HOLD_PID. A connect there is refused (no listener), yet
# no other process can be handed the port while it is held, unlike a port
# whose listener was killed: a test's "dead upstream" stays dead. A listener
# with SO_REUSEADDR may still bind it (an upstream that comes back).
hold_port() {
    rm -f "$1"
    python3 -c '
import os, socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write("%d\n" % s.getsockname()[1])
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(float(sys.argv[2]))
' "$1" "$2" &
    HOLD_PID=$!
}

# start_on_free_port FN [ARGS...]: calls FN PORT ARGS... with a fresh free_port
# until it returns something else than 98 (EADDRINUSE: another process took the
# port between free_port and the peer's bind). FN returns 0 once the peer
# serves, 98 when the peer said "address already in use", other on failure.
# The port the peer got is left in FREE_PORT.
start_on_free_port() {
    local fn=$1 rc=98
    shift
    for _ in 1 2 3 4 5 6 7 8; do
        FREE_PORT=$(free_port)
        rc=0
        "$fn" "$FREE_PORT" "$@" || rc=$?
        [ "$rc" = 98 ] || return "$rc"
    done
    return "$rc"
}

# wait_port PORT SECS [PID]: until something accepts on 127.0.0.1:PORT; 1 after
# SECS or as soon as PID (when given) has exited.
wait_port() {
    local port=$1 secs=$2 pid=${3:-} end
    end=$((SECONDS + secs))
    while [ "$SECONDS" -le "$end" ]; do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            return 0
        fi
        if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
            return 1
        fi
        sleep 0.05
    done
    return 1
}

# wait_ready FILE SECS [PID]: until scalwsd's --ready-file FILE exists; 1 after
# SECS or as soon as PID (when given) has exited. The file is renamed into
# place whole, so existing means complete.
wait_ready() {
    local file=$1 secs=$2 pid=${3:-} end
    end=$((SECONDS + secs))
    while [ "$SECONDS" -le "$end" ]; do
        [ -s "$file" ] && return 0
        if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
            [ -s "$file" ]
            return
        fi
        sleep 0.05
    done
    return 1
}

# ready_port FILE [listen|admin]: the port of the first such line of a ready file.
ready_port() {
    local kind=${2:-listen}
    awk -v k="$kind" '$1 == k { n = split($2, a, ":"); print a[n]; exit }' "$1"
}

# ready_listen_port FILE NAME: the port of the listener with name=NAME (its
# listen line: "listen ADDR [tls] name=NAME").
ready_listen_port() {
    awk -v want="name=$2" '$1 == "listen" { for (i = 3; i <= NF; i++) if ($i == want) {
        n = split($2, a, ":"); print a[n]; exit } }' "$1"
}

# ready_pid FILE: the pid line of a ready file.
ready_pid() { awk '$1 == "pid" { print $2; exit }' "$1"; }
