#!/usr/bin/env bash
# Device registration throughput: wrk against `paperboy serve` + PostgreSQL, then pgbench running the same
# upsert statement directly against the same database at the same concurrency (the database's ceiling).
#
# Usage: scripts/with-postgres.sh scripts/bench-registration.sh [CONNECTIONS...]
#   env: PAPERBOY (binary, default .build-release/release/paperboy), DURATION (seconds, default 30),
#        RUNS (per concurrency, default 3)
# Needs wrk and pgbench (apt-get install wrk postgresql-contrib).
set -euo pipefail
cd "$(dirname "$0")/.."
paperboy=${PAPERBOY:-.build-release/release/paperboy}
duration=${DURATION:-30}
runs=${RUNS:-3}
connections=("${@:-16 64}")
[ -x "$paperboy" ] || { echo "no $paperboy: build it with swift build -c release --scratch-path .build-release --product paperboy" >&2; exit 1; }
: "${DATABASE_URL:?run me under scripts/with-postgres.sh or set DATABASE_URL and PG*}"

work=$(mktemp -d)
server=""
trap '[ -n "$server" ] && kill $server 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/key.p8" 2>/dev/null
"$paperboy" migrate >/dev/null 2>&1
export PAPERBOY_API_KEY=$("$paperboy" apps add --bundle-id com.example.bench --team-id TEAM123456 --key-id KEY1234567 \
    --key-file "$work/key.p8" --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["apiKey"])')
"$paperboy" publications add morning --app 1 >/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# The per-client rate limit is off: wrk is one client, and this measures registration, not the limiter
# (with it on, the script once measured 429s and reported a ratio of 3.8).
LOG_LEVEL=warning "$paperboy" serve --port "$port" --rate-limit off > "$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/health/ready" >/dev/null && break; sleep 0.2; done

echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB; paperboy: $paperboy; ${duration}s per run"
printf '%-6s %-4s %12s %10s %12s %10s %7s\n' conns run paperboy_rps p99_ms pgbench_tps avg_ms ratio
for c in ${connections[*]}; do
    for run in $(seq "$runs"); do
        wrk -t2 -c"$c" -d"${duration}s" --latency -s scripts/wrk-register.lua "http://127.0.0.1:$port" > "$work/wrk.txt" 2>&1
        rps=$(awk '/Requests\/sec/ {print $2}' "$work/wrk.txt")
        p99=$(awk '$1 == "99%" {v=$2; if (v ~ /us$/) {sub(/us/, "", v); v=v/1000} else if (v ~ /ms$/) {sub(/ms/, "", v)} else if (v ~ /s$/) {sub(/s/, "", v); v=v*1000}; print v}' "$work/wrk.txt")
        errors=$(awk '/Non-2xx|Socket errors/' "$work/wrk.txt")
        if [ -n "$errors" ]; then
            # A throughput of failed requests is not a registration throughput: stop, loudly.
            echo "bench-registration: requests failed at $c connections, run $run: $errors" >&2
            cat "$work/wrk.txt" >&2
            exit 1
        fi
        pgbench -n -M extended -c "$c" -j 2 -T "$duration" -f scripts/pgbench-register.sql > "$work/pgbench.txt" 2>&1
        tps=$(awk '/^tps/ {print $3}' "$work/pgbench.txt")
        lat=$(awk '/latency average/ {print $4}' "$work/pgbench.txt")
        ratio=$(python3 -c "print(f'{$rps / $tps:.2f}')")
        printf '%-6s %-4s %12s %10s %12.0f %10s %7s\n' "$c" "$run" "$rps" "$p99" "$tps" "$lat" "$ratio"
    done
done
