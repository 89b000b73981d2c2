-- A receipt keeps its device's provider (issue 49, item 3: the receipt tally without a read of the device). The
-- dispatchers' tally step attributed each new receipt to its device's provider by reading the device's row: one random
-- probe of `devices` per receipt, about as much as the probe of the ledger for the receipt's wave and cohort, and at
-- 10,000,000 devices the step took 221 ms a call. The statements that record a receipt find the device anyway; they now
-- store its provider with it, and the tally reads it there. Receipts stored before this migration have NULL: the tally
-- and the recount read their device as before. Nullable and without a default: no row is rewritten.
ALTER TABLE receipts ADD COLUMN provider smallint;
