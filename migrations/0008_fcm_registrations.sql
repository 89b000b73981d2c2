-- Firebase Cloud Messaging as a second provider: a device has a provider and a platform, and an app may
-- name its FCM service account.

-- provider: 0 = APNs, 1 = FCM. platform: 0 = iOS, 1 = Android. Valid pairs: APNs with iOS, FCM with both.
-- Constant defaults add the columns without rewriting the table; every existing row is an APNs iOS device.
--
-- An FCM token is stored in the same token column as its ASCII bytes (150-170 today; an APNs token's raw
-- bytes are 32-100): one lookup path, one index, and the cohort key is the same hash over the bytes.
-- FCM has no sandbox: an FCM device's environment is always production (0), so a production broadcast
-- reaches the app's FCM devices and a sandbox broadcast never does.
--
-- One ALTER TABLE, so that the new checks read the table once (at 10 million devices, seconds).
ALTER TABLE devices
    ADD COLUMN provider smallint NOT NULL DEFAULT 0,
    ADD COLUMN platform smallint NOT NULL DEFAULT 0,
    ADD CONSTRAINT devices_provider_platform CHECK (
        (provider = 0 AND platform = 0) OR (provider = 1 AND platform IN (0, 1))
    ),
    ADD CONSTRAINT devices_fcm_production CHECK (provider = 0 OR environment = 0),
    DROP CONSTRAINT devices_token_check,
    -- FCMToken.lengths: at most 2048, which keeps an index entry under PostgreSQL's limit of ~2.7 KB.
    ADD CONSTRAINT devices_token_length CHECK (
        CASE provider WHEN 0 THEN length(token) BETWEEN 32 AND 100 ELSE length(token) BETWEEN 32 AND 2048 END
    );

-- Uniqueness per (app, token, provider, environment): the provider is part of it because an FCM token's
-- bytes and an APNs token's bytes are different things even if they were ever equal. The app and the token
-- lead, so that a lookup by token (GET, DELETE, receipts) is one index probe per provider without naming
-- the environment. It replaces the unique (app_id, environment, token) index, which it makes redundant.
-- Building it reads the table once (at 10 million devices, about a minute, with writes to devices blocked).
CREATE UNIQUE INDEX devices_by_token ON devices (app_id, token, provider, environment);
ALTER TABLE devices DROP CONSTRAINT devices_app_id_environment_token_key;

-- An app's FCM service account: the path of its JSON file and the Firebase project id read from it when it
-- was checked. The file holds a private key: like the APNs .p8, it never enters the database.
ALTER TABLE apps
    ADD COLUMN fcm_service_account text CHECK (length(fcm_service_account) BETWEEN 1 AND 4096),
    ADD COLUMN fcm_project_id text CHECK (fcm_project_id ~ '^[a-z][a-z0-9-]{4,28}[a-z0-9]$'),
    ADD CONSTRAINT apps_fcm_both CHECK ((fcm_service_account IS NULL) = (fcm_project_id IS NULL));
