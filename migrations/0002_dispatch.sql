-- Broadcasts as they run: waves, cohorts leased in batches, the per-device delivery ledger, and schedules.

-- Who started a broadcast: `cli`, `api` or `schedule:ID`.
ALTER TABLE broadcasts ADD COLUMN origin text NOT NULL DEFAULT 'cli';

-- A wave: wave 1 goes to every target; later waves only to targets without a successful receipt; a last
-- `alert` wave (optional) to those whose background pushes led to nothing and who allowed alerts.
CREATE TABLE broadcast_waves (
    broadcast_id    uuid NOT NULL REFERENCES broadcasts (id) ON DELETE CASCADE,
    wave            smallint NOT NULL CHECK (wave >= 1),
    kind            text NOT NULL CHECK (kind IN ('background', 'alert')),
    starts_at       timestamptz NOT NULL,
    window_seconds  double precision NOT NULL CHECK (window_seconds >= 0),
    -- Sends per second across the wave, shared by every worker.
    rate            double precision NOT NULL CHECK (rate >= 0),
    planned         integer NOT NULL,
    finished_at     timestamptz,
    PRIMARY KEY (broadcast_id, wave)
);

-- Nothing wrote the 0001 table; it is replaced by one that leases key ranges in batches.
DROP TABLE broadcast_cohorts;

-- Progress per broadcast, wave and cohort. A cohort is the key range [first_key, end_key) of
-- devices.cohort_key; workers carve batches from next_key on, and next_ordinal is the position (from 0) of
-- the next device in the cohort, which gives its send time in the plan.
CREATE TABLE broadcast_cohorts (
    broadcast_id    uuid NOT NULL,
    wave            smallint NOT NULL,
    cohort          integer NOT NULL,
    starts_at       timestamptz NOT NULL,
    ends_at         timestamptz NOT NULL,
    first_key       bigint NOT NULL,
    end_key         bigint NOT NULL,
    next_key        bigint NOT NULL,
    next_ordinal    integer NOT NULL DEFAULT 0,
    planned         integer NOT NULL,
    -- Pushes handed to APNs, and what APNs said: accepted, or rejected by reason (including
    -- `fateUnknown` and `notSent` for pushes with no answer).
    sent            integer NOT NULL DEFAULT 0,
    accepted        integer NOT NULL DEFAULT 0,
    rejected        jsonb NOT NULL DEFAULT '{}',
    -- Planned devices not sent, by why: `received`, `hourlyBudget`, `deadline`, `gone`.
    skipped         jsonb NOT NULL DEFAULT '{}',
    PRIMARY KEY (broadcast_id, wave, cohort),
    FOREIGN KEY (broadcast_id, wave) REFERENCES broadcast_waves ON DELETE CASCADE
);

-- A leased batch: keys [first_key, last_key] of a cohort. A worker that dies leaves its batch unfinished;
-- once the lease expires another worker takes it over and sends it again.
CREATE TABLE broadcast_batches (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    broadcast_id    uuid NOT NULL,
    wave            smallint NOT NULL,
    cohort          integer NOT NULL,
    first_key       bigint NOT NULL,
    last_key        bigint NOT NULL,
    first_ordinal   integer NOT NULL,
    devices         integer NOT NULL,
    lease_owner     text NOT NULL,
    lease_expires_at timestamptz NOT NULL,
    leases          smallint NOT NULL DEFAULT 1,
    done_at         timestamptz,
    FOREIGN KEY (broadcast_id, wave, cohort) REFERENCES broadcast_cohorts ON DELETE CASCADE
);
CREATE INDEX broadcast_batches_open ON broadcast_batches (broadcast_id, lease_expires_at) WHERE done_at IS NULL;

-- One row per push sent: the per-edition push count, the hourly budget across broadcasts, and receipts
-- per wave and cohort come from here.
CREATE TABLE deliveries (
    device_id       bigint NOT NULL REFERENCES devices (id),
    broadcast_id    uuid NOT NULL REFERENCES broadcasts (id) ON DELETE CASCADE,
    wave            smallint NOT NULL,
    cohort          integer NOT NULL,
    background      boolean NOT NULL,
    sent_at         timestamptz NOT NULL,
    outcome         text NOT NULL CHECK (outcome IN ('accepted', 'rejected', 'fateUnknown', 'notSent')),
    reason          text,
    PRIMARY KEY (device_id, broadcast_id, wave)
);
CREATE INDEX deliveries_by_broadcast ON deliveries (broadcast_id, wave);

CREATE INDEX receipts_by_edition ON receipts (edition_id);

-- Broadcast schedules: a cron expression in an IANA time zone per publication and environment, with the
-- broadcast options to use. last_instant is the scheduled instant handled most recently (fired, or
-- skipped with a logged reason).
CREATE TABLE schedules (
    id              integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    publication_id  integer NOT NULL REFERENCES publications (id),
    environment     smallint NOT NULL CHECK (environment IN (0, 1)),
    cron            text NOT NULL,
    time_zone       text NOT NULL,
    options         jsonb NOT NULL DEFAULT '{}',
    created_at      timestamptz NOT NULL DEFAULT now(),
    last_instant    timestamptz,
    UNIQUE (publication_id, environment, cron, time_zone)
);
