-- Paced catch-up: every batch sends in a slot claimed from its wave's shared timeline, so that after a
-- stall (a paused or killed worker, a database or APNs outage) the devices that were due go out later at
-- the plan's rate, after the work already claimed, instead of all at once.

-- The end of the last slot claimed in the wave: the next batch starts at the latest of this, its devices'
-- planned instant and now. behind_seconds: how far the most recent slot lies behind the plan.
ALTER TABLE broadcast_waves ADD COLUMN next_slot timestamptz;
ALTER TABLE broadcast_waves ADD COLUMN behind_seconds double precision NOT NULL DEFAULT 0;

-- When the batch's first device goes out; the rest follow at the wave's rate.
ALTER TABLE broadcast_batches ADD COLUMN slot_start timestamptz;

-- A broadcast whose pushes cannot be built or sent at all (its app's key unreadable, a push over APNs'
-- limit) ends as failed with the reason, instead of retrying every batch until the deadline.
ALTER TABLE broadcasts ADD COLUMN failure text;
ALTER TABLE broadcasts DROP CONSTRAINT broadcasts_state_check;
ALTER TABLE broadcasts ADD CONSTRAINT broadcasts_state_check
    CHECK (state IN ('planned', 'running', 'completed', 'cancelled', 'expired', 'failed'));
