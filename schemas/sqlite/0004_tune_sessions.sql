-- Tune sessions (`chokepoint tune`): one sweep of a knob's values (a grid:
-- of several knobs' combinations), each round an ordinary run linked in
-- tune_runs. Builds before this migration created these tables themselves on
-- first use, so a file may hold them already: IF NOT EXISTS keeps their rows,
-- and the store adds the `target` column to a table made before it existed
-- (add_missing_tune_columns in lib/store/tune_sessions.cc) before this runs.
CREATE TABLE IF NOT EXISTS tune_sessions (
  id          INTEGER PRIMARY KEY,
  started_at  REAL,     -- Unix seconds
  finished_at REAL,     -- Unix seconds; NULL while running
  status      TEXT,     -- running | complete | failed | interrupted
  knob        TEXT,     -- the knob's name; a grid's names joined with " x "
  endpoint    TEXT,     -- where the knobs were set: server, client or server+client
  server      TEXT,     -- as named on the command line
  client      TEXT,
  original    TEXT,     -- the value found before the sweep (a grid: its label)
  values_json TEXT,     -- JSON array of the values tried besides the original
  rounds      INTEGER,
  result_json TEXT,     -- the session's result as JSON; NULL or '' unless it completed
  error       TEXT,     -- why it failed or was interrupted
  target      TEXT      -- what the knobs were set on (an interface, a mount, ...; '; '-joined)
);

CREATE TABLE IF NOT EXISTS tune_runs (
  session_id  INTEGER REFERENCES tune_sessions(id),
  run_id      INTEGER,  -- runs.id (no foreign key: `prune --tune-runs` may remove the run)
  round       INTEGER,  -- 1-based
  value       TEXT,     -- the value (a grid: the combination's label) the run had
  is_original INTEGER   -- 1: the run had the original value
);

CREATE INDEX IF NOT EXISTS tune_runs_by_session ON tune_runs(session_id, run_id);
