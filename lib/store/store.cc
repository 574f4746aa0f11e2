#include "store/store.h"

#include <pwd.h>
#include <sqlite3.h>
#include <unistd.h>

#include <fmt/format.h>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <string_view>

#include "core/clock.h"
#include "core/error.h"
#include "core/process.h"
#include "core/stored_run_json.h"
#include "store/store_impl.h"

namespace cp::embedded {
extern const std::string_view sqlite_0001_init;
extern const std::string_view sqlite_0002_compact_and_verdicts;
extern const std::string_view sqlite_0003_sample_details_view;
extern const std::string_view sqlite_0004_tune_sessions;
}  // namespace cp::embedded

namespace cp {
namespace {

using store_detail::Db;
using store_detail::Stmt;
using store_detail::Txn;

// A typed part's column: its codec's JSON text, "" for none (null).
std::string column_text(const boost::json::value& v) {
  return v.is_null() ? std::string() : boost::json::serialize(v);
}

struct Migration {
  int version;
  std::string_view sql;
  // Run in the same transaction before `sql`: what plain SQL cannot say
  // (adding a column only where it is missing).
  void (*before)(const Db&) = nullptr;
};

// In order; a new schema version is a new file appended here, never an edit
// of one already released.
const Migration kMigrations[] = {
    {1, embedded::sqlite_0001_init},
    {2, embedded::sqlite_0002_compact_and_verdicts},
    {3, embedded::sqlite_0003_sample_details_view},
    {4, embedded::sqlite_0004_tune_sessions, store_detail::add_missing_tune_columns},
};

constexpr int kKnownVersion = 4;

// The tables and columns each schema version has: what a file must hold to
// be read as a chokepoint database of that version.
struct TableColumns {
  int since;
  const char* table;
  std::vector<const char*> columns;
};
const TableColumns kTables[] = {
    {1,
     "runs",
     {"id", "label", "status", "error", "started_at", "finished_at", "server", "client",
      "plan_json", "version", "owner_host", "owner_pid", "owner_start", "owner_boot"}},
    {1, "hosts", {"run_id", "role", "address", "facts_json"}},
    {1,
     "stages",
     {"id", "run_id", "layer", "location", "status", "error", "params_json", "started_at",
      "finished_at"}},
    {1,
     "samples",
     {"id", "stage_id", "run_id", "seq", "op", "size", "bytes", "seconds", "started_at",
      "cache_possible", "error", "details_json", "cpu_json"}},
    {2, "samples", {"cpu_packed", "props_idx"}},
    {2, "runs", {"analysis_version", "headline"}},
    {2, "cpu_procs", {"run_id", "idx", "pid", "comm", "role", "other_netns"}},
    {2, "sample_props", {"run_id", "idx", "json"}},
    {2,
     "verdicts",
     {"run_id", "seq", "path", "layer", "cap", "cap_label", "figure", "ratio", "ratio_lo",
      "ratio_hi", "reason", "lower_bound", "headline"}},
    {4,
     "tune_sessions",
     {"id", "started_at", "finished_at", "status", "knob", "endpoint", "server", "client",
      "original", "values_json", "rounds", "result_json", "error", "target"}},
    {4, "tune_runs", {"session_id", "run_id", "round", "value", "is_original"}},
};

bool is_final_stage_status(const std::string& s) {
  return s == kComplete || s == kFailed || s == kInterrupted || s == kSkipped;
}

bool is_final_run_status(const std::string& s) {
  return s == kComplete || s == kPartial || s == kFailed || s == kInterrupted;
}

int64_t to_i64(uint64_t v) {
  CP_CHECK(v <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));
  return static_cast<int64_t>(v);
}

void create_parent_dirs(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) return;
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) {
    throw Error(ErrorKind::kIo,
                fmt::format("cannot create directory {} for the database: {}", parent.string(),
                            ec.message()),
                "choose another file with --db");
  }
}

const std::string& checked_path(const std::string& path, Store::Access access) {
  if (path.empty()) {
    throw Error(ErrorKind::kUsage, "empty database path", "pass --db FILE or leave --db out");
  }
  if (std::filesystem::is_directory(path)) {
    throw Error(ErrorKind::kIo, fmt::format("database path {} is a directory", path),
                "name a file with --db, e.g. --db " + path + "/chokepoint.db");
  }
  if (access == Store::Access::kReadOnly) {
    Store::require_existing(path);
  } else {
    create_parent_dirs(path);
  }
  return path;
}

// How a reader opens `path`: a WAL file whose -shm is missing in a directory
// this user cannot write (another user's database, a read-only mount) cannot
// get a -shm; it is opened immutable then, which is safe because no writer
// is active (a writer keeps a -shm beside it).
std::pair<std::string, int> reader_open(const std::string& path) {
  char header[20] = {};
  std::FILE* f = std::fopen(path.c_str(), "rb");
  const bool wal = f && std::fread(header, 1, sizeof header, f) == sizeof header &&
                   header[18] == 2 && header[19] == 2;
  if (f) std::fclose(f);
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  if (!wal || std::filesystem::exists(path + "-shm", ec) || ::access(dir.c_str(), W_OK) == 0) {
    return {path, SQLITE_OPEN_READONLY};
  }
  std::string uri = "file:";
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '.' || c == '-' || c == '_') {
      uri += static_cast<char>(c);
    } else {
      uri += fmt::format("%{:02X}", c);
    }
  }
  return {uri + "?immutable=1", SQLITE_OPEN_READONLY | SQLITE_OPEN_URI};
}

[[noreturn]] void not_chokepoint(const std::string& path, const std::string& why) {
  throw Error(ErrorKind::kUsage, fmt::format("{} is not a chokepoint database: {}", path, why),
              "name the file `chokepoint diagnose` wrote with --db (left unchanged)");
}

}  // namespace

namespace store_detail {

int user_version(const Db& db) {
  Stmt st(db, "PRAGMA user_version");
  Stmt::Use q(st);
  CP_CHECK(q.step());
  return static_cast<int>(q.i64(0));
}

}  // namespace store_detail

Store::Impl::Impl(const std::string& path, Access access)
    : db(access == Access::kReadOnly
             ? reader_open(checked_path(path, access))
             : std::pair<std::string, int>{checked_path(path, access),
                                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE}),
      read_only(access == Access::kReadOnly) {
  check_chokepoint(/*fresh_ok=*/!read_only);
  configure();
  if (!read_only) migrate();
  schema = user_version(db);
  prepare();
  if (!read_only && sqlite3_db_readonly(db.get(), "main") != 1) mark_dead_runs();
}

void Store::Impl::check_chokepoint(bool fresh_ok) {
  int v = 0;
  std::map<std::string, std::vector<std::string>> columns;
  try {
    v = user_version(db);
    Stmt st(db,
            "SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p"
            " WHERE m.type = 'table'");
    Stmt::Use q(st);
    while (q.step()) columns[q.text(0)].push_back(q.text(1));
  } catch (const Error& e) {
    const int rc = sqlite3_errcode(db.get()) & 0xff;
    if (rc == SQLITE_NOTADB || rc == SQLITE_CORRUPT)
      not_chokepoint(db.path(), "not an SQLite file");
    throw;
  }
  if (v > kKnownVersion) {
    throw Error(ErrorKind::kIo,
                fmt::format("database schema {} of {} is newer than this chokepoint (knows {})", v,
                            db.path(), kKnownVersion),
                "upgrade chokepoint or use --db with another file");
  }
  if (v == 0) {
    if (fresh_ok && columns.empty()) return;  // a new file: migrate() creates the tables
    not_chokepoint(db.path(), columns.empty() ? "it holds no tables"
                                              : "it holds other tables (no schema version)");
  }
  for (const TableColumns& t : kTables) {
    if (t.since > v) continue;
    auto it = columns.find(t.table);
    if (it == columns.end()) not_chokepoint(db.path(), fmt::format("it has no table {}", t.table));
    for (const char* c : t.columns) {
      if (std::find(it->second.begin(), it->second.end(), std::string(c)) == it->second.end()) {
        not_chokepoint(db.path(), fmt::format("table {} has no column {}", t.table, c));
      }
    }
  }
}

void Store::Impl::configure() {
  db.exec("PRAGMA foreign_keys = ON", "enabling foreign keys");
  if (read_only) return;  // a reader changes nothing, not even the journal mode
  db.exec("PRAGMA journal_mode = WAL", "reading it");
  db.exec("PRAGMA synchronous = NORMAL", "setting synchronous");
}

void Store::Impl::migrate() {
  int v = user_version(db);
  for (const Migration& m : kMigrations) {
    if (m.version <= v) continue;
    Txn txn(db, /*immediate=*/true);
    // Another process may have migrated while we waited for the lock.
    v = user_version(db);
    if (v > kKnownVersion) check_chokepoint(false);  // says it is newer
    if (m.version > v) {
      if (m.before) m.before(db);
      db.exec(std::string(m.sql), fmt::format("applying schema migration {}", m.version));
      db.exec(fmt::format("PRAGMA user_version = {}", m.version), "recording schema version");
      v = m.version;
    }
    txn.commit();
  }
}

void Store::Impl::prepare() {
  auto make = [&](const std::string& sql) { return std::make_unique<Stmt>(db, sql.c_str()); };
  const bool v2 = schema >= 2;
  select_history = make(fmt::format(
      "SELECT r.id, r.label, r.status, r.server, r.client, r.started_at,"
      " COALESCE(r.finished_at, 0), {} FROM runs r {}"
      " WHERE (?1 = '' OR r.label = ?1)"
      "   AND (?2 = '' OR instr(lower(r.server), lower(?2)) > 0"
      "        OR instr(lower(r.client), lower(?2)) > 0)"
      "   AND r.started_at >= ?3"
      " ORDER BY r.started_at DESC, r.id DESC LIMIT ?4",
      v2 ? "r.analysis_version, r.headline, v.path, v.layer, v.cap, v.cap_label, v.figure,"
           " v.ratio, v.ratio_lo, v.ratio_hi, v.reason, v.lower_bound"
         : "0, '', NULL, '', '', '', 0, 0, 0, 0, '', 0",
      v2 ? "LEFT JOIN verdicts v ON v.run_id = r.id AND v.headline = 1" : ""));
  select_run = make(
      "SELECT id, label, status, error, started_at, COALESCE(finished_at, 0), server, client,"
      " plan_json, version FROM runs WHERE id = ?1");
  select_hosts =
      make("SELECT role, address, facts_json FROM hosts WHERE run_id = ?1 ORDER BY rowid");
  select_stages = make(
      "SELECT id, run_id, layer, location, status, error, params_json, started_at,"
      " COALESCE(finished_at, 0) FROM stages WHERE run_id = ?1 ORDER BY id");
  select_samples = make(fmt::format(
      "SELECT id, stage_id, seq, op, size, bytes, seconds, started_at, cache_possible, error,"
      " details_json, cpu_json, {} FROM samples WHERE stage_id = ?1 ORDER BY seq, id",
      v2 ? "cpu_packed, props_idx" : "'', -1"));
  select_latest = make("SELECT id FROM runs ORDER BY started_at DESC, id DESC LIMIT 1");
  select_by_id = make("SELECT id FROM runs WHERE id = ?1");
  select_by_label =
      make("SELECT id FROM runs WHERE label = ?1 ORDER BY started_at DESC, id DESC LIMIT 1");
  if (v2) {
    select_procs =
        make("SELECT idx, pid, comm, role, other_netns FROM cpu_procs WHERE run_id = ?1");
    select_props = make("SELECT idx, json FROM sample_props WHERE run_id = ?1 ORDER BY idx");
  }
  if (read_only) return;
  insert_run = make(
      "INSERT INTO runs (label, status, started_at, server, client, plan_json, version,"
      " owner_host, owner_pid, owner_start, owner_boot)"
      " VALUES (?1, 'running', ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
  upsert_host = make(
      "INSERT INTO hosts (run_id, role, address, facts_json) VALUES (?1, ?2, ?3, ?4)"
      " ON CONFLICT (run_id, role) DO UPDATE SET address = excluded.address,"
      " facts_json = excluded.facts_json");
  insert_stage = make(
      "INSERT INTO stages (run_id, layer, location, status, params_json, started_at)"
      " VALUES (?1, ?2, ?3, 'running', ?4, ?5)");
  // run_id comes from the stage, so the two cannot disagree; no row is
  // inserted for an unknown stage.
  insert_sample = make(
      "INSERT INTO samples (stage_id, run_id, seq, op, size, bytes, seconds, started_at,"
      " cache_possible, error, details_json, cpu_json, cpu_packed, props_idx)"
      " SELECT ?1, run_id, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13"
      " FROM stages WHERE id = ?1");
  insert_proc = make(
      "INSERT INTO cpu_procs (run_id, idx, pid, comm, role, other_netns)"
      " VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
  insert_props = make("INSERT INTO sample_props (run_id, idx, json) VALUES (?1, ?2, ?3)");
  select_stage_run = make("SELECT run_id FROM stages WHERE id = ?1");
  finish_stage = make("UPDATE stages SET status = ?2, error = ?3, finished_at = ?4 WHERE id = ?1");
  finish_run = make("UPDATE runs SET status = ?2, error = ?3, finished_at = ?4 WHERE id = ?1");
  interrupt_stages = make(
      "UPDATE stages SET status = 'interrupted', error = ?2,"
      " finished_at = COALESCE((SELECT MAX(s.started_at + s.seconds) FROM samples s"
      "   WHERE s.stage_id = stages.id), ?3, started_at)"
      " WHERE run_id = ?1 AND status = 'running'");
}

bool Store::Impl::owner_alive(int64_t pid, int64_t start, const std::string& boot) const {
  if (!boot.empty() && !owner.boot.empty() && boot != owner.boot) return false;  // rebooted
  std::optional<int64_t> ticks = process_start_ticks(pid);
  return ticks && *ticks == start;
}

void Store::Impl::mark_dead_runs() {
  std::vector<std::pair<int64_t, int64_t>> dead;  // run id, pid
  {
    Stmt st(db,
            "SELECT id, owner_pid, owner_start, owner_boot FROM runs"
            " WHERE status = 'running' AND owner_host = ?1");
    Stmt::Use q(st);
    q.bind(1, owner.host);
    while (q.step()) {
      if (!owner_alive(q.i64(1), q.i64(2), q.text(3))) dead.emplace_back(q.i64(0), q.i64(1));
    }
  }
  if (dead.empty()) return;
  Stmt mark(db,
            "UPDATE runs SET status = 'interrupted', error = ?2,"
            " finished_at = COALESCE((SELECT MAX(s.started_at + s.seconds) FROM samples s"
            "   WHERE s.run_id = runs.id), started_at)"
            " WHERE id = ?1 AND status = 'running'");
  Txn txn(db, /*immediate=*/true);
  for (auto [id, pid] : dead) {
    {
      Stmt::Use q(mark);
      q.bind_all(id, fmt::format("chokepoint (pid {}) ended before the run finished", pid));
      q.run();
    }
    // ?3 unbound: a stage without samples ends when it began, the last
    // thing known of it.
    Stmt::Use q(*interrupt_stages);
    q.bind_all(id, "the run was interrupted");
    q.run();
  }
  txn.commit();
}

store_detail::RunPack& Store::Impl::pack_of(int64_t run_id) {
  auto [it, fresh] = packs.try_emplace(run_id);
  if (!fresh || schema < 2) return it->second;
  store_detail::RunPack& p = it->second;
  {
    Stmt::Use q(*select_procs);
    q.bind(1, run_id);
    while (q.step()) {
      p.procs.load(static_cast<int>(q.i64(0)),
                   {static_cast<int>(q.i64(1)), q.text(2), q.text(3), q.i64(4) != 0});
    }
  }
  Stmt::Use q(*select_props);
  q.bind(1, run_id);
  while (q.step()) {
    const auto idx = static_cast<size_t>(q.i64(0));
    if (p.props_by_idx.size() <= idx) p.props_by_idx.resize(idx + 1);
    p.props_by_idx[idx] = q.text(1);
    p.props[q.text(1)] = static_cast<int>(idx);
  }
  return p;
}

int64_t Store::Impl::run_of_stage(int64_t stage_id) {
  if (auto it = stage_runs.find(stage_id); it != stage_runs.end()) return it->second;
  Stmt::Use q(*select_stage_run);
  q.bind(1, stage_id);
  CP_CHECK(q.step());  // else stage_id came from nowhere
  return stage_runs[stage_id] = q.i64(0);
}

void Store::Impl::unpack(int64_t run_id, SampleRecord& s, const std::string& cpu_packed,
                         int props_idx) {
  if (cpu_packed.empty() && props_idx < 0) return;
  const store_detail::RunPack& p = pack_of(run_id);
  if (!cpu_packed.empty()) s.cpu_json = store::unpack_cpu(cpu_packed, p.procs);
  if (props_idx >= 0) {
    if (static_cast<size_t>(props_idx) >= p.props_by_idx.size() || s.details_json.size() < 2) {
      throw Error(ErrorKind::kIo,
                  fmt::format("database {}: sample {} names properties {} that are not stored",
                              db.path(), s.id, props_idx),
                  "the database was changed by another program: restore it from a copy");
    }
    s.details_json = store::join_props(s.details_json, p.props_by_idx[props_idx]);
  }
}

uint64_t Store::Impl::file_bytes() const {
  uint64_t n = 0;
  std::error_code ec;
  for (const std::string& f : {db.path(), db.path() + "-wal"}) {
    const auto size = std::filesystem::file_size(f, ec);
    if (!ec) n += size;
  }
  return n;
}

std::string Store::default_path() {
  const char* xdg = std::getenv("XDG_DATA_HOME");
  // The XDG spec says to ignore a relative XDG_DATA_HOME.
  if (xdg && xdg[0] == '/') return std::string(xdg) + "/chokepoint/chokepoint.db";
  std::string home;
  if (const char* h = std::getenv("HOME"); h && h[0] != '\0') {
    home = h;
  } else if (const passwd* pw = getpwuid(getuid()); pw && pw->pw_dir) {
    home = pw->pw_dir;
  }
  if (home.empty()) {
    throw Error(ErrorKind::kConfig, "cannot find a data directory: HOME is not set",
                "set HOME or XDG_DATA_HOME, or pass --db FILE");
  }
  return home + "/.local/share/chokepoint/chokepoint.db";
}

int Store::known_schema_version() { return kKnownVersion; }

Store::Store(const std::string& path) : impl_(std::make_unique<Impl>(path, Access::kReadWrite)) {}

Store::Store(const std::string& path, Access access)
    : impl_(std::make_unique<Impl>(path, access)) {}

Store::~Store() = default;

void Store::require_existing(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) return;
  throw Error(ErrorKind::kUsage, fmt::format("there is no database at {}", path),
              "run `chokepoint diagnose` first, or name the database it wrote with --db");
}

const std::string& Store::path() const { return impl_->db.path(); }

bool Store::read_only() const { return impl_->read_only; }

int64_t Store::begin_run(const RunRecord& run) {
  std::lock_guard lock(impl_->mu);
  const StoreOwner& o = impl_->owner;
  Txn txn(impl_->db, /*immediate=*/true);
  int64_t id;
  {
    Stmt::Use q(*impl_->insert_run);
    q.bind_all(run.label, run.started_at > 0 ? run.started_at : wall_seconds(), run.server,
               run.client, run.plan_json, run.version, o.host, o.pid, o.start, o.boot);
    q.run();
    id = sqlite3_last_insert_rowid(impl_->db.get());
  }
  txn.commit();
  return id;
}

void Store::add_host(int64_t run_id, const stored::Host& host) {
  const std::string facts = column_text(stored::to_json(host.facts));
  std::lock_guard lock(impl_->mu);
  Stmt::Use q(*impl_->upsert_host);
  q.bind_all(run_id, host.role, host.address, facts);
  q.run();
}

int64_t Store::begin_stage(int64_t run_id, const StageRecord& stage) {
  std::lock_guard lock(impl_->mu);
  Stmt::Use q(*impl_->insert_stage);
  q.bind_all(run_id, stage.layer, stage.where, stage.params_json,
             stage.started_at > 0 ? stage.started_at : wall_seconds());
  q.run();
  return sqlite3_last_insert_rowid(impl_->db.get());
}

namespace {

// The sample's CPU record and details as stored: packed where that gives
// back the very same text (see cpu_pack.h, split_props), else whole.
struct PackedSample {
  std::string cpu_json, cpu_packed, details_json;
  int props_idx = -1;
  std::optional<std::pair<int, std::string>> new_props;
};

PackedSample pack_sample(const stored::Sample& s, store_detail::RunPack& p) {
  PackedSample out{column_text(stored::to_json(s.cpu)), "",
                   column_text(stored::to_json(s.details))};
  if (!out.cpu_json.empty()) {
    if (auto packed = store::pack_cpu(out.cpu_json, p.procs)) {
      out.cpu_packed = std::move(*packed);
      out.cpu_json.clear();
    }
  }
  if (auto split = store::split_props(out.details_json)) {
    auto [it, added] = p.props.try_emplace(split->props, static_cast<int>(p.props_by_idx.size()));
    if (added) {
      p.props_by_idx.push_back(split->props);
      out.new_props.emplace(it->second, split->props);
    }
    out.props_idx = it->second;
    out.details_json = std::move(split->rest);
  }
  return out;
}

}  // namespace

int64_t Store::add_sample(int64_t stage_id, const stored::Sample& s) {
  std::lock_guard lock(impl_->mu);
  Impl& im = *impl_;
  CP_CHECK(!im.read_only);
  const int64_t run_id = im.run_of_stage(stage_id);
  store_detail::RunPack& pack = im.pack_of(run_id);
  try {
    const PackedSample ps = pack_sample(s, pack);
    Txn txn(im.db, /*immediate=*/true);
    for (const auto& [idx, who] : pack.procs.fresh()) {
      Stmt::Use q(*im.insert_proc);
      q.bind_all(run_id, idx, who.pid, who.comm, who.role, who.other_netns);
      q.run();
    }
    if (ps.new_props) {
      Stmt::Use q(*im.insert_props);
      q.bind_all(run_id, ps.new_props->first, ps.new_props->second);
      q.run();
    }
    int64_t id;
    {
      Stmt::Use q(*im.insert_sample);
      q.bind_all(stage_id, s.seq, s.op, to_i64(s.size), to_i64(s.bytes), s.seconds, s.started_at,
                 s.cache_possible, s.error, ps.details_json, ps.cpu_json, ps.cpu_packed,
                 ps.props_idx);
      q.run();
      CP_CHECK(sqlite3_changes(im.db.get()) == 1);  // else stage_id came from nowhere
      id = sqlite3_last_insert_rowid(im.db.get());
    }
    txn.commit();  // durable against a process kill once this returns
    pack.procs.clear_fresh();
    return id;
  } catch (...) {
    im.packs.erase(run_id);  // what was interned but not stored: read again from the file
    throw;
  }
}

void Store::end_stage(int64_t stage_id, const std::string& status, const std::string& error) {
  CP_CHECK(is_final_stage_status(status));
  std::lock_guard lock(impl_->mu);
  Stmt::Use q(*impl_->finish_stage);
  q.bind_all(stage_id, status, error, wall_seconds());
  q.run();
  CP_CHECK(sqlite3_changes(impl_->db.get()) == 1);
}

void Store::end_run(int64_t run_id, const std::string& status, const std::string& error) {
  CP_CHECK(is_final_run_status(status));
  std::lock_guard lock(impl_->mu);
  double now = wall_seconds();
  Txn txn(impl_->db, /*immediate=*/true);
  {
    Stmt::Use q(*impl_->finish_run);
    q.bind_all(run_id, status, error, now);
    q.run();
    CP_CHECK(sqlite3_changes(impl_->db.get()) == 1);
  }
  {
    Stmt::Use q(*impl_->interrupt_stages);
    q.bind_all(run_id, fmt::format("the run ended ({}) before this stage did", status), now);
    q.run();
  }
  txn.commit();
}

void Store::Impl::load_header(int64_t id, RunRecord& run) {
  {
    Stmt::Use q(*select_run);
    q.bind(1, id);
    if (!q.step()) {
      throw Error(ErrorKind::kUsage, fmt::format("no run {} in {}", id, db.path()),
                  "see `chokepoint history`");
    }
    q.columns(run.id, run.label, run.status, run.error, run.started_at, run.finished_at, run.server,
              run.client, run.plan_json, run.version);
  }
  Stmt::Use q(*select_hosts);
  q.bind(1, id);
  while (q.step()) run.hosts.push_back({q.text(0), q.text(1), q.text(2)});
}

RunRecord Store::load_run_header(int64_t id) const {
  std::lock_guard lock(impl_->mu);
  Txn txn(impl_->db, /*immediate=*/false);
  RunRecord run;
  impl_->load_header(id, run);
  txn.commit();
  return run;
}

RunRecord Store::load_run(int64_t id) const {
  std::lock_guard lock(impl_->mu);
  Impl& im = *impl_;
  Txn txn(im.db, /*immediate=*/false);  // one snapshot, even while another process writes
  RunRecord run;
  im.load_header(id, run);
  {
    Stmt::Use q(*im.select_stages);
    q.bind(1, id);
    while (q.step()) {
      StageRecord st;
      q.columns(st.id, st.run_id, st.layer, st.where, st.status, st.error, st.params_json,
                st.started_at, st.finished_at);
      run.stages.push_back(std::move(st));
    }
  }
  // Read afresh: another process may have added processes since.
  im.packs.erase(id);
  for (StageRecord& st : run.stages) {
    Stmt::Use q(*im.select_samples);
    q.bind(1, st.id);
    while (q.step()) {
      SampleRecord s;
      q.columns(s.id, s.stage_id, s.seq, s.op, s.size, s.bytes, s.seconds, s.started_at,
                s.cache_possible, s.error, s.details_json, s.cpu_json);
      im.unpack(id, s, q.text(12), static_cast<int>(q.i64(13)));
      st.samples.push_back(std::move(s));
    }
  }
  txn.commit();
  return run;
}

stored::Run Store::load(int64_t id) const { return stored::decode(load_run(id)); }
stored::Run Store::load_header(int64_t id) const { return stored::decode(load_run_header(id)); }

}  // namespace cp
