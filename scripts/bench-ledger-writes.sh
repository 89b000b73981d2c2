#!/usr/bin/env bash
# PostgreSQL's CPU per 1,000 deliveries recorded, with and without one of the delivery ledger's former parts: its
# foreign keys (--compare foreign-keys, the default; dropped by migration 0022) or its index of background pushes by
# device and time (--compare recent-index; dropped by migration 0030), on a database that already holds a fleet
# (e.g. the one scripts/bench-broadcast.sh left).
# pgbench runs the ledger's INSERT as the workers write it (1,000 rows a statement, devices spread over the table
# as a batch's cohort keys spread them, ON CONFLICT DO NOTHING) from --clients connections for --seconds, rounds
# alternating between "with" (foreign keys added back NOT VALID: checked for new rows only; the index built again)
# and "without"; the CPU is every PostgreSQL process's user + system time (/proc, the exited backends' through the
# postmaster) over the round. Ends without them, as the migrations leave the ledger. A benchmark database only: it
# writes deliveries of waves 100 and above.
#
# Usage: DATABASE_URL=… PG*=… scripts/bench-ledger-writes.sh [--compare foreign-keys|recent-index] [--rounds 3]
#            [--seconds 30] [--clients 2] [--json]
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=3 seconds=30 clients=2 json=0 compare=foreign-keys
while [ $# -gt 0 ]; do
    case "$1" in
        --compare) compare=${2:?}; shift 2 ;;
        --rounds) rounds=${2:?}; shift 2 ;;
        --seconds) seconds=${2:?}; shift 2 ;;
        --clients) clients=${2:?}; shift 2 ;;
        --json) json=1; shift ;;
        -h | --help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench-ledger-writes: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
case "$compare" in
    foreign-keys) what="foreign keys" ;;
    recent-index) what="deliveries_recent_background" ;;
    *) echo "bench-ledger-writes: --compare: '$compare' is neither foreign-keys nor recent-index" >&2; exit 2 ;;
esac
for pair in "--rounds:$rounds" "--seconds:$seconds" "--clients:$clients"; do
    [[ "${pair#*:}" =~ ^[1-9][0-9]*$ ]] || { echo "bench-ledger-writes: ${pair%%:*}: '${pair#*:}' is not a positive integer" >&2; exit 2; }
done
: "${PGHOST:?set PGHOST, PGPORT, PGUSER, PGDATABASE (scripts/with-postgres.sh does)}"
command -v pgbench >/dev/null || PATH=$PATH:$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
say() { echo "bench-ledger-writes: $*" >&2; }
q() { psql -X -q -t -A -v ON_ERROR_STOP=1 -c "$1"; }

devices=$(q "SELECT count(*) FROM devices")
max_id=$(q "SELECT max(id) FROM devices")
broadcast=$(q "SELECT id FROM broadcasts ORDER BY created_at LIMIT 1")
[ -n "$broadcast" ] && [ "$devices" -gt 0 ] || { echo "bench-ledger-writes: needs devices and a broadcast (run scripts/bench-broadcast.sh first)" >&2; exit 1; }
say "$devices devices, broadcast $broadcast, $clients clients, $rounds rounds of $seconds s with and without $what"

tmp=$(mktemp -d /tmp/bench-ledger-writes-XXXXXX)
cat > "$tmp/insert.sql" <<SQL
\set wave random(100, 32000)
INSERT INTO deliveries (device_id, broadcast_id, wave, cohort, background, sent_at, outcome, reason)
SELECT DISTINCT (random() * ($max_id - 1))::bigint + 1, '$broadcast'::uuid, :wave, 0, true, now(), 'accepted', NULL::text
FROM generate_series(1, 1000)
ON CONFLICT DO NOTHING;
SQL

postmaster=$(head -1 "$(q "SHOW data_directory")/postmaster.pid" 2>/dev/null || true)
# Clock ticks of user + system time of the postmaster, its live children, and the children it has reaped (its
# cutime + cstime: pgbench's backends exit with the run, before they could be read).
pg_cpu() {
    local total=0 pid
    read -r -a f < "/proc/$postmaster/stat"
    total=$((f[13] + f[14] + f[15] + f[16]))
    for pid in $(pgrep -P "$postmaster"); do
        { read -r -a f < "/proc/$pid/stat"; } 2>/dev/null || continue
        total=$((total + f[13] + f[14]))
    done
    echo "$total"
}
[ -n "$postmaster" ] && [ -r "/proc/$postmaster/stat" ] || { echo "bench-ledger-writes: cannot read the postmaster's pid (run me on the database's machine)" >&2; exit 1; }
hz=$(getconf CLK_TCK)

keys() {
    if [ "$compare" = recent-index ]; then
        if [ "$1" = with ]; then
            q "CREATE INDEX IF NOT EXISTS deliveries_recent_background ON deliveries (device_id, sent_at) WHERE background" >/dev/null
        else
            q "SET client_min_messages = warning; DROP INDEX IF EXISTS deliveries_recent_background" >/dev/null
        fi
    elif [ "$1" = with ]; then
        q "ALTER TABLE deliveries ADD CONSTRAINT deliveries_device_id_fkey FOREIGN KEY (device_id) REFERENCES devices (id) NOT VALID" >/dev/null
        q "ALTER TABLE deliveries ADD CONSTRAINT deliveries_broadcast_id_fkey FOREIGN KEY (broadcast_id) REFERENCES broadcasts (id) ON DELETE CASCADE NOT VALID" >/dev/null
    else
        q "SET client_min_messages = warning; ALTER TABLE deliveries DROP CONSTRAINT IF EXISTS deliveries_device_id_fkey" >/dev/null
        q "SET client_min_messages = warning; ALTER TABLE deliveries DROP CONSTRAINT IF EXISTS deliveries_broadcast_id_fkey" >/dev/null
    fi
}

results="$tmp/results.txt"
: > "$results"
for round in $(seq 1 "$rounds"); do
    for variant in with without; do
        keys "$variant"
        q "CHECKPOINT" >/dev/null
        before_rows=$(q "SELECT n_tup_ins FROM pg_stat_user_tables WHERE relname = 'deliveries'")
        before_cpu=$(pg_cpu)
        pgbench -n -f "$tmp/insert.sql" -c "$clients" -j "$clients" -T "$seconds" > "$tmp/pgbench.out" 2>&1 || { cat "$tmp/pgbench.out" >&2; exit 1; }
        after_cpu=$(pg_cpu)
        sleep 1  # the statistics collector's report
        after_rows=$(q "SELECT n_tup_ins FROM pg_stat_user_tables WHERE relname = 'deliveries'")
        rows=$((after_rows - before_rows))
        cpu=$(python3 -c "print(($after_cpu - $before_cpu) / $hz)")
        echo "$round $variant $rows $cpu" >> "$results"
        say "round $round, $variant $what: $rows deliveries in $seconds s, PostgreSQL CPU $cpu s"
    done
done
keys without

python3 - "$results" "$seconds" "$json" "$devices" "$clients" "$compare" "$what" <<'PY'
import json, statistics, sys
path, seconds, as_json, devices, clients = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", int(sys.argv[4]), int(sys.argv[5])
compare, what = sys.argv[6], sys.argv[7]
rounds = {}
for line in open(path):
    r, variant, rows, cpu = line.split()
    rounds.setdefault(variant, []).append({"round": int(r), "rows": int(rows), "cpuSeconds": float(cpu),
        "cpuMsPer1000": 1000 * float(cpu) / (int(rows) / 1000) if int(rows) else None, "rowsPerSecond": int(rows) / seconds})
summary = {v: {"cpuMsPer1000Median": round(statistics.median(x["cpuMsPer1000"] for x in rs), 1),
               "rowsPerSecondMedian": round(statistics.median(x["rowsPerSecond"] for x in rs)), "rounds": rs} for v, rs in rounds.items()}
ratios = [w["cpuMsPer1000"] / o["cpuMsPer1000"] for w, o in zip(rounds["with"], rounds["without"])]
result = {"compare": compare, "devices": devices, "clients": clients, "secondsPerRound": seconds, "variants": summary,
          "cpuWithOverWithoutMedian": round(statistics.median(ratios), 2)}
if as_json:
    print(json.dumps(result, indent=2))
else:
    for v in ("with", "without"):
        s = summary[v]
        print(f"{v:>7} {what}: PostgreSQL CPU {s['cpuMsPer1000Median']} ms per 1,000 deliveries, {s['rowsPerSecondMedian']} deliveries/s"
              f" (median of {len(s['rounds'])} rounds; {clients} clients)")
    print(f"CPU per delivery with / without, per round pair (median): {result['cpuWithOverWithoutMedian']}")
PY
rm -rf "$tmp"
