// The stored-run commands against the database file itself: read-only opens,
// compact storage giving the same reports, stored verdicts, prune.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/ladder.h"
#include "analysis/version.h"
#include "app/app.h"
#include "app/report_commands.h"
#include "app/run_status.h"
#include "app/test_store.h"
#include "app/trend.h"
#include "app/verdict_summary.h"
#include "core/cpu_message.h"
#include "core/error.h"
#include "core/testing/scratch_dir.h"
#include "report/report.h"
#include "report/test_runs.h"
#include "store/store.h"

namespace cp::app {
namespace {

namespace fs = std::filesystem;
using testing::save_run;

int run_main(std::vector<std::string> args) {
  args.insert(args.begin(), "chokepoint");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return main(static_cast<int>(argv.size()), argv.data());
}

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void sql(const std::string& path, const std::string& text) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, text.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

// A CPU record as an agent sends it: several processes, 17-digit figures.
std::string cpu_json(int i) {
  msg::CpuSummary s;
  s.seconds = 1.0 / 3 + i * 0.01;
  s.core_busy_pct = {100, 61.0 / 7};
  s.core_busy_max_pct = {100, 91.0 / 7};
  s.total_busy_pct = 100.0 / 3;
  s.server_pct = 12.0 / 7;
  s.agent_pct = 20.0 / 3;
  s.other_pct = 150.0 / 7;
  for (int p = 0; p < 7; ++p) {
    msg::ProcLoad l;
    l.pid = 100 + p + (i % 3);
    l.comm = p == 0 ? "smbd" : p == 1 ? "chokepoint-agen" : "cc1plus";
    l.role = p == 0 ? "server" : p == 1 ? "agent" : "other";
    l.cpu_pct = 30.0 / (p + 1.5) + i * 0.1;
    l.top_thread_pct = l.cpu_pct / 1.1;
    l.threads = p + 1;
    l.wait_pct = 10.0 / 3;
    s.top.push_back(l);
  }
  boost::json::object o;
  o["server"] = msg::to_json(s);
  o["client"] = msg::to_json(s);
  return boost::json::serialize(o);
}

RunRecord realistic(RunRecord r) {
  int i = 0;
  for (auto& st : r.stages) {
    for (auto& s : st.samples) s.cpu_json = cpu_json(i++);
  }
  return r;
}

class HistoryStore : public ::testing::Test {
 protected:
  void SetUp() override { db_ = dir_ + "/chokepoint.db"; }
  void fill() {
    Store store(db_);
    before_ = realistic(report::testing::seed_run());
    after_ = realistic(report::testing::tuned_run());
    save_run(store, before_);
    save_run(store, after_);
  }
  // What show (text, JSON), export (CSV, JSON), compare and the HTML report give.
  std::string outputs(const std::string& db) {
    const Store store(db, Store::Access::kReadOnly);
    std::string out;
    for (int64_t id : {int64_t{1}, int64_t{2}}) {
      const RunRecord run = store.load_run(id);
      const analysis::Analysis a = analysis::analyze(stored::decode(run));
      out += report::run_text(stored::decode(run), a, {false}) +
             report::run_json(stored::decode(run), a);
      std::ostringstream csv, js;
      export_command({std::to_string(id), "--db", db}, csv);
      export_command({std::to_string(id), "--db", db, "--format", "json"}, js);
      out += csv.str() + js.str();
      write_run_html(stored::decode(run), a, dir_ + "/r.html");
      out += read(dir_ + "/r.html");
    }
    std::ostringstream cmp;
    compare_command({"1", "2", "--db", db, "--json"}, cmp);
    return out + cmp.str();
  }
  const cp::testing::ScratchDir scratch_{"cp-hist"};
  const std::string dir_ = scratch_.path().string();
  std::string db_;
  RunRecord before_, after_;
};

TEST_F(HistoryStore, CompactStorageGivesTheSameReportsAsTheWholeTexts) {
  fill();
  // The same file with every sample as schema 1 stored it: the texts the
  // writer was given, whole.
  const std::string whole = dir_ + "/whole.db";
  sql(db_, "PRAGMA wal_checkpoint(TRUNCATE)");
  fs::copy_file(db_, whole);
  std::string upd = "BEGIN;";
  int64_t id = 0;
  for (const RunRecord* r : {&before_, &after_}) {
    for (const auto& st : r->stages) {
      for (const auto& s : st.samples) {
        ++id;
        auto q = [](const std::string& t) {
          std::string o = "'";
          for (char c : t) o += c == '\'' ? std::string("''") : std::string(1, c);
          return o + "'";
        };
        upd += fmt::format(
            "UPDATE samples SET cpu_json = {}, details_json = {}, cpu_packed = '', "
            "props_idx = -1 WHERE id = {};",
            q(s.cpu_json), q(s.details_json), id);
      }
    }
  }
  sql(whole, upd + "DELETE FROM cpu_procs; DELETE FROM sample_props; COMMIT; VACUUM;");
  EXPECT_EQ(outputs(db_), outputs(whole));
  // ... in at most a quarter of the bytes the whole texts take.
  sql(db_, "VACUUM");
  auto bytes = [](const std::string& db) {
    sqlite3* h = nullptr;
    sqlite3_open(db.c_str(), &h);
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(h,
                       "SELECT (SELECT SUM(length(cpu_json) + length(cpu_packed)) FROM samples)"
                       " + (SELECT COALESCE(SUM(length(comm) + 12), 0) FROM cpu_procs)",
                       -1, &st, nullptr);
    sqlite3_step(st);
    const int64_t n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    return n;
  };
  EXPECT_LE(bytes(db_) * 4, bytes(whole));
}

TEST_F(HistoryStore, HistoryListsTheStoredVerdictAndRederivesAStaleOne) {
  fill();
  {
    Store store(db_);
    VerdictSummary v;
    v.analysis_version = analysis::kAnalysisVersion;
    v.headline = "stored";
    v.paths.push_back({"smb ram read", "marker layer", "", "", 1e6, 0, 0, 0, "", false, true});
    store.put_verdicts(1, v);  // current: listed as stored
    v.analysis_version = 0;    // stale: derived again
    store.put_verdicts(2, v);
  }
  std::ostringstream out;
  ASSERT_EQ(history_command({"--db", db_, "--json"}, out), 0);
  const boost::json::array rows = boost::json::parse(out.str()).at("runs").as_array();
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& r : rows) {
    const auto& o = r.as_object();
    const std::string layer(o.at("verdict").as_object().at("layer").as_string());
    if (o.at("id").as_int64() == 1) EXPECT_EQ(layer, "marker layer");
    if (o.at("id").as_int64() == 2) EXPECT_NE(layer, "marker layer");
  }
  // The derived summary was written back (the file is writable).
  EXPECT_EQ(Store(db_).verdicts(2).analysis_version, analysis::kAnalysisVersion);
}

TEST_F(HistoryStore, PruneKeepsLabelledRunsAndADryRunChangesNothing) {
  {
    Store store(db_);
    for (int i = 0; i < 4; ++i) {
      save_run(store, report::testing::SeedRun(0, i == 0 ? "baseline" : "")
                          .stage("tcp", "server->client", "send", 0, {117, 116, 118})
                          .build());
    }
  }
  const std::string bytes = read(db_);
  std::ostringstream dry;
  ASSERT_EQ(prune_command({"--db", db_, "--keep", "1", "--dry-run"}, dry), 0);
  EXPECT_EQ(read(db_), bytes);
  EXPECT_EQ(Store(db_, Store::Access::kReadOnly).history({}).size(), 4u);
  std::ostringstream out;
  ASSERT_EQ(prune_command({"--db", db_, "--keep", "1"}, out), 0);
  std::vector<int64_t> left;
  for (const auto& r : Store(db_, Store::Access::kReadOnly).history({})) left.push_back(r.id);
  // The newest (4) and the labelled (1) stay.
  EXPECT_EQ(left, (std::vector<int64_t>{4, 1}));
  EXPECT_EQ(run_main({"prune", "--db", db_}), kExitUsage);  // neither --before nor --keep
}

// A run a stored tune session names stays unless --tune-runs; a labelled one
// unless --labelled.
TEST_F(HistoryStore, PruneKeepsRunsATuneSessionNamesUnlessAsked) {
  {
    Store store(db_);
    for (int i = 0; i < 3; ++i) {
      save_run(store, report::testing::SeedRun(0, "")
                          .stage("tcp", "server->client", "send", 0, {117, 116, 118})
                          .build());
    }
  }
  // As `tune` stores a session (the store's own tables once it has them).
  sql(db_,
      "CREATE TABLE IF NOT EXISTS tune_sessions (id INTEGER PRIMARY KEY, started_at REAL, "
      "finished_at REAL, status TEXT, knob TEXT, endpoint TEXT, server TEXT, client TEXT, "
      "original TEXT, values_json TEXT, rounds INTEGER, result_json TEXT, error TEXT, "
      "target TEXT);"
      "CREATE TABLE IF NOT EXISTS tune_runs (session_id INTEGER REFERENCES tune_sessions(id), "
      "run_id INTEGER, round INTEGER, value TEXT, is_original INTEGER);"
      "INSERT INTO tune_sessions (id, status, knob) VALUES (1, 'complete', 'readahead');"
      "INSERT INTO tune_runs (session_id, run_id, round, value, is_original) "
      "VALUES (1, 1, 1, '128', 1);");
  auto left = [&] {
    std::vector<int64_t> ids;
    for (const auto& r : Store(db_, Store::Access::kReadOnly).history({})) ids.push_back(r.id);
    return ids;
  };
  std::ostringstream out;
  ASSERT_EQ(prune_command({"--db", db_, "--keep", "1"}, out), 0);
  EXPECT_EQ(left(), (std::vector<int64_t>{3, 1}));  // the newest, and the tune session's
  ASSERT_EQ(prune_command({"--db", db_, "--keep", "1", "--tune-runs"}, out), 0);
  EXPECT_EQ(left(), (std::vector<int64_t>{3}));
}

// history --trend: the path's verdict per run between the same hosts, oldest
// first, each as the run's own analysis gives it, with what changed between
// neighbours (the tuned run raised smb2 max read and the readahead).
TEST_F(HistoryStore, TrendGivesEachRunsVerdictOfThePathAndWhatChangedBetween) {
  fill();
  const Store store(db_, Store::Access::kReadOnly);
  VerdictRefresher refresher(store);
  const Trend t = build_trend(store, refresher, "smb ram read", "");
  ASSERT_EQ(t.entries.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const TrendEntry& e = t.entries[i];
    const analysis::Analysis a = analysis::analyze(stored::decode(store.load_run(e.point.run_id)));
    const auto paths = analysis::path_verdicts(a);
    auto it = std::find_if(paths.begin(), paths.end(),
                           [](const analysis::PathVerdict& p) { return p.path == "smb ram read"; });
    ASSERT_NE(it, paths.end());
    EXPECT_EQ(e.point.verdict.layer, it->layer);
    EXPECT_DOUBLE_EQ(e.point.verdict.figure, it->figure);
  }
  EXPECT_LT(t.entries[0].point.started_at, t.entries[1].point.started_at);
  EXPECT_TRUE(t.entries[0].changes.empty());
  bool samba = false;
  for (const analysis::EnvDiff& d : t.entries[1].changes) {
    samba = samba || (d.where == "server" && d.what.find("smb2 max read") != std::string::npos);
  }
  EXPECT_TRUE(samba);
  // A path no run has: a usage error naming the paths there are.
  try {
    build_trend(store, refresher, "nfs ram read", "");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
  }
  // The HTML page draws a point per run (inline SVG, no script).
  const std::string html = trend_html(t);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("<svg"), std::string::npos);
}

TEST_F(HistoryStore, SecurityAForeignSqliteFileIsLeftByteForByte) {
  sql(db_, "CREATE TABLE accounts (name TEXT); INSERT INTO accounts VALUES ('alice');");
  const std::string bytes = read(db_);
  for (const char* cmd : {"history", "show", "export"}) {
    std::vector<std::string> args{cmd};
    if (std::string(cmd) != "history") args.push_back("latest");
    args.insert(args.end(), {"--db", db_});
    EXPECT_EQ(run_main(args), kExitUsage) << cmd;
  }
  EXPECT_EQ(run_main({"compare", "1", "2", "--db", db_}), kExitUsage);
  EXPECT_EQ(run_main({"prune", "--keep", "1", "--dry-run", "--db", db_}), kExitUsage);
  EXPECT_EQ(read(db_), bytes);
  EXPECT_FALSE(fs::exists(db_ + "-wal"));
}

TEST_F(HistoryStore, SecurityANewerSchemaIsRefusedUnchanged) {
  sql(db_, "PRAGMA user_version = 99");
  const std::string bytes = read(db_);
  EXPECT_EQ(run_main({"history", "--db", db_}), kExitFailed);
  EXPECT_EQ(read(db_), bytes);
  EXPECT_FALSE(fs::exists(db_ + "-wal"));
}

TEST_F(HistoryStore, SecurityAReadOnlyDatabaseCanBeShownByAUserWhoCannotWriteIt) {
  fill();
  sql(db_, "PRAGMA wal_checkpoint(TRUNCATE)");
  ASSERT_EQ(chmod(db_.c_str(), 0444), 0);
  ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
  const std::string bytes = read(db_);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // As root, become a user who may read the file but write neither it nor its directory.
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(97);
    const int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(devnull, 2);
    int rc = run_main({"show", "latest", "--db", db_});
    if (rc == 0) rc = run_main({"history", "--db", db_});
    _exit(rc);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(read(db_), bytes);
}

}  // namespace
}  // namespace cp::app
