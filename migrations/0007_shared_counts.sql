-- A later wave's audience, counted by one worker for all: counting takes minutes at 10 million devices, and
-- every worker counting it at once multiplied that load on the database. A worker claims the count
-- (counter, counting_until), stores the counts per cohort by kind (counts: {"background": [n, …]}) with the
-- moment they were taken in the counting worker's clock (counted_at); the others read them. A claim that
-- lapses (its worker died) is taken by another.
CREATE TABLE broadcast_counts (
    broadcast_id uuid NOT NULL REFERENCES broadcasts (id) ON DELETE CASCADE,
    wave smallint NOT NULL,
    counter text NOT NULL,
    counting_until timestamptz,
    counts jsonb,
    counted_at timestamptz,
    PRIMARY KEY (broadcast_id, wave)
);
