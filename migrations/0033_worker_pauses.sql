-- What each worker has paused because the provider answers that it is unavailable (issue 47: "every hold, pause and
-- failure is visible"): one element per app, environment and provider, {"app", "environment", "provider", "since"},
-- written with the rest of the worker's status at every heartbeat. `paperboy broadcast status`, its JSON and the
-- console show a running broadcast's paused providers from it; the workers page already shows them as text. The
-- table has a row per worker: adding a column with a constant default rewrites nothing.
ALTER TABLE workers ADD COLUMN pauses jsonb NOT NULL DEFAULT '[]'::jsonb;
