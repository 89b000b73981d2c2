-- Less database work per delivery (issue 36). Counting wave 1's pushes towards dormancy (device_pushes, migration
-- 0011) checked the row's foreign key for every device counted for the first time: a lookup of the device that also
-- locks its row (FOR KEY SHARE: the device's heap page written and a WAL record). In a fleet's first morning that is
-- every device, and pg_stat_statements counted one such check per delivery (1,000,000 at 1,000,000 devices), the
-- same cost migration 0022 took off the ledger.
--
-- The check cannot fail in Paperboy: a device is counted only when read from `devices` in the same batch, and the
-- one statement that deletes devices (erasing one: `DELETE /v1/devices/{token}?erase=true`, `paperboy devices
-- erase`) now deletes its device_pushes row itself, as ON DELETE CASCADE did.
ALTER TABLE device_pushes DROP CONSTRAINT device_pushes_device_id_fkey;
