#!/usr/bin/env bash
# Receipt tallies (docs/receipt-tallies.md): what a broadcast's status costs, and the receipt path's throughput,
# before and after the tallies, on one database.
#
# Usage: scripts/with-postgres.sh scripts/bench-tallies.sh [--devices N] [--reuse] [--duration S] [--connections C]
#   --devices N      devices seeded (default 100000; 10000000 works, with the time and disk that takes), then
#                    `paperboy-bench history --days 1 --running`: a day of two editions and a running morning
#                    broadcast, wave 1 sent to every target and receipts from two thirds of them
#   --reuse          the database holds that fleet already (a kept cluster): no migrate, seeding or history
#   --duration S     seconds per measurement (default 30)
#   --connections C  concurrency of the receipt runs (default 16)
#   env: PAPERBOY (default .build-release/release/paperboy), BENCH (default .build-release/release/paperboy-bench),
#        RUNS (receipt runs per side, default 3)
# One measurement at a time, in this order:
#   1. every broadcast's recount (`paperboy broadcast status ID --exact`), timed: what a broadcast's end costs once
#   2. the status's receipt counts, database side, p50/p99 over S seconds each (pgbench, one client): "before" the
#      two statements the status ran until migration 0019 (every receipt of the edition), "after" the tallies' read
#   3. GET /v1/broadcasts/{id} through `paperboy serve --no-dispatch` (wrk, 4 connections, p50/p99)
#   4. receipts (POST /v1/devices/{token}/receipts with wrk, then its statement with pgbench), each run on a new
#      edition with a broadcast that reached the sampled devices: "before" `serve --no-dispatch` (nothing tallies),
#      "after" `serve` (its dispatcher steps every 2 s); for "after", the watermark's largest lag behind now()
# Needs wrk, pgbench, psql and python3 (apt-get install wrk postgresql-contrib).
set -euo pipefail
cd "$(dirname "$0")/.."
paperboy=${PAPERBOY:-.build-release/release/paperboy}
bench=${BENCH:-.build-release/release/paperboy-bench}
runs=${RUNS:-3}
devices=100000 reuse=0 duration=30 connections=16
while [ $# -gt 0 ]; do
    case "$1" in
        --devices) devices=${2:?--devices needs a number}; shift 2 ;;
        --reuse) reuse=1; shift ;;
        --duration) duration=${2:?--duration needs seconds}; shift 2 ;;
        --connections) connections=${2:?--connections needs a number}; shift 2 ;;
        -h | --help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench-tallies: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
for pair in "--devices:$devices" "--duration:$duration" "--connections:$connections" "RUNS:$runs"; do
    [[ "${pair#*:}" =~ ^[1-9][0-9]*$ ]] || { echo "bench-tallies: ${pair%%:*}: '${pair#*:}' is not a positive integer" >&2; exit 2; }
done
for bin in "$paperboy" "$bench"; do
    [ -x "$bin" ] || { echo "bench-tallies: no $bin: build it (swift build -c release --scratch-path .build-release --product $(basename "$bin"))" >&2; exit 1; }
done
: "${DATABASE_URL:?run me under scripts/with-postgres.sh or set DATABASE_URL and PG*}"
for tool in wrk pgbench psql python3; do
    command -v "$tool" >/dev/null || { echo "bench-tallies: needs $tool (apt-get install wrk postgresql-contrib)" >&2; exit 1; }
done
say() { echo "bench-tallies: $*" >&2; }
q() { psql -X -q -v ON_ERROR_STOP=1 -Atc "$1"; }

work=$(mktemp -d)
server=""
stop_server() { if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; server=""; fi; }
trap 'stop_server; rm -rf "$work"; psql -X -q -c "DROP TABLE IF EXISTS bench_tally_sample" >/dev/null 2>&1 || true' EXIT
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/key.p8" 2>/dev/null

if [ "$reuse" = 0 ]; then
    say "seeding $devices devices and a day of history"
    "$paperboy" migrate >/dev/null
    "$paperboy" apps add --bundle-id com.example.bench --team-id TEAM123456 --key-id KEY1234567 --key-file "$work/key.p8" >/dev/null
    "$paperboy" publications add morning --app 1 >/dev/null
    "$paperboy" publications add evening --app 1 >/dev/null
    "$paperboy" devices seed --app 1 --publication morning --publication evening --count "$devices" --auto-download 0.9 --seed 1 >/dev/null
    "$bench" history --days 1 --running >/dev/null
    psql -X -q -c "VACUUM ANALYZE" >/dev/null
fi
PAPERBOY_API_KEY="pb_$(openssl rand -hex 32)"
export PAPERBOY_API_KEY
echo "INSERT INTO app_api_keys (app_id, key_hash) VALUES (1, sha256(convert_to(:'key', 'UTF8')))" | psql -X -q -v ON_ERROR_STOP=1 -v key="$PAPERBOY_API_KEY" >/dev/null
admin="$(openssl rand -hex 24)"
broadcast=$(q "SELECT id FROM broadcasts WHERE state = 'running' ORDER BY created_at DESC LIMIT 1")
[ -n "$broadcast" ] || { echo "bench-tallies: no running broadcast (seed with paperboy-bench history --running)" >&2; exit 1; }
edition=$(q "SELECT edition_id FROM broadcasts WHERE id = '$broadcast'")
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB; paperboy: $paperboy; $(q 'SELECT count(*) FROM devices') devices," \
    "$(q "SELECT count(*) FROM receipts WHERE edition_id = '$edition'") receipts of the running broadcast's edition, $(q 'SELECT count(*) FROM receipts') in all"

# 1. Recounts, once each (the running broadcast last: its tallies are what the status reads below).
echo
echo "recount (paperboy broadcast status ID --exact): broadcast, receipts of its edition, seconds"
for id in $(q "SELECT id FROM broadcasts ORDER BY id = '$broadcast', created_at"); do
    started=$(date +%s.%N)
    "$paperboy" broadcast status "$id" --exact --once --json > "$work/status.json"
    ended=$(date +%s.%N)
    printf '%s %12s %8.2f\n' "$id" "$(q "SELECT count(*) FROM receipts r JOIN broadcasts b ON b.edition_id = r.edition_id WHERE b.id = '$id'")" \
        "$(python3 -c "print($ended - $started)")"
done

# Latency percentiles of a pgbench log (microseconds in the third column) in milliseconds.
percentiles() { python3 -c '
import sys
values = sorted(int(line.split()[2]) for path in sys.argv[1:] for line in open(path))
pick = lambda p: values[min(len(values) - 1, int(p * len(values)))] / 1000
print(f"{len(values)} executions, p50 {pick(0.5):.2f} ms, p99 {pick(0.99):.2f} ms")' "$@"; }

# 2. The status's receipt counts, database side.
cat > "$work/before.sql" <<'EOF'
SELECT last.wave, last.cohort, r.result, count(*) FROM receipts r
JOIN LATERAL (
    SELECT x.wave, x.cohort FROM deliveries x
    WHERE x.device_id = r.device_id AND x.broadcast_id = (SELECT :broadcast::uuid) ORDER BY x.wave DESC LIMIT 1
) last ON true
WHERE r.edition_id = :edition::uuid GROUP BY 1, 2, 3;
SELECT result, count(*) FROM receipts WHERE edition_id = :edition::uuid GROUP BY result;
EOF
cat > "$work/after.sql" <<'EOF'
SELECT s.counted_through, t.broadcast_id IS NULL, t.wave, t.cohort, t.provider, t.result, t.count
FROM receipt_tally_state s
LEFT JOIN receipt_tallies t ON t.edition_id = :edition::uuid AND (t.broadcast_id = :broadcast::uuid OR t.broadcast_id IS NULL)
    AND t.count <> 0;
EOF
echo
echo "status receipt counts, database side (pgbench, 1 client, ${duration}s):"
for side in before after; do
    rm -f "$work"/pgbench_log.*
    (cd "$work" && pgbench -n -M extended -c 1 -T "$duration" -l -D "edition=$edition" -D "broadcast=$broadcast" -f "$side.sql" >/dev/null 2>&1) \
        || { echo "bench-tallies: pgbench failed ($side)" >&2; exit 1; }
    echo "  $side: $(percentiles "$work"/pgbench_log.*)"
done

start_server() {
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    PAPERBOY_ADMIN_TOKEN="$admin" LOG_LEVEL=warning "$paperboy" serve --port "$port" --rate-limit off --no-scheduler "$@" > "$work/serve.log" 2>&1 &
    server=$!
    for _ in $(seq 150); do curl -fs "http://127.0.0.1:$port/health/ready" >/dev/null && return; sleep 0.2; done
    echo "bench-tallies: serve did not start:" >&2; cat "$work/serve.log" >&2; exit 1
}
wrk_ms() { awk -v p="$1" '$1 == p {v=$2; if (v ~ /us$/) {sub(/us/, "", v); v=v/1000} else if (v ~ /ms$/) {sub(/ms/, "", v)} else if (v ~ /s$/) {sub(/s/, "", v); v=v*1000}; print v}' "$2"; }

# 3. The endpoint.
start_server --no-dispatch
wrk -t2 -c4 -d"${duration}s" --latency -H "Authorization: Bearer $admin" "http://127.0.0.1:$port/v1/broadcasts/$broadcast" > "$work/wrk.txt" 2>&1
grep -q "Non-2xx" "$work/wrk.txt" && { echo "bench-tallies: GET /v1/broadcasts/{id} failed:" >&2; cat "$work/wrk.txt" >&2; exit 1; }
echo
echo "GET /v1/broadcasts/{id} (wrk, 4 connections, ${duration}s): $(awk '/Requests\/sec/ {print $2}' "$work/wrk.txt") req/s," \
    "p50 $(wrk_ms 50% "$work/wrk.txt") ms, p99 $(wrk_ms 99% "$work/wrk.txt") ms"
stop_server

# 4. Receipts. The running broadcast is left alone from here (cancelled a day ago, and recounted above), so that
# the dispatcher of "after" has nothing to send or recount.
q "UPDATE broadcasts SET state = 'cancelled', finished_at = now() - interval '1 day' WHERE id = '$broadcast'"
psql -X -Atc "SELECT encode(token, 'hex') FROM devices TABLESAMPLE SYSTEM (least(100, 100 * 200000.0 / greatest(1, (SELECT count(*) FROM devices)))) WHERE app_id = 1 LIMIT 100000" \
    > "$work/tokens.txt"
export PAPERBOY_TOKENS="$work/tokens.txt"
psql -X -q -v ON_ERROR_STOP=1 -c "DROP TABLE IF EXISTS bench_tally_sample" -c "CREATE TABLE bench_tally_sample (hex text)" \
    -c "\\copy bench_tally_sample FROM '$work/tokens.txt'" >/dev/null
maxid=$(q 'SELECT max(id) FROM devices')
# A new edition per run, and a broadcast of it (cancelled long ago) that delivered to the sampled devices.
new_edition() {
    local id
    id=$(python3 -c 'import uuid; print(uuid.uuid4())')
    q "INSERT INTO editions (id, publication_id, issue_date, deadline, manifest)
       SELECT '$id', id, date '2099-12-31' - (SELECT count(*) FROM editions)::int, now() + interval '3 hours', '{}' FROM publications WHERE app_id = 1 AND slug = 'morning'" >/dev/null
    q "INSERT INTO broadcasts (id, edition_id, environment, state, plan, finished_at)
       VALUES ('$(python3 -c 'import uuid; print(uuid.uuid4())')', '$id', 0, 'cancelled', '{}', now() - interval '1 day')" >/dev/null
    q "INSERT INTO deliveries (device_id, broadcast_id, wave, cohort, background, sent_at, outcome)
       SELECT d.id, b.id, 1, 0, true, now(), 'accepted' FROM bench_tally_sample s
       JOIN devices d ON d.app_id = 1 AND d.token = decode(s.hex, 'hex') JOIN broadcasts b ON b.edition_id = '$id'" >/dev/null
    echo "$id"
}
echo
echo "receipts, $connections connections, ${duration}s a run: side run paperboy_rps p99_ms pgbench_tps ratio [watermark's largest lag s]"
for run in $(seq "$runs"); do
    for side in before after; do
        if [ "$side" = before ]; then start_server --no-dispatch; else start_server; fi
        PAPERBOY_EDITION=$(new_edition)
        export PAPERBOY_EDITION
        lag_file="$work/lag.txt"
        : > "$lag_file"
        ( while :; do q "SELECT extract(epoch FROM now() - counted_through) FROM receipt_tally_state" >> "$lag_file"; sleep 1; done ) &
        sampler=$!
        wrk -t2 -c"$connections" -d"${duration}s" --latency -s scripts/wrk-receipt.lua "http://127.0.0.1:$port" > "$work/wrk.txt" 2>&1
        rps=$(awk '/Requests\/sec/ {print $2}' "$work/wrk.txt")
        if grep -q "Non-2xx\|unexpected status" "$work/wrk.txt" || [ -z "$rps" ]; then
            echo "bench-tallies: receipts failed ($side, run $run):" >&2; cat "$work/wrk.txt" >&2; exit 1
        fi
        PAPERBOY_EDITION=$(new_edition)
        pgbench -n -M extended -c "$connections" -j 2 -T "$duration" -D "maxid=$maxid" -D "edition=$PAPERBOY_EDITION" -f scripts/pgbench-receipt.sql \
            > "$work/pgbench.txt" 2>&1 || { echo "bench-tallies: pgbench failed:" >&2; tail -5 "$work/pgbench.txt" >&2; exit 1; }
        kill "$sampler" 2>/dev/null || true
        wait "$sampler" 2>/dev/null || true
        stop_server
        tps=$(awk '/^tps/ {print $3}' "$work/pgbench.txt")
        # The first seconds catch up with what arrived while nothing tallied.
        lag=$([ "$side" = after ] && tail -n +6 "$lag_file" | sort -g | tail -1 || echo "-")
        printf '%-7s %-4s %12s %8s %12.0f %7s %s\n' "$side" "$run" "$rps" "$(wrk_ms 99% "$work/wrk.txt")" "$tps" \
            "$(python3 -c "print(f'{$rps / $tps:.2f}')")" "$lag"
    done
done
