// The store's SQLite plumbing, shared by its source files (not part of the
// library's interface): a connection, prepared statements, transactions, and
// Store::Impl.
#pragma once

#include <sqlite3.h>

#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.h"
#include "store/cpu_pack.h"
#include "store/store.h"

namespace cp::store_detail {

// 5 s: long enough for another process's short write transaction.
inline constexpr int kBusyTimeoutMs = 5000;

inline std::string hint_for(int code, const std::string& path) {
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

// A connection, its path (for messages) and error conversion.
class Db {
 public:
  // flags: SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, or SQLITE_OPEN_READONLY.
  // Or a URI (SQLITE_OPEN_URI) with the path it names.
  explicit Db(const std::pair<std::string, int>& target) : Db(target.first, target.second) {}
  Db(const std::string& path, int flags)
      : path_((flags & SQLITE_OPEN_URI) ? uri_path(path) : path) {
    int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
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
  // "file:/a%20b.db?immutable=1" -> "/a b.db", for messages.
  static std::string uri_path(const std::string& uri) {
    std::string out;
    const size_t end = uri.find('?');
    for (size_t i = 5; i < uri.size() && i < end; ++i) {
      if (uri[i] == '%' && i + 2 < uri.size()) {
        out += static_cast<char>(std::stoi(uri.substr(i + 1, 2), nullptr, 16));
        i += 2;
      } else {
        out += uri[i];
      }
    }
    return out;
  }
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
    Use& bind(int i, bool v) { return bind(i, v ? 1 : 0); }
    // Binds ?1, ?2, ... to `v` in order.
    template <class... T>
    Use& bind_all(const T&... v) {
      int i = 0;
      (bind(++i, v), ...);
      return *this;
    }
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
    // Reads columns 0, 1, ... of the row into `out` in order, each as its type
    // (the reverse of bind_all).
    template <class... T>
    void columns(T&... out) const {
      int i = 0;
      (get(i++, out), ...);
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
    void get(int col, int64_t& v) const { v = i64(col); }
    void get(int col, int& v) const { v = static_cast<int>(i64(col)); }
    void get(int col, uint64_t& v) const { v = static_cast<uint64_t>(i64(col)); }
    void get(int col, bool& v) const { v = i64(col) != 0; }
    void get(int col, double& v) const { v = real(col); }
    void get(int col, std::string& v) const { v = text(col); }
    void check(int rc) {
      if (rc != SQLITE_OK) st_.db_.fail(rc, "binding a value");
    }
    Stmt& st_;
  };

 private:
  const Db& db_;
  sqlite3_stmt* s_ = nullptr;
};

// Runs one statement that returns no rows, ?1, ?2, ... bound to `v` in order.
template <class... T>
void run_once(const Db& db, const char* sql, const T&... v) {
  Stmt st(db, sql);
  Stmt::Use q(st);
  q.bind_all(v...);
  q.run();
}

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

int user_version(const Db& db);

// What a run's packed samples refer to (cpu_procs, sample_props), as known to
// this connection.
struct RunPack {
  store::ProcTable procs;
  std::map<std::string, int> props;  // JSON text -> idx
  std::vector<std::string> props_by_idx;
};

}  // namespace cp::store_detail
