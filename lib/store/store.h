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
#include <string>
#include <utility>
#include <vector>

#include "core/model.h"

namespace cp {

// One line of `chokepoint history`.
struct RunListRow {
  int64_t id = 0;
  std::string label, status, server, client;
  double started_at = 0;   // Unix seconds
  double finished_at = 0;  // Unix seconds; 0 while running
  // (Its verdict comes from analysis, which holds every rule: `history` loads
  // the run and asks analysis::headline_of.)
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
  ~Store();
  // For commands that only read (show, history, compare, export): throws
  // Error(kUsage) naming `path` when no file is there, so reading never
  // creates an empty database.
  static void require_existing(const std::string& path);
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  const std::string& path() const;

  // Inserts `run` (label, started_at (now if 0), server, client, plan_json,
  // version) and the hosts in run.hosts, with status "running" and this
  // process as owner; returns its id.
  int64_t begin_run(const RunRecord& run);
  // Adds or replaces the host with host.role.
  void add_host(int64_t run_id, const HostRecord& host);
  // Inserts `stage` (layer, where, params_json, started_at (now if 0)) with
  // status "running"; returns its id.
  int64_t begin_stage(int64_t run_id, const StageRecord& stage);
  // Inserts `sample` (every field but id and stage_id); committed before it
  // returns. Returns its id.
  int64_t add_sample(int64_t stage_id, const SampleRecord& sample);
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
  // "12" -> run 12; "latest"/"last" -> the newest run; otherwise the newest
  // run with that label. Error(kUsage) when none matches, saying what exists.
  int64_t resolve(const std::string& id_or_label) const;
  // PRAGMA user_version: the last migration applied.
  int schema_version() const;

  // The newest schema version this build knows.
  static int known_schema_version();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cp
