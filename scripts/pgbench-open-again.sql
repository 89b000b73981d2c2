-- A later open of the same day, as HabitRepository.recordOpen runs it: ReadDeviceHabit, then WriteOpen with nothing
-- learned and the key the device has (nothing moves); the open is counted only if it is the device's first since the
-- edition's publication. Otherwise as pgbench-open.sql. Variables: maxid.
\set id random(1, :maxid)
SELECT d.id, d.token, d.time_zone, d.cohort_key,
    h.weekday_minute, h.weekday_spread, h.weekday_mornings, h.weekend_minute, h.weekend_spread, h.weekend_mornings,
    h.last_day
FROM (
    (SELECT * FROM devices WHERE app_id = 1 AND provider = 0 AND token = (SELECT token FROM devices WHERE id = :id))
    UNION ALL (SELECT * FROM devices WHERE app_id = 1 AND provider = 1 AND token = '\x'::bytea)
    ORDER BY updated_at DESC LIMIT 1) d
LEFT JOIN device_habits h ON h.device_id = d.id;
WITH d AS (
    SELECT id, environment, subscriptions, active, auto_download, cohort_key FROM devices WHERE id = :id
), live AS (
    SELECT b.id AS broadcast_id, e.id AS edition_id, b.state,
        NOT EXISTS (SELECT 1 FROM broadcast_waves w WHERE w.broadcast_id = b.id AND w.wave = 1 AND w.finished_at IS NOT NULL)
            AS first_wave_open
    FROM d CROSS JOIN LATERAL unnest(d.subscriptions) s (publication_id)
    CROSS JOIN LATERAL (
        SELECT e.id, e.deadline FROM editions e WHERE e.publication_id = s.publication_id AND e.published_at <= now()
        ORDER BY e.published_at DESC LIMIT 1) e
    JOIN broadcasts b ON b.edition_id = e.id AND b.environment = d.environment AND b.state <> 'cancelled'
    WHERE e.deadline > now()
), learned AS (
    INSERT INTO device_habits AS h (
        device_id, weekday_minute, weekday_spread, weekday_mornings, weekend_minute, weekend_spread, weekend_mornings,
        last_day, cohort_key)
    SELECT :id, NULL, NULL, 0, NULL, NULL, 0, 0, NULL
    WHERE false
    ON CONFLICT (device_id) DO UPDATE SET
        weekday_minute = excluded.weekday_minute, weekday_spread = excluded.weekday_spread,
        weekday_mornings = excluded.weekday_mornings, weekend_minute = excluded.weekend_minute,
        weekend_spread = excluded.weekend_spread, weekend_mornings = excluded.weekend_mornings,
        last_day = excluded.last_day, cohort_key = excluded.cohort_key
    WHERE h.last_day < excluded.last_day
    RETURNING 1
), moved AS (
    UPDATE devices SET cohort_key = d.cohort_key FROM d
    WHERE devices.id = d.id AND d.cohort_key <> d.cohort_key
        AND NOT EXISTS (SELECT 1 FROM live WHERE live.state IN ('planned', 'running') AND live.first_wave_open)
    RETURNING 1
), opened AS (
    INSERT INTO broadcast_opens (broadcast_id, device_id, waiting_since)
    SELECT live.broadcast_id, d.id,
        CASE WHEN EXISTS (
            SELECT 1 FROM receipts r WHERE r.device_id = d.id AND r.edition_id = live.edition_id AND r.result <> 'failed')
        THEN NULL ELSE now() END
    FROM live, d WHERE d.active AND d.auto_download
    ON CONFLICT DO NOTHING
    RETURNING waiting_since IS NULL AS held
)
SELECT (SELECT count(*) FROM learned), (SELECT count(*) FROM moved),
    (SELECT count(*) FROM opened WHERE held), (SELECT count(*) FROM opened WHERE NOT held);
