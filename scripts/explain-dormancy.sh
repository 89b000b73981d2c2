#!/usr/bin/env bash
# The dormancy statements (migration 0011) at 1,000,000 devices, on a database of its own:
#   scripts/with-postgres.sh scripts/explain-dormancy.sh      (after swift build -c release --product paperboy)
# Morning A counts every device in batches of 1,000 as the dispatcher does (inserts); half the devices answer A;
# morning B counts them again (updates: how many heap-only?), one batch explained; then a wave-2 audience
# over 1/64 of the key space with and without the dormant flag, and a registration that revives a device.
set -euo pipefail
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
P=${PAPERBOY:-.build/release/paperboy}
$P migrate 2>&1 | tail -1
openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null | openssl pkcs8 -topk8 -nocrypt > "$tmp/key.p8"
$P apps add --bundle-id com.example.news --team-id ABCDE12345 --key-id KEY1234567 --key-file "$tmp/key.p8" >/dev/null
$P publications add morning --app 1 --title Morning >/dev/null
$P devices seed --app 1 --count 1000000 --publication morning 2>&1 | tail -1
psql -X -q <<'SQL'
\timing on
INSERT INTO editions (id, publication_id, issue_date, deadline, manifest) VALUES
  ('00000000-0000-0000-0000-00000000000a', 1, date '2026-11-22', now(), '{}'),
  ('00000000-0000-0000-0000-00000000000b', 1, date '2026-11-23', now() + interval '1 day', '{}');
-- Morning A: every device counted, in batches of 1000 as the dispatcher does.
DO $$ BEGIN FOR i IN 0..999 LOOP
  INSERT INTO device_pushes AS p (device_id, pushed_edition, editions_unanswered)
  SELECT u.id, '00000000-0000-0000-0000-00000000000a', 0 FROM unnest(ARRAY(SELECT generate_series(i*1000+1, i*1000+1000)::bigint)) AS u(id)
  ON CONFLICT (device_id) DO UPDATE SET editions_unanswered = CASE
      WHEN EXISTS (SELECT 1 FROM receipts r WHERE r.device_id = p.device_id AND r.edition_id = p.pushed_edition) THEN 0
      ELSE least(p.editions_unanswered + 1, 10000) END, pushed_edition = EXCLUDED.pushed_edition
  WHERE p.pushed_edition <> EXCLUDED.pushed_edition;
END LOOP; END $$;
INSERT INTO receipts (device_id, edition_id, result, bytes, seconds)
  SELECT id, '00000000-0000-0000-0000-00000000000a', 'newData', 1, 1 FROM devices WHERE id % 2 = 0;
VACUUM ANALYZE device_pushes; ANALYZE receipts; ANALYZE devices;
SELECT pg_size_pretty(pg_total_relation_size('device_pushes')) AS device_pushes, pg_size_pretty(pg_total_relation_size('devices')) AS devices;
-- Morning B, one batch of 1000, explained.
BEGIN;
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF)
WITH counted AS (
INSERT INTO device_pushes AS p (device_id, pushed_edition, editions_unanswered)
SELECT u.id, '00000000-0000-0000-0000-00000000000b', 0 FROM unnest(ARRAY(SELECT generate_series(400001, 401000)::bigint)) AS u(id)
ON CONFLICT (device_id) DO UPDATE SET
    editions_unanswered = CASE
        WHEN EXISTS (SELECT 1 FROM receipts r WHERE r.device_id = p.device_id AND r.edition_id = p.pushed_edition) THEN 0
        ELSE least(p.editions_unanswered + 1, 10000) END,
    pushed_edition = EXCLUDED.pushed_edition
WHERE p.pushed_edition <> EXCLUDED.pushed_edition
RETURNING p.device_id, p.editions_unanswered, 3 > 0 AND p.editions_unanswered >= 3 AS dormant
), flagged AS (
  UPDATE devices d SET dormant = counted.dormant FROM counted WHERE d.id = counted.device_id AND d.dormant <> counted.dormant
) SELECT editions_unanswered FROM counted;
ROLLBACK;
-- Morning B: every device, in batches, then how many updates were heap-only.
SELECT pg_stat_reset_single_table_counters('device_pushes'::regclass);
DO $$ BEGIN FOR i IN 0..999 LOOP
  WITH counted AS (INSERT INTO device_pushes AS p (device_id, pushed_edition, editions_unanswered)
  SELECT u.id, '00000000-0000-0000-0000-00000000000b', 0 FROM unnest(ARRAY(SELECT generate_series(i*1000+1, i*1000+1000)::bigint)) AS u(id)
  ON CONFLICT (device_id) DO UPDATE SET editions_unanswered = CASE
      WHEN EXISTS (SELECT 1 FROM receipts r WHERE r.device_id = p.device_id AND r.edition_id = p.pushed_edition) THEN 0
      ELSE least(p.editions_unanswered + 1, 10000) END, pushed_edition = EXCLUDED.pushed_edition
  WHERE p.pushed_edition <> EXCLUDED.pushed_edition
  RETURNING p.device_id, 3 > 0 AND p.editions_unanswered >= 3 AS dormant)
  UPDATE devices d SET dormant = counted.dormant FROM counted WHERE d.id = counted.device_id AND d.dormant <> counted.dormant;
END LOOP; END $$;
SELECT pg_sleep(1);
SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'device_pushes';
SELECT editions_unanswered, count(*) FROM device_pushes GROUP BY 1 ORDER BY 1;
SQL
psql -X -q <<'SQL'
UPDATE devices SET dormant = true WHERE id % 20 = 1;
VACUUM ANALYZE devices;
VACUUM ANALYZE device_pushes;
\echo '--- wave-2 audience over 1/64 of the key space, with the dormant flag'
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF)
SELECT count(*) FROM devices d WHERE d.app_id = 1 AND d.environment = 0 AND d.active AND d.auto_download AND 1 = ANY (d.subscriptions)
  AND NOT EXISTS (SELECT 1 FROM receipts r WHERE r.device_id = d.id AND r.edition_id = (SELECT '00000000-0000-0000-0000-00000000000b'::uuid) AND r.result <> 'failed' OFFSET 0)
  AND NOT d.dormant
  AND d.cohort_key BETWEEN -2147483648 AND -2080374785;
\echo '--- the same without it'
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF)
SELECT count(*) FROM devices d WHERE d.app_id = 1 AND d.environment = 0 AND d.active AND d.auto_download AND 1 = ANY (d.subscriptions)
  AND NOT EXISTS (SELECT 1 FROM receipts r WHERE r.device_id = d.id AND r.edition_id = (SELECT '00000000-0000-0000-0000-00000000000b'::uuid) AND r.result <> 'failed' OFFSET 0)
  AND d.cohort_key BETWEEN -2147483648 AND -2080374785;
\echo '--- a registration that revives (the CTE as the API runs it)'
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF)
WITH upserted AS (
  UPDATE devices SET updated_at = now() WHERE id = 400021 RETURNING id
), revived AS (
  UPDATE device_pushes p SET editions_unanswered = 0 FROM upserted WHERE p.device_id = upserted.id AND p.editions_unanswered <> 0
) SELECT * FROM upserted;
SQL
