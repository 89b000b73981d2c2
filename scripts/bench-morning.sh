#!/usr/bin/env bash
# The "morning at 10,000,000 devices" benchmark, database side: every statement requests and batches run,
# timed on a small fleet and again on a large one, with days of editions in the ledger as a real fleet leaves
# it (pruned by LedgerPruner), and the sizes of the big tables day by day.
#
# Usage: scripts/with-postgres.sh scripts/bench-morning.sh [--small N] [--large N] [--days D] [--retention 7d]
#            [--large-days D] [--large-retention R] [--large-all-days] [--samples 200] [--out DIR] [--skip-large]
#   --small N        the small fleet (default 100000)
#   --large N        the large fleet (default 10000000); the small fleet's devices stay and the rest are added
#   --days D         simulated days, two editions each, at the small size, each pruned at its end (default 14)
#   --retention R    the ledger's retention at the small size (default 7d, as `paperboy serve`)
#   --large-days D   simulated days at the large size (default 2); only the days the retention keeps are
#                    simulated (--retained-only): what is left after pruning, without inserting and deleting
#                    the older days' rows
#   --large-retention R  the retention at the large size (default 2d). A week's ledger of 10,000,000 devices
#                    takes about 80 GB and hours to write: more than this 2-core machine's disk and afternoon
#                    (BENCHMARKS.md). --large-days 14 --large-retention 7d is the full measurement.
#   --large-all-days each of the --large-days days at the large size too, each pruned at its end
#   --samples S      executions per statement (default 200)
#   --out DIR        where the JSON results go (default: a new directory under /tmp, printed)
#   --skip-large     stop after the small fleet
#   env: PAPERBOY_BIN (default .build-release/release/paperboy), BENCH_BIN (default .build-release/release/paperboy-bench)
# Steps: migrate, an app with publications morning and evening, `paperboy devices seed` (90 % auto-download),
# `paperboy-bench history`, VACUUM ANALYZE, `paperboy-bench statements`; the same at the large size; then
# `paperboy-bench compare`. Any failed step stops the script with a non-zero status.
set -euo pipefail
cd "$(dirname "$0")/.."

small=100000 large=10000000 days=14 large_days=2 retention=7d large_retention=2d samples=200 out="" skip_large=0 large_history=(--retained-only)
while [ $# -gt 0 ]; do
    case "$1" in
        --small) small=${2:?--small needs a number}; shift 2 ;;
        --large) large=${2:?--large needs a number}; shift 2 ;;
        --days) days=${2:?--days needs a number}; shift 2 ;;
        --large-days) large_days=${2:?--large-days needs a number}; shift 2 ;;
        --retention) retention=${2:?--retention needs a duration}; shift 2 ;;
        --large-retention) large_retention=${2:?--large-retention needs a duration}; shift 2 ;;
        --samples) samples=${2:?--samples needs a number}; shift 2 ;;
        --out) out=${2:?--out needs a directory}; shift 2 ;;
        --skip-large) skip_large=1; shift ;;
        --large-all-days) large_history=(); shift ;;
        -h | --help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench-morning: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
for pair in "--small:$small" "--large:$large" "--days:$days" "--large-days:$large_days" "--samples:$samples"; do
    [[ "${pair#*:}" =~ ^[1-9][0-9]*$ ]] || { echo "bench-morning: ${pair%%:*}: '${pair#*:}' is not a positive integer" >&2; exit 2; }
done
[ "$skip_large" = 1 ] || [ "$large" -gt "$small" ] || { echo "bench-morning: --large ($large) must be larger than --small ($small)" >&2; exit 2; }

B=${PAPERBOY_BIN:-.build-release/release/paperboy}
BENCH=${BENCH_BIN:-.build-release/release/paperboy-bench}
for bin in "$B" "$BENCH"; do
    [ -x "$bin" ] || { echo "bench-morning: no $bin: build it with swift build -c release --scratch-path .build-release --product $(basename "$bin")" >&2; exit 1; }
done
: "${DATABASE_URL:?run me under scripts/with-postgres.sh or set DATABASE_URL and PG*}"
command -v psql >/dev/null || { echo "bench-morning: needs psql" >&2; exit 1; }
command -v openssl >/dev/null || { echo "bench-morning: needs openssl" >&2; exit 1; }

say() { echo "bench-morning: $*" >&2; }
die() { say "error: $*"; exit 1; }
now() { date +%s.%N; }
since() { python3 -c "print(f'{$(now) - $1:.1f}')"; }
if [ -z "$out" ]; then out=$(mktemp -d /tmp/paperboy-bench-morning-XXXXXX); fi
mkdir -p "$out"
say "results in $out"
phases="$out/phases.txt"
: > "$phases"
phase() { echo "$1 $2" >> "$phases"; say "$1 took $2 s"; }

# 1. Schema, app, publications.
key=$(mktemp /tmp/paperboy-bench-key-XXXXXX.p8)
trap 'rm -f "$key"' EXIT
openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null | openssl pkcs8 -topk8 -nocrypt -out "$key"
"$B" migrate > "$out/setup.log" 2>&1 || die "paperboy migrate failed: $(tail -3 "$out/setup.log")"
"$B" apps add --bundle-id com.example.news --team-id TEAM123456 --key-id KEY1234567 --key-file "$key" >> "$out/setup.log" 2>&1 \
    || die "apps add failed: $(tail -3 "$out/setup.log")"
for publication in morning evening; do
    "$B" publications add "$publication" --app 1 >> "$out/setup.log" 2>&1 || die "publications add failed: $(tail -3 "$out/setup.log")"
done

# One size: seed up to N devices, simulate the days, VACUUM ANALYZE, time the statements.
measure() {
    local name=$1 count=$2 sim_days=$3 keep=$4; shift 4
    local t
    say "$name: seeding up to $count devices"
    t=$(now)
    "$B" devices seed --app 1 --publication morning --publication evening --count "$count" --auto-download 0.9 --seed 1 --json \
        > "$out/seed-$name.json" 2> "$out/seed-$name.err" || die "devices seed failed: $(tail -3 "$out/seed-$name.err")"
    phase "seed-$name" "$(since "$t")"
    say "$name: $sim_days days of history"
    t=$(now)
    "$BENCH" history --days "$sim_days" --retention "$keep" --reset --json-file "$out/history-$name.json" "$@" \
        > "$out/history-$name.txt" || die "paperboy-bench history failed"
    phase "history-$name" "$(since "$t")"
    cat "$out/history-$name.txt"
    t=$(now)
    psql -X -q -v ON_ERROR_STOP=1 -c 'VACUUM ANALYZE' || die "VACUUM ANALYZE failed"
    phase "vacuum-analyze-$name" "$(since "$t")"
    say "$name: statements"
    t=$(now)
    "$BENCH" statements --samples "$samples" --budget 60 --label "$name" --json-file "$out/statements-$name.json" > "$out/statements-$name.txt" \
        || die "paperboy-bench statements failed"
    phase "statements-$name" "$(since "$t")"
    cat "$out/statements-$name.txt"
    psql -X -Atc "SELECT 'database bytes ' || pg_database_size(current_database())" >> "$phases"
}

echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, load average $(cut -d' ' -f1-3 /proc/loadavg); $(psql -X -Atc 'SHOW server_version')"
measure small "$small" "$days" "$retention"
if [ "$skip_large" = 0 ]; then
    measure large "$large" "$large_days" "$large_retention" ${large_history[@]+"${large_history[@]}"}
    echo
    "$BENCH" compare "$out/statements-small.json" "$out/statements-large.json" | tee "$out/compare.txt"
    "$BENCH" compare "$out/statements-small.json" "$out/statements-large.json" --json > "$out/compare.json"
fi
echo
echo "phases (seconds):"
cat "$phases"
echo "results: $out"
