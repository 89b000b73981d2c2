-- Paperboy's initial schema: apps, publications, devices, editions, broadcasts and their progress, receipts.
-- Applied by `paperboy migrate` (and checked at `paperboy serve` start-up). Never edit an applied file:
-- add a new numbered file instead.

-- An app is one APNs topic (bundle id) with its token-auth key. The .p8 key itself never enters the
-- database: key_reference names where it lives (a file path, or env:VARIABLE).
CREATE TABLE apps (
    id              integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    bundle_id       text NOT NULL UNIQUE CHECK (length(bundle_id) BETWEEN 1 AND 255),
    team_id         text NOT NULL CHECK (team_id ~ '^[A-Z0-9]{10}$'),
    key_id          text NOT NULL CHECK (key_id ~ '^[A-Z0-9]{10}$'),
    key_reference   text NOT NULL,
    -- SHA-256 of the device API key; the key itself is shown once, at creation.
    api_key_hash    bytea NOT NULL UNIQUE CHECK (length(api_key_hash) = 32),
    created_at      timestamptz NOT NULL DEFAULT now()
);

-- What devices subscribe to, e.g. "morning" and "evening". Devices store the integer id.
CREATE TABLE publications (
    id              integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    app_id          integer NOT NULL REFERENCES apps (id),
    slug            text NOT NULL CHECK (slug ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
    title           text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (app_id, slug)
);

-- One row per (app, environment, token); sized for 10 million rows.
-- token is the raw bytes (32 today, up to 100), half the size of hex.
-- cohort_key is DeviceToken.cohortKey (a stable 32-bit hash) stored as a signed integer with the sign
-- bit flipped (key - 2^31), so that integer order is key order and cohort i of n is one index range.
-- environment: 0 = production, 1 = sandbox. tier: 0 = small, 1 = medium, 2 = large.
CREATE TABLE devices (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    app_id              integer NOT NULL REFERENCES apps (id),
    environment         smallint NOT NULL CHECK (environment IN (0, 1)),
    cohort_key          integer NOT NULL,
    active              boolean NOT NULL DEFAULT true,
    auto_download       boolean NOT NULL,
    alerts_authorized   boolean NOT NULL,
    tier                smallint NOT NULL CHECK (tier IN (0, 1, 2)),
    token               bytea NOT NULL CHECK (length(token) BETWEEN 32 AND 100),
    subscriptions       integer[] NOT NULL DEFAULT '{}',
    time_zone           text NOT NULL,
    app_version         text,
    os_version          text,
    model               text,
    locale              text,
    registered_at       timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    -- DELETE /v1/devices/{token}: kept, inactive, with the time.
    deleted_at          timestamptz,
    -- APNs 410 Unregistered/ExpiredToken: the timestamp APNs gave. Only a registration newer than it
    -- makes the device active again.
    unregistered_at     timestamptz,
    UNIQUE (app_id, environment, token)
);

-- The broadcast scan: active, auto-downloading devices of one app and environment, in cohort order,
-- one cohort being a key range. Subscriptions are filtered on the rows the range returns.
CREATE INDEX devices_broadcast_scan ON devices (app_id, environment, cohort_key)
    WHERE active AND auto_download;

-- An edition of a publication, with its manifest (tiers -> bundles, pages) as JSONB.
CREATE TABLE editions (
    id              uuid PRIMARY KEY,
    publication_id  integer NOT NULL REFERENCES publications (id),
    issue_date      date NOT NULL,
    deadline        timestamptz NOT NULL,
    manifest        jsonb NOT NULL,
    published_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (publication_id, issue_date)
);
CREATE INDEX editions_latest ON editions (publication_id, published_at DESC);

-- A broadcast of one edition to one environment, with its plan (cohorts, window, waves) as JSONB.
CREATE TABLE broadcasts (
    id              uuid PRIMARY KEY,
    edition_id      uuid NOT NULL REFERENCES editions (id),
    environment     smallint NOT NULL CHECK (environment IN (0, 1)),
    state           text NOT NULL CHECK (state IN ('planned', 'running', 'completed', 'cancelled', 'expired')),
    plan            jsonb NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    finished_at     timestamptz
);
-- Starting the same edition again attaches to the running broadcast instead of sending twice.
CREATE UNIQUE INDEX broadcasts_one_live_per_edition ON broadcasts (edition_id, environment)
    WHERE state IN ('planned', 'running');

-- Progress per broadcast, wave and cohort. Workers lease a cohort's next key range.
CREATE TABLE broadcast_cohorts (
    broadcast_id    uuid NOT NULL REFERENCES broadcasts (id) ON DELETE CASCADE,
    wave            smallint NOT NULL,
    cohort          integer NOT NULL,
    starts_at       timestamptz NOT NULL,
    ends_at         timestamptz NOT NULL,
    planned         integer NOT NULL DEFAULT 0,
    sent            integer NOT NULL DEFAULT 0,
    accepted        integer NOT NULL DEFAULT 0,
    rejected        jsonb NOT NULL DEFAULT '{}',
    -- The next cohort key not yet leased; the cohort is done when it reaches its range's end.
    next_key        bigint NOT NULL,
    lease_owner     text,
    lease_expires_at timestamptz,
    PRIMARY KEY (broadcast_id, wave, cohort)
);

-- What the app reports after a push ran: idempotent per device and edition.
CREATE TABLE receipts (
    device_id       bigint NOT NULL REFERENCES devices (id),
    edition_id      uuid NOT NULL REFERENCES editions (id),
    result          text NOT NULL CHECK (result IN ('newData', 'noData', 'failed')),
    bytes           bigint NOT NULL DEFAULT 0 CHECK (bytes >= 0),
    seconds         double precision NOT NULL DEFAULT 0 CHECK (seconds >= 0),
    received_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (device_id, edition_id)
);
