-- Receipt tallies (issue 26, item 1): a broadcast's receipt counts by result, per wave and cohort and by provider,
-- kept in a few hundred rows instead of counted from every receipt of the edition on every status request (1.8 s +
-- 13.4 s at 10 million devices). The receipt path stays one statement with no trigger: the dispatchers count the
-- receipts that arrived since the last step every two seconds (`ReceiptTallies.step`), and recount a broadcast
-- exactly once it has ended. `receipt_tallies` holds what was counted through `receipt_tally_state.counted_through`.

-- The step reads the receipts that arrived since the last one through the index receipts already have,
-- (edition_id, received_at) (migration 0003), once per edition whose deadline is less than two weeks old: each
-- probe reads the window's entries and nothing else, and the receipt path gets no new index to write. (A BRIN
-- index on received_at would need the table's physical order to follow received_at; pruning breaks that: new
-- receipts fill the pages old ones left, the planner's correlation falls towards -0.5 for a week's ring, and it
-- would judge a BRIN scan to read half the table and choose a sequential scan of it every two seconds.)
CREATE INDEX editions_by_deadline ON editions (deadline);

-- Receipts counted, by edition: broadcast_id NULL is the edition's own count, every receipt once (the status's
-- `receipts`, and devices no broadcast reached); a row with a broadcast counts the receipts of the devices that
-- broadcast delivered to, in the wave and cohort of its last delivery to the device, as the status has always
-- shown them. A device reached by two broadcasts of one edition (one cancelled, then started again) is in both,
-- and once in the edition's count. provider: 0 = APNs, 1 = FCM (devices.provider).
CREATE TABLE receipt_tallies (
    edition_id      uuid NOT NULL REFERENCES editions (id) ON DELETE CASCADE,
    broadcast_id    uuid REFERENCES broadcasts (id) ON DELETE CASCADE,
    wave            smallint NOT NULL DEFAULT 0,
    cohort          integer NOT NULL DEFAULT 0,
    provider        smallint NOT NULL CHECK (provider IN (0, 1)),
    result          text NOT NULL CHECK (result IN ('newData', 'noData', 'failed')),
    count           bigint NOT NULL,
    CONSTRAINT receipt_tallies_key UNIQUE NULLS NOT DISTINCT (edition_id, broadcast_id, wave, cohort, provider, result)
);

-- Where each counted `failed` receipt was counted (the edition's count, and each broadcast's wave and cohort), so
-- that when it is upgraded to newData or noData the step moves that count instead of counting the device twice,
-- even if the device got a later wave meanwhile. One row per failed receipt and count: a few per cent of receipts.
CREATE TABLE receipt_tally_failures (
    edition_id      uuid NOT NULL REFERENCES editions (id) ON DELETE CASCADE,
    device_id       bigint NOT NULL,
    broadcast_id    uuid REFERENCES broadcasts (id) ON DELETE CASCADE,
    wave            smallint NOT NULL DEFAULT 0,
    cohort          integer NOT NULL DEFAULT 0,
    provider        smallint NOT NULL CHECK (provider IN (0, 1)),
    CONSTRAINT receipt_tally_failures_key UNIQUE NULLS NOT DISTINCT (edition_id, device_id, broadcast_id)
);

-- The watermark: receipts with received_at up to counted_through are in the tallies. One row, locked by the worker
-- that steps (FOR UPDATE SKIP LOCKED: the others skip). It starts at this migration: receipts stored before it are
-- counted when their broadcast is recounted (it has ended, or `paperboy broadcast status --exact`).
CREATE TABLE receipt_tally_state (
    singleton       boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    counted_through timestamptz NOT NULL
);
INSERT INTO receipt_tally_state (counted_through) VALUES (now());

-- A broadcast's last exact recount: when (the recounting worker's clock, like broadcasts.finished_at) and through
-- which watermark. A broadcast that ended is recounted once its last batches can no longer record.
CREATE TABLE receipt_tally_recounts (
    broadcast_id    uuid PRIMARY KEY REFERENCES broadcasts (id) ON DELETE CASCADE,
    recounted_at    timestamptz NOT NULL,
    counted_through timestamptz NOT NULL
);
