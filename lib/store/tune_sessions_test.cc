// Tune sessions as tables of the store: typed rows round-trip, and files an
// older build wrote (its own tune tables, perhaps without `target`) migrate
// with their rows.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>

#include "core/error.h"
#include "core/testing/scratch_dir.h"
#include "store/store.h"

namespace cp {
namespace {

namespace fs = std::filesystem;

void sql(const std::string& path, const std::string& text) {
  sqlite3* db = nullptr;
  CP_CHECK(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, text.c_str(), nullptr, nullptr, &err);
  const std::string msg = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << msg << " in " << text;
}

class TuneSessionStore : public ::testing::Test {
 protected:
  void SetUp() override { path_ = dir_ + "/chokepoint.db"; }

  // A schema-2 file as an older build left it: the store's tables, and tune
  // tables that build created itself (`with_target`: the later such build).
  void make_old_file(bool with_target) {
    {
      Store s(path_);
      RunRecord run;
      run.label = "tune 1 x=1 r1";
      run.server = "srv";
      run.client = "local";
      run_id_ = s.begin_run(run);
      s.end_run(run_id_, kComplete);
    }
    sql(path_,
        "DROP TABLE tune_runs; DROP TABLE tune_sessions; DROP VIEW sample_details; "
        "PRAGMA user_version = 2;");
    sql(path_, std::string("CREATE TABLE tune_sessions (id INTEGER PRIMARY KEY, started_at REAL, "
                           "finished_at REAL, status TEXT, knob TEXT, endpoint TEXT, server TEXT, "
                           "client TEXT, original TEXT, values_json TEXT, rounds INTEGER, "
                           "result_json TEXT, error TEXT") +
                   (with_target ? ", target TEXT" : "") +
                   ");"
                   "CREATE TABLE tune_runs (session_id INTEGER REFERENCES tune_sessions(id), "
                   "run_id INTEGER, round INTEGER, value TEXT, is_original INTEGER);");
    sql(path_, std::string("INSERT INTO tune_sessions (id, started_at, finished_at, status, knob, "
                           "endpoint, server, client, original, values_json, rounds, "
                           "result_json, error") +
                   (with_target ? ", target" : "") +
                   ") VALUES (7, 100, 200, 'complete', 'tcp_congestion', 'server', 'srv', "
                   "'local', 'cubic', '[\"bbr\",\"reno\"]', 3, '{}', ''" +
                   (with_target ? ", 'eth0'" : "") + ");");
    sql(path_, "INSERT INTO tune_runs VALUES (7, " + std::to_string(run_id_) + ", 1, 'bbr', 0);");
  }

  const cp::testing::ScratchDir scratch_{"cp-tune-store"};
  const std::string dir_ = scratch_.path().string();
  std::string path_;
  int64_t run_id_ = 0;
};

TEST_F(TuneSessionStore, RoundTripsASessionAndItsRuns) {
  Store s(path_);
  RunRecord run;
  run.server = "srv";
  run.client = "cli";
  const int64_t run_id = s.begin_run(run);
  TuneSessionRecord in;
  in.knob = "rmem x wmem";
  in.endpoint = "server+client";
  in.server = "srv";
  in.client = "cli";
  in.original = "rmem=1 wmem=2";
  in.target = "eth0";
  in.values = {"rmem=3 wmem=2", "rmem=1 wmem=4"};
  in.rounds = 2;
  in.id = s.begin_tune_session(in);
  ASSERT_GT(in.id, 0);
  s.add_tune_run({in.id, run_id, 2, "rmem=3 wmem=2", false});

  const auto running = s.tune_session(in.id);
  ASSERT_TRUE(running.has_value());
  EXPECT_EQ(running->status, kRunning);
  EXPECT_EQ(running->finished_at, 0);

  in.status = kFailed;
  in.error = "agent gone";
  in.result_json = R"({"grid":"cross"})";
  s.end_tune_session(in);
  const auto out = s.tune_session(0);  // the newest
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->id, in.id);
  EXPECT_GT(out->started_at, 0);
  EXPECT_GE(out->finished_at, out->started_at);
  EXPECT_EQ(out->status, kFailed);
  EXPECT_EQ(out->knob, in.knob);
  EXPECT_EQ(out->endpoint, in.endpoint);
  EXPECT_EQ(out->server, "srv");
  EXPECT_EQ(out->client, "cli");
  EXPECT_EQ(out->original, in.original);
  EXPECT_EQ(out->target, "eth0");
  EXPECT_EQ(out->values, in.values);
  EXPECT_EQ(out->rounds, 2);
  EXPECT_EQ(out->result_json, in.result_json);
  EXPECT_EQ(out->error, "agent gone");

  const auto runs = s.tune_runs(in.id);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].session_id, in.id);
  EXPECT_EQ(runs[0].run_id, run_id);
  EXPECT_EQ(runs[0].round, 2);
  EXPECT_EQ(runs[0].value, "rmem=3 wmem=2");
  EXPECT_FALSE(runs[0].is_original);
  EXPECT_EQ(s.tuned_run_ids(), std::set<int64_t>{run_id});
  EXPECT_FALSE(s.tune_session(in.id + 1).has_value());
}

TEST_F(TuneSessionStore, AFreshFileHasTheTablesAndNoSession) {
  Store s(path_);
  EXPECT_EQ(s.schema_version(), Store::known_schema_version());
  EXPECT_FALSE(s.tune_session(0).has_value());
  EXPECT_TRUE(s.tune_runs(1).empty());
}

TEST_F(TuneSessionStore, AnOldFileWithoutTargetMigratesKeepingItsSessions) {
  make_old_file(/*with_target=*/false);
  Store s(path_);
  EXPECT_EQ(s.schema_version(), Store::known_schema_version());
  const auto old = s.tune_session(7);
  ASSERT_TRUE(old.has_value());
  EXPECT_EQ(old->knob, "tcp_congestion");
  EXPECT_EQ(old->original, "cubic");
  EXPECT_EQ(old->target, "");
  EXPECT_EQ(old->values, (std::vector<std::string>{"bbr", "reno"}));
  EXPECT_EQ(old->rounds, 3);
  ASSERT_EQ(s.tune_runs(7).size(), 1u);
  EXPECT_EQ(s.tune_runs(7)[0].run_id, run_id_);
  // The migrated table takes new sessions with a target.
  TuneSessionRecord next;
  next.knob = "mtu";
  next.target = "eth1";
  next.id = s.begin_tune_session(next);
  EXPECT_GT(next.id, 7);
  EXPECT_EQ(s.tune_session(0)->target, "eth1");
  // prune still keeps the run an old session names.
  PruneFilter f;
  f.before = 1e12;
  f.labelled = true;
  EXPECT_TRUE(s.prune(f, /*dry_run=*/true).removed.empty());
  f.tune_runs = true;
  EXPECT_EQ(s.prune(f, /*dry_run=*/true).removed.size(), 1u);
}

TEST_F(TuneSessionStore, AnOldFileWithTargetKeepsIt) {
  make_old_file(/*with_target=*/true);
  Store s(path_);
  EXPECT_EQ(s.schema_version(), Store::known_schema_version());
  ASSERT_TRUE(s.tune_session(7).has_value());
  EXPECT_EQ(s.tune_session(7)->target, "eth0");
}

TEST_F(TuneSessionStore, AReaderOfAnOldFileReadsItsSessionsAsTheyAre) {
  make_old_file(/*with_target=*/false);
  Store s(path_, Store::Access::kReadOnly);
  EXPECT_EQ(s.schema_version(), 2);  // a reader migrates nothing
  const auto old = s.tune_session(0);
  ASSERT_TRUE(old.has_value());
  EXPECT_EQ(old->id, 7);
  EXPECT_EQ(old->target, "");
  EXPECT_EQ(s.tune_runs(7).size(), 1u);
}

TEST_F(TuneSessionStore, AReaderOfAnOldFileWithoutTuneTablesFindsNoSession) {
  make_old_file(/*with_target=*/false);
  sql(path_, "DROP TABLE tune_runs; DROP TABLE tune_sessions;");
  Store s(path_, Store::Access::kReadOnly);
  EXPECT_FALSE(s.tune_session(0).has_value());
  EXPECT_TRUE(s.tune_runs(7).empty());
  EXPECT_TRUE(s.tuned_run_ids().empty());
}

}  // namespace
}  // namespace cp
