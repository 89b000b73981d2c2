-- Day two in production (issue 25): a worker that drains (SIGTERM) or cannot send for an app gives its batch
-- back instead of finishing or failing it, and a broadcast fails only when no worker can send for its app.

-- A batch given back: the devices it recorded stay recorded (their deliveries exist), the rest goes back to
-- the cohort under the batch's lease, which is left expired so that another worker takes it over at once.
-- give_backs > 0 tells the next holder to leave out the devices already delivered in this wave; given_back_for
-- says why (a drain, or a provider this worker could not send through), for `broadcast status` and the rule that
-- fails a broadcast nobody can send. Constant defaults add the columns without rewriting the table.
ALTER TABLE broadcast_batches ADD COLUMN give_backs smallint NOT NULL DEFAULT 0;
ALTER TABLE broadcast_batches ADD COLUMN given_back_for text;

-- Which worker can send for which app through which provider: a row per (app, provider, worker), written when
-- a worker cannot load or use the app's credentials (problem set, once per backoff) and, at most every 30 s,
-- when it recorded pushes of the app through the provider (last_sent_at, problem cleared). A broadcast of the app
-- fails only when workers report a problem and none has sent for the set time (`--fail-after`). Rows of workers
-- gone for a day are pruned with the ledger.
CREATE TABLE sender_status (
    app_id          integer NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    provider        smallint NOT NULL CHECK (provider IN (0, 1)),
    worker          text NOT NULL,
    last_sent_at    timestamptz,
    problem         text,
    problem_since   timestamptz,
    updated_at      timestamptz NOT NULL,
    PRIMARY KEY (app_id, provider, worker)
);

-- The workers running now, as each says every third of a lease (its heartbeat): for the console's Workers page
-- and for operators asking "who is sending?". A row not seen for a while is a worker that stopped or died; rows
-- unseen for a day are pruned with the ledger.
CREATE TABLE workers (
    name            text PRIMARY KEY,
    started_at      timestamptz NOT NULL,
    seen_at         timestamptz NOT NULL,
    draining        boolean NOT NULL DEFAULT false,
    batches         integer NOT NULL DEFAULT 0,
    -- What it cannot send ("app 3 FCM: …"), one line each; empty when it can send for every app it tried.
    problems        text[] NOT NULL DEFAULT '{}',
    last_error      text,
    last_error_at   timestamptz
);
