-- An open report that is the reader's first open of the day, as HabitRepository.recordOpen runs it (ReadDeviceHabit,
-- then WriteOpen, both prepared as serve runs them), for a random device of app 1: the habit written, the open
-- counted for the live edition's broadcast, and in :movepermille of 1,000 reports the device's key moved (a Friday's
-- or Sunday's switch of day type, a habit drifting more than 5 minutes); the rest keep the key they have. pgbench
-- cannot read a token list, so the token is the device's own, looked up by a random id (one primary-key probe more
-- than the API's statement), and the habit's values are drawn instead of computed in Swift.
-- Variables: maxid (the largest device id), movepermille.
\set id random(1, :maxid)
\set minute random(120, 360)
\set move random(1, 1000)
\set day random(100000, 2000000000)
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
    SELECT :id, :minute, 10, 6, NULL, NULL, 0, :day,
        CASE WHEN :move <= :movepermille THEN (:minute * 2982616 - 2147483648 + :id % 2982616)::integer
            ELSE (SELECT cohort_key FROM devices WHERE id = :id) END
    WHERE true
    ON CONFLICT (device_id) DO UPDATE SET
        weekday_minute = excluded.weekday_minute, weekday_spread = excluded.weekday_spread,
        weekday_mornings = excluded.weekday_mornings, weekend_minute = excluded.weekend_minute,
        weekend_spread = excluded.weekend_spread, weekend_mornings = excluded.weekend_mornings,
        last_day = excluded.last_day, cohort_key = excluded.cohort_key
    WHERE h.last_day < excluded.last_day
    RETURNING 1
), moved AS (
    UPDATE devices SET cohort_key = (:minute * 2982616 - 2147483648 + :id % 2982616)::integer FROM d
    WHERE devices.id = d.id AND :move <= :movepermille AND d.cohort_key <> (:minute * 2982616 - 2147483648 + :id % 2982616)::integer
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
