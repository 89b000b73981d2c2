-- The operator's web console (`/console` in `paperboy serve`, issue 26).
--
-- console_samples: a broadcast's counters over time, for the console's charts (sends per second against the plan,
-- receipts and held share). One process at a time writes them (a transaction-level advisory lock), every few
-- seconds while a broadcast runs, from the broadcast's progress: a page view reads these rows by index and never
-- counts deliveries or receipts. About 720 rows for an hour of a running broadcast; rows older than the ledger's
-- retention are deleted by the sampler.
CREATE TABLE console_samples (
    broadcast_id    uuid NOT NULL REFERENCES broadcasts (id) ON DELETE CASCADE,
    at              timestamptz NOT NULL,
    wave            smallint NOT NULL,
    planned         bigint NOT NULL,
    sent            bigint NOT NULL,
    accepted        bigint NOT NULL,
    rejected        bigint NOT NULL,
    skipped         bigint NOT NULL,
    -- The edition's receipts by result (every device, as progress counts them).
    new_data        bigint NOT NULL,
    no_data         bigint NOT NULL,
    failed          bigint NOT NULL,
    -- Sent and accepted per provider: {"apns": [sent, accepted], "fcm": [...]}.
    providers       jsonb NOT NULL DEFAULT '{}',
    PRIMARY KEY (broadcast_id, at)
);
CREATE INDEX console_samples_by_time ON console_samples (at);

-- console_snapshots: the latest progress of each broadcast the sampler saw (the JSON of `GET /v1/broadcasts/{id}`),
-- so that every viewer of a running broadcast reads one row instead of recounting it.
CREATE TABLE console_snapshots (
    broadcast_id    uuid PRIMARY KEY REFERENCES broadcasts (id) ON DELETE CASCADE,
    at              timestamptz NOT NULL,
    state           text NOT NULL,
    progress        jsonb NOT NULL,
    -- How long reading the progress took, in seconds: the sampler waits at least ten times this before the next.
    took            double precision NOT NULL DEFAULT 0
);

-- console_actions: who started or cancelled what from the console, and when: the role signed in, the name typed at
-- sign-in (if any), the action and what came of it. Shown on the broadcast's page.
CREATE TABLE console_actions (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at              timestamptz NOT NULL DEFAULT now(),
    role            text NOT NULL CHECK (role IN ('operator', 'viewer')),
    name            text CHECK (length(name) <= 64),
    action          text NOT NULL,
    broadcast_id    uuid REFERENCES broadcasts (id) ON DELETE CASCADE,
    edition_id      uuid REFERENCES editions (id) ON DELETE CASCADE,
    detail          text NOT NULL DEFAULT ''
);
CREATE INDEX console_actions_by_broadcast ON console_actions (broadcast_id, at);
CREATE INDEX console_actions_recent ON console_actions (at DESC);
