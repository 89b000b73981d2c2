-- The statement DeviceRepository.register runs for one registration (RegisterDevice, prepared as serve runs it), with
-- a random 32-byte token: the database's own ceiling for device registrations. PgbenchScriptTests checks that it is
-- RegisterDevice.sql with each parameter replaced as below.
\set r random(1, 1000000000000)
WITH subscribed AS (
    SELECT coalesce(array_agg(id ORDER BY id), '{}') AS ids, count(*) AS found
    FROM publications WHERE app_id = 1 AND slug = ANY(ARRAY['morning'])
), upserted AS (
INSERT INTO devices AS d (
    app_id, provider, platform, environment, cohort_key, token, auto_download, alerts_authorized, tier, subscriptions,
    time_zone, app_version, os_version, model, locale, notify_when_ready, edition_alerts
)
SELECT 1, 0, 0, 0, hashtext(:r::text), sha256(:r::text::bytea), true, false, 2, subscribed.ids, 'Asia/Tokyo', '5.1', '17.4', 'iPad13,1', 'ja_JP', false, false
FROM subscribed WHERE subscribed.found = 1
ON CONFLICT (app_id, token, provider, environment) DO UPDATE SET
    platform = excluded.platform,
    auto_download = excluded.auto_download,
    alerts_authorized = excluded.alerts_authorized,
    tier = excluded.tier,
    subscriptions = excluded.subscriptions,
    time_zone = excluded.time_zone,
    app_version = excluded.app_version,
    os_version = excluded.os_version,
    model = excluded.model,
    locale = excluded.locale,
    notify_when_ready = excluded.notify_when_ready,
    edition_alerts = excluded.edition_alerts,
    registered_at = now(),
    updated_at = now(),
    deleted_at = NULL,
    dormant = false,
    active = d.unregistered_at IS NULL OR now() > d.unregistered_at
RETURNING id, xmax = 0 AS created, active, registered_at, updated_at, unregistered_at
), revived AS (
    -- A registration revives a dormant device (migration 0011; `dormant` above): its count starts again.
    UPDATE device_pushes p SET editions_unanswered = 0 FROM upserted
    WHERE p.device_id = upserted.id AND p.editions_unanswered <> 0
)
SELECT created, active, registered_at, updated_at, unregistered_at FROM upserted;
