-- Issue 38: an app's words for its edition alerts (the ready alert and the alert last resort), in the app's
-- language, with placeholders ({publication}, {date}, {year}, {month}, {day}) filled per edition. Both or neither:
-- NULL is Paperboy's English default. Checked by `paperboy apps set-alert-text` before they are stored (no
-- placeholder it does not know; short enough for APNs' 4096 bytes with every pending edition's bundles).
ALTER TABLE apps ADD COLUMN alert_title text, ADD COLUMN alert_body text;
ALTER TABLE apps ADD CONSTRAINT apps_alert_text_whole CHECK ((alert_title IS NULL) = (alert_body IS NULL));
