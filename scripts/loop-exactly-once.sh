#!/usr/bin/env bash
# Runs one exactly-once test again and again and tallies the runs: issue 25's loop ("every device exactly once,
# explained"). Each run's output is kept; a failed run's lines name the devices missed or repeated, with the batch,
# lease, connection and stream of each (FaultRig.expectExactlyOnce).
#
#   scripts/loop-exactly-once.sh [--runs 50] [--busy] [--out DIR] 'FILTER'
#
# FILTER is a `swift test --filter` pattern naming one test, e.g.
#   'DayTwoTests/rollingRestart'                  (4,000 devices over 30 s, two workers restarted in turn)
#   'FaultTests/pausedWorkerCatchesUpAtThePlansRate'   (SIGSTOP for 10 s)
#   'WorkerProcessTests'                          (two workers against the simulator)
# --busy starts one busy-looping process per core beside each run (a loaded machine: starved event loops).
# Needs a debug build with the tests (`swift build --build-tests`); each run is bounded by the test's time limit
# and by `timeout 300`.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=50 busy=0 out=""
while [ $# -gt 1 ]; do
    case "$1" in
        --runs) runs=$2; shift ;;
        --busy) busy=1 ;;
        --out) out=$2; shift ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
    shift
done
[ $# -eq 1 ] || { echo "usage: $0 [--runs N] [--busy] [--out DIR] FILTER" >&2; exit 2; }
filter=$1
out=${out:-/tmp/loop-$(echo "$filter" | tr -c 'A-Za-z0-9' '-')-$(date +%s)}
mkdir -p "$out"

busy_pids=()
stop_busy() { for pid in "${busy_pids[@]:-}"; do [ -n "$pid" ] && kill "$pid" 2>/dev/null || true; done; busy_pids=(); }
trap stop_busy EXIT

passed=0 failed=0
for run in $(seq 1 "$runs"); do
    if [ "$busy" = 1 ]; then
        for _ in $(seq 1 "$(nproc)"); do (while :; do :; done) & busy_pids+=($!); done
    fi
    log="$out/run-$run.log"
    started=$(date +%s)
    if timeout 300 swift test --skip-build --no-parallel --filter "$filter" >"$log" 2>&1; then
        passed=$((passed + 1)); verdict=passed
    else
        failed=$((failed + 1)); verdict=FAILED
    fi
    stop_busy
    seconds=$(( $(date +%s) - started ))
    detail=$(grep -aoE "every device accepted exactly once: [0-9]+ more than once, [0-9]+ never|busiest second[^\"]*|✘ Test \"[^\"]{0,80}" "$log" | head -3 | tr '\n' ';' || true)
    echo "run $run/$runs: $verdict in ${seconds}s${busy:+ }$([ "$busy" = 1 ] && echo "(busy)") $detail"
done
echo "$filter: $passed passed, $failed failed of $runs runs$([ "$busy" = 1 ] && echo ", each beside $(nproc) busy loops"); logs in $out"
[ "$failed" = 0 ]
