-- The console and the admin API against a hostile network (issue 35).
--
-- console_keys: the random secret the console's session and CSRF keys are derived from (HKDF) when
-- PAPERBOY_CONSOLE_SESSION_KEY is not set, made by the first `paperboy serve` that needs it and shared by every
-- other, so that a session signed by one is good on all. One row. `sessions_valid_after` is when an operator last
-- signed everyone out: a session issued before it is ended, whichever key signed it. Signing everyone out also
-- replaces the generated secret.
CREATE TABLE console_keys (
    id                      smallint PRIMARY KEY CHECK (id = 1),
    secret                  bytea NOT NULL CHECK (length(secret) = 32),
    created_at              timestamptz NOT NULL DEFAULT now(),
    sessions_valid_after    timestamptz
);

-- console_ended_sessions: sessions signed out before they expired. A session cookie is good until it expires unless
-- its id is here; a row is deleted once the session would have expired anyway, so the table holds at most the
-- sign-outs of the last session lifetime (12 hours).
CREATE TABLE console_ended_sessions (
    session_id      text PRIMARY KEY CHECK (length(session_id) <= 64),
    expires_at      timestamptz NOT NULL
);
CREATE INDEX console_ended_sessions_by_expiry ON console_ended_sessions (expires_at);

-- audit_log: every change made through the console or the admin API, written in the same transaction as the
-- change, and the console's sign-ins and sign-outs: when, who (the role, the name given, the client's address),
-- what, and what it named. No foreign keys: the record outlives what it names.
CREATE TABLE audit_log (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at              timestamptz NOT NULL DEFAULT now(),
    -- `console` or `admin` (the admin API).
    surface         text NOT NULL CHECK (surface IN ('console', 'admin')),
    -- `operator` or `viewer` (console), `admin` (admin API).
    role            text NOT NULL CHECK (role IN ('operator', 'viewer', 'admin')),
    name            text CHECK (length(name) <= 64),
    address         text CHECK (length(address) <= 64),
    action          text NOT NULL CHECK (length(action) <= 64),
    app_id          integer,
    broadcast_id    uuid,
    edition_id      uuid,
    detail          text NOT NULL DEFAULT '' CHECK (length(detail) <= 2000)
);
CREATE INDEX audit_log_recent ON audit_log (at DESC, id DESC);
CREATE INDEX audit_log_by_broadcast ON audit_log (broadcast_id, at) WHERE broadcast_id IS NOT NULL;

-- What the console recorded before (console_actions, migration 0020) moves here; console_actions is no longer
-- written, and is kept for processes of the previous release during a rolling upgrade.
INSERT INTO audit_log (at, surface, role, name, action, broadcast_id, edition_id, detail)
SELECT at, 'console', role, name,
       CASE action WHEN 'start' THEN 'start broadcast' WHEN 'cancel' THEN 'cancel broadcast'
                   WHEN 'start (attached)' THEN 'start broadcast (attached)' ELSE action END,
       broadcast_id, edition_id, detail
FROM console_actions ORDER BY id;
