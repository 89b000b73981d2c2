-- The metrics show each broadcast for an hour after it ended (`paperboy_broadcast_unsent`: how many of its
-- wave-1 targets it never pushed, by how it ended), so that an alert names a failed or expired broadcast; every
-- worker reads them once a second, and the table keeps every broadcast ever sent.
CREATE INDEX broadcasts_finished ON broadcasts (finished_at) WHERE finished_at IS NOT NULL;
