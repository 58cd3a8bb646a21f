#!/usr/bin/env bash
# Draws a sweep's jsonl into one PNG: T(n)/T(1) per route (medians over reps, so
# each ratio is against the same route measured in the same interleaved sweep) and
# the per-loop spread (max - min) / mean per route. Also prints the table it drew.
set -u
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
in=${1:-$bench_root/bench/results/sweep.jsonl}
png=${2:-${in%.jsonl}.png}
command -v gnuplot >/dev/null || { echo "gnuplot is needed (gnuplot-nox)" >&2; exit 2; }
dat=$(mktemp)
trap 'rm -f "$dat" "$tmp_err"' EXIT
# One gnuplot data block per route: header line, then "n ratio spread cps cps_per_cpu_s".
jq -rs '
  def median: sort | .[(length / 2 | floor)];
  group_by(.route)[]
  | . as $runs
  | ($runs | map(select(.loops == 1)) | map(.connections_per_second) | median) as $t1
  | "\($runs[0].route)",
    ($runs | group_by(.loops)[]
      | "\(.[0].loops) \((map(.connections_per_second) | median) / $t1)"
        + " \(map(.spread) | median) \(map(.connections_per_second) | median | floor)"
        + " \(map(.connections_per_server_cpu_second) | median | floor)"),
    "", ""
' "$in" >"$dat"
echo "route / loops, T(n)/T(1), per-loop spread, median conn/s, median conn per server CPU-s:" >&2
sed "/^$/d" "$dat" >&2
ncpu=$(jq -rs '.[0].ncpu' "$in")
maxn=$(jq -rs 'map(.loops) | max' "$in")
title="turnloop-bench --accept-scaling ($(jq -rs '.[0] | "\(.ncpu) cores, \(.kernel), \(.commit), \(.connections) conn, \(.clients) clients"' "$in"))"
gnuplot <<GP
set terminal pngcairo size 1500,500 noenhanced font ",10"
set output "$png"
set multiplot layout 1,3 title "$title"
set key below
set grid
set samples 200
set logscale x 2
set xrange [0.9:($maxn > 2 ? $maxn : 2) * 1.1]
# Past the core count a point is a correctness check (distribution, liveness), not speed.
if ($maxn > $ncpu) set arrow from $ncpu, graph 0 to $ncpu, graph 1 nohead dt 3 lc rgb "red"
if ($maxn > $ncpu) set label "$ncpu cores: speed stops here" at $ncpu, graph 0.05 offset 1,0 tc rgb "red"
set xlabel "loops (n)"
set logscale y 2
set ylabel "T(n) / T(1)  (log scale: linear scaling is the straight dashed line)"
set title "scaling: connections/s relative to 1 loop"
plot for [i=0:*] "$dat" index i using 1:2:xtic(1) with linespoints lw 2 title columnheader(1), \
     x with lines dt 2 lc rgb "gray" title "linear"
unset logscale y
set ylabel "(max - min) / mean of per_loop"
set title "per-loop spread"
set yrange [0:*]
plot for [i=0:*] "$dat" index i using 1:3:xtic(1) with linespoints lw 2 title columnheader(1)
set ylabel "connections per server CPU-second"
set title "server cost (client threads' CPU subtracted)"
plot for [i=0:*] "$dat" index i using 1:5:xtic(1) with linespoints lw 2 title columnheader(1)
unset multiplot
GP
echo "plot: $png" >&2
