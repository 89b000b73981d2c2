-- A hold for a suspected misconfiguration covers one APNs environment (issue 47, finding 5). It was keyed by the app
-- and provider alone: a debug build's sandbox tokens registered as sandbox, answering BadDeviceToken in a sandbox test
-- broadcast, held the app's production broadcasts too, the morning edition among them. The held deactivations, the
-- fleet's evidence and the operators' confirmations are kept per environment as well; an FCM device's environment is
-- its registration's, as for every broadcast's audience.
--
-- A hold standing when this runs covered both environments: it is kept for both. The tables are small (a few rows;
-- held_deactivations a few per cent of a morning's answers at most): rewriting them takes a moment.
ALTER TABLE provider_holds ADD COLUMN environment smallint NOT NULL DEFAULT 0 CHECK (environment IN (0, 1));
ALTER TABLE provider_holds DROP CONSTRAINT provider_holds_pkey, ADD PRIMARY KEY (app_id, environment, provider);
INSERT INTO provider_holds (app_id, environment, provider, answer, likely_cause, reason, raised_by, raised_at)
SELECT app_id, 1, provider, answer, likely_cause, reason, raised_by, raised_at FROM provider_holds;
ALTER TABLE provider_holds ALTER COLUMN environment DROP DEFAULT;

ALTER TABLE held_deactivations ADD COLUMN environment smallint NOT NULL DEFAULT 0;
UPDATE held_deactivations h SET environment = d.environment FROM devices d WHERE d.id = h.device_id AND d.environment <> 0;
ALTER TABLE held_deactivations ALTER COLUMN environment DROP DEFAULT;
DROP INDEX held_deactivations_by_app;
DROP INDEX held_deactivations_by_sending;
CREATE INDEX held_deactivations_by_app ON held_deactivations (app_id, environment, provider, answered_at);
CREATE INDEX held_deactivations_by_sending ON held_deactivations (app_id, environment, provider, sent_at);

ALTER TABLE answer_tallies ADD COLUMN environment smallint NOT NULL DEFAULT 0;
ALTER TABLE answer_tallies DROP CONSTRAINT answer_tallies_pkey, ADD PRIMARY KEY (app_id, environment, provider, period, worker);
ALTER TABLE answer_tallies ALTER COLUMN environment DROP DEFAULT;

ALTER TABLE provider_confirmations ADD COLUMN environment smallint NOT NULL DEFAULT 0;
ALTER TABLE provider_confirmations DROP CONSTRAINT provider_confirmations_pkey, ADD PRIMARY KEY (app_id, environment, provider);
INSERT INTO provider_confirmations (app_id, environment, provider, version, confirmed_at)
SELECT app_id, 1, provider, version, confirmed_at FROM provider_confirmations;
ALTER TABLE provider_confirmations ALTER COLUMN environment DROP DEFAULT;
