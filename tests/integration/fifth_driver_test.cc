// A fifth protocol in one file: a test-only driver ("fifth", built on the
// null driver) declared and registered here, and a whole diagnosis through it
// with `local` endpoints: plan, stages, verdict, compare and export, with no
// other file knowing it.
//
// How the driver reaches the agent: `local` endpoints start the agent binary
// $CHOKEPOINT_AGENT names as a subprocess (`AGENT --serve`). This test binary
// is that agent too: main() below serves the agent's wire protocol when
// called with --serve, with the driver table this file extended (the
// registration is a static initializer, so it runs in both roles). The
// orchestrator runs in this process through cp::app::main.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "agent/driver_role.h"
#include "agent_server/agent.h"
#include "analysis/ladder.h"
#include "app/app.h"
#include "core/units.h"
#include "core/version.h"
#include "transfer/driver.h"

namespace cp::itest {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

// --- the fifth driver --------------------------------------------------------

// The null driver's session, with what the fifth protocol says it negotiated:
// the largest read request its server takes (option max_read, bytes) and a
// large write one.
class FifthSession : public transfer::Session {
 public:
  FifthSession(std::unique_ptr<transfer::Session> inner, std::string max_read)
      : inner_(std::move(inner)), max_read_(std::move(max_read)) {}
  std::unique_ptr<transfer::File> open(const std::string& path, transfer::Mode mode,
                                       uint64_t size_hint) override {
    return inner_->open(path, mode, size_hint);
  }
  void remove(const std::string& path) override { inner_->remove(path); }
  std::map<std::string, std::string> properties() const override {
    auto p = inner_->properties();
    p["max_read_size"] = max_read_;
    p["max_write_size"] = std::to_string(16u << 20);
    return p;
  }

 private:
  std::unique_ptr<transfer::Session> inner_;
  std::string max_read_;
};

class FifthDriver : public transfer::Driver {
 public:
  std::string name() const override { return "fifth"; }
  std::unique_ptr<transfer::Session> connect(const transfer::Share& share,
                                             const CancelToken& cancel) override {
    transfer::Share inner = share;
    inner.options.erase("max_read");
    const std::string max_read =
        transfer::option_value(transfer::driver_spec("fifth"), share.options, "max_read");
    auto null = transfer::driver_spec("null").make();
    return std::make_unique<FifthSession>(null->connect(inner, cancel),
                                          std::to_string(parse_size(max_read, "max_read")));
  }
};

constexpr std::string_view kFifthPrefixes[] = {"fifth:"};
constexpr transfer::OptionSpec kFifthOptions[] = {
    {.name = "size",
     .type = transfer::OptionType::kSize,
     .fallback = "1MiB",
     .help = "bytes a file read holds when the reader expects no size"},
    {.name = "max_read",
     .type = transfer::OptionType::kSize,
     .fallback = "64KiB",
     .min = 4096,
     .help = "the read request size the session says it negotiated"},
};
std::unique_ptr<transfer::Driver> make_fifth() { return std::make_unique<FifthDriver>(); }

const transfer::DriverSpec kFifthDriver = {
    .name = "fifth",
    .summary = "a test protocol: the null driver under another name",
    .url_prefixes = kFifthPrefixes,
    .caps = {.read = true, .write = true},
    .options = kFifthOptions,
    .make = make_fifth,
    .display = "Fifth",
    .server_files = false,
    .hints = {.negotiated_request_size = true},
};
const transfer::DriverRegistration kRegistered(kFifthDriver);

// --- running chokepoint in this process --------------------------------------

struct Out {
  int rc;
  std::string out;
};

Out chokepoint(std::vector<std::string> args) {
  args.insert(args.begin(), "chokepoint");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  testing::internal::CaptureStdout();
  const int rc = app::main(static_cast<int>(argv.size()), argv.data());
  return {rc, testing::internal::GetCapturedStdout()};
}

class FifthDriverRun : public testing::Test {
 protected:
  void SetUp() override {
    // The RAM dirs on a tmpfs, the disk dirs and the database on disk.
    char ram[] = "/dev/shm/cp-fifth-XXXXXX", disk[] = "/var/tmp/cp-fifth-XXXXXX";
    ASSERT_NE(mkdtemp(ram), nullptr);
    ASSERT_NE(mkdtemp(disk), nullptr);
    ram_ = ram;
    dir_ = disk;
    // The local endpoints' agent: this binary (see main below).
    setenv("CHOKEPOINT_AGENT", fs::read_symlink("/proc/self/exe").c_str(), 1);
  }
  void TearDown() override {
    fs::remove_all(ram_);
    fs::remove_all(dir_);
  }

  // A small plan: both disks, TCP, and one share of the fifth protocol over RAM.
  std::string plan(const std::string& options) {
    const std::string path = dir_ + "/plan-" + std::to_string(++plans_) + ".ini";
    std::ofstream(path) << "[server]\nram_dir = " << ram_ << "\ndisk_dir = " << dir_
                        << "\n[client]\nram_dir = " << ram_ << "\ndisk_dir = " << dir_
                        << "\n[disk]\nsizes = 4MiB\ncount = 3\nsettle = 0\n"
                        << "[tcp]\nseconds = 500ms\ncount = 3\n"
                        << "[protocol]\nsizes = 8MiB\ncount = 5\n"
                        << "[share fifth-ram]\nurl = fifth:\nmedium = ram\noptions = " << options
                        << "\n";
    return path;
  }
  Out diagnose(const std::string& label, const std::string& options) {
    return chokepoint({"diagnose", "--server", "local", "--client", "local", "--db", db(), "--plan",
                       plan(options), "--label", label, "--json"});
  }
  std::string db() const { return dir_ + "/runs.db"; }

  std::string ram_, dir_;
  int plans_ = 0;
};

const json::object* find_by(const json::array& a, const char* key, std::string_view value) {
  for (const auto& v : a) {
    const json::object& o = v.as_object();
    if (const auto* f = o.if_contains(key); f && f->is_string() && f->as_string() == value) {
      return &o;
    }
  }
  return nullptr;
}

// The plan takes the driver's URL and options, and its share needs no
// server_dir (the spec says it has no server files); --dry-run lists its stage.
TEST_F(FifthDriverRun, PlanTakesTheRegisteredDriver) {
  const Out dry = chokepoint({"diagnose", "--server", "local", "--client", "local", "--db", db(),
                              "--plan", plan("max_read=64KiB"), "--dry-run"});
  EXPECT_EQ(dry.rc, 0) << dry.out;
  EXPECT_NE(dry.out.find("\n  fifth-ram "), std::string::npos) << dry.out;  // its stage's line
  // An option the spec does not declare fails the plan before anything runs.
  const Out bad = chokepoint({"diagnose", "--server", "local", "--client", "local", "--db", db(),
                              "--plan", plan("depth=8"), "--dry-run"});
  EXPECT_EQ(bad.rc, 1);
  EXPECT_FALSE(fs::exists(db()));
}

// diagnose judges its run once: the status, the stored verdict, the text and
// the HTML page all come from that one analysis.
TEST_F(FifthDriverRun, DiagnoseWithTextAndHtmlAnalyzesTheRunOnce) {
  const uint64_t before = analysis::analyses_run();
  const Out r = chokepoint({"diagnose", "--server", "local", "--client", "local", "--db", db(),
                            "--plan", plan("max_read=64KiB"), "--html", dir_ + "/run.html"});
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_TRUE(fs::exists(dir_ + "/run.html"));
  EXPECT_EQ(analysis::analyses_run() - before, 1u);
}

// diagnose through the fifth driver: its stage and samples stored, its rows
// named by the spec's display name, its verdict with the hint the spec
// declares (a small negotiated read size); compare and export carry its rows.
TEST_F(FifthDriverRun, DiagnoseCompareAndExportThroughIt) {
  const Out a = diagnose("fifth-a", "max_read=64KiB");
  ASSERT_EQ(a.rc, 0) << a.out;
  const json::object run = json::parse(a.out).as_object();

  // Stages: the share's stage, complete, with 5 reads and 5 writes of 8 MiB.
  const json::array& stages = run.at("stages").as_array();
  const json::object* stage = find_by(stages, "layer", "fifth");
  ASSERT_NE(stage, nullptr);
  EXPECT_EQ(stage->at("status").as_string(), "complete");
  EXPECT_EQ(stage->at("where").as_string(), "ram");
  int reads = 0, writes = 0;
  for (const auto& s : stage->at("samples").as_array()) {
    const json::object& o = s.as_object();
    EXPECT_EQ(o.at("bytes").to_number<int64_t>(), 8 << 20);
    EXPECT_EQ(o.at("error").as_string(), "");
    // The session's negotiated sizes are stored with each sample.
    EXPECT_EQ(o.at("details").at("properties").at("max_read_size").as_string(), "65536");
    (o.at("op").as_string() == "read" ? reads : writes)++;
  }
  EXPECT_EQ(reads, 5);
  EXPECT_EQ(writes, 5);

  // The ladder: its rows, labelled with the spec's display name.
  const json::array& ladder = run.at("ladder").as_array();
  const json::object* row = nullptr;
  for (const auto& r : ladder) {
    const json::object& o = r.as_object();
    if (o.at("layer").as_string() == "fifth" && o.at("op").as_string() == "read") row = &o;
  }
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->at("n").to_number<int64_t>(), 5);
  EXPECT_TRUE(std::string(row->at("label").as_string()).starts_with("Fifth "));

  // The verdict: a finding for each of its paths, naming the protocol as the
  // spec does; the read's carries the negotiated-size hint the spec declares,
  // the write's (16 MiB negotiated) none of it.
  const json::array& findings = run.at("verdict").at("findings").as_array();
  const json::object* read = find_by(findings, "path", "fifth ram read");
  const json::object* write = find_by(findings, "path", "fifth ram write");
  ASSERT_NE(read, nullptr);
  ASSERT_NE(write, nullptr);
  EXPECT_EQ(read->at("evidence").at("protocol").as_string(), "Fifth");
  EXPECT_EQ(write->at("evidence").at("protocol").as_string(), "Fifth");
  EXPECT_TRUE(read->at("rule").as_string().starts_with("protocol."));
  const size_t read_hints = read->at("hints").as_array().size();
  EXPECT_GE(read_hints, 1u);
  EXPECT_EQ(write->at("hints").as_array().size(), 0u);

  // A second run with another negotiated size: compare holds the fifth rows
  // to a recorded share change, and the disks to none.
  const Out b = diagnose("fifth-b", "max_read=1MiB");
  ASSERT_EQ(b.rc, 0) << b.out;
  // 1 MiB per read request: no negotiated-size hint.
  const json::value run_b = json::parse(b.out);
  const json::object* read_b =
      find_by(run_b.at("verdict").at("findings").as_array(), "path", "fifth ram read");
  ASSERT_NE(read_b, nullptr);
  EXPECT_EQ(read_b->at("hints").as_array().size(), read_hints - 1);
  const Out cmp = chokepoint({"compare", "fifth-a", "fifth-b", "--db", db(), "--json"});
  ASSERT_EQ(cmp.rc, 0) << cmp.out;
  const json::object c = json::parse(cmp.out).as_object();
  bool fifth_rows = false, disk_rows = false;
  for (const auto& r : c.at("rows").as_array()) {
    const json::object& o = r.as_object();
    if (o.at("layer").as_string() == "fifth") {
      fifth_rows = true;
      EXPECT_TRUE(o.at("affected_by_change").as_bool()) << o.at("key");
    }
    if (o.at("layer").as_string() == "disk") {
      disk_rows = true;
      EXPECT_FALSE(o.at("affected_by_change").as_bool()) << o.at("key");
    }
  }
  EXPECT_TRUE(fifth_rows);
  EXPECT_TRUE(disk_rows);
  bool share_change = false;
  for (const auto& e : c.at("env").as_array()) {
    const json::array& affects = e.at("affects").as_array();
    if (affects.size() == 1 && affects[0].as_string() == "fifth") share_change = true;
  }
  EXPECT_TRUE(share_change);

  // Export: a line per sample of the fifth protocol's stage, its property
  // among the columns.
  const Out exported = chokepoint({"export", "fifth-a", "--db", db(), "--format", "json"});
  ASSERT_EQ(exported.rc, 0);
  const json::object e = json::parse(exported.out).as_object();
  int fifth_samples = 0;
  for (const auto& s : e.at("samples").as_array()) {
    const json::object& o = s.as_object();
    if (o.at("layer").as_string() != "fifth") continue;
    ++fifth_samples;
    EXPECT_EQ(o.at("stage_status").as_string(), "complete");
  }
  EXPECT_EQ(fifth_samples, 10);
}

}  // namespace
}  // namespace cp::itest

// The test binary, or (with --serve) the full agent with the fifth driver in
// its table: the `local` endpoints' subprocess.
int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--serve") == 0) {
    return cp::agent::serve(0, 1, {cp::kBuildId, cp::kVersion, cp::agent::make_client_role});
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
