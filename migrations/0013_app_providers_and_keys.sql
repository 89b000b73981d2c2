-- An app may have APNs, FCM or both (an Android-only app has no APNs key), its credentials carry a version
-- that workers compare to reload them without a restart, and an app may have several device API keys, so that
-- a leaked key can be retired while the app versions that ship it age out. Every existing app keeps its APNs
-- credentials, its FCM service account and its one key, which goes on working.

-- APNs credentials become optional, all three together. An app needs at least one provider.
-- credentials_version: incremented by every change of the app's APNs or FCM credentials.
ALTER TABLE apps
    ALTER COLUMN team_id DROP NOT NULL,
    ALTER COLUMN key_id DROP NOT NULL,
    ALTER COLUMN key_reference DROP NOT NULL,
    ADD CONSTRAINT apps_apns_all_or_none CHECK (
        (team_id IS NULL) = (key_id IS NULL) AND (key_id IS NULL) = (key_reference IS NULL)
    ),
    ADD CONSTRAINT apps_one_provider CHECK (team_id IS NOT NULL OR fcm_service_account IS NOT NULL),
    ADD COLUMN credentials_version bigint NOT NULL DEFAULT 1;

-- An app's device API keys: the SHA-256 of each (the key itself is shown once, when it is made). A revoked
-- key is kept, with the time, so that `apps keys` shows what was retired and when. last_used_at is
-- recorded when a server looks the key up (at most every 30 s per key and server, through its cache) and
-- only when the stored time is 10 minutes old or more: a used key's time is at most about 10.5 minutes
-- behind, and a busy key costs one write in 10 minutes, not one per request.
-- The unique index on key_hash is the device request's lookup: one index probe.
CREATE TABLE app_api_keys (
    id              integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    app_id          integer NOT NULL REFERENCES apps (id),
    key_hash        bytea NOT NULL UNIQUE CHECK (length(key_hash) = 32),
    created_at      timestamptz NOT NULL DEFAULT now(),
    last_used_at    timestamptz,
    revoked_at      timestamptz
);
CREATE INDEX app_api_keys_by_app ON app_api_keys (app_id);

INSERT INTO app_api_keys (app_id, key_hash, created_at)
SELECT id, api_key_hash, created_at FROM apps ORDER BY id;

-- Dropped rather than kept unused: a second copy of a key's hash that no revocation updates would let any
-- reader of the old column accept a revoked key. (A binary older than this migration cannot serve this
-- schema anyway: it reads APNs credentials as never null.)
ALTER TABLE apps DROP COLUMN api_key_hash;
