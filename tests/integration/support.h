// Helpers for end-to-end tests: run the built chokepoint, read its database.
#pragma once

#include <unistd.h>

#include <gtest/gtest.h>

#include <boost/json/object.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/process.h"
#include "lab/layout.h"

namespace cp::itest {

// Runs the built chokepoint with `args`; output and exit code. Its lab
// commands and `diagnose --lab` act on the tests' own lab instance
// (lab_instance()), never on a user's lab.
RunResult chokepoint(const std::vector<std::string>& args, double timeout_s = 600);
// The same on lab instance `instance` (another test instance, never 0).
RunResult chokepoint_on(int instance, const std::vector<std::string>& args, double timeout_s = 600);

// The tests' lab instance: $CHOKEPOINT_TEST_LAB_INSTANCE, else 9 (never 0),
// its names and addresses, and its dir.
int lab_instance();
const lab::InstanceNames& lab_names();
std::string lab_dir();

// A fresh temporary directory, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

void write_file(const std::string& path, const std::string& text);
// A file's whole text; "" when it cannot be read.
std::string slurp(const std::string& path);

// One integer from an SQL query on the database file (read-only, its own connection).
int64_t query_int(const std::string& db, const std::string& sql);
// The complete stages in `db` whose layer is one of `layers` (an SQL list: "'disk', 'tcp'").
int64_t complete_stages(const std::string& db, const std::string& layers);
std::string query_text(const std::string& db, const std::string& sql);
// Runs `sql` on the database (read-write, its own connection); a failure is
// a test failure naming the statement.
void exec_sql(const std::string& db, const std::string& sql);

// PIDs of running processes whose command line contains `needle`.
std::vector<int> pids_matching(const std::string& needle);
// The same, only those inside the tests' lab hosts (not a user's lab beside them).
std::vector<int> lab_pids_matching(const std::string& needle);

// PIDs of the live (not zombie) children of `parent` whose command line
// contains `needle`, oldest first.
std::vector<int> children_matching(int parent, const std::string& needle);

// Whether `pid` still runs (a zombie does not).
bool alive(int pid);

// Entries of `dir` named chokepoint-run-* (what agents leave behind).
int run_dirs_in(const std::string& dir);

// What `lab status --json` says about the tests' lab, as the suites use it.
struct LabHost {
  std::string netns, alias, hostname, ram_dir, disk_dir, loop_device;
  int sshd_pid = 0;
};
struct LabShare {
  std::string protocol, medium, url, server_dir;
};
struct LabStatus {
  std::string dir, ssh_config;
  LabHost server, client;
  std::vector<LabShare> shares;
  std::string share_user, share_password_file;
  int smbd_pid = 0;
  bool nfsd_alive = false;

  // The lab's share of `protocol` on `medium` ("ram" or "disk"); nullptr when it has none.
  const LabShare* share(std::string_view protocol, std::string_view medium) const;
  // A plan's [share <name>] section for that share, as the share user with the
  // lab's password file; empty when the lab has no such share.
  std::string plan_section(const std::string& name, std::string_view protocol,
                           std::string_view medium, const std::string& extra = "") const;
};
// `lab status --json` of the tests' lab; throws std::runtime_error naming
// what failed (the command's error, a field missing).
LabStatus lab_status();

// Runs `command` on a lab host (its ssh alias, e.g. LabStatus::server.alias)
// through the system's ssh client with the lab's ssh_config.
RunResult on_lab_host(const std::string& alias, const std::string& command, double timeout_s = 60);

// `plan` without the small-file passes over the shares (`[files] shares =
// no`), unless it says otherwise: they add about 10 s per share to a run,
// and only the tests that are about them need them (Lab.DiagnoseThroughRealSshd,
// LabFilesShares.*). The small-file passes on each end's disk stay.
std::string share_files_off(const std::string& plan);

// A plan's [server] and [client] sections for two local ends: both ends' RAM
// and disk dirs are `t`.
std::string local_dirs(const TempDir& t);

// Runs diagnose between two local ends (RAM and disk dirs in `dir`) with the
// plan `sections` (written into `dir` after local_dirs) into `db`, with -q
// and `extra` arguments.
RunResult diagnose_locally(const TempDir& dir, const std::string& sections, const std::string& db,
                           const std::vector<std::string>& extra = {});

// A short plan for the NAS-profile labs: two 10 MB disk samples, one second of
// TCP each way, one 10 MB file through each protocol.
inline constexpr const char* kShortNasPlan =
    "[disk]\nsizes = 10MB\ncount = 2\nsettle = 200ms\n[tcp]\nseconds = 1\ncount = 1\n"
    "[protocol]\nsizes = 10MB\ncount = 1\n";

// Runs diagnose on the tests' lab with `plan` (written into `dir`) into
// `db`, with --json -q and `extra` arguments.
RunResult diagnose_lab(const TempDir& dir, const std::string& plan, const std::string& db,
                       const std::vector<std::string>& extra = {});

// diagnose_lab with `plan` in a fresh directory: its JSON report ({} and a
// test failure when it printed none).
boost::json::object diagnose_lab_report(const std::string& plan);

// Parts of diagnose's JSON report: the ladder row `key`, the verdict's
// finding for `path`; nullptr when absent.
const boost::json::object* ladder_row(const boost::json::object& report, std::string_view key);
const boost::json::object* verdict_finding(const boost::json::object& report,
                                           std::string_view path);
// The errors a report holds: each failed stage's and each failed sample's, one
// per line ("<layer> <where> sample <id>: <error>"); for a test's message when
// a row it expected is absent.
std::string run_errors(const boost::json::object& report);
// A string field of `o`; empty when absent or not a string.
std::string text_field(const boost::json::object& o, std::string_view key);

// A test suite on the tests' own lab: `lab up <Derived::lab_up_options()>`
// once before its first test and `lab down` after its last; unless Derived
// declares its own, the options are `--rate 0` (unshaped: TCP as fast as the
// machine allows, far above what throttled layers do). As root, a lab that did
// not come up fails every test (it never skips there). A test that reshapes
// the lab (`reshape`) gets it back as the suite brought it up in TearDown, and
// one that throttles it (`throttle`) gets it unthrottled.
// Derived readies each test in SetUpLab(), which runs only once the lab is
// ready; a Derived TearDown calls this one first.
template <class Derived>
class LabSuite : public ::testing::Test {
 public:
  static std::vector<std::string> lab_up_options() { return {"--rate", "0"}; }

 protected:
  // Per test, after the lab is found ready (ASSERTs allowed).
  virtual void SetUpLab() {}

  static void SetUpTestSuite() {
    if (geteuid() != 0) return;
    std::vector<std::string> args{"lab", "up"};
    for (const std::string& o : Derived::lab_up_options()) args.push_back(o);
    RunResult r = chokepoint(args, 300);
    up_ok_ = r.exit_code == 0;
    up_error_ = r.err + r.out;
  }
  static void TearDownTestSuite() {
    if (geteuid() == 0) chokepoint({"lab", "down"}, 300);
  }
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "the lab needs root";
    ASSERT_TRUE(up_ok_) << "lab up failed: " << up_error_;
    SetUpLab();
  }
  void TearDown() override {
    if (throttled_ && up_ok_) chokepoint({"lab", "throttle", "--clear"}, 120);
    if (!reshaped_ || !up_ok_) return;
    std::vector<std::string> args{"lab", "up"};
    for (const std::string& o : Derived::lab_up_options()) args.push_back(o);
    RunResult r = chokepoint(args, 300);
    EXPECT_EQ(r.exit_code, 0) << "restoring the suite's lab: " << r.err;
  }
  // Whether the test can go on after SetUp (the lab is up, nothing skipped).
  bool ready() const { return up_ok_ && !IsSkipped() && !HasFatalFailure(); }
  static bool lab_is_up() { return up_ok_; }

  // `lab up <options>` for this test alone (it re-applies in place).
  void reshape(std::vector<std::string> options) {
    reshaped_ = true;
    options.insert(options.begin(), {"lab", "up"});
    RunResult r = chokepoint(options, 300);
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  }
  // `lab throttle <args>` for this test alone (TearDown clears every throttle).
  void throttle(std::vector<std::string> args) {
    throttled_ = true;
    args.insert(args.begin(), {"lab", "throttle"});
    RunResult r = chokepoint(args, 120);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

 private:
  static inline bool up_ok_ = false;
  static inline std::string up_error_;
  bool reshaped_ = false;
  bool throttled_ = false;
};

// A LabSuite whose tests judge diagnoses of the lab by their JSON reports.
template <class Derived>
class VerdictSuite : public LabSuite<Derived> {
 protected:
  void SetUpLab() override { ASSERT_NO_THROW(lab_ = lab_status()); }

  // The plan section of the lab's `proto` share over `medium` ("ram" | "disk").
  std::string share(const std::string& proto, const std::string& medium) const {
    return lab_.plan_section(proto + "-" + medium, proto, medium);
  }
  static boost::json::object diagnose(const std::string& plan) { return diagnose_lab_report(plan); }
  static const boost::json::object* finding(const boost::json::object& doc,
                                            const std::string& path) {
    return verdict_finding(doc, path);
  }
  static std::string str(const boost::json::object& o, const char* key) {
    return text_field(o, key);
  }
  // diagnose with the disk stage off, `tcp_count` TCP samples each way, and
  // `count` files of `size` ("100MB") through each share of `shares` (plan
  // sections).
  static boost::json::object diagnose_shares(int tcp_count, const std::string& size, int count,
                                             const std::string& shares) {
    return diagnose("[disk]\nenabled = no\n[tcp]\ncount = " + std::to_string(tcp_count) +
                    "\n[protocol]\nsizes = " + size + "\ncount = " + std::to_string(count) + "\n" +
                    shares);
  }
  // Whether `f` is a finding naming `layer` capped by the row (or "link")
  // `cap`; on failure, what it is.
  static ::testing::AssertionResult names_cap(const boost::json::object* f,
                                              const std::string& layer, const std::string& cap) {
    if (f == nullptr) return ::testing::AssertionFailure() << "no finding";
    if (str(*f, "layer") != layer || str(*f, "cap") != cap)
      return ::testing::AssertionFailure()
             << str(*f, "layer") << " capped by " << str(*f, "cap") << ": " << str(*f, "text");
    return ::testing::AssertionSuccess();
  }

  LabStatus lab_;
};

}  // namespace cp::itest
