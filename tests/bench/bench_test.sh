#!/usr/bin/env bash
# One ctest case of turnloop-bench, run against the real binary: a refusal that
# must fire (nothing on stdout, non-zero exit, one stderr line naming the rule),
# bad flags (exit 2 with usage), or a small real run whose JSON line is checked.
# usage: bench_test.sh BENCH CHECK_LINE CASE [ARGS...]
set -u
bench=$1 check=$2 case=$3
shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
: >"$tmp/out"
: >"$tmp/err"
fail() { echo "FAIL: $*" >&2; echo "--- stdout" >&2; cat "$tmp/out" >&2; echo "--- stderr" >&2; cat "$tmp/err" >&2; exit 1; }

# Runs the bench with a bound of its own, so a hung run fails the test rather than ctest's timeout.
run() { timeout 90 "$bench" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?; }

# A refused run: exit code $1, stderr exactly one line matching $2, stdout empty.
expect_refusal() {
    local want_rc=$1 pattern=$2
    [ "$rc" -eq "$want_rc" ] || fail "exit $rc, wants $want_rc"
    [ ! -s "$tmp/out" ] || fail "stdout is not empty"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "stderr is not exactly one line"
    grep -q -- "$pattern" "$tmp/err" || fail "stderr does not name the rule '$pattern'"
}

case $case in
refuse-idle-loop) # a loop that never accepts must make the run refuse, on every route
    route=$1
    run --accept-scaling --route "$route" --loops 2 --connections 200 --clients 4 --portable \
        --test-idle-loop
    expect_refusal 3 "every loop must serve at least one connection: loop 1 of 2 served none"
    ;;
refuse-short-budget) # fewer than 100 connections per loop refuses before anything runs
    run --accept-scaling --route handoff --loops 2 --connections 199 --clients 4 --portable
    expect_refusal 3 "is below 100 per loop"
    ;;
refuse-miscount) # per-loop counts that do not sum to the budget refuse
    run --accept-scaling --route reuse-port --loops 1 --connections 100 --clients 2 --portable \
        --test-miscount
    expect_refusal 3 "per-loop counts sum to 99, not the budget 100"
    ;;
refuse-watchdog) # a run that does not finish in time refuses instead of hanging
    run --accept-scaling --route handoff --loops 1 --connections 100000000 --clients 2 \
        --portable --test-watchdog-ms 300
    expect_refusal 3 "watchdog: the run did not finish within 300 ms"
    ;;
reuse-port-unsupported) # a platform that cannot distribute: exit 2, one line, nothing run
    run --accept-scaling --route reuse-port --loops 2 --connections 200 --clients 2 --portable \
        --test-no-distribute
    expect_refusal 2 "route reuse-port refused: this platform cannot distribute"
    ;;
reuse-port-cpu-unsupported) # a kernel without SO_ATTACH_REUSEPORT_CBPF: exit 2, one line
    run --accept-scaling --route reuse-port-cpu --loops 1 --connections 100 --clients 2 \
        --portable --test-no-cpu-steer
    expect_refusal 2 "route reuse-port-cpu refused: this kernel cannot steer by CPU"
    ;;
refuse-idle-acceptor) # an acceptor the kernel gives nothing must make the run refuse
    run --accept-scaling --route handoff --acceptors 2 --loops 2 --connections 200 --clients 4 \
        --portable --test-idle-acceptor
    expect_refusal 3 "every acceptor must accept: acceptor 1 of 2 accepted none"
    ;;
run-cpu) # reuse-port-cpu on 2 pinned loops, or exit 2 in one line on a machine with 1 CPU
    loops=$1
    shift
    conns=$((200 * loops))
    run --accept-scaling --route reuse-port-cpu --loops "$loops" --connections "$conns" \
        --clients 4 --payload 100 --portable --pin-clients "$@"
    if [ "$rc" -eq 2 ] && grep -q "cannot be pinned one to a CPU" "$tmp/err"; then
        expect_refusal 2 "cannot be pinned one to a CPU"
        echo "fewer CPUs than loops here: $(cat "$tmp/err")"
    else
        [ "$rc" -eq 0 ] || fail "exit $rc"
        "$check" "$tmp/out" reuse-port-cpu "$loops" "$conns" portable || fail "invariants"
        grep -q '"cpus":\[' "$tmp/out" || fail "no cpus: the loops were not pinned"
    fi
    ;;
long-lived) # K keep-alive clients on 2 loops; with 'target' the index must meet the issue's bound
    route=$1 k=$2 target=$3 # target: 'target' or 'none'
    shift 3
    [ "$target" = target ] || target=""
    run --long-lived "$k" --requests 300 --seconds 20 --route "$route" --loops 2 --payload 64 \
        --portable "$@"
    if [ "$rc" -eq 2 ] && [ "$route" = reuse-port-cpu ] && grep -q "cannot be pinned" "$tmp/err"; then
        echo "fewer CPUs than loops here: $(cat "$tmp/err")"
    else
        [ "$rc" -eq 0 ] || fail "exit $rc"
        # shellcheck disable=SC2086 # target is one word or none
        "$check" "$tmp/out" "$route" 2 long-lived "$k" $target || fail "invariants"
        grep -q '"stopped_by":"count"' "$tmp/out" || fail "300 requests each did not finish in 20 s"
        grep -q '"requests":'$((300 * k))',' "$tmp/out" || fail "not K x 300 requests"
    fi
    ;;
backend-uring) # io_uring either runs with the invariants held or is refused in one line, exit 2
    route=$1
    extra=()
    # reuse-port-cpu places by the client's CPU: pin them over the CPUs (see run-cpu)
    [ "$route" = reuse-port-cpu ] && extra=(--pin-clients)
    run --accept-scaling --route "$route" --loops 2 --connections 400 --clients 4 --portable \
        --backend uring "${extra[@]}"
    if [ "$rc" -eq 2 ] && [ "$route" = reuse-port-cpu ] && grep -q "cannot be pinned" "$tmp/err"; then
        expect_refusal 2 "cannot be pinned one to a CPU"
        echo "fewer CPUs than loops here: $(cat "$tmp/err")"
    elif [ "$rc" -eq 2 ] && [ "$route" = exclusive ] && grep -q "route exclusive refused" "$tmp/err"; then
        # io_uring has no wake-one on a shared socket: turnloop refuses EPOLLEXCLUSIVE there
        expect_refusal 2 "route exclusive refused by this backend"
        echo "exclusive refused on uring: $(cat "$tmp/err")"
    elif [ "$rc" -eq 2 ]; then
        expect_refusal 2 "backend uring cannot run here"
        echo "uring refused here: $(cat "$tmp/err")"
    else
        [ "$rc" -eq 0 ] || fail "exit $rc"
        "$check" "$tmp/out" "$route" 2 400 portable || fail "invariants"
        grep -q '"backend":"uring"' "$tmp/out" || fail "asked for uring, ran on something else"
    fi
    ;;
checker-rejects) # check_line itself must fail on lines that break an invariant
    good='{"route":"handoff","backend":"epoll","loops":2,"connections":200,"clients":4,"payload":8,"policy":"rr","connections_per_second":1.5,"per_loop":[100,100],"measure":"elapsed_ns","elapsed_ns":5}'
    printf '%s\n' "$good" >"$tmp/line"
    "$check" "$tmp/line" handoff 2 200 portable || fail "the good line is rejected"
    bad=(
        '"per_loop":\[100,100\]/"per_loop":[101,100]'
        '"per_loop":\[100,100\]/"per_loop":[200,0]'
        '"per_loop":\[100,100\]/"per_loop":[90,110]'
        '"per_loop":\[100,100\]/"per_loop":[200]'
        '"connections_per_second":1.5/"connections_per_second":0'
        '"backend":"epoll"/"backend":"kqueue"'
        '"route":"handoff"/"route":"herd"'
    )
    for b in "${bad[@]}"; do
        sed "s/$b/" <<<"$good" >"$tmp/line"
        if "$check" "$tmp/line" handoff 2 200 portable 2>/dev/null; then
            fail "check_line accepted a broken line: $(cat "$tmp/line")"
        fi
    done
    printf '%s\n%s\n' "$good" "$good" >"$tmp/line"
    "$check" "$tmp/line" handoff 2 200 portable 2>/dev/null && fail "two lines accepted"
    # Two acceptors: each must have accepted, fed only its loops, split them exactly.
    good2='{"route":"handoff","backend":"epoll","loops":2,"connections":200,"clients":4,"payload":8,"policy":"rr","acceptors":2,"per_acceptor":[90,110],"feeds":[[0],[1]],"connections_per_second":1.5,"per_loop":[90,110],"measure":"elapsed_ns","elapsed_ns":5}'
    printf '%s\n' "$good2" >"$tmp/line"
    "$check" "$tmp/line" handoff 2 200 portable || fail "the good 2-acceptor line is rejected"
    for b in '"per_acceptor":\[90,110\]/"per_acceptor":[0,200]' \
        '"per_acceptor":\[90,110\]/"per_acceptor":[100,110]' \
        '"feeds":\[\[0\],\[1\]\]/"feeds":[[0],[0]]' '"per_acceptor":\[90,110\]/"per_acceptor":[200]'; do
        sed "s/$b/" <<<"$good2" >"$tmp/line"
        if "$check" "$tmp/line" handoff 2 200 portable 2>/dev/null; then
            fail "check_line accepted a broken line: $(cat "$tmp/line")"
        fi
    done
    # Long-lived: the index must be what per_loop says, connections must sum to K.
    goodl='{"mode":"long-lived","route":"reuse-port","loops":2,"long_lived":3,"requests":300,"per_loop":[200,100],"per_loop_connections":[2,1],"imbalance":1.333333333,"best_imbalance":1.333333333,"requests_per_second":5.0}'
    printf '%s\n' "$goodl" >"$tmp/line"
    "$check" "$tmp/line" reuse-port 2 long-lived 3 || fail "the good long-lived line is rejected"
    "$check" "$tmp/line" reuse-port 2 long-lived 3 target || fail "best split rejected as off target"
    for b in '"imbalance":1.333333333/"imbalance":1.0' '"per_loop_connections":\[2,1\]/"per_loop_connections":[2,2]' \
        '"requests":300/"requests":301' '"best_imbalance":1.333333333/"best_imbalance":1.0'; do
        sed "s/$b/" <<<"$goodl" >"$tmp/line"
        if "$check" "$tmp/line" reuse-port 2 long-lived 3 2>/dev/null; then
            fail "check_line accepted a broken long-lived line: $(cat "$tmp/line")"
        fi
    done
    sed 's/"per_loop":\[200,100\]/"per_loop":[300,0]/; s/"imbalance":1.333333333/"imbalance":2.0/; s/"per_loop_connections":\[2,1\]/"per_loop_connections":[3,0]/' \
        <<<"$goodl" >"$tmp/line"
    "$check" "$tmp/line" reuse-port 2 long-lived 3 || fail "an honest lopsided line is rejected"
    "$check" "$tmp/line" reuse-port 2 long-lived 3 target 2>/dev/null && fail "off-target index accepted"
    printf '%s\n' "$good" >"$tmp/line" # elapsed_ns without --portable needs measure_fallback
    "$check" "$tmp/line" handoff 2 200 2>/dev/null && fail "elapsed without a fallback reason accepted"
    ;;
usage) # each bad command line exits 2 with the usage on stderr and nothing on stdout
    base=(--accept-scaling --route handoff --loops 1 --connections 100 --clients 2)
    bad=(
        "--route handoff --loops 1 --connections 100 --clients 2"
        "--accept-scaling --route bogus --loops 1 --connections 100 --clients 2"
        "--accept-scaling --route handoff --loops 0 --connections 100 --clients 2"
        "--accept-scaling --route handoff --loops x --connections 100 --clients 2"
        "--accept-scaling --route handoff --loops 1 --clients 2"
        "--accept-scaling --route handoff --loops 1 --connections 100 --clients 2 --payload 0"
        "--accept-scaling --route handoff --loops 1 --connections 100 --clients 2 --backend kq"
        "--accept-scaling --route handoff --loops 1 --connections 100 --clients 2 --policy x"
        "--accept-scaling --route herd --loops 1 --connections 100 --clients 2 --policy rr"
        "--accept-scaling --route handoff --loops 1 --connections 100 --clients 2 --frobnicate"
        "--accept-scaling --route handoff --loops 1 --connections 100 --clients 2 extra"
        "--accept-scaling --route handoff --loops 1 --connections 100 --clients 2 --test-idle-loop"
        "--accept-scaling --route handoff --loops 2 --connections 200 --clients 2 --acceptors 0"
        "--accept-scaling --route handoff --loops 2 --connections 200 --clients 2 --acceptors 3"
        "--accept-scaling --route handoff --loops 2 --connections 200 --clients 2 --acceptors x"
        "--accept-scaling --route herd --loops 2 --connections 200 --clients 2 --acceptors 2"
        "--accept-scaling --route handoff --loops 2 --connections 200 --clients 2 --test-idle-acceptor"
        "--accept-scaling --route handoff --loops 1 --connections 100 --clients 2 --requests 5"
        "--accept-scaling --route handoff --loops 1 --connections 100 --clients 2 --long-lived 2"
        "--long-lived --route handoff --loops 2 --requests 10"
        "--route handoff --loops 2 --requests 10 --long-lived"
        "--long-lived 0 --route handoff --loops 2 --requests 10"
        "--long-lived x --route handoff --loops 2 --requests 10"
        "--long-lived 4 --route handoff --loops 2"
        "--long-lived 4 --route handoff --loops 2 --requests 0"
        "--long-lived 4 --route handoff --loops 2 --requests 10 --connections 100"
        "--long-lived 4 --route handoff --loops 2 --requests 10 --clients 4"
        "--long-lived 4 --route handoff --loops 2 --requests 10 --seconds 0"
        "--long-lived 4 --loops 2 --requests 10"
    )
    for args in "${bad[@]}"; do
        # shellcheck disable=SC2086 # the words are the test
        run $args
        [ "$rc" -eq 2 ] || fail "'$args': exit $rc, wants 2"
        [ ! -s "$tmp/out" ] || fail "'$args': stdout is not empty"
        grep -q "^usage: turnloop-bench --accept-scaling" "$tmp/err" || fail "'$args': no usage"
    done
    run "${base[@]}" --help
    if [ "$rc" -ne 0 ] || ! grep -q "^usage: turnloop-bench" "$tmp/out"; then
        fail "--help: exit $rc, wants 0 with the usage on stdout"
    fi
    ;;
run) # a small real run whose line must hold the invariants
    route=$1 loops=$2
    shift 2
    conns=$((200 * loops))
    run --accept-scaling --route "$route" --loops "$loops" --connections "$conns" --clients 4 \
        --payload 100 "$@"
    [ "$rc" -eq 0 ] || fail "exit $rc"
    portable=""
    for a in "$@"; do [ "$a" = "--portable" ] && portable=portable; done
    "$check" "$tmp/out" "$route" "$loops" "$conns" $portable || fail "invariants"
    ;;
*)
    echo "bench_test.sh: unknown case $case" >&2
    exit 2
    ;;
esac
exit 0
