#!/usr/bin/env bash
# The CPU a status costs at rest (GET /v1/broadcasts/{id}): two builds, each a `serve --no-dispatch`, asked by wrk in
# turn for the newest broadcast's status, ROUNDS rounds of DURATION seconds each (A, B, A, B, …). Prints each round's
# rate and p99, and serve's and PostgreSQL's CPU per status, read from /proc (PostgreSQL: every process of the user
# `postgres` on the machine, so run it where no other cluster is busy).
#
# Usage: scripts/bench-status-cost.sh BINARY_A BINARY_B
#   on a prepared database with a broadcast (e.g. a kept cluster after scripts/bench-broadcast.sh), DATABASE_URL and
#   PG* set; both binaries must know its migrations. env: ROUNDS (default 2), DURATION (default 10), CONNECTIONS
#   (default 4). Needs wrk (apt-get install wrk).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# = 2 ] || { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
: "${DATABASE_URL:?set DATABASE_URL and PG* (a prepared database)}"
command -v wrk >/dev/null || { echo "bench-status-cost: wrk is missing (apt-get install wrk)" >&2; exit 2; }
rounds=${ROUNDS:-2} duration=${DURATION:-10} connections=${CONNECTIONS:-4}
broadcast=$(psql -X -Atc "SELECT id FROM broadcasts ORDER BY created_at DESC LIMIT 1")
[ -n "$broadcast" ] || { echo "bench-status-cost: the database has no broadcast" >&2; exit 2; }
. scripts/serve-pair.sh
start_serve_pair "$1" "$2"
# utime + stime, in clock ticks.
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
postgres_ticks() {
    local sum=0 pid
    for pid in $(pgrep -u postgres postgres); do sum=$((sum + $(ticks "$pid"))); done
    echo "$sum"
}
hz=$(getconf CLK_TCK)
state=$(psql -X -Atc "SELECT state FROM broadcasts WHERE id = '$broadcast'")
echo "broadcast $broadcast ($state), $connections connections, $duration s a round"
for round in $(seq "$rounds"); do
    for side in A B; do
        if [ "$side" = A ]; then port=$port_a pid=$serve_a; else port=$port_b pid=$serve_b; fi
        serve0=$(ticks "$pid") pg0=$(postgres_ticks)
        out=$(wrk -t1 -c"$connections" -d"${duration}s" --latency -H "Authorization: Bearer $PAPERBOY_ADMIN_TOKEN" \
            "http://127.0.0.1:$port/v1/broadcasts/$broadcast")
        serve1=$(ticks "$pid") pg1=$(postgres_ticks)
        requests=$(echo "$out" | awk '/requests in/ { print $1 }')
        non2xx=$(echo "$out" | awk '/Non-2xx/ { print $NF }')
        [ -z "$non2xx" ] || { echo "bench-status-cost: $side answered $non2xx statuses that were not 2xx" >&2; exit 1; }
        p99=$(echo "$out" | awk '$1 == "99%" { print $2 }')
        python3 -c "
r, hz = $requests, $hz
print(f'round $round $side: {r / $duration:7.1f} statuses/s, p99 $p99, serve {($serve1 - $serve0) * 1000 / hz / r:.3f} ms and PostgreSQL {($pg1 - $pg0) * 1000 / hz / r:.3f} ms of CPU a status')"
    done
done
