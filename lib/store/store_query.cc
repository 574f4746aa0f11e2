// The store's queries over whole runs: history, resolve, stored verdicts,
// trends and prune.
#include <sqlite3.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "store/store.h"
#include "store/store_impl.h"

namespace cp {
namespace {

using store_detail::Stmt;
using store_detail::Txn;

int64_t sql_limit(size_t limit) {
  if (limit == 0) return -1;
  return static_cast<int64_t>(std::min<uint64_t>(limit, std::numeric_limits<int64_t>::max()));
}

// Columns 0-6: id, label, status, server, client, started_at, finished_at.
RunListRow run_list_row(const Stmt::Use& q) {
  RunListRow r;
  q.columns(r.id, r.label, r.status, r.server, r.client, r.started_at, r.finished_at);
  return r;
}

// Columns from `first` on: path, layer, cap, cap_label, figure, ratio,
// ratio_lo, ratio_hi, reason, lower_bound (a NULL path: none).
PathVerdict path_verdict(const Stmt::Use& q, int first) {
  PathVerdict v;
  v.path = q.text(first);
  v.layer = q.text(first + 1);
  v.cap = q.text(first + 2);
  v.cap_label = q.text(first + 3);
  v.figure = q.real(first + 4);
  v.ratio = q.real(first + 5);
  v.ratio_lo = q.real(first + 6);
  v.ratio_hi = q.real(first + 7);
  v.reason = q.text(first + 8);
  v.lower_bound = q.i64(first + 9) != 0;
  return v;
}

}  // namespace

void Store::Impl::no_run(const std::string& what) const {
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

std::vector<RunListRow> Store::history(const HistoryFilter& filter) const {
  std::lock_guard lock(impl_->mu);
  Txn txn(impl_->db, /*immediate=*/false);
  std::vector<RunListRow> rows;
  {
    Stmt::Use q(*impl_->select_history);
    q.bind_all(filter.label, filter.host, filter.since, sql_limit(filter.limit));
    while (q.step()) {
      RunListRow r = run_list_row(q);
      r.analysis_version = static_cast<int>(q.i64(7));
      r.headline = q.text(8);
      r.head = path_verdict(q, 9);
      r.head.headline = !r.head.path.empty();
      rows.push_back(std::move(r));
    }
  }
  txn.commit();
  return rows;
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
  return store_detail::user_version(impl_->db);
}

void Store::put_verdicts(int64_t run_id, const VerdictSummary& v) {
  std::lock_guard lock(impl_->mu);
  Impl& im = *impl_;
  CP_CHECK(!im.read_only && im.schema >= 2);
  Txn txn(im.db, /*immediate=*/true);
  {
    Stmt del(im.db, "DELETE FROM verdicts WHERE run_id = ?1");
    Stmt::Use q(del);
    q.bind(1, run_id);
    q.run();
  }
  Stmt ins(im.db,
           "INSERT INTO verdicts (run_id, seq, path, layer, cap, cap_label, figure, ratio,"
           " ratio_lo, ratio_hi, reason, lower_bound, headline)"
           " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)");
  for (size_t i = 0; i < v.paths.size(); ++i) {
    const PathVerdict& p = v.paths[i];
    Stmt::Use q(ins);
    q.bind_all(run_id, static_cast<int64_t>(i), p.path, p.layer, p.cap, p.cap_label, p.figure,
               p.ratio, p.ratio_lo, p.ratio_hi, p.reason, p.lower_bound, p.headline);
    q.run();
  }
  {
    Stmt up(im.db, "UPDATE runs SET analysis_version = ?2, headline = ?3 WHERE id = ?1");
    Stmt::Use q(up);
    q.bind_all(run_id, v.analysis_version, v.headline);
    q.run();
    CP_CHECK(sqlite3_changes(im.db.get()) == 1);
  }
  txn.commit();
}

VerdictSummary Store::verdicts(int64_t run_id) const {
  std::lock_guard lock(impl_->mu);
  Impl& im = *impl_;
  VerdictSummary v;
  if (im.schema < 2) return v;
  Txn txn(im.db, /*immediate=*/false);
  {
    Stmt st(im.db, "SELECT analysis_version, headline FROM runs WHERE id = ?1");
    Stmt::Use q(st);
    q.bind(1, run_id);
    if (!q.step()) return v;
    v.analysis_version = static_cast<int>(q.i64(0));
    v.headline = q.text(1);
  }
  Stmt st(im.db,
          "SELECT path, layer, cap, cap_label, figure, ratio, ratio_lo, ratio_hi, reason,"
          " lower_bound, headline FROM verdicts WHERE run_id = ?1 ORDER BY seq");
  Stmt::Use q(st);
  q.bind(1, run_id);
  while (q.step()) {
    v.paths.push_back(path_verdict(q, 0));
    v.paths.back().headline = q.i64(10) != 0;
  }
  return v;
}

std::vector<TrendPoint> Store::trend(const std::string& server, const std::string& client,
                                     const std::string& path) const {
  std::lock_guard lock(impl_->mu);
  Impl& im = *impl_;
  const bool v2 = im.schema >= 2;
  Txn txn(im.db, /*immediate=*/false);
  Stmt st(im.db, fmt::format("SELECT r.id, r.label, r.started_at, {} FROM runs r {}"
                             " WHERE r.server = ?1 AND r.client = ?2 AND r.status != 'running'"
                             " ORDER BY r.started_at, r.id",
                             v2 ? "r.analysis_version, v.path, v.layer, v.cap, v.cap_label,"
                                  " v.figure, v.ratio, v.ratio_lo, v.ratio_hi, v.reason,"
                                  " v.lower_bound, v.headline"
                                : "0, NULL, '', '', '', 0, 0, 0, 0, '', 0, 0",
                             v2 ? "LEFT JOIN verdicts v ON v.run_id = r.id AND v.path = ?3" : "")
                     .c_str());
  std::vector<TrendPoint> out;
  {
    Stmt::Use q(st);
    q.bind_all(server, client);
    if (v2) q.bind(3, path);
    while (q.step()) {
      TrendPoint p;
      p.run_id = q.i64(0);
      p.label = q.text(1);
      p.started_at = q.real(2);
      p.analysis_version = static_cast<int>(q.i64(3));
      p.verdict = path_verdict(q, 4);
      p.verdict.headline = q.i64(14) != 0;
      out.push_back(std::move(p));
    }
  }
  txn.commit();
  return out;
}

PruneResult Store::prune(const PruneFilter& f, bool dry_run) {
  std::lock_guard lock(impl_->mu);
  Impl& im = *impl_;
  CP_CHECK(f.before > 0 || f.keep > 0);
  PruneResult res;
  res.bytes_before = im.file_bytes();
  // Runs a stored tune session names.
  const std::set<int64_t> tuned =
      f.tune_runs ? std::set<int64_t>{} : store_detail::tuned_run_ids(im.db);
  {
    Stmt st(im.db,
            "SELECT id, label, status, server, client, started_at, COALESCE(finished_at, 0)"
            " FROM runs ORDER BY started_at DESC, id DESC");
    Stmt::Use q(st);
    for (size_t rank = 0; q.step(); ++rank) {
      const RunListRow r = run_list_row(q);
      const bool old = f.before <= 0 || r.started_at < f.before;
      const bool beyond = f.keep == 0 || rank >= f.keep;
      const bool kept =
          r.status == kRunning || (!r.label.empty() && !f.labelled) || tuned.count(r.id) > 0;
      if (old && beyond && !kept) res.removed.push_back(r);
    }
  }
  if (dry_run || res.removed.empty()) {
    res.bytes_after = res.bytes_before;
    return res;
  }
  CP_CHECK(!im.read_only);
  {
    Txn txn(im.db, /*immediate=*/true);
    Stmt del(im.db, "DELETE FROM runs WHERE id = ?1 AND status != 'running'");
    for (const RunListRow& r : res.removed) {
      Stmt::Use q(del);
      q.bind(1, r.id);
      q.run();  // hosts, stages, samples, cpu_procs, sample_props, verdicts cascade
    }
    txn.commit();
  }
  im.packs.clear();
  im.stage_runs.clear();
  im.db.exec("VACUUM", "reclaiming the space of removed runs");
  im.db.exec("PRAGMA wal_checkpoint(TRUNCATE)", "writing the WAL back");
  res.bytes_after = im.file_bytes();
  return res;
}

}  // namespace cp
