// The fault suite on the lab (real sshd, agents deployed over SSH, vsftpd and
// smbd): SIGKILL and SIGSTOP of each agent at a disk, a TCP and a protocol
// stage, Ctrl-C while an agent is stopped, an agent's SSH session killed, the
// FTP server stopped mid-stage. Each case asserts the exit code, the run
// status, that completed samples are kept, the database's integrity, that no
// chokepoint-run-* is left on either host and no agent process runs after
// the next run, and that the next run succeeds.
//
// It brings up the tests' own lab instance ($CHOKEPOINT_TEST_LAB_INSTANCE,
// else 9: support.h), beside a user's lab.
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <chrono>
#include <functional>
#include <thread>

#include "core/clock.h"
#include "lab/lab.h"
#include "lab/layout.h"
#include "lab/sys.h"
#include "support.h"

namespace cp::itest {
namespace {

namespace json = boost::json;

struct Host {
  std::string netns, ssh_alias, ram_dir, disk_dir;
};

struct LabInfo {
  std::string ssh_config;
  Host server, client;
  std::string ftp_disk_url, ftp_disk_dir, smb_ram_url, smb_ram_dir;
  std::string user, password_file;
};

void sleep_s(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

bool wait_until(const std::function<bool()>& done, double timeout_s) {
  const double deadline = monotonic_seconds() + timeout_s;
  while (monotonic_seconds() < deadline) {
    if (done()) return true;
    sleep_s(0.05);
  }
  return false;
}

class LabFaults : public LabSuite<LabFaults> {
 public:
  static void SetUpTestSuite() {
    LabSuite::SetUpTestSuite();
    if (lab_is_up()) info_ = read_info();
  }

 protected:
  // The hosts and the two shares the faults act on; empty fields when the
  // lab's status cannot be read (the tests then fail on them).
  static LabInfo read_info() {
    LabInfo info;
    LabStatus lab;
    try {
      lab = lab_status();
    } catch (const std::exception&) {
      return info;
    }
    info.ssh_config = lab.ssh_config;
    for (auto [from, to] :
         {std::pair{&lab.server, &info.server}, std::pair{&lab.client, &info.client}})
      *to = Host{from->netns, from->alias, from->ram_dir, from->disk_dir};
    if (const LabShare* s = lab.share("ftp", "disk")) {
      info.ftp_disk_url = s->url;
      info.ftp_disk_dir = s->server_dir;
    }
    if (const LabShare* s = lab.share("smb", "ram")) {
      info.smb_ram_url = s->url;
      info.smb_ram_dir = s->server_dir;
    }
    info.user = lab.share_user;
    info.password_file = lab.share_password_file;
    return info;
  }

  static RunResult on_host(const Host& h, const std::string& command) {
    return run_command({"ssh", "-F", info_.ssh_config, "-o", "BatchMode=yes", h.ssh_alias, command},
                       "", 60);
  }

  // chokepoint-run-* directories on a host, in its RAM and disk dirs and the shares.
  static int run_dirs_on(const Host& h) {
    std::string cmd = "ls -d";
    for (const auto& d : {h.ram_dir, h.disk_dir, info_.ftp_disk_dir, info_.smb_ram_dir}) {
      if (!d.empty()) cmd += " " + shell_quote(d) + "/chokepoint-run-*";
    }
    RunResult r = on_host(h, cmd + " 2>/dev/null | wc -l");
    return r.exit_code == 0 ? std::stoi(r.out) : -1;
  }

  // Agent processes running in a host's network namespace.
  static std::vector<int> agents_on(const Host& h) { return in_netns("chokepoint-agent", h); }

  // Processes whose command line holds `needle`, in a host's network
  // namespace only (other labs may run the same programs).
  static std::vector<int> in_netns(const std::string& needle, const Host& h) {
    std::vector<int> out;
    for (int pid : pids_matching(needle)) {
      if (lab::sys::process_in_netns(pid, h.netns)) out.push_back(pid);
    }
    return out;
  }

  static std::string plan(const std::string& extra) {
    const LabInfo& i = info_;
    return "[disk]\nsizes = 32MB\ncount = 3\nsettle = 0\n[tcp]\nseconds = 2\ncount = 2\n"
           "[protocol]\nsizes = 32MB\ncount = 3\n"
           "[share ftp-disk]\nurl = " +
           i.ftp_disk_url + "\nserver_dir = " + i.ftp_disk_dir +
           "\nmedium = disk\nuser = " + i.user + "\npassword_file = " + i.password_file +
           "\noptions = stall_timeout=3\n[share smb-ram]\nurl = " + i.smb_ram_url +
           "\nserver_dir = " + i.smb_ram_dir + "\nmedium = ram\nuser = " + i.user +
           "\npassword_file = " + i.password_file + "\n" + extra;
  }

  // The next run after a fault: complete, and nothing left on either host.
  void expect_clean_next_run(const TempDir& t) {
    write_file(t.file("next.ini"), plan(""));
    const std::string db = t.file("next.db");
    RunResult r =
        chokepoint({"diagnose", "--lab", "--db", db, "--plan", t.file("next.ini"), "-q"}, 900);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(query_text(db, "SELECT status FROM runs"), "complete");
    EXPECT_EQ(run_dirs_on(info_.server), 0);
    EXPECT_EQ(run_dirs_on(info_.client), 0);
    EXPECT_TRUE(wait_until([] { return agents_on(info_.server).empty(); }, 15));
    EXPECT_TRUE(wait_until([] { return agents_on(info_.client).empty(); }, 15));
  }

  static inline LabInfo info_;
};

struct Fault {
  std::string name;
  std::string stage;  // SQL condition on stages: where the fault lands
  std::string role;   // whose agent: "server" | "client"
  enum Kind { kKill, kStopUntilAbandoned, kStopThenCtrlC, kKillSshSession, kStopFtpd } kind;
  int exit_code;       // diagnose's
  std::string status;  // the run's
};

TEST_F(LabFaults, EachAgentKilledOrStoppedAtEachLayer) {
  const std::string disk = "layer = 'disk' AND location = ROLE", tcp = "layer = 'tcp'",
                    proto = "layer = 'ftp' AND location = 'disk'";
  std::vector<Fault> faults = {
      {"server stopped at disk", disk, "server", Fault::kStopUntilAbandoned, 3, "partial"},
      {"client stopped at tcp", tcp, "client", Fault::kStopUntilAbandoned, 3, "partial"},
      {"client stopped at ftp", proto, "client", Fault::kStopUntilAbandoned, 3, "partial"},
      {"server stopped, then Ctrl-C", tcp, "server", Fault::kStopThenCtrlC, 130, "interrupted"},
      {"client's SSH session killed", tcp, "client", Fault::kKillSshSession, 3, "partial"},
      {"vsftpd stopped mid-stage", proto, "server", Fault::kStopFtpd, 3, "partial"},
  };
  // And each end's agent killed at each layer.
  for (const auto& [layer, stage] :
       {std::pair<std::string, std::string>{"disk", disk}, {"tcp", tcp}, {"ftp", proto}})
    for (const std::string role : {"server", "client"})
      faults.push_back({role + " killed at " + layer, stage, role, Fault::kKill, 3, "partial"});
  for (const Fault& f : faults) {
    SCOPED_TRACE(f.name);
    TempDir t;
    write_file(t.file("plan.ini"), plan("[timeouts]\nsilence = 4s\n"));
    const std::string db = t.file("runs.db");
    // The tests' own instance, whatever an earlier test left in the environment.
    setenv(lab::kInstanceEnv, std::to_string(lab_instance()).c_str(), 1);
    Child c({CHOKEPOINT_BIN, "diagnose", "--lab", "--db", db, "--plan", t.file("plan.ini"), "-q"});
    std::string where = f.stage;
    if (auto at = where.find("ROLE"); at != std::string::npos)
      where.replace(at, 4, "'" + f.role + "'");
    // The fault lands once the stage has stored its first sample.
    ASSERT_TRUE(wait_until(
        [&] {
          try {
            return query_int(db,
                             "SELECT count(*) FROM samples s JOIN stages g ON s.stage_id = "
                             "g.id WHERE g." +
                                 where) >= 1;
          } catch (const std::exception&) {
            return false;
          }
        },
        300));
    const Host& h = f.role == "server" ? info_.server : info_.client;
    std::vector<int> agents = agents_on(h);
    ASSERT_EQ(agents.size(), 1u);
    const int agent = agents[0];
    int stopped = 0;
    double took = 0;
    switch (f.kind) {
      case Fault::kKill:
        ::kill(agent, SIGKILL);
        break;
      case Fault::kStopUntilAbandoned:
        ::kill(agent, SIGSTOP);
        stopped = agent;
        break;
      case Fault::kStopThenCtrlC: {
        ::kill(agent, SIGSTOP);
        stopped = agent;
        sleep_s(0.5);
        const double sent = monotonic_seconds();
        c.kill(SIGINT);
        c.wait(60);
        took = monotonic_seconds() - sent;
        EXPECT_LT(took, 2.0);
        break;
      }
      case Fault::kKillSshSession: {
        // The agent's parent: the sshd process serving its channel.
        RunResult pp = run_command({"ps", "-o", "ppid=", "-p", std::to_string(agent)}, "", 10);
        ::kill(std::stoi(pp.out), SIGKILL);
        break;
      }
      case Fault::kStopFtpd:
        for (int pid : in_netns("vsftpd", info_.server)) ::kill(pid, SIGSTOP);
        sleep_s(8);  // past the share's stall_timeout (3 s)
        for (int pid : in_netns("vsftpd", info_.server)) ::kill(pid, SIGCONT);
        break;
    }
    const int rc = c.wait(900);
    if (stopped) ::kill(stopped, SIGCONT);  // it wakes to a closed channel and cleans up
    EXPECT_EQ(rc, f.exit_code);
    EXPECT_EQ(query_text(db, "SELECT status FROM runs"), f.status);
    EXPECT_GE(query_int(db, "SELECT count(*) FROM samples WHERE error = ''"), 1);
    EXPECT_EQ(query_text(db, "PRAGMA integrity_check"), "ok");
    EXPECT_TRUE(wait_until([&] { return !alive(agent); }, 30));
    expect_clean_next_run(t);
  }
}

}  // namespace
}  // namespace cp::itest
