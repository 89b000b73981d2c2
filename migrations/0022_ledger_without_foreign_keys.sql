-- Less database work per delivery (issue 27, item 3). Each delivery row checked its two foreign keys as it was
-- written: a lookup of the device that also locks its row (FOR KEY SHARE: the device's heap page written and a
-- WAL record, for a page read nowhere else in the batch, since a batch's devices are spread over the table by their
-- cohort keys) and a lock on the broadcast's row, shared by every worker recording at the same time (a multixact
-- each time two overlap). At 10 million devices that was a large part of PostgreSQL's CPU per delivery, the
-- resource that bounded wave 1 at about 10,000 pushes a second with two workers.
--
-- Neither check can fail in Paperboy: a delivery is written only for a device read from `devices` in the same
-- batch and for the broadcast whose batch lease the same transaction fences, and no statement deletes devices or
-- broadcasts (devices are deactivated; broadcasts end). What the ledger keeps and prunes is unchanged. A
-- hand-written DELETE of a broadcast now leaves its deliveries, which `paperboy prune` no longer finds: delete
-- them first (`DELETE FROM deliveries WHERE broadcast_id = …`).
ALTER TABLE deliveries DROP CONSTRAINT deliveries_device_id_fkey;
ALTER TABLE deliveries DROP CONSTRAINT deliveries_broadcast_id_fkey;
