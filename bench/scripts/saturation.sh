#!/usr/bin/env bash
# Client-saturation sweep (seeds/002 "Before believing any curve"): hold --loops at
# the sweep's largest value and raise --clients until connections_per_second stops
# moving; the plateau's smallest K, doubled, is the K for every scaling point.
# Small by default (about a minute); --full is the seed's 40000-connection sweep.
set -u
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
route=handoff loops=2 connections=2000 ks="4 8 16 32 64" reps=1
out=$bench_root/bench/results/saturation.jsonl
usage() {
    echo "usage: $0 [--route R] [--loops N] [--connections C] [--ks 'K1 K2 ...'] [--reps R]" \
         "[--full] [--out FILE]" >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case $1 in
    --route) route=$2; shift 2 ;;
    --loops) loops=$2; shift 2 ;;
    --connections) connections=$2; shift 2 ;;
    --ks) ks=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --full) connections=40000 ks="8 16 32 64 128" reps=3; shift ;;
    --out) out=$2; shift 2 ;;
    *) usage ;;
    esac
done
find_bench
mkdir -p "$(dirname "$out")"
: >"$out"
echo "saturation: route=$route loops=$loops connections=$connections ks=[$ks] reps=$reps -> $out" >&2
for rep in $(seq 1 "$reps"); do
    for k in $ks; do
        run_one "{\"rep\": $rep, \"sweep\": \"saturation\"}" --accept-scaling --route "$route" \
            --loops "$loops" --connections "$connections" --clients "$k" --portable || true
    done
done
# Median rate per K; the plateau is every K within 5% of the best median.
jq -rs '
  group_by(.clients)
  | map({k: .[0].clients, cps: (map(.connections_per_second) | sort | .[(length / 2 | floor)])})
  | (map(.cps) | max) as $best
  | (map(select(.cps >= 0.95 * $best)) | min_by(.k)) as $p
  | (.[] | "K=\(.k)\t\(.cps | floor) conn/s"),
    "plateau at K=\($p.k) (\($p.cps | floor) conn/s, best \($best | floor)); use --clients \($p.k * 2)"
' "$out"
