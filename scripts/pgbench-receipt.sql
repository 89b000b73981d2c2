-- The statement ReceiptRepository.record runs for one receipt (RecordReceipt, prepared as serve runs it), for a random
-- device of app 1. pgbench cannot read a token list, so the token is the device's own, looked up by a random id
-- (one primary-key probe more than the API's statement). Variables: maxid (the largest device id), edition.
-- PgbenchScriptTests checks that it is RecordReceipt.sql with each parameter replaced as below.
\set id random(1, :maxid)
WITH device AS (
    SELECT id, provider FROM devices d
    WHERE d.app_id = 1 AND ((d.provider = 0 AND d.token = (SELECT token FROM devices WHERE id = :id)) OR (d.provider = 1 AND d.token = ''::bytea))
    ORDER BY updated_at DESC LIMIT 1
), edition AS (
    SELECT e.id FROM editions e JOIN publications p ON p.id = e.publication_id
    WHERE e.id = :edition::uuid AND p.app_id = 1
), upsert AS (
    INSERT INTO receipts (
        device_id, edition_id, result, bytes, seconds,
        network, charging, low_power_mode, background_refresh, wave, seconds_from_push, provider
    )
    SELECT device.id, edition.id, 'newData', 52428800, 4.5, 1::smallint, true::boolean, false::boolean, true::boolean,
        1::smallint, 20::integer, device.provider
    FROM device, edition
    ON CONFLICT (device_id, edition_id) DO UPDATE
        SET result = EXCLUDED.result, bytes = EXCLUDED.bytes, seconds = EXCLUDED.seconds, received_at = now(),
            network = EXCLUDED.network, charging = EXCLUDED.charging, low_power_mode = EXCLUDED.low_power_mode,
            background_refresh = EXCLUDED.background_refresh, wave = EXCLUDED.wave,
            seconds_from_push = EXCLUDED.seconds_from_push, provider = EXCLUDED.provider
        WHERE receipts.result = 'failed' AND EXCLUDED.result <> 'failed'
    RETURNING device_id, result, bytes, seconds, received_at, (xmax = 0) AS created,
        network, charging, low_power_mode, background_refresh, wave, seconds_from_push
)
SELECT (SELECT id FROM device), EXISTS (SELECT 1 FROM edition),
    u.result, u.bytes, u.seconds, u.received_at, u.created,
    u.network, u.charging, u.low_power_mode, u.background_refresh, u.wave, u.seconds_from_push
FROM (SELECT 1) one LEFT JOIN upsert u ON true;
