-- The statement DeviceRepository.register runs for one registration, with a random 32-byte token.
-- pgbench runs it directly: the database's own ceiling for device registrations.
\set r random(1, 1000000000000)
WITH subscribed AS (
    SELECT coalesce(array_agg(id ORDER BY id), '{}') AS ids, count(*) AS found
    FROM publications WHERE app_id = 1 AND slug = ANY(ARRAY['morning'])
)
INSERT INTO devices AS d (
    app_id, environment, cohort_key, token, auto_download, alerts_authorized, tier, subscriptions,
    time_zone, app_version, os_version, model, locale
)
SELECT 1, 0, hashtext(:r::text), sha256(:r::text::bytea), true, false, 2, subscribed.ids, 'Asia/Tokyo', '5.1',
    '17.4', 'iPad13,1', 'ja_JP'
FROM subscribed WHERE subscribed.found = 1
ON CONFLICT (app_id, environment, token) DO UPDATE SET
    auto_download = excluded.auto_download,
    alerts_authorized = excluded.alerts_authorized,
    tier = excluded.tier,
    subscriptions = excluded.subscriptions,
    time_zone = excluded.time_zone,
    app_version = excluded.app_version,
    os_version = excluded.os_version,
    model = excluded.model,
    locale = excluded.locale,
    registered_at = now(),
    updated_at = now(),
    deleted_at = NULL,
    active = d.unregistered_at IS NULL OR now() > d.unregistered_at
RETURNING xmax = 0, active, registered_at, updated_at, unregistered_at;
