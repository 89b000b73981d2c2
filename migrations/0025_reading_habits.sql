-- Reading habits and "ready at open" (issue 37). The app reports each time it comes to the foreground
-- (`POST /v1/devices/{token}/opens`); Paperboy keeps no report, only what follows from them.
--
-- device_habits, per device: the usual first-open minute of the reader's day (from 03:00 local, in the device's
-- time zone) per day type, with its confidence (mornings learned from, and the mean absolute deviation of a
-- morning from it, in minutes), and the reader's day of the last first open learned (later opens that day teach
-- nothing). The update rule is Swift (`ReadingHabit`), written back by the open report. cohort_key is the stored key
-- the habit last asked for: the report moves devices.cohort_key to it, so that workers, which send a cohort in
-- key order, reach early readers first (`ReadingHabit.cohortKey`). A device whose key is the token's own hash has
-- no known habit yet.
--
-- A table of its own, as device_pushes (migration 0011): one narrow row a reader updates once a morning, heap-only
-- (HOT, no index write) with half of each page left free; the devices row is written only when the key moves. No
-- foreign key: a check would lock the device's row for every report (migration 0022), and devices are never
-- deleted.
CREATE TABLE device_habits (
    device_id           bigint PRIMARY KEY,
    weekday_minute      real,
    weekday_spread      real,
    weekday_mornings    integer NOT NULL DEFAULT 0,
    weekend_minute      real,
    weekend_spread      real,
    weekend_mornings    integer NOT NULL DEFAULT 0,
    last_day            integer NOT NULL,
    cohort_key          integer
) WITH (fillfactor = 50);

-- A broadcast's first opens: one row per target that opened the app after its edition was published and before
-- the deadline, written by its first open then (`ON CONFLICT DO NOTHING` keeps the first). waiting_since is NULL
-- when the open found the edition held (a successful receipt stored before it); otherwise the open's time, by
-- the database's clock like receipts.received_at, so that the wait is the receipt's time minus it. The only time of
-- an open kept anywhere, and only for a reader who did not find the edition; the ledger pruner deletes a
-- broadcast's rows with its deliveries. No foreign keys, as wave_members.
CREATE TABLE broadcast_opens (
    broadcast_id        uuid NOT NULL,
    device_id           bigint NOT NULL,
    waiting_since       timestamptz,
    PRIMARY KEY (broadcast_id, device_id)
);
