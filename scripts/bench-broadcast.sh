#!/usr/bin/env bash
# Broadcast benchmark: N seeded devices, one edition, `paperboy broadcast` sent by 1 or 2 `paperboy worker`
# processes to `paperboy apns-sim` running as a separate process. Measures, at the simulator, the accepts in
# each second (mean, peak, peak/mean and p99 over the full seconds between the first and the last one), the
# planning cost (how long `paperboy broadcast` takes to count the targets and store the plan), the time from
# start until the first push, and each worker's peak RSS (VmHWM) and CPU. With --wave2: the recount before
# wave 2 and another broadcast's dispatch meanwhile; with --stall: one fault injected during wave 1. With
# pg_stat_statements (scripts/with-postgres.sh loads it when postgresql-contrib is installed), PostgreSQL's CPU per
# 1,000 deliveries of wave 1 (and of the whole --morning) by statement family (scripts/statement-families.py).
#
# Usage: scripts/with-postgres.sh scripts/bench-broadcast.sh [--devices N] [--window 5m] [--workers 1|2]
#            [--capacity R] [--unpaced] [--reuse] [--json]
#            [--wave2 [--wave-interval D] [--short-interval] [--second-devices N] [--second-window D]]
#            [--morning [--receipt-connections N]] [--watch]
#            [--stall KIND [--stall-at D] [--stall-for D] [--stop-after D]]
#   --devices N   seeded devices, all targets (default 100000)
#   --window W    wave 1's window, e.g. 30s, 5m (default 5m); ignored with --unpaced
#   --workers K   worker processes (default 1; 2 with --wave2 or --stall)
#   --capacity R  wave 1 at R sends per second (e.g. 10000/s) instead of --window: the window follows
#   --unpaced     --capacity 10000000/s instead of --window: every device due at once (no plan to speak of)
#   --reuse       the database is prepared already (app 1, publication morning, its devices: e.g. a kept
#                 scripts/bench-morning.sh database): no migrate, app, publication or seeding; --devices is
#                 then the number of targets; app 1's key becomes this run's throwaway key and broadcasts still
#                 running are cancelled first (a benchmark database only). With --wave2 it also adds (once)
#                 app com.example.second, its publication `second` and its devices, and leaves the receipts
#   --json        print the result as one JSON object on standard output (progress goes to standard error)
#   --watch       an operator watching the broadcast from its start until the workers stop: `GET /v1/broadcasts/{id}`
#                 every 2 s (curl, admin token) through one `paperboy serve --no-dispatch` connecting as PostgreSQL
#                 role bench_status, and one console left open on the broadcast's page (a viewer signed in, the page
#                 loaded once, its live stream read all along) on another serve connecting as bench_console (the
#                 console's sampler runs there). Both roles are created (SUPERUSER: a throwaway benchmark cluster).
#                 Reported: the status's latency (p50, p95, p99, max; while wave 1 ran and over the run) and
#                 failures, the live updates received, and each role's statement time per minute from
#                 pg_stat_statements (needs postgresql-contrib) with its costliest statements
#   --wave2       the broadcast gets --max-pushes 2 and a wave interval that puts wave 2 just after wave 1:
#                 max(20m, the window + the receipts' estimated time + the workers' count-ahead + 2 min),
#                 whole minutes. When wave 1 is sent (status: wave 1 finished), receipts (newData) for two
#                 thirds of wave 1's accepted deliveries (device_id % 3 <> 0) are inserted with psql in one
#                 INSERT … SELECT, then ANALYZE receipts: a BENCHMARK SHORTCUT (devices report through the API
#                 one by one). Workers that have --count-ahead (read from WORKER_ARGS, else from
#                 `paperboy worker --help`) count wave 2's audience that long before its start; it must come
#                 30 s after the receipts at least (else the run stops). A second broadcast (app
#                 com.example.second, devices seeded up front) starts 60 s before the count is due. Measured:
#                 the planned start (broadcast_waves.starts_at); the count (its statement seen in
#                 pg_stat_activity, polled every 0.5 s: from, to, how many at once); the workers' "wave started"
#                 log line (1 s resolution); the first wave-2 push (deliveries.sent_at; and its second at the
#                 simulator); recount delay = first wave-2 push - the start of wave 2's first cohort slot (goal
#                 ≤ 30 s; a follow-up's slots end where wave 1's did, so its first one starts after the wave's
#                 planned start); the second broadcast's sends per second (deliveries.sent_at: the simulator
#                 counts all topics together) and its longest gap between two sends from 20 s before the count
#                 to 20 s after wave 2's first push (and, for comparison, before that); wave 2's peak/mean (its
#                 own, from deliveries.sent_at, and at the simulator, the second broadcast included). Ends when
#                 wave 2 is sent and 30 s have passed since its start: what is still running is cancelled. Fails
#                 when wave 2's plan is not wave 1's targets minus the receipts, or the simulator's accepts differ
#                 from the recorded ones. Small runs: add --short-interval and WORKER_ARGS="--count-ahead 30s"
#   --morning     a whole morning, end to end (implies --wave2): instead of apns-sim, `paperboy-bench fleet`
#                 (an APNs simulator whose devices answer as the demo's fleet model says: about two thirds run the
#                 push, 20 s after it at the median, at most 120 s) posts each receipt to a `paperboy serve`
#                 (--no-dispatch, --rate-limit off) over HTTP, one request per device, with the app's device API
#                 key (made with `paperboy apps add-key`); no receipt is inserted by SQL and no ANALYZE is run.
#                 The morning's publication points at origin content-api (the capacity), the second broadcast's
#                 at origin wire-api (2000/s): another origin's broadcast beside it. `paperboy broadcast status`
#                 of each broadcast is polled every 10 s all along (its latency is reported). Wave 2 is counted
#                 once the fleet has posted every receipt due (its status file says none pending); with
#                 --short-interval it is then due count-ahead + 60 s later, else at its interval (the wave
#                 interval then allows for receipts at RECEIPT_RATE, default 1500/s, and the run stops when they
#                 are not in 30 s before the count). Reported besides: sends per minute of each wave against
#                 its plan, receipts posted per minute and their lag, the status polls, serve's and the fleet's
#                 CPU and RSS, PostgreSQL's CPU per 1,000 deliveries over the whole morning and the database's
#                 size. Needs BENCH_BIN (default .build-release/release/paperboy-bench) and curl.
#   --receipt-connections N  with --morning: receipt requests in flight at most (default 32)
#   --same-origin with --wave2: the second publication points at content-api too (the morning's origin, at the
#                 capacity), so both broadcasts share it; reported: the busiest second at the simulator (both
#                 broadcasts) against the origin's capacity (the promise: at most 1.10 x)
#   --second-after D  with --wave2: the second broadcast starts D after the first (during wave 1) instead of 60 s
#                 before wave 2's count
#   --wave-interval D  with --wave2: this wave interval instead (at least 20m, the CLI's minimum)
#   --short-interval   with --wave2: once the receipts are in, rewrite the stored broadcast's waveInterval
#                 (broadcasts.plan) so that wave 2 is due count-ahead + 60 s later: a DATABASE
#                 SHORTCUT for small runs, whose window is far below the CLI's 20-minute minimum
#   --second-devices N  with --wave2: the second broadcast's devices (default 20 per second of its window)
#   --second-window D   with --wave2: the second broadcast's window (default count-ahead + 300 s)
#   --stall KIND  one fault during wave 1, --stall-for long, --stall-at after wave 1's planned start:
#                 sigstop   worker w1 paused with SIGSTOP, then SIGCONT
#                 sigkill   worker w1 killed with SIGKILL and not restarted (needs --workers 2): its batches
#                           wait for their leases to lapse (--lease, 30 s by default); --stall-for is unused
#                 restart   worker w1 SIGTERMed (it drains and must exit 0), started again (as w1r) once
#                           --stall-for has passed since the SIGTERM
#                 pg        PostgreSQL stopped (pg_ctl stop -m fast) and started again on the same data
#                           directory, port and options (postmaster.opts), as the directory's owner
#                 apns      the simulator SIGTERMed (it prints its stats, exits 0; connections refused
#                           meanwhile) and started again on the same port: its two runs' per-second counts are
#                           joined (placement to ±0.5 s)
#                 apns-sigstop  the simulator paused with SIGSTOP (connections hang), then SIGCONT
#                 Reported: the busiest second from the stall's start on and overall, each / the plan's rate
#                 (goal ≤ 1.10), the seconds around the stall, the status counts (every target sent?), and
#                 the accepts at the simulator beyond those recorded (duplicates, or fateUnknown accepts)
#   --stall-at D  when, after wave 1's planned start (default 40 % of the window, also with --stop-after: at
#                 10,000,000 devices and 10,000/s pass e.g. --stall-at 60s, or the run lasts 400 s + the rest)
#   --stall-for D how long (default 10s)
#   --stop-after D  with --stall: stop wave 1 D after the stall ended (sigkill, which has no end: after its begin
#                 + the workers' --lease, when its batches are taken over; WORKER_ARGS' --lease, else the
#                 worker's default) instead of waiting for the whole wave (about 900 s at 10,000,000 devices and
#                 10,000/s): the broadcast is cancelled (`paperboy broadcast cancel`); the workers see it at
#                 their next lease renewal (a third of the lease) and record their held batches, the rest of
#                 each as skipped (cancelled); the script waits until none of its batches is held, at most
#                 max(40 s, the lease + 10 s), and a batch still held then fails the run (the counts would be
#                 incomplete). The report says STOPPED EARLY and when; its rates and the busiest second from the
#                 stall on cover the full seconds before the cancel's second (that second and the sends in flight
#                 after it until the workers saw the cancel are reported apart, not counted); "sent S of P
#                 before the workers stopped" replaces "every target sent"; skips as cancelled do not fail the
#                 run; the simulator's accepts are compared with the recorded ones as without it, and fewer than
#                 recorded fail the run. Stall, stop and the wave's end must be due in that order: --stall-at +
#                 --stall-for (sigkill: the lease) + D below the window. Choose D long enough for the catch-up
#                 after the stall, e.g. 120s
#   env: PAPERBOY_BIN (default .build-release/release/paperboy), BENCH_KEEP=DIR (keep the logs there, and the statements' dumps
#        statements-wave1.json and statements-morning.json for scripts/statement-families.py: set it for long runs),
#        WORKER_LOG_LEVEL (the workers' LOG_LEVEL, default warning, notice with --wave2; debug logs every
#        batch's timings), WORKER_ARGS (more `paperboy worker` flags, e.g. "--max-batch 2000"; for experiments)
# Any failed step (a command, a status request outside a PostgreSQL stall, a worker or the simulator
# exiting, a simulator rejection, wave 1 or 2 not done within a bound derived from its window, with
# --stop-after a batch still held after the cancel) makes the script exit non-zero; when the broadcast ran,
# the numbers are printed first.
set -euo pipefail
shopt -s inherit_errexit
cd "$(dirname "$0")/.."

usage() { awk 'NR > 1 && /^#/ {sub(/^# ?/, ""); print; next} NR > 1 {exit}' "$0"; }
bad() { echo "bench-broadcast: $*" >&2; exit 2; }
# Whole seconds of a duration such as 30s, 5m, 1h or 90.
seconds_of() {
    [[ "$2" =~ ^([0-9]+)([hms]?)$ ]] || bad "$1: '$2' is not a duration such as 30s or 5m"
    local n=$((10#${BASH_REMATCH[1]}))
    case "${BASH_REMATCH[2]}" in h) echo $((n * 3600)) ;; m) echo $((n * 60)) ;; *) echo "$n" ;; esac
}

devices=100000 window=5m workers="" unpaced=0 json=0 capacity="" reuse=0
wave2=0 wave_interval="" short_interval=0 second_devices="" second_window="" morning=0 receipt_connections=32
same_origin=0 second_after="" watch=0
stall="" stall_at="" stall_for=10s stop_after=""
while [ $# -gt 0 ]; do
    case "$1" in
        --devices) devices=${2:?--devices needs a number}; shift 2 ;;
        --window) window=${2:?--window needs a duration}; shift 2 ;;
        --workers) workers=${2:?--workers needs a number}; shift 2 ;;
        --unpaced) unpaced=1; shift ;;
        --capacity) capacity=${2:?--capacity needs a rate such as 10000/s}; shift 2 ;;
        --reuse) reuse=1; shift ;;
        --json) json=1; shift ;;
        --wave2) wave2=1; shift ;;
        --morning) morning=1; wave2=1; shift ;;
        --watch) watch=1; shift ;;
        --receipt-connections) receipt_connections=${2:?--receipt-connections needs a number}; shift 2 ;;
        --same-origin) same_origin=1; shift ;;
        --second-after) second_after=${2:?--second-after needs a duration}; shift 2 ;;
        --wave-interval) wave_interval=${2:?--wave-interval needs a duration}; shift 2 ;;
        --short-interval) short_interval=1; shift ;;
        --second-devices) second_devices=${2:?--second-devices needs a number}; shift 2 ;;
        --second-window) second_window=${2:?--second-window needs a duration}; shift 2 ;;
        --stall) stall=${2:?--stall needs a kind: sigstop, sigkill, restart, pg, apns, apns-sigstop}; shift 2 ;;
        --stall-at) stall_at=${2:?--stall-at needs a duration}; shift 2 ;;
        --stall-for) stall_for=${2:?--stall-for needs a duration}; shift 2 ;;
        --stop-after) stop_after=${2:?--stop-after needs a duration}; shift 2 ;;
        -h | --help) usage; exit 0 ;;
        *) bad "unknown argument '$1' (see --help)" ;;
    esac
done
[[ "$devices" =~ ^[1-9][0-9]*$ ]] || bad "--devices: '$devices' is not a positive integer"
[[ "$receipt_connections" =~ ^[1-9][0-9]*$ ]] || bad "--receipt-connections: '$receipt_connections' is not a positive integer"
if [ -z "$workers" ]; then
    workers=1
    if [ "$wave2" = 1 ] || [ -n "$stall" ]; then workers=2; fi
fi
[[ "$workers" =~ ^[1-9][0-9]*$ ]] || bad "--workers: '$workers' is not a positive integer"
window_s=$(seconds_of --window "$window")
[ "$window_s" -ge 1 ] || bad "--window: '$window' is not a duration such as 30s or 5m"
if [ -n "$capacity" ]; then
    [[ "$capacity" =~ ^([1-9][0-9]*)(/s)?$ ]] || bad "--capacity: '$capacity' is not a rate such as 10000/s"
    capacity=${BASH_REMATCH[1]}
    window_s=$(( (devices + capacity - 1) / capacity ))
fi
[ "$unpaced" = 1 ] && window_s=0
if [ "$wave2" = 0 ]; then
    [ -z "$wave_interval" ] && [ "$short_interval" = 0 ] || bad "--wave-interval and --short-interval go with --wave2"
fi
[ -z "$second_devices" ] || [[ "$second_devices" =~ ^[1-9][0-9]*$ ]] || bad "--second-devices: '$second_devices' is not a positive integer"
if [ "$wave2" = 0 ]; then
    [ "$same_origin" = 0 ] && [ -z "$second_after" ] || bad "--same-origin and --second-after go with --wave2 (or --morning)"
fi
second_after_s=""
[ -z "$second_after" ] || second_after_s=$(seconds_of --second-after "$second_after")
second_window_s=""
if [ -n "$second_window" ]; then
    second_window_s=$(seconds_of --second-window "$second_window")
    [ "$second_window_s" -ge 60 ] || bad "--second-window: at least 60s"
fi
interval_s=""
if [ -n "$wave_interval" ]; then
    interval_s=$(seconds_of --wave-interval "$wave_interval")
    [ "$interval_s" -ge 1200 ] || bad "--wave-interval: at least 20m (the CLI's minimum; --short-interval shortens it in the database)"
fi
case "$stall" in
    "" | sigstop | restart | pg | apns | apns-sigstop) ;;
    sigkill) [ "$workers" -ge 2 ] || bad "--stall sigkill needs --workers 2 (nobody else would take the batches over)" ;;
    *) bad "--stall: '$stall' is not one of sigstop, sigkill, restart, pg, apns, apns-sigstop" ;;
esac
stall_for_s=$(seconds_of --stall-for "$stall_for")
[ -z "$stall_at" ] || stall_at_s=$(seconds_of --stall-at "$stall_at")
if [ -n "$stall" ] || [ "$wave2" = 1 ]; then
    [ "$unpaced" = 0 ] || bad "--stall and --wave2 need a paced broadcast (not --unpaced)"
fi
[ -z "$stall" ] || [ "$wave2" = 0 ] || bad "--stall and --wave2: one at a time"
if [ -n "$stall" ]; then
    [ -n "$stall_at" ] || stall_at_s=$(( window_s * 2 / 5 ))
    [ "$stall_at_s" -lt "$window_s" ] || bad "--stall-at ${stall_at_s}s is not within wave 1's ${window_s}s window"
    [ "$stall_for_s" -ge 1 ] || bad "--stall-for: at least 1s"
fi
stop_after_s=""
if [ -n "$stop_after" ]; then
    [ -n "$stall" ] || bad "--stop-after goes with --stall"
    stop_after_s=$(seconds_of --stop-after "$stop_after")
    [ "$stop_after_s" -ge 1 ] || bad "--stop-after: at least 1s"
fi
worker_log_level=${WORKER_LOG_LEVEL:-warning}
if [ "$wave2" = 1 ]; then
    worker_log_level=${WORKER_LOG_LEVEL:-notice}
    case "$worker_log_level" in trace | debug | info | notice) ;; *) bad "--wave2 reads the workers' notice \"wave started\": WORKER_LOG_LEVEL=$worker_log_level hides it" ;; esac
fi

B=${PAPERBOY_BIN:-.build-release/release/paperboy}
[ -x "$B" ] || { echo "bench-broadcast: no $B: build it with swift build -c release --scratch-path .build-release --product paperboy" >&2; exit 1; }
: "${DATABASE_URL:?run me under scripts/with-postgres.sh or set DATABASE_URL}"
for tool in python3 openssl psql; do command -v "$tool" >/dev/null || { echo "bench-broadcast: needs $tool" >&2; exit 1; }; done
BENCH=${BENCH_BIN:-.build-release/release/paperboy-bench}
if [ "$morning" = 1 ]; then
    [ -x "$BENCH" ] || { echo "bench-broadcast: --morning needs $BENCH: build it with swift build -c release --scratch-path .build-release --product paperboy-bench" >&2; exit 1; }
    command -v curl >/dev/null || { echo "bench-broadcast: --morning needs curl" >&2; exit 1; }
fi
# --wave2: a worker with --count-ahead counts a follow-up wave's audience that long before the wave's start
# (WORKER_ARGS' value, else the worker's default); one without counts at the start (0).
count_ahead_s=0
if [ "$wave2" = 1 ]; then
    worker_help=$("$B" worker --help 2>&1 | tr '\n' ' ') || bad "$B worker --help failed"
    if [[ "$worker_help" == *"--count-ahead <duration>"* ]]; then
        ca=""
        set -- ${WORKER_ARGS:-}
        while [ $# -gt 0 ]; do
            case "$1" in --count-ahead) ca=${2:-}; shift ;; --count-ahead=*) ca=${1#*=} ;; esac
            shift
        done
        if [ -z "$ca" ]; then
            rest=${worker_help##*--count-ahead <duration>}
            [[ "$rest" =~ \(default:\ ([^\)]*)\) ]] || bad "cannot read the worker's default --count-ahead from its --help"
            ca=${BASH_REMATCH[1]}
        fi
        count_ahead_s=$(seconds_of --count-ahead "$ca")
    fi
    # The second broadcast starts 60 s before the count is due and lasts until 4 min after wave 2's start, at
    # 20 sends a second unless told otherwise.
    [ -n "$second_window_s" ] || second_window_s=$(( count_ahead_s + 300 ))
    [ -n "$second_devices" ] || second_devices=$(( second_window_s * 20 ))
fi
# --stop-after: the workers' lease (WORKER_ARGS' --lease, else the worker's default): a SIGKILLed worker's
# batches are taken over at most that long after its death, and the workers see a cancel within a third of it.
lease_s=""
if [ -n "$stop_after_s" ]; then
    worker_help=$("$B" worker --help 2>&1 | tr '\n' ' ') || bad "$B worker --help failed"
    lease=""
    # shellcheck disable=SC2086 # WORKER_ARGS is a list of flags
    set -- ${WORKER_ARGS:-}
    while [ $# -gt 0 ]; do
        case "$1" in --lease) lease=${2:-}; shift ;; --lease=*) lease=${1#*=} ;; esac
        shift
    done
    if [ -z "$lease" ]; then
        rest=${worker_help##*--lease <duration>}
        [[ "$rest" =~ \(default:\ ([^\)]*)\) ]] || bad "cannot read the worker's default --lease from its --help"
        lease=${BASH_REMATCH[1]}
    fi
    lease_s=$(seconds_of --lease "$lease")
fi
# --stop-after: due D after the stall's end (sigkill: its begin + the lease), after wave 1's planned start.
stop_due_s() { echo $(( stall_at_s + $(if [ "$stall" = sigkill ]; then echo "$lease_s"; else echo "$stall_for_s"; fi) + stop_after_s )); }
stop_late() { echo "--stop-after ${stop_after_s}s: the stop would be due $(stop_due_s) s after wave 1's planned start (--stall-at + $(if [ "$stall" = sigkill ]; then echo "the ${lease_s} s lease"; else echo "--stall-for"; fi) + ${stop_after_s} s), not within its ${window_s}s window: leave --stop-after out, or pass an earlier --stall-at"; }
if [ -n "$stop_after_s" ] && [ "$reuse" = 0 ]; then
    [ "$(stop_due_s)" -lt "$window_s" ] || bad "$(stop_late)"
fi

say() { echo "bench-broadcast: $*" >&2; }
die() { say "error: $*"; exit 1; }
now() { date +%s.%N; }
now_ms() { date +%s%3N; }
# One statement; ON_ERROR_STOP, unaligned tuples only. Callers add `|| die`.
q() { psql -X -Atq -v ON_ERROR_STOP=1 -c "$1"; }
uuid_ok() { [[ "$1" =~ ^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$ ]]; }

tmp=$(mktemp -d /tmp/paperboy-bench-broadcast-XXXXXX)
: > "$tmp/meta.txt"
meta() { printf '%s=%s\n' "$1" "$2" >> "$tmp/meta.txt"; }
meta morning "$morning"
sim="" sim_runs=0 endpoint=""
# --morning: `paperboy serve` and the status poller (stopped by cleanup when the run fails).
serve_pid="" poller_pid="" api_url=""
# --watch: the two serves, the status poller and the console's stream reader.
watch_status_pid="" watch_console_pid="" watch_poller_pid="" watch_live_pid=""
wpids=() wnames=() paused=() pg_down=0
# Workers that exited during the run: "name pid peakRSSkB cputicks exitstatus".
: > "$tmp/retired.txt"
cleanup() {
    local status=$? pid
    for pid in "${paused[@]}"; do kill -CONT "$pid" 2>/dev/null || true; done
    if [ "$pg_down" = 1 ]; then pg_start || say "could not start PostgreSQL again"; fi
    local watchers="$watch_status_pid $watch_console_pid $watch_poller_pid $watch_live_pid"
    for pid in "${wpids[@]}" $sim $serve_pid $poller_pid $watchers; do [ "$pid" = 0 ] || kill "$pid" 2>/dev/null || true; done
    for pid in "${wpids[@]}" $sim $serve_pid $poller_pid $watchers; do
        [ "$pid" != 0 ] || continue
        for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
    done
    wait 2>/dev/null || true
    if [ -n "${BENCH_KEEP:-}" ]; then mkdir -p "$BENCH_KEEP" && cp -r "$tmp"/. "$BENCH_KEEP"/ && say "logs kept in $BENCH_KEEP"; fi
    if [ $status -ne 0 ] && [ -z "${BENCH_KEEP:-}" ]; then
        for f in "$tmp"/*.log "$tmp"/sim*.err; do [ -s "$f" ] && { say "--- tail of $(basename "$f")"; tail -5 "$f" >&2; }; done
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

# The simulator, a separate process, on port $1 (0: any free one); its first line on standard output is
# `apns-sim listening on URL`. Each run's output file and launch/listening times go to sim-runs.txt.
start_sim() {
    sim_runs=$((sim_runs + 1))
    local out="$tmp/sim$sim_runs.out" err="$tmp/sim$sim_runs.err" launch url=""
    launch=$(now)
    if [ "$morning" = 1 ]; then
        "$BENCH" fleet --port "$1" --key-file "$tmp/key.p8" --key-id KEY1234567 --api "$api_url" --api-keys "$tmp/api-keys.txt" \
            --connections "$receipt_connections" --status-file "$tmp/fleet-status.json" --json > "$out" 2> "$err" &
    else
        "$B" apns-sim --port "$1" --key-file "$tmp/key.p8" --key-id KEY1234567 --no-record --json > "$out" 2> "$err" &
    fi
    sim=$!
    for _ in $(seq 200); do
        url=$(sed -n '1s/^apns-sim listening on \(http[^ ]*\).*$/\1/p' "$out" 2>/dev/null || true)
        [ -n "$url" ] && break
        kill -0 "$sim" 2>/dev/null || die "apns-sim exited: $(cat "$err")"
        sleep 0.1
    done
    [ -n "$url" ] || die "apns-sim did not print its address within 20 s"
    echo "$out $launch $(now)" >> "$tmp/sim-runs.txt"
    endpoint=$url
}
# SIGTERM: the simulator prints its stats and must exit 0.
stop_sim() {
    local rc=0
    kill -TERM "$sim"
    wait_exit "$sim" 30 || rc=$?
    [ "$rc" = 0 ] || die "apns-sim did not exit cleanly ($rc): $(tail -3 "$tmp/sim$sim_runs.err")"
    sim=""
}

# Worker slot $1 (0-based) as name $2.
start_worker() {
    LOG_LEVEL=$worker_log_level "$B" worker --apns-endpoint "$endpoint" --worker-name "$2" ${WORKER_ARGS:-} > "$tmp/$2.log" 2>&1 &
    wpids[$1]=$!
    wnames[$1]=$2
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
peak_rss_kb() { awk '/^VmHWM/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }

# 1. Database, app, publication, fleet.
openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null | openssl pkcs8 -topk8 -nocrypt -out "$tmp/key.p8"
: > "$tmp/setup.log"
if [ "$reuse" = 1 ]; then
    # psql interpolates :'key' only in statements it reads, not in -c.
    echo "UPDATE apps SET key_reference = :'key', key_id = 'KEY1234567', team_id = 'TEAM123456' WHERE id = 1" \
        | psql -X -q -v ON_ERROR_STOP=1 -v key="$tmp/key.p8" >/dev/null || die "--reuse: cannot point app 1 at this run's key"
    ids=$(q "SELECT id FROM broadcasts WHERE state IN ('planned', 'running')") || die "--reuse: cannot list the running broadcasts"
    for id in $ids; do
        "$B" broadcast cancel "$id" >> "$tmp/setup.log" 2>&1 || die "cancelling running broadcast $id failed: $(tail -3 "$tmp/setup.log")"
    done
    targets=$(q "SELECT count(*) FROM devices d JOIN publications p ON p.app_id = d.app_id AND p.slug = 'morning' WHERE d.app_id = 1 AND d.environment = 0 AND d.active AND d.auto_download AND p.id = ANY (d.subscriptions)") \
        || die "--reuse: cannot count the targets"
    say "--reuse: $targets targets in the database (--devices $devices)"
    devices=$targets
    [ "$devices" -gt 0 ] || die "--reuse: no targets of publication morning in app 1"
    if [ -n "$capacity" ]; then window_s=$(( (devices + capacity - 1) / capacity )); fi
    seed_s=0
    if [ -n "$stall" ]; then
        [ -n "$stall_at" ] || stall_at_s=$(( window_s * 2 / 5 ))
        [ "$stall_at_s" -lt "$window_s" ] || die "--stall-at ${stall_at_s}s is not within wave 1's ${window_s}s window"
        [ -z "$stop_after_s" ] || [ "$(stop_due_s)" -lt "$window_s" ] || die "$(stop_late)"
    fi
else
    "$B" migrate >> "$tmp/setup.log" 2>&1 || die "paperboy migrate failed: $(tail -3 "$tmp/setup.log")"
    "$B" apps add --bundle-id com.example.news --team-id TEAM123456 --key-id KEY1234567 --key-file "$tmp/key.p8" \
        >> "$tmp/setup.log" 2>&1 || die "apps add failed: $(tail -3 "$tmp/setup.log")"
    "$B" publications add morning --app 1 >> "$tmp/setup.log" 2>&1 || die "publications add failed: $(tail -3 "$tmp/setup.log")"
    say "seeding $devices devices"
    seed_start=$(now)
    "$B" devices seed --app 1 --publication morning --count "$devices" >> "$tmp/setup.log" 2>&1 \
        || die "devices seed failed: $(tail -3 "$tmp/setup.log")"
    seed_s=$(python3 -c "print(f'{$(now) - $seed_start:.1f}')")
    say "seeded in ${seed_s}s"
fi
# --wave2: the second broadcast's app, publication and devices (added once; kept with --reuse).
if [ "$wave2" = 1 ]; then
    app2=$(q "SELECT id FROM apps WHERE bundle_id = 'com.example.second'") || die "cannot look for app com.example.second"
    if [ -z "$app2" ]; then
        "$B" apps add --bundle-id com.example.second --team-id TEAM123456 --key-id KEY1234567 --key-file "$tmp/key.p8" --json \
            > "$tmp/app2.json" 2>> "$tmp/setup.log" || die "apps add (second) failed: $(tail -3 "$tmp/setup.log")"
        app2=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["id"])' "$tmp/app2.json")
    else
        echo "UPDATE apps SET key_reference = :'key', key_id = 'KEY1234567', team_id = 'TEAM123456' WHERE id = $app2" \
            | psql -X -q -v ON_ERROR_STOP=1 -v key="$tmp/key.p8" >/dev/null || die "cannot point app $app2 at this run's key"
    fi
    has=$(q "SELECT count(*) FROM publications WHERE app_id = $app2 AND slug = 'second'") || die "cannot look for publication second"
    if [ "$has" = 0 ]; then
        "$B" publications add second --app "$app2" >> "$tmp/setup.log" 2>&1 || die "publications add second failed: $(tail -3 "$tmp/setup.log")"
    fi
    "$B" devices seed --app "$app2" --publication second --count "$second_devices" --seed 2 >> "$tmp/setup.log" 2>&1 \
        || die "devices seed (second) failed: $(tail -3 "$tmp/setup.log")"
    second_targets=$(q "SELECT count(*) FROM devices d JOIN publications p ON p.app_id = d.app_id AND p.slug = 'second' WHERE d.app_id = $app2 AND d.environment = 0 AND d.active AND d.auto_download AND p.id = ANY (d.subscriptions)") \
        || die "cannot count the second publication's targets"
    [ "$second_targets" -gt 0 ] || die "no targets for the second broadcast"
    say "second broadcast: app $app2 (com.example.second), $second_targets devices"
fi
# --morning and --same-origin: the origins (the second publication's is content-api with --same-origin).
origin_capacity=""
if [ "$morning" = 1 ] || [ "$same_origin" = 1 ]; then
    origin_capacity=${capacity:-$(( (devices + window_s - 1) / window_s ))}
    for pair in "content-api:$origin_capacity" "wire-api:2000"; do
        name=${pair%%:*} cap=${pair#*:}
        "$B" origins add "$name" --capacity "$cap/s" >> "$tmp/setup.log" 2>&1 || "$B" origins set "$name" --capacity "$cap/s" >> "$tmp/setup.log" 2>&1 \
            || die "origins add/set $name failed: $(tail -3 "$tmp/setup.log")"
    done
    second_origin=wire-api
    [ "$same_origin" = 0 ] || second_origin=content-api
    "$B" publications set-origin morning --app 1 --origin content-api >> "$tmp/setup.log" 2>&1 || die "publications set-origin morning failed: $(tail -3 "$tmp/setup.log")"
    "$B" publications set-origin second --app "$app2" --origin "$second_origin" >> "$tmp/setup.log" 2>&1 || die "publications set-origin second failed: $(tail -3 "$tmp/setup.log")"
    say "origins: morning on content-api (${origin_capacity}/s), second on $second_origin"
    meta originCapacity "$origin_capacity"; meta sameOrigin "$same_origin"
fi
# `paperboy serve` without dispatch, scheduler or rate limit on a free port, with the caller's DATABASE_URL,
# PAPERBOY_ADMIN_TOKEN and console tokens; its log in $tmp/$1.log, its pid in the variable named $2 as soon as it
# starts (cleanup stops it), its URL in started_url once it is ready (else the run stops).
start_serve() {
    local port
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    started_url="http://127.0.0.1:$port"
    LOG_LEVEL=warning "$B" serve --port "$port" --no-dispatch --no-scheduler --rate-limit off > "$tmp/$1.log" 2>&1 &
    printf -v "$2" '%s' "$!"
    for _ in $(seq 300); do
        curl -sf "$started_url/health/ready" >/dev/null 2>&1 && return 0
        kill -0 "${!2}" 2>/dev/null || die "paperboy serve ($1.log) exited: $(tail -5 "$tmp/$1.log")"
        sleep 0.1
    done
    die "paperboy serve ($1.log) not ready within 30 s: $(tail -5 "$tmp/$1.log")"
}
# --morning: the apps' device API keys and `paperboy serve` (the API only) on a free port.
if [ "$morning" = 1 ]; then
    : > "$tmp/api-keys.txt"
    chmod 600 "$tmp/api-keys.txt"
    for pair in "1:com.example.news" "$app2:com.example.second"; do
        "$B" apps add-key --app "${pair%%:*}" --json > "$tmp/key.json" 2>> "$tmp/setup.log" || die "apps add-key --app ${pair%%:*} failed: $(tail -3 "$tmp/setup.log")"
        echo "${pair#*:} $(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["apiKey"])' "$tmp/key.json")" >> "$tmp/api-keys.txt"
        rm -f "$tmp/key.json"
    done
    PAPERBOY_ADMIN_TOKEN=$(openssl rand -hex 16) start_serve serve serve_pid
    api_url=$started_url
    say "--morning: paperboy serve on $api_url"
fi
# --watch: two more `paperboy serve`, each connecting as a role of its own so that pg_stat_statements tells their
# statements apart: bench_status answers the status polls, bench_console serves the console (and samples for it).
if [ "$watch" = 1 ]; then
    command -v curl >/dev/null || die "--watch needs curl"
    admin_token=$(openssl rand -hex 16) viewer_token=$(openssl rand -hex 16)
    watch_url() { python3 -c 'import sys, urllib.parse as u; p = u.urlsplit(sys.argv[1]); h = p.netloc.rsplit("@", 1)[-1]
print(u.urlunsplit(p._replace(netloc=sys.argv[2] + "@" + h)))' "$DATABASE_URL" "$1"; }
    for role in bench_status bench_console; do
        q "DO \$\$ BEGIN CREATE ROLE $role LOGIN SUPERUSER; EXCEPTION WHEN duplicate_object THEN NULL; END \$\$" >/dev/null \
            || die "--watch: cannot create role $role"
    done
    DATABASE_URL=$(watch_url bench_status) PAPERBOY_ADMIN_TOKEN=$admin_token start_serve serve-status watch_status_pid
    status_url=$started_url
    DATABASE_URL=$(watch_url bench_console) PAPERBOY_ADMIN_TOKEN=$admin_token PAPERBOY_CONSOLE_VIEWER_TOKEN=$viewer_token \
        start_serve serve-console watch_console_pid
    console_url=$started_url
    say "--watch: status through $status_url, the console on $console_url"
fi
[ "$reuse" = 1 ] || psql -X -q -c 'VACUUM ANALYZE' >/dev/null 2>&1 || true

# 2. The simulator.
start_sim 0
sim_port=${endpoint##*:}

# 3. The edition(s): deadline 3 h ahead. With --reuse, an issue date no simulated day has.
publish() { # $1 publication, $2 app, $3 output file; prints the edition's id
    local issue_date
    issue_date=$(date +%F)
    if [ "$reuse" = 1 ]; then
        issue_date=$(python3 -c "import datetime; print(datetime.date(2100, 1, 1) + datetime.timedelta(days=int('$(q 'SELECT count(*) FROM editions')')))")
    fi
    python3 - "$tmp/edition-$1.json" "$issue_date" "$1" <<'EOF'
import datetime, json, sys
deadline = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=3)).replace(microsecond=0)
bundle = lambda tier: {"url": f"https://cdn.example.com/bench/{sys.argv[3]}/{tier}-1.zip", "bytes": 1048576, "sha256": "ab" * 32}
edition = {"publication": sys.argv[3], "issueDate": sys.argv[2], "deadline": deadline.isoformat(),
           "tiers": {tier: {"bundles": [bundle(tier)]} for tier in ("small", "medium", "large")},
           "pages": [{"number": 1, "title": "Front page"}, {"number": 2, "title": "Business"}]}
json.dump(edition, open(sys.argv[1], "w"))
EOF
    "$B" editions publish "$tmp/edition-$1.json" --app "$2" --json > "$3" 2>> "$tmp/setup.log" || die "editions publish ($1) failed: $(cat "$3"; tail -3 "$tmp/setup.log")"
    python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["id"])' "$3"
}
edition=$(publish morning 1 "$tmp/edition.out")
if [ "$wave2" = 1 ]; then edition2=$(publish second "$app2" "$tmp/edition2.out"); fi

# 4. The workers.
for i in $(seq 0 $((workers - 1))); do start_worker "$i" "w$((i + 1))"; done
sleep 2
for i in $(seq 0 $((workers - 1))); do
    kill -0 "${wpids[$i]}" 2>/dev/null || die "worker ${wnames[$i]} exited: $(tail -5 "$tmp/${wnames[$i]}.log")"
done

# 5. The broadcast; planning cost = until `paperboy broadcast` returns (target count and the plan's insert).
if [ "$unpaced" = 1 ]; then pace=(--capacity 10000000/s); elif [ -n "$capacity" ]; then pace=(--capacity "$capacity/s"); else pace=(--window "${window_s}s"); fi
extra=(--max-pushes 1)
if [ "$wave2" = 1 ]; then
    # Receipts estimated at 30,000 rows/s (with ANALYZE); wave 2's audience is counted (--count-ahead before
    # its start) 2 min after them at the earliest.
    if [ -z "$interval_s" ]; then
        receipt_rate=30000
        # --morning: the receipts come over HTTP, up to 120 s after the last push, at RECEIPT_RATE at most.
        if [ "$morning" = 1 ]; then receipt_rate=${RECEIPT_RATE:-1500}; window_s_receipts=120; else window_s_receipts=0; fi
        [[ "$receipt_rate" =~ ^[1-9][0-9]*$ ]] || bad "RECEIPT_RATE: '$receipt_rate' is not a positive integer"
        interval_s=$(( ( (window_s + window_s_receipts + devices * 2 / 3 / receipt_rate + count_ahead_s + 120 + 59) / 60 ) * 60 ))
        [ "$interval_s" -ge 1200 ] || interval_s=1200
    fi
    extra=(--max-pushes 2 --wave-interval "${interval_s}s")
fi
say "broadcasting edition $edition to $devices devices with $workers worker(s), ${pace[*]} ${extra[*]}"
busy_ticks() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8}' /proc/stat; }
# PostgreSQL's CPU: the postmaster, its live children, and (cutime + cstime) the children it has reaped.
pg_data=$(q 'SHOW data_directory' 2>/dev/null || true)
pg_pid=$(head -1 "$pg_data/postmaster.pid" 2>/dev/null || echo 0)
pg_ticks() {
    [ "$pg_pid" != 0 ] || { echo 0; return; }
    # A process may exit between the glob and cat: cat then fails, which is no error here.
    { cat /proc/[0-9]*/stat 2>/dev/null || true; } | awk -v p="$pg_pid" '$1 == p {s += $14 + $15 + $16 + $17} $4 == p {s += $14 + $15} END {print s + 0}'
}
# One line: time, the machine's busy ticks, then pid and ticks of the simulator and of PostgreSQL, then per
# worker slot pid, ticks and peak RSS (kB). A pid changes when a process is restarted; 0 when there is none.
sample() {
    local line pid
    line="$(now) $(busy_ticks) ${sim:-0} $(if [ -n "$sim" ]; then cpu_ticks "$sim"; else echo 0; fi) $pg_pid $(pg_ticks)"
    for pid in "${wpids[@]}"; do
        if [ "$pid" != 0 ]; then line+=" $pid $(cpu_ticks "$pid") $(peak_rss_kb "$pid")"; else line+=" 0 0 0"; fi
    done
    echo "$line" >> "$tmp/samples.txt"
}
: > "$tmp/samples.txt"
t0=$(now)
sample
"$B" broadcast --edition "$edition" "${pace[@]}" --cohorts 16 "${extra[@]}" --jitter 1s --json > "$tmp/start.json" 2> "$tmp/start.err" \
    || die "paperboy broadcast failed: $(cat "$tmp/start.err")"
t1=$(now)
# pg_stat_statements (scripts/with-postgres.sh loads it when postgresql-contrib is installed): every statement's
# cost from here on, read after wave 1 (and after the morning) and summed by family (scripts/statement-families.py).
statements=0
if [ "$(q "SELECT count(*) FROM pg_extension WHERE extname = 'pg_stat_statements'" 2>/dev/null || echo 0)" = 1 ]; then
    q 'SELECT pg_stat_statements_reset()' >/dev/null || die "cannot reset pg_stat_statements"
    statements=1
    meta pgTicksReset "$(pg_ticks)"
fi
dump_statements() { # $1: the file; one JSON array of this database's statements since the reset
    [ "$statements" = 1 ] || return 0
    q "SELECT coalesce(json_agg(json_build_object('calls', calls, 'exec_ms', total_exec_time, 'plan_ms', total_plan_time, 'rows', rows, 'query', query)), '[]')
        FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())" > "$1" \
        || die "cannot read pg_stat_statements"
}
bid=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["id"])' "$tmp/start.json")
uuid_ok "$bid" || die "paperboy broadcast printed no broadcast id: $(cat "$tmp/start.json")"
wave1_start=$(q "SELECT extract(epoch FROM starts_at) FROM broadcast_waves WHERE broadcast_id = '$bid' AND wave = 1") \
    || die "cannot read wave 1's start"
[ -n "$wave1_start" ] || die "broadcast $bid has no wave 1"
meta t0 "$t0"; meta t1 "$t1"; meta bid "$bid"; meta wave1Start "$wave1_start"
# --morning: `broadcast status` of each broadcast every 10 s, all along: "start end exitstatus id" a line.
if [ "$morning" = 1 ]; then
    meta busyTicks0 "$(busy_ticks)"; meta pgTicks0 "$(pg_ticks)"
    : > "$tmp/status-polls.txt"
    (
        while :; do
            for id in "$bid" $(cat "$tmp/bid2" 2>/dev/null || true); do
                a=$(now) rc=0
                timeout 300 "$B" broadcast status "$id" --json > "$tmp/poll-$id.json" 2>> "$tmp/status-polls.err" || rc=$?
                echo "$a $(now) $rc $id" >> "$tmp/status-polls.txt"
            done
            sleep 10
        done
    ) &
    poller_pid=$!
fi

# --watch: the status every 2 s ("start http-code seconds" a line), and one console open on the broadcast's page.
watch_roles() { # $1: the file; per role (bench_status, bench_console) its statements since the reset, costliest first
    [ "$statements" = 1 ] || return 0
    q "SELECT coalesce(json_object_agg(rolname, s), '{}') FROM (SELECT r.rolname, json_agg(json_build_object('calls', p.calls,
            'ms', p.total_exec_time + p.total_plan_time, 'query', left(regexp_replace(p.query, '\s+', ' ', 'g'), 160))
            ORDER BY p.total_exec_time + p.total_plan_time DESC) AS s
        FROM pg_stat_statements p JOIN pg_roles r ON r.oid = p.userid
        WHERE r.rolname IN ('bench_status', 'bench_console') AND p.dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
        GROUP BY r.rolname) x" > "$1" || die "--watch: cannot read pg_stat_statements by role"
}
if [ "$watch" = 1 ]; then
    meta watchStart "$(now)"
    : > "$tmp/watch-status.txt"
    (
        while :; do
            a=$(now)
            r=$(curl -s -o /dev/null -m 60 -w '%{http_code} %{time_total}' -H "Authorization: Bearer $admin_token" \
                "$status_url/v1/broadcasts/$bid" 2>/dev/null) || true
            echo "$a ${r:-000 0}" >> "$tmp/watch-status.txt"
            sleep 2
        done
    ) &
    watch_poller_pid=$!
    curl -sf -c "$tmp/console-cookies.txt" -o /dev/null --data-urlencode "token=$viewer_token" --data-urlencode "name=bench" \
        "$console_url/console/sign-in" || die "--watch: the console's sign-in failed"
    curl -sf -b "$tmp/console-cookies.txt" -o "$tmp/console-page.html" "$console_url/console/broadcasts/$bid" \
        || die "--watch: the console's broadcast page failed"
    (
        # The stream ends after its lifetime; the browser reconnects, and so does this loop.
        while :; do
            curl -sN -b "$tmp/console-cookies.txt" "$console_url/console/broadcasts/$bid/live" >> "$tmp/console-live.txt" 2>> "$tmp/console-live.err" || true
            sleep 1
        done
    ) &
    watch_live_pid=$!
fi

# 6. Stalls (--stall): injected from the polling loop below, which runs every 0.25 s.
pg_as=() pg_bin="" pg_opts="" pg_log=""
pg_prepare() {
    [ -n "$pg_data" ] && [ -r "$pg_data/postmaster.opts" ] || die "--stall pg: cannot read PostgreSQL's data directory (SHOW data_directory gave '$pg_data'); it must be a local cluster this user can manage"
    pg_bin=$(dirname "$(readlink "/proc/$pg_pid/exe")")
    [ -x "$pg_bin/pg_ctl" ] || die "--stall pg: no pg_ctl beside the postmaster ($pg_bin)"
    local owner; owner=$(stat -c %U "$pg_data")
    if [ "$(id -un)" != "$owner" ]; then
        [ "$(id -u)" = 0 ] || die "--stall pg: run me as $owner (the data directory's owner) or as root"
        pg_as=(runuser -u "$owner" --)
    fi
    # postmaster.opts: the server's command line; everything after the binary goes back to pg_ctl -o.
    pg_opts=$(cut -d' ' -f2- "$pg_data/postmaster.opts")
    pg_log="$(dirname "$pg_data")/server.log"
    [ -e "$pg_log" ] || pg_log="$pg_data/bench-broadcast-restart.log"
}
pg_stop() { (cd / && "${pg_as[@]}" "$pg_bin/pg_ctl" -D "$pg_data" -m fast -w -t 60 stop) >> "$tmp/pg-stall.log" 2>&1; }
pg_start() { (cd / && "${pg_as[@]}" "$pg_bin/pg_ctl" -D "$pg_data" -l "$pg_log" -w -t 60 -o "$pg_opts" start) >> "$tmp/pg-stall.log" 2>&1; }
[ "$stall" != pg ] || pg_prepare

stall_phase=none stall_begin="" stall_end="" grace_until_ms=0
if [ -n "$stall" ]; then
    stall_phase=pending
    stall_due_ms=$(python3 -c "print(int(($wave1_start + $stall_at_s) * 1000))")
fi
retire() { # slot, exit status: after its process exited; peak RSS and ticks read just before
    echo "${wnames[$1]} ${wpids[$1]} $2 $3 $4" >> "$tmp/retired.txt"
}
stall_begin_now() {
    local pid=${wpids[0]} rc=0 hwm ticks
    stall_begin=$(now)
    case "$stall" in
        sigstop) kill -STOP "$pid" || die "stall: SIGSTOP to ${wnames[0]} failed"; paused=("$pid") ;;
        sigkill)
            hwm=$(peak_rss_kb "$pid"); ticks=$(cpu_ticks "$pid")
            kill -KILL "$pid" || die "stall: SIGKILL to ${wnames[0]} failed"
            wait_exit "$pid" 10 || rc=$?
            [ "$rc" = 137 ] || die "stall: ${wnames[0]} did not die of SIGKILL ($rc)"
            retire 0 "$hwm" "$ticks" "$rc"; wpids[0]=0 ;;
        restart)
            hwm=$(peak_rss_kb "$pid"); ticks=$(cpu_ticks "$pid")
            kill -TERM "$pid" || die "stall: SIGTERM to ${wnames[0]} failed"
            wait_exit "$pid" 120 || rc=$?
            [ "$rc" = 0 ] || die "stall: ${wnames[0]} did not drain and exit 0 within 120 s of SIGTERM ($rc): $(tail -5 "$tmp/${wnames[0]}.log")"
            retire 0 "$hwm" "$ticks" "$rc"; wpids[0]=0 ;;
        pg) grace_until_ms=$(( $(now_ms) + (stall_for_s + 60) * 1000 )); pg_down=1
            pg_stop || die "stall: pg_ctl stop failed: $(tail -5 "$tmp/pg-stall.log")"
            pg_pid=0 ;;
        apns) stop_sim ;;
        apns-sigstop) kill -STOP "$sim" || die "stall: SIGSTOP to apns-sim failed"; paused=("$sim") ;;
    esac
    say "stall $stall began $(python3 -c "print(f'{$stall_begin - $wave1_start:+.1f}')") s after wave 1's planned start"
}
stall_end_now() {
    case "$stall" in
        sigstop) kill -CONT "${wpids[0]}" || die "stall: SIGCONT to ${wnames[0]} failed"; paused=() ;;
        restart) start_worker 0 w1r ;;
        pg) pg_start || die "stall: PostgreSQL did not start again: $(tail -5 "$tmp/pg-stall.log")"
            pg_down=0; pg_pid=$(head -1 "$pg_data/postmaster.pid"); grace_until_ms=$(( $(now_ms) + 20000 )) ;;
        apns) start_sim "$sim_port"; [ "${endpoint##*:}" = "$sim_port" ] || die "stall: apns-sim came back on another port ($endpoint)" ;;
        apns-sigstop) kill -CONT "$sim" || die "stall: SIGCONT to apns-sim failed"; paused=() ;;
    esac
    stall_end=$(now)
    say "stall $stall ended $(python3 -c "print(f'{$stall_end - $wave1_start:+.1f}')") s after wave 1's planned start"
}
stall_tick() {
    local t
    t=$(now_ms)
    if [ "$stall_phase" = pending ] && [ "$t" -ge "$stall_due_ms" ]; then
        stall_begin_now
        if [ "$stall" = sigkill ]; then stall_end=$stall_begin; stall_phase=done; else stall_phase=active; fi
        stall_end_due_ms=$(python3 -c "print(int(($stall_begin + $stall_for_s) * 1000))")
    elif [ "$stall_phase" = active ] && [ "$t" -ge "$stall_end_due_ms" ]; then
        stall_end_now
        stall_phase=done
    fi
}

# The processes that must be running (a paused one counts; one being restarted does not).
check_alive() {
    local i
    for i in "${!wpids[@]}"; do
        [ "${wpids[$i]}" = 0 ] || kill -0 "${wpids[$i]}" 2>/dev/null || die "worker ${wnames[$i]} exited during the broadcast: $(tail -5 "$tmp/${wnames[$i]}.log")"
    done
    [ -z "$sim" ] || kill -0 "$sim" 2>/dev/null || die "apns-sim exited during the broadcast: $(tail -5 "$tmp/sim$sim_runs.err")"
    [ -z "$serve_pid" ] || kill -0 "$serve_pid" 2>/dev/null || die "paperboy serve exited during the broadcast: $(tail -5 "$tmp/serve.log")"
}
# `broadcast status` of $1 into $2 within $3 s (default 60); non-zero when it failed (the old file stays).
status_of() { timeout "${3:-60}" "$B" broadcast status "$1" --json > "$2.new" 2> "$tmp/status.err" && mv "$2.new" "$2"; }
# After the receipts, broadcast $bid's state, waves and whether wave 2 finished, read from its tables: `broadcast
# status` counts its receipts per wave with one deliveries probe per receipt (RequestStatements.
# receiptsPerCohort), millions at 10 M devices, too heavy to poll while the recount and wave 2 are measured.
poll_waves() {
    local line
    check_alive
    line=$(q "SELECT b.state, count(w.wave), coalesce(bool_or(w.wave = 2 AND w.finished_at IS NOT NULL), false)
        FROM broadcasts b LEFT JOIN broadcast_waves w ON w.broadcast_id = b.id WHERE b.id = '$bid' GROUP BY b.state") \
        || die "cannot read broadcast $bid's waves"
    IFS='|' read -r state nwaves w2done <<< "$line"
    [ "$state" != planned ] || state=running
    if [ "$w2done" = t ]; then w2done=1; else w2done=0; fi
}
# "state wave1-finished waves wave2-finished waveInterval" of a status file.
summary() {
    python3 - "$1" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
w = {x["wave"]: x for x in s.get("waves", [])}
done = lambda n: "1" if n in w and w[n].get("finishedAt") else "0"
print(s["state"], done(1), len(w), done(2), s.get("options", {}).get("waveInterval", 0))
EOF
}
# One status of broadcast $bid: polled=1 and state, w1done, nwaves, w2done, interval_seen set, or polled=0
# during a PostgreSQL stall; any other failure is fatal.
failure=""
state=running w1done=0 nwaves=0 w2done=0 interval_seen=0
poll_status() {
    local line
    polled=0
    check_alive
    # While PostgreSQL is down `broadcast status` does not fail: it waits for a connection (until timeout).
    if [ "$pg_down" = 1 ]; then return 0; fi
    if status_of "$bid" "$tmp/status.json"; then
        line=$(summary "$tmp/status.json") || die "cannot read the status of broadcast $bid: $(head -c 300 "$tmp/status.json")"
        read -r state w1done nwaves w2done interval_seen <<< "$line"
        polled=1
    elif [ "$(now_ms)" -le "$grace_until_ms" ]; then
        say "status failed during the PostgreSQL stall (expected): $(tail -1 "$tmp/status.err")"
    else
        die "paperboy broadcast status failed: $(cat "$tmp/status.err")"
    fi
}

# --stop-after: cancels broadcast $bid (stopped=1, stop_at just before the cancel, stop_cancelled when it
# returned). When the cancel fails because wave 1 completed meanwhile, stopped stays 0 and state is completed.
stopped=0 stop_due_ms="" stop_from="" stop_at="" stop_cancelled=""
stop_now() {
    stop_at=$(now)
    if "$B" broadcast cancel "$bid" >> "$tmp/setup.log" 2>&1; then
        stop_cancelled=$(now); stopped=1
        say "--stop-after ${stop_after_s}s: broadcast $bid cancelled $(python3 -c "print(f'{$stop_at - $wave1_start:+.1f}')") s after wave 1's planned start"
        return 0
    fi
    status_of "$bid" "$tmp/status.json" || die "cancelling broadcast $bid failed: $(tail -3 "$tmp/setup.log"); then its status failed: $(cat "$tmp/status.err")"
    state=$(summary "$tmp/status.json" | cut -d' ' -f1)
    [ "$state" = completed ] || die "cancelling broadcast $bid failed ($state): $(tail -3 "$tmp/setup.log")"
    say "--stop-after ${stop_after_s}s: not stopped, wave 1 completed just before the stop"
    stop_at=""
}

# The second broadcast (--wave2): its edition over --second-window, one push a device.
start_second() {
    "$B" broadcast --edition "$edition2" --window "${second_window_s}s" --cohorts 16 --max-pushes 1 --jitter 1s --json \
        > "$tmp/start2.json" 2> "$tmp/start2.err" || die "paperboy broadcast (second) failed: $(cat "$tmp/start2.err")"
    bid2=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["id"])' "$tmp/start2.json")
    uuid_ok "$bid2" || die "paperboy broadcast (second) printed no broadcast id: $(cat "$tmp/start2.json")"
    echo "$bid2" > "$tmp/bid2"
    second_start=$(q "SELECT extract(epoch FROM starts_at) FROM broadcast_waves WHERE broadcast_id = '$bid2' AND wave = 1") || die "cannot read the second broadcast's start"
    say "second broadcast $bid2: $second_targets devices over ${second_window_s} s, planned from $(python3 -c "print(f'{$second_start - $wave1_start:+.1f}')") s of wave 1's planned start"
    meta bid2 "$bid2"; meta secondStart "$second_start"; meta secondWindow "$second_window_s"; meta secondTargets "$second_targets"
}
bid2=""
second_due_ms=""
[ -z "$second_after_s" ] || second_due_ms=$(python3 -c "print(int(($t0 + $second_after_s) * 1000))")

# 7. Wave 1: poll until it is finished (the broadcast completed, or its wave 1 finished with --wave2), at
# most the window + max(120 s, 10 %) (+ the stall + 90 s; unpaced: max(600 s, 1 s per 5,000 devices); --morning:
# the window + max(120 s, the window)).
# --stop-after: or until D after the stall's end (sigkill: its begin + the lease), when it is cancelled.
if [ "$unpaced" = 1 ]; then slack=$(( devices / 5000 > 600 ? devices / 5000 : 600 )); else slack=$(( window_s / 10 > 120 ? window_s / 10 : 120 )); fi
# --morning: the receipts share the machine with the sends; wave 1 may take up to twice its window (its lateness,
# minute by minute, is the result).
[ "$morning" = 0 ] || slack=$(( window_s > 120 ? window_s : 120 ))
[ -z "$stall" ] || slack=$(( slack + stall_for_s + 90 ))
limit_ms=$(python3 -c "print(int(($wave1_start + $window_s + $slack) * 1000))")
next_poll=0
while :; do
    stall_tick
    t=$(now_ms)
    if [ -n "$second_due_ms" ] && [ -z "$bid2" ] && [ "$t" -ge "$second_due_ms" ]; then start_second; fi
    if [ -n "$stop_after_s" ] && [ "$stall_phase" = "done" ]; then
        if [ -z "$stop_due_ms" ]; then
            stop_from=$stall_end
            [ "$stall" != sigkill ] || stop_from=$(python3 -c "print($stall_begin + $lease_s)")
            stop_due_ms=$(python3 -c "print(int(($stop_from + $stop_after_s) * 1000))")
        fi
        if [ "$t" -ge "$stop_due_ms" ]; then stop_now; break; fi
    fi
    if [ "$t" -ge "$next_poll" ]; then
        next_poll=$((t + 2000))
        poll_status
        if [ "$polled" = 1 ]; then
            sample
            case "$state" in running | completed) ;; *) failure="broadcast $bid ended $state before wave 1 was sent"; break ;; esac
            # Wave 1 is over when it is finished (every batch recorded): with one push a device the broadcast then
            # still counts wave 1's pushes towards dormancy before it completes (measured apart, below).
            if [ "$state" != running ] || [ "$w1done" = 1 ]; then break; fi
        fi
    fi
    if [ "$t" -gt "$limit_ms" ]; then
        failure="wave 1 of broadcast $bid not sent within its window + ${slack} s ($(( window_s + slack )) s after its planned start): $state"
        break
    fi
    sleep 0.25
done
t_done=$(now)
if [ "$stall_phase" = active ]; then stall_end_now; stall_phase=done; fi
# --stop-after: the workers see the cancel at their next lease renewal and record their held batches (the
# devices not sent yet as skipped, cancelled); wait until none of the broadcast's batches is held.
if [ "$stopped" = 1 ]; then
    drain_limit_s=$(( lease_s + 10 > 40 ? lease_s + 10 : 40 ))
    held=""
    while :; do
        check_alive
        held=$(q "SELECT count(*) FROM broadcast_batches WHERE broadcast_id = '$bid' AND done_at IS NULL AND lease_expires_at > now()") \
            || die "cannot count broadcast $bid's held batches"
        [ "$held" != 0 ] || break
        python3 -c "import sys; sys.exit(0 if $(now) < $stop_cancelled + $drain_limit_s else 1)" || break
        sleep 0.5
    done
    drain_s=$(python3 -c "print(round($(now) - $stop_cancelled, 1))")
    line=$(q "SELECT count(*), coalesce(sum(devices), 0) FROM broadcast_batches WHERE broadcast_id = '$bid' AND done_at IS NULL") \
        || die "cannot count broadcast $bid's unrecorded batches"
    IFS='|' read -r unrecorded unrecorded_devices <<< "$line"
    if [ "$held" = 0 ]; then
        say "--stop-after: the workers recorded their batches ${drain_s} s after the cancel ($unrecorded batches of $unrecorded_devices devices never recorded, their leases lapsed)"
    elif [ -z "$failure" ]; then
        failure="--stop-after: $held batches of broadcast $bid still held ${drain_s} s after the cancel: the recorded counts are incomplete"
    fi
    meta drainSeconds "$drain_s"; meta heldAfterDrain "$held"; meta unrecordedBatches "$unrecorded"; meta unrecordedDevices "$unrecorded_devices"
fi
if [ -n "$stop_after_s" ]; then
    meta stopAfter "$stop_after_s"; meta stopped "$stopped"; meta stopFrom "$stop_from"; meta stopAt "$stop_at"
    meta stopCancelled "$stop_cancelled"; meta lease "$lease_s"
fi
if [ "$stall_phase" = pending ] && [ -z "$failure" ]; then failure="wave 1 ended before the stall was due (--stall-at ${stall_at_s}s)"; fi
if [ -n "$failure" ]; then
    say "$failure; batches not done, and cohorts with keys left:"
    q "SELECT 'batch ' || id || ' cohort ' || cohort || ' devices ' || devices || ' owner ' || lease_owner || ' leases ' || leases
            || ' lease expires in ' || round(extract(epoch FROM lease_expires_at - now())::numeric, 1) || ' s'
        FROM broadcast_batches WHERE broadcast_id = '$bid' AND done_at IS NULL ORDER BY id" >&2 || say "(cannot read the batches)"
    q "SELECT 'cohort ' || cohort || ' planned ' || planned || ' sent ' || sent || ' keys left ' || (end_key - next_key)
        FROM broadcast_cohorts WHERE broadcast_id = '$bid' AND wave = 1 AND (next_key < end_key OR sent < planned) ORDER BY cohort" >&2 || say "(cannot read the cohorts)"
fi
sample
if [ "$statements" = 1 ]; then
    meta pgTicksWave1 "$(pg_ticks)"
    dump_statements "$tmp/statements-wave1.json"
    [ "$watch" = 0 ] || { meta watchWave1At "$(now)"; watch_roles "$tmp/watch-wave1.json"; }
    meta wave1Deliveries "$(q "SELECT count(*) FROM deliveries WHERE broadcast_id = '$bid' AND wave = 1")"
fi
status_of "$bid" "$tmp/status.json" || die "paperboy broadcast status failed: $(cat "$tmp/status.err")"
cp "$tmp/status.json" "$tmp/status-wave1.json"
meta tDone "$t_done"
# Wave 1's pushes are counted towards dormancy after the wave (migration 0029): a broadcast of one push a device
# completes once they are counted. Wait for that (at most 120 s + 30 s per million devices) and measure it apart:
# its seconds and PostgreSQL's CPU meanwhile. (A binary older than 0029 counted them in every batch: completed here.)
if [ "$wave2" = 0 ] && [ -z "$failure" ] && [ -z "$stop_after_s" ] && [ "$state" = running ]; then
    count_t0=$(now); count_ticks0=$(pg_ticks)
    count_limit_ms=$(python3 -c "print(int(($count_t0 + 120 + 30 * $devices / 1e6) * 1000))")
    while :; do
        poll_status
        [ "$polled" = 0 ] || [ "$state" = running ] || break
        if [ "$(now_ms)" -gt "$count_limit_ms" ]; then
            failure="broadcast $bid still $state $(python3 -c "print(round($(now) - $count_t0))") s after wave 1 was recorded: wave 1's pushes not counted towards dormancy"
            break
        fi
        sleep 1
    done
    meta countStart "$count_t0"; meta countEnd "$(now)"; meta pgTicksCount0 "$count_ticks0"; meta pgTicksCount1 "$(pg_ticks)"
    say "wave 1's pushes counted towards dormancy in $(python3 -c "print(round($(now) - $count_t0, 1))") s after wave 1 was recorded; the broadcast is $state"
fi
if [ -n "$stall" ]; then
    meta stall "$stall"; meta stallAt "$stall_at_s"; meta stallFor "$stall_for_s"
    meta stallBegin "${stall_begin:-}"; meta stallEnd "${stall_end:-}"
fi

# 8. --wave2: receipts, wave 2 and the second broadcast.
if [ "$wave2" = 1 ] && [ -z "$failure" ]; then
    line=$(python3 -c 'import json, sys; c = json.load(open(sys.argv[1]))["waves"][0]["counts"]; print(c["planned"], c["accepted"])' "$tmp/status-wave1.json") \
        || die "cannot read wave 1's counts"
    read -r w1planned w1accepted <<< "$line"
    if [ "$morning" = 1 ]; then
        # The devices post their receipts through serve as they run: wait until the fleet has none pending
        # (each is due at most 120 s after its push), at most 150 s + 1 s per 300 wave-1 pushes.
        say "wave 1 sent ($w1accepted of $w1planned accepted); waiting for the fleet's receipts (over HTTP, through paperboy serve)"
        r0=$(now)
        receipts_limit=$(python3 -c "print($r0 + 150 + $w1accepted / 300)")
        polls=0
        while :; do
            check_alive
            # One python a poll (this loop shares the cores with what it measures): accepted, pending, posted, and
            # whether the limit has passed.
            line=$(python3 -c 'import json, sys, time; s = json.load(open(sys.argv[1])); print(s["accepted"], s["pending"], s["posted"], int(time.time() > float(sys.argv[2])))' \
                "$tmp/fleet-status.json" "$receipts_limit" 2>/dev/null || echo "0 1 0 0")
            read -r f_accepted f_pending f_posted f_late <<< "$line"
            [ "$f_accepted" -lt "$w1accepted" ] || [ "$f_pending" != 0 ] || break
            [ "$f_late" = 0 ] || die "the fleet still had $f_pending receipts pending at $(date +%T), more than 150 s + 1 s per 300 pushes after wave 1 (accepted $f_accepted, posted $f_posted)"
            polls=$((polls + 1))
            [ $((polls % 15)) != 0 ] || say "receipts: $f_posted posted, $f_pending pending"
            sleep 2
        done
        r1=$(now)
        receipts=$(q "SELECT count(*) FROM receipts WHERE edition_id = '$edition' AND result <> 'failed'") || die "cannot count the receipts"
        [ "$receipts" -gt 0 ] || die "no receipts of edition $edition arrived"
        r2=$r1
        say "receipts in $(python3 -c "print(f'{$r1 - $wave1_start:.0f}')") s after wave 1's planned start ($(python3 -c "print(f'{$r1 - $r0:.1f}')") s after wave 1 was sent): $receipts that keep their device out of wave 2 (newData); no ANALYZE"
    else
    say "wave 1 sent ($w1accepted of $w1planned accepted); BENCHMARK SHORTCUT: receipts (newData) for two thirds of wave 1's accepted deliveries (device_id % 3 <> 0) in one INSERT … SELECT with psql, then ANALYZE receipts (devices report through the API one by one)"
    r0=$(now)
    out=$(psql -X -v ON_ERROR_STOP=1 -c "INSERT INTO receipts (device_id, edition_id, result, bytes, seconds)
        SELECT device_id, '$edition', 'newData', 1048576, 2.5 FROM deliveries
        WHERE broadcast_id = '$bid' AND wave = 1 AND outcome = 'accepted' AND device_id % 3 <> 0
        ON CONFLICT DO NOTHING" 2>&1) || die "inserting the receipts failed: $out"
    [[ "$out" =~ INSERT\ 0\ ([0-9]+) ]] || die "unexpected answer to the receipts' INSERT: $out"
    receipts=${BASH_REMATCH[1]}
    [ "$receipts" -gt 0 ] || die "the receipts' INSERT inserted nothing"
    r1=$(now)
    q "ANALYZE receipts" || die "ANALYZE receipts failed"
    r2=$(now)
    say "$receipts receipts in $(python3 -c "print(f'{$r1 - $r0:.1f}')") s, ANALYZE $(python3 -c "print(f'{$r2 - $r1:.1f}')") s"
    fi
    interval_used=$interval_s
    if [ "$short_interval" = 1 ]; then
        interval_used=$(python3 -c "import math; print(math.ceil($r2 + $count_ahead_s + 60 - $wave1_start))")
        out=$(psql -X -v ON_ERROR_STOP=1 -c "UPDATE broadcasts SET plan = jsonb_set(plan, '{waveInterval}', to_jsonb($interval_used::float8))
            WHERE id = '$bid' AND state = 'running'" 2>&1) || die "rewriting the wave interval failed: $out"
        [ "$out" = "UPDATE 1" ] || die "rewriting the wave interval: $out (the broadcast is no longer running?)"
        # Once: the status decodes the stored options as the workers do (at 10 M this status takes a while).
        status_of "$bid" "$tmp/status.json" 600 || die "paperboy broadcast status failed: $(cat "$tmp/status.err")"
        interval_seen=$(summary "$tmp/status.json" | cut -d' ' -f5)
        python3 -c "import sys; sys.exit(0 if abs(float('$interval_seen') - $interval_used) < 0.001 else 1)" \
            || die "the status shows waveInterval $interval_seen after the rewrite, not $interval_used"
        say "DATABASE SHORTCUT: the stored broadcast's waveInterval rewritten from ${interval_s} s to ${interval_used} s (wave 2 due count-ahead ${count_ahead_s} s + 60 s after the receipts; the CLI's minimum is 20 min)"
    fi
    due=$(python3 -c "print($wave1_start + $interval_used)")
    python3 -c "import sys; sys.exit(0 if $due >= $r2 + 59.5 and $due - $count_ahead_s >= $r2 + 29.5 else 1)" \
        || die "the receipts were in $(python3 -c "print(f'{$r2 - $wave1_start:.0f}')") s after wave 1's start: less than a minute before wave 2 is due ($interval_used s), or less than 30 s before its audience is counted (count-ahead ${count_ahead_s} s); rerun with a longer --wave-interval (or --short-interval)"
    meta receiptsInserted "$receipts"; meta receiptsSeconds "$(python3 -c "print($r1 - $r0)")"; meta analyzeSeconds "$(python3 -c "print($r2 - $r1)")"
    meta receiptsDone "$r2"; meta intervalRequested "$interval_s"; meta intervalUsed "$interval_used"; meta shortInterval "$short_interval"
    meta wave2Due "$due"; meta w1planned "$w1planned"; meta w1accepted "$w1accepted"; meta countAhead "$count_ahead_s"

    # The second broadcast, 60 s before wave 2's audience is due to be counted; meanwhile the processes are watched.
    if [ -z "$bid2" ]; then
        start2_ms=$(python3 -c "print(int(($due - $count_ahead_s - 60) * 1000))")
        while [ "$(now_ms)" -lt "$start2_ms" ]; do
            poll_waves
            [ "$state" = running ] || die "broadcast $bid is $state before wave 2"
            [ "$nwaves" = 1 ] || die "wave 2 started before it was due"
            sleep 2
        done
        start_second
    fi

    # Wave 2: started within max(300 s, 1 s per 20,000 devices) of its planned start; sent within its
    # window + max(120 s, 10 %); then 30 s more of the second broadcast.
    recount_bound=$(( devices / 20000 > 300 ? devices / 20000 : 300 ))
    start_limit_ms=$(python3 -c "print(int(($due + $recount_bound) * 1000))")
    w2_seen="" w2_done="" w2_limit_ms=0 state2=running polls=0 count_first="" count_last="" count_most=0
    # The audience count, seen in pg_stat_activity every 0.5 s: the statement CohortRepository.counts runs, or
    # CohortRepository.recordMembers since migration 0021 (it records the members as it counts).
    count_sql="SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid() AND (query LIKE 'SELECT %, count(*) FROM devices d WHERE %' OR query LIKE 'WITH recorded AS (%')"
    while :; do
        polls=$((polls + 1))
        n=$(q "$count_sql") || die "cannot read pg_stat_activity"
        if [ "$n" -gt 0 ]; then
            t=$(now); [ -n "$count_first" ] || count_first=$t; count_last=$t
            q "SELECT '$t', pid, client_port, now() - query_start, left(query, 100) FROM pg_stat_activity WHERE state = 'active'
                AND pid <> pg_backend_pid() AND (query LIKE 'SELECT %, count(*) FROM devices d WHERE %' OR query LIKE 'WITH recorded AS (%')" >> "$tmp/counts-seen.txt" || true
            [ "$n" -le "$count_most" ] || count_most=$n
        fi
        if [ $((polls % 2)) = 1 ]; then sleep 0.5; continue; fi
        poll_waves
        [ "$state" = running ] || [ "$state" = completed ] || { failure="broadcast $bid ended $state during wave 2"; break; }
        t=$(now_ms)
        if [ "$state" = completed ] && [ "$nwaves" -lt 2 ]; then failure="broadcast $bid completed without a wave 2"; break; fi
        if [ -z "$w2_seen" ] && [ "$nwaves" -ge 2 ]; then
            w2_seen=$(now)
            line=$(q "SELECT planned, rate, window_seconds FROM broadcast_waves WHERE broadcast_id = '$bid' AND wave = 2") || die "cannot read wave 2"
            IFS='|' read -r w2_planned w2_rate w2_window_stored <<< "$line"
            # Its stored window: a follow-up wave keeps wave 1's cohort slots, so it spans wave 1's window, not
            # planned / rate.
            w2_window=$(python3 -c "print(int(max(float('${w2_window_stored:-0}' or 0), $w2_planned / $w2_rate if $w2_rate > 0 else 0)) + 1)")
            w2_limit_ms=$(python3 -c "print(int(($w2_seen + $w2_window + max(120, $w2_window / 10)) * 1000))")
            say "wave 2 seen $(python3 -c "print(f'{$w2_seen - $due:+.1f}')") s after its planned start: $w2_planned devices at $w2_rate/s"
        fi
        if [ -z "$w2_seen" ] && [ "$t" -gt "$start_limit_ms" ]; then failure="wave 2 not started ${recount_bound} s after its planned start"; break; fi
        if [ -n "$w2_seen" ] && [ -z "$w2_done" ] && { [ "$w2done" = 1 ] || [ "$state" = completed ]; }; then w2_done=$(now); fi
        if [ -n "$w2_seen" ] && [ -z "$w2_done" ] && [ "$t" -gt "$w2_limit_ms" ]; then failure="wave 2 not sent within its window + slack"; break; fi
        if [ $((polls % 10)) = 0 ]; then
            status_of "$bid2" "$tmp/status2.json" || die "paperboy broadcast status (second) failed: $(cat "$tmp/status.err")"
            state2=$(summary "$tmp/status2.json" | cut -d' ' -f1)
            case "$state2" in running | completed) ;; *) failure="the second broadcast ended $state2"; break ;; esac
        fi
        if [ -n "$w2_done" ] && python3 -c "import sys; sys.exit(0 if $(now) >= $w2_seen + 30 else 1)"; then break; fi
        sleep 0.5
    done
    for id in "$bid" "$bid2"; do
        status_of "$id" "$tmp/final-$id.json" 600 || die "paperboy broadcast status failed: $(cat "$tmp/status.err")"
        if [ "$(summary "$tmp/final-$id.json" | cut -d' ' -f1)" = running ]; then
            "$B" broadcast cancel "$id" >> "$tmp/setup.log" 2>&1 || die "cancelling broadcast $id failed: $(tail -3 "$tmp/setup.log")"
            say "cancelled broadcast $id"
        fi
    done
    sleep 2
    status_of "$bid" "$tmp/status.json" 600 || die "paperboy broadcast status failed: $(cat "$tmp/status.err")"
    status_of "$bid2" "$tmp/status2.json" 600 || die "paperboy broadcast status failed: $(cat "$tmp/status.err")"
    meta wave2Seen "${w2_seen:-}"; meta wave2Done "${w2_done:-}"
    meta countFirstSeen "$count_first"; meta countLastSeen "$count_last"; meta countMostAtOnce "$count_most"
fi

# 9. Peak RSS and CPU just before stopping; SIGTERM the workers (they drain and exit 0), then the simulator.
worker_stats=()
for i in "${!wpids[@]}"; do
    pid=${wpids[$i]}
    [ "$pid" != 0 ] || continue
    worker_stats+=("${wnames[$i]}:$i:$(peak_rss_kb "$pid"):$(cpu_ticks "$pid")")
done
# --morning: the whole morning's CPU (from the broadcast's start), serve's and the fleet's, the database's size.
if [ "$morning" = 1 ]; then
    [ -z "$poller_pid" ] || { kill "$poller_pid" 2>/dev/null || true; wait "$poller_pid" 2>/dev/null || true; poller_pid=""; }
    meta tEnd "$(now)"; meta busyTicks1 "$(busy_ticks)"; meta pgTicks1 "$(pg_ticks)"
    dump_statements "$tmp/statements-morning.json"
    meta serveTicks "$(cpu_ticks "$serve_pid")"; meta serveRSS "$(peak_rss_kb "$serve_pid")"
    meta fleetTicks "$(cpu_ticks "$sim")"; meta fleetRSS "$(peak_rss_kb "$sim")"
    meta dbBytes "$(q "SELECT pg_database_size(current_database())")"
fi
# --watch: the watchers stop with the workers; each role's statements and the serves' CPU are read first.
if [ "$watch" = 1 ]; then
    for pid in $watch_poller_pid $watch_live_pid; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
    watch_poller_pid="" watch_live_pid=""
    meta watchEnd "$(now)"
    watch_roles "$tmp/watch-end.json"
    meta watchStatusTicks "$(cpu_ticks "$watch_status_pid")"; meta watchConsoleTicks "$(cpu_ticks "$watch_console_pid")"
    for pid in $watch_status_pid $watch_console_pid; do kill -TERM "$pid" 2>/dev/null || true; wait_exit "$pid" 30 || true; done
    watch_status_pid="" watch_console_pid=""
fi
worker_rcs=()
for pid in "${wpids[@]}"; do [ "$pid" = 0 ] || kill -TERM "$pid" 2>/dev/null || true; done
for pid in "${wpids[@]}"; do [ "$pid" = 0 ] && continue; rc=0; wait_exit "$pid" 60 || rc=$?; worker_rcs+=("$rc"); done
wpids=()
stop_sim

# --wave2: what the database says about wave 2 and the second broadcast (after the workers stopped).
if [ "$wave2" = 1 ] && [ -n "${bid2:-}" ]; then
    q "SELECT extract(epoch FROM starts_at), planned, rate, window_seconds FROM broadcast_waves WHERE broadcast_id = '$bid' AND wave = 2" \
        > "$tmp/wave2.txt" || die "cannot read wave 2"
    q "SELECT extract(epoch FROM sent_at) FROM deliveries WHERE broadcast_id = '$bid' AND wave = 2 AND outcome <> 'notSent' ORDER BY sent_at LIMIT 1" \
        > "$tmp/wave2-first.txt" || die "cannot read wave 2's first push"
    # A follow-up's cohort slots end where wave 1's did (shifted by the interval), so its first slot can start
    # well after the wave's planned start: the recount is late only if the first push is late for that slot.
    q "SELECT extract(epoch FROM min(starts_at)) FROM broadcast_cohorts WHERE broadcast_id = '$bid' AND wave = 2 AND planned > 0" \
        > "$tmp/wave2-first-slot.txt" || die "cannot read wave 2's first cohort slot"
    q "SELECT floor(extract(epoch FROM sent_at))::bigint AS s, count(*) FROM deliveries WHERE broadcast_id = '$bid' AND wave = 2 AND outcome <> 'notSent' GROUP BY 1 ORDER BY 1" \
        > "$tmp/wave2-seconds.txt" || die "cannot read wave 2's sends per second"
    q "SELECT extract(epoch FROM sent_at) FROM deliveries WHERE broadcast_id = '$bid2' AND outcome <> 'notSent' ORDER BY sent_at" \
        > "$tmp/second-sends.txt" || die "cannot read the second broadcast's sends"
    grep -h "wave started" "$tmp"/w*.log > "$tmp/wave-started.txt" 2>/dev/null || true
fi
# --morning: each wave's sends per minute from its planned start, and the deliveries recorded.
if [ "$morning" = 1 ]; then
    kill -TERM "$serve_pid" 2>/dev/null || true
    wait_exit "$serve_pid" 30 || say "paperboy serve did not exit within 30 s of SIGTERM"
    serve_pid=""
    q "SELECT d.wave, floor(extract(epoch FROM d.sent_at - w.starts_at) / 60)::int, count(*) FROM deliveries d
        JOIN broadcast_waves w ON w.broadcast_id = d.broadcast_id AND w.wave = d.wave
        WHERE d.broadcast_id = '$bid' AND d.outcome <> 'notSent' GROUP BY 1, 2 ORDER BY 1, 2" > "$tmp/per-minute.txt" \
        || die "cannot read the sends per minute"
    q "SELECT wave, extract(epoch FROM starts_at), planned, rate, window_seconds FROM broadcast_waves WHERE broadcast_id = '$bid' ORDER BY wave" \
        > "$tmp/waves.txt" || die "cannot read the waves"
    q "SELECT count(*) FROM deliveries WHERE broadcast_id IN ('$bid', '${bid2:-$bid}')" > "$tmp/deliveries.txt" || die "cannot count the deliveries"
fi
# --morning, --same-origin: both broadcasts' sends per second as the workers recorded them (deliveries.sent_at),
# beside the simulator's count (which a loaded simulator answers in bursts).
if [ -n "$origin_capacity" ]; then
    q "SELECT floor(extract(epoch FROM sent_at))::bigint, count(*) FROM deliveries WHERE broadcast_id IN ('$bid', '${bid2:-$bid}')
        AND outcome <> 'notSent' GROUP BY 1 ORDER BY 1" > "$tmp/sent-seconds.txt" || die "cannot read the sends per second"
fi

python3 - "$tmp" "$devices" "$workers" "$window_s" "$unpaced" "$json" "$(getconf CLK_TCK)" "$seed_s" "$state" \
    "${worker_stats[*]:-}" "${worker_rcs[*]:-}" "$failure" <<'EOF'
import datetime, json, math, os, re, sys
(tmp, devices, workers, window_s, unpaced, as_json, hz, seed_s, state, worker_stats, worker_rcs, failure) = sys.argv[1:]
devices, workers, window_s, unpaced, as_json, hz = int(devices), int(workers), int(window_s), unpaced == "1", as_json == "1", int(hz)
meta = dict(line.rstrip("\n").split("=", 1) for line in open(f"{tmp}/meta.txt") if "=" in line)
num = lambda key: float(meta[key]) if meta.get(key) else None
t0, t1, t_done, wave1_start = num("t0"), num("t1"), num("tDone"), num("wave1Start")
failures = [failure] if failure else []
# --stop-after: the broadcast was cancelled at stop_at, before wave 1 was sent (None: not stopped).
stopped = meta.get("stopped") == "1"
stop_at = num("stopAt") if stopped else None

def when(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()

# The simulator's runs (two with --stall apns): each run's accepts per second, placed on the first run's
# seconds. startedAt is printed to the second (truncated); the simulator started between its launch and its
# first line. Its first line appeared (polled every 0.1 s) just after it started: the best estimate, kept
# within startedAt's second.
runs = []
for line in open(f"{tmp}/sim-runs.txt"):
    out, launch, listening = line.split()
    text = open(out).read().split("\n", 1)
    stats = json.loads(text[1])
    started = when(stats["startedAt"])
    runs.append((stats, min(max(started, float(listening) - 0.05), started + 0.999)))
sim, sim_start = runs[0]
bins = []
accepted_sim, rejected_sim = 0, {}
for stats, start in runs:
    offset = round(start - sim_start)
    for i, n in enumerate(stats["acceptsPerSecond"]):
        k = i + offset
        if k >= len(bins): bins.extend([0] * (k - len(bins) + 1))
        bins[k] += n
    accepted_sim += stats["accepted"]
    for reason, n in stats.get("rejected", {}).items(): rejected_sim[reason] = rejected_sim.get(reason, 0) + n
if rejected_sim:
    failures.append(f"the simulator rejected requests: {rejected_sim}")
bin_of = lambda t: math.floor(t - sim_start)

status = json.load(open(f"{tmp}/status-wave1.json"))
waves = {w["wave"]: w for w in status.get("waves", [])}
wave = waves.get(1, {})
plan_start = when(wave["startsAt"]) if wave else None
planned_rate = wave.get("rate")
finished = when(status["finishedAt"]) if status.get("finishedAt") else (when(wave["finishedAt"]) if wave.get("finishedAt") else None)
# Wave 1's seconds: to its completion (with --wave2 the later seconds belong to wave 2).
w1_last_bin = bin_of(t_done) if meta.get("bid2") else len(bins) - 1
# Stopped early: wave 1's seconds end with the cancel's, dropped below as a partial last second; the sends in
# flight after it (until the workers saw the cancel) are reported apart.
if stopped: w1_last_bin = min(w1_last_bin, bin_of(stop_at))
w1_bins = bins[:max(0, w1_last_bin) + 1]
nonzero = [i for i, n in enumerate(w1_bins) if n]
first, last = (nonzero[0], nonzero[-1]) if nonzero else (0, 0)
inner = w1_bins[first + 1:last]  # full seconds only: the first and last partial seconds dropped
if not inner: inner = w1_bins[first:last + 1]
def rank(ordered, q):
    """The nearest-rank q-quantile of a sorted, non-empty list."""
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]
def rate_stats(series):
    if not series: return {"seconds": 0, "mean": 0, "peak": 0, "p99": 0, "min": 0, "stdev": 0, "peakToMean": None}
    mean = sum(series) / len(series)
    return {"seconds": len(series), "mean": round(mean, 1), "peak": max(series), "p99": rank(sorted(series), 0.99), "min": min(series),
            "stdev": round(math.sqrt(sum((x - mean) ** 2 for x in series) / len(series)), 1),
            "peakToMean": round(max(series) / mean, 3) if mean else None}
r = rate_stats(inner)
first_push = sim_start + first - t0
last_push_end = sim_start + last + 1 - t0
planned_end = (plan_start - t0 + window_s) if plan_start else None

# CPU from the samples (every 2 s from T0 to wave 1's completion). A process column is (pid, ticks); when the
# pid changes (a restart) the new process's ticks count from its start.
samples = [list(map(float, l.split())) for l in open(f"{tmp}/samples.txt") if l.strip()]
def cores(pid_col, ticks_col):
    total, best = 0.0, 0.0
    for x, y in zip(samples, samples[1:]):
        if y[pid_col] == 0 or y[0] <= x[0]: continue
        same = y[pid_col] == x[pid_col] and y[ticks_col] >= x[ticks_col]
        delta = y[ticks_col] - x[ticks_col] if same else y[ticks_col]
        total += delta
        if same: best = max(best, delta / hz / (y[0] - x[0]))
    span = max(0.001, samples[-1][0] - samples[0][0])
    return round(total / hz / span, 2), round(best, 2), round(total / hz, 1)
# The machine's busy ticks have no pid: a constant column stands in.
for s in samples: s.append(1.0)
machine_cores = cores(len(samples[0]) - 1, 1)
sim_cores = cores(2, 3)
pg_cores = cores(4, 5)
workers_out = []
retired = [l.split() for l in open(f"{tmp}/retired.txt") if l.strip()]
for name, pid, hwm, ticks, rc in retired:
    workers_out.append({"name": name, "slot": None, "peakRSSMB": round(int(hwm) / 1024, 1), "cpuSeconds": round(int(ticks) / hz, 1),
                        "exitStatus": int(rc), "stalled": True, "meanCores": None, "peakCores2s": None, "cpuSecondsDuringBroadcast": None})
for item, rc in zip(worker_stats.split(), worker_rcs.split()):
    name, slot, hwm, ticks = item.split(":")
    workers_out.append({"name": name, "slot": int(slot), "peakRSSMB": round(int(hwm) / 1024, 1), "cpuSeconds": round(int(ticks) / hz, 1),
                        "exitStatus": int(rc)})
    if int(rc) != 0: failures.append(f"worker {name} exited {rc} after SIGTERM (not 0)")
# Per slot: a restarted worker's slot counts both processes.
for out in workers_out:
    if out["slot"] is not None:
        out["meanCores"], out["peakCores2s"], out["cpuSecondsDuringBroadcast"] = cores(6 + 3 * out["slot"], 7 + 3 * out["slot"])
totals = wave.get("counts", {})
recorded_accepted = sum(w.get("counts", {}).get("accepted", 0) for w in status.get("waves", []))
state_now = json.load(open(f"{tmp}/status.json")).get("state", state)
result = {
    "devices": devices, "workers": workers, "windowSeconds": window_s, "unpaced": unpaced,
    "state": state_now,
    "acceptedAtSimulator": accepted_sim, "rejectedAtSimulator": rejected_sim,
    "broadcastCounts": {k: totals.get(k) for k in ("planned", "sent", "accepted", "rejected", "skipped")},
    "plannedRate": planned_rate,
    "rate": r,
    "planningSeconds": round(t1 - t0, 2),
    "planStartAfterT0": round(plan_start - t0, 2) if plan_start else None,
    "firstPushAfterT0": round(first_push, 1),
    "lastPushAfterT0": round(last_push_end, 1),
    "plannedEndAfterT0": round(planned_end, 1) if planned_end is not None else None,
    "lateBy": round(last_push_end - planned_end, 1) if planned_end is not None and not stopped else None,
    "finishedAfterT0": round(finished - t0, 1) if finished else None,
    "seedSeconds": float(seed_s),
    "machineBusyCores": {"mean": machine_cores[0], "busiest2s": machine_cores[1]},
    "simulatorCores": {"mean": sim_cores[0], "busiest2s": sim_cores[1]},
    "postgresCores": {"mean": pg_cores[0], "busiest2s": pg_cores[1], "cpuSeconds": pg_cores[2]},
    "workersDetail": workers_out,
    "simulatorPeakConcurrentStreams": max(s.get("peakConcurrentStreams") or 0 for s, _ in runs),
    "simulatorConnections": sum(s.get("connectionsOpened") or 0 for s, _ in runs),
    "acceptsPerSecond": w1_bins[first:last + 1],
}
if meta.get("countStart") and meta.get("countEnd"):
    count_cpu = (int(meta["pgTicksCount1"]) - int(meta["pgTicksCount0"])) / hz
    result["countAfterWave1"] = {
        "seconds": round(float(meta["countEnd"]) - float(meta["countStart"]), 1),
        "pgCpuSeconds": round(count_cpu, 1),
        "pgCpuMsPer1000": round(count_cpu * 1e6 / max(1, accepted_sim), 2),
    }
# Stopped early: the devices of the held batches not sent yet are skipped as cancelled, by design.
skipped_cancelled = totals.get("skipped", {}).get("cancelled", 0) if stopped else 0
skipped1 = sum(totals.get("skipped", {}).values()) - skipped_cancelled
if skipped1:
    failures.append(f"wave 1 skipped {skipped1} of its {totals.get('planned')} targets: {totals.get('skipped')} (hourlyBudget: they had pushes"
                    " within the hour, e.g. from an earlier run on this database); the rates are not the plan's")
if not meta.get("stall") and totals and totals.get("accepted") != totals.get("planned"):
    failures.append(f"wave 1: {totals.get('accepted')} of {totals.get('planned')} targets accepted (rejected: {totals.get('rejected')})")
if not meta.get("bid2") and not meta.get("stall") and accepted_sim != devices:
    failures.append(f"the simulator accepted {accepted_sim} pushes for {devices} targets")
lines = []

# --stop-after
if meta.get("stopAfter"):
    stop = {"stopAfterSeconds": int(meta["stopAfter"]), "stopped": stopped, "leaseSeconds": int(meta["lease"])}
    if stopped:
        k = bin_of(stop_at)
        tail = bins[k + 1:]
        while tail and tail[-1] == 0: tail.pop()
        planned1, sent1 = totals.get("planned", 0), totals.get("sent", 0)
        stop.update({
            "from": "the stall's begin + the lease" if meta.get("stall") == "sigkill" else "the stall's end",
            "fromAfterWave1Start": round(num("stopFrom") - wave1_start, 2),
            "cancelledAt": datetime.datetime.fromtimestamp(stop_at, datetime.timezone.utc).isoformat(timespec="milliseconds"),
            "cancelAfterWave1Start": round(stop_at - wave1_start, 2), "cancelAfterT0": round(stop_at - t0, 2),
            "cancelReturnedAfterWave1Start": round(num("stopCancelled") - wave1_start, 2),
            "plannedEndAfterWave1Start": window_s,
            "measuredUntilAfterWave1Start": round(sim_start + last - wave1_start, 1),  # the counted seconds end here
            "planned": planned1, "sentBeforeStop": sent1, "acceptedBeforeStop": totals.get("accepted", 0),
            "skippedCancelled": skipped_cancelled,
            "neitherSentNorSkipped": planned1 - sent1 - sum(totals.get("skipped", {}).values()),
            "drainSeconds": float(meta["drainSeconds"]), "heldAfterDrain": int(meta["heldAfterDrain"]),
            "unrecordedBatches": int(meta["unrecordedBatches"]), "unrecordedDevices": int(meta["unrecordedDevices"]),
            "cancelSecondAccepts": bins[k] if k < len(bins) else 0,
            "afterCancelSecond": {"accepts": sum(tail), "seconds": len(tail), "busiest": max(tail) if tail else None,
                                  "busiestOverPlan": round(max(tail) / planned_rate, 3) if tail and planned_rate else None,
                                  "acceptsPerSecond": tail},
        })
    else:
        stop["why"] = failure or ("wave 1 completed before the stop was due" if state_now == "completed" else f"wave 1 ended {state_now}")
    result["stoppedEarly"] = stop
    if stopped:
        a = stop["afterCancelSecond"]
        lines.append(f"  STOPPED EARLY (--stop-after {stop['stopAfterSeconds']}s): broadcast cancelled +{stop['cancelAfterWave1Start']} s after wave 1's planned start"
                     f" ({stop['cancelledAt']}; {stop['stopAfterSeconds']} s after {stop['from']} at +{stop['fromAfterWave1Start']} s; its planned end +{window_s} s),"
                     f" +{stop['cancelAfterT0']} s after start; sent {stop['sentBeforeStop']} of {stop['planned']} before the workers stopped;"
                     f" the workers recorded their batches {stop['drainSeconds']} s after the cancel ({stop['unrecordedBatches']} batches of {stop['unrecordedDevices']} devices never recorded)")
        lines.append(f"  rates and busiest seconds counted to +{stop['measuredUntilAfterWave1Start']} s (full seconds only); not counted: the cancel's second"
                     f" ({stop['cancelSecondAccepts']} accepts) and {a['accepts']} accepts in {a['seconds']} s after it, sent until the workers saw the cancel"
                     f" (busiest {a['busiest']}, {a['busiestOverPlan']} x plan)")
    else:
        lines.append(f"  --stop-after {stop['stopAfterSeconds']}s: NOT stopped early ({stop['why']})")

# --stall
if meta.get("stall"):
    kind, begin, end = meta["stall"], num("stallBegin"), num("stallEnd")
    done = totals.get("sent", 0) + sum(totals.get("skipped", {}).values())
    stall = {"kind": kind, "atSeconds": int(meta["stallAt"]), "forSeconds": int(meta["stallFor"])}
    if begin is not None:
        b, e = bin_of(begin), bin_of(end)
        after = w1_bins[max(b, first + 1):last]  # full seconds from the stall's start on (stopped early: to the cancel's second)
        around = [[round(sim_start + k - wave1_start, 1), w1_bins[k]] for k in range(max(first, b - 5), min(last, e + 30) + 1)]
        stall.update({
            "beganAfterWave1Start": round(begin - wave1_start, 2), "endedAfterWave1Start": round(end - wave1_start, 2),
            "seconds": round(end - begin, 2),
            "busiestAfter": max(after) if after else None,
            "busiestAfterOverPlan": round(max(after) / planned_rate, 3) if after and planned_rate else None,
            "busiestOverall": r["peak"], "busiestOverallOverPlan": round(r["peak"] / planned_rate, 3) if planned_rate else None,
            "secondsAround": around,
        })
    stall.update({
        "everyTargetSent": done == totals.get("planned") and totals.get("sent") == totals.get("planned"),
        "everyTargetAccepted": totals.get("accepted") == totals.get("planned"),
        "extraAcceptsAtSimulator": accepted_sim - recorded_accepted,
        "behindSeconds": wave.get("behindSeconds"),
    })
    if stopped:
        # Not every target was meant to be sent: the pushes sent before the stop must have been accepted.
        stall["everySentAccepted"] = totals.get("accepted") == totals.get("sent")
        if stall["extraAcceptsAtSimulator"] < 0:
            failures.append(f"the simulator accepted {accepted_sim} pushes, fewer than the {recorded_accepted} recorded accepted")
    result["stall"] = stall
    how = {"sigstop": "w1 paused (SIGSTOP/SIGCONT)", "sigkill": "w1 killed (SIGKILL), not restarted: its batches wait for their leases",
           "restart": "w1 SIGTERMed (drained, exit 0), started again as w1r", "pg": "PostgreSQL stopped (pg_ctl stop -m fast), started again",
           "apns": "apns-sim SIGTERMed (connections refused), started again on its port", "apns-sigstop": "apns-sim paused (SIGSTOP/SIGCONT)"}[kind]
    if begin is None:
        lines.append(f"  stall {kind}: not injected")
    else:
        goal = lambda x: "met" if x is not None and x <= 1.10 else "NOT met"
        lines.append(f"  stall {kind}: {how}, from +{stall['beganAfterWave1Start']} s to +{stall['endedAfterWave1Start']} s after wave 1's planned start")
        lines.append(f"  plan {planned_rate:.1f}/s: busiest second from the stall on{' to the stop' if stopped else ''} {stall['busiestAfter']} ({stall['busiestAfterOverPlan']} x plan),"
                     f" overall {r['peak']} ({stall['busiestOverallOverPlan']} x plan); goal <= 1.10: {goal(stall['busiestAfterOverPlan'])} after the stall, {goal(stall['busiestOverallOverPlan'])} overall")
        lines.append("  seconds around it (s after wave 1's planned start: accepts): " + ", ".join(f"{t:+.1f}: {n}" for t, n in stall["secondsAround"]))
    if stopped:
        st = result["stoppedEarly"]
        lines.append(f"  status: planned {totals.get('planned')}, sent {totals.get('sent')}, accepted {totals.get('accepted')}, rejected {totals.get('rejected')},"
                     f" skipped {totals.get('skipped')}: STOPPED EARLY, sent {st['sentBeforeStop']} of {st['planned']} before the workers stopped"
                     f" ({st['skippedCancelled']} skipped as cancelled, {st['neitherSentNorSkipped']} neither sent nor skipped)"
                     f"{'' if stall['everySentAccepted'] else ' (not all sent accepted)'}; wave behind its plan by {stall['behindSeconds']} s")
    else:
        lines.append(f"  status: planned {totals.get('planned')}, sent {totals.get('sent')}, accepted {totals.get('accepted')}, rejected {totals.get('rejected')},"
                     f" skipped {totals.get('skipped')}: {'every target sent' if stall['everyTargetSent'] else 'NOT every target sent'}"
                     f"{'' if stall['everyTargetAccepted'] else ' (not all accepted)'}; wave behind its plan by {stall['behindSeconds']} s")
    lines.append(f"  simulator accepted {accepted_sim}: {stall['extraAcceptsAtSimulator']} beyond the accepts recorded (duplicates, or accepts recorded as fateUnknown)")

# --wave2
if meta.get("bid2") and os.path.exists(f"{tmp}/wave2.txt"):
    due = num("wave2Due")
    w2 = {}
    row = open(f"{tmp}/wave2.txt").read().strip()
    if row:
        start, planned, rate, window = row.split("|")
        w2 = {"plannedStart": float(start), "planned": int(planned), "rate": float(rate), "window": float(window)}
    if w2 and abs(w2["plannedStart"] - due) > 0.5:
        failures.append(f"wave 2's stored start is {w2['plannedStart'] - due:+.1f} s off the start expected from the interval")
    due = w2.get("plannedStart", due)
    first_text = open(f"{tmp}/wave2-first.txt").read().strip()
    first2 = float(first_text) if first_text else None
    started_logs = []
    for line in open(f"{tmp}/wave-started.txt"):
        if f"broadcast={meta['bid']}".lower() in line.lower() and re.search(r"\bwave=2\b", line):  # case-insensitive: logs before 504b113 wrote UUIDs in upper case
            started_logs.append(datetime.datetime.strptime(line.split()[0], "%Y-%m-%dT%H:%M:%S%z").timestamp())
    logged = min(started_logs) if started_logs else None
    if w2 and logged is None: failures.append("no worker logged \"wave started\" for wave 2")
    # Wave 2's own seconds (deliveries.sent_at), full seconds only.
    own = [tuple(map(int, l.split("|"))) for l in open(f"{tmp}/wave2-seconds.txt") if l.strip()]
    own_series = []
    if own:
        lo, hi = own[0][0], own[-1][0]
        counts = dict(own)
        own_series = [counts.get(s, 0) for s in range(lo + 1, hi)]
    # At the simulator: wave 2's full seconds, the second broadcast's sends included.
    sends2 = [float(l) for l in open(f"{tmp}/second-sends.txt") if l.strip()]
    per_bin2 = {}
    for t in sends2: per_bin2[bin_of(t)] = per_bin2.get(bin_of(t), 0) + 1
    sim_first2 = None
    if first2 is not None:
        for k in range(max(0, bin_of(due) - 2), len(bins)):
            if bins[k] - per_bin2.get(k, 0) >= 5:
                sim_first2 = sim_start + k
                break
    sim_series = []
    if own:
        sim_series = [bins[k] for k in range(bin_of(own[0][0]) + 1, min(len(bins), bin_of(own[-1][0] + 1)))]
    # The audience count: due countAhead before the start; seen in pg_stat_activity (0.5 s polls).
    count_ahead = int(meta.get("countAhead") or 0)
    count_due = due - count_ahead
    count_first, count_last = num("countFirstSeen"), num("countLastSeen")
    # The second broadcast from 20 s before the count is due to 20 s after the later of wave 2's first push
    # and the count's end: per second, and the longest gap between two sends.
    lo_t = count_due - 20
    hi_t = max(first2 if first2 else due, count_last or 0) + 20
    window_sends = [t for t in sends2 if lo_t <= t <= hi_t]
    gaps = [(b - a, a) for a, b in zip(window_sends, window_sends[1:])]
    longest = max(gaps) if gaps else (None, None)
    # For comparison: the longest gap before that, from 5 s after the second broadcast's first send.
    before = [t for t in sends2 if t < lo_t and sends2 and t >= sends2[0] + 5]
    longest_before = max((b - a for a, b in zip(before, before[1:])), default=None)
    rate2 = int(meta["secondTargets"]) / int(meta["secondWindow"])
    sends_by_second = {}
    for t in sends2: sends_by_second[math.floor(t)] = sends_by_second.get(math.floor(t), 0) + 1
    per_second2 = [[s - math.floor(due), sends_by_second.get(s, 0)] for s in range(math.floor(lo_t), math.floor(hi_t) + 1)]
    status2 = json.load(open(f"{tmp}/status2.json"))
    final = json.load(open(f"{tmp}/status.json"))
    fw = {w["wave"]: w for w in final.get("waves", [])}
    slot_text = open(f"{tmp}/wave2-first-slot.txt").read().strip()
    first_slot = float(slot_text) if slot_text else due
    delay = (first2 - first_slot) if first2 is not None else None
    morning = meta.get("morning") == "1"
    wave2 = {
        "receipts": {"inserted": int(meta["receiptsInserted"]), "seconds": round(num("receiptsSeconds"), 2), "analyzeSeconds": round(num("analyzeSeconds"), 2),
                     "how": "posted over HTTP through paperboy serve by the fleet (newData ones counted); seconds: from wave 1's end until none was pending"
                     if morning else "BENCHMARK SHORTCUT: one psql INSERT ... SELECT from wave 1's accepted deliveries (device_id % 3 <> 0), then ANALYZE receipts"},
        "waveIntervalRequested": int(meta["intervalRequested"]), "waveIntervalUsed": int(meta["intervalUsed"]),
        "intervalShortcut": meta.get("shortInterval") == "1",
        "plannedStartAfterWave1Start": round(due - wave1_start, 1),
        "countAheadSeconds": count_ahead,
        "countDueAfterReceipts": round(count_due - num("receiptsDone"), 1),
        "countSeenAfterPlannedStart": [round(count_first - due, 1), round(count_last - due, 1)] if count_first else None,
        "countSeenSeconds": round(count_last - count_first, 1) if count_first else None,
        "countsAtOnceMost": int(meta.get("countMostAtOnce") or 0),
        "plannedStartAfterReceipts": round(due - num("receiptsDone"), 1),
        "waveStartedLoggedAfterPlannedStart": round(logged - due, 1) if logged else None,
        "firstSlotAfterPlannedStart": round(first_slot - due, 3),
        "firstPushAfterPlannedStart": round(first2 - due, 3) if first2 is not None else None,
        "firstPushAtSimulatorSecond": round(sim_first2 - due, 1) if sim_first2 else None,
        "recountDelaySeconds": round(delay, 3) if delay is not None else None,
        "goalMet": delay is not None and delay <= 30,
        "planned": w2.get("planned"), "expectedPlanned": int(meta["w1planned"]) - int(meta["receiptsInserted"]),
        "counts": fw.get(2, {}).get("counts"), "rate": w2.get("rate"),
        "ownRate": rate_stats(own_series), "simulatorRate": rate_stats(sim_series),
        "ownMeanOverPlan": round(rate_stats(own_series)["mean"] / w2["rate"], 3) if own_series and w2.get("rate") else None,
        # On plan: the wave's last push (the end of its last second with a send) by its planned end. A follow-up wave
        # keeps wave 1's cohort slots, so its plan has gaps and its mean over all seconds is below the plan's rate.
        "lastPushAfterPlannedStart": (own[-1][0] + 1 - due) if own else None,
        "paceOverPlan": round(w2["window"] / (own[-1][0] + 1 - due), 3) if own and w2.get("window") and own[-1][0] + 1 > due else None,
        "second": {"id": meta["bid2"], "devices": int(meta["secondTargets"]), "windowSeconds": int(meta["secondWindow"]), "rate": round(rate2, 2),
                   "startAfterPlannedStart": round(num("secondStart") - due, 1), "state": status2.get("state"),
                   "sent": sum(w["counts"]["sent"] for w in status2.get("waves", [])),
                   "perSecondAroundWave2": per_second2,
                   "longestGapSeconds": round(longest[0], 3) if longest[0] is not None else None,
                   "longestGapAfterPlannedStart": round(longest[1] - due, 2) if longest[1] is not None else None,
                   "longestGapBefore": round(longest_before, 3) if longest_before is not None else None,
                   "gapWindow": [round(lo_t - due, 1), round(hi_t - due, 1)]},
        "states": {"broadcast": final.get("state"), "second": status2.get("state")},
    }
    result["wave2"] = wave2
    result["acceptsPerSecondFromWave1Start"] = bins[max(0, bin_of(wave1_start)):]
    if w2.get("planned") is None: failures.append("no wave 2")
    elif w2["planned"] != wave2["expectedPlanned"]:
        failures.append(f"wave 2 was planned for {w2['planned']} devices, not the {wave2['expectedPlanned']} of wave 1 without a receipt"
                        " (its audience counted before the receipts were in?)")
    recorded = sum(w["counts"]["accepted"] for st in (final, status2) for w in st.get("waves", []))
    if accepted_sim != recorded:
        failures.append(f"the simulator accepted {accepted_sim} pushes, the two broadcasts recorded {recorded} accepted")
    s2 = wave2["second"]
    sgn = lambda x: f"{x + 0.0:+}" if x is not None else "n/a"  # + 0.0: no -0.0
    o = wave2["ownRate"]; sr = wave2["simulatorRate"]
    lines.append(f"  wave 2 due +{wave2['plannedStartAfterWave1Start']} s after wave 1's start (interval {wave2['waveIntervalUsed']} s"
                 + (f", DATABASE SHORTCUT: the stored interval rewritten from {wave2['waveIntervalRequested']} s" if wave2["intervalShortcut"] else "")
                 + f"), {wave2['plannedStartAfterReceipts']} s after the receipts")
    cs = wave2["countSeenAfterPlannedStart"]
    lines.append(f"  audience count due {sgn(-count_ahead)} s of the planned start (worker --count-ahead {count_ahead} s; {wave2['countDueAfterReceipts']} s after the receipts);"
                 + (f" seen running in pg_stat_activity from {sgn(cs[0])} to {sgn(cs[1])} s ({wave2['countSeenSeconds']} s, 0.5 s polls),"
                    f" {wave2['countsAtOnceMost']} at once at most" if cs else " not seen in pg_stat_activity (shorter than its 0.5 s polls)"))
    if morning:
        lines.append(f"  receipts: {wave2['receipts']['inserted']} newData ones keep their devices out of wave 2; the last was in {wave2['receipts']['seconds']} s after wave 1 was sent"
                     " (posted over HTTP through paperboy serve by the fleet; no ANALYZE)")
    else:
        lines.append(f"  receipts: {wave2['receipts']['inserted']} in {wave2['receipts']['seconds']} s + ANALYZE {wave2['receipts']['analyzeSeconds']} s"
                     " (BENCHMARK SHORTCUT: one psql INSERT ... SELECT, not the API)")
    lines.append(f"  recount: \"wave started\" logged {sgn(wave2['waveStartedLoggedAfterPlannedStart'])} s after the planned start (log: 1 s resolution);"
                 f" first wave-2 push {sgn(wave2['firstPushAfterPlannedStart'])} s (deliveries.sent_at), at the simulator in the second from {sgn(wave2['firstPushAtSimulatorSecond'])} s;"
                 f" its first cohort's slot from {sgn(wave2['firstSlotAfterPlannedStart'])} s (a follow-up's slots end where wave 1's did);"
                 f" recount delay (first push - first slot) {wave2['recountDelaySeconds']} s (goal <= 30 s: {'met' if wave2['goalMet'] else 'NOT met'})")
    lines.append(f"  wave 2: planned {wave2['planned']} (wave 1's {meta['w1planned']} - receipts = {wave2['expectedPlanned']}), counts {wave2['counts']}, plan {w2.get('rate', 0):.1f}/s;"
                 f" last push by +{wave2['lastPushAfterPlannedStart']} s of its {w2.get('window')} s window ({wave2['paceOverPlan']} x the plan's pace);"
                 f" its own sends (deliveries.sent_at) mean {o['mean']}/s ({wave2['ownMeanOverPlan']} x the plan's rate, gaps between slots included) peak {o['peak']}/s peak/mean {o['peakToMean']} over {o['seconds']} full s;"
                 f" at the simulator (the second broadcast included) mean {sr['mean']}/s peak {sr['peak']}/s peak/mean {sr['peakToMean']}")
    lines.append(f"  second broadcast: {s2['devices']} devices over {s2['windowSeconds']} s ({s2['rate']}/s) from {s2['startAfterPlannedStart']:+} s, {s2['state']}, sent {s2['sent']};"
                 f" longest gap between two sends from {sgn(s2['gapWindow'][0])} to {sgn(s2['gapWindow'][1])} s: {s2['longestGapSeconds']} s (after the send at {sgn(s2['longestGapAfterPlannedStart'])} s);"
                 f" before {sgn(s2['gapWindow'][0])} s its longest was {s2['longestGapBefore']} s")
    runs2 = []  # equal seconds in a row, compressed
    for sec, n in per_second2:
        if runs2 and runs2[-1][2] == n and runs2[-1][1] == sec - 1: runs2[-1][1] = sec
        else: runs2.append([sec, sec, n])
    lines.append("  its sends per second (s after wave 2's planned start: sends; deliveries.sent_at): "
                 + ", ".join(f"{a:+d}: {n}" if a == b else f"{a:+d}..{b:+d}: {n} each" for a, b, n in runs2))

# Origins (--morning, --same-origin): the busiest full second at the simulator, both broadcasts together, from
# wave 1's planned start, against the morning's origin's capacity.
if meta.get("originCapacity"):
    cap = int(meta["originCapacity"])
    series = bins[max(0, bin_of(wave1_start)):]
    nz = [i for i, n in enumerate(series) if n]
    full = series[nz[0] + 1:nz[-1]] if len(nz) > 2 else series
    busiest = max(full) if full else 0
    same = meta.get("sameOrigin") == "1"
    # The same from the ledger: sends per second by deliveries.sent_at, full seconds only.
    ledger = [tuple(map(int, l.split("|"))) for l in open(f"{tmp}/sent-seconds.txt") if l.strip()]
    by_second = dict(ledger)
    own = [by_second.get(s_, 0) for s_ in range(ledger[0][0] + 1, ledger[-1][0])] if len(ledger) > 2 else []
    busiest_own = max(own) if own else 0
    result["origin"] = {"sameOrigin": same, "capacity": cap,
                        "simulator": {"fullSeconds": len(full), "busiestSecond": busiest, "busiestOverCapacity": round(busiest / cap, 3),
                                      "secondsAbove100": sum(1 for n in full if n > cap), "secondsAbove110": sum(1 for n in full if n > 1.10 * cap)},
                        "ledger": {"fullSeconds": len(own), "busiestSecond": busiest_own, "busiestOverCapacity": round(busiest_own / cap, 3),
                                   "secondsAbove100": sum(1 for n in own if n > cap), "secondsAbove110": sum(1 for n in own if n > 1.10 * cap)}}
    o = result["origin"]
    if same and o["simulator"]["secondsAbove110"]:
        failures.append(f"{o['simulator']['secondsAbove110']} seconds above 1.10 x the shared origin's {cap}/s at the simulator (busiest {busiest})")
    for where, x in (("at the simulator", o["simulator"]), ("in the ledger (deliveries.sent_at)", o["ledger"])):
        lines.append(f"  origin: {'both broadcasts on content-api' if same else 'the second broadcast on another origin (wire-api)'}, {cap}/s; {where}, both broadcasts,"
                     f" over {x['fullSeconds']} full s: busiest second {x['busiestSecond']} ({x['busiestOverCapacity']} x the capacity),"
                     f" {x['secondsAbove100']} s above it, {x['secondsAbove110']} s above 1.10 x")

# --morning: the whole morning, from the broadcast's start until the workers were stopped.
if meta.get("morning") == "1" and meta.get("tEnd"):
    span = num("tEnd") - t0
    busy_cores = (int(meta["busyTicks1"]) - int(meta["busyTicks0"])) / hz / span
    pg_seconds = (int(meta["pgTicks1"]) - int(meta["pgTicks0"])) / hz
    deliveries = int(open(f"{tmp}/deliveries.txt").read().strip() or 0)
    per_min = {}
    for l in open(f"{tmp}/per-minute.txt"):
        if l.strip():
            w, m, n = map(int, l.strip().split("|"))
            per_min.setdefault(w, []).append((m, n))
    wave_minutes = []
    for l in open(f"{tmp}/waves.txt"):
        if not l.strip(): continue
        w, start, planned, rate, window = l.strip().split("|")
        w, start, planned, rate, window = int(w), float(start), int(planned), float(rate), float(window)
        rows = []
        for m, n in per_min.get(w, []):
            # The plan's sends in this minute: its devices spread evenly over its window, this minute's part (a
            # follow-up wave keeps wave 1's cohort slots, so its real plan has gaps: only its total is exact).
            plan = planned * max(0.0, min(m * 60 + 60, window) - max(m * 60, 0)) / window if window else 0
            rows.append({"minute": m, "sends": n, "plan": round(plan), "overPlan": round(n / plan, 3) if plan else None})
        wave_minutes.append({"wave": w, "plannedStartAfterWave1Start": round(start - wave1_start, 1), "planned": planned,
                             "rate": rate, "windowSeconds": window, "sent": sum(n for _, n in per_min.get(w, [])), "minutes": rows})
    fleet = sim.get("fleet", {})
    fleet_start = when(sim["startedAt"])
    receipts_per_minute = {}
    for i, n in enumerate(fleet.get("postedPerSecond", [])):
        minute = math.floor((fleet_start + i - wave1_start) / 60)
        if n: receipts_per_minute[minute] = receipts_per_minute.get(minute, 0) + n
    polls = {}
    for l in open(f"{tmp}/status-polls.txt"):
        a, b, rc, bid_ = l.split()
        polls.setdefault(bid_, []).append((float(b) - float(a), int(rc)))
    def poll_stats(items):
        d = sorted(x for x, _ in items)
        pick = lambda q: round(rank(d, q), 2) if d else None
        return {"polls": len(items), "failed": sum(1 for _, rc in items if rc != 0), "p50Seconds": pick(0.5), "p95Seconds": pick(0.95), "maxSeconds": pick(1.0)}
    status_polls = {("morning" if k == meta["bid"] else "second"): poll_stats(v) for k, v in polls.items()}
    for name, p in status_polls.items():
        if p["failed"]: failures.append(f"{p['failed']} of {p['polls']} status polls of the {name} broadcast failed (status-polls.err)")
    bad_status = {k: v for k, v in fleet.get("statuses", {}).items() if not k.startswith("2")}
    if bad_status: failures.append(f"receipts answered {bad_status}")
    if fleet.get("transportErrors"): failures.append(f"{fleet['transportErrors']} receipts failed in transport: {fleet.get('firstError')}")
    result["morning"] = {
        "seconds": round(span, 1),
        "waves": wave_minutes,
        "receipts": {k: fleet.get(k) for k in ("accepted", "ignored", "scheduled", "posted", "byResult", "statuses", "transportErrors", "unsentAtStop", "lagMilliseconds")},
        "receiptsPerMinuteFromWave1Start": sorted(receipts_per_minute.items()),
        "statusPolls": status_polls,
        "machineBusyCores": round(busy_cores, 2),
        "postgres": {"cpuSeconds": round(pg_seconds, 1), "meanCores": round(pg_seconds / span, 2), "deliveries": deliveries,
                     "cpuMillisecondsPer1000Deliveries": round(pg_seconds * 1e6 / deliveries, 1) if deliveries else None},
        "serve": {"cpuSeconds": round(int(meta["serveTicks"]) / hz, 1), "peakRSSMB": round(int(meta["serveRSS"]) / 1024, 1)},
        "fleet": {"cpuSeconds": round(int(meta["fleetTicks"]) / hz, 1), "peakRSSMB": round(int(meta["fleetRSS"]) / 1024, 1)},
        "databaseMB": round(int(meta["dbBytes"]) / 1048576, 1),
    }
    mo = result["morning"]
    lines.append(f"  MORNING: {mo['seconds']} s from the broadcast's start to the workers' stop; machine {mo['machineBusyCores']} cores busy;"
                 f" PostgreSQL {mo['postgres']['meanCores']} cores ({mo['postgres']['cpuSeconds']} s: {mo['postgres']['cpuMillisecondsPer1000Deliveries']} ms per 1,000 of the"
                 f" {deliveries} deliveries, receipts' work included); serve {mo['serve']['cpuSeconds']} s CPU, peak RSS {mo['serve']['peakRSSMB']} MB;"
                 f" fleet {mo['fleet']['cpuSeconds']} s CPU, peak RSS {mo['fleet']['peakRSSMB']} MB; database {mo['databaseMB']} MB")
    for wm in wave_minutes:
        lines.append(f"  wave {wm['wave']} (planned {wm['planned']} at {wm['rate']:.1f}/s over {wm['windowSeconds']:.0f} s, from +{wm['plannedStartAfterWave1Start']} s), sends per minute of its plan"
                     " (minute: sends/plan): " + ", ".join(f"{x['minute']}: {x['sends']}/{x['plan']}" for x in wm["minutes"]))
    rc = mo["receipts"]
    lag = rc.get("lagMilliseconds") or {}
    lines.append(f"  receipts over HTTP: {rc.get('posted')} posted ({rc.get('byResult')}; statuses {rc.get('statuses')}) of {rc.get('accepted')} pushes"
                 f" (not run: {rc.get('ignored')}); lag after due p50 {lag.get('p50')} ms p99 {lag.get('p99')} ms max {lag.get('max')} ms; unsent at the stop {rc.get('unsentAtStop')}")
    lines.append("  receipts per minute from wave 1's planned start: " + ", ".join(f"{m}: {n}" for m, n in mo["receiptsPerMinuteFromWave1Start"]))
    lines.append("  status polled every 10 s: " + "; ".join(f"{k} {v['polls']} polls, {v['failed']} failed, p50 {v['p50Seconds']} s p95 {v['p95Seconds']} s max {v['maxSeconds']} s"
                                                         for k, v in status_polls.items()))

# --watch: the status's latency, the console's updates, each watcher's statement time per minute.
if meta.get("watchStart") and meta.get("watchEnd"):
    w_start, w_end, w_wave1 = num("watchStart"), num("watchEnd"), num("watchWave1At")
    polls = [(float(a), code, float(sec)) for a, code, sec in (l.split() for l in open(f"{tmp}/watch-status.txt") if len(l.split()) == 3)]
    def latency(items):
        d = sorted(sec * 1000 for _, code, sec in items if code == "200")
        pick = lambda q: round(rank(d, q), 1) if d else None
        return {"polls": len(items), "failed": sum(1 for _, code, _ in items if code != "200"),
                "p50Ms": pick(0.5), "p95Ms": pick(0.95), "p99Ms": pick(0.99), "maxMs": pick(1.0)}
    live = open(f"{tmp}/console-live.txt").read() if os.path.exists(f"{tmp}/console-live.txt") else ""
    def roles(path, seconds):
        data = json.load(open(path)) if os.path.exists(path) and os.path.getsize(path) else {}
        out = {}
        for role, rows in data.items():
            ms = sum(r["ms"] for r in rows)
            out[role] = {"statementMs": round(ms, 1), "calls": sum(r["calls"] for r in rows),
                         "statementMsPerMinute": round(ms * 60 / seconds, 1) if seconds > 0 else None,
                         "top": [{"calls": r["calls"], "ms": round(r["ms"], 1), "query": r["query"]} for r in rows[:4]]}
        return out
    watch = {
        "seconds": round(w_end - w_start, 1),
        "status": latency(polls),
        "statusDuringWave1": latency([p for p in polls if w_wave1 is None or p[0] < w_wave1]),
        "consoleUpdates": live.count("event: update"),
        "consoleSignedOut": live.count("event: signed-out"),
        "roles": roles(f"{tmp}/watch-end.json", w_end - w_start),
        "rolesDuringWave1": roles(f"{tmp}/watch-wave1.json", (w_wave1 or w_end) - w_start),
        "serveCpuSeconds": {"status": round(int(meta.get("watchStatusTicks") or 0) / hz, 1), "console": round(int(meta.get("watchConsoleTicks") or 0) / hz, 1)},
    }
    result["watch"] = watch
    if watch["status"]["failed"]: failures.append(f"{watch['status']['failed']} of {watch['status']['polls']} status requests (--watch) did not answer 200")
    if watch["consoleUpdates"] == 0: failures.append("the console's live stream (--watch) sent no update")
    for key, title in (("statusDuringWave1", "while wave 1 ran"), ("status", "over the run")):
        st = watch[key]
        lines.append(f"  WATCH: GET /v1/broadcasts/{{id}} every 2 s {title}: {st['polls']} requests, {st['failed']} failed;"
                     f" p50 {st['p50Ms']} ms, p95 {st['p95Ms']} ms, p99 {st['p99Ms']} ms, max {st['maxMs']} ms")
    lines.append(f"  WATCH: one console open {watch['seconds']} s: {watch['consoleUpdates']} live updates; serve CPU: status {watch['serveCpuSeconds']['status']} s,"
                 f" console {watch['serveCpuSeconds']['console']} s")
    for key, title in (("rolesDuringWave1", "while wave 1 ran"), ("roles", "over the run")):
        for role, rs in sorted(watch[key].items()):
            lines.append(f"  WATCH: {role} {title}: {rs['statementMsPerMinute']} ms of statements a minute ({rs['calls']} calls, {rs['statementMs']} ms)")
    for role, rs in sorted(watch["roles"].items()):
        for t in rs["top"]:
            lines.append(f"    {role}: {t['calls']} calls {t['ms']} ms: {t['query']}")

# pg_stat_statements: PostgreSQL's work per 1,000 deliveries by statement family, wave 1 (and the whole morning).
import subprocess
def families(dump, deliveries, cpu_seconds):
    out = subprocess.run([sys.executable, "scripts/statement-families.py", dump, "--deliveries", str(deliveries), "--cpu-seconds", str(cpu_seconds),
                          "--json", "--top", "12"], capture_output=True, text=True)
    if out.returncode != 0:
        failures.append(f"statement-families.py failed: {out.stderr.strip()}")
        return None
    return json.loads(out.stdout)
if meta.get("pgTicksWave1") and int(meta.get("wave1Deliveries") or 0) > 0:
    result["statementsWave1"] = families(f"{tmp}/statements-wave1.json", int(meta["wave1Deliveries"]),
                                         (int(meta["pgTicksWave1"]) - int(meta["pgTicksReset"])) / hz)
if meta.get("pgTicksReset") and os.path.exists(f"{tmp}/statements-morning.json") and meta.get("pgTicks1"):
    n = int(open(f"{tmp}/deliveries.txt").read().strip() or 0)
    if n: result["statementsMorning"] = families(f"{tmp}/statements-morning.json", n, (int(meta["pgTicks1"]) - int(meta["pgTicksReset"])) / hz)
for key, title in (("statementsWave1", "wave 1"), ("statementsMorning", "the whole morning")):
    st = result.get(key)
    if not st: continue
    lines.append(f"  PostgreSQL per 1,000 deliveries, {title} ({st['deliveries']} deliveries; pg_stat_statements): processes' CPU {st['cpuMsPer1000']} ms,"
                 f" statements {st['statementMsPer1000']} ms in {st['callsPer1000']} calls, outside statements {st['outsideStatementsMsPer1000']} ms")
    for f in st["families"]:
        lines.append(f"    {f['family']:50} {f['callsPer1000']:>8} calls {f['statementMsPer1000']:>8} ms {f['share'] * 100:>5.1f} % {f['msPerCall']} ms/call,"
                     f" CPU ~{f['cpuMsPer1000']} ms")
    # The costliest statements themselves, so that a run names what its families hold (BENCH_KEEP=DIR keeps the dumps).
    for t in st.get("top", []):
        lines.append(f"    top: {t['ms']} ms in {t['calls']} calls [{t['family']}] {t['query']}")

result["failures"] = failures
json.dump(result, open(f"{tmp}/result.json", "w"))
open(f"{tmp}/failures.txt", "w").write("".join(f + "\n" for f in failures))
if as_json:
    print(json.dumps(result, indent=2))
else:
    mode = "unpaced" if unpaced else f"window {window_s}s"
    print(f"devices {devices} workers {workers} {mode}: {result['state']}" + (" (STOPPED EARLY)" if stopped else "") + f", accepted {accepted_sim}"
          + ((f" (stopped early: {totals.get('sent')} of {devices} sent)" if stopped else " (!= devices)") if accepted_sim != devices and not meta.get("bid2") else "")
          + f", rate mean {r['mean']:.0f}/s peak {r['peak']}/s p99 {r['p99']}/s min {r['min']}/s peak/mean {r['peakToMean']}"
          + f" over {r['seconds']} full s" + (" before the stop" if stopped else "") + (f" (planned {planned_rate:.1f}/s)" if planned_rate else "") + (" [wave 1]" if meta.get("bid2") else ""))
    if stopped:
        print(f"  planning {result['planningSeconds']} s, plan start +{result['planStartAfterT0']} s, first push in [+{result['firstPushAfterT0']}, +{result['firstPushAfterT0'] + 1:.1f}) s,"
              f" last push before the stop by +{result['lastPushAfterT0']} s (planned end +{result['plannedEndAfterT0']} s not reached: STOPPED EARLY),"
              f" cancelled +{result['finishedAfterT0']} s after start (times at the simulator: 1 s resolution)")
    else:
        print(f"  planning {result['planningSeconds']} s, plan start +{result['planStartAfterT0']} s, first push in [+{result['firstPushAfterT0']}, +{result['firstPushAfterT0'] + 1:.1f}) s,"
              f" last push by +{result['lastPushAfterT0']} s (planned end +{result['plannedEndAfterT0']} s, late by at most {result['lateBy']} s),"
              f" wave 1 recorded +{result['finishedAfterT0']} s after start (times at the simulator: 1 s resolution)")
        if "countAfterWave1" in result:
            c = result["countAfterWave1"]
            print(f"  then wave 1's pushes counted towards dormancy in {c['seconds']} s: PostgreSQL {c['pgCpuSeconds']} s of CPU, {c['pgCpuMsPer1000']} ms per 1,000 deliveries")
    for w in workers_out:
        if w.get("stalled"):
            print(f"  worker {w['name']} (stalled; read when it was stopped): peak RSS {w['peakRSSMB']} MB, CPU {w['cpuSeconds']} s, exit {w['exitStatus']}")
            continue
        print(f"  worker {w['name']}: peak RSS {w['peakRSSMB']} MB, CPU {w['cpuSeconds']} s (mean {w['meanCores']} cores,"
              f" busiest 2 s {w['peakCores2s']} cores), exit {w['exitStatus']}")
    print(f"  CPU from start to {'the stop and the drain' if stopped else 'wave 1' + chr(39) + 's end'}: machine {machine_cores[0]} cores busy (busiest 2 s {machine_cores[1]}) of {os.cpu_count()},"
          f" simulator {sim_cores[0]}, PostgreSQL {pg_cores[0]} ({pg_cores[2]} s); seeding took {seed_s} s")
    for line in lines: print(line)
    for f in failures: print(f"  FAILED: {f}")
EOF
if [ -s "$tmp/failures.txt" ]; then
    while read -r line; do say "error: $line"; done < "$tmp/failures.txt"
    exit 1
fi
