// SQLite persistence of runs, their hosts, stages and samples (the schema and
// its migrations are schemas/sqlite/*.sql, compiled into the library).
//
// Durability: the database is in WAL mode with synchronous=NORMAL and every
// write is its own transaction, committed before the call returns, so a
// sample survives a SIGKILL of this process (not necessarily a power loss).
// Memory does not grow with the number of samples written.
//
// Errors from SQLite or the file system are Error(kIo) naming the database
// path; a Store's methods may be called from several threads (one mutex).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/model.h"
#include "core/stored_run.h"

namespace cp {

// The verdict of one path of a run, as stored (table verdicts): what
// `history` lists without analysing the run again.
struct PathVerdict {
  std::string path;       // "smb ram read", "server -> client"
  std::string layer;      // the capping layer ("server disk", "cpu", "undecided", ...)
  std::string cap;        // key of the capping row; "" none
  std::string cap_label;  // its label
  double figure = 0;      // the capping row's median, bytes/s; 0 none
  double ratio = 0, ratio_lo = 0, ratio_hi = 0;  // capping layer / layer beneath, 95 % interval
  std::string reason;                            // undecided: why ("noise", "cache", ...); else ""
  bool lower_bound = false;
  bool headline = false;  // the run's headline finding
};

// A run's verdicts, written by the analysis of version `analysis_version`.
struct VerdictSummary {
  int analysis_version = 0;  // 0: none stored
  std::string headline;      // the verdict in one sentence
  std::vector<PathVerdict> paths;
};

// One line of `chokepoint history`.
struct RunListRow {
  int64_t id = 0;
  std::string label, status, server, client;
  double started_at = 0;   // Unix seconds
  double finished_at = 0;  // Unix seconds; 0 while running
  // The stored verdict: its analysis version (0: none stored, or a schema 1
  // file), headline sentence and headline path (path "" when none).
  int analysis_version = 0;
  std::string headline;
  PathVerdict head;
};

// One point of a path's trend: a run and that path's stored verdict.
struct TrendPoint {
  int64_t run_id = 0;
  std::string label;
  double started_at = 0;
  int analysis_version = 0;
  PathVerdict verdict;
};

// What `prune` removes.
struct PruneFilter {
  double before = 0;       // runs started before this, Unix seconds; 0: any age
  size_t keep = 0;         // keep the newest this many runs; 0: no such rule
  bool labelled = false;   // labelled runs may go too
  bool tune_runs = false;  // runs a stored tune session names may go too
};
struct PruneResult {
  std::vector<RunListRow> removed;             // newest first
  uint64_t bytes_before = 0, bytes_after = 0;  // the file with its WAL
};

// A tune session (`chokepoint tune`, table tune_sessions): one sweep of a
// knob's values, or of a grid of several knobs' combinations.
struct TuneSessionRecord {
  int64_t id = 0;
  double started_at = 0;            // Unix seconds
  double finished_at = 0;           // Unix seconds; 0 while running
  std::string status;               // running | complete | failed | interrupted
  std::string knob;                 // the knob's name; a grid's names joined with " x "
  std::string endpoint;             // where the knobs were set: "server", "client", "server+client"
  std::string server, client;       // as named on the command line
  std::string original;             // the value before the sweep (a grid: its label)
  std::string target;               // what the knobs were set on ("" in older rows)
  std::vector<std::string> values;  // the values tried besides the original
  int rounds = 0;
  std::string result_json;  // the session's result, JSON (lib/tune/result.cc); "" unless complete
  std::string error;        // why it failed or was interrupted, "" otherwise
};

// One round of a tune session: an ordinary run linked to it (table tune_runs).
struct TuneRunRecord {
  int64_t session_id = 0;
  int64_t run_id = 0;
  int round = 0;             // 1-based
  std::string value;         // the value (a grid: the combination's label) the run had
  bool is_original = false;  // the run had the original value
};

struct HistoryFilter {
  std::string label;  // exact label; empty: any
  std::string host;   // substring of the server or client name, ignoring case; empty: any
  double since = 0;   // only runs started at or after this, Unix seconds
  size_t limit = 50;  // at most this many rows; 0: no limit
};

class Store {
 public:
  // $XDG_DATA_HOME/chokepoint/chokepoint.db, else $HOME/.local/share/chokepoint/chokepoint.db.
  static std::string default_path();

  // Opens or creates `path` (and its parent directories) and applies the
  // migrations it lacks. Refuses a database whose schema is newer than this
  // build knows. Then marks "interrupted" every run of this host still
  // "running" whose writer process is gone (a reused pid does not count).
  explicit Store(const std::string& path);
  // For commands that only read (show, history, compare, export): opens an
  // existing file with SQLITE_OPEN_READONLY and checks, before anything else
  // reads it, that it is a chokepoint database this build knows (its
  // user_version and tables): never creates, migrates or switches a file to
  // WAL. Error(kUsage) when no file is there or it is not a chokepoint
  // database, Error(kIo) when its schema is newer. A schema 1 file is read as
  // it is (no stored verdicts).
  enum class Access { kReadWrite, kReadOnly };
  Store(const std::string& path, Access access);
  ~Store();
  // For commands that only read (show, history, compare, export): throws
  // Error(kUsage) naming `path` when no file is there, so reading never
  // creates an empty database.
  static void require_existing(const std::string& path);
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  const std::string& path() const;

  // Inserts `run` (label, started_at (now if 0), server, client, plan_json,
  // version; not its hosts: add_host) with status "running" and this process
  // as owner; returns its id.
  int64_t begin_run(const RunRecord& run);
  // Adds or replaces the host with host.role; its facts encoded through
  // their codec (core/facts_message_json.h).
  void add_host(int64_t run_id, const stored::Host& host);
  // Inserts `stage` (layer, where, params_json, started_at (now if 0)) with
  // status "running"; returns its id.
  int64_t begin_stage(int64_t run_id, const StageRecord& stage);
  // Inserts `sample` (every field but id and stage_id; its details and CPU
  // encoded through their codecs, core/stored_run_json.h); committed before
  // it returns. Returns its id.
  int64_t add_sample(int64_t stage_id, const stored::Sample& sample);
  // Sets the final status (complete | failed | interrupted | skipped) and
  // finished_at = now.
  void end_stage(int64_t stage_id, const std::string& status, const std::string& error = {});
  // Sets the final status (complete | partial | failed | interrupted) and finished_at =
  // now; stages of the run still "running" become "interrupted".
  void end_run(int64_t run_id, const std::string& status, const std::string& error = {});

  // Runs matching `filter`, newest first.
  std::vector<RunListRow> history(const HistoryFilter& filter) const;
  // The run with its hosts, its stages in the order they ran and their
  // samples by seq. Error(kUsage) if there is no such run.
  RunRecord load_run(int64_t id) const;
  // The same run decoded once (core/stored_run.h): typed facts, details per
  // stage kind and each end's CPU, what analysis, report, export and compare
  // read. Error(kUsage) if there is no such run.
  stored::Run load(int64_t id) const;
  // "12" -> run 12; "latest"/"last" -> the newest run; otherwise the newest
  // run with that label. Error(kUsage) when none matches, saying what exists.
  int64_t resolve(const std::string& id_or_label) const;
  // PRAGMA user_version: the last migration applied.
  int schema_version() const;
  // Opened kReadOnly.
  bool read_only() const;

  // Replaces the run's stored verdicts (a writable, current-schema Store).
  void put_verdicts(int64_t run_id, const VerdictSummary& v);
  // The stored verdicts of a run (analysis_version 0 when none).
  VerdictSummary verdicts(int64_t run_id) const;
  // The run as load_run gives it, without its stages: hosts, facts and plan.
  RunRecord load_run_header(int64_t id) const;
  // The same decoded (core/stored_run.h).
  stored::Run load_header(int64_t id) const;
  // Finished runs between `server` and `client`, oldest first, with the
  // stored verdict of `path` (verdict.path "" where that run has none stored;
  // analysis_version tells a stale or missing summary).
  std::vector<TrendPoint> trend(const std::string& server, const std::string& client,
                                const std::string& path) const;

  // Tune sessions (lib/store/tune_sessions.cc). begin_tune_session inserts
  // `s` (started_at now if 0) with status "running" and returns its id;
  // end_tune_session sets s.id's status, original, target, result_json and
  // error, and finished_at = now.
  int64_t begin_tune_session(const TuneSessionRecord& s);
  void add_tune_run(const TuneRunRecord& r);
  void end_tune_session(const TuneSessionRecord& s);
  // Session `id` (0: the newest); nullopt when there is none (also for a
  // read-only file whose schema predates the tune tables and holds none).
  std::optional<TuneSessionRecord> tune_session(int64_t id) const;
  // The runs linked to a session, by run id.
  std::vector<TuneRunRecord> tune_runs(int64_t session_id) const;
  // Run ids any stored tune session names.
  std::set<int64_t> tuned_run_ids() const;

  // The runs `filter` selects (never a running one), newest first; unless
  // dry_run, deletes them, then VACUUMs. bytes_* are the file's size before
  // and after (equal on a dry run).
  PruneResult prune(const PruneFilter& filter, bool dry_run);

  // The newest schema version this build knows.
  static int known_schema_version();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cp
