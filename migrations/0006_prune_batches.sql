-- A finished broadcast's batch rows are pruned with its deliveries (LedgerPruner): found by broadcast,
-- in id order, a few thousand at a time.
CREATE INDEX broadcast_batches_by_broadcast ON broadcast_batches (broadcast_id, id);
