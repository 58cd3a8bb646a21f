#!/usr/bin/env bash
# Interleaved scaling sweep: every route at every loop count, the arms rotated on
# each repetition (A B C, B C A, ...) so drift in the machine does not land on one
# route. Each run's JSON line, tagged with rep, commit, CPU and date, goes to a jsonl.
# Small by default (about a minute); --full is the seed's 100000-connection sweep.
set -u
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
routes="handoff reuse-port exclusive acceptor herd" loops="1 2" connections=2000 clients=16
reps=3 payload=64 extra=()
out=$bench_root/bench/results/sweep.jsonl
usage() {
    echo "usage: $0 [--routes 'R ...'] [--loops 'N ...'] [--connections C] [--clients K]" \
         "[--payload B] [--reps R] [--full] [--out FILE] [-- extra bench flags]" >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case $1 in
    --routes) routes=$2; shift 2 ;;
    --loops) loops=$2; shift 2 ;;
    --connections) connections=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --payload) payload=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --full) connections=100000 loops="1 2 4 8 16" reps=5; shift ;;
    --out) out=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) usage ;;
    esac
done
find_bench
mkdir -p "$(dirname "$out")"
: >"$out"
read -r -a arms <<<"$routes"
echo "sweep: routes=[$routes] loops=[$loops] connections=$connections clients=$clients" \
     "reps=$reps -> $out" >&2
refused=0
for rep in $(seq 1 "$reps"); do
    for n in $loops; do
        for i in $(seq 0 $((${#arms[@]} - 1))); do
            route=${arms[$(((i + rep - 1) % ${#arms[@]}))]}
            run_one "{\"rep\": $rep, \"sweep\": \"scaling\"}" --accept-scaling --route "$route" \
                --loops "$n" --connections "$connections" --clients "$clients" \
                --payload "$payload" --portable "${extra[@]}" || refused=$((refused + 1))
        done
    done
done
echo "sweep: $(wc -l <"$out") lines, $refused refused" >&2
[ "$refused" -eq 0 ]
