# shellcheck shell=bash
# Shared by the bench scripts: where the binary is, and the facts that must sit
# beside every figure (kernel, CPU, commit), added to each JSON line with jq.
bench_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bench_bin=${TURNLOOP_BENCH:-}
find_bench() {
    if [ -z "$bench_bin" ]; then
        for d in build-bench build; do
            if [ -x "$bench_root/$d/bench/turnloop-bench" ]; then
                bench_bin=$bench_root/$d/bench/turnloop-bench
                break
            fi
        done
    fi
    if [ -z "$bench_bin" ] || [ ! -x "$bench_bin" ]; then
        echo "no turnloop-bench binary: build it (cmake --build build --target turnloop-bench)" \
             "or set TURNLOOP_BENCH" >&2
        exit 2
    fi
    command -v jq >/dev/null || { echo "jq is needed (scripts/bootstrap --bench installs it)" >&2; exit 2; }
}
meta_commit=$(git -C "$bench_root" rev-parse --short HEAD 2>/dev/null || echo unknown)
meta_cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
meta_ncpu=$(nproc)
meta_date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
# Runs the bench once with the given flags; appends its line, tagged, to $out.
# Returns the bench's exit code; a refused run is reported on stderr, not recorded.
run_one() {
    local extra=$1
    shift
    local line rc
    line=$("$bench_bin" "$@" 2>"$tmp_err")
    rc=$?
    if [ $rc -ne 0 ]; then
        echo "  refused or failed (exit $rc): $*: $(cat "$tmp_err")" >&2
        return $rc
    fi
    # shellcheck disable=SC2154 # $out is set by the sourcing script
    jq -c --arg commit "$meta_commit" --arg cpu "$meta_cpu" --argjson ncpu "$meta_ncpu" \
        --arg date "$meta_date" --argjson extra "$extra" \
        '. + $extra + {commit: $commit, cpu: $cpu, ncpu: $ncpu, date: $date}' \
        <<<"$line" >>"$out"
    jq -r '"  \(.route) loops=\(.loops) clients=\(.clients): \(.connections_per_second | floor) conn/s per_loop=\(.per_loop)"' <<<"$line" >&2
}
tmp_err=$(mktemp)
trap 'rm -f "$tmp_err"' EXIT
