#!/usr/bin/env bash
# The console in a real browser: Playwright for Python driving Debian's Chromium against a real `paperboy serve`
# (sending through a `paperboy apns-sim` process) on a throwaway PostgreSQL (scripts/with-postgres.sh). One serve,
# one broadcast of 401 devices at 2 a second, shared by every test of test_console.py; about a minute in all.
#
# Usage: Tests/console/run.sh [--measure] [pytest arguments…]
#   --measure   instead of the tests, measure the console's page weight and time to first render (BENCHMARKS.md)
# Environment: PAPERBOY_BIN (default .build/debug/paperboy, built by `swift build`), CONSOLE_SCREENSHOT (write the
# live broadcast page's screenshot there, e.g. docs/images/console-broadcast.png).
# Needs: apt-get install chromium; python3 -m pip install playwright pytest (no browser download: Debian's Chromium).
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ -z "${PAPERBOY_CONSOLE_DB:-}" ]; then
    PAPERBOY_CONSOLE_DB=1 exec scripts/with-postgres.sh "$0" "$@"
fi

measure=0
if [ "${1:-}" = "--measure" ]; then measure=1; shift; fi
paperboy=${PAPERBOY_BIN:-.build/debug/paperboy}
[ -x "$paperboy" ] || { echo "$paperboy is missing: run swift build --product paperboy" >&2; exit 1; }
work=$(mktemp -d /tmp/paperboy-console-XXXXXX)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

wait_for() { # FILE PATTERN PID: prints the first match of PATTERN (grep -oE) in FILE once it appears
    for _ in $(seq 1 600); do
        local found
        found=$(grep -oE "$2" "$1" | head -1) || true
        if [ -n "$found" ]; then echo "$found"; return 0; fi
        kill -0 "$3" 2>/dev/null || { cat "$1" >&2; echo "process $3 exited" >&2; return 1; }
        sleep 0.1
    done
    cat "$1" >&2; echo "timed out waiting for $2 in $1" >&2; return 1
}

"$paperboy" migrate >&2
openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt > "$work/AuthKey.p8"
app_json=$("$paperboy" apps add --bundle-id com.example.console --team-id TEAM123456 --key-id KEY1234567 --key-file "$work/AuthKey.p8" --json)
api_key=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["apiKey"])' <<<"$app_json")
app_id=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])' <<<"$app_json")
"$paperboy" publications add morning --app "$app_id" --title "Morning edition" >&2
"$paperboy" publications add evening --app "$app_id" --title "Evening edition" >&2
"$paperboy" devices seed --publication morning --count 400 >&2
"$paperboy" devices seed --publication evening --count 40 --seed 2 >&2
cat > "$work/edition.json" <<JSON
{"publication": "morning", "issueDate": "$(date -u +%Y-%m-%d)", "deadline": "$(date -u -d '+2 hours' +%Y-%m-%dT%H:%M:%SZ)",
 "tiers": {"large": {"bundles": [{"url": "https://cdn.example.com/morning/large-1.zip", "bytes": 52428800,
   "sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}]}},
 "pages": [{"number": 1, "title": "Front page"}]}
JSON
edition=$("$paperboy" editions publish "$work/edition.json")
sed 's/"publication": "morning"/"publication": "evening"/' "$work/edition.json" > "$work/evening.json"
evening=$("$paperboy" editions publish "$work/evening.json")

"$paperboy" apns-sim --port 0 --key-file "$work/AuthKey.p8" --key-id KEY1234567 --no-record > "$work/sim.log" 2>&1 &
pids+=($!)
sim=$(wait_for "$work/sim.log" 'http://127\.0\.0\.1:[0-9]+' "${pids[-1]}")

admin_token=$(openssl rand -hex 24)
export CONSOLE_OPERATOR_TOKEN=$(openssl rand -hex 24) CONSOLE_VIEWER_TOKEN=$(openssl rand -hex 24)
PAPERBOY_ADMIN_TOKEN=$admin_token PAPERBOY_CONSOLE_OPERATOR_TOKEN=$CONSOLE_OPERATOR_TOKEN PAPERBOY_CONSOLE_VIEWER_TOKEN=$CONSOLE_VIEWER_TOKEN \
    "$paperboy" serve --port 0 --apns-endpoint "$sim" --rate-limit off > "$work/serve.log" 2>&1 &
pids+=($!)
port=$(wait_for "$work/serve.log" 'address=http://127\.0\.0\.1:[0-9]+' "${pids[-1]}" | sed 's/.*://')
export CONSOLE_BASE_URL="http://127.0.0.1:$port"

# A device the device page looks up, registered as an app registers it.
export CONSOLE_DEVICE_TOKEN=$(printf 'c0%.0s' $(seq 1 32))
curl -fsS -o /dev/null -X PUT "$CONSOLE_BASE_URL/v1/devices/$CONSOLE_DEVICE_TOKEN" -H "X-API-Key: $api_key" \
    -H 'Content-Type: application/json' \
    -d '{"environment": "production", "subscriptions": ["morning"], "timeZone": "Europe/Paris", "tier": "medium", "autoDownload": true, "alertsAuthorized": true, "model": "iPhone15,2", "osVersion": "17.4"}'
# The broadcast every test shares: 401 devices over 200 s (2 a second), jitter 1 s so that it starts at once.
export CONSOLE_BROADCAST_ID=$(curl -fsS -X POST "$CONSOLE_BASE_URL/v1/broadcasts" -H "Authorization: Bearer $admin_token" \
    -H 'Content-Type: application/json' -d "{\"edition\": \"$edition\", \"window\": 200, \"jitter\": 1, \"cohorts\": 4}" \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["broadcast"]["id"])')
# A second one, slow, still running when the last test signs everyone out while a live page watches it.
export CONSOLE_SECOND_BROADCAST_ID=$(curl -fsS -X POST "$CONSOLE_BASE_URL/v1/broadcasts" -H "Authorization: Bearer $admin_token" \
    -H 'Content-Type: application/json' -d "{\"edition\": \"$evening\", \"window\": 3600, \"jitter\": 1, \"cohorts\": 1}" \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["broadcast"]["id"])')
echo "paperboy serve on $CONSOLE_BASE_URL, broadcasts $CONSOLE_BROADCAST_ID and $CONSOLE_SECOND_BROADCAST_ID" >&2

status=0
if [ "$measure" = 1 ]; then
    python3 Tests/console/measure_console.py || status=$?
else
    python3 -m pytest -q -p no:cacheprovider Tests/console/test_console.py "$@" || status=$?
fi
if [ "$status" != 0 ]; then echo "--- serve log (last 60 lines)" >&2; tail -60 "$work/serve.log" >&2; fi
exit "$status"
