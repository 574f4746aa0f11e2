// A second local user on the lab's server host (root tests): it plants FIFOs,
// links to /dev/zero and to a root-owned file, and forged owner records of a
// gone agent in the server's directories (its RAM and disk dirs and the
// shares' server_dirs, opened 01777 for the test as /dev/shm and /var/tmp
// are), then `chokepoint clean` and a short `diagnose --lab` run. What must
// hold: both end with exit code 0 in bounded time, every planted entry is
// still there and `clean --json` reports each with its refusal code, the
// planted link's target keeps its checksum, and no agent process is left.
//
// It uses the tests' own lab instance ($CHOKEPOINT_TEST_LAB_INSTANCE: support.h).
#include <unistd.h>

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "core/clock.h"
#include "core/process.h"
#include "lab/sys.h"
#include "support.h"

namespace cp::itest {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

// The planted entries of one directory and the refusal `clean` must report.
const std::map<std::string, std::string> kPlanted = {
    {"chokepoint-run-sec-fifo", "foreign_owner"},
    {"chokepoint-run-sec-zero", "foreign_owner"},
    {"chokepoint-run-sec-forged", "foreign_owner"},
    {"chokepoint-run-sec-link", "not_a_directory"},
};

class SecurityLabFiles : public LabSuite<SecurityLabFiles> {
 protected:
  void SetUpLab() override {
    lab_ = lab_status();
    user_ = "cpsec" + std::to_string(lab_instance());
    if (!lab::sys::find_user(user_)) {
      const RunResult r =
          run_command({"useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                       "--comment", "chokepoint security test", user_},
                      "", 30);
      ASSERT_EQ(r.exit_code, 0) << r.err;
      created_user_ = true;
    }
    // The server's directories, open to every user with the sticky bit (as
    // /dev/shm and /var/tmp are) while the test runs.
    std::set<std::string> dirs{lab_.server.ram_dir, lab_.server.disk_dir};
    for (const LabShare& s : lab_.shares) {
      if (!s.server_dir.empty()) dirs.insert(s.server_dir);
    }
    // The host's own mounts (its disk, its tmpfs) are seen from inside it: all
    // file work goes through its sshd.
    for (const std::string& d : dirs) {
      const RunResult st = on_server("stat -c %a " + shell_quote(d));
      ASSERT_EQ(st.exit_code, 0) << d << ": " << st.err;
      modes_[d] = st.out.substr(0, st.out.find('\n'));
      ASSERT_EQ(on_server("chmod 1777 " + shell_quote(d)).exit_code, 0) << d;
      dirs_.push_back(d);
    }
    // The target of the planted links: a root-owned file outside every run dir.
    victim_dir_ = "/tmp/chokepoint-sec-victim-" + std::to_string(lab_instance());
    victim_ = victim_dir_ + "/victim";
    ASSERT_EQ(on_server("rm -rf " + shell_quote(victim_dir_) + " && mkdir -m 700 " +
                        shell_quote(victim_dir_) + " && echo 'root file: hands off' > " +
                        shell_quote(victim_))
                  .exit_code,
              0);
    victim_sum_ = victim_sum();
    ASSERT_FALSE(victim_sum_.empty());
  }
  RunResult on_server(const std::string& command) {
    return on_lab_host(lab_.server.alias, command, 120);
  }
  std::string victim_sum() {
    const RunResult r = on_server("sha256sum " + shell_quote(victim_));
    return r.exit_code == 0 ? r.out.substr(0, 64) : std::string();
  }
  void TearDown() override {
    for (const std::string& d : dirs_) {
      std::string cmd = "cd " + shell_quote(d) + " && rm -rf";
      for (const auto& [name, code] : kPlanted) cmd += " " + name;
      on_server(cmd + "; chmod " + modes_[d] + " " + shell_quote(d));
    }
    if (!victim_dir_.empty()) on_server("rm -rf " + shell_quote(victim_dir_));
    if (created_user_) run_command({"userdel", user_}, "", 30);
    LabSuite::TearDown();
  }

  // Runs `script` as the second user; its exit code.
  int as_user(const std::string& script) {
    const RunResult r = on_server("runuser -u " + user_ + " -- sh -c " + shell_quote(script));
    EXPECT_EQ(r.exit_code, 0) << script << ": " << r.err;
    return r.exit_code;
  }

  void plant(const std::string& d) {
    // A record a gone agent of this host would have written (a pid that ended).
    Child gone({"true"});
    ASSERT_EQ(gone.wait(10), 0);
    std::error_code ec;
    const std::string record =
        json::serialize(json::object{{"pid", gone.pid()},
                                     {"start_ticks", 1},
                                     {"boot_id", boot_id()},
                                     {"host", lab_.server.hostname},
                                     {"pid_ns", fs::read_symlink("/proc/self/ns/pid", ec).string()},
                                     {"run", 1}});
    const std::string q = shell_quote(d);
    ASSERT_EQ(as_user("set -e; cd " + q +
                      "; mkdir chokepoint-run-sec-fifo chokepoint-run-sec-zero "
                      "chokepoint-run-sec-forged"
                      "; mkfifo chokepoint-run-sec-fifo/.chokepoint-owner"
                      "; ln -s /dev/zero chokepoint-run-sec-zero/.chokepoint-owner"
                      "; printf '%s' " +
                      shell_quote(record) +
                      " > chokepoint-run-sec-forged/.chokepoint-owner"
                      "; ln -s " +
                      shell_quote(victim_) + " chokepoint-run-sec-forged/x.dat; ln -s " +
                      shell_quote(victim_dir_) +
                      " chokepoint-run-sec-link"
                      "; touch -h -d '3 hours ago' chokepoint-run-sec-*"),
              0);
  }

  // Every planted entry is still there (test -h / -e), as the user left it,
  // and the link's target keeps its bytes.
  void expect_planted_intact() {
    for (const std::string& d : dirs_) {
      for (const auto& [name, code] : kPlanted) {
        const std::string p = shell_quote(d + "/" + name);
        EXPECT_EQ(on_server("test -h " + p + " || test -e " + p).exit_code, 0)
            << d << "/" << name << " removed";
      }
      EXPECT_EQ(
          on_server("test -p " + shell_quote(d + "/chokepoint-run-sec-fifo/.chokepoint-owner"))
              .exit_code,
          0);
    }
    EXPECT_EQ(victim_sum(), victim_sum_);
  }

  bool no_agent_on_server() {
    for (int pid : pids_matching("chokepoint-agent")) {
      if (lab::sys::process_in_netns(pid, lab_.server.netns)) return false;
    }
    return true;
  }
  bool wait_no_agent(double timeout_s) {
    const double deadline = monotonic_seconds() + timeout_s;
    while (monotonic_seconds() < deadline) {
      if (no_agent_on_server()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return no_agent_on_server();
  }

  LabStatus lab_;
  std::string user_;
  bool created_user_ = false;
  std::vector<std::string> dirs_;
  std::map<std::string, std::string> modes_;  // octal, as stat -c %a printed it
  std::string victim_dir_, victim_, victim_sum_;
};

TEST_F(SecurityLabFiles, PlantedRunDirsAreLeftAloneByCleanAndDiagnose) {
  if (!ready()) return;
  for (const std::string& d : dirs_) plant(d);
  if (HasFatalFailure()) return;

  // clean: exit 0 (before: it hung on the FIFO for good), each planted entry
  // kept with its refusal code, none removed.
  std::vector<std::string> args{"clean", lab_.server.alias, "--ssh-config", lab_.ssh_config,
                                "--json"};
  for (const std::string& d : dirs_) {
    args.push_back("--dir");
    args.push_back(d);
  }
  const RunResult c = chokepoint(args, 180);
  ASSERT_EQ(c.exit_code, 0) << c.err << c.out;
  const json::object host = json::parse(c.out).at("hosts").as_array().at(0).as_object();
  ASSERT_FALSE(host.contains("error")) << c.out;
  std::map<std::string, std::string> refused;  // path -> code
  for (const auto& k : host.at("kept").as_array()) {
    const auto& o = k.as_object();
    if (o.contains("refused"))
      refused[std::string(o.at("path").as_string())] = o.at("refused").as_string();
  }
  for (const auto& r : host.at("removed").as_array()) {
    const std::string path(r.at("path").as_string());
    EXPECT_EQ(path.find("chokepoint-run-sec-"), std::string::npos) << "removed " << path;
  }
  for (const std::string& d : dirs_) {
    for (const auto& [name, code] : kPlanted) {
      EXPECT_EQ(refused[d + "/" + name], code) << d << "/" << name;
    }
  }
  expect_planted_intact();
  EXPECT_TRUE(wait_no_agent(15));

  // A short diagnose over the lab's RAM shares: each agent's prepare sweeps
  // the same directories; the run completes (exit 0) and leaves them alone.
  std::string plan =
      "[disk]\nsizes = 8MiB\ncount = 1\nsettle = 0\n[tcp]\nseconds = 1\ncount = 1\n"
      "[protocol]\nsizes = 4MiB\ncount = 1\n";
  for (const char* protocol : {"ftp", "smb"}) {
    plan += lab_.plan_section(std::string(protocol) + "-ram", protocol, "ram");
  }
  TempDir t;
  const std::string db = t.file("runs.db");
  const RunResult r = diagnose_lab(t, plan, db);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(query_text(db, "SELECT status FROM runs"), "complete");
  expect_planted_intact();
  EXPECT_TRUE(wait_no_agent(15));
}

}  // namespace
}  // namespace cp::itest
