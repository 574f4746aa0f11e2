#include "store/store.h"

#include <pwd.h>
#include <sqlite3.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string_view>

#include "core/clock.h"
#include "core/error.h"
#include "core/process.h"
#include "core/stats.h"

namespace cp::embedded {
extern const std::string_view sqlite_0001_init;
}  // namespace cp::embedded

namespace cp {
namespace {

struct Migration {
  int version;
  std::string_view sql;
};

// In order; a new schema version is a new file appended here, never an edit
// of one already released.
const Migration kMigrations[] = {
    {1, embedded::sqlite_0001_init},
};

constexpr int kKnownVersion = 1;

// 5 s: long enough for another process's short write transaction.
constexpr int kBusyTimeoutMs = 5000;

std::string hint_for(int code, const std::string& path) {
  switch (code & 0xff) {
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return fmt::format(
          "check that the directory of {} is writable, or choose another file with --db", path);
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
      return fmt::format(
          "{} is not a chokepoint database or is damaged: choose another file with --db", path);
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return "another process holds the database: wait for it to finish, or use --db with another "
             "file";
    case SQLITE_FULL:
      return "free space on the file system holding the database, or choose another file with --db";
    case SQLITE_IOERR:
      return "check the disk holding the database (dmesg), or choose another file with --db";
    default:
      return "choose another file with --db";
  }
}

// Who writes runs opened by this process.
struct Owner {
  std::string host = host_name();
  int64_t pid = getpid();
  int64_t start = process_start_ticks(getpid()).value_or(0);
  std::string boot = boot_id();
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

// A connection, its path (for messages) and error conversion.
class Db {
 public:
  explicit Db(const std::string& path) : path_(path) {
    int rc =
        sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
    if (rc != SQLITE_OK) {
      std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
      sqlite3_close_v2(db_);
      db_ = nullptr;
      throw Error(ErrorKind::kIo, fmt::format("cannot open database {}: {}", path, msg),
                  hint_for(rc, path));
    }
    sqlite3_extended_result_codes(db_, 1);
    sqlite3_busy_timeout(db_, kBusyTimeoutMs);
  }
  ~Db() { sqlite3_close_v2(db_); }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  sqlite3* get() const { return db_; }
  const std::string& path() const { return path_; }

  [[noreturn]] void fail(int rc, std::string_view what) const {
    throw Error(ErrorKind::kIo,
                fmt::format("database {}: {}: {}", path_, what, sqlite3_errmsg(db_)),
                hint_for(rc, path_));
  }

  // Runs one or more statements that return no rows we need.
  void exec(const std::string& sql, std::string_view what) const {
    char* err = nullptr;
    int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
    if (rc != SQLITE_OK) {
      std::string msg = err ? err : sqlite3_errstr(rc);
      sqlite3_free(err);
      throw Error(ErrorKind::kIo, fmt::format("database {}: {}: {}", path_, what, msg),
                  hint_for(rc, path_));
    }
  }

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
};

// A prepared statement kept for the Store's lifetime.
class Stmt {
 public:
  Stmt(const Db& db, const char* sql) : db_(db) {
    int rc = sqlite3_prepare_v3(db.get(), sql, -1, SQLITE_PREPARE_PERSISTENT, &s_, nullptr);
    if (rc != SQLITE_OK) db.fail(rc, "preparing a statement");
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  // One use: binds, steps, and on destruction resets (ending the implicit
  // transaction, which in WAL mode would otherwise pin a snapshot).
  class Use {
   public:
    explicit Use(Stmt& st) : st_(st) {}
    ~Use() {
      sqlite3_reset(st_.s_);
      sqlite3_clear_bindings(st_.s_);
    }
    Use(const Use&) = delete;
    Use& operator=(const Use&) = delete;

    Use& bind(int i, int64_t v) {
      check(sqlite3_bind_int64(st_.s_, i, v));
      return *this;
    }
    Use& bind(int i, int v) { return bind(i, static_cast<int64_t>(v)); }
    Use& bind(int i, double v) {
      check(sqlite3_bind_double(st_.s_, i, v));
      return *this;
    }
    Use& bind(int i, const std::string& v) {
      check(sqlite3_bind_text64(st_.s_, i, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
      return *this;
    }
    Use& bind(int i, const char* v) { return bind(i, std::string(v)); }
    // true: a row is ready; false: done (a write is then committed unless
    // inside an explicit transaction).
    bool step() {
      int rc = sqlite3_step(st_.s_);
      if (rc == SQLITE_ROW) return true;
      if (rc == SQLITE_DONE) return false;
      st_.db_.fail(rc, "executing a statement");
    }
    // Runs a statement that returns no rows.
    void run() {
      bool row = step();
      CP_CHECK(!row);
    }
    int64_t i64(int col) const { return sqlite3_column_int64(st_.s_, col); }
    double real(int col) const { return sqlite3_column_double(st_.s_, col); }
    std::string text(int col) const {
      const unsigned char* p = sqlite3_column_text(st_.s_, col);
      if (!p) return {};
      return std::string(reinterpret_cast<const char*>(p),
                         static_cast<size_t>(sqlite3_column_bytes(st_.s_, col)));
    }

   private:
    void check(int rc) {
      if (rc != SQLITE_OK) st_.db_.fail(rc, "binding a value");
    }
    Stmt& st_;
  };

 private:
  const Db& db_;
  sqlite3_stmt* s_ = nullptr;
};

// An explicit transaction: rolled back unless committed.
class Txn {
 public:
  // immediate: take the write lock now (so a read-then-write cannot fail
  // with SQLITE_BUSY halfway); otherwise a read snapshot.
  Txn(const Db& db, bool immediate) : db_(db) {
    db_.exec(immediate ? "BEGIN IMMEDIATE" : "BEGIN", "starting a transaction");
  }
  ~Txn() {
    if (open_) sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
  }
  Txn(const Txn&) = delete;
  Txn& operator=(const Txn&) = delete;
  void commit() {
    db_.exec("COMMIT", "committing");
    open_ = false;
  }

 private:
  const Db& db_;
  bool open_ = true;
};

int user_version(const Db& db) {
  Stmt st(db, "PRAGMA user_version");
  Stmt::Use q(st);
  CP_CHECK(q.step());
  return static_cast<int>(q.i64(0));
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

}  // namespace

struct Store::Impl {
  explicit Impl(const std::string& path) : db(open(path)) {
    configure();
    migrate();
    prepare();
    if (sqlite3_db_readonly(db.get(), "main") != 1) mark_dead_runs();
  }

  static const std::string& open(const std::string& path) {
    if (path.empty()) {
      throw Error(ErrorKind::kUsage, "empty database path", "pass --db FILE or leave --db out");
    }
    if (std::filesystem::is_directory(path)) {
      throw Error(ErrorKind::kIo, fmt::format("database path {} is a directory", path),
                  "name a file with --db, e.g. --db " + path + "/chokepoint.db");
    }
    create_parent_dirs(path);
    return path;
  }

  void configure() {
    db.exec("PRAGMA foreign_keys = ON", "enabling foreign keys");
    // The first read of the file: "file is not a database" shows here.
    db.exec("PRAGMA journal_mode = WAL", "reading it");
    db.exec("PRAGMA synchronous = NORMAL", "setting synchronous");
  }

  void migrate() {
    int v = user_version(db);
    check_not_newer(v);
    for (const Migration& m : kMigrations) {
      if (m.version <= v) continue;
      Txn txn(db, /*immediate=*/true);
      // Another process may have migrated while we waited for the lock.
      v = user_version(db);
      check_not_newer(v);
      if (m.version > v) {
        db.exec(std::string(m.sql), fmt::format("applying schema migration {}", m.version));
        db.exec(fmt::format("PRAGMA user_version = {}", m.version), "recording schema version");
        v = m.version;
      }
      txn.commit();
    }
  }

  void check_not_newer(int v) const {
    if (v > kKnownVersion) {
      throw Error(ErrorKind::kIo,
                  fmt::format("database schema {} of {} is newer than this chokepoint (knows {})",
                              v, db.path(), kKnownVersion),
                  "upgrade chokepoint or use --db with another file");
    }
  }

  void prepare() {
    auto make = [&](const char* sql) { return std::make_unique<Stmt>(db, sql); };
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
        " cache_possible, error, details_json, cpu_json)"
        " SELECT ?1, run_id, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11 FROM stages WHERE id = ?1");
    finish_stage =
        make("UPDATE stages SET status = ?2, error = ?3, finished_at = ?4 WHERE id = ?1");
    finish_run = make("UPDATE runs SET status = ?2, error = ?3, finished_at = ?4 WHERE id = ?1");
    interrupt_stages = make(
        "UPDATE stages SET status = 'interrupted', error = ?2,"
        " finished_at = COALESCE((SELECT MAX(s.started_at + s.seconds) FROM samples s"
        "   WHERE s.stage_id = stages.id), ?3, started_at)"
        " WHERE run_id = ?1 AND status = 'running'");
    select_history = make(
        "SELECT id, label, status, server, client, started_at, COALESCE(finished_at, 0)"
        " FROM runs"
        " WHERE (?1 = '' OR label = ?1)"
        "   AND (?2 = '' OR instr(lower(server), lower(?2)) > 0"
        "        OR instr(lower(client), lower(?2)) > 0)"
        "   AND started_at >= ?3"
        " ORDER BY started_at DESC, id DESC LIMIT ?4");
    select_run = make(
        "SELECT id, label, status, error, started_at, COALESCE(finished_at, 0), server, client,"
        " plan_json, version FROM runs WHERE id = ?1");
    select_hosts =
        make("SELECT role, address, facts_json FROM hosts WHERE run_id = ?1 ORDER BY rowid");
    select_stages = make(
        "SELECT id, run_id, layer, location, status, error, params_json, started_at,"
        " COALESCE(finished_at, 0) FROM stages WHERE run_id = ?1 ORDER BY id");
    select_samples = make(
        "SELECT id, stage_id, seq, op, size, bytes, seconds, started_at, cache_possible, error,"
        " details_json, cpu_json FROM samples WHERE stage_id = ?1 ORDER BY seq, id");
    select_latest = make("SELECT id FROM runs ORDER BY started_at DESC, id DESC LIMIT 1");
    select_by_id = make("SELECT id FROM runs WHERE id = ?1");
    select_by_label =
        make("SELECT id FROM runs WHERE label = ?1 ORDER BY started_at DESC, id DESC LIMIT 1");
  }

  bool owner_alive(int64_t pid, int64_t start, const std::string& boot) const {
    if (!boot.empty() && !owner.boot.empty() && boot != owner.boot) return false;  // rebooted
    std::optional<int64_t> ticks = process_start_ticks(pid);
    return ticks && *ticks == start;
  }

  // Runs of this host left "running" by a process that is gone.
  void mark_dead_runs() {
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
        q.bind(1, id).bind(2,
                           fmt::format("chokepoint (pid {}) ended before the run finished", pid));
        q.run();
      }
      // ?3 unbound: a stage without samples ends when it began, the last
      // thing known of it.
      Stmt::Use q(*interrupt_stages);
      q.bind(1, id).bind(2, "the run was interrupted");
      q.run();
    }
    txn.commit();
  }

  [[noreturn]] void no_run(const std::string& what) const {
    Stmt count(db, "SELECT COUNT(*) FROM runs");
    int64_t n = 0;
    {
      Stmt::Use q(count);
      if (q.step()) n = q.i64(0);
    }
    if (n == 0) {
      throw Error(
          ErrorKind::kUsage, fmt::format("no run {}: {} holds no runs yet", what, db.path()),
          "run `chokepoint diagnose` first, or pass --db with the database that holds the runs");
    }
    Stmt labels(db,
                "SELECT label FROM runs WHERE label != '' GROUP BY label"
                " ORDER BY MAX(started_at) DESC LIMIT 5");
    std::string recent;
    {
      Stmt::Use q(labels);
      while (q.step()) recent += (recent.empty() ? "" : ", ") + q.text(0);
    }
    throw Error(ErrorKind::kUsage,
                fmt::format("no run {} among the {} in {}", what,
                            n == 1 ? std::string("1 run") : fmt::format("{} runs", n), db.path()),
                fmt::format("see `chokepoint history`{}",
                            recent.empty() ? "" : " (recent labels: " + recent + ")"));
  }

  Db db;
  Owner owner;
  std::mutex mu;
  std::unique_ptr<Stmt> insert_run, upsert_host, insert_stage, insert_sample, finish_stage,
      finish_run, interrupt_stages, select_history, select_run, select_hosts, select_stages,
      select_samples, select_latest, select_by_id, select_by_label;
};

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

Store::Store(const std::string& path) : impl_(std::make_unique<Impl>(path)) {}

Store::~Store() = default;

void Store::require_existing(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) return;
  throw Error(ErrorKind::kUsage, fmt::format("there is no database at {}", path),
              "run `chokepoint diagnose` first, or name the database it wrote with --db");
}

const std::string& Store::path() const { return impl_->db.path(); }

int64_t Store::begin_run(const RunRecord& run) {
  std::lock_guard lock(impl_->mu);
  const Owner& o = impl_->owner;
  Txn txn(impl_->db, /*immediate=*/true);
  int64_t id;
  {
    Stmt::Use q(*impl_->insert_run);
    q.bind(1, run.label)
        .bind(2, run.started_at > 0 ? run.started_at : wall_seconds())
        .bind(3, run.server)
        .bind(4, run.client)
        .bind(5, run.plan_json)
        .bind(6, run.version)
        .bind(7, o.host)
        .bind(8, o.pid)
        .bind(9, o.start)
        .bind(10, o.boot);
    q.run();
    id = sqlite3_last_insert_rowid(impl_->db.get());
  }
  for (const HostRecord& h : run.hosts) {
    Stmt::Use q(*impl_->upsert_host);
    q.bind(1, id).bind(2, h.role).bind(3, h.address).bind(4, h.facts_json);
    q.run();
  }
  txn.commit();
  return id;
}

void Store::add_host(int64_t run_id, const HostRecord& host) {
  std::lock_guard lock(impl_->mu);
  Stmt::Use q(*impl_->upsert_host);
  q.bind(1, run_id).bind(2, host.role).bind(3, host.address).bind(4, host.facts_json);
  q.run();
}

int64_t Store::begin_stage(int64_t run_id, const StageRecord& stage) {
  std::lock_guard lock(impl_->mu);
  Stmt::Use q(*impl_->insert_stage);
  q.bind(1, run_id)
      .bind(2, stage.layer)
      .bind(3, stage.where)
      .bind(4, stage.params_json)
      .bind(5, stage.started_at > 0 ? stage.started_at : wall_seconds());
  q.run();
  return sqlite3_last_insert_rowid(impl_->db.get());
}

int64_t Store::add_sample(int64_t stage_id, const SampleRecord& s) {
  std::lock_guard lock(impl_->mu);
  Stmt::Use q(*impl_->insert_sample);
  q.bind(1, stage_id)
      .bind(2, s.seq)
      .bind(3, s.op)
      .bind(4, to_i64(s.size))
      .bind(5, to_i64(s.bytes))
      .bind(6, s.seconds)
      .bind(7, s.started_at)
      .bind(8, s.cache_possible ? 1 : 0)
      .bind(9, s.error)
      .bind(10, s.details_json)
      .bind(11, s.cpu_json);
  q.run();  // autocommit: durable against a process kill once this returns
  CP_CHECK(sqlite3_changes(impl_->db.get()) == 1);  // else stage_id came from nowhere
  return sqlite3_last_insert_rowid(impl_->db.get());
}

void Store::end_stage(int64_t stage_id, const std::string& status, const std::string& error) {
  CP_CHECK(is_final_stage_status(status));
  std::lock_guard lock(impl_->mu);
  Stmt::Use q(*impl_->finish_stage);
  q.bind(1, stage_id).bind(2, status).bind(3, error).bind(4, wall_seconds());
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
    q.bind(1, run_id).bind(2, status).bind(3, error).bind(4, now);
    q.run();
    CP_CHECK(sqlite3_changes(impl_->db.get()) == 1);
  }
  {
    Stmt::Use q(*impl_->interrupt_stages);
    q.bind(1, run_id).bind(2, fmt::format("the run ended ({}) before this stage did", status));
    q.bind(3, now);
    q.run();
  }
  txn.commit();
}

std::vector<RunListRow> Store::history(const HistoryFilter& filter) const {
  std::lock_guard lock(impl_->mu);
  Txn txn(impl_->db, /*immediate=*/false);
  std::vector<RunListRow> rows;
  {
    Stmt::Use q(*impl_->select_history);
    q.bind(1, filter.label)
        .bind(2, filter.host)
        .bind(3, filter.since)
        .bind(4, filter.limit == 0 ? int64_t{-1}
                                   : to_i64(std::min<uint64_t>(
                                         filter.limit, std::numeric_limits<int64_t>::max())));
    while (q.step()) {
      RunListRow r;
      r.id = q.i64(0);
      r.label = q.text(1);
      r.status = q.text(2);
      r.server = q.text(3);
      r.client = q.text(4);
      r.started_at = q.real(5);
      r.finished_at = q.real(6);
      rows.push_back(std::move(r));
    }
  }
  txn.commit();
  return rows;
}

RunRecord Store::load_run(int64_t id) const {
  std::lock_guard lock(impl_->mu);
  Impl& im = *impl_;
  Txn txn(im.db, /*immediate=*/false);  // one snapshot, even while another process writes
  RunRecord run;
  {
    Stmt::Use q(*im.select_run);
    q.bind(1, id);
    if (!q.step()) {
      throw Error(ErrorKind::kUsage, fmt::format("no run {} in {}", id, im.db.path()),
                  "see `chokepoint history`");
    }
    run.id = q.i64(0);
    run.label = q.text(1);
    run.status = q.text(2);
    run.error = q.text(3);
    run.started_at = q.real(4);
    run.finished_at = q.real(5);
    run.server = q.text(6);
    run.client = q.text(7);
    run.plan_json = q.text(8);
    run.version = q.text(9);
  }
  {
    Stmt::Use q(*im.select_hosts);
    q.bind(1, id);
    while (q.step()) run.hosts.push_back({q.text(0), q.text(1), q.text(2)});
  }
  {
    Stmt::Use q(*im.select_stages);
    q.bind(1, id);
    while (q.step()) {
      StageRecord st;
      st.id = q.i64(0);
      st.run_id = q.i64(1);
      st.layer = q.text(2);
      st.where = q.text(3);
      st.status = q.text(4);
      st.error = q.text(5);
      st.params_json = q.text(6);
      st.started_at = q.real(7);
      st.finished_at = q.real(8);
      run.stages.push_back(std::move(st));
    }
  }
  for (StageRecord& st : run.stages) {
    Stmt::Use q(*im.select_samples);
    q.bind(1, st.id);
    while (q.step()) {
      SampleRecord s;
      s.id = q.i64(0);
      s.stage_id = q.i64(1);
      s.seq = static_cast<int>(q.i64(2));
      s.op = q.text(3);
      s.size = static_cast<uint64_t>(q.i64(4));
      s.bytes = static_cast<uint64_t>(q.i64(5));
      s.seconds = q.real(6);
      s.started_at = q.real(7);
      s.cache_possible = q.i64(8) != 0;
      s.error = q.text(9);
      s.details_json = q.text(10);
      s.cpu_json = q.text(11);
      st.samples.push_back(std::move(s));
    }
  }
  txn.commit();
  return run;
}

int64_t Store::resolve(const std::string& id_or_label) const {
  std::lock_guard lock(impl_->mu);
  Impl& im = *impl_;
  if (id_or_label == "latest" || id_or_label == "last") {
    Stmt::Use q(*im.select_latest);
    if (q.step()) return q.i64(0);
    im.no_run("'" + id_or_label + "'");
  }
  bool digits = !id_or_label.empty() && id_or_label.size() <= 18 &&
                id_or_label.find_first_not_of("0123456789") == std::string::npos;
  if (digits) {
    Stmt::Use q(*im.select_by_id);
    q.bind(1, static_cast<int64_t>(std::stoll(id_or_label)));
    if (q.step()) return q.i64(0);
  }
  {
    // A label may look like a number; it is tried after the id.
    Stmt::Use q(*im.select_by_label);
    q.bind(1, id_or_label);
    if (q.step()) return q.i64(0);
  }
  im.no_run("'" + id_or_label + "'");
}

int Store::schema_version() const {
  std::lock_guard lock(impl_->mu);
  return user_version(impl_->db);
}

}  // namespace cp
