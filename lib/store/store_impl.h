// Store::Impl, shared by store.cc (opening, writing, loading) and
// store_query.cc (history, verdicts, trends, prune). Not part of the
// library's interface.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/process.h"
#include "store/sqlite_db.h"
#include "store/store.h"

namespace cp {
namespace store_detail {
// Before migration 4: a tune_sessions table an older build created without
// `target` gains it (lib/store/tune_sessions.cc).
void add_missing_tune_columns(const Db& db);
// The columns of `table` ({} when there is no such table).
std::vector<std::string> table_columns(const Db& db, const std::string& table);
// Run ids a stored tune session names ({} when the file has no tune tables).
std::set<int64_t> tuned_run_ids(const Db& db);
}  // namespace store_detail

// Who writes runs opened by this process.
struct StoreOwner {
  std::string host = host_name();
  int64_t pid = getpid();
  int64_t start = process_start_ticks(getpid()).value_or(0);
  std::string boot = boot_id();
};

struct Store::Impl {
  using Db = store_detail::Db;
  using Stmt = store_detail::Stmt;

  Impl(const std::string& path, Access access);

  // The file is a chokepoint database of a schema this build knows (or, when
  // `fresh_ok`, an empty file to create one in); checked before anything else
  // reads or writes it.
  void check_chokepoint(bool fresh_ok);
  void configure();
  void migrate();
  void prepare();
  void mark_dead_runs();
  bool owner_alive(int64_t pid, int64_t start, const std::string& boot) const;
  [[noreturn]] void no_run(const std::string& what) const;
  // What the run's packed samples refer to, loaded once per connection.
  store_detail::RunPack& pack_of(int64_t run_id);
  int64_t run_of_stage(int64_t stage_id);
  void load_header(int64_t id, RunRecord& run);
  // cpu_json and details_json of a sample read back whole.
  void unpack(int64_t run_id, SampleRecord& s, const std::string& cpu_packed, int props_idx);
  uint64_t file_bytes() const;

  Db db;
  bool read_only = false;
  int schema = 0;  // user_version when opened (after migrating)
  StoreOwner owner;
  std::mutex mu;

  // One write to the tune tables (schema 4 on): ?1, ?2, ... bound to `v`;
  // the row id it inserted.
  template <class... T>
  int64_t write_tune(const char* sql, const T&... v) {
    std::lock_guard lock(mu);
    CP_CHECK(!read_only && schema >= 4);
    store_detail::run_once(db, sql, v...);
    return sqlite3_last_insert_rowid(db.get());
  }
  std::map<int64_t, store_detail::RunPack> packs;  // by run id
  std::map<int64_t, int64_t> stage_runs;           // stage id -> run id
  std::unique_ptr<Stmt> insert_run, upsert_host, insert_stage, insert_sample, insert_proc,
      insert_props, finish_stage, finish_run, interrupt_stages, select_history, select_run,
      select_hosts, select_stages, select_samples, select_procs, select_props, select_latest,
      select_by_id, select_by_label, select_stage_run;
};

}  // namespace cp
