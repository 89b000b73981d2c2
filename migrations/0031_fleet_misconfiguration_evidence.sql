-- The misconfiguration breaker sees the whole fleet (issue 47, findings 1 and 3).
--
-- Each worker judged only its own answers: a hold needed one worker to see at least 10 "token not valid for this app"
-- answers, more than half of its last 200. A small or slowly paced app spread over several workers (150 iOS devices
-- over 30 minutes, four workers) tripped none, and its held deactivations were applied ten minutes later: a wrong
-- bundle id deactivated the whole fleet, and no alert fired.
--
-- answer_tallies: every worker adds, in the transaction that records a batch, how many answers it recorded through
-- each of the app's providers and how many of them said "not valid for this app", by the ten seconds they were sent in
-- (one row per app, provider, ten seconds and worker: no two workers write the same row; a batch recorded late adds to
-- when its pushes went out). Before any held deactivation is applied, the workers'
-- per-second duty reads the sums from the ten seconds the oldest held answer's push was sent in on (in those ten seconds, only the
-- answers after a "not valid" one), from every worker, and holds the
-- provider instead when the fleet's answers say misconfiguration (MisconfigurationGuard.judge). Ten seconds, not a
-- minute: the answers accepted before a misconfiguration began must not outweigh those after it (found by the
-- simulation: a batch taken over after its worker died, sent after the bundle id went wrong). A change of the app's configuration (set-apns, set-fcm,
-- release, confirm) deletes its rows: the evidence is the current configuration's. Rows older than a day are deleted
-- by the same duty.
CREATE TABLE answer_tallies (
    app_id     integer NOT NULL,
    provider   smallint NOT NULL,
    period     timestamptz NOT NULL,
    worker     text NOT NULL,
    answers    integer NOT NULL,
    invalid    integer NOT NULL,
    -- Of the answers, those sent at or after the first "not valid" one of their batch (every one after it, once the row
    -- has one): the ten seconds in which a misconfiguration began count only what came after it.
    since_invalid integer NOT NULL,
    -- The "not valid" answer most of this row's invalid ones were, as the provider spells it, and what it means when
    -- every device hears it: the hold's reason.
    reason     text NOT NULL DEFAULT '',
    hint       text NOT NULL DEFAULT '',
    PRIMARY KEY (app_id, provider, period, worker)
);
CREATE INDEX answer_tallies_by_period ON answer_tallies (period);

-- When the push a held deactivation answered went out (the worker's clock, paced on the database's): the evidence is
-- kept by when pushes were sent, and read from the ten seconds of the oldest held one. Rows held before this migration
-- take their answer's time.
ALTER TABLE held_deactivations ADD COLUMN sent_at timestamptz;
UPDATE held_deactivations SET sent_at = answered_at;
ALTER TABLE held_deactivations ALTER COLUMN sent_at SET NOT NULL;
CREATE INDEX held_deactivations_by_sending ON held_deactivations (app_id, provider, sent_at);

-- An operator's `paperboy apps confirm-deactivations`: the tokens really are invalid (a Firebase project migration
-- that left old-project tokens, an import of another app's tokens). For the configuration version it made (the
-- confirm raises the version) and for 24 hours, "not valid" answers through the provider are the tokens' truth: no
-- worker suspects a misconfiguration from them, and their deactivations are applied after the usual ten minutes. Ends
-- with the next change of the app's configuration (a new version) or after 24 hours. Before, a confirm applied what
-- was held and the breaker tripped again within seconds on the rest: no command got out of the hold.
CREATE TABLE provider_confirmations (
    app_id       integer NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    provider     smallint NOT NULL,
    version      integer NOT NULL,
    confirmed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (app_id, provider)
);
