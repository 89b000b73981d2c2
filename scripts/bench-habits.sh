#!/usr/bin/env bash
# The open report's cost in PostgreSQL CPU (issue 37: at most 0.1 ms per report at 1,000,000 devices). pgbench runs the
# two statements of an open report against DEVICES seeded devices, each with a learned habit, and a live edition with
# its broadcast: scripts/pgbench-open.sql, the reader's first open of the day (the habit written, the open counted, the
# key moved in MOVE_PERMILLE of 1,000), and scripts/pgbench-open-again.sql, a later open that day. The CPU is what
# PostgreSQL's processes used meanwhile (user + system time of the postmaster, its children alive and those that ended,
# from /proc), divided by the reports pgbench made: pgbench's own CPU is not in it.
#
# Usage: scripts/with-postgres.sh scripts/bench-habits.sh
#   env: PAPERBOY (binary, default .build-release/release/paperboy), DEVICES (default 1000000: seeding takes minutes),
#        DURATION (seconds per run, default 30), RUNS (default 3), CLIENTS (pgbench connections, default 4),
#        MOVE_PERMILLE (key moves per 1,000 first opens, default 300: a Friday's or Sunday's switch of day type for most
#        readers, 2 mornings in 7, plus habits drifting)
# Needs pgbench (apt-get install postgresql-contrib).
set -euo pipefail
cd "$(dirname "$0")/.."
paperboy=${PAPERBOY:-.build-release/release/paperboy}
devices=${DEVICES:-1000000}
duration=${DURATION:-30}
runs=${RUNS:-3}
clients=${CLIENTS:-4}
move=${MOVE_PERMILLE:-300}
case "${1:-}" in -h | --help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
[ -x "$paperboy" ] || { echo "no $paperboy: build it with swift build -c release --scratch-path .build-release --product paperboy" >&2; exit 1; }
: "${DATABASE_URL:?run me under scripts/with-postgres.sh or set DATABASE_URL and PG*}"
for tool in pgbench psql; do
    command -v "$tool" >/dev/null || { echo "bench-habits: needs $tool (apt-get install postgresql-contrib)" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/key.p8" 2>/dev/null
"$paperboy" migrate >/dev/null 2>&1
"$paperboy" apps add --bundle-id com.example.bench --team-id TEAM123456 --key-id KEY1234567 --key-file "$work/key.p8" --json >/dev/null
"$paperboy" publications add morning --app 1 >/dev/null
seed_start=$(date +%s)
"$paperboy" devices seed --app 1 --publication morning --count "$devices" >/dev/null
echo "seeded $devices devices in $(( $(date +%s) - seed_start )) s"
# Every device with a learned habit (the steady state: a report updates a row that exists), keyed by its token.
psql -X -q -v ON_ERROR_STOP=1 -c "INSERT INTO device_habits (device_id, weekday_minute, weekday_spread, weekday_mornings, last_day, cohort_key)
    SELECT id, 200, 10, 6, 1, cohort_key FROM devices" -c "VACUUM ANALYZE devices" -c "VACUUM ANALYZE device_habits" >/dev/null
python3 -c '
import datetime, json, sys
deadline = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=3)).replace(microsecond=0)
bundle = {"url": "https://cdn.example.com/bench/large-1.zip", "bytes": 1048576, "sha256": "ab" * 32}
json.dump({"publication": "morning", "issueDate": "2099-12-31", "deadline": deadline.isoformat(),
           "tiers": {"large": {"bundles": [bundle]}}, "pages": [{"number": 1, "title": "Front page"}]}, open(sys.argv[1], "w"))
' "$work/edition.json"
edition=$("$paperboy" editions publish "$work/edition.json" --app 1 --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
# Its broadcast, stored as completed (its wave 1 over, so that keys may move): what an open after the morning's wave 1
# meets. Nothing here sends pushes.
psql -X -q -v ON_ERROR_STOP=1 -c "INSERT INTO broadcasts (id, edition_id, environment, state, plan, finished_at)
    VALUES (gen_random_uuid(), '$edition', 0, 'completed', '{}', now())" >/dev/null
maxid=$(psql -X -Atc 'SELECT max(id) FROM devices')
postmaster=$(ps -o ppid= -p "$(psql -X -Atc 'SELECT pg_backend_pid()')" | tr -d ' ')
ticks=$(getconf CLK_TCK)

# PostgreSQL's CPU so far, in clock ticks: the postmaster's own and its ended children's (reaped into cutime and
# cstime), and its children alive now.
cpu() {
    local total pid
    total=$(awk '{print $14 + $15 + $16 + $17}' "/proc/$postmaster/stat")
    for pid in $(pgrep -P "$postmaster"); do
        total=$(( total + $(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0) ))
    done
    echo "$total"
}

echo "machine: $(nproc) cores; $(psql -X -Atc 'SELECT count(*) FROM devices') devices, $(psql -X -Atc 'SELECT count(*) FROM device_habits') habits; $clients clients, ${duration}s per run; key moves $move per 1,000 first opens"
printf '%-12s %-4s %10s %10s %14s\n' report run reports tps pg_cpu_ms_each
for script in open open-again; do
    for run in $(seq "$runs"); do
        before=$(cpu)
        pgbench -n -M prepared -c "$clients" -j 2 -T "$duration" -D "maxid=$maxid" -D "movepermille=$move" -f "scripts/pgbench-$script.sql" \
            > "$work/pgbench.txt" 2>&1 || { echo "bench-habits: pgbench failed:" >&2; tail -5 "$work/pgbench.txt" >&2; exit 1; }
        sleep 1  # the backends' exit, reaped into the postmaster's children times
        after=$(cpu)
        reports=$(awk '/number of transactions actually processed/ {print $6}' "$work/pgbench.txt" | cut -d/ -f1)
        tps=$(awk '/^tps/ {print $3}' "$work/pgbench.txt")
        each=$(python3 -c "print(f'{($after - $before) / $ticks * 1000 / $reports:.4f}')")
        printf '%-12s %-4s %10s %10.0f %14s\n' "$script" "$run" "$reports" "$tps" "$each"
    done
done
echo "first opens counted: $(psql -X -Atc 'SELECT count(*) FROM broadcast_opens'); devices whose key is not their habit row's: $(psql -X -Atc 'SELECT count(*) FROM devices d JOIN device_habits h ON h.device_id = d.id WHERE d.cohort_key <> h.cohort_key')"
