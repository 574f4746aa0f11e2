// diagnose with two local agents (subprocesses, no SSH): the whole pipeline,
// the database rows and the report, without root.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <boost/json.hpp>

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "core/clock.h"

#include "support.h"

namespace cp::itest {
namespace {

namespace json = boost::json;

std::string small_plan(const TempDir& t) {
  return local_dirs(t) +
         "[disk]\nsizes = 4MiB, 8MiB\ncount = 2\nsettle = 0\n[tcp]\nseconds = 500ms\ncount = 2\n"
         "streams = 1\n"             // one stream: the TCP sample count does not depend on the CPU
         "[files]\nenabled = no\n";  // LocalDiagnose.FilesStage* hold it
}

TEST(LocalDiagnose, StoresEverySampleAndReports) {
  TempDir t;
  write_file(t.file("plan.ini"), small_plan(t));
  const std::string db = t.file("runs.db");
  RunResult r = chokepoint({"diagnose", "--server", "local", "--client", "local", "--db", db,
                            "--plan", t.file("plan.ini"), "--label", "local-e2e", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(query_text(db, "SELECT status FROM runs"), "complete");
  EXPECT_EQ(query_text(db, "SELECT label FROM runs"), "local-e2e");
  EXPECT_EQ(query_int(db, "SELECT count(*) FROM hosts"), 2);
  EXPECT_EQ(query_int(db, "SELECT count(*) FROM stages WHERE status = 'complete'"), 4);
  // 2 sizes x 2 ops x 2 files on each end, and the server's synchronous
  // writes of its smallest files (2); 2 TCP samples each way.
  EXPECT_EQ(query_int(db,
                      "SELECT count(*) FROM samples s JOIN stages g ON s.stage_id = g.id "
                      "WHERE g.layer = 'disk'"),
            16 + 2);
  EXPECT_EQ(query_int(db,
                      "SELECT count(*) FROM samples s JOIN stages g ON s.stage_id = g.id "
                      "WHERE g.layer = 'tcp'"),
            4);
  EXPECT_EQ(query_int(db, "SELECT count(*) FROM samples WHERE bytes = 0 OR seconds <= 0"), 0);
  EXPECT_EQ(query_int(db, "SELECT count(*) FROM samples WHERE error != ''"), 0);

  auto doc = json::parse(r.out).as_object();
  EXPECT_EQ(doc.at("run").at("status").as_string(), "complete");
  EXPECT_FALSE(doc.at("verdict").at("headline").as_string().empty());
  EXPECT_GE(doc.at("ladder").as_array().size(), 10u);
  // The agent's files are gone: only the plan and the database remain.
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(t.path())) {
    const std::string n = e.path().filename();
    EXPECT_EQ(n.find("chokepoint-run-"), std::string::npos) << n;
    ++entries;
  }
  EXPECT_GE(entries, 2);

  // show and history read the database alone.
  RunResult show = chokepoint({"show", "local-e2e", "--db", db});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_FALSE(show.out.empty());
  RunResult shown = chokepoint({"show", "local-e2e", "--db", db, "--json"});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  auto s = json::parse(shown.out).as_object();
  EXPECT_EQ(s.at("run").at("label").as_string(), "local-e2e");
  // The same verdict diagnose gave, and the TCP row of the ladder.
  EXPECT_EQ(s.at("verdict").at("headline"), doc.at("verdict").at("headline"));
  bool tcp_row = false;
  for (const auto& row : s.at("ladder").as_array()) {
    tcp_row |= row.at("key").as_string() == "tcp:server->client:send";
  }
  EXPECT_TRUE(tcp_row);
  RunResult hist = chokepoint({"history", "--db", db, "--json"});
  ASSERT_EQ(hist.exit_code, 0) << hist.err;
  auto h = json::parse(hist.out).as_object();
  ASSERT_EQ(h.at("runs").as_array().size(), 1u);
  EXPECT_EQ(h.at("runs").as_array()[0].at("label").as_string(), "local-e2e");
}

// The small-file stage alone on each end's disk: a sample per phase and pass,
// its ops and latency in the details, its figure in ops/s in the ladder.
TEST(LocalDiagnose, FilesStageStoresEachPhaseOnEachEndWithItsOpsAndLatency) {
  TempDir t;
  write_file(t.file("plan.ini"), local_dirs(t) +
                                     "[disk]\nenabled = no\n[tcp]\nenabled = no\n"
                                     "[files]\ncount = 300\nsize = 2KiB\ndirs = 6\norder = both\n");
  const std::string db = t.file("runs.db");
  RunResult r = chokepoint({"diagnose", "--server", "local", "--client", "local", "--db", db,
                            "--plan", t.file("plan.ini"), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(query_int(db,
                      "SELECT count(*) FROM stages WHERE layer = 'files' AND status = "
                      "'complete'"),
            2);
  // Two passes (sequential, random) of four phases on each end.
  for (const char* where : {"server", "client"}) {
    for (const char* op : {"files-create", "files-stat", "files-read", "files-delete"}) {
      EXPECT_EQ(query_int(db, fmt::format("SELECT count(*) FROM samples s JOIN stages g ON "
                                          "s.stage_id = g.id WHERE g.layer = 'files' AND "
                                          "g.location = '{}' AND s.op = '{}' AND s.error = '' "
                                          "AND s.seconds > 0 AND s.size = 2048",
                                          where, op)),
                2)
          << where << " " << op;
    }
  }
  // The data moved: create and read 300 x 2 KiB per pass, stat and delete none.
  EXPECT_EQ(query_int(db,
                      "SELECT count(*) FROM samples WHERE op IN ('files-create', "
                      "'files-read') AND bytes = 614400"),
            8);
  EXPECT_EQ(query_int(db,
                      "SELECT count(*) FROM samples WHERE op IN ('files-stat', "
                      "'files-delete') AND bytes = 0"),
            8);
  auto doc = json::parse(r.out).as_object();
  int checked = 0;
  for (const auto& st : doc.at("stages").as_array()) {
    if (st.at("layer").as_string() != "files") continue;
    for (const auto& s : st.at("samples").as_array()) {
      const auto& d = s.at("details").as_object();
      EXPECT_EQ(d.at("ops").to_number<int64_t>(), 300);
      EXPECT_EQ(d.at("count").to_number<int64_t>(), 300);
      EXPECT_EQ(d.at("dirs").to_number<int64_t>(), 6);
      const auto& lat = d.at("latency_us").as_object();
      EXPECT_GT(lat.at("median").to_number<double>(), 0);
      EXPECT_LE(lat.at("median").to_number<double>(), lat.at("p99").to_number<double>());
      EXPECT_LE(lat.at("p99").to_number<double>(), lat.at("max").to_number<double>());
      // Each phase carries its end's CPU.
      EXPECT_TRUE(s.at("cpu").as_object().contains(st.at("where").as_string()));
      ++checked;
    }
  }
  EXPECT_EQ(checked, 16);
  // The ladder: a row per end, phase and order, in ops/s.
  int ops_rows = 0;
  for (const auto& row : doc.at("ladder").as_array()) {
    if (row.at("unit").as_string() != "ops/s") continue;
    ++ops_rows;
    EXPECT_EQ(row.at("layer").as_string(), "files");
    EXPECT_EQ(row.at("n").to_number<int64_t>(), 1);
    EXPECT_GT(row.at("median_ops_per_s").to_number<double>(), 0);
  }
  EXPECT_EQ(ops_rows, 16);  // 2 ends x 4 phases x 2 orders
  EXPECT_EQ(run_dirs_in(t.path()), 0);
}

TEST(LocalDiagnose, BadPlanNamesTheLineAndStoresNothing) {
  TempDir t;
  write_file(t.file("plan.ini"), "[disk]\ncount = 2\nsizez = 1MB\n");
  RunResult r = chokepoint({"diagnose", "--server", "local", "--client", "local", "--db",
                            t.file("runs.db"), "--plan", t.file("plan.ini")});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("plan.ini:3: unknown key 'sizez' in [disk]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("fix:"), std::string::npos) << r.err;
}

TEST(LocalDiagnose, MissingDirectoryFailsTheRunWithAReason) {
  TempDir t;
  write_file(t.file("plan.ini"), "[server]\ndisk_dir = /nonexistent/chokepoint\n");
  const std::string db = t.file("runs.db");
  RunResult r = chokepoint({"diagnose", "--server", "local", "--client", "local", "--db", db,
                            "--plan", t.file("plan.ini")});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("'/nonexistent/chokepoint' does not exist"), std::string::npos) << r.err;
  EXPECT_EQ(query_text(db, "SELECT status FROM runs"), "failed");
  EXPECT_NE(query_text(db, "SELECT error FROM runs").find("does not exist"), std::string::npos);
}

TEST(LocalDiagnose, SigintKeepsSamplesAndMarksTheRunInterrupted) {
  TempDir t;
  // TCP samples of 30 s: the interrupt lands mid-sample, after the disk stages.
  write_file(t.file("plan.ini"),
             local_dirs(t) +
                 "[disk]\nsizes = 4MiB\ncount = 2\nsettle = 0\n[tcp]\nseconds = 30\ncount = 2\n"
                 "[files]\nenabled = no\n");
  const std::string db = t.file("runs.db");
  Child c({CHOKEPOINT_BIN, "diagnose", "--server", "local", "--client", "local", "--db", db,
           "--plan", t.file("plan.ini"), "-q"});
  const double deadline = monotonic_seconds() + 60;
  int64_t stages = 0;
  while (monotonic_seconds() < deadline) {
    try {
      stages = query_int(db, "SELECT count(*) FROM stages WHERE layer = 'tcp'");
    } catch (const std::exception&) {
    }
    if (stages >= 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_GE(stages, 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const double sent = monotonic_seconds();
  c.kill(SIGINT);
  EXPECT_EQ(c.wait(20), 130);
  EXPECT_LT(monotonic_seconds() - sent, 15);  // not after the 30 s sample
  EXPECT_EQ(query_text(db, "SELECT status FROM runs"), "interrupted");
  EXPECT_EQ(query_text(db, "SELECT status FROM stages WHERE layer = 'tcp'"), "interrupted");
  // The disk samples: 2 ops x 2 files on each end, and the server's 2 synchronous writes.
  EXPECT_EQ(query_int(db, "SELECT count(*) FROM samples"), 8 + 2);
  for (const auto& e : std::filesystem::directory_iterator(t.path())) {
    EXPECT_EQ(e.path().filename().string().find("chokepoint-run-"), std::string::npos);
  }
}

TEST(LocalDiagnose, UsageErrors) {
  RunResult r = chokepoint({"diagnose", "--server", "local"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("needs both --server and --client"), std::string::npos) << r.err;
  r = chokepoint({"frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown command 'frobnicate'"), std::string::npos);
  TempDir t;
  // Reading commands never create a database.
  for (std::vector<std::string> cmd : {std::vector<std::string>{"show", "latest"},
                                       {"history"},
                                       {"export", "latest"},
                                       {"compare", "1", "2"}}) {
    cmd.push_back("--db");
    cmd.push_back(t.file("absent.db"));
    r = chokepoint(cmd);
    EXPECT_EQ(r.exit_code, 2) << cmd[0] << ": " << r.err;
    EXPECT_FALSE(std::filesystem::exists(t.file("absent.db"))) << cmd[0];
  }
  // --lab with named hosts, a missing --ssh-config, history limits, one run compared to itself.
  EXPECT_EQ(chokepoint({"diagnose", "--lab", "--server", "a", "--client", "b"}).exit_code, 2);
  EXPECT_EQ(chokepoint({"diagnose", "--server", "local", "--client", "local", "--ssh-config",
                        "/nonexistent/ssh_config", "--db", t.file("x.db")})
                .exit_code,
            2);
  EXPECT_FALSE(std::filesystem::exists(t.file("x.db")));
  write_file(t.file("plan.ini"), small_plan(t));
  const std::string db = t.file("runs.db");
  ASSERT_EQ(chokepoint({"diagnose", "--server", "local", "--client", "local", "--db", db, "--plan",
                        t.file("plan.ini"), "-q"})
                .exit_code,
            0);
  r = chokepoint({"show", "nope", "--db", db});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no run 'nope'"), std::string::npos) << r.err;
  for (const char* bad : {"-1", "0"}) {
    EXPECT_EQ(chokepoint({"history", "--db", db, "--limit", bad}).exit_code, 2) << bad;
  }
  EXPECT_EQ(chokepoint({"history", "--db", db, "--limit", "1"}).exit_code, 0);
  EXPECT_EQ(chokepoint({"compare", "1", "latest", "--db", db}).exit_code, 2);
}

}  // namespace
}  // namespace cp::itest
