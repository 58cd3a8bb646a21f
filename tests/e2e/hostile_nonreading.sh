#!/usr/bin/env bash
# Clients that stop reading, on every backend the machine has: 4 connections
# (4 KiB receive buffers) pipeline requests as fast as the server takes them
# and never read an answer. The server stops reading them once their output is
# full, so each gets in only what the kernel buffers hold (a server buffering
# without bound would take the 256 MiB each offers), scalwsd's RSS stays under
# a ceiling, and send_timeout (2 s here) closes each once its write stalls;
# ordinary requests are answered meanwhile.
. "$(dirname "$0")/lib.sh"
ran=0
for be in epoll uring; do
    if ! start_sws_try "\nbackend = $be\n[limits]\nsend_timeout = 2s" --worker-threads 1; then
        grep -q "cannot create loop" "$T/log" || fail "$be: did not start"
        echo "SKIP: backend $be: $(cat "$T/log")"
        continue
    fi
    out=$(python3 "$(dirname "$0")/hostile.py" nonreading "$PORT" "$SWS_PID" 4 15) || fail "$be: hostile.py: $out"
    echo "$be: $out"
    [ "$(echo "$out" | jq -r .reset)" = 4 ] || fail "$be: a non-reading connection was not closed: $out"
    jq -e '.reset_after_stall_max_s <= 8' <<<"$out" >/dev/null ||
        fail "$be: closed later than send_timeout + a sweep: $out"
    jq -e '.sent_max_bytes < 64 * 1048576' <<<"$out" >/dev/null || fail "$be: the server kept reading: $out"
    jq -e '.rss_growth_kib < 16384' <<<"$out" >/dev/null || fail "$be: RSS grew past 16 MiB: $out"
    jq -e '.probes_failed == 0 and .probes_ok >= 10 and .probe_slowest_s < 5' <<<"$out" >/dev/null ||
        fail "$be: ordinary requests suffered: $out"
    n=$(curl -s "http://127.0.0.1:$ADMIN_PORT/metrics" |
        awk '$1 ~ /^scalwsd_send_timeouts_total[{]/ {s += $2} END {print s + 0}')
    [ "$n" = 4 ] || fail "$be: scalwsd_send_timeouts_total is $n, want 4"
    stop_sws
    ran=$((ran + 1))
done
[ "$ran" -gt 0 ] || { echo "SKIP: no backend started"; exit 77; }
