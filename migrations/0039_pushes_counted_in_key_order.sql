-- Wave 1's pushes counted towards dormancy in key order (issue 49, item 3: the dormancy count at 10,000,000 devices).
-- A count took 16 recorded batches at a time (migration 0029). A batch's devices are the ones the carve met together,
-- spread over the whole key space, so each device counted read pages of its own: of device_pushes, of the receipts'
-- index and of devices. At 10,000,000 devices that was 35 µs a device, 570-690 ms a statement of 16,000.
--
-- A count now sorts first. It takes up to 64 recorded batches and writes their devices back, sorted, one row per key
-- range and cohort (key_range: the device id's high bits, 16,384 ids a range). Once no recorded batch is left, it
-- counts one key range a statement: neighbours together, each page read once for all the devices on it.
--
-- Recorded rows have no key_range. The index leads with the broadcast as before (the ended broadcasts' skip scan)
-- and serves both the recorded rows in order and the sorted rows by range.
ALTER TABLE uncounted_pushes ADD COLUMN key_range bigint;
DROP INDEX uncounted_pushes_by_broadcast;
CREATE INDEX uncounted_pushes_by_broadcast ON uncounted_pushes (broadcast_id, key_range, id);
