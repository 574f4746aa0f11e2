-- chokepoint database, schema version 1 (see README.md beside this file).
-- lib/store applies it once, in one transaction, then sets PRAGMA user_version = 1.
-- Units: sizes in bytes, durations in seconds, timestamps in Unix seconds
-- (REAL, UTC, fractional). No "IF NOT EXISTS": applying it twice must fail loudly.

-- One invocation of `chokepoint diagnose`.
CREATE TABLE runs (
  id          INTEGER PRIMARY KEY,
  label       TEXT    NOT NULL DEFAULT '',  -- user-chosen name; '' when none
  status      TEXT    NOT NULL,             -- running | complete | failed | interrupted
  error       TEXT    NOT NULL DEFAULT '',  -- why it failed or was interrupted
  started_at  REAL    NOT NULL,             -- Unix seconds
  finished_at REAL,                         -- Unix seconds; NULL while running
  server      TEXT    NOT NULL,             -- as named on the command line (ssh alias or "local")
  client      TEXT    NOT NULL,
  plan_json   TEXT    NOT NULL DEFAULT '',  -- the effective plan, JSON
  version     TEXT    NOT NULL DEFAULT '',  -- chokepoint version that ran it
  -- The process that writes the run, so a later open can tell a run whose
  -- writer died (SIGKILL, power loss) from one still in progress.
  owner_host  TEXT    NOT NULL DEFAULT '',  -- gethostname()
  owner_pid   INTEGER NOT NULL DEFAULT 0,
  owner_start INTEGER NOT NULL DEFAULT 0,   -- field 22 of /proc/PID/stat: clock ticks after boot
  owner_boot  TEXT    NOT NULL DEFAULT ''   -- /proc/sys/kernel/random/boot_id
);
CREATE INDEX runs_started_at ON runs (started_at);
CREATE INDEX runs_label ON runs (label, started_at);
CREATE INDEX runs_running ON runs (owner_host) WHERE status = 'running';

-- The two endpoints of a run and what their agents reported about them.
CREATE TABLE hosts (
  run_id     INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  role       TEXT    NOT NULL,              -- server | client
  address    TEXT    NOT NULL,              -- ssh alias or "local"
  facts_json TEXT    NOT NULL DEFAULT '',   -- sysinfo facts, JSON
  PRIMARY KEY (run_id, role)
);

-- One probe of one layer at one place: disk on a host, or tcp one way.
CREATE TABLE stages (
  id          INTEGER PRIMARY KEY,          -- increasing: the order stages ran in
  run_id      INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  layer       TEXT    NOT NULL,             -- disk | tcp
  location    TEXT    NOT NULL,             -- disk: server | client; tcp: server->client | client->server
  status      TEXT    NOT NULL,             -- running | complete | failed | interrupted | skipped
  error       TEXT    NOT NULL DEFAULT '',  -- why it failed or was skipped
  params_json TEXT    NOT NULL DEFAULT '',  -- probe parameters, JSON
  started_at  REAL    NOT NULL,             -- Unix seconds
  finished_at REAL                          -- Unix seconds; NULL while running
);
CREATE INDEX stages_run_id ON stages (run_id, id);

-- One measurement: a file read or written, or a timed TCP send.
CREATE TABLE samples (
  id             INTEGER PRIMARY KEY,
  stage_id       INTEGER NOT NULL REFERENCES stages (id) ON DELETE CASCADE,
  run_id         INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,  -- = its stage's run_id
  seq            INTEGER NOT NULL,          -- 1-based within its stage
  op             TEXT    NOT NULL,          -- read | write (disk), send (tcp)
  size           INTEGER NOT NULL DEFAULT 0 CHECK (size >= 0),   -- bytes asked for; 0 for tcp
  bytes          INTEGER NOT NULL CHECK (bytes >= 0),            -- bytes actually moved
  seconds        REAL    NOT NULL,          -- how long they took
  started_at     REAL    NOT NULL,          -- Unix seconds
  cache_possible INTEGER NOT NULL DEFAULT 0 CHECK (cache_possible IN (0, 1)),
  error          TEXT    NOT NULL DEFAULT '',  -- non-empty: the sample failed, why
  details_json   TEXT    NOT NULL DEFAULT '',  -- probe detail, JSON (e.g. tcp_info)
  cpu_json       TEXT    NOT NULL DEFAULT ''   -- {"server":{...},"client":{...}} CPU summaries
);
CREATE INDEX samples_stage_id ON samples (stage_id, seq);
CREATE INDEX samples_run_id ON samples (run_id);
