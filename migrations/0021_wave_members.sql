-- Later waves' audiences, recorded when they are counted (issue 27, item 2). Leasing a follow-up batch used to
-- find its last device by evaluating the wave's audience device by device along the cohort's keys (receipts,
-- pushes so far, dormancy: several index probes per device, most of them for devices that answered and are not in
-- the wave), twice per batch and again for its targets: 113 ms a batch at 10 million devices, so wave 2 ran at
-- 3,800/s against a 10,000/s plan. The worker that counts a later wave now writes its members here in the same
-- read, and the wave's batches are carved and read from this table's primary key: the audience is evaluated once
-- per device when counted, and once more per member when its batch is sent (a receipt that arrived since keeps
-- the device out). A device that joins the audience after the count (a new registration) waits for the next
-- edition, as the count planned the wave without it.
--
-- About 120 bytes a member with its primary key (measured: 3,333,333 members, 397 MB), so about 400 MB for wave 2
-- of a 10-million-device morning, until the ledger pruner deletes the members of waves that ended. No foreign keys: each would add a
-- lock per row written by the count, and the pruner removes the rows of waves that ended.
CREATE TABLE wave_members (
    broadcast_id    uuid NOT NULL,
    wave            smallint NOT NULL,
    cohort_key      integer NOT NULL,
    device_id       bigint NOT NULL,
    PRIMARY KEY (broadcast_id, wave, cohort_key, device_id)
);

-- Whether a wave's batches are carved from wave_members: set when the wave starts with recorded members. A wave
-- counted by a worker of an earlier version (a rolling upgrade) has none and is carved as before.
ALTER TABLE broadcast_waves ADD COLUMN members boolean NOT NULL DEFAULT false;
