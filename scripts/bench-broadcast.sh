#!/usr/bin/env bash
# Broadcast benchmark: N seeded devices, one edition, `paperboy broadcast` sent by 1 or 2 `paperboy worker`
# processes to `paperboy apns-sim` running as a separate process. Measures, at the simulator, the accepts in
# each second (mean, peak, peak/mean and p99 over the full seconds between the first and the last one), the
# planning cost (how long `paperboy broadcast` takes to count the targets and store the plan), the time from
# start until the first push, and each worker's peak RSS (VmHWM) and CPU.
#
# Usage: scripts/with-postgres.sh scripts/bench-broadcast.sh [--devices N] [--window 5m] [--workers 1|2]
#                                                           [--capacity R] [--unpaced] [--reuse] [--json]
#   --devices N   seeded devices, all targets (default 100000)
#   --window W    wave 1's window, e.g. 30s, 5m (default 5m); ignored with --unpaced
#   --workers K   worker processes (default 1)
#   --capacity R  wave 1 at R sends per second (e.g. 10000/s) instead of --window: the window follows
#   --unpaced     --capacity 10000000/s instead of --window: every device due at once (no plan to speak of)
#   --reuse       the database is prepared already (app 1, publication morning, its devices: e.g. a kept
#                 scripts/bench-morning.sh database): no migrate, app, publication or seeding; --devices is
#                 then the number of targets; app 1's key becomes this run's throwaway key and broadcasts still
#                 running are cancelled first (a benchmark database only)
#   --json        print the result as one JSON object on standard output (progress goes to standard error)
#   env: PAPERBOY_BIN (default .build-release/release/paperboy), BENCH_KEEP=DIR (keep the logs there),
#        WORKER_LOG_LEVEL (the workers' LOG_LEVEL, default warning; debug logs every batch's timings),
#        WORKER_ARGS (more `paperboy worker` flags, e.g. "--max-batch 2000"; for experiments)
set -euo pipefail
cd "$(dirname "$0")/.."

devices=100000 window=5m workers=1 unpaced=0 json=0 capacity="" reuse=0
while [ $# -gt 0 ]; do
    case "$1" in
        --devices) devices=${2:?--devices needs a number}; shift 2 ;;
        --window) window=${2:?--window needs a duration}; shift 2 ;;
        --workers) workers=${2:?--workers needs a number}; shift 2 ;;
        --unpaced) unpaced=1; shift ;;
        --capacity) capacity=${2:?--capacity needs a rate such as 10000/s}; shift 2 ;;
        --reuse) reuse=1; shift ;;
        --json) json=1; shift ;;
        -h | --help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "bench-broadcast: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
[[ "$devices" =~ ^[1-9][0-9]*$ ]] || { echo "bench-broadcast: --devices: '$devices' is not a positive integer" >&2; exit 2; }
[[ "$workers" =~ ^[1-9][0-9]*$ ]] || { echo "bench-broadcast: --workers: '$workers' is not a positive integer" >&2; exit 2; }
case "$window" in
    *h) window_s=$(( ${window%h} * 3600 )) ;;
    *m) window_s=$(( ${window%m} * 60 )) ;;
    *s) window_s=${window%s} ;;
    *) window_s=$window ;;
esac
[[ "$window_s" =~ ^[1-9][0-9]*$ ]] || { echo "bench-broadcast: --window: '$window' is not a duration such as 30s or 5m" >&2; exit 2; }
if [ -n "$capacity" ]; then
    [[ "$capacity" =~ ^([1-9][0-9]*)(/s)?$ ]] || { echo "bench-broadcast: --capacity: '$capacity' is not a rate such as 10000/s" >&2; exit 2; }
    window_s=$(( (devices + ${BASH_REMATCH[1]} - 1) / ${BASH_REMATCH[1]} ))
fi
[ "$unpaced" = 1 ] && window_s=0

B=${PAPERBOY_BIN:-.build-release/release/paperboy}
[ -x "$B" ] || { echo "bench-broadcast: no $B: build it with swift build -c release --scratch-path .build-release --product paperboy" >&2; exit 1; }
: "${DATABASE_URL:?run me under scripts/with-postgres.sh or set DATABASE_URL}"
command -v python3 >/dev/null || { echo "bench-broadcast: needs python3" >&2; exit 1; }
command -v openssl >/dev/null || { echo "bench-broadcast: needs openssl" >&2; exit 1; }

say() { echo "bench-broadcast: $*" >&2; }
die() { say "error: $*"; exit 1; }
now() { date +%s.%N; }

tmp=$(mktemp -d /tmp/paperboy-bench-broadcast-XXXXXX)
sim="" worker_pids=()
cleanup() {
    local status=$?
    for pid in "${worker_pids[@]}" $sim; do kill "$pid" 2>/dev/null || true; done
    for pid in "${worker_pids[@]}" $sim; do
        for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
    done
    wait 2>/dev/null || true
    if [ -n "${BENCH_KEEP:-}" ]; then mkdir -p "$BENCH_KEEP" && cp -r "$tmp"/. "$BENCH_KEEP"/ && say "logs kept in $BENCH_KEEP"; fi
    if [ $status -ne 0 ] && [ -z "${BENCH_KEEP:-}" ]; then
        for f in "$tmp"/*.log "$tmp"/sim.err; do [ -s "$f" ] && { say "--- tail of $(basename "$f")"; tail -5 "$f" >&2; }; done
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Waits up to $2 seconds for process $1 to exit; returns its exit status, or 124 when it is still running.
wait_exit() {
    local pid=$1 limit=$2 i
    for i in $(seq $((limit * 10))); do
        if ! kill -0 "$pid" 2>/dev/null; then
            local rc=0; wait "$pid" || rc=$?; return $rc
        fi
        sleep 0.1
    done
    return 124
}

# 1. Database, app, publication, fleet.
openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null | openssl pkcs8 -topk8 -nocrypt -out "$tmp/key.p8"
if [ "$reuse" = 1 ]; then
    # psql interpolates :'key' only in statements it reads, not in -c.
    echo "UPDATE apps SET key_reference = :'key', key_id = 'KEY1234567', team_id = 'TEAM123456' WHERE id = 1" \
        | psql -X -q -v ON_ERROR_STOP=1 -v key="$tmp/key.p8" >/dev/null || die "--reuse: cannot point app 1 at this run's key"
    for id in $(psql -X -Atc "SELECT id FROM broadcasts WHERE state IN ('planned', 'running')"); do
        "$B" broadcast cancel "$id" >> "$tmp/setup.log" 2>&1 || die "cancelling running broadcast $id failed: $(tail -3 "$tmp/setup.log")"
    done
    targets=$(psql -X -Atc "SELECT count(*) FROM devices d JOIN publications p ON p.app_id = d.app_id AND p.slug = 'morning' WHERE d.app_id = 1 AND d.environment = 0 AND d.active AND d.auto_download AND p.id = ANY (d.subscriptions)")
    say "--reuse: $targets targets in the database (--devices $devices)"
    devices=$targets
    [ "$devices" -gt 0 ] || die "--reuse: no targets of publication morning in app 1"
    if [ -n "$capacity" ]; then window_s=$(( (devices + ${capacity%/s} - 1) / ${capacity%/s} )); fi
    seed_s=0
else
    "$B" migrate > "$tmp/setup.log" 2>&1 || die "paperboy migrate failed: $(tail -3 "$tmp/setup.log")"
    "$B" apps add --bundle-id com.example.news --team-id TEAM123456 --key-id KEY1234567 --key-file "$tmp/key.p8" \
        >> "$tmp/setup.log" 2>&1 || die "apps add failed: $(tail -3 "$tmp/setup.log")"
    "$B" publications add morning --app 1 >> "$tmp/setup.log" 2>&1 || die "publications add failed: $(tail -3 "$tmp/setup.log")"
    say "seeding $devices devices"
    seed_start=$(now)
    "$B" devices seed --app 1 --publication morning --count "$devices" >> "$tmp/setup.log" 2>&1 \
        || die "devices seed failed: $(tail -3 "$tmp/setup.log")"
    seed_s=$(python3 -c "print(f'{$(now) - $seed_start:.1f}')")
    say "seeded in ${seed_s}s"
    psql -X -q -c 'VACUUM ANALYZE' >/dev/null 2>&1 || true
fi

# 2. The simulator, a separate process; its first line on standard output is `apns-sim listening on URL`.
sim_launch=$(now)
"$B" apns-sim --port 0 --key-file "$tmp/key.p8" --key-id KEY1234567 --no-record --json > "$tmp/sim.out" 2> "$tmp/sim.err" &
sim=$!
endpoint=""
for _ in $(seq 200); do
    endpoint=$(sed -n '1s/^apns-sim listening on \(http[^ ]*\).*$/\1/p' "$tmp/sim.out" 2>/dev/null || true)
    [ -n "$endpoint" ] && break
    kill -0 "$sim" 2>/dev/null || die "apns-sim exited: $(cat "$tmp/sim.err")"
    sleep 0.1
done
[ -n "$endpoint" ] || die "apns-sim did not print its address within 20 s"
sim_listening=$(now)

# 3. The edition: deadline 3 h ahead.
# With --reuse, an issue date no simulated day has.
issue_date=$(date +%F)
[ "$reuse" = 1 ] && issue_date=$(python3 -c "import datetime; print(datetime.date(2100, 1, 1) + datetime.timedelta(days=int('$(psql -X -Atc 'SELECT count(*) FROM editions')')))")
python3 - "$tmp/edition.json" "$issue_date" <<'EOF'
import datetime, json, sys
deadline = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=3)).replace(microsecond=0)
bundle = lambda tier: {"url": f"https://cdn.example.com/bench/morning/{tier}-1.zip", "bytes": 1048576, "sha256": "ab" * 32}
edition = {"publication": "morning", "issueDate": sys.argv[2], "deadline": deadline.isoformat(),
           "tiers": {tier: {"bundles": [bundle(tier)]} for tier in ("small", "medium", "large")},
           "pages": [{"number": 1, "title": "Front page"}, {"number": 2, "title": "Business"}]}
json.dump(edition, open(sys.argv[1], "w"))
EOF
"$B" editions publish "$tmp/edition.json" --json > "$tmp/edition.out" 2>> "$tmp/setup.log" || die "editions publish failed: $(cat "$tmp/edition.out")"
edition=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["id"])' "$tmp/edition.out")

# 4. The workers.
for i in $(seq "$workers"); do
    LOG_LEVEL=${WORKER_LOG_LEVEL:-warning} "$B" worker --apns-endpoint "$endpoint" --worker-name "w$i" ${WORKER_ARGS:-} > "$tmp/w$i.log" 2>&1 &
    worker_pids+=($!)
done
sleep 2
for i in $(seq "$workers"); do
    kill -0 "${worker_pids[$((i - 1))]}" 2>/dev/null || die "worker w$i exited: $(tail -5 "$tmp/w$i.log")"
done

# 5. The broadcast; planning cost = until `paperboy broadcast` returns (target count and the plan's insert).
if [ "$unpaced" = 1 ]; then pace=(--capacity 10000000/s); elif [ -n "$capacity" ]; then pace=(--capacity "${capacity%/s}/s"); else pace=(--window "$window"); fi
say "broadcasting edition $edition to $devices devices with $workers worker(s), ${pace[*]}"
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
busy_ticks() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8}' /proc/stat; }
# PostgreSQL's CPU: the postmaster, its live children, and (cutime + cstime) the children it has reaped.
pg_pid=$(head -1 "$(psql -X -Atc 'SHOW data_directory' 2>/dev/null)/postmaster.pid" 2>/dev/null || echo 0)
pg_ticks() {
    [ "$pg_pid" != 0 ] || { echo 0; return; }
    cat /proc/[0-9]*/stat 2>/dev/null | awk -v p="$pg_pid" '$1 == p {s += $14 + $15 + $16 + $17} $4 == p {s += $14 + $15} END {print s + 0}'
}
sample() {
    local line
    line="$(now) $(busy_ticks) $(cpu_ticks "$sim") $(pg_ticks)"
    for pid in "${worker_pids[@]}"; do
        line+=" $(cpu_ticks "$pid") $(awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)"
    done
    echo "$line" >> "$tmp/samples.txt"
}
: > "$tmp/samples.txt"
t0=$(now)
sample
"$B" broadcast --edition "$edition" "${pace[@]}" --cohorts 16 --max-pushes 1 --jitter 1s --json > "$tmp/start.json" 2> "$tmp/start.err" \
    || die "paperboy broadcast failed: $(cat "$tmp/start.err")"
t1=$(now)
bid=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["id"])' "$tmp/start.json")

# 6. Poll until completed (at most window + 10 min); sample each worker's CPU ticks and RSS on the way.
limit=$(python3 -c "print($t0 + $window_s + 600)")
state=running
while :; do
    sleep 2
    if python3 -c "import sys; sys.exit(0 if $(now) > $limit else 1)"; then
        say "gave up: broadcast $bid still $state $((window_s + 600)) s after the start (the numbers below cover what was sent)"; break
    fi
    for i in $(seq "$workers"); do
        kill -0 "${worker_pids[$((i - 1))]}" 2>/dev/null || die "worker w$i exited during the broadcast: $(tail -5 "$tmp/w$i.log")"
    done
    kill -0 "$sim" 2>/dev/null || die "apns-sim exited during the broadcast: $(tail -5 "$tmp/sim.err")"
    "$B" broadcast status "$bid" --json > "$tmp/status.json" 2> "$tmp/status.err" || { say "status failed: $(cat "$tmp/status.err")"; continue; }
    state=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["state"])' "$tmp/status.json")
    sample
    [ "$state" = running ] || break
done
t_done=$(now)
sample
"$B" broadcast status "$bid" --json > "$tmp/status.json" 2>/dev/null || true

# 7. Peak RSS and CPU just before stopping; SIGTERM the workers (they drain and exit 0), then the simulator.
worker_stats=()
for pid in "${worker_pids[@]}"; do
    worker_stats+=("$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status"):$(cpu_ticks "$pid")")
done
worker_rcs=()
for pid in "${worker_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
for pid in "${worker_pids[@]}"; do rc=0; wait_exit "$pid" 60 || rc=$?; worker_rcs+=("$rc"); done
worker_pids=()
kill -TERM "$sim"
sim_rc=0; wait_exit "$sim" 30 || sim_rc=$?
sim=""
[ "$sim_rc" = 0 ] || die "apns-sim did not exit cleanly ($sim_rc): $(tail -3 "$tmp/sim.err")"

python3 - "$tmp" "$devices" "$workers" "$window_s" "$unpaced" "$json" "$t0" "$t1" "$t_done" "$sim_launch" "$sim_listening" \
    "$(getconf CLK_TCK)" "$seed_s" "$state" "${worker_stats[*]}" "${worker_rcs[*]}" <<'EOF'
import datetime, json, math, sys
(tmp, devices, workers, window_s, unpaced, as_json, t0, t1, t_done, sim_launch, sim_listening,
 hz, seed_s, state, worker_stats, worker_rcs) = sys.argv[1:]
devices, workers, window_s, unpaced, as_json, hz = int(devices), int(workers), int(window_s), unpaced == "1", as_json == "1", int(hz)
t0, t1, t_done, sim_launch, sim_listening = map(float, (t0, t1, t_done, sim_launch, sim_listening))

def when(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()

lines = open(f"{tmp}/sim.out").read().split("\n", 1)
sim = json.loads(lines[1])
status = json.load(open(f"{tmp}/status.json"))
start = json.load(open(f"{tmp}/start.json"))
bins = sim["acceptsPerSecond"]
# startedAt is printed to the second (truncated); the simulator started between its launch and its first line.
# Its first line appeared (polled every 0.1 s) just after it started: the best estimate, kept within startedAt's second.
started = when(sim["startedAt"])
sim_start = min(max(started, sim_listening - 0.05), started + 0.999)
nonzero = [i for i, n in enumerate(bins) if n]
first, last = (nonzero[0], nonzero[-1]) if nonzero else (0, 0)
inner = bins[first + 1:last]  # full seconds only: the first and last partial seconds dropped
if not inner: inner = bins[first:last + 1]
mean = sum(inner) / len(inner) if inner else 0
peak = max(inner) if inner else 0
ordered = sorted(inner)
p99 = ordered[min(len(ordered) - 1, math.ceil(0.99 * len(ordered)) - 1)] if ordered else 0
low = min(inner) if inner else 0
sd = math.sqrt(sum((x - mean) ** 2 for x in inner) / len(inner)) if inner else 0
wave = status["waves"][0] if status.get("waves") else {}
plan_start = when(wave["startsAt"]) if wave else None
planned_rate = wave.get("rate")
finished = when(status["finishedAt"]) if status.get("finishedAt") else None
first_push = sim_start + first - t0
last_push_end = sim_start + last + 1 - t0
planned_end = (plan_start - t0 + window_s) if plan_start else None
workers_out = []
for i, (item, rc) in enumerate(zip(worker_stats.split(), worker_rcs.split())):
    hwm, ticks = item.split(":")
    workers_out.append({"name": f"w{i + 1}", "peakRSSMB": round(int(hwm) / 1024, 1), "cpuSeconds": round(int(ticks) / hz, 1),
                        "exitStatus": int(rc)})
# CPU from the samples (every 2 s from T0 to completion): the machine's busy cores, the simulator's, each worker's.
samples = [list(map(float, l.split())) for l in open(f"{tmp}/samples.txt") if l.strip()]
def cores(column):
    a, b = samples[0], samples[-1]
    mean = (b[column] - a[column]) / hz / max(0.001, b[0] - a[0])
    best = max(((y[column] - x[column]) / hz / (y[0] - x[0]) for x, y in zip(samples, samples[1:]) if y[0] > x[0]), default=0)
    return round(mean, 2), round(best, 2), round((b[column] - a[column]) / hz, 1)
for w, out in enumerate(workers_out):
    out["meanCores"], out["peakCores2s"], out["cpuSecondsDuringBroadcast"] = cores(4 + 2 * w)
machine_cores = cores(1)
sim_cores = cores(2)
pg_cores = cores(3)
totals = status.get("waves", [{}])[0].get("counts", {}) if status.get("waves") else {}
result = {
    "devices": devices, "workers": workers, "windowSeconds": window_s, "unpaced": unpaced, "state": status.get("state", state),
    "acceptedAtSimulator": sim["accepted"], "rejectedAtSimulator": sim.get("rejected", {}),
    "broadcastCounts": {k: totals.get(k) for k in ("planned", "sent", "accepted", "rejected", "skipped")},
    "plannedRate": planned_rate,
    "rate": {"seconds": len(inner), "mean": round(mean, 1), "peak": peak, "p99": p99, "min": low, "stdev": round(sd, 1),
             "peakToMean": round(peak / mean, 3) if mean else None},
    "planningSeconds": round(t1 - t0, 2),
    "planStartAfterT0": round(plan_start - t0, 2) if plan_start else None,
    "firstPushAfterT0": round(first_push, 1),
    "lastPushAfterT0": round(last_push_end, 1),
    "plannedEndAfterT0": round(planned_end, 1) if planned_end is not None else None,
    "lateBy": round(last_push_end - planned_end, 1) if planned_end is not None else None,
    "finishedAfterT0": round(finished - t0, 1) if finished else None,
    "seedSeconds": float(seed_s),
    "machineBusyCores": {"mean": machine_cores[0], "busiest2s": machine_cores[1]},
    "simulatorCores": {"mean": sim_cores[0], "busiest2s": sim_cores[1]},
    "postgresCores": {"mean": pg_cores[0], "busiest2s": pg_cores[1], "cpuSeconds": pg_cores[2]},
    "workersDetail": workers_out,
    "simulatorPeakConcurrentStreams": sim.get("peakConcurrentStreams"),
    "simulatorConnections": sim.get("connectionsOpened"),
    "acceptsPerSecond": bins[first:last + 1],
}
json.dump(result, open(f"{tmp}/result.json", "w"))
if as_json:
    print(json.dumps(result, indent=2))
else:
    r = result["rate"]
    mode = "unpaced" if unpaced else f"window {window_s}s"
    print(f"devices {devices} workers {workers} {mode}: {result['state']}, accepted {sim['accepted']}"
          + (" (!= devices)" if sim["accepted"] != devices else "")
          + f", rate mean {r['mean']:.0f}/s peak {r['peak']}/s p99 {r['p99']}/s min {r['min']}/s peak/mean {r['peakToMean']}"
          + f" over {r['seconds']} full s" + (f" (planned {planned_rate:.1f}/s)" if planned_rate else ""))
    print(f"  planning {result['planningSeconds']} s, plan start +{result['planStartAfterT0']} s, first push in [+{result['firstPushAfterT0']}, +{result['firstPushAfterT0'] + 1:.1f}) s,"
          f" last push by +{result['lastPushAfterT0']} s (planned end +{result['plannedEndAfterT0']} s, late by at most {result['lateBy']} s),"
          f" completed +{result['finishedAfterT0']} s after start (times at the simulator: 1 s resolution)")
    for w in workers_out:
        print(f"  worker {w['name']}: peak RSS {w['peakRSSMB']} MB, CPU {w['cpuSeconds']} s (mean {w['meanCores']} cores,"
              f" busiest 2 s {w['peakCores2s']} cores), exit {w['exitStatus']}")
    print(f"  CPU from start to completion: machine {machine_cores[0]} cores busy (busiest 2 s {machine_cores[1]}) of {__import__('os').cpu_count()},"
          f" simulator {sim_cores[0]}, PostgreSQL {pg_cores[0]} ({pg_cores[2]} s); seeding took {seed_s} s")
EOF
