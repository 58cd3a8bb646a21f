#!/usr/bin/env bash
# A pipelined flood: one connection sends 50 MiB of pipelined GETs (~109,000
# requests of 480 bytes) as fast as it can while reading. Every request is
# answered, in bounded memory: input waits in the kernel while output is full,
# so scalwsd's RSS stays under a ceiling far below the 50 MiB sent.
. "$(dirname "$0")/lib.sh"
start_sws '' --worker-threads 1
out=$(timeout 50 python3 "$(dirname "$0")/hostile.py" flood "$PORT" "$SWS_PID" 50) || fail "hostile.py: $out"
echo "$out"
jq -e '.errors == [] and .answers == .requests_sent' <<<"$out" >/dev/null || fail "answers lost: $out"
jq -e '.rss_growth_kib < 16384' <<<"$out" >/dev/null || fail "RSS grew past 16 MiB: $out"
