#!/usr/bin/env bash
# Runs schemathesis against a live `paperboy serve` on a throwaway PostgreSQL (scripts/with-postgres.sh):
# once with a valid device key and admin token, once without; every phase (examples, coverage, fuzzing,
# stateful) and every check (`--checks all`): no 5xx; every response as openapi.yaml says (status, content
# type, headers, body); schema-valid requests accepted and invalid ones refused; undeclared methods 405
# with `Allow`; auth required where declared. Prints how many requests ran; exits non-zero on any failure.
#
# Usage: scripts/schemathesis.sh [--no-build] [--max-examples N] [--time-limit SECONDS]
#   --no-build      use .build/debug/paperboy as it is (default: `swift build --product paperboy` first)
#   --max-examples  generated cases per operation and phase (default 50)
#   --time-limit    seconds each of the two runs may take (schemathesis --max-time; default 300)
# Environment: PAPERBOY_BIN (a paperboy binary to use instead of .build/debug/paperboy), SCHEMATHESIS_ARGS
# (extra arguments for `schemathesis run`), SCHEMATHESIS_REPORTS (keep the reports in this directory).
set -euo pipefail
cd "$(dirname "$0")/.."

build=1 max_examples=50 time_limit=300
while [ $# -gt 0 ]; do
    case "$1" in
        --no-build) build=0 ;;
        --max-examples) max_examples=$2; shift ;;
        --time-limit) time_limit=$2; shift ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
    shift
done

if [ -z "${PAPERBOY_SCHEMATHESIS_DB:-}" ]; then
    if ! python3 -c 'import schemathesis' 2>/dev/null; then
        echo "installing schemathesis (pip)…" >&2
        python3 -m pip install --quiet schemathesis
    fi
    if [ -z "${PAPERBOY_BIN:-}" ] && [ "$build" = 1 ]; then
        swift build --product paperboy >&2
    fi
    args=(--max-examples "$max_examples" --time-limit "$time_limit")
    [ "$build" = 1 ] || args+=(--no-build)
    PAPERBOY_SCHEMATHESIS_DB=1 exec scripts/with-postgres.sh "$0" "${args[@]}"
fi

# From here on DATABASE_URL is the throwaway database.
paperboy=${PAPERBOY_BIN:-.build/debug/paperboy}
[ -x "$paperboy" ] || { echo "$paperboy is missing: run swift build --product paperboy" >&2; exit 1; }
schemathesis=$(python3 -c 'import os, sys; print(os.path.join(os.path.dirname(sys.executable), "schemathesis"))')
[ -x "$schemathesis" ] || schemathesis=$(command -v schemathesis)
work=$(mktemp -d /tmp/paperboy-schemathesis-XXXXXX)
server=
cleanup() {
    if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
    if [ -n "${SCHEMATHESIS_REPORTS:-}" ]; then mkdir -p "$SCHEMATHESIS_REPORTS" && cp -r "$work"/. "$SCHEMATHESIS_REPORTS"/; fi
    rm -rf "$work"
}
trap cleanup EXIT

# An app with a real P-256 key, its publications, an edition and a device.
"$paperboy" migrate >&2
openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt > "$work/AuthKey.p8"
app_json=$("$paperboy" apps add --bundle-id com.example.schemathesis --team-id TEAM123456 --key-id KEY1234567 --key-file "$work/AuthKey.p8" --json)
app_id=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])' <<<"$app_json")
api_key=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["apiKey"])' <<<"$app_json")
"$paperboy" publications add morning --app "$app_id" --title "Morning edition" >&2
"$paperboy" publications add evening --app "$app_id" --title "Evening edition" >&2
cat > "$work/edition.json" <<EOF
{"publication": "morning", "issueDate": "$(date -u +%Y-%m-%d)", "deadline": "$(date -u -d '+1 day' +%Y-%m-%dT%H:%M:%SZ)",
 "tiers": {"large": {"bundles": [{"url": "https://cdn.example.com/morning/large-1.zip", "bytes": 52428800,
   "sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}]}},
 "pages": [{"number": 1, "title": "Front page"}, {"number": 2}]}
EOF
edition=$("$paperboy" editions publish "$work/edition.json" --app "$app_id")
admin_token=$(openssl rand -hex 24)

serves=0
start_server() { # sets server, base; each start logs to serve-N.log
    serves=$((serves + 1))
    log="$work/serve-$serves.log"
    # The rate limit is off: it has its own tests, and here it would answer 429 to the generated load.
    PAPERBOY_ADMIN_TOKEN=$admin_token "$paperboy" serve --port 0 --no-dispatch --no-scheduler --rate-limit off > "$log" 2>&1 &
    server=$!
    local port=
    for _ in $(seq 1 300); do
        port=$(grep -oE 'address=http://127\.0\.0\.1:[0-9]+' "$log" | head -1 | sed 's/.*://') || true
        [ -n "$port" ] && break
        kill -0 "$server" 2>/dev/null || { cat "$log" >&2; echo "paperboy serve exited" >&2; exit 1; }
        sleep 0.1
    done
    [ -n "$port" ] || { cat "$log" >&2; echo "paperboy serve did not start listening" >&2; exit 1; }
    base="http://127.0.0.1:$port"
    curl -fsS "$base/health/ready" >/dev/null
}
start_server

# The device of the spec's example token, so that the examples reach a stored device.
curl -fsS -o /dev/null -X PUT "$base/v1/devices/$(printf 'ab%.0s' $(seq 1 32))" -H "X-API-Key: $api_key" \
    -H 'Content-Type: application/json' \
    -d '{"environment": "production", "subscriptions": ["morning"], "timeZone": "Asia/Tokyo", "tier": "large", "autoDownload": true, "alertsAuthorized": true}'
# A broadcast of the edition (the server dispatches nothing: it stays running until cancelled).
broadcast=$(curl -fsS -X POST "$base/v1/broadcasts" -H "Authorization: Bearer $admin_token" -H 'Content-Type: application/json' \
    -d "{\"edition\": \"$edition\", \"environment\": \"production\"}" | python3 -c 'import json, sys; print(json.load(sys.stdin)["broadcast"]["id"])')
echo "paperboy serve on $base (app $app_id, edition $edition, broadcast $broadcast)" >&2

# Stored ids and names, so that generated requests also reach stored resources, not only 400 and 404.
cat > "$work/schemathesis.toml" <<TOML
[dictionaries.tokens]
values = ["$(printf 'ab%.0s' $(seq 1 32))"]
[dictionaries.editions]
values = ["$edition"]
[dictionaries.broadcasts]
values = ["$broadcast"]
[dictionaries.publications]
values = ["morning", "evening"]
[dictionaries.apps]
values = [$app_id]

[parameters]
"path.token" = { dictionary = "tokens", probability = 0.5 }
"query.publication" = { dictionary = "publications", probability = 0.5 }
"path.app" = { dictionary = "apps", probability = 0.5 }

[[operations]]
include-operation-id = "getEdition"
parameters = { "path.id" = { dictionary = "editions", probability = 0.5 } }
[[operations]]
include-operation-id = "recordReceipt"
parameters = { "body.editionId" = { dictionary = "editions", probability = 0.5 } }
# Rules no JSON schema can state answer 400 naming the field, as the spec says: a time zone that is not an IANA
# name (registerDevice), a deadline in the past and pages not numbered 1 to N (publishEdition). For these two
# operations alone, a schema-valid request refused with 400 is expected; every other operation is held to the
# check's defaults.
[[operations]]
include-operation-id = "registerDevice"
parameters = { "body.subscriptions[*]" = { dictionary = "publications", probability = 0.5 } }
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", 400, 401, 403, 404, 409, 429, "5xx"]
[[operations]]
include-operation-id = "publishEdition"
parameters = { "body.publication" = { dictionary = "publications", probability = 0.5 } }
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", 400, 401, 403, 404, 409, 429, "5xx"]
[[operations]]
include-operation-id = "startBroadcast"
parameters = { "body.edition" = { dictionary = "editions", probability = 0.5 } }
[[operations]]
include-operation-id = "getBroadcast"
parameters = { "path.id" = { dictionary = "broadcasts", probability = 0.5 } }
[[operations]]
include-operation-id = "cancelBroadcast"
parameters = { "path.id" = { dictionary = "broadcasts", probability = 0.5 } }
# A schema-valid key file that is not a readable P-256 key on this host answers 400 naming keyFile (no schema
# can say which files exist); removing an app's only provider or revoking its last active key answers 409.
[[operations]]
include-operation-id = "setAppAPNs"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", 400, 401, 403, 404, 409, 429, "5xx"]
[[operations]]
include-operation-id = "removeAppAPNs"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", 400, 401, 403, 404, 409, 429, "5xx"]
[[operations]]
include-operation-id = "removeAppFCM"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", 400, 401, 403, 404, 409, 429, "5xx"]
[[operations]]
include-operation-id = "revokeAppKey"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", 400, 401, 403, 404, 409, 429, "5xx"]
TOML

status=0
run() { # NAME [--exclude-operation-id ID]... [HEADER...]
    local name=$1; shift
    local headers=() excluded=()
    while [ "${1:-}" = --exclude-operation-id ]; do excluded+=("$1" "$2"); shift 2; done
    for header in "$@"; do headers+=(-H "$header"); done
    if ! kill -0 "$server" 2>/dev/null; then echo "== restarting paperboy serve" >&2; start_server; fi
    echo "== schemathesis: $name" >&2
    set +e
    # From $work: schemathesis keeps its crash cache in ./.schemathesis.
    (cd "$work" && "$schemathesis" --config-file "$work/schemathesis.toml" run "$base/openapi.yaml" --url "$base" --no-color \
        --checks all --phases examples,coverage,fuzzing,stateful --max-examples "$max_examples" --max-time "$time_limit" --request-timeout 10 --generation-database none \
        --report har --report-har-path "$work/$name.har" \
        "${headers[@]}" "${excluded[@]}" ${SCHEMATHESIS_ARGS:-}) 2>&1 | tee "$work/$name.log"
    local code=${PIPESTATUS[0]}
    set -e
    local crashed=
    if ! kill -0 "$server" 2>/dev/null; then
        crashed=", SERVER CRASHED"
        echo "== paperboy serve died during $name:" >&2
        grep -m1 -E 'Fatal error|error:' "$log" >&2 || tail -5 "$log" >&2
        grep -m3 -E ' at /.*/Sources/' "$log" >&2 || true
        wait "$server" 2>/dev/null || true
        status=1
    fi
    local requests
    requests=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["log"]["entries"]))' "$work/$name.har" 2>/dev/null || echo 0)
    echo "== $name: $requests requests, exit $code" >&2
    total=$((total + requests))
    [ "$code" = 0 ] || status=1
    summary+=("$name: $requests requests, $( [ "$code" = 0 ] && echo passed || echo "FAILED (exit $code)")$crashed")
}
total=0
summary=()
# With the keys, revoking is left out: generated ids reach app 1's key 1 (the X-API-Key of this run) once
# the run has added a second key, and every device request after it would answer 401. The route tests
# (AppRoutesTests) cover it; the run without keys checks that it needs the admin token.
run with-keys --exclude-operation-id revokeAppKey "X-API-Key: $api_key" "Authorization: Bearer $admin_token"
run without-keys
# Each 500 is logged as `error paperboy.serve: error=… request failed` (the error may span lines).
if grep -h -E '^[0-9T:+-]+ error .*error=' "$work"/serve-*.log > "$work/failed.log"; then
    echo "the server logged $(wc -l < "$work/failed.log") failed requests (500), e.g.:" >&2
    sed -E 's/.*error=//' "$work/failed.log" | grep -oE 'message: [^,]+|EncodingError[^.]*\.[^.]*|^[A-Za-z]+Error[^(]*' | sort | uniq -c | head -10 >&2
    status=1
fi

echo
printf '%s\n' "${summary[@]}"
echo "total: $total requests; $( [ "$status" = 0 ] && echo 'no failures' || echo 'FAILURES (see above)')"
exit "$status"
