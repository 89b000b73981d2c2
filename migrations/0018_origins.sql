-- One content API, many broadcasts (issue 27): an origin is the content API (or CDN origin) the woken devices
-- download from, with the capacity it can serve. Every broadcast of a publication that points at an origin paces
-- against what the origin has left, across all broadcasts and workers: a batch claims an exclusive slot of the
-- origin's shared timeline (next_slot) and sends in it at the origin's capacity, so the origin never sees more than
-- its capacity in total (first waves, follow-ups, alert waves, catch-up after stalls alike). A publication without an
-- origin keeps its own broadcast's pace, as before.
CREATE TABLE origins (
    id              integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name            text NOT NULL UNIQUE CHECK (name ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
    capacity        double precision NOT NULL CHECK (capacity > 0),
    next_slot       timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE publications ADD COLUMN origin_id integer REFERENCES origins (id);

-- Why a broadcast starts later than asked: the origin it shares was busy (which broadcasts, until when), as
-- `broadcast status`, `--dry-run` and the console say.
ALTER TABLE broadcasts ADD COLUMN plan_note text;
