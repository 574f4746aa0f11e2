// Tune sessions in the store: tables tune_sessions and tune_runs (migration
// 0004_tune_sessions.sql), written and read as typed rows.
#include <boost/json.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <mutex>

#include "core/clock.h"
#include "core/error.h"
#include "core/json_util.h"
#include "store/store.h"
#include "store/store_impl.h"

namespace cp {

namespace store_detail {

std::vector<std::string> table_columns(const Db& db, const std::string& table) {
  Stmt st(db, "SELECT name FROM pragma_table_info(?1)");
  Stmt::Use q(st);
  q.bind(1, table);
  std::vector<std::string> out;
  while (q.step()) out.push_back(q.text(0));
  return out;
}

void add_missing_tune_columns(const Db& db) {
  const std::vector<std::string> cols = table_columns(db, "tune_sessions");
  if (cols.empty()) return;  // no table yet: the migration creates it whole
  if (std::find(cols.begin(), cols.end(), "target") == cols.end()) {
    db.exec("ALTER TABLE tune_sessions ADD COLUMN target TEXT", "adding tune_sessions.target");
  }
}

}  // namespace store_detail

namespace {

using store_detail::Stmt;
namespace json = boost::json;

std::string values_json(const std::vector<std::string>& values) {
  json::array a;
  for (const auto& v : values) a.emplace_back(v);
  return json::serialize(a);
}

// A damaged or non-array column reads as no values (the runs still load).
std::vector<std::string> values_of(const std::string& text) {
  std::vector<std::string> out;
  const json::value v = parse_json_or_null(text);
  if (const json::array* a = v.if_array()) {
    for (const auto& e : *a) {
      if (e.is_string()) out.emplace_back(e.as_string());
    }
  }
  return out;
}

}  // namespace

int64_t Store::begin_tune_session(const TuneSessionRecord& s) {
  return impl_->write_tune(
      "INSERT INTO tune_sessions (started_at, status, knob, endpoint, server, client, original, "
      "target, values_json, rounds, result_json, error) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, '', '')",
      s.started_at > 0 ? s.started_at : wall_seconds(), kRunning, s.knob, s.endpoint, s.server,
      s.client, s.original, s.target, values_json(s.values), s.rounds);
}

void Store::add_tune_run(const TuneRunRecord& r) {
  impl_->write_tune(
      "INSERT INTO tune_runs (session_id, run_id, round, value, is_original) "
      "VALUES (?1, ?2, ?3, ?4, ?5)",
      r.session_id, r.run_id, r.round, r.value, r.is_original);
}

void Store::end_tune_session(const TuneSessionRecord& s) {
  impl_->write_tune(
      "UPDATE tune_sessions SET finished_at = ?1, status = ?2, original = ?3, target = ?4, "
      "result_json = ?5, error = ?6 WHERE id = ?7",
      wall_seconds(), s.status, s.original, s.target, s.result_json, s.error, s.id);
}

std::optional<TuneSessionRecord> Store::tune_session(int64_t id) const {
  std::lock_guard lock(impl_->mu);
  // A read-only file of an older schema may hold tables an older build made,
  // perhaps without `target`, or none.
  const std::vector<std::string> cols = store_detail::table_columns(impl_->db, "tune_sessions");
  if (cols.empty()) return std::nullopt;
  const bool has_target = std::find(cols.begin(), cols.end(), "target") != cols.end();
  const std::string sql = fmt::format(
      "SELECT id, COALESCE(started_at, 0), COALESCE(finished_at, 0), status, knob, endpoint, "
      "server, client, original, {}, values_json, rounds, result_json, error "
      "FROM tune_sessions {}",
      has_target ? "target" : "''", id == 0 ? "ORDER BY id DESC LIMIT 1" : "WHERE id = ?1");
  Stmt st(impl_->db, sql.c_str());
  Stmt::Use q(st);
  if (id != 0) q.bind(1, id);
  if (!q.step()) return std::nullopt;
  TuneSessionRecord s;
  std::string values;
  q.columns(s.id, s.started_at, s.finished_at, s.status, s.knob, s.endpoint, s.server, s.client,
            s.original, s.target, values, s.rounds, s.result_json, s.error);
  s.values = values_of(values);
  return s;
}

std::vector<TuneRunRecord> Store::tune_runs(int64_t session_id) const {
  std::lock_guard lock(impl_->mu);
  std::vector<TuneRunRecord> out;
  if (store_detail::table_columns(impl_->db, "tune_runs").empty()) return out;
  Stmt st(impl_->db,
          "SELECT session_id, run_id, round, value, is_original FROM tune_runs "
          "WHERE session_id = ?1 AND run_id IS NOT NULL ORDER BY run_id");
  Stmt::Use q(st);
  q.bind(1, session_id);
  while (q.step()) {
    TuneRunRecord r;
    q.columns(r.session_id, r.run_id, r.round, r.value, r.is_original);
    out.push_back(std::move(r));
  }
  return out;
}

std::set<int64_t> Store::tuned_run_ids() const {
  std::lock_guard lock(impl_->mu);
  return store_detail::tuned_run_ids(impl_->db);
}

namespace store_detail {

std::set<int64_t> tuned_run_ids(const Db& db) {
  std::set<int64_t> out;
  if (table_columns(db, "tune_runs").empty()) return out;
  Stmt st(db, "SELECT DISTINCT run_id FROM tune_runs WHERE run_id IS NOT NULL");
  Stmt::Use q(st);
  while (q.step()) out.insert(q.i64(0));
  return out;
}

}  // namespace store_detail

}  // namespace cp
