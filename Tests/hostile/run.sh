#!/usr/bin/env bash
# The hostile-client suite (Tests/hostile/test_hostile.py, pytest) against a real `paperboy serve` on a throwaway
# PostgreSQL (scripts/with-postgres.sh): every console and admin route without a session or token, with forged,
# expired, idle and signed-out cookies, from another site, without or with a wrong CSRF token, with oversized and
# malformed bodies; each must answer as the rules say and change nothing. Prints the number of cases.
# Then, against the same server, the console fuzzer (Tests/hostile/test_console_fuzz.py, hypothesis, issue 48): every
# console route's query, path and form parameters drawn huge, tiny, negative, NaN, non-numeric, unicode, long,
# repeated and malformed, with real sessions and CSRF tokens; no 5xx, the server alive, each answer within 5 s and
# its memory within +200 MB. Fixed seeds; prints the requests per route. It runs second because it starts and
# cancels broadcasts and signs everyone out, which the first suite's digests must not see.
# Either failing, or the server logging an error or critical line, fails the run.
#
# Usage: Tests/hostile/run.sh [pytest arguments for test_hostile.py…]
# Environment: PAPERBOY_BIN (default .build/debug/paperboy); HOSTILE_FUZZ_TRACE=FILE writes one line per fuzzer request
# (route, status, time, the page's message, the request). Needs python3 -m pip install pytest hypothesis, and psql.
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ -z "${PAPERBOY_HOSTILE_DB:-}" ]; then
    PAPERBOY_HOSTILE_DB=1 exec scripts/with-postgres.sh "$0" "$@"
fi

paperboy=${PAPERBOY_BIN:-.build/debug/paperboy}
[ -x "$paperboy" ] || { echo "$paperboy is missing: run swift build --product paperboy" >&2; exit 1; }
work=$(mktemp -d /tmp/paperboy-hostile-XXXXXX)
server=
cleanup() {
    if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

"$paperboy" migrate >&2
openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt > "$work/AuthKey.p8"
app_json=$("$paperboy" apps add --bundle-id com.example.hostile --team-id TEAM123456 --key-id KEY1234567 --key-file "$work/AuthKey.p8" --json)
export HOSTILE_APP_ID=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])' <<<"$app_json")
"$paperboy" publications add morning --app "$HOSTILE_APP_ID" --title "Morning edition" >&2
"$paperboy" devices seed --publication morning --count 20 >&2
cat > "$work/edition.json" <<JSON
{"publication": "morning", "issueDate": "$(date -u +%Y-%m-%d)", "deadline": "$(date -u -d '+2 hours' +%Y-%m-%dT%H:%M:%SZ)",
 "tiers": {"large": {"bundles": [{"url": "https://cdn.example.com/morning/large-1.zip", "bytes": 52428800,
   "sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}]}},
 "pages": [{"number": 1, "title": "Front page"}]}
JSON
export HOSTILE_EDITION_ID=$("$paperboy" editions publish "$work/edition.json")
export HOSTILE_ADMIN_TOKEN=$(openssl rand -hex 24) HOSTILE_OPERATOR_TOKEN=$(openssl rand -hex 24) HOSTILE_VIEWER_TOKEN=$(openssl rand -hex 24)
export HOSTILE_SESSION_KEY=$(openssl rand -hex 32)

# No dispatcher: the broadcast stays running for the cancel attempts. 127.0.0.1 is trusted as a proxy, so each case
# comes from an address of its own (X-Forwarded-For).
PAPERBOY_ADMIN_TOKEN=$HOSTILE_ADMIN_TOKEN PAPERBOY_CONSOLE_OPERATOR_TOKEN=$HOSTILE_OPERATOR_TOKEN \
    PAPERBOY_CONSOLE_VIEWER_TOKEN=$HOSTILE_VIEWER_TOKEN PAPERBOY_CONSOLE_SESSION_KEY=$HOSTILE_SESSION_KEY \
    "$paperboy" serve --port 0 --no-dispatch --no-scheduler --rate-limit off --trusted-proxy 127.0.0.1 > "$work/serve.log" 2>&1 &
server=$!
export HOSTILE_SERVER_PID=$server
port=
for _ in $(seq 1 300); do
    port=$(grep -oE 'address=http://127\.0\.0\.1:[0-9]+' "$work/serve.log" | head -1 | sed 's/.*://') || true
    [ -n "$port" ] && break
    kill -0 "$server" 2>/dev/null || { cat "$work/serve.log" >&2; echo "paperboy serve exited" >&2; exit 1; }
    sleep 0.1
done
[ -n "$port" ] || { cat "$work/serve.log" >&2; echo "paperboy serve did not start listening" >&2; exit 1; }
export HOSTILE_PORT=$port
export HOSTILE_BROADCAST_ID=$(curl -fsS -X POST "http://127.0.0.1:$port/v1/broadcasts" -H "Authorization: Bearer $HOSTILE_ADMIN_TOKEN" \
    -H 'Content-Type: application/json' -d "{\"edition\": \"$HOSTILE_EDITION_ID\", \"window\": 600}" \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["broadcast"]["id"])')

status=0
python3 -m pytest -q -p no:cacheprovider Tests/hostile/test_hostile.py "$@" || status=$?
fuzz_started=$(date +%s%N)
python3 -m pytest -q -p no:cacheprovider --tb=short Tests/hostile/test_console_fuzz.py || status=$?
echo "console fuzz step: $((($(date +%s%N) - fuzz_started) / 1000000)) ms"
if grep -E '^[0-9T:+-]+ (error|critical) ' "$work/serve.log" > "$work/errors.log"; then
    echo "the server logged errors:" >&2; head -20 "$work/errors.log" >&2; status=1
fi
if [ "$status" != 0 ]; then echo "--- serve log (last 40 lines)" >&2; tail -40 "$work/serve.log" >&2; fi
exit "$status"
