-- Less database work while wave 1 runs (issue 36). Counting wave 1's pushes towards dormancy (device_pushes,
-- migration 0011) was an upsert per device in every batch's recording transaction: a quarter of PostgreSQL's time
-- in wave 1 at 1,000,000 devices, 28 % at 10,000,000 (BENCHMARKS.md). Dormancy is read only by later waves (and by
-- the next editions' counts), so it is now counted after wave 1, between the waves, when the database is idle.
--
-- A recorded wave-1 batch writes one row here instead: its accepted background pushes' device ids, as an array
-- (one small row per batch, not one per device). Once the broadcast's wave 1 has nothing left to send (or the
-- broadcast ended: cancelled, expired, failed), a worker counts the rows, a few batches per statement, deleting
-- each row in the statement that counts it: every push counted once. The broadcast's next wave is neither counted
-- nor started before its rows are gone, so that its audience leaves out the devices that fell dormant.
--
-- No foreign key: a row lives seconds to minutes after its broadcast's wave 1, and a check per batch would share
-- the broadcast's row, as the ledger's did (migration 0022).
CREATE TABLE uncounted_pushes (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    broadcast_id uuid NOT NULL,
    cohort       integer NOT NULL,
    device_ids   bigint[] NOT NULL
);
CREATE INDEX uncounted_pushes_by_broadcast ON uncounted_pushes (broadcast_id, id);
