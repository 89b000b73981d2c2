-- The alert last resort only to readers who asked for edition alerts (issue 50, finding 8; App Review guideline 4.5.4:
-- the reader opts in to the notifications an app sends). Before, `--alert-last-resort` alerted every device that allowed
-- alerts, whatever the reader had allowed them for (breaking news, a sports app's scores).
--
-- edition_alerts: the reader turned on the app's own "tell me about new editions" setting (registration field
-- `editionAlerts`). The alert last resort goes to devices with `alerts_authorized AND (edition_alerts OR
-- notify_when_ready)`: asking for the ready alert is asking for an edition alert. Existing devices have false until they
-- register again with the field: a reader's consent is not inferred. A constant default: nothing is rewritten.
ALTER TABLE devices ADD COLUMN edition_alerts boolean NOT NULL DEFAULT false;
