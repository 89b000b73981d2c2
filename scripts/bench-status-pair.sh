#!/usr/bin/env bash
# The status (GET /v1/broadcasts/{id}) of two builds under one wave 1: two `serve --no-dispatch` (binaries A and B)
# answer a poller that asks them in turn every INTERVAL seconds while `bench-broadcast.sh --reuse` runs a wave 1 on the
# same database, so both sides meet the same load. Prints each side's latency while the broadcast ran.
#
# Usage: scripts/bench-status-pair.sh BINARY_A BINARY_B
#   on a prepared database (app 1, publication morning, its devices: e.g. a kept cluster after one
#   scripts/bench-broadcast.sh run), DATABASE_URL and PG* set; both binaries must know its migrations.
#   env: DEVICES (targets, default 1000000), CAPACITY (default 15000/s), INTERVAL (default 0.2)
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# = 2 ] || { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
a=$1 b=$2
: "${DATABASE_URL:?set DATABASE_URL and PG* (a prepared database)}"
. scripts/serve-pair.sh
start_serve_pair "$a" "$b"
python3 scripts/status-poller.py "$port_a" "$port_b" "$PAPERBOY_ADMIN_TOKEN" "${INTERVAL:-0.2}" > "$work/poll.txt" 2>&1 &
poller=$!
# The broadcast's own checks may fail (say, devices left out by the hourly budget after earlier runs on this database):
# the statuses it answered are still measured, and printed, and the failure is reported after them.
status=0
PAPERBOY_BIN=$b scripts/bench-broadcast.sh --reuse --devices "${DEVICES:-1000000}" --capacity "${CAPACITY:-15000/s}" --workers 2 \
    > "$work/broadcast.txt" 2>&1 || status=$?
wait $poller || { cat "$work/poll.txt" >&2; exit 1; }
cat "$work/poll.txt"
grep -E "rate mean|CPU from start|per 1,000 deliveries, wave 1|FAILED" "$work/broadcast.txt" || true
[ "$status" = 0 ] || { echo "bench-status-pair: the broadcast's run failed (exit $status); its output:" >&2; cat "$work/broadcast.txt" >&2; }
exit "$status"
