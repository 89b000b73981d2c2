#!/usr/bin/env bash
# The push clients' allocations per request, counted by package-benchmark (Benchmarks/PushAllocations, release build)
# and checked against the counts recorded in Benchmarks/Thresholds: more than recorded (beyond the benchmarks' 1 %
# tolerance) fails. The counts are deterministic (in-memory channels, no threads), for Swift 6.3 and the package
# versions this package resolves to.
#
# Usage: scripts/check-allocations.sh [extra `swift package` options, e.g. --scratch-path .build-release]
# After a change that removes allocations (or a package update that moves them), record the new counts:
#   swift package --allow-writing-to-package-directory benchmark thresholds update --target PushAllocations \
#       --path "$PWD/Benchmarks/Thresholds"
# (package-benchmark reads a relative --path from its own working directory, not this one: hence $PWD.)
set -uo pipefail
cd "$(dirname "$0")/.."
output=$(mktemp)
trap 'rm -f "$output"' EXIT
swift package "$@" benchmark thresholds check --target PushAllocations --path "$PWD/Benchmarks/Thresholds" --no-progress \
    2>&1 | tee "$output"
status=${PIPESTATUS[0]}
# The tool's verdict line: "The baseline 'Current_run' is EQUAL to / BETTER than / WORSE than the defined thresholds."
if [ "$status" = 0 ]; then
    echo "check-allocations: every count as recorded in Benchmarks/Thresholds"
elif grep -q "is WORSE than the defined thresholds" "$output"; then
    echo "check-allocations: more allocations than recorded in Benchmarks/Thresholds (see the table above)" >&2
elif grep -q "is BETTER than the defined thresholds" "$output"; then
    echo "check-allocations: fewer allocations than recorded in Benchmarks/Thresholds (an improvement, accepted);" \
        "record them with: swift package --allow-writing-to-package-directory benchmark thresholds update" \
        "--target PushAllocations --path \"\$PWD/Benchmarks/Thresholds\""
    status=0
else
    echo "check-allocations: the benchmark did not run (status $status)" >&2
fi
exit "$status"
