-- The reader asked to be told when the edition is ready (issue 14, the NSE path): for such devices a
-- broadcast sends, in place of the last background follow-up, an alert with mutable-content: 1 whose
-- Notification Service Extension fetches the small tier. Distinct from alerts_authorized (the system's
-- permission): the alert goes only to devices with both. A constant default adds the column without
-- rewriting the 10-million-row table.
ALTER TABLE devices ADD COLUMN notify_when_ready boolean NOT NULL DEFAULT false;
