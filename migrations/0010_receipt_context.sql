-- What the app knew when a push ran, sent with its receipt (all optional): the network, whether the device was
-- charging, in Low Power Mode, and allowed Background App Refresh, the wave of the push that ran (echoed from
-- the push's `wave` key) and the seconds from the push's arrival to the run. `paperboy insights wake-rates`
-- reads them.
--
-- receipts grows by millions a day at 10 million devices: nullable columns without defaults are added without
-- rewriting the table (a row written before has NULLs, which cost nothing), and smallint and boolean keep a row
-- small. network: 0 = wifi, 1 = cellular, 2 = none. seconds_from_push is an integer, not a smallint: a push that
-- arrives in the evening may run the next morning, more than smallint's 9 hours later.
--
-- The check is NOT VALID: it holds for every row written from now on, and every existing row is NULL in these
-- columns, so validating it would only read the whole table under an exclusive lock for nothing.
ALTER TABLE receipts
    ADD COLUMN network smallint,
    ADD COLUMN charging boolean,
    ADD COLUMN low_power_mode boolean,
    ADD COLUMN background_refresh boolean,
    ADD COLUMN wave smallint,
    ADD COLUMN seconds_from_push integer,
    ADD CONSTRAINT receipts_context CHECK (
        (network IS NULL OR network IN (0, 1, 2))
        AND (wave IS NULL OR wave >= 1)
        AND (seconds_from_push IS NULL OR seconds_from_push BETWEEN 0 AND 86400)
    ) NOT VALID;
