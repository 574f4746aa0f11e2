-- chokepoint database, schema version 2 (see README.md beside this file):
-- per-sample CPU records and protocol properties stored compactly, and a
-- verdict summary per run for `history`. Rows written by schema 1 stay as
-- they are and read the same.

-- A process named in a run's CPU records, stored once per run;
-- samples.cpu_packed refers to it by idx (lib/store/cpu_pack.h).
CREATE TABLE cpu_procs (
  run_id      INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  idx         INTEGER NOT NULL,             -- 0, 1, ... within the run
  pid         INTEGER NOT NULL,
  comm        TEXT    NOT NULL,
  role        TEXT    NOT NULL,             -- agent | server | kernel | other | '' (older agents)
  other_netns INTEGER NOT NULL CHECK (other_netns IN (0, 1)),
  PRIMARY KEY (run_id, idx)
) WITHOUT ROWID;

-- A protocol driver's "properties" object of a sample's details, stored once
-- per run (the samples of a stage nearly always report the same).
CREATE TABLE sample_props (
  run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  idx    INTEGER NOT NULL,                  -- 0, 1, ... within the run
  json   TEXT    NOT NULL,                  -- the object, JSON
  PRIMARY KEY (run_id, idx)
) WITHOUT ROWID;

-- The CPU record packed (then cpu_json is ''), and the sample_props row cut
-- from the end of details_json (-1: none; details_json is then whole).
ALTER TABLE samples ADD COLUMN cpu_packed TEXT NOT NULL DEFAULT '';
ALTER TABLE samples ADD COLUMN props_idx INTEGER NOT NULL DEFAULT -1;

-- The verdict of each path of a run, as analysis gave it.
CREATE TABLE verdicts (
  run_id      INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  seq         INTEGER NOT NULL,             -- the finding's place in the report, 0-based
  path        TEXT    NOT NULL,             -- "smb ram read", "server -> client", "tcp"
  layer       TEXT    NOT NULL,             -- the capping layer: "server disk", "cpu", "undecided"
  cap         TEXT    NOT NULL,             -- key of the capping row; '' none
  cap_label   TEXT    NOT NULL,             -- its label: "SMB from RAM read, 100 MB files"
  figure      REAL    NOT NULL,             -- its median, bytes/s; 0 none
  ratio       REAL    NOT NULL,             -- capping layer / layer beneath; 0 none
  ratio_lo    REAL    NOT NULL,             -- the ratio's 95 % interval
  ratio_hi    REAL    NOT NULL,
  reason      TEXT    NOT NULL,             -- undecided: why ("noise", "cache", ...); else ''
  lower_bound INTEGER NOT NULL CHECK (lower_bound IN (0, 1)),  -- chokepoint's own client limits it
  headline    INTEGER NOT NULL CHECK (headline IN (0, 1)),     -- the run's headline finding
  PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
CREATE INDEX verdicts_path ON verdicts (path);

-- The analysis version that wrote the run's verdicts rows (0: none yet) and
-- its headline sentence.
ALTER TABLE runs ADD COLUMN analysis_version INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN headline TEXT NOT NULL DEFAULT '';
