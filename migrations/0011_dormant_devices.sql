-- Dormant devices (issue 14): a device that got background pushes for its last N editions and never posted a
-- receipt gets one background push per edition and no follow-ups, until a receipt or a newer registration
-- revives it.
--
-- Per device: pushed_edition, the edition of its last counted push (its first accepted wave-1 push of each
-- broadcast), and editions_unanswered, how many editions before that one were pushed in a row without a
-- receipt for them. Written when a wave-1 batch is recorded: the count grows by one unless the device posted a
-- receipt for the edition pushed before (then it starts again at 0); a registration sets it to 0. A device is
-- dormant for edition E when pushed_edition = E and editions_unanswered >= the broadcast's dormantAfter.
--
-- A table of its own, not columns of devices: every active device is written once a morning, and an update
-- of a devices row (10 million, several indexes, full pages) is a new row version in every index. Here a row
-- is 40 bytes with one index, and the free space left in each page (fillfactor 80) keeps the daily update
-- heap-only (HOT): no index write at all. A device without a row was never counted: not dormant.
CREATE TABLE device_pushes (
    device_id bigint PRIMARY KEY REFERENCES devices ON DELETE CASCADE,
    pushed_edition uuid NOT NULL,
    editions_unanswered smallint NOT NULL DEFAULT 0 CHECK (editions_unanswered >= 0)
) WITH (fillfactor = 80);

-- Per wave-1 cohort: the devices pushed that were dormant (they get no follow-ups).
ALTER TABLE broadcast_cohorts ADD COLUMN dormant integer NOT NULL DEFAULT 0;
