-- The worker's tables stop naming the providers (issue 47, item 1: the provider seam closes in the store too).
-- sender_status, receipt_tallies, receipt_tally_failures and provider_holds each checked `provider IN (0, 1)`, so a
-- third provider would have needed a migration of four tables that keep nothing about a provider but its code, which
-- Paperboy writes from its own enum (`PushProvider`). What a provider's devices must be (their platforms, token
-- lengths, environments) stays on `devices`, where it is about the provider. Dropping a CHECK reads no row.
ALTER TABLE sender_status DROP CONSTRAINT sender_status_provider_check;
ALTER TABLE receipt_tallies DROP CONSTRAINT receipt_tallies_provider_check;
ALTER TABLE receipt_tally_failures DROP CONSTRAINT receipt_tally_failures_provider_check;
ALTER TABLE provider_holds DROP CONSTRAINT provider_holds_provider_check;
