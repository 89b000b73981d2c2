#!/usr/bin/env bash
# `swift test` with a bound on its time: CI's way to run a suite so that a test that never ends fails the run in
# minutes, naming itself, instead of holding CI until its limit with nothing printed.
#
#   scripts/swift-test-bounded.sh SECONDS [swift test arguments...]
#   scripts/swift-test-bounded.sh SECONDS --direct [--filter R] [--skip R] [--no-parallel]
#
# --direct runs the test binary `swift build --build-tests` left (.build/debug/paperboyPackageTests.xctest) itself,
# without SwiftPM, which holds the lock on .build for as long as `swift test` runs, even with --skip-build: CI builds
# the simulation in release while the timing-sensitive suite runs (.ci/run), and SwiftPM would make one wait for
# the other.
#
# The runner is verbose (`-v`: every test's start is printed), line-buffered (nothing it printed is lost when it is
# stopped), and its output is kept in a log as it is printed. After SECONDS the run is stopped and the tests that
# started and never ended are listed; the exit status is then 124. Otherwise it is `swift test`'s.
set -uo pipefail
if [ $# -lt 1 ] || ! [[ "$1" =~ ^[0-9]+$ ]]; then
    echo "usage: $0 SECONDS [swift test arguments...]" >&2
    exit 2
fi
limit=$1
shift
log=$(mktemp /tmp/swift-test-bounded.XXXXXX.log)
if [ "${1:-}" = "--direct" ]; then
    shift
    binary=$(dirname "$0")/../.build/debug/paperboyPackageTests.xctest
    [ -x "$binary" ] || { echo "$binary is missing: run swift build --build-tests" >&2; exit 2; }
    runner=(env NO_COLOR=1 "$binary" --testing-library swift-testing --verbose "$@")
else
    runner=(swift test -v "$@")
fi
timeout --kill-after=30 "$limit" stdbuf -oL -eL "${runner[@]}" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if [ "$status" = 124 ] || [ "$status" = 137 ]; then
    echo "swift-test-bounded: stopped after ${limit} s; tests that started and did not end:" >&2
    python3 - "$log" >&2 <<'EOF'
import re, sys
started, ended = {}, set()
for line in open(sys.argv[1], errors="replace"):
    m = re.match(r'^◇ Test (?!case |run started)(.*) started\.$', line.rstrip())
    if m:
        started.setdefault(m.group(1), True)
        continue
    m = re.match(r'^\S+ Test (?!case )(.*?)(?: with [0-9]+ test cases?)? (passed|failed) after [0-9.]+ seconds', line)
    if m:
        ended.add(m.group(1))
left = [name for name in started if name not in ended]
for name in left:
    print("  " + name)
if not left:
    print("  (none: the runner itself did not exit)")
EOF
    exit 124
fi
exit "$status"
