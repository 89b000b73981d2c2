-- Console sessions kept on the server, and an audit log of every change wherever it was made (issue 48, items 4 and 5).
--
-- console_sessions: one row per signed-in browser. The cookie holds 32 random bytes and nothing else; the row is found
-- by their SHA-256 (a copy of the database opens no session). Every time is the database's: a session is good while
-- `expires_at > now()` and `seen_at > now() - idle timeout`, whichever replica asks. Signing out deletes the row;
-- "sign out everyone" deletes them all. `id` is the session's public handle: what the audit log and the console's
-- Sessions page name. `token_mark` is a digest of the role's token at sign-in: a changed token ends that role's
-- sessions. Sessions made by the stateless cookies before this migration are not carried over: everyone signs in
-- once more after the upgrade.
CREATE TABLE console_sessions (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    secret_digest   bytea NOT NULL UNIQUE CHECK (length(secret_digest) = 32),
    role            text NOT NULL CHECK (role IN ('operator', 'viewer')),
    token_mark      bytea NOT NULL CHECK (length(token_mark) = 16),
    name            text CHECK (length(name) <= 64),
    address         text CHECK (length(address) <= 64),
    signed_in_at    timestamptz NOT NULL DEFAULT now(),
    seen_at         timestamptz NOT NULL DEFAULT now(),
    expires_at      timestamptz NOT NULL
);
CREATE INDEX console_sessions_by_expiry ON console_sessions (expires_at);

-- The stateless sessions' tables stay for processes of the previous release during a rolling upgrade; nothing
-- reads them any more.
COMMENT ON TABLE console_ended_sessions IS 'unused since migration 0035 (sessions are rows of console_sessions)';

-- audit_log from every surface: the CLI (`cli`, role `cli`: the name is the OS user, the address the host) and the
-- scheduler (`scheduler`, role `scheduler`: the name is the schedule's) beside the console and the admin API.
ALTER TABLE audit_log DROP CONSTRAINT audit_log_surface_check;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_surface_check CHECK (surface IN ('console', 'admin', 'cli', 'scheduler'));
ALTER TABLE audit_log DROP CONSTRAINT audit_log_role_check;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_role_check CHECK (role IN ('operator', 'viewer', 'admin', 'cli', 'scheduler'));
-- The console session that made the change (console_sessions.id; no foreign key: the record outlives the session).
ALTER TABLE audit_log ADD COLUMN session_id bigint;
-- Sign-ins are counted, not written a row each: one row per role, name and address an hour, `times` of them, the
-- last at `last_at`.
ALTER TABLE audit_log ADD COLUMN times integer NOT NULL DEFAULT 1 CHECK (times >= 1);
ALTER TABLE audit_log ADD COLUMN last_at timestamptz;
-- The retention (`paperboy prune --audit-retention`) deletes by age through audit_log_recent (at DESC, id DESC).
