#!/usr/bin/env bash
# Seeds a fleet and DAYS days of morning and evening broadcasts (3 background waves each, receipts with context, the
# waves' counters as the dispatcher keeps them), then times `paperboy insights wake-rates` sampled (the default,
# --sample 250000) and with --sample all, RUNS times each (EXACT_RUNS for --sample all), over the WINDOWS (flag sets
# separated by ';'), and compares the sampled rates with the exact ones. Under scripts/with-postgres.sh, from the
# repository:
#   N=1000000 DAYS=4 PB=.build/debug/paperboy scripts/with-postgres.sh scripts/bench-wake-rates.sh
# (MODE=seed stops after the history, MODE=time only times; the EXPLAIN reads $OUT/explain.sql when present; OUT
# defaults to /tmp/wake-rates.) Fails when a report fails or reads no push.

set -euo pipefail
pb=${PB:-.build/debug/paperboy}
N=${N:-1000000}
OUT=${OUT:-/tmp/wake-rates}; mkdir -p "$OUT"
DAYS=${DAYS:-4}
export TZ=UTC
if [ "${MODE:-all}" != time ]; then
$pb migrate >/dev/null
key=$(mktemp); openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt > "$key"
$pb apps add --bundle-id com.example.news --team-id TEAM123456 --key-id KEY1234567 --key-file "$key" --json >/dev/null
$pb publications add morning --app 1 >/dev/null
$pb publications add evening --app 1 >/dev/null
start=$(date +%s.%N)
$pb devices seed --count "$N" --publication morning --publication evening --fcm 0.1 --auto-download 0.9 >/dev/null
echo "seed: $(echo "$(date +%s.%N) - $start" | bc) s"
start=$(date +%s.%N)
psql -X -q -v ON_ERROR_STOP=1 -v days="$DAYS" <<'SQL'
UPDATE devices SET
    model = CASE WHEN platform = 0 THEN (ARRAY['iPhone15,2','iPhone15,3','iPhone14,7','iPhone16,1','iPhone13,2','iPad13,1'])[1 + id % 6]
        ELSE (ARRAY['Pixel 8','SM-S918B','Pixel 7a','SM-A546B'])[1 + id % 4] END,
    os_version = CASE WHEN platform = 0 THEN (ARRAY['17.4.1','18.1','16.7.2','18.0'])[1 + id % 4] ELSE (ARRAY['14','13','15'])[1 + id % 3] END,
    time_zone = (ARRAY['Asia/Tokyo','Asia/Tokyo','Asia/Tokyo','Europe/Berlin'])[1 + id % 4];
-- Edition i (0 = the newest) was published i half-days ago: morning for even i, evening for odd; its broadcast then.
INSERT INTO editions (id, publication_id, issue_date, deadline, manifest, published_at)
SELECT md5('e' || i)::uuid, CASE WHEN i % 2 = 0 THEN 1 ELSE 2 END, date '2026-11-24' - i / 2,
    now() - make_interval(hours => 12 * i) + interval '4 hours', '{}', now() - make_interval(hours => 12 * i)
FROM generate_series(0, 2 * :days - 1) i;
INSERT INTO broadcasts (id, edition_id, environment, state, plan, created_at, finished_at)
SELECT md5('b' || i)::uuid, md5('e' || i)::uuid, 0, 'completed', '{}', now() - make_interval(hours => 12 * i),
    now() - make_interval(hours => 12 * i) + interval '4 hours'
FROM generate_series(0, 2 * :days - 1) i;
-- Per device and edition a draw r in [0, 1024): 2/3 post a receipt after wave 1, another 1/6 after wave 2, the last 1/6
-- get wave 3 and never answer. Half the receipts echo the wave, half (older app versions) do not.
CREATE TEMP TABLE draws AS
SELECT d.id AS device_id, i, (hashint8extended(d.id, i) & 1023)::integer AS r,
    now() - make_interval(hours => 12 * i) + make_interval(secs => d.id % 1800) AS t
FROM devices d, generate_series(0, 2 * :days - 1) i WHERE d.auto_download AND d.active;
INSERT INTO deliveries (device_id, broadcast_id, wave, cohort, background, sent_at, outcome)
SELECT device_id, md5('b' || i)::uuid, w, device_id % 16, true, t + make_interval(mins => 30 * (w - 1)), 'accepted'
FROM draws, generate_series(1, 3) w WHERE w = 1 OR (w = 2 AND r >= 683) OR (w = 3 AND r >= 853);
INSERT INTO receipts (device_id, edition_id, result, bytes, seconds, received_at,
    network, charging, low_power_mode, background_refresh, wave, seconds_from_push)
SELECT device_id, md5('e' || i)::uuid, 'newData', 52428800, 4.5,
    t + make_interval(mins => CASE WHEN r < 683 THEN 0 ELSE 30 END, secs => 60 + r % 600),
    (r % 3)::smallint, r % 5 <> 0, r % 7 = 0, r % 11 <> 0,
    CASE WHEN r % 2 = 0 THEN (CASE WHEN r < 683 THEN 1 ELSE 2 END)::smallint END, 60 + r % 600
FROM draws WHERE r < 853;
-- The counters a report reads to decide whether to sample: each wave's accepted pushes.
INSERT INTO broadcast_waves (broadcast_id, wave, kind, starts_at, window_seconds, rate, planned)
SELECT md5('b' || i)::uuid, w, 'background', now() - make_interval(hours => 12 * i) + make_interval(mins => 30 * (w - 1)), 1800, 500, 0
FROM generate_series(0, 2 * :days - 1) i, generate_series(1, 3) w;
INSERT INTO broadcast_cohorts (broadcast_id, wave, cohort, starts_at, ends_at, first_key, end_key, next_key, planned, sent, accepted)
SELECT broadcast_id, wave, 0, now(), now(), 0, 0, 0, count(*), count(*), count(*) FROM deliveries GROUP BY broadcast_id, wave;
VACUUM ANALYZE;
SQL
echo "history: $(echo "$(date +%s.%N) - $start" | bc) s"
fi
psql -X -At -c "SELECT 'devices ' || (SELECT count(*) FROM devices) || ', deliveries ' || (SELECT count(*) FROM deliveries) || ', receipts ' || (SELECT count(*) FROM receipts) || ', broadcasts ' || (SELECT count(*) FROM broadcasts) || ', db ' || pg_size_pretty(pg_database_size(current_database()))"
[ "${MODE:-all}" = seed ] && exit 0
RUNS=${RUNS:-3}
EXACT_RUNS=${EXACT_RUNS:-$RUNS}
IFS=';' read -r -a windows <<< "${WINDOWS:---publication morning --days 1;--days 1;--publication morning --days 14;--days 14}"
for args in "${windows[@]}"; do
    for sample in 250000 all; do
        name=$(echo "$args --sample $sample" | tr -d ' -')
        times=()
        runs=$RUNS; [ "$sample" = all ] && runs=$EXACT_RUNS
        for run in $(seq "$runs"); do
            start=$(date +%s.%N)
            $pb insights wake-rates $args --sample $sample --json > "$OUT/rates-$name.json"
            times+=("$(echo "$(date +%s.%N) - $start" | bc)")
        done
        read_pushes=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["total"]["pushes"])' "$OUT/rates-$name.json")
        [ "$read_pushes" -gt 0 ] || { echo "insights wake-rates $args --sample $sample read no push" >&2; exit 1; }
        echo "insights wake-rates $args --sample $sample: ${times[*]} s (median $(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(( (runs + 1) / 2 ))p") s), $read_pushes pushes read"
    done
    # The sampled rates against the exact ones: every group with a rate in both.
    python3 - "$OUT/rates-$(echo "$args --sample 250000" | tr -d ' -').json" "$OUT/rates-$(echo "$args --sample all" | tr -d ' -').json" <<'PY'
import json, sys
sampled, exact = (json.load(open(p)) for p in sys.argv[1:3])
def rates(report):
    out = {("all", "all"): report["total"]}
    for d in report["dimensions"]:
        for g in d["groups"]:
            out[(d["dimension"], g["key"])] = g
    return out
s, e = rates(sampled), rates(exact)
both = [k for k in s if k in e and s[k].get("rate") is not None and e[k].get("rate") is not None]
worst = max(both, key=lambda k: abs(s[k]["rate"] - e[k]["rate"]))
outside = [k for k in both if not (s[k]["low"] <= e[k]["rate"] <= s[k]["high"])]
share = sampled.get("sample", {}).get("fraction")
print(f"  sample {share if share is None else f'{share:.4f}'} of devices; total rate {s[('all','all')]['rate']:.4f} vs {e[('all','all')]['rate']:.4f}; "
      f"{len(both)} groups with a rate in both, largest difference {abs(s[worst]['rate'] - e[worst]['rate']) * 100:.2f} points ({worst[0]} {worst[1]}); "
      f"exact rate outside the sample's 95% interval: {len(outside)} groups")
PY
done
$pb insights wake-rates --publication morning --days 14 --time-zone Asia/Tokyo > $OUT/rates-morning-14.txt
[ -f "$OUT/explain.sql" ] || exit 0
psql -X -v days=1 -v pubs="{1}" -f $OUT/explain.sql > $OUT/explain-morning-1d.txt 2>&1
psql -X -v days=14 -v pubs="{1}" -f $OUT/explain.sql > $OUT/explain-morning-14d.txt 2>&1
