-- Less database work per receipt (issue 49). A receipt row checked its foreign key to `editions` as it was written:
-- the referential-integrity trigger ran a lookup of the edition for every receipt, and each statement locked the
-- edition's row (FOR KEY SHARE: the edition's heap page written and a WAL record; with the receipts' two sessions at
-- once, a MultiXact), for the one edition every reader of a morning reports against.
--
-- The check cannot fail in Paperboy: no statement deletes an edition, and the statements that write receipts
-- (RecordReceipt, RecordReceipts) write one only for an edition of the device's app, which they read themselves.
-- Migration 0028 dropped the receipts' foreign key to `devices` for the same reason.
ALTER TABLE receipts DROP CONSTRAINT receipts_edition_id_fkey;
