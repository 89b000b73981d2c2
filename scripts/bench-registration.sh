#!/usr/bin/env bash
# Device registration (or receipt) throughput: wrk against `paperboy serve` + PostgreSQL, then pgbench running
# the same statement directly against the same database at the same concurrency (the database's ceiling). Both
# report PostgreSQL's CPU per request (its processes' CPU from /proc over the run, divided by the requests), and with
# pg_stat_statements the statements serve ran per request.
#
# Usage: scripts/with-postgres.sh scripts/bench-registration.sh [--receipts] [--reuse] [CONNECTIONS...]
#   --receipts  POST /v1/devices/{token}/receipts for random seeded devices (an edition is published first)
#               instead of PUT /v1/devices/{random new token}
#   --reuse     the database is prepared already (app 1 with publication morning and its devices, e.g. left by
#               scripts/bench-morning.sh --out DIR on a kept cluster): no migrate, app or publication; app 1's
#               device API key is replaced by a new random one (a benchmark database only)
#   env: PAPERBOY (binary, default .build-release/release/paperboy), DURATION (seconds, default 30),
#        RUNS (per concurrency, default 3), DEVICES (devices seeded for --receipts without --reuse, default 100000),
#        PERF_OUT (a file: perf record -g of serve during the first wrk run, for perf report -i FILE)
# Needs wrk and pgbench (apt-get install wrk postgresql-contrib).
set -euo pipefail
cd "$(dirname "$0")/.."
paperboy=${PAPERBOY:-.build-release/release/paperboy}
duration=${DURATION:-30}
runs=${RUNS:-3}
mode=register reuse=0
while [ $# -gt 0 ]; do
    case "$1" in
        --receipts) mode=receipt; shift ;;
        --reuse) reuse=1; shift ;;
        -h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "bench-registration: unknown flag '$1' (see --help)" >&2; exit 2 ;;
        *) break ;;
    esac
done
connections=("${@:-16 64}")
[ -x "$paperboy" ] || { echo "no $paperboy: build it with swift build -c release --scratch-path .build-release --product paperboy" >&2; exit 1; }
: "${DATABASE_URL:?run me under scripts/with-postgres.sh or set DATABASE_URL and PG*}"
for tool in wrk pgbench psql; do
    command -v "$tool" >/dev/null || { echo "bench-registration: needs $tool (apt-get install wrk postgresql-contrib)" >&2; exit 1; }
done

work=$(mktemp -d)
server=""
trap '[ -n "$server" ] && kill $server 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/key.p8" 2>/dev/null
if [ "$reuse" = 1 ]; then
    PAPERBOY_API_KEY="pb_$(openssl rand -hex 32)"
    export PAPERBOY_API_KEY
    # psql interpolates :'key' only in statements it reads, not in -c.
    echo "INSERT INTO app_api_keys (app_id, key_hash) VALUES (1, sha256(convert_to(:'key', 'UTF8')))" \
        | psql -X -q -v ON_ERROR_STOP=1 -v key="$PAPERBOY_API_KEY" >/dev/null
    [ "$(psql -X -Atc "SELECT count(*) FROM publications WHERE app_id = 1 AND slug = 'morning'")" = 1 ] \
        || { echo "bench-registration: --reuse: app 1 has no publication morning" >&2; exit 1; }
else
    "$paperboy" migrate >/dev/null 2>&1
    PAPERBOY_API_KEY=$("$paperboy" apps add --bundle-id com.example.bench --team-id TEAM123456 --key-id KEY1234567 \
        --key-file "$work/key.p8" --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["apiKey"])')
    export PAPERBOY_API_KEY
    "$paperboy" publications add morning --app 1 >/dev/null
fi
pgbench_vars=()
# pgbench runs the statement as serve does: prepared once per connection (RegisterDevice, RecordReceipt).
pgbench_protocol=prepared
if [ "$mode" = receipt ]; then
    if [ "$reuse" = 0 ]; then
        "$paperboy" devices seed --app 1 --publication morning --count "${DEVICES:-100000}" >/dev/null
    fi
    # An edition of its own (issue date 2099-12-31, replaced on every run), so receipts are new rows.
    psql -X -q -v ON_ERROR_STOP=1 \
        -c "DELETE FROM receipts WHERE edition_id IN (SELECT e.id FROM editions e JOIN publications p ON p.id = e.publication_id WHERE p.app_id = 1 AND e.issue_date = '2099-12-31')" \
        -c "DELETE FROM deliveries WHERE broadcast_id IN (SELECT b.id FROM broadcasts b JOIN editions e ON e.id = b.edition_id JOIN publications p ON p.id = e.publication_id WHERE p.app_id = 1 AND e.issue_date = '2099-12-31')" \
        -c "DELETE FROM broadcasts WHERE edition_id IN (SELECT e.id FROM editions e JOIN publications p ON p.id = e.publication_id WHERE p.app_id = 1 AND e.issue_date = '2099-12-31')" \
        -c "DELETE FROM editions e USING publications p WHERE p.id = e.publication_id AND p.app_id = 1 AND e.issue_date = '2099-12-31'" >/dev/null
    python3 -c '
import datetime, json, sys
deadline = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=3)).replace(microsecond=0)
bundle = {"url": "https://cdn.example.com/bench/large-1.zip", "bytes": 1048576, "sha256": "ab" * 32}
json.dump({"publication": "morning", "issueDate": "2099-12-31", "deadline": deadline.isoformat(),
           "tiers": {"large": {"bundles": [bundle]}}, "pages": [{"number": 1, "title": "Front page"}]}, open(sys.argv[1], "w"))
' "$work/edition.json"
    PAPERBOY_EDITION=$("$paperboy" editions publish "$work/edition.json" --app 1 --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
    export PAPERBOY_EDITION
    # Tokens of 100,000 random devices for wrk (a block sample: cheap at 10 M rows); pgbench draws any device by id.
    psql -X -Atc "SELECT encode(token, 'hex') FROM devices TABLESAMPLE SYSTEM (least(100, 100 * 200000.0 / greatest(1, (SELECT count(*) FROM devices)))) WHERE app_id = 1 LIMIT 100000" \
        > "$work/tokens.txt"
    [ -s "$work/tokens.txt" ] || { echo "bench-registration: --receipts: app 1 has no devices" >&2; exit 1; }
    export PAPERBOY_TOKENS="$work/tokens.txt"
    pgbench_vars=(-D "maxid=$(psql -X -Atc 'SELECT max(id) FROM devices')" -D "edition=$PAPERBOY_EDITION")
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# The per-client rate limit is off: wrk is one client, and this measures registration, not the limiter
# (with it on, the script once measured 429s and reported a ratio of 3.8).
LOG_LEVEL=warning "$paperboy" serve --port "$port" --rate-limit off > "$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/health/ready" >/dev/null && break; sleep 0.2; done

# PostgreSQL's CPU (clock ticks): the postmaster, its live children, and the children it has reaped.
pg_pid=$(head -1 "$(psql -X -Atc 'SHOW data_directory')/postmaster.pid" 2>/dev/null || echo 0)
pg_ticks() {
    [ "$pg_pid" != 0 ] || { echo 0; return; }
    { cat /proc/[0-9]*/stat 2>/dev/null || true; } | awk -v p="$pg_pid" '$1 == p {s += $14 + $15 + $16 + $17} $4 == p {s += $14 + $15} END {print s + 0}'
}
hz=$(getconf CLK_TCK)
fresh() {
    [ "$mode" = receipt ] || return 0
    psql -X -q -c "DELETE FROM receipts WHERE edition_id = '$PAPERBOY_EDITION'" -c 'VACUUM receipts' >/dev/null
}
# pg_stat_statements (loaded by scripts/with-postgres.sh when postgresql-contrib is installed): what serve ran.
statements=$(psql -X -Atc "SELECT count(*) FROM pg_extension WHERE extname = 'pg_stat_statements'" 2>/dev/null || echo 0)
# serve's own CPU (clock ticks: user and system time of the process).
serve_ticks() { awk '{print $14 + $15}' "/proc/$server/stat"; }
# Milliseconds of PostgreSQL CPU per request: ticks $1, requests $2.
per_request() { python3 -c "print(f'{$1 * 1000 / $hz / max(1, $2):.3f}')"; }
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB; paperboy: $paperboy; $([ "$mode" = receipt ] && echo receipts || echo registrations), ${duration}s per run; $(psql -X -Atc 'SELECT count(*) FROM devices') devices"
printf '%-6s %-4s %12s %10s %10s %12s %12s %10s %10s %7s\n' conns run paperboy_rps p99_ms pg_ms_req serve_ms_req pgbench_tps avg_ms pg_ms_tx ratio
perf_pid=
for c in ${connections[*]}; do
    for run in $(seq "$runs"); do
        # Receipts: every run records new ones (a run after another would otherwise find most already stored).
        fresh
        [ "$statements" = 0 ] || psql -X -Atqc 'SELECT pg_stat_statements_reset()' >/dev/null
        t0=$(pg_ticks)
        s0=$(serve_ticks)
        if [ -n "${PERF_OUT:-}" ] && [ -z "$perf_pid" ]; then
            perf record -F 499 -g -p "$server" -o "$PERF_OUT" -- sleep "$duration" > "$work/perf.log" 2>&1 &
            perf_pid=$!
        fi
        wrk -t2 -c"$c" -d"${duration}s" --latency -s "scripts/wrk-$mode.lua" "http://127.0.0.1:$port" > "$work/wrk.txt" 2>&1
        t1=$(pg_ticks)
        s1=$(serve_ticks)
        if [ "$statements" = 1 ]; then
            # What the requests ran: each statement's calls and milliseconds per request (those run by at least 1 %).
            requests_so_far=$(awk '/requests in/ {print $1}' "$work/wrk.txt")
            psql -X -At -F ' | ' -c "SELECT round(calls::numeric / $requests_so_far, 3), round(((total_exec_time + total_plan_time) / $requests_so_far)::numeric, 4),
                    left(regexp_replace(query, '\s+', ' ', 'g'), 110)
                FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND calls >= $requests_so_far / 100
                ORDER BY total_exec_time + total_plan_time DESC LIMIT 8" | sed 's/^/    per request: /' > "$work/statements.txt"
        fi
        rps=$(awk '/Requests\/sec/ {print $2}' "$work/wrk.txt")
        p99=$(awk '$1 == "99%" {v=$2; if (v ~ /us$/) {sub(/us/, "", v); v=v/1000} else if (v ~ /ms$/) {sub(/ms/, "", v)} else if (v ~ /s$/) {sub(/s/, "", v); v=v*1000}; print v}' "$work/wrk.txt")
        errors=$(awk '/Non-2xx|Socket errors|unexpected status/' "$work/wrk.txt")
        if [ -n "$errors" ] || [ -z "$rps" ]; then
            # A throughput of failed requests is not a throughput: stop, loudly.
            echo "bench-registration: ${mode} requests failed at $c connections, run $run: $errors" >&2
            cat "$work/wrk.txt" >&2
            exit 1
        fi
        fresh
        t1=$(pg_ticks)
        pgbench -n -M "$pgbench_protocol" -c "$c" -j 2 -T "$duration" ${pgbench_vars[@]+"${pgbench_vars[@]}"} -f "scripts/pgbench-$mode.sql" \
            > "$work/pgbench.txt" 2>&1 || { echo "bench-registration: pgbench failed:" >&2; tail -5 "$work/pgbench.txt" >&2; exit 1; }
        t2=$(pg_ticks)
        tps=$(awk '/^tps/ {print $3}' "$work/pgbench.txt")
        lat=$(awk '/latency average/ {print $4}' "$work/pgbench.txt")
        done_tx=$(awk '/number of transactions actually processed/ {split($NF, a, "/"); print a[1]}' "$work/pgbench.txt")
        requests=$(awk '/requests in/ {print $1}' "$work/wrk.txt")
        ratio=$(python3 -c "print(f'{$rps / $tps:.2f}')")
        printf '%-6s %-4s %12s %10s %10s %12s %12.0f %10s %10s %7s\n' "$c" "$run" "$rps" "$p99" "$(per_request $((t1 - t0)) "$requests")" \
            "$(per_request $((s1 - s0)) "$requests")" "$tps" "$lat" \
            "$(per_request $((t2 - t1)) "$done_tx")" "$ratio"
        [ "$statements" = 0 ] || cat "$work/statements.txt"
    done
done
