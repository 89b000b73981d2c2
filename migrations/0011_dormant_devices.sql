-- Dormant devices (issue 14): a device that got background pushes for its last N editions and never posted a
-- receipt gets one background push per edition and no follow-ups, until a receipt or a newer registration
-- revives it.
--
-- device_pushes, per device: pushed_edition, the edition of its last counted push (its first accepted wave-1
-- push of each broadcast), and editions_unanswered, how many editions before that one were pushed in a row
-- without a receipt for them. Written when a wave-1 batch is recorded: the count grows by one unless the device
-- posted a receipt for the edition pushed before (then it starts again at 0); a registration sets it to 0.
-- A table of its own, not columns of devices: every active device is counted once a morning, and an update of
-- a devices row (10 million, several indexes, full pages) is a new version in every index. Here a row is
-- 40 bytes with one index, and half of each page is left free (fillfactor 50) so that the morning's update of
-- every row of a page fits beside the old versions: heap-only (HOT), no index write.
--
-- devices.dormant: the count reached the broadcast's dormantAfter. Written only when it changes (a device
-- falling dormant, or revived), so that a later wave reads it from the row it reads anyway, with no probe.
-- A constant default adds the column without rewriting devices.
CREATE TABLE device_pushes (
    device_id bigint PRIMARY KEY REFERENCES devices ON DELETE CASCADE,
    pushed_edition uuid NOT NULL,
    editions_unanswered smallint NOT NULL DEFAULT 0 CHECK (editions_unanswered >= 0)
) WITH (fillfactor = 50);

ALTER TABLE devices ADD COLUMN dormant boolean NOT NULL DEFAULT false;

-- Per wave-1 cohort: the devices pushed that were dormant (they get no follow-ups).
ALTER TABLE broadcast_cohorts ADD COLUMN dormant integer NOT NULL DEFAULT 0;
