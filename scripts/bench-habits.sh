#!/usr/bin/env bash
# The open report's cost in PostgreSQL CPU (issue 37: the habit update at most 0.1 ms per report at 1,000,000
# devices). pgbench runs the two statements of an open report (ReadDeviceHabit and WriteOpen, prepared as serve runs
# them) against DEVICES seeded devices, each with a learned habit and already counted as an opener of the live
# edition's broadcast, in three kinds:
#   later       a later open of the day (scripts/pgbench-open-again.sql): nothing learned, no key to move;
#   first       the day's first open (scripts/pgbench-open.sql, MOVE_PERMILLE 0): the habit written, the key kept;
#   first+move  the same with the device's key moved every time (MOVE_PERMILLE 1000): a Friday's or Sunday's switch of
#               day type, or a habit drifting more than 5 minutes.
# The habit update's cost is first − later, and a key move's first+move − first. The CPU is what PostgreSQL's
# processes used meanwhile (user + system time of the postmaster, its children alive and those that ended, from
# /proc), divided by the reports pgbench made: pgbench's own CPU is not in it.
#
# Usage: scripts/with-postgres.sh scripts/bench-habits.sh
#   env: PAPERBOY (binary, default .build-release/release/paperboy), DEVICES (default 1000000: seeding takes about a
#        minute), DURATION (seconds per run, default 30), RUNS (per kind, default 3), CLIENTS (pgbench connections,
#        default 4)
# Needs pgbench (apt-get install postgresql-contrib).
set -euo pipefail
cd "$(dirname "$0")/.."
paperboy=${PAPERBOY:-.build-release/release/paperboy}
devices=${DEVICES:-1000000}
duration=${DURATION:-30}
runs=${RUNS:-3}
clients=${CLIENTS:-4}
case "${1:-}" in -h | --help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
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
# Every device counted as an opener already, so that every report's insert meets its row (as all but the first report
# after a publication do) and the three kinds differ by the habit alone.
psql -X -q -v ON_ERROR_STOP=1 -c "INSERT INTO broadcast_opens (broadcast_id, device_id) SELECT b.id, d.id FROM broadcasts b, devices d" \
    -c "VACUUM ANALYZE broadcast_opens" >/dev/null
maxid=$(psql -X -Atc 'SELECT max(id) FROM devices')
# The postmaster: the parent of the checkpointer, which lives as long as the cluster (a backend's pid would be gone
# by the time ps looks).
postmaster=$(ps -o ppid= -p "$(psql -X -Atc "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'")" | tr -d ' ')
[ -n "$postmaster" ] || { echo "bench-habits: cannot find PostgreSQL's postmaster" >&2; exit 1; }
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

echo "machine: $(nproc) cores; $(psql -X -Atc 'SELECT count(*) FROM devices') devices, $(psql -X -Atc 'SELECT count(*) FROM device_habits') habits; $clients clients, ${duration}s per run"
printf '%-11s %-4s %10s %10s %14s\n' report run reports tps pg_cpu_ms_each
for kind in later first first+move; do
    case "$kind" in
        later) script=open-again move=0 ;;
        first) script=open move=0 ;;
        first+move) script=open move=1000 ;;
    esac
    for run in $(seq "$runs"); do
        before=$(cpu)
        pgbench -n -M prepared -c "$clients" -j 2 -T "$duration" -D "maxid=$maxid" -D "movepermille=$move" -f "scripts/pgbench-$script.sql" \
            > "$work/pgbench.txt" 2>&1 || { echo "bench-habits: pgbench failed:" >&2; tail -5 "$work/pgbench.txt" >&2; exit 1; }
        sleep 1  # the backends' exit, reaped into the postmaster's children times
        after=$(cpu)
        reports=$(awk '/number of transactions actually processed/ {print $6}' "$work/pgbench.txt" | cut -d/ -f1)
        tps=$(awk '/^tps/ {print $3}' "$work/pgbench.txt")
        each=$(python3 -c "print(f'{($after - $before) / $ticks * 1000 / $reports:.4f}')")
        printf '%-11s %-4s %10s %10.0f %14s\n' "$kind" "$run" "$reports" "$tps" "$each"
    done
done
