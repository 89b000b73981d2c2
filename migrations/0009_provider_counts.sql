-- A broadcast's outcomes per provider (APNs, FCM), beside the totals: keys "<provider>/sent",
-- "<provider>/accepted" and "<provider>/<reason>" (a rejection's reason, fateUnknown, notSent), summed key by
-- key like rejected and skipped. A constant default adds the column without rewriting the table.
ALTER TABLE broadcast_cohorts ADD COLUMN providers jsonb NOT NULL DEFAULT '{}'::jsonb;
