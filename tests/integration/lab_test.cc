// diagnose against the built-in lab: real sshd in two network namespaces,
// the agent deployed over libssh, disks on loop devices, tc shaping.
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <chrono>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <thread>

#include "core/clock.h"
#include "support.h"

namespace cp::itest {
namespace {

namespace json = boost::json;

class Lab : public LabSuite<Lab> {
 public:
  static std::vector<std::string> lab_up_options() { return {}; }

 protected:
  static RunResult on_host(const std::string& host, const std::string& command) {
    return on_lab_host(host, command);
  }
};

std::string plan_text(const std::string& extra) {
  // One stream: the sample counts below do not depend on the CPU (streams = auto
  // adds samples where one stream is CPU-bound).
  return "[disk]\nsizes = 10MB, 32MB\ncount = 3\nsettle = 500ms\n[tcp]\nseconds = 2\ncount = 2\n"
         "streams = 1\n"
         "[protocol]\nsizes = 10MB\ncount = 2\n[files]\ncount = 200\n" +
         extra;
}

TEST_F(Lab, DiagnoseThroughRealSshd) {
  TempDir t;
  write_file(t.file("plan.ini"), plan_text(""));
  const std::string db = t.file("runs.db");
  // A fresh agent cache on the hosts (root's home is shared by both), so both
  // agents are uploaded.
  std::filesystem::remove_all("/root/.cache/chokepoint");
  RunResult r = chokepoint({"diagnose", "--lab", "--db", db, "--plan", t.file("plan.ini"),
                            "--label", "lab-e2e", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The server end got the static server agent, the client end the full
  // one (it runs the protocol clients): both uploaded into root's cache.
  std::set<std::string> uploaded;
  for (const auto& e : std::filesystem::directory_iterator("/root/.cache/chokepoint")) {
    const std::string name = e.path().filename().string();
    uploaded.insert(name.substr(0, name.rfind('-')));
  }
  EXPECT_EQ(uploaded, (std::set<std::string>{"chokepoint-agent", "chokepoint-agent-server"}));

  EXPECT_EQ(query_text(db, "SELECT status FROM runs"), "complete");
  EXPECT_EQ(query_text(db, "SELECT server FROM runs"), lab_names().server_netns);
  // Disk on each end (and the server's synchronous writes of its smallest
  // files), TCP each way, and the lab's six shares (ftp, smb and nfs, over RAM
  // and from disk).
  // Small files on each end's disk and over each of the six shares: two
  // passes (sequential, random) of four phases each.
  EXPECT_EQ(query_int(db, "SELECT count(*) FROM stages WHERE status = 'complete'"), 12 + 6);
  EXPECT_EQ(query_int(db, "SELECT count(*) FROM samples"),
            2 * 2 * 2 * 3 + 3 + 2 * 2 + 6 * 2 * 2 + 2 * 2 * 4 + 6 * 2 * 4);
  EXPECT_EQ(query_int(db, "SELECT count(*) FROM samples WHERE error != ''"), 0);
  EXPECT_EQ(query_int(db,
                      "SELECT count(DISTINCT layer || ':' || location) FROM stages "
                      "WHERE layer IN ('ftp', 'smb', 'nfs')"),
            6);
  // Facts as seen inside each host.
  auto doc = json::parse(r.out).as_object();
  for (const auto& h : doc.at("hosts").as_array()) {
    const auto& f = h.at("facts").as_object();
    const std::string role(h.at("role").as_string());
    EXPECT_EQ(f.at("hostname").as_string(),
              role == "server" ? lab_names().server_netns : lab_names().client_netns);
    EXPECT_EQ(f.at("disk_dir").at("fs_type").as_string(), "ext4");
    EXPECT_EQ(f.at("ram_dir").at("fs_type").as_string(), "tmpfs");
    EXPECT_FALSE(f.at("disk_dir").at("device").is_null()) << json::serialize(f);
    EXPECT_EQ(f.at("net").at("name").as_string(), role == "server" ? "cpd-s" : "cpd-c");
    EXPECT_EQ(f.at("agent").at("role").as_string(), role == "server" ? "server" : "full");
    // The agent streams with bounded buffers: its peak RSS stays small. Measured
    // with this plan: the client agent peaked at 36.5 MB with the ftp and smb
    // shares alone, 30 MB with the nfs ones alone (4 requests of 1 MiB in
    // flight by default).
    EXPECT_LT(f.at("agent_max_rss_kb").to_number<int64_t>(), 48 * 1024) << role;
  }
  // Every TCP sample carries the sender's tcp_info and both ends' CPU.
  for (const auto& st : doc.at("stages").as_array()) {
    if (st.at("layer").as_string() != "tcp") continue;
    for (const auto& s : st.at("samples").as_array()) {
      EXPECT_TRUE(s.at("details").at("tcp_info").at("available").as_bool());
      EXPECT_TRUE(s.at("cpu").as_object().contains("server"));
      EXPECT_TRUE(s.at("cpu").as_object().contains("client"));
    }
  }
  // Every small-file sample: its phase's ops in the details (the figure is
  // ops/s), on the lab's ext4 disk, with its latency and its end's CPU; the
  // ladder shows a row per end, phase and order in ops/s.
  // Over a share, each phase's sample carries both ends' CPU, the share's
  // protocol and the filesystem of its directory on the server; a disk
  // share's reads come after the server dropped the files from its cache.
  int files_samples = 0, share_samples = 0;
  std::set<std::string> shares_seen;
  for (const auto& st : doc.at("stages").as_array()) {
    if (st.at("layer").as_string() != "files") continue;
    const std::string where(st.at("where").as_string());
    const bool share = where == "ram" || where == "disk";
    for (const auto& s : st.at("samples").as_array()) {
      const auto& d = s.at("details").as_object();
      EXPECT_EQ(s.at("error").as_string(), "") << where;
      EXPECT_EQ(d.at("ops").to_number<int64_t>(), 200) << where;
      EXPECT_EQ(d.at("fs_type").as_string(), where == "ram" ? "tmpfs" : "ext4") << where;
      EXPECT_GT(d.at("latency_us").at("median").to_number<double>(), 0) << where;
      EXPECT_GT(s.at("seconds").to_number<double>(), 0);
      if (share) {
        EXPECT_TRUE(s.at("cpu").as_object().contains("server")) << text_field(d, "share");
        EXPECT_TRUE(s.at("cpu").as_object().contains("client")) << text_field(d, "share");
        EXPECT_FALSE(s.at("cache_possible").as_bool()) << text_field(d, "share");
        shares_seen.insert(text_field(d, "driver") + ":" + where);
        ++share_samples;
      } else {
        EXPECT_TRUE(s.at("cpu").as_object().contains(where));
        ++files_samples;
      }
    }
  }
  EXPECT_EQ(files_samples, 16);
  EXPECT_EQ(share_samples, 6 * 2 * 4);
  EXPECT_EQ(shares_seen, (std::set<std::string>{"ftp:ram", "ftp:disk", "smb:ram", "smb:disk",
                                                "nfs:ram", "nfs:disk"}));
  std::set<std::string> ops_rows;
  for (const auto& row : doc.at("ladder").as_array()) {
    if (row.at("unit").as_string() == "ops/s")
      ops_rows.insert(std::string(row.at("key").as_string()));
  }
  EXPECT_EQ(ops_rows.size(), 16u + 6 * 8);
  EXPECT_TRUE(ops_rows.count("files:server:create:4096"));
  EXPECT_TRUE(ops_rows.count("files:client:random-delete:4096"));
  EXPECT_TRUE(ops_rows.count("files:smb:disk:create:4096"));
  EXPECT_TRUE(ops_rows.count("files:nfs:ram:random-read:4096"));
  // Each share's create and read have a finding of the small-file chain.
  for (const char* share : {"ftp ram", "ftp disk", "smb ram", "smb disk", "nfs ram", "nfs disk"}) {
    for (const char* op : {"create", "read"}) {
      const std::string path = std::string(share) + " files " + op;
      const json::object* f = verdict_finding(doc, path);
      ASSERT_NE(f, nullptr) << path;
      EXPECT_EQ(text_field(*f, "rule").rfind("files.", 0), 0u)
          << path << ": " << text_field(*f, "rule");
    }
  }
  EXPECT_FALSE(doc.at("verdict").at("headline").as_string().empty());

  // Nothing left behind on either host.
  for (const std::string& host : {lab_names().server_netns, lab_names().client_netns}) {
    RunResult ls = on_host(host, "ls -d " + lab_dir() + "/*/ram/* " + lab_dir() +
                                     "/*/disk/chokepoint-run-* 2>/dev/null; true");
    EXPECT_EQ(ls.out.find("chokepoint-run-"), std::string::npos) << host << ": " << ls.out;
  }
  EXPECT_TRUE(lab_pids_matching("chokepoint-agent").empty());

  // show reads the database alone and prints the same verdict: the headline in
  // brief by default, with its evidence under --explain.
  RunResult show = chokepoint({"show", "lab-e2e", "--db", db});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find(std::string(doc.at("verdict").at("headline_brief").as_string())),
            std::string::npos);
  RunResult explain = chokepoint({"show", "lab-e2e", "--db", db, "--explain"});
  ASSERT_EQ(explain.exit_code, 0) << explain.err;
  EXPECT_NE(explain.out.find(std::string(doc.at("verdict").at("headline").as_string())),
            std::string::npos);
}

TEST_F(Lab, ShapedLinkVerdictNamesTheNetwork) {
  ASSERT_NO_FATAL_FAILURE(reshape({"--rate", "200mbit"}));
  TempDir t;
  write_file(t.file("plan.ini"),
             "[disk]\nsizes = 10MB\ncount = 2\nsettle = 0\n[tcp]\nseconds = 3\ncount = 3\n"
             "[protocol]\nenabled = no\n");
  const std::string db = t.file("runs.db");
  RunResult r =
      chokepoint({"diagnose", "--lab", "--db", db, "--plan", t.file("plan.ini"), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = json::parse(r.out).as_object();
  EXPECT_DOUBLE_EQ(doc.at("link").at("nominal_bits_per_s").as_double(), 200e6);
  for (const auto& row : doc.at("ladder").as_array()) {
    if (row.at("layer").as_string() != "tcp") continue;
    // TCP payload through tbf at MTU 1500: ~95.7 % of the rate (IP and TCP headers;
    // ../shared/docs/lab-facts.md).
    const double bits = row.at("median_bytes_per_s").as_double() * 8;
    EXPECT_NEAR(bits, 0.957 * 200e6, 0.05 * 200e6) << row.at("label").as_string();
  }
  bool named = false;
  for (const auto& f : doc.at("verdict").at("findings").as_array()) {
    if (f.at("path").as_string() == "server -> client") {
      EXPECT_EQ(f.at("layer").as_string(), "network") << f.at("text").as_string();
      named = true;
    }
  }
  EXPECT_TRUE(named);
}

TEST_F(Lab, SigkillMidRunKeepsSamplesAndLeavesNothing) {
  TempDir t;
  // Enough work that the kill lands mid-stage.
  write_file(t.file("plan.ini"), "[disk]\nsizes = 32MB\ncount = 40\nsettle = 0\n");
  const std::string db = t.file("runs.db");
  Child c({CHOKEPOINT_BIN, "diagnose", "--lab", "--db", db, "--plan", t.file("plan.ini"), "-q"});
  int64_t samples = 0;
  const double deadline = monotonic_seconds() + 120;
  while (monotonic_seconds() < deadline) {
    if (std::filesystem::exists(db)) {
      try {
        samples = query_int(db, "SELECT count(*) FROM samples");
      } catch (const std::exception&) {
      }
    }
    if (samples >= 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_GE(samples, 3) << "the run produced no samples in time";
  c.kill(SIGKILL);
  ASSERT_EQ(c.wait(10), 128 + SIGKILL);

  // The agents notice their channels closing and clean up.
  const double gone_by = monotonic_seconds() + 30;
  while (!lab_pids_matching("chokepoint-agent").empty() && monotonic_seconds() < gone_by) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_TRUE(lab_pids_matching("chokepoint-agent").empty());
  for (const std::string& host : {lab_names().server_netns, lab_names().client_netns}) {
    RunResult ls = on_host(host, "ls -d " + lab_dir() + "/*/ram/* " + lab_dir() +
                                     "/*/disk/chokepoint-run-* 2>/dev/null; true");
    EXPECT_EQ(ls.out.find("chokepoint-run-"), std::string::npos) << host << ": " << ls.out;
  }
  // The samples measured before the kill are intact, and the next command
  // that writes the database (diagnose, tune, prune; `history` only reads)
  // marks the run interrupted.
  const int64_t kept =
      query_int(db, "SELECT count(*) FROM samples WHERE bytes > 0 AND seconds > 0");
  EXPECT_GE(kept, samples);
  RunResult hist = chokepoint({"history", "--db", db, "--json"});
  ASSERT_EQ(hist.exit_code, 0) << hist.err;
  RunResult prune = chokepoint({"prune", "--keep", "10", "--db", db});
  ASSERT_EQ(prune.exit_code, 0) << prune.err;
  EXPECT_EQ(query_text(db, "SELECT status FROM runs"), "interrupted");
}

TEST_F(Lab, UnknownHostKeyIsRefusedUntilAccepted) {
  TempDir t;
  // The lab's ssh_config, but with an empty known_hosts.
  RunResult cfg = run_command(
      {"sed", "s|UserKnownHostsFile .*|UserKnownHostsFile " + t.file("known_hosts") + "|",
       lab_dir() + "/ssh_config"});
  ASSERT_EQ(cfg.exit_code, 0);
  write_file(t.file("ssh_config"), cfg.out);
  write_file(t.file("known_hosts"), "");
  write_file(t.file("plan.ini"),
             "[disk]\nenabled = no\n[tcp]\nseconds = 500ms\ncount = 1\n"
             "data_address = " +
                 lab_names().server_data_address + "\n");
  const std::vector<std::string> base{"diagnose",
                                      "--server",
                                      lab_names().server_netns,
                                      "--client",
                                      lab_names().client_netns,
                                      "--ssh-config",
                                      t.file("ssh_config"),
                                      "--db",
                                      t.file("runs.db"),
                                      "--plan",
                                      t.file("plan.ini")};
  RunResult refused = chokepoint(base);
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("is not in known_hosts"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("--accept-new-host-keys"), std::string::npos) << refused.err;
  std::vector<std::string> accept = base;
  accept.push_back("--accept-new-host-keys");
  RunResult ok = chokepoint(accept);
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  RunResult lines = run_command({"wc", "-l", t.file("known_hosts")});
  EXPECT_EQ(lines.out.substr(0, 1), "2") << lines.out;
}

// `lab up --delay 5ms` (netem, or the delay line here): the TCP stage's own
// tcp_info sees a smoothed RTT of at least twice the delay, each way; the
// path shaping leaves the hosts' own interfaces unshaped in their facts.
TEST_F(Lab, DelayShowsInTheTcpStagesRtt) {
  ASSERT_NO_FATAL_FAILURE(reshape({"--delay", "5ms", "--path-rate", "1gbit"}));
  RunResult st = chokepoint({"lab", "status", "--json"});
  EXPECT_EQ(st.exit_code, 0) << st.err;
  const json::value status = json::parse(st.out);
  EXPECT_DOUBLE_EQ(status.at("path").at("delay_s").as_double(), 0.005);
  EXPECT_NE(status.at("path").at("delay_mode").as_string(), "none");
  TempDir t;
  write_file(t.file("plan.ini"),
             "[disk]\nenabled = no\n[tcp]\nseconds = 2\ncount = 2\n[protocol]\nenabled = no\n");
  RunResult r = chokepoint({"diagnose", "--lab", "--db", t.file("runs.db"), "--plan",
                            t.file("plan.ini"), "--json", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json::value doc = json::parse(r.out);
  int samples = 0;
  for (const auto& stage : doc.at("stages").as_array()) {
    if (stage.at("layer").as_string() != "tcp") continue;
    for (const auto& s : stage.at("samples").as_array()) {
      const auto& info = s.at("details").at("tcp_info");
      ASSERT_TRUE(info.at("available").as_bool());
      EXPECT_GE(info.at("rtt_us").to_number<int64_t>(), 2 * 5000) << json::serialize(info);
      ++samples;
    }
  }
  EXPECT_GT(samples, 0);
  for (const auto& h : doc.at("hosts").as_array()) {
    const auto& net = h.at("facts").at("net");
    // The hosts' own data interfaces carry no tbf: the path does the shaping.
    EXPECT_TRUE(net.at("shaped_rate_bit").is_null()) << json::serialize(net);
    EXPECT_EQ(net.at("mtu").to_number<int64_t>(), 1500) << json::serialize(net);
  }
}

// [tcp] streams = 2 over real sshd: each sample of the two-stream series
// records both streams' figures, their sum is the sample's, and the ladder
// has the two-stream row beside the one-stream row. Shaped to 200 Mbit/s,
// both fill the link (one stream does here even with every core busy: at 1
// Gbit/s, under a load average of 12 on 2 cores, one stream made 94 MB/s and
// two 87), so the total is at least one stream's within the samples' noise (2 %).
TEST_F(Lab, TcpStreamsRecordEachStreamAndATotalAtLeastOneStreams) {
  ASSERT_NO_FATAL_FAILURE(reshape({"--rate", "200mbit"}));
  TempDir t;
  RunResult r = diagnose_lab(t,
                             "[disk]\nenabled = no\n[tcp]\nseconds = 2\ncount = 3\nstreams = "
                             "2\n[protocol]\nenabled = no\n",
                             t.file("runs.db"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json::object doc = json::parse(r.out).as_object();
  for (const char* dir : {"server->client", "client->server"}) {
    int two = 0;
    for (const auto& stage : doc.at("stages").as_array()) {
      if (stage.at("layer").as_string() != "tcp" || stage.at("where").as_string() != dir) {
        continue;
      }
      for (const auto& s : stage.at("samples").as_array()) {
        const json::object& d = s.at("details").as_object();
        if (!d.contains("streams")) continue;
        const json::array& each = d.at("streams").as_array();
        ASSERT_EQ(each.size(), 2u) << json::serialize(d);
        int64_t sum = 0;
        for (const auto& e : each) {
          EXPECT_GT(e.at("bytes").to_number<int64_t>(), 0);
          EXPECT_TRUE(e.at("tcp_info").at("available").as_bool());
          sum += e.at("bytes").to_number<int64_t>();
        }
        EXPECT_EQ(sum, s.at("bytes").to_number<int64_t>());
        ++two;
      }
    }
    EXPECT_EQ(two, 3) << dir;
    const json::object* one = ladder_row(doc, std::string("tcp:") + dir + ":send");
    const json::object* total = ladder_row(doc, std::string("tcp:") + dir + ":send:2");
    ASSERT_TRUE(one && total) << dir;
    EXPECT_EQ(one->at("streams").to_number<int64_t>(), 1);
    EXPECT_EQ(total->at("streams").to_number<int64_t>(), 2);
    EXPECT_EQ(total->at("n").to_number<int64_t>(), 3);
    EXPECT_GE(total->at("median_bytes_per_s").as_double(),
              0.98 * one->at("median_bytes_per_s").as_double())
        << dir;
  }
}

// diagnose --lab refuses a lab with a dead daemon, naming it, until `lab up`
// restarts it; `lab status` says so in its exit code and JSON.
TEST_F(Lab, DiagnoseRefusesALabWithADeadDaemon) {
  RunResult st = chokepoint({"lab", "status", "--json"});
  ASSERT_EQ(st.exit_code, 0) << st.out << st.err;
  const int vsftpd =
      static_cast<int>(json::parse(st.out).at("servers").at("ftpd_pid").to_number<int64_t>());
  ASSERT_GT(vsftpd, 0);
  ASSERT_EQ(kill(vsftpd, SIGKILL), 0);
  for (int i = 0; i < 50 && kill(vsftpd, 0) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  st = chokepoint({"lab", "status", "--json"});
  EXPECT_EQ(st.exit_code, 4);  // unhealthy (README: lab status exit codes)
  const json::value doc = json::parse(st.out);
  EXPECT_FALSE(doc.at("healthy").as_bool());
  EXPECT_EQ(doc.at("down").as_array(), json::array{"vsftpd"});
  TempDir t;
  RunResult r = chokepoint({"diagnose", "--lab", "--db", t.file("runs.db"), "--json", "-q"}, 120);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("vsftpd"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("lab up"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(t.file("runs.db")));  // nothing measured
  RunResult up = chokepoint({"lab", "up"}, 300);
  ASSERT_EQ(up.exit_code, 0) << up.err;
  EXPECT_EQ(chokepoint({"lab", "status"}).exit_code, 0);
}

// With no lab up (an instance nobody brought up): status exit 3, diagnose refuses.
// An instance nobody brought up: no dir and no namespace (the one beside the
// tests' own may be another engineer's live lab).
int unused_instance() {
  for (int n = lab::kMaxInstance; n >= 1; --n) {
    if (n == lab_instance()) continue;
    const lab::InstanceNames names = lab::instance_names(n);
    if (!std::filesystem::exists(names.dir) &&
        !std::filesystem::exists("/run/netns/" + names.server_netns)) {
      return n;
    }
  }
  throw std::runtime_error("every lab instance is in use");
}

TEST_F(Lab, NoLabHasItsOwnExitCodes) {
  const int none = unused_instance();
  RunResult st = chokepoint_on(none, {"lab", "status", "--json"});
  EXPECT_EQ(st.exit_code, 3);  // no lab (README: lab status exit codes)
  EXPECT_FALSE(json::parse(st.out).at("up").as_bool());
  TempDir t;
  RunResult r = chokepoint_on(none, {"diagnose", "--lab", "--db", t.file("runs.db"), "-q"}, 120);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("lab up"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace cp::itest
