#!/usr/bin/env bash
# Day-two operations drill (issue 25's "Measure"): one app with APNs and FCM, a mixed fleet, K `paperboy worker`
# processes (each with its own --port for /health/ready and --drain-timeout 10s) against `paperboy apns-sim` and
# `paperboy fcm-sim` as separate processes, both answering in 150 ms with 3 % 429s. Three phases, each its own
# broadcast of a new edition to every device over --window:
#   1 rolling restart  mid-broadcast every worker in turn gets SIGTERM (its exit time measured); a replacement
#                      is started at once, and the next SIGTERM waits until the old one has exited
#   2 rotation         mid-broadcast `paperboy apps set-apns` with a second key and `paperboy apps set-fcm` with a
#                      second service account (the apns-sim trusts both keys from the start: two --key-file/
#                      --key-id; the second service account comes from the fcm-sim's POST /control/service-accounts,
#                      which trusts it)
#   3 no key           one extra worker started just before the broadcast without the APNs key: it runs in its own
#                      mount namespace (unshare -m) where an empty directory is mounted over the key directory, as a
#                      pod without its secret mount (fallback: started as user nobody, the key directory 0700); its
#                      /health/ready is polled every second (it must answer 503) and the broadcast must complete
# Reported per phase: devices reached once, twice and never; each old worker's exit time (SIGTERM to exit); the
# busiest second over the plan (the two simulators' accepts per second added up, against the wave's rate from
# `broadcast status --json`); the broadcast's final state and counts.
# How devices are counted: FCM devices per token from the fcm-sim's ledger (GET /control/ledger?target=TOKEN, each
# accept matched to its phase by the edition id in its body): exact. APNs devices: the apns-sim keeps no per-token
# record a process can read, so APNs counts come from the deliveries table (one row per device and broadcast)
# plus the apns-sim's accepts in the phase's seconds: "twice" is the accepts beyond the recorded ones (duplicates,
# or fateUnknown sends that were accepted), "never" is the devices without an accepted delivery.
# The busiest second: each simulator counts accepts per whole second since its start (stats acceptsPerSecond);
# its start is placed between its stats' startedAt (whole seconds) and the time its "listening" line appeared
# (±0.5 s at most), each of its seconds at the nearest whole epoch second; the full seconds between the phase's first and last accept are compared with the plan.
#
# A broadcast whose audience has FCM devices does not start within 2 minutes of :00, :15, :30 or :45 (Firebase's
# advice; BroadcastRepository): a phase started then waits up to about 4 minutes for its planned start.
#
# Usage: scripts/with-postgres.sh scripts/drill-day-two.sh [--devices N] [--workers K] [--window D]
#            [--fcm-share S] [--json]
#   --devices N    seeded devices, all targets (default 20000; at most 3 broadcasts an hour reach a device: the
#                  three phases use that budget up, so run each drill on a fresh database, as with-postgres.sh does)
#   --workers K    worker processes (default 4)
#   --window D     each phase's window, e.g. 60s, 2m (default 60s)
#   --fcm-share S  the share of the fleet registered with FCM, Android (default 0.3)
#   --json         print the result as one JSON object on standard output (progress goes to standard error)
#   env: PAPERBOY_BIN (default .build/debug/paperboy), DRILL_KEEP=DIR (keep the logs and raw data there),
#        WORKER_LOG_LEVEL (default notice), WORKER_ARGS (more `paperboy worker` flags), FCM_RETRY_AFTER (the
#        Retry-After of the fcm-sim's 429s in seconds, default 5; 0: none, and the FCM client then waits 60 s)
# Exits 1 when a phase misses or repeats a device, does not complete, or an old worker exits non-zero or later than
# the drain timeout + 2 s; the numbers are printed first.
set -euo pipefail
shopt -s inherit_errexit
cd "$(dirname "$0")/.."

usage() { awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$0"; }
bad() { echo "drill-day-two: $*" >&2; exit 2; }
seconds_of() {
    [[ "$2" =~ ^([0-9]+)([hms]?)$ ]] || bad "$1: '$2' is not a duration such as 30s or 5m"
    local n=$((10#${BASH_REMATCH[1]}))
    case "${BASH_REMATCH[2]}" in h) echo $((n * 3600)) ;; m) echo $((n * 60)) ;; *) echo "$n" ;; esac
}

devices=20000 workers=4 window=60s fcm_share=0.3 json=0
while [ $# -gt 0 ]; do
    case "$1" in
        --devices) devices=${2:?--devices needs a number}; shift 2 ;;
        --workers) workers=${2:?--workers needs a number}; shift 2 ;;
        --window) window=${2:?--window needs a duration}; shift 2 ;;
        --fcm-share) fcm_share=${2:?--fcm-share needs a share between 0 and 1}; shift 2 ;;
        --json) json=1; shift ;;
        -h | --help) usage; exit 0 ;;
        *) bad "unknown argument '$1' (see --help)" ;;
    esac
done
[[ "$devices" =~ ^[1-9][0-9]*$ ]] || bad "--devices: '$devices' is not a positive integer"
[[ "$workers" =~ ^[1-9][0-9]*$ ]] || bad "--workers: '$workers' is not a positive integer"
window_s=$(seconds_of --window "$window")
[ "$window_s" -ge 20 ] || bad "--window: at least 20s (the phase's events are placed within it)"
python3 -c "import sys; s = float(sys.argv[1]); sys.exit(0 if 0 < s < 1 else 1)" "$fcm_share" 2>/dev/null \
    || bad "--fcm-share: '$fcm_share' is not a share between 0 and 1 (both providers are drilled)"
retry_after=${FCM_RETRY_AFTER:-5}
[[ "$retry_after" =~ ^[0-9]+$ ]] || bad "FCM_RETRY_AFTER: '$retry_after' is not a number of seconds"
drain_s=10

B=${PAPERBOY_BIN:-.build/debug/paperboy}
[ -x "$B" ] || { echo "drill-day-two: no $B: build it, or pass PAPERBOY_BIN" >&2; exit 1; }
: "${DATABASE_URL:?run me under scripts/with-postgres.sh or set DATABASE_URL}"
for tool in python3 openssl psql curl; do command -v "$tool" >/dev/null || { echo "drill-day-two: needs $tool" >&2; exit 1; }; done

say() { echo "drill-day-two: $*" >&2; }
die() { say "error: $*"; exit 1; }
now() { date +%s.%N; }
q() { psql -X -Atq -v ON_ERROR_STOP=1 -c "$1"; }
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
later() { python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= float(sys.argv[2]) else 1)" "$(now)" "$1"; }

tmp=$(mktemp -d /tmp/paperboy-drill-XXXXXX)
mkdir -p "$tmp/apns-keys" "$tmp/fcm" "$tmp/empty"
chmod 700 "$tmp/apns-keys" "$tmp/fcm"
declare -A wpid wport
live=() sims=()
cleanup() {
    local status=$? pid
    for pid in "${wpid[@]}" "${sims[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${wpid[@]}" "${sims[@]}"; do
        for _ in $(seq 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
    done
    wait 2>/dev/null || true
    if [ -n "${DRILL_KEEP:-}" ]; then mkdir -p "$DRILL_KEEP" && cp -r "$tmp"/. "$DRILL_KEEP"/ && say "logs kept in $DRILL_KEEP"; fi
    if [ $status -ne 0 ] && [ -z "${DRILL_KEEP:-}" ]; then
        for f in "$tmp"/*.log "$tmp"/*.err; do [ -s "$f" ] && { say "--- tail of $(basename "$f")"; tail -5 "$f" >&2; }; done
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A simulator: $1 name (apns-sim, fcm-sim), the rest its flags; waits for its "listening" line, whose time bounds
# its start (its stats' acceptsPerSecond count from it). Sets sim_url.
start_sim() {
    local name=$1 url="" pid; shift
    "$B" "$name" --port 0 --json "$@" > "$tmp/$name.out" 2> "$tmp/$name.err" &
    pid=$!
    sims+=("$pid")
    for _ in $(seq 300); do
        url=$(sed -n "s/^$name listening on \(http[^ ]*\).*$/\1/p" "$tmp/$name.out" 2>/dev/null || true)
        [ -n "$url" ] && break
        kill -0 "$pid" 2>/dev/null || die "$name exited: $(cat "$tmp/$name.err")"
        sleep 0.05
    done
    [ -n "$url" ] || die "$name did not print its address within 15 s"
    echo "$name $pid $(now)" >> "$tmp/sims.txt"
    sim_url=$url
}

worker_log_level=${WORKER_LOG_LEVEL:-notice}
# Worker $1; the rest, if any, a command it runs under (unshare ...). Its --port is a free one.
start_worker() {
    local name=$1 port; shift
    port=$(free_port)
    # shellcheck disable=SC2086 # WORKER_ARGS is a list of flags
    "$@" env LOG_LEVEL="$worker_log_level" DATABASE_URL="$DATABASE_URL" "$B" worker --apns-endpoint "$apns_url" --fcm-endpoint "$fcm_url" \
        --worker-name "$name" --port "$port" --drain-timeout "${drain_s}s" ${WORKER_ARGS:-} > "$tmp/$name.log" 2>&1 &
    wpid[$name]=$!
    wport[$name]=$port
    live+=("$name")
    echo "$name ${wpid[$name]} $port $(now)" >> "$tmp/workers.txt"
}
ready_code() { curl -s -m 2 -o "$tmp/ready-$1.body" -w '%{http_code}' "http://127.0.0.1:${wport[$1]}/health/ready" 2>/dev/null || true; }
# Waits until worker $1 answers /health/ready 200, at most $2 s; prints the seconds it took or "never".
wait_ready() {
    local name=$1 limit=$2 start code
    start=$(now)
    for _ in $(seq $((limit * 5))); do
        kill -0 "${wpid[$name]}" 2>/dev/null || die "worker $name exited: $(tail -5 "$tmp/$name.log")"
        code=$(ready_code "$name")
        if [ "$code" = 200 ]; then python3 -c "print(f'{$(now) - $start:.1f}')"; return 0; fi
        sleep 0.2
    done
    echo never
}
drop_live() { local n keep=(); for n in "${live[@]}"; do [ "$n" = "$1" ] || keep+=("$n"); done; live=("${keep[@]}"); }
# SIGTERM to worker $1; waits (polling every 50 ms, at most 120 s) for it to exit; records "phase name pid
# seconds exit-status" in exits.txt.
stop_worker() {
    local name=$1 pid=${wpid[$1]} t0 t1 rc=0 waited=0
    t0=$(now)
    kill -TERM "$pid" || die "SIGTERM to $name failed"
    while kill -0 "$pid" 2>/dev/null; do
        sleep 0.05
        waited=$((waited + 1))
        [ "$waited" -lt 2400 ] || { kill -9 "$pid"; break; }
    done
    wait "$pid" || rc=$?
    t1=$(now)
    drop_live "$name"
    unset "wpid[$name]"
    local secs; secs=$(python3 -c "print(f'{$t1 - $t0:.2f}')")
    echo "$phase $name $pid $secs $rc $(python3 -c "print(f'{$t0 - $wave_start:.1f}')")" >> "$tmp/exits.txt"
    say "phase $phase: $name exited $secs s after SIGTERM (status $rc)"
}

# 1. Keys, simulators, app, fleet.
openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null | openssl pkcs8 -topk8 -nocrypt -out "$tmp/apns-keys/key1.p8"
openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null | openssl pkcs8 -topk8 -nocrypt -out "$tmp/apns-keys/key2.p8"
fcm_fail="QUOTA_EXCEEDED=0.03"
[ "$retry_after" = 0 ] || fcm_fail="QUOTA_EXCEEDED:$retry_after=0.03"
start_sim apns-sim --key-file "$tmp/apns-keys/key1.p8" --key-id KEYONE1234 --key-file "$tmp/apns-keys/key2.p8" --key-id KEYTWO1234 \
    --latency 150ms --fail 429:TooManyRequests=0.03 --no-record
apns_url=$sim_url
start_sim fcm-sim --write-service-account "$tmp/fcm/sa1.json" --project-id drill-news --latency 150ms --fail "$fcm_fail"
fcm_url=$sim_url
for _ in $(seq 100); do [ -s "$tmp/fcm/sa1.json" ] && break; sleep 0.05; done
[ -s "$tmp/fcm/sa1.json" ] || die "fcm-sim wrote no service account"
say "apns-sim $apns_url (keys KEYONE1234, KEYTWO1234), fcm-sim $fcm_url; 150 ms answers, 3 % 429 (FCM: $fcm_fail)"

: > "$tmp/setup.log"
"$B" migrate >> "$tmp/setup.log" 2>&1 || die "paperboy migrate failed: $(tail -3 "$tmp/setup.log")"
"$B" apps add --bundle-id com.example.news --team-id TEAM123456 --key-id KEYONE1234 --key-file "$tmp/apns-keys/key1.p8" \
    --fcm-service-account "$tmp/fcm/sa1.json" --json > "$tmp/app.json" 2>> "$tmp/setup.log" || die "apps add failed: $(tail -3 "$tmp/setup.log")"
app=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["id"])' "$tmp/app.json")
"$B" publications add morning --app "$app" >> "$tmp/setup.log" 2>&1 || die "publications add failed: $(tail -3 "$tmp/setup.log")"
say "seeding $devices devices (FCM share $fcm_share)"
seed_start=$(now)
"$B" devices seed --app "$app" --publication morning --count "$devices" --fcm "$fcm_share" >> "$tmp/setup.log" 2>&1 \
    || die "devices seed failed: $(tail -3 "$tmp/setup.log")"
seed_s=$(python3 -c "print(f'{$(now) - $seed_start:.1f}')")
psql -X -q -c 'VACUUM ANALYZE' >/dev/null 2>&1 || true
read -r n_apns n_fcm <<< "$(q "SELECT count(*) FILTER (WHERE provider = 0), count(*) FILTER (WHERE provider = 1) FROM devices WHERE app_id = $app" | tr '|' ' ')"
say "seeded in ${seed_s}s: $n_apns APNs, $n_fcm FCM"
q "SELECT convert_from(token, 'UTF8') FROM devices WHERE app_id = $app AND provider = 1 ORDER BY id" > "$tmp/fcm-tokens.txt" \
    || die "cannot list the FCM tokens"

# 2. The workers.
for i in $(seq 1 "$workers"); do start_worker "w$i"; done
for i in $(seq 1 "$workers"); do
    r=$(wait_ready "w$i" 60)
    [ "$r" != never ] || die "worker w$i not ready within 60 s: $(cat "$tmp/ready-w$i.body" 2>/dev/null; tail -5 "$tmp/w$i.log")"
done
say "$workers workers ready"

# 3. The phases.
: > "$tmp/exits.txt"; : > "$tmp/phases.txt"; : > "$tmp/events.txt"; : > "$tmp/health.txt"
event() { echo "$phase $(python3 -c "print(f'{$(now) - $wave_start:.1f}')") $*" >> "$tmp/events.txt"; say "phase $phase: $*"; }
publish() { # $1 phase number: a new edition, issue date 1 + phase days ahead; prints its id
    python3 - "$tmp/edition-$1.json" "$1" <<'EOF'
import datetime, json, sys
now = datetime.datetime.now(datetime.timezone.utc)
deadline = (now + datetime.timedelta(hours=3)).replace(microsecond=0)
issue = (now.date() + datetime.timedelta(days=int(sys.argv[2]))).isoformat()
bundle = lambda tier: {"url": f"https://cdn.example.com/drill/{issue}/{tier}-1.zip", "bytes": 1048576, "sha256": "ab" * 32}
edition = {"publication": "morning", "issueDate": issue, "deadline": deadline.isoformat(),
           "tiers": {tier: {"bundles": [bundle(tier)]} for tier in ("small", "medium", "large")},
           "pages": [{"number": 1, "title": "Front page"}]}
json.dump(edition, open(sys.argv[1], "w"))
EOF
    "$B" editions publish "$tmp/edition-$1.json" --app "$app" --json > "$tmp/edition-$1.out" 2>> "$tmp/setup.log" \
        || die "editions publish (phase $1) failed: $(tail -3 "$tmp/setup.log")"
    python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["id"])' "$tmp/edition-$1.out"
}
# The machine's busy CPU ticks (all cores; USER_HZ) so far.
busy_ticks() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8}' /proc/stat; }
status_of() { timeout 60 "$B" broadcast status "$1" --json > "$2.new" 2> "$tmp/status.err" && mv "$2.new" "$2"; }
check_alive() {
    local n
    for n in "${live[@]}"; do
        kill -0 "${wpid[$n]}" 2>/dev/null || die "worker $n exited during phase $phase: $(tail -5 "$tmp/$n.log")"
    done
}

# Phase $1: publishes, starts the broadcast, runs the phase's events when due (phase_events), polls until the
# broadcast has ended (at most the window + 240 s).
run_phase() {
    phase=$1
    local edition bid state="running" t_start limit next_status=0 t
    edition=$(publish "$phase")
    if [ "$phase" = 3 ]; then wave_start=$(now); phase3_start_worker; fi
    t_start=$(now)
    local busy0; busy0=$(busy_ticks)
    maxload=0
    "$B" broadcast --edition "$edition" --window "${window_s}s" --cohorts 16 --max-pushes 1 --jitter 1s --json \
        > "$tmp/start-$phase.json" 2> "$tmp/start-$phase.err" || die "paperboy broadcast (phase $phase) failed: $(cat "$tmp/start-$phase.err")"
    bid=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["id"])' "$tmp/start-$phase.json")
    wave_start=$(q "SELECT extract(epoch FROM starts_at) FROM broadcast_waves WHERE broadcast_id = '$bid' AND wave = 1") \
        || die "cannot read phase $phase's wave start"
    say "phase $phase: broadcast $bid of edition $edition to $devices devices over ${window_s}s, starting $(python3 -c "print(f'{$wave_start - $t_start:+.1f}')") s from now"
    limit=$(python3 -c "print($wave_start + $window_s + 240)")
    phase_events_init
    while :; do
        phase_events_tick
        check_alive
        t=$(date +%s)
        if [ "$t" -ge "$next_status" ]; then
            status_of "$bid" "$tmp/status-$phase.json" || die "broadcast status failed: $(cat "$tmp/status.err")"
            state=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["state"])' "$tmp/status-$phase.json")
            next_status=$((t + 2))
            maxload=$(awk -v m="$maxload" '{print ($1 > m ? $1 : m)}' /proc/loadavg)
            [ "$state" = running ] || [ "$state" = planned ] || break
        fi
        later "$limit" && { say "phase $phase: still $state ${window_s}s + 240 s after its start"; break; }
        sleep 0.25
    done
    phase_events_done
    local t_end; t_end=$(now)
    echo "$phase $bid $edition $t_start $wave_start $t_end $state" >> "$tmp/phases.txt"
    echo "$busy0 $(busy_ticks) $t_start $t_end $maxload" > "$tmp/machine-$phase.txt"
    say "phase $phase: $state $(python3 -c "print(f'{$t_end - $wave_start:.1f}')") s after its start"
    sleep 3 # the simulators' last seconds before the next phase
}

# Phase 1: SIGTERM to each worker of the start in turn from 15 % of the window, spread over 60 % of it; a
# replacement at once; the next SIGTERM once the old one has exited.
phase_events_init() {
    step=0
    case "$phase" in
        1) restart_names=("${live[@]}") ;;
        3) next_health=0 ;;
    esac
}
phase_events_tick() {
    local due
    case "$phase" in
        1)
            [ "$step" -lt "${#restart_names[@]}" ] || return 0
            due=$(python3 -c "print($wave_start + $window_s * (0.15 + 0.6 * $step / ${#restart_names[@]}))")
            later "$due" || return 0
            local old=${restart_names[$step]} new="${restart_names[$step]}r"
            event "SIGTERM to $old; replacement $new started"
            start_worker "$new"
            stop_worker "$old"
            step=$((step + 1)) ;;
        2)
            [ "$step" = 0 ] || return 0
            later "$(python3 -c "print($wave_start + $window_s * 0.4)")" || return 0
            "$B" apps set-apns --app "$app" --team-id TEAM123456 --key-id KEYTWO1234 --key-file "$tmp/apns-keys/key2.p8" >> "$tmp/setup.log" 2>&1 \
                || die "apps set-apns failed: $(tail -3 "$tmp/setup.log")"
            event "apps set-apns: key KEYTWO1234"
            token_fetches > "$tmp/fetches-before-set-fcm.txt"
            curl -s -m 10 -f -X POST -H 'content-type: application/json' -d '{"project_id": "drill-news"}' \
                "$fcm_url/control/service-accounts" > "$tmp/fcm/sa2.json" || die "fcm-sim made no second service account"
            chmod 600 "$tmp/fcm/sa2.json"
            "$B" apps set-fcm --app "$app" --service-account "$tmp/fcm/sa2.json" >> "$tmp/setup.log" 2>&1 \
                || die "apps set-fcm failed: $(tail -3 "$tmp/setup.log")"
            event "apps set-fcm: a second service account"
            step=1 ;;
        3)
            local t code
            t=$(date +%s)
            [ "$t" -ge "$next_health" ] || return 0
            next_health=$((t + 1))
            code=$(ready_code wx)
            echo "$(python3 -c "print(f'{$(now) - $wave_start:.1f}')") ${code:-none} $(head -c 300 "$tmp/ready-wx.body" 2>/dev/null | tr '\n' ' ')" >> "$tmp/health.txt" ;;
    esac
}
phase_events_done() {
    case "$phase" in
        1) [ "$step" -ge "${#restart_names[@]}" ] || event "ended before every worker was restarted: ${restart_names[*]:$step} not restarted" ;;
        2) token_fetches > "$tmp/fetches-after-phase-2.txt" ;;
        3) stop_worker wx ;;
    esac
}
# The fcm-sim's access-token fetches so far (all accounts): a worker fetches one when it loads a service account.
token_fetches() {
    curl -s -m 10 -f "$fcm_url/control/stats" | python3 -c 'import json, sys; print(sum(json.load(sys.stdin).get("tokenFetches", {}).values()))' \
        || echo "?"
}
# Phase 3's worker without the key: an empty directory mounted over the key directory in its own mount
# namespace; or, where that is not allowed, run as nobody (the key directory is root's, 0700).
phase3_start_worker() {
    if unshare -m sh -c 'mount --bind "$1" "$2"' sh "$tmp/empty" "$tmp/apns-keys" 2>/dev/null; then
        nokey_how="its own mount namespace with an empty directory mounted over the key directory (unshare -m)"
        start_worker wx unshare -m sh -c 'mount --bind "$1" "$2" && shift 2 && exec "$@"' sh "$tmp/empty" "$tmp/apns-keys"
    else
        [ "$(id -u)" = 0 ] || die "phase 3 needs root: unshare -m, or runuser -u nobody"
        nokey_how="user nobody (the key directory is root's, mode 0700; so is the service account's)"
        start_worker wx runuser -u nobody --
    fi
    event "worker wx started without the APNs key: $nokey_how"
    sleep 1
}

run_phase 1
run_phase 2
nokey_how=""
run_phase 3

# 4. The simulators' stats (SIGTERM: each prints its stats as JSON and exits 0), after the FCM ledger is read.
say "reading the fcm-sim's ledger for $n_fcm tokens"
python3 - "$fcm_url" "$tmp/fcm-tokens.txt" "$tmp/fcm-ledger.json" <<'EOF'
import http.client, json, sys, urllib.parse
url = urllib.parse.urlparse(sys.argv[1])
conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
out = {}
for token in (l.strip() for l in open(sys.argv[2])):
    if not token: continue
    conn.request("GET", "/control/ledger?target=" + urllib.parse.quote(token, safe=""))
    r = conn.getresponse()
    body = r.read()
    if r.status != 200: sys.exit(f"ledger for a token: HTTP {r.status}: {body[:200]!r}")
    out[token] = [{"at": e.get("at"), "outcome": e.get("outcome"), "body": e.get("body") or ""} for e in json.loads(body)]
json.dump(out, open(sys.argv[3], "w"))
EOF
# Per phase, the FCM tokens the ledger shows accepted other than once (at most 20): their records are read below.
while read -r ph _ edition _; do
    python3 - "$tmp/fcm-ledger.json" "$edition" > "$tmp/fcm-odd-$ph.txt" <<'PYEOF'
import json, sys
ledger = json.load(open(sys.argv[1]))
odd = [(t, sum(1 for e in es if e["outcome"] == "accepted" and sys.argv[2] in e["body"])) for t, es in ledger.items()]
for token, n in [x for x in odd if x[1] != 1][:20]: print(token, n)
PYEOF
done < "$tmp/phases.txt"
for pid in "${wpid[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
while read -r name pid _; do
    kill -TERM "$pid" || die "SIGTERM to $name failed"
    for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    rc=0; wait "$pid" || rc=$?
    [ "$rc" = 0 ] || die "$name did not exit cleanly ($rc): $(tail -3 "$tmp/$name.err")"
done < "$tmp/sims.txt"
sims=()

# 5. Per phase: deliveries by provider and outcome, the devices without an accepted delivery (with their batches),
# and the batches leased more than once or given back.
while read -r ph bid _; do
    q "SELECT d.provider, coalesce(x.outcome, 'none'), coalesce(x.reason, ''), count(*) FROM devices d
        LEFT JOIN deliveries x ON x.device_id = d.id AND x.broadcast_id = '$bid' WHERE d.app_id = $app GROUP BY 1, 2, 3" > "$tmp/deliveries-$ph.txt" \
        || die "cannot count phase $ph's deliveries"
    q "SELECT format('device %s %s %s cohort key %s: %s %s at %s; %s', d.id, CASE d.provider WHEN 0 THEN 'APNs' ELSE 'FCM' END,
            CASE d.provider WHEN 0 THEN left(encode(d.token, 'hex'), 16) ELSE left(convert_from(d.token, 'UTF8'), 16) END || '...', d.cohort_key,
            coalesce(x.outcome, 'no delivery'), coalesce(x.reason, ''), coalesce(x.sent_at::text, '-'),
            coalesce((SELECT string_agg(format('batch %s cohort %s owner %s leases %s give-backs %s (%s) done %s', b.id, b.cohort, b.lease_owner,
                b.leases, b.give_backs, coalesce(b.given_back_for, '-'), coalesce(b.done_at::text, 'no')), '; ')
             FROM broadcast_batches b WHERE b.broadcast_id = '$bid' AND d.cohort_key BETWEEN b.first_key AND b.last_key), 'in no batch'))
        FROM devices d LEFT JOIN deliveries x ON x.device_id = d.id AND x.broadcast_id = '$bid'
        WHERE d.app_id = $app AND x.outcome IS DISTINCT FROM 'accepted' ORDER BY d.id LIMIT 20" > "$tmp/unreached-$ph.txt" \
        || die "cannot list phase $ph's unreached devices"
    q "SELECT format('batch %s cohort %s keys %s..%s devices %s owner %s leases %s give-backs %s (%s) done %s', id, cohort, first_key, last_key,
            devices, lease_owner, leases, give_backs, coalesce(given_back_for, '-'), coalesce(done_at::text, 'no'))
        FROM broadcast_batches WHERE broadcast_id = '$bid' AND (leases > 1 OR give_backs > 0 OR done_at IS NULL) ORDER BY id" > "$tmp/batches-$ph.txt" \
        || die "cannot list phase $ph's batches"
    : > "$tmp/fcm-odd-records-$ph.txt"
    while read -r token n; do
        # FCM tokens are [A-Za-z0-9_:.-]: safe between quotes.
        q "SELECT format('FCM %s... accepted %s times at the fcm-sim: device %s cohort key %s: recorded %s %s at %s; %s', left('$token', 16), $n, d.id, d.cohort_key,
                coalesce(x.outcome, 'no delivery'), coalesce(x.reason, ''), coalesce(x.sent_at::text, '-'),
                coalesce((SELECT string_agg(format('batch %s cohort %s owner %s leases %s give-backs %s (%s) done %s', b.id, b.cohort, b.lease_owner,
                    b.leases, b.give_backs, coalesce(b.given_back_for, '-'), coalesce(b.done_at::text, 'no')), '; ')
                 FROM broadcast_batches b WHERE b.broadcast_id = '$bid' AND d.cohort_key BETWEEN b.first_key AND b.last_key), 'in no batch'))
            FROM devices d LEFT JOIN deliveries x ON x.device_id = d.id AND x.broadcast_id = '$bid'
            WHERE d.app_id = $app AND d.provider = 1 AND d.token = convert_to('$token', 'UTF8')" >> "$tmp/fcm-odd-records-$ph.txt" || true
    done < "$tmp/fcm-odd-$ph.txt"
    q "SELECT floor(extract(epoch FROM sent_at))::bigint, count(*) FROM deliveries WHERE broadcast_id = '$bid' AND outcome <> 'notSent' GROUP BY 1 ORDER BY 1" \
        > "$tmp/sent-seconds-$ph.txt" || die "cannot read phase $ph's sends per second"
    q "SELECT count(*), count(DISTINCT lease_owner) FROM broadcast_batches WHERE broadcast_id = '$bid'" > "$tmp/batchcount-$ph.txt" || true
    q "SELECT coalesce(failure, '') FROM broadcasts WHERE id = '$bid'" > "$tmp/failure-$ph.txt" || true
done < "$tmp/phases.txt"
q "SELECT format('%s %s %s %s', worker, provider, coalesce(problem, '-'), coalesce(last_sent_at::text, '-')) FROM sender_status ORDER BY worker, provider" \
    > "$tmp/sender-status.txt" 2>/dev/null || true
grep -hiE '"?(level|lvl)"?[=: ]+"?(warning|error|critical)|\bwarning\b|\berror\b' "$tmp"/w*.log 2>/dev/null | head -40 > "$tmp/worker-warnings.txt" || true

# 6. The report.
python3 - "$tmp" "$json" "$devices" "$workers" "$window_s" "$fcm_share" "$n_apns" "$n_fcm" "$drain_s" "$fcm_fail" "$seed_s" "${nokey_how:-}" <<'EOF'
import datetime, json, math, os, sys
tmp, as_json = sys.argv[1], sys.argv[2] == "1"
devices, workers, window, fcm_share, n_apns, n_fcm, drain = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]), int(sys.argv[7]), int(sys.argv[8]), int(sys.argv[9])
fcm_fail, seed_s, nokey_how = sys.argv[10], float(sys.argv[11]), sys.argv[12]
read = lambda name: open(os.path.join(tmp, name)).read()
lines = lambda name: [l.rstrip("\n") for l in open(os.path.join(tmp, name)) if l.strip()]

def sim_stats(name):
    text = read(f"{name}.out")
    return json.loads(text[text.index("{"):])
sims = {}
for l in lines("sims.txt"):
    name, pid, listening = l.split()
    st = sim_stats(name)
    # Its stats' startedAt is the ledger's start in whole seconds (ISO 8601, truncated); it lies between that second
    # and the "listening" line: the middle of the two, within ±0.5 s.
    lo = datetime.datetime.fromisoformat(st["startedAt"].replace("Z", "+00:00")).timestamp()
    hi = min(lo + 1, float(listening))
    sims[name] = {"start": (lo + hi) / 2, "startUncertainty": round((hi - lo) / 2, 2), "stats": st}
# Accepts per whole epoch second, per simulator: its second k at round(start + k).
per_second = {}
for name, s in sims.items():
    for k, n in enumerate(s["stats"].get("acceptsPerSecond", [])):
        if n:
            second = math.floor(s["start"] + k + 0.5)
            per_second.setdefault(second, {}).setdefault(name, 0)
            per_second[second][name] += n

phases = []
for l in lines("phases.txt"):
    ph, bid, edition, t_start, wave_start, t_end, state = l.split()
    phases.append({"phase": int(ph), "bid": bid, "edition": edition, "tStart": float(t_start), "waveStart": float(wave_start), "tEnd": float(t_end), "state": state})
for i, p in enumerate(phases):
    p["until"] = phases[i + 1]["tStart"] if i + 1 < len(phases) else math.inf

ledger = json.load(open(os.path.join(tmp, "fcm-ledger.json")))
exits = [l.split() for l in lines("exits.txt")]
events = [l.split(" ", 2) for l in lines("events.txt")]
health = [l.split(" ", 2) for l in lines("health.txt")]
names = {1: "rolling restart", 2: "APNs key and service account rotated", 3: "a worker without the APNs key"}
result = {"devices": devices, "apnsDevices": n_apns, "fcmDevices": n_fcm, "workers": workers, "windowSeconds": window, "fcmShare": fcm_share,
          "simulators": {"latency": "150ms", "apns429": "429:TooManyRequests=0.03", "fcm429": fcm_fail}, "drainTimeoutSeconds": drain,
          "seedSeconds": seed_s, "cpus": os.cpu_count(), "phases": []}
failures = []
for p in phases:
    ph = p["phase"]
    status = json.load(open(os.path.join(tmp, f"status-{ph}.json")))
    wave = status["waves"][0]
    rate = wave["rate"]
    # deliveries: provider|outcome|reason|count
    recorded = {}
    for l in lines(f"deliveries-{ph}.txt"):
        prov, outcome, reason, n = l.split("|")
        key = ("apns" if prov == "0" else "fcm", outcome)
        recorded[key] = recorded.get(key, 0) + int(n)
        if reason: recorded.setdefault(("reasons", prov, outcome, reason), 0); recorded[("reasons", prov, outcome, reason)] += int(n)
    rec = lambda prov, outcome: recorded.get((prov, outcome), 0)
    # The simulators' accepts in the phase's seconds.
    # Phases are apart by seconds without a send (the last answers, then 3 s): 2 s of margin for the placement.
    secs = sorted(s for s in per_second if p["tStart"] - 2 <= s < p["until"] - 2)
    acc = {name: sum(per_second[s].get(name, 0) for s in secs) for name in sims}
    # FCM per token, from the ledger: accepts whose body names this phase's edition.
    fcm_counts = {}
    for token, entries in ledger.items():
        fcm_counts[token] = sum(1 for e in entries if e["outcome"] == "accepted" and p["edition"] in e["body"])
    fcm_once = sum(1 for n in fcm_counts.values() if n == 1)
    fcm_twice = sum(1 for n in fcm_counts.values() if n >= 2)
    fcm_never = sum(1 for n in fcm_counts.values() if n == 0)
    fcm_ledger_accepts = sum(fcm_counts.values())
    fcm_repeated = [(t, [e["at"] for e in ledger[t] if e["outcome"] == "accepted" and p["edition"] in e["body"]]) for t, n in fcm_counts.items() if n >= 2][:10]
    # APNs from counts: deliveries plus the apns-sim's accepts.
    apns_acc = acc.get("apns-sim", 0)
    apns_rec = rec("apns", "accepted")
    apns_unknown = rec("apns", "fateUnknown")
    apns_extra = apns_acc - apns_rec
    # Accepts beyond the recorded ones are first taken as fateUnknown sends that arrived; the rest as repeats.
    apns_unknown_reached = min(apns_unknown, max(0, apns_extra))
    apns_twice = max(0, apns_extra - apns_unknown)
    apns_never = n_apns - apns_rec - apns_unknown_reached
    apns_once = apns_rec + apns_unknown_reached - apns_twice
    # The busiest second, over the full seconds between the first and the last accept.
    combined = [sum(per_second[s].values()) for s in secs]
    nz = [i for i, n in enumerate(combined) if n]
    full = combined[nz[0] + 1:nz[-1]] if len(nz) > 2 else []
    peak = max(full) if full else 0
    mean = sum(full) / len(full) if full else 0
    # The same from the deliveries' sent_at (the workers' clock, exact seconds; recorded sends only).
    sent = dict(tuple(map(int, l.split("|"))) for l in lines(f"sent-seconds-{ph}.txt"))
    sent_full = [sent.get(x, 0) for x in range(min(sent) + 1, max(sent))] if len(sent) > 2 else []
    sent_peak = max(sent_full) if sent_full else 0
    unreached = lines(f"unreached-{ph}.txt")
    batches = lines(f"batches-{ph}.txt")
    bc = read(f"batchcount-{ph}.txt").strip().split("|")
    b0, b1, m0, m1, maxload = read(f"machine-{ph}.txt").split()
    busy_cores = (int(b1) - int(b0)) / os.sysconf("SC_CLK_TCK") / (float(m1) - float(m0))
    out = {
        "phase": ph, "machineBusyCores": round(busy_cores, 2), "machineMaxLoadAverage": float(maxload), "name": names[ph], "broadcast": p["bid"], "edition": p["edition"], "state": status["state"],
        "failure": read(f"failure-{ph}.txt").strip() or None,
        "finishedAfterStartSeconds": round(p["tEnd"] - p["waveStart"], 1),
        "planRate": round(rate, 2), "planWindowSeconds": wave["window"],
        "counts": wave["counts"],
        "reached": {"once": fcm_once + apns_once, "twice": fcm_twice + apns_twice, "never": fcm_never + apns_never},
        "fcm": {"devices": n_fcm, "once": fcm_once, "twice": fcm_twice, "never": fcm_never, "acceptsInLedger": fcm_ledger_accepts,
                "acceptsAtSimulator": acc.get("fcm-sim", 0), "recordedAccepted": rec("fcm", "accepted"), "recordedFateUnknown": rec("fcm", "fateUnknown"),
                "repeated": [{"token": t[:24] + "…", "acceptedAt": at} for t, at in fcm_repeated], "how": "per token, the fcm-sim's ledger"},
        "apns": {"devices": n_apns, "once": apns_once, "twice": apns_twice, "never": apns_never, "acceptsAtSimulator": apns_acc,
                 "recordedAccepted": apns_rec, "recordedFateUnknown": apns_unknown, "acceptsBeyondRecorded": apns_extra,
                 "how": "counts: deliveries (accepted) and the apns-sim's accepts in the phase's seconds; twice = accepts beyond the recorded ones less the fateUnknown"},
        "recordedWithoutOutcome": {f"{k[0]} {k[1]}": v for k, v in recorded.items() if k[0] != "reasons" and k[1] not in ("accepted",)},
        "busiestSecond": peak, "meanPerSecond": round(mean, 1), "fullSeconds": len(full),
        "busiestOverPlan": round(peak / rate, 3) if rate else None, "meanOverPlan": round(mean / rate, 3) if rate else None,
        "acceptsPerSecond": combined[nz[0]:nz[-1] + 1] if nz else [],
        "recordedSendsBusiestSecond": sent_peak, "recordedSendsBusiestOverPlan": round(sent_peak / rate, 3) if rate else None,
        "exits": [{"worker": e[1], "seconds": float(e[3]), "status": int(e[4]), "sigtermAfterStart": float(e[5])} for e in exits if e[0] == str(ph)],
        "events": [{"after": float(e[1]), "what": e[2]} for e in events if e[0] == str(ph)],
        "batches": int(bc[0]) if bc and bc[0] else None, "leaseOwners": int(bc[1]) if len(bc) > 1 else None,
        "batchesLeasedTwiceOrGivenBack": batches[:20],
        "unreachedSample": unreached[:20],
        "fcmNotOnce": lines(f"fcm-odd-records-{ph}.txt"),
    }
    if ph == 2:
        before, after = read("fetches-before-set-fcm.txt").strip(), read("fetches-after-phase-2.txt").strip()
        out["fcmTokenFetches"] = {"beforeSetFCM": before, "atPhaseEnd": after, "workersRunning": workers,
                                  "how": "the fcm-sim's access-token fetches: a worker fetches one when it loads a service account (tokens live 3600 s)"}
    if ph == 3:
        codes = [h[1] for h in health]
        first503 = next((h for h in health if h[1] == "503"), None)
        out["noKeyWorker"] = {"how": nokey_how, "healthPolls": len(codes), "answers": {c: codes.count(c) for c in sorted(set(codes))},
                              "first503After": float(first503[0]) if first503 else None,
                              "first503Body": first503[2] if first503 and len(first503) > 2 else None}
        if not first503: failures.append("phase 3: the worker without the key never answered /health/ready 503")
    if out["state"] != "completed": failures.append(f"phase {ph}: the broadcast ended {out['state']}")
    if out["reached"]["never"]: failures.append(f"phase {ph}: {out['reached']['never']} devices never reached")
    if out["reached"]["twice"]: failures.append(f"phase {ph}: {out['reached']['twice']} devices reached twice")
    if apns_extra < 0: failures.append(f"phase {ph}: the apns-sim accepted {apns_acc}, fewer than the {apns_rec} recorded accepted (phase seconds misplaced?)")
    if ph == 1 and len(out["exits"]) < workers: failures.append(f"phase 1: {len(out['exits'])} of {workers} workers restarted before the broadcast ended")
    for e in out["exits"]:
        if e["status"] != 0 or e["seconds"] > drain + 2: failures.append(f"phase {ph}: {e['worker']} exited {e['status']} after {e['seconds']} s (limit {drain + 2} s)")
    result["phases"].append(out)
result["failures"] = failures
result["simulatorStats"] = {name: {k: v for k, v in s["stats"].items() if k != "acceptsPerSecond"} for name, s in sims.items()}
result["senderStatus"] = lines("sender-status.txt")
result["workerWarnings"] = lines("worker-warnings.txt")[:40]
json.dump(result, open(os.path.join(tmp, "result.json"), "w"), indent=2)
open(os.path.join(tmp, "failures.txt"), "w").write("".join(f + "\n" for f in failures))
if as_json:
    print(json.dumps(result, indent=2))
    sys.exit(0)
print(f"drill: {devices} devices ({n_apns} APNs, {n_fcm} FCM), {workers} workers (--drain-timeout {drain}s), window {window} s, "
      f"simulators 150 ms, 3 % 429 (FCM {fcm_fail}), {os.cpu_count()} CPUs")
hdr = f"{'phase':<40} {'state':<10} {'once':>6} {'twice':>6} {'never':>6} {'busiest/s':>9} {'plan/s':>8} {'busiest/plan':>12} {'old workers exit (s)':<24}"
print(hdr)
print("-" * len(hdr))
for o in result["phases"]:
    ex = " ".join(f"{e['worker']}:{e['seconds']:.1f}" + ("" if e["status"] == 0 else f"(rc {e['status']})") for e in o["exits"]) or "-"
    print(f"{str(o['phase']) + ' ' + o['name']:<40} {o['state']:<10} {o['reached']['once']:>6} {o['reached']['twice']:>6} {o['reached']['never']:>6}"
          f" {o['busiestSecond']:>9} {o['planRate']:>8.1f} {o['busiestOverPlan'] or 0:>12.3f} {ex:<24}")
for o in result["phases"]:
    print(f"phase {o['phase']} ({o['name']}): broadcast {o['broadcast']} {o['state']}" + (f" ({o['failure']})" if o["failure"] else "")
          + f" {o['finishedAfterStartSeconds']} s after its start; mean {o['meanPerSecond']}/s over {o['fullSeconds']} full s ({o['meanOverPlan']} x plan);"
          f" busiest second of the recorded sends (deliveries.sent_at) {o['recordedSendsBusiestSecond']} ({o['recordedSendsBusiestOverPlan']} x plan);"
          f" {o['batches']} batches by {o['leaseOwners']} workers; the machine {o['machineBusyCores']} of {os.cpu_count()} cores busy, load average up to {o['machineMaxLoadAverage']}")
    a, f = o["apns"], o["fcm"]
    print(f"  APNs {a['devices']}: once {a['once']}, twice {a['twice']}, never {a['never']} (apns-sim accepted {a['acceptsAtSimulator']}, recorded accepted {a['recordedAccepted']}, fateUnknown {a['recordedFateUnknown']})")
    print(f"  FCM  {f['devices']}: once {f['once']}, twice {f['twice']}, never {f['never']} (ledger accepts {f['acceptsInLedger']}, fcm-sim accepted {f['acceptsAtSimulator']}, recorded accepted {f['recordedAccepted']}, fateUnknown {f['recordedFateUnknown']})")
    print(f"  counts: {json.dumps(o['counts'], sort_keys=True)}")
    for e in o["events"]: print(f"  +{e['after']} s: {e['what']}")
    if "fcmTokenFetches" in o:
        t = o["fcmTokenFetches"]
        print(f"  fcm-sim access-token fetches: {t['beforeSetFCM']} before set-fcm, {t['atPhaseEnd']} at the phase's end ({t['workersRunning']} workers running): each worker that loaded the new account fetched one")
    if "noKeyWorker" in o:
        n = o["noKeyWorker"]
        print(f"  worker wx ({n['how']}): /health/ready {n['answers']} over {n['healthPolls']} polls; first 503 at +{n['first503After']} s: {n['first503Body']}")
    for b in o["batchesLeasedTwiceOrGivenBack"][:10]: print(f"  {b}")
    for u in o["unreachedSample"][:10]: print(f"  not accepted: {u}")
    for r in o["fcmNotOnce"]: print(f"  {r}")
for l in result["senderStatus"]: print(f"sender_status (worker provider problem last-sent): {l}")
for f in failures: print(f"FAILED: {f}")
EOF
if [ -s "$tmp/failures.txt" ]; then
    while read -r line; do say "error: $line"; done < "$tmp/failures.txt"
    exit 1
fi
