#!/usr/bin/env bash
# The balance sweep of issue 21, arms interleaved (A B A B) per repetition:
#  1. --long-lived K on 2 loops, K = 2 3 4 8 16, each route: the imbalance index;
#  2. --accept-scaling reuse-port beside reuse-port-cpu (clients pinned over the
#     CPUs, and not): connections per server CPU-second and per_loop;
#  3. --accept-scaling handoff with 1 and 2 acceptors on 2 loops.
# Every line is tagged with its arm, kernel, CPU and commit. A refused run is
# reported on stderr and counted, not recorded.
# usage: bench/scripts/balance.sh [OUT.jsonl]   (REPS=5 by default)
set -u
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
find_bench
out=${1:-$bench_root/bench/results/balance-$(date -u +%Y%m%d-%H%M%S).jsonl}
reps=${REPS:-5}
: >"$out"
refused=0

arm() {
    local name=$1
    shift
    local line rc
    line=$("$bench_bin" "$@" 2>"$tmp_err")
    rc=$?
    if [ $rc -ne 0 ]; then
        refused=$((refused + 1))
        echo "  $name: refused or failed (exit $rc): $(cat "$tmp_err")" >&2
        jq -nc --arg arm "$name" --arg err "$(cat "$tmp_err")" --argjson rc $rc \
            --arg commit "$meta_commit" '{arm: $arm, refused: $err, exit: $rc, commit: $commit}' >>"$out"
        return 0
    fi
    jq -c --arg arm "$name" --arg commit "$meta_commit" --arg cpu "$meta_cpu" \
        --argjson ncpu "$meta_ncpu" --arg date "$meta_date" \
        '. + {arm: $arm, commit: $commit, cpu: $cpu, ncpu: $ncpu, date: $date}' <<<"$line" >>"$out"
    jq -r --arg arm "$name" 'if .mode == "long-lived"
        then "  \($arm) K=\(.long_lived): per_loop_connections=\(.per_loop_connections) imbalance=\(.imbalance * 1000 | floor / 1000) req/s=\(.requests_per_second | floor) req/server-CPU-s=\(.requests_per_server_cpu_second | floor)"
        else "  \($arm): \(.connections_per_second | floor) conn/s per_loop=\(.per_loop) conn/server-CPU-s=\(.connections_per_server_cpu_second | floor)" end' <<<"$line" >&2
}

for rep in $(seq 1 "$reps"); do
    echo "rep $rep/$reps" >&2
    for k in 2 3 4 8 16; do
        ll=(--long-lived "$k" --requests $((32000 / k)) --loops 2 --portable)
        arm handoff-least-loaded "${ll[@]}" --route handoff --policy least-loaded --pin
        arm reuse-port "${ll[@]}" --route reuse-port --pin
        arm reuse-port-cpu "${ll[@]}" --route reuse-port-cpu
        arm reuse-port-cpu-rss "${ll[@]}" --route reuse-port-cpu --pin-clients
        arm exclusive "${ll[@]}" --route exclusive --pin
        arm herd "${ll[@]}" --route herd --pin
    done
    as=(--accept-scaling --loops 2 --connections 20000 --clients 8 --portable)
    arm cs-reuse-port-rss "${as[@]}" --route reuse-port --pin --pin-clients
    arm cs-reuse-port-cpu-rss "${as[@]}" --route reuse-port-cpu --pin-clients
    arm cs-reuse-port "${as[@]}" --route reuse-port --pin
    arm cs-reuse-port-cpu "${as[@]}" --route reuse-port-cpu
    arm cs-handoff-1-acceptor "${as[@]}" --route handoff --acceptors 1
    arm cs-handoff-2-acceptors "${as[@]}" --route handoff --acceptors 2
done
echo "$refused refused runs; lines in $out" >&2
