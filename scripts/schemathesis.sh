#!/usr/bin/env bash
# Runs schemathesis against a live `paperboy serve` on a throwaway PostgreSQL (scripts/with-postgres.sh):
# once with a valid device key and admin token, once without; every phase (examples, coverage, fuzzing,
# stateful) and every check (`--checks all`): no 5xx; every response as openapi.yaml says (status, content
# type, headers, body); schema-valid requests accepted and invalid ones refused; undeclared methods 405
# with `Allow`; auth required where declared. Prints how many requests ran and, per run, how many operations
# answered 2xx at least once (scripts/schemathesis-coverage.py, from the run's HAR); exits non-zero on any
# failure, on any 429 (the runs must never be throttled), and when an operation never answered 2xx in the run
# with keys.
#
# Every request comes from an address of its own: serve trusts 127.0.0.1 as a proxy and
# scripts/schemathesis_hooks.py (SCHEMATHESIS_HOOKS) gives each request a distinct X-Forwarded-For, so the
# server's limit on wrong admin tokens per address (on, as in production) never throttles the run, however
# many wrong tokens its checks send on purpose.
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
# Two more apps with both providers (APNs, and FCM by a service-account file with a real RSA key), no
# publications: the targets of removeAppAPNs (apns_app) and removeAppFCM (fcm_app), which answer 200 only while
# the app has the other provider too (the run's own app has APNs alone: 409). apns_app has three device keys,
# for revokeAppKey (200 while another key of the app is active).
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$work/fcm-key.pem" 2>/dev/null
python3 - "$work/fcm-key.pem" > "$work/service-account.json" <<'EOF'
import json, sys
print(json.dumps({"type": "service_account", "project_id": "paperboy-schemathesis", "private_key_id": "k1",
                  "private_key": open(sys.argv[1]).read(), "client_email": "push@paperboy-schemathesis.iam.gserviceaccount.com",
                  "token_uri": "https://oauth2.googleapis.com/token"}))
EOF
two_providers() { # BUNDLE_ID: prints the new app's id
    "$paperboy" apps add --bundle-id "$1" --team-id TEAM123456 --key-id KEY1234567 --key-file "$work/AuthKey.p8" \
        --fcm-service-account "$work/service-account.json" --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])'
}
apns_app=$(two_providers com.example.schemathesis.apns)
fcm_app=$(two_providers com.example.schemathesis.fcm)
"$paperboy" apps add-key --app "$apns_app" >/dev/null
"$paperboy" apps add-key --app "$apns_app" >/dev/null
apns_app_keys=$("$paperboy" apps keys --app "$apns_app" --json | python3 -c '
import json, sys
data = json.load(sys.stdin)
print(", ".join(str(key["id"]) for key in (data["keys"] if isinstance(data, dict) else data)))')
# A content origin, for the operations on origins.
"$paperboy" origins add content-api --capacity 2000/s >&2
admin_token=$(openssl rand -hex 24)

serves=0
start_server() { # sets server, base; each start logs to serve-N.log
    serves=$((serves + 1))
    log="$work/serve-$serves.log"
    # The device rate limit is off: it has its own tests, and here it would answer 429 to the generated load.
    # The limit on wrong admin tokens stays on: each request comes from an address of its own (X-Forwarded-For,
    # scripts/schemathesis_hooks.py), which serve reads from a trusted proxy, 127.0.0.1.
    PAPERBOY_ADMIN_TOKEN=$admin_token "$paperboy" serve --port 0 --no-dispatch --no-scheduler --rate-limit off \
        --trusted-proxy 127.0.0.1 > "$log" 2>&1 &
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

# The device of the spec's example token, so that the examples reach a stored device; and one for deleteDevice
# alone (its erase=true deletes the device: the other operations on a device keep theirs).
token=$(printf 'ab%.0s' $(seq 1 32))
removable_token=$(printf 'cd%.0s' $(seq 1 32))
for device in "$token" "$removable_token"; do
    curl -fsS -o /dev/null -X PUT "$base/v1/devices/$device" -H "X-API-Key: $api_key" -H 'Content-Type: application/json' \
        -d '{"environment": "production", "subscriptions": ["morning"], "timeZone": "Asia/Tokyo", "tier": "large", "autoDownload": true, "alertsAuthorized": true}'
done
# A broadcast of the edition (the server dispatches nothing: it stays running until cancelled).
broadcast=$(curl -fsS -X POST "$base/v1/broadcasts" -H "Authorization: Bearer $admin_token" -H 'Content-Type: application/json' \
    -d "{\"edition\": \"$edition\", \"environment\": \"production\"}" | python3 -c 'import json, sys; print(json.load(sys.stdin)["broadcast"]["id"])')
echo "paperboy serve on $base (app $app_id, edition $edition, broadcast $broadcast; apps $apns_app and $fcm_app with both providers)" >&2
# The document is loaded from the repository's openapi.yaml (the server serves the same text: OpenAPIContractTests),
# not from $base/openapi.yaml: schemathesis leaves out the operation that served the document it loaded, so
# GET /openapi.yaml would go untested.
spec=$(pwd)/openapi.yaml

# Stored ids and names, so that generated requests also reach stored resources, not only 400 and 404: every
# operation must answer 2xx at least once in the run with keys (scripts/schemathesis-coverage.py --require-2xx).
cat > "$work/schemathesis.toml" <<TOML
[dictionaries.tokens]
values = ["$token"]
[dictionaries.removable-tokens]
values = ["$removable_token"]
[dictionaries.editions]
values = ["$edition"]
[dictionaries.broadcasts]
values = ["$broadcast"]
[dictionaries.publications]
values = ["morning", "evening"]
[dictionaries.apps]
values = [$app_id]
[dictionaries.apns-removable]
values = [$apns_app]
[dictionaries.fcm-removable]
values = [$fcm_app]
[dictionaries.keys]
values = [$apns_app_keys]
[dictionaries.time-zones]
values = ["Asia/Tokyo", "UTC", "Europe/Berlin"]
[dictionaries.key-files]
values = ["$work/AuthKey.p8"]
[dictionaries.origins]
values = ["content-api"]
[dictionaries.deadlines]
values = ["2099-11-23T09:00:00+09:00"]
[dictionaries.issue-dates]
values = ["2099-01-01", "2099-01-02", "2099-01-03", "2099-01-04", "2099-01-05", "2099-01-06", "2099-01-07", "2099-01-08"]
[dictionaries.first-page]
values = [1]
[dictionaries.bundle-urls]
values = ["https://cdn.example.com/edition/bundle-1.zip"]

[parameters]
"path.token" = { dictionary = "tokens", probability = 0.5 }
"query.publication" = { dictionary = "publications", probability = 0.5 }
"path.app" = { dictionary = "apps", probability = 0.5 }

[[operations]]
include-operation-id = "getEdition"
parameters = { "path.id" = { dictionary = "editions", probability = 0.5 } }
[[operations]]
include-operation-id = "deleteDevice"
parameters = { "path.token" = { dictionary = "removable-tokens", probability = 0.5 } }
[[operations]]
include-operation-id = "recordReceipt"
parameters = { "body.editionId" = { dictionary = "editions", probability = 0.5 } }
# positive_data_acceptance's expected statuses are its defaults plus 400 only for rules no JSON schema can state,
# each answered 400 naming the field as openapi.yaml says: registerDevice, the path's token must be a token of the
# body's provider (hex of 64 to 200 characters for APNs; the path's schema is both providers' union: no schema
# ties a path parameter to a body field) and timeZone an IANA name known to the host.
[[operations]]
include-operation-id = "registerDevice"
parameters = { "body.subscriptions[*]" = { dictionary = "publications", probability = 0.5 }, "body.timeZone" = { dictionary = "time-zones", probability = 0.5 } }
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", 400, 401, 403, 404, 409, 429, "5xx"]
# publishEdition: a deadline in the future, pages numbered 1 to N each once (in any order).
[[operations]]
include-operation-id = "publishEdition"
parameters = { "query.app" = { dictionary = "apps", probability = 0.5 }, "body.publication" = { dictionary = "publications", probability = 0.5 }, "body.issueDate" = { dictionary = "issue-dates", probability = 0.5 }, "body.pages[*].number" = { dictionary = "first-page", probability = 0.5 }, "body.deadline" = { dictionary = "deadlines", probability = 0.5 }, "body.tiers.small.bundles[*].url" = { dictionary = "bundle-urls", probability = 0.5 }, "body.tiers.medium.bundles[*].url" = { dictionary = "bundle-urls", probability = 0.5 }, "body.tiers.large.bundles[*].url" = { dictionary = "bundle-urls", probability = 0.5 } }
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", 400, 401, 403, 404, 409, 429, "5xx"]
# setAppAPNs: keyFile must name a readable regular file holding a P-256 key on the host serve runs on.
[[operations]]
include-operation-id = "setAppAPNs"
parameters = { "body.keyFile" = { dictionary = "key-files", probability = 0.5 } }
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", 400, 401, 403, 404, 409, 429, "5xx"]
# removeAppAPNs, removeAppFCM and revokeAppKey answer 409 for the app's only provider or last active key: 409 is
# among the check's defaults.
[[operations]]
include-operation-id = "removeAppAPNs"
parameters = { "path.app" = { dictionary = "apns-removable", probability = 0.5 } }
[[operations]]
include-operation-id = "removeAppFCM"
parameters = { "path.app" = { dictionary = "fcm-removable", probability = 0.5 } }
[[operations]]
include-operation-id = "setOriginCapacity"
parameters = { "path.name" = { dictionary = "origins", probability = 0.5 } }
[[operations]]
include-operation-id = "setPublicationOrigin"
parameters = { "path.publication" = { dictionary = "publications", probability = 0.5 }, "body.origin" = { dictionary = "origins", probability = 0.5 } }
[[operations]]
include-operation-id = "startBroadcast"
parameters = { "body.edition" = { dictionary = "editions", probability = 0.5 } }
[[operations]]
include-operation-id = "getBroadcast"
parameters = { "path.id" = { dictionary = "broadcasts", probability = 0.5 } }
[[operations]]
include-operation-id = "cancelBroadcast"
parameters = { "path.id" = { dictionary = "broadcasts", probability = 0.5 } }
TOML
# With the keys, revokeAppKey revokes keys of apns_app only (its app fixed, its key drawn from apns_app's): a
# generated app and key could be the run's own X-API-Key (app 1's key 1, once the run has added a second key to
# app 1), and every device request after it would answer 401. Its cases are positive only: schemathesis (4.32)
# labels a coverage case negative for an app value that the fixed one then replaces, and reports the 200 as a
# schema-violating request accepted. Without keys every request answers 401, so that run generates the app too,
# and negative cases.
cp "$work/schemathesis.toml" "$work/with-keys.toml"
cat >> "$work/with-keys.toml" <<TOML
[[operations]]
include-operation-id = "revokeAppKey"
parameters = { "path.app" = $apns_app, "path.key" = { dictionary = "keys", probability = 0.5 } }
generation.mode = "positive"
TOML

status=0
run() { # NAME CONFIG [--require-2xx] [HEADER...]
    local name=$1 config=$2; shift 2
    local headers=() coverage=(--forbid-429)
    if [ "${1:-}" = --require-2xx ]; then coverage+=("$1"); shift; fi
    for header in "$@"; do headers+=(-H "$header"); done
    if ! kill -0 "$server" 2>/dev/null; then echo "== restarting paperboy serve" >&2; start_server; fi
    echo "== schemathesis: $name" >&2
    set +e
    # From $work: schemathesis keeps its crash cache in ./.schemathesis.
    (cd "$work" && SCHEMATHESIS_HOOKS="$hooks" "$schemathesis" --config-file "$config" run "$spec" --url "$base" --no-color \
        --checks all --phases examples,coverage,fuzzing,stateful --max-examples "$max_examples" --max-time "$time_limit" --request-timeout 10 --generation-database none \
        --report har --report-har-path "$work/$name.har" \
        "${headers[@]}" ${SCHEMATHESIS_ARGS:-}) 2>&1 | tee "$work/$name.log"
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
    local requests exercised coverage_code=0
    requests=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["log"]["entries"]))' "$work/$name.har" 2>/dev/null || echo 0)
    python3 scripts/schemathesis-coverage.py "$spec" "$work/$name.har" --name "$name" "${coverage[@]}" > "$work/$name.coverage" || coverage_code=$?
    cat "$work/$name.coverage" >&2
    exercised=$(head -1 "$work/$name.coverage" | grep -oE '[0-9]+ of [0-9]+ operations' || echo "? operations")
    echo "== $name: $requests requests, exit $code" >&2
    total=$((total + requests))
    [ "$code" = 0 ] || status=1
    [ "$coverage_code" = 0 ] || status=1
    summary+=("$name: $requests requests, $exercised answered 2xx, $( [ "$code" = 0 ] && [ "$coverage_code" = 0 ] && echo passed || echo "FAILED (schemathesis exit $code, coverage exit $coverage_code)")$crashed")
}
hooks=$(pwd)/scripts/schemathesis_hooks.py
total=0
summary=()
run with-keys "$work/with-keys.toml" --require-2xx "X-API-Key: $api_key" "Authorization: Bearer $admin_token"
run without-keys "$work/schemathesis.toml"
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
