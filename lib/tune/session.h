// Tune sessions in the database, beside the runs (internal to lib/tune):
// their tables, and the layer a sample counts for.
#pragma once

#include <sqlite3.h>

#include <fmt/format.h>
#include <boost/json.hpp>

#include <string>
#include <vector>

#include "core/clock.h"
#include "core/error.h"
#include "core/model.h"
#include "tune/knobs.h"
#include "tune/sweep.h"

namespace cp::tune::detail {
namespace json = boost::json;

// Tune sessions live beside the runs, in their own tables of the same
// database, created on first use (the store's schema stays the store's).
class SessionTable {
 public:
  // `read_only`: opened SQLITE_OPEN_READONLY, nothing created (tune
  // --show); has_tables() then says whether any session was ever stored.
  explicit SessionTable(const std::string& path, bool read_only = false) {
    const int flags = read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
      throw Error(ErrorKind::kIo, fmt::format("cannot open {}: {}", path, sqlite3_errmsg(db_)));
    }
    sqlite3_busy_timeout(db_, 10000);
    if (read_only) return;
    exec(
        "CREATE TABLE IF NOT EXISTS tune_sessions (id INTEGER PRIMARY KEY, started_at REAL, "
        "finished_at REAL, status TEXT, knob TEXT, endpoint TEXT, server TEXT, client TEXT, "
        "original TEXT, values_json TEXT, rounds INTEGER, result_json TEXT, error TEXT, "
        "target TEXT);"
        "CREATE TABLE IF NOT EXISTS tune_runs (session_id INTEGER REFERENCES tune_sessions(id), "
        "run_id INTEGER, round INTEGER, value TEXT, is_original INTEGER);");
    // Tables from before the target column gain it.
    bool has_target = false;
    for (const auto& c : rows("PRAGMA table_info(tune_sessions)", {})) {
      has_target = has_target || (c.size() > 1 && c[1] == "target");
    }
    if (!has_target) exec("ALTER TABLE tune_sessions ADD COLUMN target TEXT");
  }
  ~SessionTable() { sqlite3_close(db_); }
  // `knob`: the name, or a grid's names joined with " x "; `values`: the
  // values (a grid: the combinations' labels) without the original.
  int64_t begin(const SweepSetup& s, const std::string& knob, const std::string& endpoint,
                const std::vector<std::string>& values) {
    json::array vals;
    for (const auto& v : values) vals.push_back(json::value(v));
    run("INSERT INTO tune_sessions (started_at, status, knob, endpoint, server, client, "
        "values_json, rounds) VALUES (?,?,?,?,?,?,?,?)",
        {std::to_string(wall_seconds()), cp::kRunning, knob, endpoint, s.server_name, s.client_name,
         json::serialize(vals), std::to_string(s.rounds)});
    return sqlite3_last_insert_rowid(db_);
  }
  void link(int64_t session, int64_t run_id, int round, const std::string& value, bool original) {
    run("INSERT INTO tune_runs (session_id, run_id, round, value, is_original) VALUES (?,?,?,?,?)",
        {std::to_string(session), std::to_string(run_id), std::to_string(round), value,
         original ? "1" : "0"});
  }
  void end(int64_t session, const std::string& status, const std::string& original,
           const std::string& target, const std::string& result, const std::string& error) {
    run("UPDATE tune_sessions SET finished_at=?, status=?, original=?, target=?, result_json=?, "
        "error=? WHERE id=?",
        {std::to_string(wall_seconds()), status, original, target, result, error,
         std::to_string(session)});
  }
  bool has_tables() {
    return !rows("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'tune_sessions'",
                 {})
                .empty();
  }
  // Rows of a query, every column as text ("" for NULL).
  std::vector<std::vector<std::string>> rows(const char* sql,
                                             const std::vector<std::string>& args) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_, sql, -1, &st, nullptr) != SQLITE_OK) {
      throw Error(ErrorKind::kIo, fmt::format("tune tables: {}", sqlite3_errmsg(db_)));
    }
    for (size_t i = 0; i < args.size(); ++i) {
      sqlite3_bind_text(st, static_cast<int>(i + 1), args[i].c_str(), -1, SQLITE_TRANSIENT);
    }
    std::vector<std::vector<std::string>> out;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      std::vector<std::string> row;
      for (int c = 0; c < sqlite3_column_count(st); ++c) {
        const unsigned char* t = sqlite3_column_text(st, c);
        row.emplace_back(t ? reinterpret_cast<const char*>(t) : "");
      }
      out.push_back(std::move(row));
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
      throw Error(ErrorKind::kIo, fmt::format("tune tables: {}", sqlite3_errmsg(db_)));
    }
    return out;
  }

 private:
  void exec(const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      std::string m = err ? err : "?";
      sqlite3_free(err);
      throw Error(ErrorKind::kIo, "tune tables: " + m);
    }
  }
  void run(const char* sql, const std::vector<std::string>& args) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_, sql, -1, &st, nullptr) != SQLITE_OK) {
      throw Error(ErrorKind::kIo, fmt::format("tune tables: {}", sqlite3_errmsg(db_)));
    }
    for (size_t i = 0; i < args.size(); ++i) {
      sqlite3_bind_text(st, static_cast<int>(i + 1), args[i].c_str(), -1, SQLITE_TRANSIENT);
    }
    const int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
      throw Error(ErrorKind::kIo, fmt::format("tune tables: {}", sqlite3_errmsg(db_)));
    }
  }
  sqlite3* db_ = nullptr;
};

// "smb disk read 100 MB", "tcp server->client send".
std::string layer_key(const std::string& layer, const std::string& where, const std::string& op,
                      uint64_t size);
bool affects_any(const std::vector<const Knob*>& knobs, const std::string& layer,
                 const std::string& where, const std::string& op);

}  // namespace cp::tune::detail
