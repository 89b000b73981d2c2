-- Indexes that keep every statement a request or a dispatch batch runs off sequential scans of the big
-- tables (PaperboyStore's `RequestStatements` lists those statements; a test EXPLAINs each of them).
-- Device lookups by token need none: they name both environments, which the unique
-- (app_id, environment, token) index answers.

-- The hourly budget: a device's background pushes since an hour ago, without reading its whole history.
CREATE INDEX deliveries_recent_background ON deliveries (device_id, sent_at) WHERE background;

-- A wave's audience reads the deliveries of the edition's broadcasts (few) by device; starting a
-- broadcast and the scheduler look for an edition's broadcasts.
CREATE INDEX broadcasts_by_edition ON broadcasts (edition_id);

-- GET /v1/broadcasts lists the newest first.
CREATE INDEX broadcasts_newest ON broadcasts (created_at DESC);

-- Leasing looks for cohorts with keys left; the table keeps every finished cohort of every broadcast.
CREATE INDEX broadcast_cohorts_open ON broadcast_cohorts (broadcast_id, wave) WHERE next_key < end_key;

-- Pruning the ledger: receipts older than the retention, edition by edition.
CREATE INDEX receipts_by_edition_received ON receipts (edition_id, received_at);
DROP INDEX receipts_by_edition;
