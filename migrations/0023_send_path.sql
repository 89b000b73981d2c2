-- The send path correct by construction (issue 34): give-backs per provider, fenced and idempotent; holds for a
-- suspected misconfiguration; deactivations held until nobody suspects one.

-- A batch given back because a worker could not send through some providers (its credentials missing or refused
-- there, or the provider held for the app) names them: workers that cannot send through every one of them leave it
-- to the others (empty: a drain, anyone may take it). given_back_since is when it was first given back for them,
-- while it is: the broadcast fails only when nobody sent for that long (`--fail-after`), counted in this broadcast.
-- A give-back leaves the batch to nobody (lease_owner '', so no heartbeat renews it) and remembers whose lease gave
-- it back, so that a give-back retried after its COMMIT's answer was lost finds it done instead of doing it twice.
-- Constant defaults add the columns without rewriting the table.
ALTER TABLE broadcast_batches ADD COLUMN given_back_providers smallint[] NOT NULL DEFAULT '{}';
ALTER TABLE broadcast_batches ADD COLUMN given_back_since timestamptz;
ALTER TABLE broadcast_batches ADD COLUMN given_back_by text;
ALTER TABLE broadcast_batches ADD COLUMN given_back_lease smallint;

-- An app's provider held for a suspected misconfiguration: more than half of a worker's latest answers through it
-- said "this token is not valid for this app" (a wrong bundle id, tokens of the other APNs environment, a service
-- account of another Firebase project). Its batches are given back, not failed, until an operator fixes the
-- configuration (`paperboy apps set-apns`, `set-fcm`, `apps release`) or confirms the deactivations
-- (`paperboy apps confirm-deactivations`).
CREATE TABLE provider_holds (
    app_id          integer NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    provider        smallint NOT NULL CHECK (provider IN (0, 1)),
    -- The answer most devices got, as the provider spells it (DeviceTokenNotForTopic), and what it means.
    answer          text NOT NULL,
    likely_cause    text NOT NULL,
    reason          text NOT NULL,
    raised_by       text NOT NULL,
    raised_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (app_id, provider)
);

-- Deactivations a provider asked for with "this token is not valid for this app", held: applied by the workers'
-- per-second duties once they are ten minutes old and the app's provider is not held; dropped when an operator
-- says the configuration was at fault; applied at once when an operator confirms them. A device that registers
-- again after the answer stays active (the same rule as a 410's timestamp).
CREATE TABLE held_deactivations (
    device_id       bigint PRIMARY KEY,
    app_id          integer NOT NULL,
    provider        smallint NOT NULL,
    reason          text NOT NULL,
    answered_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX held_deactivations_by_app ON held_deactivations (app_id, provider, answered_at);
