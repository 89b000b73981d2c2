-- Ready at open counted as opens and receipts arrive (issue 49, item 3: the status at 10,000,000 devices). The status
-- counted it from every first open of the broadcast on every read, joined with the edition's receipts: 300,000 opens
-- at 1,000,000 devices made any status 0.5-0.6 s, and the console reads it every 5 s per running broadcast.
--
-- The receipt tallies' steps (every 2 s, one worker at a time, under the watermark of receipt_tally_state) now also
-- count the opens that arrived in their window and the waits that ended in it, into ready_at_open_tallies; the status
-- reads a few dozen rows. A wait ends when both its open and its successful receipt are there: a step counts it in the
-- window that holds the later of the two.
--
-- broadcast_opens.opened_at is when the open was stored (the open statement's start, as a receipt's received_at).
-- Nullable, so that no row is rewritten: the opens stored before this migration have none, and are counted here.
ALTER TABLE broadcast_opens ADD COLUMN opened_at timestamptz;
ALTER TABLE broadcast_opens ALTER COLUMN opened_at SET DEFAULT now();
CREATE INDEX broadcast_opens_by_time ON broadcast_opens (opened_at);

-- kind 0: first opens that found the edition held; 1: first opens that did not; 2: of those, the waits that ended,
-- by bucket: floor(ln(1 + seconds) * 20) (ReadyAtOpen.WaitBuckets). bucket is 0 for kinds 0 and 1.
CREATE TABLE ready_at_open_tallies (
    broadcast_id    uuid NOT NULL,
    kind            smallint NOT NULL CHECK (kind BETWEEN 0 AND 2),
    bucket          integer NOT NULL CHECK (bucket >= 0),
    count           bigint NOT NULL,
    PRIMARY KEY (broadcast_id, kind, bucket)
);

-- The opens stored so far, and their waits that ended by the watermark (later receipts are the steps').
INSERT INTO ready_at_open_tallies (broadcast_id, kind, bucket, count)
SELECT broadcast_id, CASE WHEN waiting_since IS NULL THEN 0 ELSE 1 END, 0, count(*) FROM broadcast_opens GROUP BY 1, 2
UNION ALL
SELECT o.broadcast_id, 2, floor(ln(1 + greatest(0, extract(epoch FROM r.received_at - o.waiting_since)::float8)) * 20)::integer, count(*)
FROM broadcast_opens o
JOIN broadcasts b ON b.id = o.broadcast_id
JOIN receipts r ON r.device_id = o.device_id AND r.edition_id = b.edition_id AND r.result <> 'failed'
    AND r.received_at <= (SELECT counted_through FROM receipt_tally_state)
WHERE o.waiting_since IS NOT NULL
GROUP BY 1, 3;
