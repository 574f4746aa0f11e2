// Faults against two local agents (subprocesses, no SSH): an agent killed or
// stopped mid-stage, Ctrl-C while an agent is silent, a disk too small, a
// protocol server that is not there. Each asserts the exit code, the run
// status, the samples kept, the database's integrity, that nothing is left
// behind after the next run, and that the next run succeeds.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <chrono>
#include <filesystem>
#include <thread>

#include "core/clock.h"

#include "support.h"

namespace cp::itest {
namespace {

namespace json = boost::json;

constexpr int kComplete = 0, kFailed = 1, kPartial = 3, kInterrupted = 130;

// A quick plan that completes: the "next run" of every fault.
std::string quick_plan(const TempDir& t) {
  return local_dirs(t) +
         "[disk]\nsizes = 1MiB\ncount = 2\nsettle = 0\n[tcp]\nseconds = 300ms\ncount = 2\n"
         "[files]\nenabled = no\n";  // local_test holds the small-file stage
}

void sleep_s(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

// Polls `sql` on the run's database until it yields at least `min`.
bool wait_for(const std::string& db, const std::string& sql, int64_t min, double timeout_s = 60) {
  const double deadline = monotonic_seconds() + timeout_s;
  while (monotonic_seconds() < deadline) {
    try {
      if (query_int(db, sql) >= min) return true;
    } catch (const std::exception&) {
      // Not created yet.
    }
    sleep_s(0.05);
  }
  return false;
}

std::unique_ptr<Child> start_diagnose(const std::string& db, const std::string& plan) {
  return std::make_unique<Child>(std::vector<std::string>{CHOKEPOINT_BIN, "diagnose", "--server",
                                                          "local", "--client", "local", "--db", db,
                                                          "--plan", plan, "-q"});
}

// The two local agents of a running diagnose: {server, client} (the server starts first).
std::vector<int> agents_of(const Child& c) {
  std::vector<int> a;
  const double deadline = monotonic_seconds() + 30;
  while (monotonic_seconds() < deadline) {
    a = children_matching(c.pid(), "chokepoint-agent");
    if (a.size() == 2) break;
    sleep_s(0.05);
  }
  return a;
}

// A diagnose of `plan` (its [server]/[client] dirs from local_dirs(t)) with local
// agents, started: its database, the process, its two agents {server,
// client}; returned once `ready_sql` counts at least 1.
struct Running {
  std::string db;
  std::unique_ptr<Child> c;
  std::vector<int> agents;
};
// The faults are in the disk and TCP stages: the small-file stage is off
// (local_test holds it), so the samples counted are theirs.
const char kNoFiles[] = "[files]\nenabled = no\n";

void start_run(const TempDir& t, const std::string& plan, const std::string& ready_sql,
               Running* r) {
  write_file(t.file("plan.ini"), local_dirs(t) + plan + kNoFiles);
  r->db = t.file("runs.db");
  r->c = start_diagnose(r->db, t.file("plan.ini"));
  r->agents = agents_of(*r->c);
  ASSERT_EQ(r->agents.size(), 2u);
  ASSERT_TRUE(wait_for(r->db, ready_sql, 1));
}

// start_run until the TCP stage has begun; then, `after_s` later, the client's
// agent stopped (SIGSTOP): a peer silent mid-TCP.
void start_run_stopping_the_client_in_tcp(const TempDir& t, const std::string& plan, double after_s,
                                          Running* r) {
  ASSERT_NO_FATAL_FAILURE(start_run(t, plan, "SELECT count(*) FROM stages WHERE layer = 'tcp'", r));
  sleep_s(after_s);
  ::kill(r->agents[1], SIGSTOP);
}

bool wait_gone(int pid, double timeout_s = 15) {
  const double deadline = monotonic_seconds() + timeout_s;
  while (monotonic_seconds() < deadline) {
    if (!alive(pid)) return true;
    sleep_s(0.05);
  }
  return false;
}

// `diagnose` between two local ends with the plan `plan` (a file in `t`) into `db`, quiet.
RunResult diagnose_local(const TempDir& t, const std::string& plan, const std::string& db) {
  return chokepoint({"diagnose", "--server", "local", "--client", "local", "--db", db, "--plan",
                     t.file(plan), "-q"});
}

// The run in `db` ended `status` ("partial" ...), its database intact.
void expect_run_ended(const std::string& db, const std::string& status) {
  EXPECT_EQ(query_text(db, "SELECT status FROM runs"), status);
  EXPECT_EQ(query_text(db, "PRAGMA integrity_check"), "ok");
}

// The next run on the same directories succeeds and leaves nothing behind.
void expect_next_run_succeeds(const TempDir& t) {
  write_file(t.file("next.ini"), quick_plan(t));
  const std::string db = t.file("next.db");
  RunResult r = diagnose_local(t, "next.ini", db);
  EXPECT_EQ(r.exit_code, kComplete) << r.err;
  EXPECT_EQ(query_text(db, "SELECT status FROM runs"), "complete");
  EXPECT_EQ(run_dirs_in(t.path()), 0);
}

// Nothing of the run is left in `t`, and the next run there succeeds.
void expect_left_clean(const TempDir& t) {
  EXPECT_EQ(run_dirs_in(t.path()), 0);
  expect_next_run_succeeds(t);
}

TEST(LocalFaults, KilledServerAgentMidDiskWriteLeavesNothingAfterTheNextRun) {
  TempDir t;
  Running run;
  ASSERT_NO_FATAL_FAILURE(
      start_run(t,
                "[disk]\nsizes = 32MiB\ncount = 4\nsettle = 0\n[tcp]\nseconds = 300ms\n"
                "count = 2\n",
                "SELECT count(*) FROM samples", &run));
  auto& [db, c, agents] = run;
  ::kill(agents[0], SIGKILL);
  const int rc = c->wait(120);
  // The client's disk stage still gives a verdict: partial.
  EXPECT_EQ(rc, kPartial);
  expect_run_ended(db, "partial");
  EXPECT_EQ(
      query_text(db, "SELECT status FROM stages WHERE layer = 'disk' AND location = 'server'"),
      "failed");
  EXPECT_GE(query_int(db,
                      "SELECT count(*) FROM samples s JOIN stages g ON s.stage_id = g.id "
                      "WHERE g.location = 'server' AND s.error = ''"),
            1);                         // the samples measured before the kill are kept
  EXPECT_EQ(run_dirs_in(t.path()), 1);  // the killed agent's, until the next run
  EXPECT_TRUE(wait_gone(agents[1]));
  expect_next_run_succeeds(t);
}

TEST(LocalFaults, CtrlCWhileAnAgentIsStoppedEndsWithinTwoSeconds) {
  TempDir t;
  Running run;
  ASSERT_NO_FATAL_FAILURE(start_run_stopping_the_client_in_tcp(
      t, "[disk]\nsizes = 1MiB\ncount = 2\nsettle = 0\n[tcp]\nseconds = 30\n", 0.5, &run));
  auto& [db, c, agents] = run;
  sleep_s(0.5);
  const double sent = monotonic_seconds();
  c->kill(SIGINT);
  const int rc = c->wait(120);
  const double took = monotonic_seconds() - sent;
  ::kill(agents[1], SIGCONT);  // it wakes, finds its channel closed, cleans up
  EXPECT_EQ(rc, kInterrupted);
  EXPECT_LT(took, 2.0);
  expect_run_ended(db, "interrupted");
  // The disk ones: 2 ops x 2 files on each end, and the server's 2 synchronous writes.
  EXPECT_EQ(query_int(db, "SELECT count(*) FROM samples WHERE error = ''"), 8 + 2);
  EXPECT_TRUE(wait_gone(agents[1]));
  EXPECT_TRUE(wait_gone(agents[0]));
  expect_left_clean(t);  // both cleaned up, the stopped one once woken
}

TEST(LocalFaults, ASampleDuringWhichAnAgentStoppedIsFlaggedStalled) {
  TempDir t;
  Running run;
  ASSERT_NO_FATAL_FAILURE(start_run_stopping_the_client_in_tcp(
      t,
      "[disk]\nenabled = no\n[tcp]\nseconds = 1\ncount = 3\nstreams = 1\n"
      "[timeouts]\nstall = 2s\nsilence = 60s\n",
      0.3, &run));
  auto& [db, c, agents] = run;
  sleep_s(4);
  ::kill(agents[1], SIGCONT);
  const int rc = c->wait(120);
  EXPECT_EQ(rc, kPartial);
  expect_run_ended(db, "partial");
  EXPECT_EQ(query_int(db,
                      "SELECT count(*) FROM samples WHERE json_extract(details_json, "
                      "'$.stalled') = 1 AND error != ''"),
            1);
  EXPECT_EQ(query_int(db, "SELECT count(*) FROM samples WHERE error = ''"), 5);
  expect_left_clean(t);
}

TEST(LocalFaults, AnAgentSilentPastTheTimeoutIsAbandoned) {
  TempDir t;
  Running run;
  ASSERT_NO_FATAL_FAILURE(start_run_stopping_the_client_in_tcp(
      t,
      "[disk]\nsizes = 1MiB\ncount = 2\nsettle = 0\n[tcp]\nseconds = 20\ncount = 2\n"
      "[timeouts]\nsilence = 3s\n",
      0.5, &run));
  auto& [db, c, agents] = run;
  const double stopped = monotonic_seconds();
  const int rc = c->wait(120);
  const double took = monotonic_seconds() - stopped;
  ::kill(agents[1], SIGCONT);
  // The disk stages still give a verdict; both TCP stages failed on the silent agent.
  EXPECT_EQ(rc, kPartial);
  EXPECT_LT(took, 20);  // not the 20 s sample, nor 2 minutes
  expect_run_ended(db, "partial");
  EXPECT_EQ(query_int(db, "SELECT count(*) FROM stages WHERE layer = 'tcp' AND status = 'failed'"),
            2);
  EXPECT_TRUE(wait_gone(agents[1]));
  expect_left_clean(t);
}

TEST(LocalFaults, ADiskTooSmallForTheStageFailsTheRun) {
  TempDir t;
  struct statvfs vfs {};
  ASSERT_EQ(statvfs(t.path().c_str(), &vfs), 0);
  // One file as big as the whole filesystem: refused before anything is written.
  const uint64_t total_mb = uint64_t(vfs.f_blocks) * vfs.f_frsize / 1'000'000 + 1;
  write_file(t.file("plan.ini"), local_dirs(t) + "[disk]\nsizes = " + std::to_string(total_mb) +
                                     "MB\ncount = 1\n[tcp]\nenabled = no\n" + kNoFiles);
  const std::string db = t.file("runs.db");
  RunResult r = diagnose_local(t, "plan.ini", db);
  EXPECT_EQ(r.exit_code, kFailed) << r.err;
  expect_run_ended(db, "failed");
  EXPECT_EQ(query_int(db, "SELECT count(*) FROM stages WHERE status = 'failed'"), 2);
  EXPECT_EQ(query_int(db, "SELECT count(*) FROM samples"), 0);
  expect_left_clean(t);
}

// A loopback port nothing listens on.
int closed_port() {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  close(s);
  return ntohs(a.sin_port);
}

TEST(LocalFaults, AProtocolServerThatIsNotThereMakesTheRunPartial) {
  TempDir t;
  write_file(t.file("plan.ini"), quick_plan(t) +
                                     "[protocol]\nsizes = 1MiB\ncount = 2\n[share ftp-ram]\nurl = "
                                     "ftp://127.0.0.1:" +
                                     std::to_string(closed_port()) + "/\nserver_dir = " + t.path() +
                                     "\nmedium = ram\n");
  const std::string db = t.file("runs.db");
  RunResult r = diagnose_local(t, "plan.ini", db);
  EXPECT_EQ(r.exit_code, kPartial) << r.err;
  expect_run_ended(db, "partial");
  EXPECT_EQ(query_text(db, "SELECT status FROM stages WHERE layer = 'ftp'"), "failed");
  EXPECT_EQ(query_int(db, "SELECT count(*) FROM stages WHERE status = 'complete'"), 4);
  expect_left_clean(t);
}

TEST(LocalFaults, CleanRemovesWhatKilledAgentsLeft) {
  TempDir t;
  Running run;
  ASSERT_NO_FATAL_FAILURE(
      start_run(t, "[disk]\nsizes = 32MiB\ncount = 4\nsettle = 0\n[tcp]\nenabled = no\n",
                "SELECT count(*) FROM samples", &run));
  auto& [db, c, agents] = run;
  ::kill(agents[0], SIGKILL);
  ::kill(agents[1], SIGKILL);
  c->wait(60);
  ASSERT_EQ(run_dirs_in(t.path()), 2);
  RunResult r = chokepoint({"clean", "local", "--dir", t.path(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json::object doc = json::parse(r.out).as_object();
  EXPECT_EQ(doc.at("hosts").as_array()[0].at("removed").as_array().size(), 2u);
  EXPECT_EQ(run_dirs_in(t.path()), 0);
  // Nothing else in the directory was touched.
  EXPECT_TRUE(std::filesystem::exists(t.file("plan.ini")));
  EXPECT_TRUE(std::filesystem::exists(db));
}

}  // namespace
}  // namespace cp::itest
