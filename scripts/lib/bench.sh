# shellcheck shell=bash
# Helpers the server benchmarks share (scripts/bench-h2-vs-peers,
# scripts/bench-h3-vs-h2): a server's CPU time from /proc, its bounded stop,
# and h2load's report as JSON. Sourced; every wait here is bounded.

# Every process of a server, descendants included (nginx's worker, h2o's key process).
server_pids() {
    local c
    echo "$1"
    for c in $(pgrep -P "$1" 2>/dev/null); do server_pids "$c"; done
}
cpu_ticks() {
    local t=0 p f
    for p in $(server_pids "$1"); do
        # Fields after the ")" of comm: utime is field 14, stime 15 of the line.
        f=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null) || continue
        # shellcheck disable=SC2086
        set -- $f
        t=$((t + ${12} + ${13}))
    done
    echo "$t"
}

stop_server() { # PID: TERM, then wait for it (bounded)
    kill -TERM "$1" 2>/dev/null || true
    for _ in $(seq 1 600); do kill -0 "$1" 2>/dev/null || break; sleep 0.05; done
    kill -KILL "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}

# h2load_summary FILE: h2load's report as one JSON object (null where absent).
h2load_summary() {
    awk '
      function num(v) { return v == "" ? "null" : v }
      /^Application protocol:/ && proto == "" { proto = $3 }
      /^finished in/ { rps = $4 }
      /^requests:/ { total = $2; started = $4; done = $6; ok = $8; failed = $10; errored = $12; timeout = $14 }
      /^status codes:/ { s2 = $3; s3 = $5; s4 = $7; s5 = $9 }
      /^traffic:/ && match($0, /space savings [0-9.]+%/) { sav = substr($0, RSTART + 14, RLENGTH - 15) }
      /^Main benchmark duration is started/ { main = 1 }
      END {
        printf "{\"protocol\":%s,\"rps\":%s,\"main_started\":%s,", (proto == "" ? "null" : "\"" proto "\""), num(rps), (main ? "true" : "false")
        printf "\"requests\":{\"total\":%s,\"started\":%s,\"done\":%s,\"succeeded\":%s,\"failed\":%s,\"errored\":%s,\"timeout\":%s},", num(total), num(started), num(done), num(ok), num(failed), num(errored), num(timeout)
        printf "\"status\":{\"2xx\":%s,\"3xx\":%s,\"4xx\":%s,\"5xx\":%s},\"header_space_savings_pct\":%s}\n", num(s2), num(s3), num(s4), num(s5), num(sav)
      }' "$1"
}
