-- Dormant devices (issue 14): a device that got background pushes for its last N editions and never posted a
-- receipt gets one background push per edition and no follow-ups, until a receipt or a newer registration
-- revives it.
--
-- pushed_edition: the edition of the device's last counted push (its first accepted wave-1 push of each
-- broadcast); editions_unanswered: how many editions before that one were pushed in a row without a receipt
-- for them. Both are written when a wave-1 batch is recorded: the count grows by one unless the device posted a
-- receipt for the edition pushed before (then it starts again at 0), and a registration sets it to 0. A device
-- is dormant for edition E when pushed_edition = E and editions_unanswered >= the broadcast's dormantAfter.
--
-- devices has 10 million rows: a nullable column and a column with a constant default are added without
-- rewriting the table. Neither is indexed, so the update at each push can stay a heap-only (HOT) update when
-- the page has room.
ALTER TABLE devices
    ADD COLUMN pushed_edition uuid,
    ADD COLUMN editions_unanswered smallint NOT NULL DEFAULT 0;

-- Per wave-1 cohort: the devices pushed that were dormant (they get no follow-ups).
ALTER TABLE broadcast_cohorts ADD COLUMN dormant integer NOT NULL DEFAULT 0;
