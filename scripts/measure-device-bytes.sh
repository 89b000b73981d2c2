#!/usr/bin/env bash
# Measures what one device costs in PostgreSQL (table + indexes) with N realistic rows (default 1,000,000).
# Usage: scripts/with-postgres.sh scripts/measure-device-bytes.sh [N]
set -euo pipefail
n=${1:-1000000}
paperboy=${PAPERBOY:-.build/debug/paperboy}
"$paperboy" migrate >/dev/null
psql -X -q -v ON_ERROR_STOP=1 <<SQL
INSERT INTO apps (bundle_id, team_id, key_id, key_reference)
    VALUES ('com.example.news', 'TEAM123456', 'KEY1234567', '/keys/news.p8');
INSERT INTO app_api_keys (app_id, key_hash) VALUES (1, sha256('key'::bytea));
INSERT INTO publications (app_id, slug) VALUES (1, 'morning'), (1, 'evening');
-- 32-byte tokens, both publications, typical strings for the optional fields.
INSERT INTO devices (app_id, environment, cohort_key, token, auto_download, alerts_authorized, tier, subscriptions,
                     time_zone, app_version, os_version, model, locale)
SELECT 1, 0, hashtext(i::text), sha256(i::text::bytea), true, false, 2, '{1,2}',
       'Asia/Tokyo', '5.1.2', '17.4.1', 'iPhone15,2', 'ja_JP'
FROM generate_series(1, $n) AS i;
VACUUM ANALYZE devices;
SQL
psql -X -A -F ' ' -t <<SQL
SELECT 'rows', count(*) FROM devices;
SELECT 'heap_bytes_per_device', round(pg_relation_size('devices')::numeric / $n, 1);
SELECT 'index_bytes_per_device ' || indexrelid::regclass, round(pg_relation_size(indexrelid)::numeric / $n, 1)
    FROM pg_index WHERE indrelid = 'devices'::regclass;
SELECT 'total_bytes_per_device', round(pg_total_relation_size('devices')::numeric / $n, 1);
SELECT 'total_for_10_million_GiB', round(pg_total_relation_size('devices')::numeric / $n * 10000000 / 1073741824, 2);
SQL
