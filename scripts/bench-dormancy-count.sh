#!/usr/bin/env bash
# The dormancy count after wave 1 (wave 1's pushes counted towards dormancy, migrations 0029 and 0039), timed per
# statement on a database of its own:
#   scripts/with-postgres.sh scripts/bench-dormancy-count.sh [DEVICES] [SAMPLE]
#       (after swift build -c release --product paperboy; DEVICES defaults to 1000000, SAMPLE to 40)
#
# The state a morning leaves: every device counted for yesterday's edition, a tenth of them dormant and a tenth one
# unanswered edition short of it, a third of the others answered yesterday. Wave 1 recorded every device in batches
# of 1,000 in the carve's order (cohort key), as `uncounted_pushes` rows. Then:
#   before  the statement of migration 0029 (16 recorded batches a statement, in the order they were recorded),
#           SAMPLE statements on SAMPLE x 16 batches of their own;
#   after   the statements the worker runs now, read from the Swift sources (RequestStatements.sortPushes and
#           countPushes): every batch sorted by key, 64 a statement, then every key range counted, one a statement.
# Autovacuum is off for the tables the count writes, and each pass starts after a VACUUM: a pass's own updates would
# otherwise start a vacuum of 10 million rows beside it, which doubles the statements' times on two cores.
set -euo pipefail
cd "$(dirname "$0")/.."
devices=${1:-1000000}
sample=${2:-40}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
P=${PAPERBOY:-.build/release/paperboy}
$P migrate 2>&1 | tail -1
openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null | openssl pkcs8 -topk8 -nocrypt > "$tmp/key.p8"
$P apps add --bundle-id com.example.news --team-id ABCDE12345 --key-id KEY1234567 --key-file "$tmp/key.p8" >/dev/null
$P publications add morning --app 1 --title Morning >/dev/null
$P devices seed --app 1 --count "$devices" --publication morning 2>&1 | tail -1
echo "== the state a morning leaves"
psql -X -q -v ON_ERROR_STOP=1 <<'SQL'
ALTER TABLE device_pushes SET (autovacuum_enabled = false);
ALTER TABLE devices SET (autovacuum_enabled = false);
ALTER TABLE uncounted_pushes SET (autovacuum_enabled = false);
ALTER TABLE receipts SET (autovacuum_enabled = false);
INSERT INTO editions (id, publication_id, issue_date, deadline, manifest) VALUES
  ('00000000-0000-0000-0000-00000000000a', 1, date '2026-11-22', now() - interval '1 day', '{}');
INSERT INTO device_pushes (device_id, pushed_edition, editions_unanswered)
  SELECT id, '00000000-0000-0000-0000-00000000000a', (CASE id % 10 WHEN 0 THEN 5 WHEN 1 THEN 2 ELSE 0 END)::smallint FROM devices;
UPDATE devices SET dormant = true WHERE id % 10 = 0;
INSERT INTO receipts (device_id, edition_id, result, provider)
  SELECT id, '00000000-0000-0000-0000-00000000000a', 'newData', provider FROM devices WHERE id % 3 = 1 AND id % 10 <> 0;
CREATE TABLE bench_batches AS SELECT ((row_number() OVER (ORDER BY cohort_key, id) - 1) / 1000)::integer AS b, id FROM devices;
CREATE INDEX ON bench_batches (b);
VACUUM ANALYZE;
SELECT pg_size_pretty(pg_total_relation_size('device_pushes')) AS device_pushes, pg_size_pretty(pg_total_relation_size('devices')) AS devices,
       pg_size_pretty(pg_total_relation_size('receipts')) AS receipts;
SQL
python3 - "$tmp" "$sample" "$devices" <<'PY'
import re, sys
tmp, sample = sys.argv[1], int(sys.argv[2])
src = open("Sources/PaperboyStore/Statements/RequestStatements.swift").read()
def body(func):
    return re.search(r'static func ' + func + r'\(.*?"""\n(.*?)\n\s*"""', src, re.S).group(1)
shift = re.search(r'static let pushKeyRangeShift: Int32 = (\d+)', src).group(1)
sort = body("sortPushes").replace("\\(broadcastID)", ":'bc'").replace("\\(batches)", "64").replace("\\(pushKeyRangeShift)", shift)
count = body("countPushes").replace("\\(broadcastID)", ":'bc'").replace("\\(editionID)", ":'ed'").replace("\\(dormantAfter)", "3")
# Migration 0029's statement, as the worker ran it before migration 0039.
before = """
WITH taken AS (
    DELETE FROM uncounted_pushes WHERE id IN (
        SELECT id FROM uncounted_pushes WHERE broadcast_id = :'bc' ORDER BY id LIMIT 16 FOR UPDATE SKIP LOCKED)
    RETURNING cohort, device_ids
), pushed AS (
    SELECT DISTINCT ON (u.id) u.id, t.cohort FROM taken t, unnest(t.device_ids) AS u(id) ORDER BY u.id
), counted AS (
    INSERT INTO device_pushes AS p (device_id, pushed_edition, editions_unanswered)
    SELECT pushed.id, :'ed', 0 FROM pushed ORDER BY pushed.id
    ON CONFLICT (device_id) DO UPDATE SET
        editions_unanswered = CASE
            WHEN EXISTS (SELECT 1 FROM receipts r WHERE r.device_id = p.device_id AND r.edition_id = p.pushed_edition) THEN 0
            ELSE least(p.editions_unanswered + 1, 10000) END,
        pushed_edition = EXCLUDED.pushed_edition
    WHERE p.pushed_edition <> EXCLUDED.pushed_edition
    RETURNING p.device_id, 3 > 0 AND p.editions_unanswered >= 3 AS dormant
), flagged AS (
    UPDATE devices d SET dormant = counted.dormant FROM counted WHERE d.id = counted.device_id AND d.dormant <> counted.dormant
), tallied AS (
    UPDATE broadcast_cohorts c SET dormant = c.dormant + n.dormant
    FROM (SELECT pushed.cohort, count(*)::integer AS dormant FROM counted JOIN pushed ON pushed.id = counted.device_id
        WHERE counted.dormant GROUP BY pushed.cohort) n
    WHERE c.broadcast_id = :'bc' AND c.wave = 1 AND c.cohort = n.cohort
)
SELECT (SELECT count(*) FROM taken), (SELECT count(*) FROM counted), (SELECT count(*) FROM counted WHERE dormant)"""
with open(f"{tmp}/before.sql", "w") as f:
    f.write("\\set bc '00000000-0000-0000-0000-0000000000b1'\n\\set ed '00000000-0000-0000-0000-0000000000e1'\n")
    f.write("INSERT INTO uncounted_pushes (broadcast_id, cohort, device_ids)"
            f" SELECT :'bc', 0, array_agg(id ORDER BY id) FROM bench_batches WHERE b < {sample * 16} GROUP BY b ORDER BY b;\n")
    f.write("\\timing on\n\\echo COUNT\n" + (before + ";\n") * sample)
# Enough statements for every batch and every key range, and a few more (they find nothing and are not counted).
devices = int(sys.argv[3])
with open(f"{tmp}/after.sql", "w") as f:
    f.write("\\set bc '00000000-0000-0000-0000-0000000000b2'\n\\set ed '00000000-0000-0000-0000-0000000000e2'\n")
    f.write("INSERT INTO uncounted_pushes (broadcast_id, cohort, device_ids)"
            " SELECT :'bc', 0, array_agg(id ORDER BY id) FROM bench_batches GROUP BY b ORDER BY b;\n")
    f.write("\\timing on\n")
    f.write("\\echo SORT\n" + (sort + ";\n") * (devices // 64_000 + 10))
    f.write("\\echo COUNT\n" + (count + ";\n") * ((devices >> int(shift)) + 20))
PY
summary() {
    python3 - "$1" "$2" <<'PY'
import re, statistics, sys
path, label = sys.argv[1], sys.argv[2]
phase, rows, pending = None, [], None
for line in open(path):
    if line.strip() in ("SORT", "COUNT"):
        phase = line.strip()
        continue
    m = re.match(r"\s+(\d+) \|\s+(\d+)(?: \|\s+(\d+))?\s*$", line)
    if m and phase:
        pending = [int(x) for x in m.groups() if x is not None]
    m = re.match(r"Time: ([\d.]+) ms", line)
    if m and pending is not None:
        if pending[0] > 0:
            rows.append((phase, pending, float(m.group(1))))
        pending = None
for phase in ("SORT", "COUNT"):
    taken = [r for r in rows if r[0] == phase]
    if not taken:
        continue
    times = sorted(t for _, _, t in taken)
    items = sum(p[0] if phase == "SORT" else p[1] for _, p, _ in taken)
    unit = "recorded batches" if phase == "SORT" else "devices"
    print(f"{label} {phase.lower()}: {len(times)} statement{'s' if len(times) != 1 else ''}, {sum(times) / 1000:.1f} s in all, median {statistics.median(times):.1f} ms,"
          f" p90 {times[int(len(times) * 0.9)]:.1f} ms, max {times[-1]:.1f} ms; {items:,} {unit},"
          f" {sum(times) * 1000 / items:.2f} µs a {'batch' if phase == 'SORT' else 'device'}")
PY
}
echo "== before: migration 0029's statement, 16 recorded batches a statement ($sample statements)"
psql -X -q -c 'VACUUM device_pushes' -c CHECKPOINT
psql -X -q -v ON_ERROR_STOP=1 -f "$tmp/before.sql" > "$tmp/before.out"
summary "$tmp/before.out" before
echo "== after: every recorded batch sorted by key, then counted one key range a statement"
psql -X -q -c 'DELETE FROM uncounted_pushes' -c 'VACUUM device_pushes' -c CHECKPOINT
psql -X -q -v ON_ERROR_STOP=1 -f "$tmp/after.sql" > "$tmp/after.out"
summary "$tmp/after.out" after
