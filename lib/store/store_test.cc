#include "store/store.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "core/clock.h"
#include "core/error.h"
#include "core/testing/scratch_dir.h"

namespace cp {
namespace {

namespace fs = std::filesystem;

// Direct access to the file, to set up states the Store API cannot produce.
class RawDb {
 public:
  explicit RawDb(const std::string& path) {
    CP_CHECK(sqlite3_open(path.c_str(), &db_) == SQLITE_OK);
    sqlite3_busy_timeout(db_, 5000);
  }
  ~RawDb() { sqlite3_close(db_); }
  void exec(const std::string& sql) {
    char* err = nullptr;
    int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
    ASSERT_EQ(rc, SQLITE_OK) << (err ? err : "") << " in " << sql;
  }
  // First column of the first row, as text ("" when no row).
  std::string one(const std::string& sql) {
    sqlite3_stmt* st = nullptr;
    CP_CHECK(sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr) == SQLITE_OK);
    std::string out;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0)) {
      out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
    return out;
  }

 private:
  sqlite3* db_ = nullptr;
};

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_ + "/sub/dir/chokepoint.db";  // parents do not exist yet
  }

  const cp::testing::ScratchDir scratch_{"cp-store"};
  const std::string dir_ = scratch_.path().string();
  std::string path_;
};

RunRecord sample_run(const std::string& label, double started_at, const std::string& server,
                     const std::string& client) {
  RunRecord r;
  r.label = label;
  r.started_at = started_at;
  r.server = server;
  r.client = client;
  r.plan_json = R"({"disk":{"size":"1GB"}})";
  r.version = "0.1.0";
  return r;
}

StageRecord stage(const std::string& layer, const std::string& where, double started_at = 0) {
  StageRecord s;
  s.layer = layer;
  s.where = where;
  s.params_json = R"({"n":3})";
  s.started_at = started_at;
  return s;
}

stored::Sample rate_sample(int seq, const std::string& op, double bytes_per_s,
                           bool cache_possible = false, const std::string& error = {}) {
  stored::Sample s;
  s.seq = seq;
  s.op = op;
  s.bytes = 1000000;
  s.seconds = 1000000 / bytes_per_s;
  s.started_at = 1000 + seq;
  s.cache_possible = cache_possible;
  s.error = error;
  return s;
}

std::vector<int64_t> ids(const std::vector<RunListRow>& rows) {
  std::vector<int64_t> out;
  for (const auto& r : rows) out.push_back(r.id);
  return out;
}

TEST_F(StoreTest, RoundTripsEveryField) {
  RunRecord run = sample_run("nightly 'lan' — ü", 1700000000.25, "srv-alias", "local");
  msg::Facts server_facts, client_facts;
  server_facts.cpu_cores = 8;
  client_facts.cpu_cores = 4;

  stored::Sample a;  // stored second, seq 2
  a.seq = 2;
  a.op = "read";
  a.size = 1ull << 30;
  a.bytes = 5000000000000ull;  // needs 64 bits
  a.seconds = 12.5;
  a.started_at = 1700000001.5;
  a.cache_possible = true;
  a.details.kind = msg::DiskDetails{"f.dat", "O_DIRECT", false, false, 1 << 20, ""};
  msg::CpuSummary busy;
  busy.total_busy_pct = 50;
  a.cpu = std::vector<stored::EndCpu>{{"server", busy}, {"client", {}}};
  stored::Sample b;  // stored first, seq 1, failed
  b.seq = 1;
  b.op = "write";
  b.size = 4096;
  b.bytes = 17;
  b.seconds = 0.25;
  b.started_at = 1700000000.75;
  b.error = "No space left on device";
  stored::Sample c;
  c.seq = 1;
  c.op = "send";
  c.bytes = 123456789;
  c.seconds = 2;
  c.started_at = 1700000010;
  msg::TcpDetails tcp;
  tcp.sender = "server";
  tcp.tcp_info.available = true;
  tcp.tcp_info.rtt_us = 250;
  c.details.kind = tcp;

  double before = wall_seconds();
  int64_t run_id, disk_id, tcp_id;
  {
    Store store(path_);
    run_id = store.begin_run(run);
    store.add_host(run_id, {"server", "srv-alias", server_facts});
    store.add_host(run_id, {"client", "local", client_facts});
    disk_id = store.begin_stage(run_id, stage("disk", "server", 1700000000.5));
    store.add_sample(disk_id, a);
    store.add_sample(disk_id, b);
    store.end_stage(disk_id, kFailed, "disk full");
    tcp_id = store.begin_stage(run_id, stage("tcp", "server->client"));
    store.add_sample(tcp_id, c);
    store.end_stage(tcp_id, kComplete);
    store.end_run(run_id, kFailed, "one stage failed");
  }
  double after = wall_seconds();

  Store store(path_);  // a fresh connection: everything came from the file
  RunRecord got = store.load_run(run_id);
  EXPECT_EQ(got.id, run_id);
  EXPECT_EQ(got.label, run.label);
  EXPECT_EQ(got.status, kFailed);
  EXPECT_EQ(got.error, "one stage failed");
  EXPECT_DOUBLE_EQ(got.started_at, run.started_at);
  EXPECT_GE(got.finished_at, before);
  EXPECT_LE(got.finished_at, after);
  EXPECT_EQ(got.server, "srv-alias");
  EXPECT_EQ(got.client, "local");
  EXPECT_EQ(got.plan_json, run.plan_json);
  EXPECT_EQ(got.version, "0.1.0");

  ASSERT_EQ(got.hosts.size(), 2u);
  EXPECT_EQ(got.hosts[0].role, "server");
  EXPECT_EQ(got.hosts[0].address, "srv-alias");
  EXPECT_EQ(got.hosts[1].role, "client");
  EXPECT_EQ(got.hosts[1].address, "local");
  // Facts, details and CPU through their codecs, typed again on load.
  const stored::Run typed = store.load(run_id);
  ASSERT_EQ(typed.hosts.size(), 2u);
  ASSERT_TRUE(typed.hosts[0].facts && typed.hosts[1].facts);
  EXPECT_EQ(typed.hosts[0].facts->cpu_cores, 8);
  EXPECT_EQ(typed.hosts[1].facts->cpu_cores, 4);

  ASSERT_EQ(got.stages.size(), 2u);
  const StageRecord& d = got.stages[0];
  EXPECT_EQ(d.id, disk_id);
  EXPECT_EQ(d.run_id, run_id);
  EXPECT_EQ(d.layer, "disk");
  EXPECT_EQ(d.where, "server");
  EXPECT_EQ(d.status, kFailed);
  EXPECT_EQ(d.error, "disk full");
  EXPECT_EQ(d.params_json, R"({"n":3})");
  EXPECT_DOUBLE_EQ(d.started_at, 1700000000.5);
  EXPECT_GE(d.finished_at, before);
  EXPECT_LE(d.finished_at, after);
  const StageRecord& t = got.stages[1];
  EXPECT_EQ(t.id, tcp_id);
  EXPECT_EQ(t.layer, "tcp");
  EXPECT_EQ(t.where, "server->client");
  EXPECT_EQ(t.status, kComplete);
  EXPECT_EQ(t.error, "");
  EXPECT_GE(t.started_at, before);  // 0 given: now
  EXPECT_LE(t.started_at, after);

  ASSERT_EQ(d.samples.size(), 2u);
  const SampleRecord& s1 = d.samples[0];  // by seq, not insertion order
  EXPECT_EQ(s1.seq, 1);
  EXPECT_EQ(s1.stage_id, disk_id);
  EXPECT_GT(s1.id, 0);
  EXPECT_EQ(s1.op, "write");
  EXPECT_EQ(s1.size, 4096u);
  EXPECT_EQ(s1.bytes, 17u);
  EXPECT_DOUBLE_EQ(s1.seconds, 0.25);
  EXPECT_DOUBLE_EQ(s1.started_at, 1700000000.75);
  EXPECT_FALSE(s1.cache_possible);
  EXPECT_EQ(s1.error, "No space left on device");
  EXPECT_EQ(s1.details_json, "");  // none: no column text
  EXPECT_EQ(s1.cpu_json, "");
  const SampleRecord& s2 = d.samples[1];
  EXPECT_EQ(s2.seq, 2);
  EXPECT_EQ(s2.op, "read");
  EXPECT_EQ(s2.size, 1ull << 30);
  EXPECT_EQ(s2.bytes, 5000000000000ull);
  EXPECT_DOUBLE_EQ(s2.seconds, 12.5);
  EXPECT_DOUBLE_EQ(s2.started_at, 1700000001.5);
  EXPECT_TRUE(s2.cache_possible);
  EXPECT_EQ(s2.error, "");
  ASSERT_EQ(t.samples.size(), 1u);
  EXPECT_EQ(t.samples[0].op, "send");
  EXPECT_EQ(t.samples[0].bytes, 123456789u);
  EXPECT_EQ(t.samples[0].stage_id, tcp_id);
  const stored::Sample& ta = typed.stages.at(0).samples.at(1);
  EXPECT_FALSE(ta.details.as<msg::DiskDetails>()->direct);
  EXPECT_EQ(ta.details.as<msg::DiskDetails>()->block, 1u << 20);
  ASSERT_TRUE(ta.cpu_of("server") && ta.cpu_of("client"));
  EXPECT_DOUBLE_EQ(ta.cpu_of("server")->total_busy_pct, 50);
  EXPECT_FALSE(typed.stages.at(0).samples.at(0).cpu);  // none stored
  EXPECT_EQ(typed.stages.at(1).samples.at(0).details.as<msg::TcpDetails>()->tcp_info.rtt_us, 250u);

  RawDb raw(path_);
  EXPECT_EQ(raw.one("SELECT COUNT(*) FROM samples WHERE run_id = " + std::to_string(run_id)), "3");
}

// Schema 2 stores a driver's "properties" once per run; the sample_details
// view (schema 3) gives each sample its whole details back for hand queries.
TEST_F(StoreTest, SampleDetailsViewPutsThePropertiesBack) {
  Store s(path_);
  const int64_t run_id = s.begin_run(sample_run("", 1700000000, "a", "b"));
  const int64_t stage_id = s.begin_stage(run_id, stage("smb", "client"));
  stored::Sample with = rate_sample(1, "read", 1e8);
  msg::TransferDetails d;
  d.share = "smb-ram";
  d.properties = {{"dialect", "SMB3_11"}, {"connections", "4"}};
  with.details.kind = d;
  stored::Sample without = rate_sample(2, "read", 1e8);
  without.details.kind = msg::TransferDetails{.share = "smb-ram"};
  const int64_t id_with = s.add_sample(stage_id, with);
  const int64_t id_without = s.add_sample(stage_id, without);
  RawDb raw(path_);
  // The properties really are stored apart (else this test shows nothing).
  EXPECT_EQ(raw.one(fmt::format("SELECT props_idx >= 0 FROM samples WHERE id = {}", id_with)), "1");
  // A member of a sample's details as `table` (samples or the view) holds them.
  auto member = [&](const char* table, const char* path, int64_t id) {
    return raw.one(fmt::format("SELECT json_extract(details_json, '{}') FROM {} WHERE id = {}",
                               path, table, id));
  };
  EXPECT_EQ(member("samples", "$.properties.dialect", id_with), "");
  EXPECT_EQ(member("sample_details", "$.properties.dialect", id_with), "SMB3_11");
  EXPECT_EQ(member("sample_details", "$.share", id_with), "smb-ram");
  EXPECT_EQ(member("sample_details", "$.share", id_without), "smb-ram");
  EXPECT_EQ(raw.one("SELECT count(*) FROM sample_details"), "2");
}

TEST_F(StoreTest, AddHostReplacesTheSameRole) {
  Store store(path_);
  int64_t id = store.begin_run(sample_run("", 1, "a", "b"));
  msg::Facts first, second;
  second.kernel = "6.1";
  store.add_host(id, {"server", "a", first});
  store.add_host(id, {"server", "a", second});
  const stored::Run got = store.load(id);
  ASSERT_EQ(got.hosts.size(), 1u);
  ASSERT_TRUE(got.hosts[0].facts);
  EXPECT_EQ(got.hosts[0].facts->kernel, "6.1");
}

TEST_F(StoreTest, EndRunInterruptsStagesStillRunning) {
  Store store(path_);
  int64_t id = store.begin_run(sample_run("", 1, "a", "b"));
  int64_t done = store.begin_stage(id, stage("disk", "server"));
  store.end_stage(done, kComplete);
  store.begin_stage(id, stage("disk", "client"));
  store.end_run(id, kFailed, "ssh dropped");
  RunRecord got = store.load_run(id);
  ASSERT_EQ(got.stages.size(), 2u);
  EXPECT_EQ(got.stages[0].status, kComplete);
  EXPECT_EQ(got.stages[1].status, kInterrupted);
  EXPECT_NE(got.stages[1].error.find("failed"), std::string::npos) << got.stages[1].error;
  EXPECT_GT(got.stages[1].finished_at, 0);
}

TEST_F(StoreTest, LoadingAnAbsentRunIsAUsageError) {
  Store store(path_);
  try {
    store.load_run(42);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("42"), std::string::npos);
  }
}

// Three runs: 1 "a" alpha.lan, 2 "b" beta, 3 "a" local; started 1000, 2000, 3000.
class HistoryTest : public StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    store_ = std::make_unique<Store>(path_);
    Store& s = *store_;
    r1_ = s.begin_run(sample_run("a", 1000, "alpha.lan", "local"));
    r2_ = s.begin_run(sample_run("b", 2000, "beta", "gamma"));
    r3_ = s.begin_run(sample_run("a", 3000, "local", "local"));

    int64_t st = s.begin_stage(r1_, stage("disk", "server"));
    s.add_sample(st, rate_sample(1, "read", 100));
    s.add_sample(st, rate_sample(2, "read", 300));
    s.add_sample(st, rate_sample(3, "read", 200));
    s.add_sample(st, rate_sample(4, "read", 9e9, /*cache_possible=*/true));  // left out
    s.add_sample(st, rate_sample(5, "read", 1e9, false, "EIO"));             // failed: left out
    s.add_sample(st, rate_sample(6, "write", 50));
    st = s.begin_stage(r1_, stage("tcp", "server->client"));
    s.add_sample(st, rate_sample(1, "send", 10));
    s.add_sample(st, rate_sample(2, "send", 20));
    st = s.begin_stage(r1_, stage("disk", "client"));
    // Only cached samples: they are all there is.
    s.add_sample(st, rate_sample(1, "read", 7, true));
    s.add_sample(st, rate_sample(2, "read", 9, true));
    s.add_sample(st, rate_sample(3, "read", 8, true));
    s.end_run(r1_, kComplete);
  }

  std::unique_ptr<Store> store_;
  int64_t r1_ = 0, r2_ = 0, r3_ = 0;
};

TEST_F(HistoryTest, NewestFirstWithTheirRecords) {
  std::vector<RunListRow> rows = store_->history({});
  ASSERT_EQ(ids(rows), (std::vector<int64_t>{r3_, r2_, r1_}));
  const RunListRow& r = rows[2];
  EXPECT_EQ(r.label, "a");
  EXPECT_EQ(r.status, kComplete);
  EXPECT_EQ(r.server, "alpha.lan");
  EXPECT_EQ(r.client, "local");
  EXPECT_DOUBLE_EQ(r.started_at, 1000);
  EXPECT_GT(r.finished_at, 1000);
  EXPECT_EQ(rows[1].finished_at, 0);  // still running
  EXPECT_EQ(rows[1].status, kRunning);
}

HistoryFilter filter(const std::string& label, const std::string& host, double since = 0,
                     size_t limit = 50) {
  return HistoryFilter{.label = label, .host = host, .since = since, .limit = limit};
}

TEST_F(HistoryTest, Filters) {
  using Ids = std::vector<int64_t>;
  EXPECT_EQ(ids(store_->history(filter("a", ""))), (Ids{r3_, r1_}));
  EXPECT_EQ(ids(store_->history(filter("nope", ""))), Ids{});
  EXPECT_EQ(ids(store_->history(filter("", "ALPHA"))), Ids{r1_});
  EXPECT_EQ(ids(store_->history(filter("", "amm"))), Ids{r2_});  // client gamma
  EXPECT_EQ(ids(store_->history(filter("", "local"))), (Ids{r3_, r1_}));
  EXPECT_EQ(ids(store_->history(filter("", "", 2000))), (Ids{r3_, r2_}));
  EXPECT_EQ(ids(store_->history(filter("", "", 0, 1))), Ids{r3_});
  EXPECT_EQ(ids(store_->history(filter("", "", 0, 0))), (Ids{r3_, r2_, r1_}));
  EXPECT_EQ(ids(store_->history(filter("a", "alpha", 500))), Ids{r1_});
  EXPECT_EQ(ids(store_->history(filter("a", "alpha", 1001))), Ids{});
}

TEST_F(HistoryTest, AHugeLimitListsEveryRunWithoutAborting) {
  // size_t(-1), what "--limit -1" parsed as: beyond int64, once a CHECK failure.
  EXPECT_EQ(ids(store_->history(filter("", "", 0, SIZE_MAX))).size(), 3u);
}

TEST(StoreRequireExisting, RefusesAMissingFileAndCreatesNothing) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("no-such-" + std::to_string(getpid()) + ".db"))
          .string();
  try {
    Store::require_existing(path);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST_F(HistoryTest, Resolve) {
  Store& s = *store_;
  EXPECT_EQ(s.resolve("latest"), r3_);
  EXPECT_EQ(s.resolve("last"), r3_);
  EXPECT_EQ(s.resolve(std::to_string(r2_)), r2_);
  EXPECT_EQ(s.resolve("a"), r3_);  // the newest with that label
  EXPECT_EQ(s.resolve("b"), r2_);
  int64_t numeric = s.begin_run(sample_run("777", 500, "x", "y"));
  EXPECT_EQ(s.resolve("777"), numeric);  // no run 777: the label
  for (std::string bad : {"foo", "999", ""}) {
    try {
      s.resolve(bad);
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kUsage);
      EXPECT_NE(std::string(e.what()).find("'" + bad + "'"), std::string::npos) << e.what();
      EXPECT_NE(e.hint().find("chokepoint history"), std::string::npos) << e.hint();
      EXPECT_NE(e.hint().find("a, b"), std::string::npos) << e.hint();  // what exists
    }
  }
}

TEST_F(StoreTest, ResolveInAnEmptyDatabaseSaysSo) {
  Store s(path_);
  try {
    s.resolve("latest");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find("no runs yet"), std::string::npos) << e.what();
  }
}

TEST_F(StoreTest, ReopeningAppliesNoMigrationTwice) {
  int64_t id;
  {
    Store s(path_);
    EXPECT_EQ(s.schema_version(), Store::known_schema_version());
    id = s.begin_run(sample_run("keep", 1, "a", "b"));
    s.end_run(id, kComplete);
  }
  std::string schema = RawDb(path_).one("SELECT group_concat(sql, ';') FROM sqlite_master");
  ASSERT_FALSE(schema.empty());
  // The migration has no IF NOT EXISTS: re-applying it would throw here.
  Store s(path_);
  EXPECT_EQ(s.schema_version(), Store::known_schema_version());
  EXPECT_EQ(s.load_run(id).label, "keep");
  EXPECT_EQ(RawDb(path_).one("SELECT group_concat(sql, ';') FROM sqlite_master"), schema);
  EXPECT_EQ(RawDb(path_).one("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(RawDb(path_).one("PRAGMA user_version"), std::to_string(Store::known_schema_version()));
}

TEST_F(StoreTest, RefusesANewerSchema) {
  fs::create_directories(fs::path(path_).parent_path());
  RawDb(path_).exec("PRAGMA user_version = 5");
  try {
    Store s(path_);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    std::string msg = e.what();
    EXPECT_NE(msg.find("database schema 5"), std::string::npos) << msg;
    EXPECT_NE(msg.find(fmt::format("knows {}", Store::known_schema_version())), std::string::npos)
        << msg;
    EXPECT_NE(msg.find(path_), std::string::npos) << msg;
    EXPECT_EQ(e.hint(), "upgrade chokepoint or use --db with another file");
  }
  EXPECT_EQ(RawDb(path_).one("PRAGMA user_version"), "5");       // untouched
  EXPECT_EQ(RawDb(path_).one("PRAGMA journal_mode"), "delete");  // not switched to WAL first
}

// A file that is not a chokepoint database is the wrong --db: a usage error (exit 2).
TEST_F(StoreTest, NotADatabaseIsAUsageErrorWithAHint) {
  fs::create_directories(fs::path(path_).parent_path());
  std::ofstream(path_) << "this is not sqlite, but long enough to have a header of sorts...\n"
                       << std::string(200, 'x');
  try {
    Store s(path_);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUsage);
    EXPECT_NE(std::string(e.what()).find(path_), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("--db"), std::string::npos) << e.hint();
  }
}

TEST_F(StoreTest, UncreatableDirectoryIsAnIoErrorWithAHint) {
  std::ofstream(dir_ + "/file") << "x";
  try {
    Store s(dir_ + "/file/sub/chokepoint.db");  // a parent is a regular file
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_NE(std::string(e.what()).find(dir_ + "/file"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("--db"), std::string::npos) << e.hint();
  }
}

TEST_F(StoreTest, MarksRunsOfDeadOwnersInterrupted) {
  Store mine(path_);
  int64_t live = mine.begin_run(sample_run("live", 10, "a", "b"));
  int64_t live_stage = mine.begin_stage(live, stage("disk", "server"));

  RawDb raw(path_);
  std::string me = std::to_string(live);
  std::string host = raw.one("SELECT owner_host FROM runs WHERE id = " + me);
  std::string start = raw.one("SELECT owner_start FROM runs WHERE id = " + me);
  std::string boot = raw.one("SELECT owner_boot FROM runs WHERE id = " + me);
  ASSERT_FALSE(host.empty());
  ASSERT_NE(start, "0");
  ASSERT_EQ(raw.one("SELECT owner_pid FROM runs WHERE id = " + me), std::to_string(getpid()));

  // pid_max + 1 never names a process.
  std::string pid_max;
  std::ifstream("/proc/sys/kernel/pid_max") >> pid_max;
  std::string gone = std::to_string(std::stoll(pid_max) + 1);
  auto insert = [&](const std::string& label, const std::string& h, const std::string& pid,
                    const std::string& st, const std::string& b) {
    raw.exec(
        "INSERT INTO runs (label, status, started_at, server, client, owner_host, owner_pid,"
        " owner_start, owner_boot) VALUES ('" +
        label + "', 'running', 20, 's', 'c', '" + h + "', " + pid + ", " + st + ", '" + b + "')");
    return raw.one("SELECT MAX(id) FROM runs");
  };
  std::string dead = insert("dead", host, gone, start, boot);
  std::string reused =
      insert("reused", host, std::to_string(getpid()), std::to_string(std::stoll(start) + 1), boot);
  std::string rebooted = insert("rebooted", host, std::to_string(getpid()), start,
                                "00000000-0000-0000-0000-000000000000");
  std::string elsewhere = insert("elsewhere", host + "-other", gone, start, boot);
  // A running stage with a sample ending at 30 + 2.5 in the dead run.
  raw.exec("INSERT INTO stages (run_id, layer, location, status, started_at) VALUES (" + dead +
           ", 'disk', 'server', 'running', 25)");
  std::string st = raw.one("SELECT MAX(id) FROM stages");
  raw.exec("INSERT INTO samples (stage_id, run_id, seq, op, bytes, seconds, started_at) VALUES (" +
           st + ", " + dead + ", 1, 'read', 10, 2.5, 30)");

  Store other(path_);  // opening is what marks them
  auto status = [&](const std::string& id) {
    return raw.one("SELECT status FROM runs WHERE id = " + id);
  };
  EXPECT_EQ(status(me), kRunning);
  EXPECT_EQ(status(dead), kInterrupted);
  EXPECT_EQ(status(reused), kInterrupted);
  if (!boot.empty()) {
    EXPECT_EQ(status(rebooted), kInterrupted);
  }
  EXPECT_EQ(status(elsewhere), kRunning);  // not ours to judge

  RunRecord d = other.load_run(std::stoll(dead));
  EXPECT_NE(d.error.find(gone), std::string::npos) << d.error;
  EXPECT_DOUBLE_EQ(d.finished_at, 32.5);  // the end of its last sample
  ASSERT_EQ(d.stages.size(), 1u);
  EXPECT_EQ(d.stages[0].status, kInterrupted);
  EXPECT_DOUBLE_EQ(d.stages[0].finished_at, 32.5);
  EXPECT_DOUBLE_EQ(other.load_run(std::stoll(reused)).finished_at, 20);  // no samples: its start
  EXPECT_EQ(other.load_run(live).stages[0].status, kRunning);
  (void)live_stage;
}

TEST_F(StoreTest, SamplesSurviveSigkill) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    try {
      Store s(path_);
      int64_t run = s.begin_run(sample_run("killed", 0, "a", "b"));
      int64_t st = s.begin_stage(run, stage("tcp", "client->server"));
      for (int i = 1; i <= 3; ++i) s.add_sample(st, rate_sample(i, "send", 100.0 * i));
      raise(SIGKILL);
    } catch (...) {
    }
    _exit(3);
  }
  // Wait for its death but leave it a zombie: its /proc entry stays, and a
  // zombie must not count as a live owner.
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, child, &info, WEXITED | WNOWAIT), 0);
  ASSERT_EQ(info.si_code, CLD_KILLED);
  ASSERT_EQ(info.si_status, SIGKILL);
  struct Reap {
    pid_t pid;
    ~Reap() { waitpid(pid, nullptr, 0); }
  } reap{child};

  Store s(path_);
  RunRecord run = s.load_run(s.resolve("killed"));
  EXPECT_EQ(run.status, kInterrupted);
  ASSERT_EQ(run.stages.size(), 1u);
  EXPECT_EQ(run.stages[0].status, kInterrupted);
  ASSERT_EQ(run.stages[0].samples.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(run.stages[0].samples[i].seq, i + 1);
    EXPECT_NEAR(run.stages[0].samples[i].rate(), 100.0 * (i + 1), 1e-6);
  }
}

TEST_F(StoreTest, ASecondConnectionSeesWrites) {
  Store writer(path_);
  Store reader(path_);
  int64_t id = writer.begin_run(sample_run("x", 1, "a", "b"));
  int64_t st = writer.begin_stage(id, stage("disk", "client"));
  writer.add_sample(st, rate_sample(1, "write", 42));
  std::vector<RunListRow> rows = reader.history({});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(reader.load_run(id).stages[0].samples.size(), 1u);
}

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(StoreDefaultPath, FollowsXdg) {
  ScopedEnv home("HOME", "/home/u");
  {
    ScopedEnv xdg("XDG_DATA_HOME", "/data");
    EXPECT_EQ(Store::default_path(), "/data/chokepoint/chokepoint.db");
  }
  {
    ScopedEnv xdg("XDG_DATA_HOME", nullptr);
    EXPECT_EQ(Store::default_path(), "/home/u/.local/share/chokepoint/chokepoint.db");
  }
  {
    ScopedEnv xdg("XDG_DATA_HOME", "relative/dir");  // ignored, as the XDG spec says
    EXPECT_EQ(Store::default_path(), "/home/u/.local/share/chokepoint/chokepoint.db");
  }
}

}  // namespace
}  // namespace cp
