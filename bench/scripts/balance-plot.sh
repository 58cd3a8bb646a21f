#!/usr/bin/env bash
# Draws the long-lived part of a balance sweep (bench/scripts/balance.sh) into
# one PNG: the imbalance index (busiest loop's requests / mean; median over the
# repetitions, bars from min to max) against K per arm, beside the best split
# there is (ceil(K/n) / (K/n)) and the issue's 1.1x bound; and requests per
# server CPU-second. Prints the README's markdown tables on stdout.
# usage: bench/scripts/balance-plot.sh IN.jsonl [OUT.png]
set -u
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
in=${1:?usage: balance-plot.sh IN.jsonl [OUT.png]}
png=${2:-${in%.jsonl}.png}
command -v gnuplot >/dev/null || { echo "gnuplot is needed (gnuplot-nox)" >&2; exit 2; }
command -v jq >/dev/null || { echo "jq is needed" >&2; exit 2; }
dat=$(mktemp)
trap 'rm -f "$dat" "$tmp_err"' EXIT
arms="handoff-least-loaded reuse-port reuse-port-cpu reuse-port-cpu-rss exclusive herd"
# One gnuplot block per arm: "K median min max best rps_per_cpu_s".
for a in $arms; do
    echo "$a"
    jq -rs --arg a "$a" '
      def median: sort | .[(length / 2 | floor)];
      map(select(.mode == "long-lived" and .arm == $a)) | group_by(.long_lived)[]
      | "\(.[0].long_lived) \(map(.imbalance) | median) \(map(.imbalance) | min)"
        + " \(map(.imbalance) | max) \(.[0].best_imbalance)"
        + " \(map(.requests_per_server_cpu_second) | median | floor)"' "$in"
    printf '\n\n'
done >"$dat"

echo "Imbalance index on 2 loops, median (max) over $(jq -rs 'map(select(.mode == "long-lived")) | group_by(.arm)[0] | group_by(.long_lived)[0] | length' "$in") runs; best split in the first column:"
echo
printf '| K | best | %s |\n' "$(echo $arms | sed 's/ / | /g')"
printf '|---|---|%s\n' "$(for _ in $arms; do printf -- '---|'; done)"
for k in 2 3 4 8 16; do
    row=$(jq -rs --argjson k "$k" --arg arms "$arms" '
      def median: sort | .[(length / 2 | floor)];
      def f: . * 100 | round / 100;
      map(select(.mode == "long-lived" and .long_lived == $k)) as $r
      | ($r[0].best_imbalance | f | tostring) + " | " +
        ([$arms | split(" ")[] as $a | $r | map(select(.arm == $a)) |
          "\(map(.imbalance) | median | f) (\(map(.imbalance) | max | f))"] | join(" | "))' "$in")
    echo "| $k | $row |"
done
echo
echo "Share of runs within 1.1x of the best split:"
echo
printf '| K | %s |\n' "$(echo $arms | sed 's/ / | /g')"
printf '|---|%s\n' "$(for _ in $arms; do printf -- '---|'; done)"
for k in 2 3 4 8 16; do
    row=$(jq -rs --argjson k "$k" --arg arms "$arms" '
      map(select(.mode == "long-lived" and .long_lived == $k)) as $r
      | [$arms | split(" ")[] as $a | $r | map(select(.arm == $a)) |
         "\(map(select(.imbalance <= 1.1 * .best_imbalance + 1e-9)) | length)/\(length)"] | join(" | ")' "$in")
    echo "| $k | $row |"
done
echo
echo "Accept-scaling arms (2 loops, 20000 connections, 8 clients), median [min..max]:"
echo
echo "| arm | conn/s | conn per server CPU-s | per_loop (median run) |"
echo "|---|---|---|---|"
jq -rs '
  def median: sort | .[(length / 2 | floor)];
  map(select(.mode != "long-lived" and .refused == null)) | group_by(.arm)[]
  | (sort_by(.connections_per_server_cpu_second) | .[(length / 2 | floor)].per_loop) as $pl
  | "| \(.[0].arm) | \(map(.connections_per_second) | median | floor) [\(map(.connections_per_second) | min | floor)..\(map(.connections_per_second) | max | floor)]"
    + " | \(map(.connections_per_server_cpu_second) | median | floor) [\(map(.connections_per_server_cpu_second) | min | floor)..\(map(.connections_per_server_cpu_second) | max | floor)]"
    + " | \($pl) |"' "$in"
refused=$(jq -rs 'map(select(.refused != null)) | group_by(.arm)[] | "\(.[0].arm): \(length) refused (\(.[0].refused))"' "$in")
[ -n "$refused" ] && printf '\nRefused runs: %s\n' "$refused"

title="turnloop-bench --long-lived K, 2 loops ($(jq -rs '.[0] | "\(.ncpu) cores, \(.kernel), \(.commit)"' "$in"))"
gnuplot <<GP
set terminal pngcairo size 1300,520 noenhanced font ",10"
set output "$png"
set multiplot layout 1,2 title "$title"
set key below
set grid
set logscale x 2
set xrange [1.7:19]
set xtics (2, 3, 4, 8, 16)
set xlabel "long-lived connections K"
set ylabel "busiest loop's requests / mean (1 = even, 2 = one loop does all)"
set title "imbalance index: median, bars min..max"
set yrange [0.95:2.05]
plot for [i=0:5] "$dat" index i using (\$1 * (1 + (i - 2.5) * 0.015)):2:3:4 with yerrorlines lw 2 title columnheader(1), \
     "$dat" index 0 using 1:5 with lines dt 2 lw 2 lc rgb "black" title "best split ceil(K/n)/(K/n)", \
     "$dat" index 0 using 1:(\$5 * 1.1) with lines dt 3 lc rgb "gray40" title "1.1 x best (the target)"
set title "requests per server CPU-second (median)"
set ylabel "requests per server CPU-second"
set yrange [0:*]
plot for [i=0:5] "$dat" index i using 1:6 with linespoints lw 2 title columnheader(1)
unset multiplot
GP
echo "plot: $png" >&2
