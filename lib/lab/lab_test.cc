// Integration test: brings the real lab up and down (root, label
// integration). Traffic stays inside the lab's own namespaces.
#include "lab/lab.h"

#include <dirent.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "core/process.h"
#include "lab/delay_line.h"
#include "lab/ganesha.h"
#include "lab/lab_cli.h"
#include "lab/layout.h"
#include "lab/status.h"
#include "lab/sys.h"
#include "lab/throttle.h"

namespace cp::lab {
namespace {

namespace json = boost::json;

// The tests' own lab instance, never 0 (a user's lab, which they leave alone).
const int kInstance = test_instance();
const InstanceNames kNames = instance_names(kInstance);

bool skip_reason(std::string* why) {
  if (geteuid() != 0) *why = "needs root";
  return !why->empty();
}

std::string test_dir(const char* name) {
  return fmt::format("/var/tmp/chokepoint-lab-test-{}-{}", name, getpid());
}

// The checks `down` must pass: nothing of the lab is left.
void expect_nothing_left(const std::string& dir, const std::vector<pid_t>& pids,
                         const InstanceNames& n = kNames) {
  for (const std::string* ns : {&n.server_netns, &n.client_netns, &n.switch_netns}) {
    EXPECT_FALSE(sys::netns_exists(*ns)) << *ns;
  }
  for (const std::string* link : {&n.server_mgmt_root_ifname, &n.client_mgmt_root_ifname}) {
    EXPECT_FALSE(sys::link_exists(*link)) << *link;
  }
  // No loop device backed by anything in the lab dir.
  if (DIR* d = opendir("/sys/block")) {
    while (dirent* e = readdir(d)) {
      const std::string backing = sys::loop_backing_file(e->d_name);
      EXPECT_EQ(backing.find(dir), std::string::npos) << e->d_name << " -> " << backing;
    }
    closedir(d);
  }
  // No process runs anything from the lab dir (its sshds name their config there).
  if (DIR* d = opendir("/proc")) {
    while (dirent* e = readdir(d)) {
      const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
      if (pid <= 0 || pid == getpid() || !sys::process_alive(pid)) continue;
      const std::string cmd = sys::process_cmdline(pid);
      EXPECT_EQ(cmd.find(dir), std::string::npos) << pid << ": " << cmd;
    }
    closedir(d);
  }
  for (pid_t p : pids) EXPECT_FALSE(sys::process_alive(p)) << p;
  EXPECT_FALSE(sys::exists(dir));
}

class LabTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (skip_reason(&why)) GTEST_SKIP() << why;
    dir_ = test_dir("main");
  }
  // Whatever failed above, the lab comes down.
  void TearDown() override {
    if (dir_.empty()) return;
    try {
      down(kInstance, dir_);
    } catch (const Error& e) {
      ADD_FAILURE() << "down in TearDown: " << describe(e);
    }
  }

  std::string ssh(const LabState& s, const std::string& alias, const std::string& command) {
    return run_checked({"ssh", "-F", s.ssh_config, "-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
                        alias, command},
                       {}, 60);
  }

  std::string dir_;
};

// iperf3 from the client host to a one-shot server in the server host on the data link; bit/s.
double iperf_bits_per_second(const LabState& s) {
  const std::string& addr = s.server.data_address;
  Child server({"ip", "netns", "exec", s.server.netns, "iperf3", "-s", "-1", "-B", addr});
  std::string last;
  double bps = 0;
  // The client retries until the server listens. iperf3 3.12 exits 0 even
  // when it cannot connect, with an "error" in its JSON.
  for (int attempt = 0; attempt < 50 && bps == 0; ++attempt) {
    RunResult r = run_command(
        {"ip", "netns", "exec", s.client.netns, "iperf3", "-c", addr, "-t", "5", "-O", "1", "-J"},
        {}, 60);
    last = r.out + r.err;
    boost::system::error_code ec;
    const json::value v = json::parse(r.out, ec);
    const json::value* sum = nullptr;
    if (!ec && v.is_object() && !v.as_object().contains("error")) {
      sum = v.find_pointer("/end/sum_received/bits_per_second", ec);
    }
    if (r.exit_code == 0 && sum && !ec) {
      bps = sum->to_number<double>();
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  server.kill(SIGTERM);  // by its pid (ip netns exec became iperf3)
  server.wait(5);
  if (bps == 0) ADD_FAILURE() << "iperf3 client failed: " << last;
  return bps;
}

// `lab status --json` on the test's lab, through the command line: exit code and document.
struct StatusOutcome {
  int code = -1;
  json::value doc;
};
StatusOutcome cli_status(const std::string& dir) {
  setenv(kDirEnv, dir.c_str(), 1);
  setenv(kInstanceEnv, std::to_string(kInstance).c_str(), 1);
  std::ostringstream out, err;
  StatusOutcome o;
  o.code = run_lab_command({"status", "--json"}, out, err);
  unsetenv(kDirEnv);
  unsetenv(kInstanceEnv);
  boost::system::error_code ec;
  o.doc = json::parse(out.str(), ec);
  EXPECT_FALSE(ec) << out.str() << err.str();
  return o;
}

std::vector<std::string> down_list(const json::value& doc) {
  std::vector<std::string> out;
  for (const auto& d : doc.at("down").as_array()) out.emplace_back(d.as_string());
  return out;
}

// ping's minimum round trip from the client host to the server's data
// address, seconds; -1 when no reply came back.
double ping_rtt_min_s(const LabState& s, int count = 5, int size = 56) {
  RunResult r = run_command(
      {"ip", "netns", "exec", s.client.netns, "ping", "-n", "-q", "-c", std::to_string(count), "-i",
       "0.2", "-W", "2", "-M", "do", "-s", std::to_string(size), s.server.data_address},
      {}, 60);
  // "rtt min/avg/max/mdev = 10.185/12.366/20.839/4.236 ms"
  const size_t at = r.out.find(" = ");
  if (r.exit_code != 0 || at == std::string::npos) return -1;
  return std::stod(r.out.substr(at + 3)) / 1e3;
}

LabOptions small_options() {
  LabOptions o;
  o.disk_bytes = 64ull << 20;
  o.ram_bytes = 64ull << 20;
  return o;
}

TEST_F(LabTest, UpSshShapeReshapeStatusDown) {
  LabOptions o;
  o.rate_bits = 200'000'000;
  o.disk_bytes = 256ull << 20;  // small: quick mkfs, same code path as 3 GiB
  o.ram_bytes = 64ull << 20;
  const LabState s = up(o, kInstance, dir_);
  EXPECT_EQ(s.instance, kInstance);
  EXPECT_EQ(s.server.netns, kNames.server_netns);

  std::string why;
  ASSERT_TRUE(healthy(s, &why)) << why;
  const std::optional<LabState> loaded = load(dir_);
  ASSERT_TRUE(loaded.has_value());
  EXPECT_EQ(loaded->server.sshd_pid, s.server.sshd_pid);
  EXPECT_EQ(loaded->client.loop_device, s.client.loop_device);
  EXPECT_NE(s.server.loop_device, s.client.loop_device);
  EXPECT_TRUE(sys::exists(s.ssh_config));
  EXPECT_TRUE(sys::exists(s.known_hosts));
  EXPECT_TRUE(sys::exists(s.identity));

  // SSH into each host by its alias, with the lab's own config and keys.
  EXPECT_EQ(ssh(s, s.server.alias, "hostname"), kNames.server_netns + "\n");
  EXPECT_EQ(ssh(s, s.client.alias, "hostname"), kNames.client_netns + "\n");

  // Inside each host: tmpfs ram, ext4 disk, and the two disks are different devices.
  std::string disk_dev[2];
  int i = 0;
  for (const LabHost* h : {&s.server, &s.client}) {
    EXPECT_EQ(ssh(s, h->alias, "findmnt -n -o FSTYPE -M " + h->ram_dir), "tmpfs\n");
    EXPECT_EQ(ssh(s, h->alias, "findmnt -n -o FSTYPE -M " + h->disk_dir), "ext4\n");
    EXPECT_EQ(ssh(s, h->alias, "findmnt -n -b -o SIZE -M " + h->ram_dir),
              std::to_string(64ull << 20) + "\n");
    EXPECT_EQ(ssh(s, h->alias, "findmnt -n -o SOURCE -M " + h->disk_dir), h->loop_device + "\n");
    disk_dev[i++] = ssh(s, h->alias, "stat -c %d " + h->disk_dir);
    // Outside the host the dirs are plain, empty directories.
    EXPECT_NE(run_command({"findmnt", "-M", h->ram_dir}).exit_code, 0);
    EXPECT_NE(run_command({"findmnt", "-M", h->disk_dir}).exit_code, 0);
  }
  EXPECT_NE(disk_dev[0], disk_dev[1]);

  // vsftpd and smbd serve the shares on the data address (only), as the share user.
  EXPECT_GT(s.server.ftpd_pid, 0);
  EXPECT_GT(s.server.smbd_pid, 0);
  const std::string& data = s.server.data_address;
  EXPECT_TRUE(sys::tcp_accepts_in_netns(s.client.netns, data, kFtpPort, 5));
  EXPECT_TRUE(sys::tcp_accepts_in_netns(s.client.netns, data, kSmbPort, 5));
  EXPECT_TRUE(sys::tcp_accepts_in_netns(s.client.netns, data, ganesha::kNfsPort, 5));
  EXPECT_GT(s.server.nfsd_pid, 0);
  EXPECT_FALSE(sys::tcp_accepts_in_netns(s.server.netns, s.server.mgmt_address, kSmbPort, 1));
  EXPECT_EQ(s.share_user, kNames.share_user);
  ASSERT_NE(getpwnam(s.share_user.c_str()), nullptr);
  EXPECT_TRUE(s.share_user_created);
  struct stat pw_st;
  ASSERT_EQ(stat(s.share_password_file.c_str(), &pw_st), 0);
  EXPECT_EQ(pw_st.st_mode & 0777, 0600u);
  ASSERT_EQ(s.server.shares.size(), 6u);
  for (const LabShare& sh : s.server.shares) {
    EXPECT_EQ(ssh(s, s.server.alias, "stat -c %U " + sh.server_dir), s.share_user + "\n") << sh.url;
  }
  // The password never shows in a process's arguments.
  const std::string password = *sys::read_file(s.share_password_file);
  EXPECT_EQ(run_checked({"ps", "-eo", "args"}).find(password.substr(0, password.size() - 1)),
            std::string::npos);

  // The data link works, and SSH does not cross it.
  EXPECT_EQ(
      run_command({"ip", "netns", "exec", s.client.netns, "ping", "-c1", "-W2", data}).exit_code,
      0);
  EXPECT_NE(run_checked({"ip", "route", "get", s.server.mgmt_address})
                .find("dev " + kNames.server_mgmt_root_ifname + " "),
            std::string::npos);
  EXPECT_NE(run_checked({"ip", "route", "get", s.client.mgmt_address})
                .find("dev " + kNames.client_mgmt_root_ifname + " "),
            std::string::npos);

  // tbf at 200 Mbit/s: iperf3's payload is ~95.7 % of it at MTU 1500 (IP and TCP
  // headers; ../shared/docs/lab-facts.md), +- 6 %.
  const double bps = iperf_bits_per_second(s);
  EXPECT_NEAR(bps, 0.957 * 200e6, 0.06 * 200e6);

  // up again retunes in place: same sshds, new rate.
  o.rate_bits = 1'000'000'000;
  o.disk_bytes = 512ull << 20;  // ignored: sizes apply at creation
  const LabState s2 = up(o, kInstance, dir_);
  EXPECT_EQ(s2.server.sshd_pid, s.server.sshd_pid);
  EXPECT_EQ(s2.client.sshd_pid, s.client.sshd_pid);
  EXPECT_EQ(s2.options.rate_bits, 1'000'000'000u);
  EXPECT_EQ(s2.options.disk_bytes, 256ull << 20);
  for (const LabHost* h : {&s2.server, &s2.client}) {
    const std::string tc =
        run_checked({"tc", "-n", h->netns, "qdisc", "show", "dev", h->data_ifname});
    EXPECT_NE(tc.find("rate 1Gbit"), std::string::npos) << tc;
  }
  EXPECT_EQ(load(dir_)->options.rate_bits, 1'000'000'000u);
  EXPECT_EQ(ssh(s2, s2.server.alias, "hostname"), kNames.server_netns + "\n");

  // status, through the command line, text and JSON.
  setenv(kDirEnv, dir_.c_str(), 1);
  setenv(kInstanceEnv, std::to_string(kInstance).c_str(), 1);
  std::ostringstream out, err;
  EXPECT_EQ(run_lab_command({"status"}, out, err), 0) << err.str();
  const std::string text = out.str();
  for (const std::string& want :
       {kNames.server_netns, kNames.client_netns, std::string(": up"), std::string("1 Gbit/s"),
        std::string("tmpfs, 64 MiB"), std::string("ext4"), std::string("(direct I/O)"),
        std::string("MTU 1500"), std::string("vsftpd"), std::string("smbd"),
        "smb://" + data + "/disk", std::string("throttle   none")}) {
    EXPECT_NE(text.find(want), std::string::npos) << "missing '" << want << "' in:\n" << text;
  }
  EXPECT_EQ(text.find("problem"), std::string::npos) << text;
  std::ostringstream jout;
  EXPECT_EQ(run_lab_command({"status", "--json"}, jout, err), 0) << err.str();
  unsetenv(kDirEnv);
  unsetenv(kInstanceEnv);
  const json::value st = json::parse(jout.str());
  EXPECT_TRUE(st.at("healthy").as_bool());
  EXPECT_EQ(st.at("instance").to_number<int>(), kInstance);
  EXPECT_EQ(st.at("client").at("disk").at("fstype").as_string(), "ext4");
  EXPECT_EQ(st.at("client").at("hostname_inside").as_string(), kNames.client_netns);
  EXPECT_EQ(st.at("server").at("rate_bits").to_number<uint64_t>(), 1'000'000'000u);

  // down leaves nothing.
  EXPECT_TRUE(st.at("servers").at("smbd_alive").as_bool());

  // A server that died comes back with the next `up`.
  kill(s2.server.ftpd_pid, SIGKILL);
  sys::wait_exit({s2.server.ftpd_pid}, 5);
  const LabState s3 = up(o, kInstance, dir_);
  EXPECT_NE(s3.server.ftpd_pid, s2.server.ftpd_pid);
  EXPECT_EQ(s3.server.smbd_pid, s2.server.smbd_pid);
  EXPECT_TRUE(sys::tcp_accepts_in_netns(s.client.netns, data, kFtpPort, 5));

  // down leaves nothing, the share user included.
  const std::vector<pid_t> pids = {s.server.sshd_pid,  s.client.sshd_pid,  s3.server.ftpd_pid,
                                   s3.server.smbd_pid, s3.server.nfsd_pid, s3.server.rpcbind_pid};
  down(kInstance, dir_);
  expect_nothing_left(dir_, pids);
  EXPECT_EQ(getpwnam(s.share_user.c_str()), nullptr);
  EXPECT_FALSE(load(dir_).has_value());
  EXPECT_NO_THROW(down(kInstance, dir_));  // idempotent
}

// Two instances side by side: each reaches its own hosts, and `down` of one
// leaves the other whole (names, addresses, user, processes).
TEST_F(LabTest, TwoInstancesSideBySideDownTouchesOnlyItsOwn) {
  // An instance nobody has up (no dir, no namespace): the one beside ours may be
  // another engineer's live lab.
  int other = 0;
  for (int n = kMaxInstance; n >= 1 && other == 0; --n) {
    const InstanceNames names = instance_names(n);
    if (n != kInstance && !std::filesystem::exists(names.dir) &&
        !std::filesystem::exists("/run/netns/" + names.server_netns)) {
      other = n;
    }
  }
  ASSERT_NE(other, 0) << "every lab instance is in use";
  const std::string other_dir = test_dir("other");
  LabOptions o;
  o.disk_bytes = 64ull << 20;
  o.ram_bytes = 16ull << 20;
  const LabState a = up(o, kInstance, dir_);
  LabState b;
  try {
    b = up(o, other, other_dir);
  } catch (const Error& e) {
    down(other, other_dir);
    FAIL() << describe(e);
  }
  EXPECT_NE(a.server.netns, b.server.netns);
  EXPECT_NE(a.server.data_address, b.server.data_address);
  EXPECT_NE(a.share_user, b.share_user);
  for (const LabState* s : {&a, static_cast<const LabState*>(&b)}) {
    std::string why;
    EXPECT_TRUE(healthy(*s, &why)) << why;
    EXPECT_EQ(ssh(*s, s->server.alias, "hostname"), s->server.hostname + "\n");
    EXPECT_TRUE(sys::tcp_accepts_in_netns(s->client.netns, s->server.data_address, kSmbPort, 5));
  }
  // One instance's hosts cannot reach the other's data addresses.
  EXPECT_NE(run_command({"ip", "netns", "exec", a.client.netns, "ping", "-c1", "-W1",
                         b.server.data_address})
                .exit_code,
            0);
  // Its own dir holds another instance: refused, nothing touched.
  EXPECT_THROW(down(other, dir_), Error);
  EXPECT_TRUE(healthy(a, nullptr));

  down(other, other_dir);
  expect_nothing_left(other_dir, {b.server.sshd_pid, b.server.smbd_pid}, instance_names(other));
  EXPECT_EQ(getpwnam(b.share_user.c_str()), nullptr);
  std::string why;
  EXPECT_TRUE(healthy(a, &why)) << why;
  EXPECT_NE(getpwnam(a.share_user.c_str()), nullptr);
  EXPECT_TRUE(sys::tcp_accepts_in_netns(a.client.netns, a.server.data_address, kFtpPort, 5));
}

// A failure half-way through `up` rolls back everything made so far.
TEST_F(LabTest, FailedUpRollsBack) {
  // A `setsid` that fails: up gets past disks and network, then cannot start the hosts.
  const std::string bin = dir_ + "-bin";
  sys::make_dirs(bin, 0755);
  sys::write_file(bin + "/setsid", "#!/bin/sh\necho 'fake setsid refuses' >&2\nexit 1\n", 0755);
  const std::string old_path = std::getenv("PATH");
  setenv("PATH", (bin + ":" + old_path).c_str(), 1);
  LabOptions o;
  o.rate_bits = 100'000'000;
  o.disk_bytes = 64ull << 20;
  o.ram_bytes = 16ull << 20;
  try {
    up(o, kInstance, dir_);
    ADD_FAILURE() << "up succeeded with a broken setsid";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fake setsid refuses"), std::string::npos) << e.what();
  }
  setenv("PATH", old_path.c_str(), 1);
  sys::remove_tree(bin);
  expect_nothing_left(dir_, {});
}

// `down` removes what a partial up left, from lab.json alone.
TEST_F(LabTest, DownCleansUpPartialRemains) {
  LabOptions o;
  o.disk_bytes = 64ull << 20;
  LabState s = plan(o, dir_, kInstance);
  sys::make_dirs(s.server.ram_dir, 0755);
  const HostFiles f = host_files(s, s.server);
  const std::string& ns = kNames.server_netns;
  run_checked({"truncate", "-s", "64M", f.disk_image});
  std::string dev = run_checked({"losetup", "--find", "--show", f.disk_image});
  dev.pop_back();
  // Not recorded in lab.json: down finds it by its backing file.
  sys::write_file(dir_ + "/lab.json", state_to_json(s), 0644);
  run_checked({"ip", "netns", "add", ns});
  run_checked({"ip", "link", "add", kNames.server_mgmt_root_ifname, "type", "veth", "peer", "name",
               "cpm", "netns", ns});
  // A process living in the host's namespace.
  run_checked({"setsid", "-f", "sh", "-c", "exec >/dev/null 2>&1 </dev/null; exec \"$@\"", "x",
               "ip", "netns", "exec", ns, "sleep", "300"});
  std::vector<pid_t> pids;
  for (int i = 0; i < 100 && pids.empty(); ++i) {
    pids = sys::netns_pids(ns);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(pids.size(), 1u);
  EXPECT_EQ(sys::process_comm(pids[0]), "sleep");

  down(kInstance, dir_);
  expect_nothing_left(dir_, pids);
  EXPECT_EQ(sys::loop_backing_file(dev), "");
}

TEST_F(LabTest, UpRefusesADirThatIsNotALab) {
  sys::make_dirs(dir_, 0755);
  sys::write_file(dir_ + "/precious.txt", "keep me", 0644);
  try {
    up(LabOptions{}, kInstance, dir_);
    ADD_FAILURE() << "up took over a non-lab dir";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConfig);
    EXPECT_NE(std::string(e.what()).find("not a lab dir"), std::string::npos) << e.what();
  }
  EXPECT_EQ(sys::read_file(dir_ + "/precious.txt").value_or(""), "keep me");
  EXPECT_FALSE(sys::netns_exists(kNames.server_netns));
  EXPECT_NO_THROW(down(kInstance, dir_));  // no lab.json: not ours, left alone
  EXPECT_TRUE(sys::exists(dir_ + "/precious.txt"));
  sys::remove_tree(dir_);
}

// --path-rate shapes the switch's two ports; the hosts' own interfaces stay
// unshaped, and their addresses stay those of a lab without it.
TEST_F(LabTest, PathRateShapesTheSwitchPortsNotTheHosts) {
  LabOptions o = small_options();
  o.path_rate_bits = 200'000'000;
  const LabState s = up(o, kInstance, dir_);
  EXPECT_EQ(s.server.data_address, kNames.server_data_address);
  EXPECT_EQ(s.sw.netns, kNames.switch_netns);
  EXPECT_TRUE(sys::netns_exists(kNames.switch_netns));
  const LabStatus st = gather_status(s);
  EXPECT_TRUE(st.healthy) << st.why;
  for (const HostStatus* h : {&st.server, &st.client}) {
    EXPECT_EQ(h->rate_bits, 0u) << h->host.role;
    EXPECT_NE(h->qdisc, "tbf") << h->host.role;
  }
  ASSERT_EQ(st.ports.size(), 2u);
  for (const PortStatus& p : st.ports) {
    EXPECT_EQ(p.qdisc, "tbf") << p.ifname;
    EXPECT_EQ(p.rate_bits, 200'000'000u) << p.ifname;
    EXPECT_TRUE(p.bridged) << p.ifname;
  }
  // Both directions cross a 200 Mbit/s port: iperf3's payload is ~95.7 % of it at
  // MTU 1500 (IP and TCP headers), +- 6 %.
  EXPECT_NEAR(iperf_bits_per_second(s), 0.957 * 200e6, 0.06 * 200e6);
  const StatusOutcome cli = cli_status(dir_);
  EXPECT_EQ(cli.code, 0);
  EXPECT_EQ(cli.doc.at("path").at("rate_bits").to_number<uint64_t>(), 200'000'000u);
  EXPECT_EQ(cli.doc.at("server").at("rate_bits").to_number<uint64_t>(), 0u);
}

// --delay: netem on the switch's ports where the kernel has it, else the
// delay line between them; either way ping's RTT is at least twice the delay.
// The delay line is a health item, restarted by `up`, stopped by pid.
TEST_F(LabTest, DelayGivesTwiceTheDelayAsRoundTrip) {
  LabOptions o = small_options();
  o.delay_s = 0.005;
  const LabState s = up(o, kInstance, dir_);
  const bool netem = run_command(netem_probe_command()).exit_code == 0;
  EXPECT_EQ(s.sw.delay_mode, netem ? kDelayNetem : kDelayLine);
  const double rtt = ping_rtt_min_s(s);
  EXPECT_GE(rtt, 2 * o.delay_s);
  EXPECT_LT(rtt, 2 * o.delay_s + 0.050);  // no gross extra delay
  EXPECT_GT(iperf_bits_per_second(s), 0);
  if (netem) return;  // the rest is the delay line's

  const pid_t line = s.sw.delay_line_pid;
  ASSERT_TRUE(delay_line_alive(line));
  EXPECT_TRUE(sys::process_in_netns(line, kNames.switch_netns));
  EXPECT_TRUE(sys::exists(switch_files(s).delay_line_pid));
  StatusOutcome st = cli_status(dir_);
  EXPECT_EQ(st.code, 0);
  EXPECT_EQ(st.doc.at("path").at("delay_mode").as_string(), kDelayLine);
  EXPECT_DOUBLE_EQ(st.doc.at("path").at("delay_s").as_double(), 0.005);
  const json::array& dirs = st.doc.at("path").at("delay_line").at("directions").as_array();
  ASSERT_EQ(dirs.size(), 2u);
  EXPECT_GT(dirs[0].at("frames").to_number<uint64_t>(), 0u);

  // Dead: unhealthy, exit code, named; `up` starts a new one.
  kill(line, SIGKILL);
  sys::wait_exit({line}, 5);
  st = cli_status(dir_);
  EXPECT_EQ(st.code, kExitUnhealthy);
  EXPECT_FALSE(st.doc.at("healthy").as_bool());
  EXPECT_EQ(down_list(st.doc), std::vector<std::string>{"delay-line"});
  EXPECT_LT(ping_rtt_min_s(s, 2), 0);  // nothing forwards now
  const LabState s2 = up(o, kInstance, dir_);
  EXPECT_NE(s2.sw.delay_line_pid, line);
  EXPECT_TRUE(delay_line_alive(s2.sw.delay_line_pid));
  EXPECT_EQ(s2.server.sshd_pid, s.server.sshd_pid);  // hosts kept running
  EXPECT_GE(ping_rtt_min_s(s2), 2 * o.delay_s);
  EXPECT_EQ(cli_status(dir_).code, 0);

  // Without a delay the delay line stops (by its pid) and the bridge joins the ports.
  const LabState s3 = up(small_options(), kInstance, dir_);
  EXPECT_FALSE(delay_line_alive(s2.sw.delay_line_pid));
  EXPECT_EQ(s3.sw.delay_line_pid, 0);
  EXPECT_EQ(s3.sw.delay_mode, "");
  const double fast = ping_rtt_min_s(s3);
  EXPECT_GE(fast, 0);
  EXPECT_LT(fast, 2 * o.delay_s);
  const LabStatus full = gather_status(s3);
  for (const PortStatus& p : full.ports) EXPECT_TRUE(p.bridged) << p.ifname;

  // down stops a running delay line too.
  o.delay_s = 0.001;
  const LabState s4 = up(o, kInstance, dir_);
  ASSERT_TRUE(delay_line_alive(s4.sw.delay_line_pid));
  down(kInstance, dir_);
  EXPECT_FALSE(sys::process_alive(s4.sw.delay_line_pid));
  expect_nothing_left(dir_, {s4.sw.delay_line_pid});
}

// --server-mtu and --client-mtu: each host's own; the switch takes the larger,
// so frames bigger than the smaller host's MTU are lost on the way to it.
TEST_F(LabTest, PerHostMtuMismatchLosesBigFramesOnly) {
  LabOptions o = small_options();
  o.server_mtu = 9000;
  o.client_mtu = 1500;
  const LabState s = up(o, kInstance, dir_);
  const LabStatus st = gather_status(s);
  EXPECT_EQ(st.server.mtu, 9000);
  EXPECT_EQ(st.client.mtu, 1500);
  for (const PortStatus& p : st.ports) EXPECT_EQ(p.mtu, 9000) << p.ifname;
  const StatusOutcome cli = cli_status(dir_);
  EXPECT_EQ(cli.doc.at("path").at("server_mtu").to_number<int>(), 9000);
  EXPECT_EQ(cli.doc.at("path").at("client_mtu").to_number<int>(), 1500);
  EXPECT_EQ(cli.doc.at("path").at("switch_mtu").to_number<int>(), 9000);
  // Small frames pass both ways; an 8000-byte one from the server never arrives.
  EXPECT_GE(ping_rtt_min_s(s, 2, 1400), 0);
  EXPECT_EQ(run_command({"ip", "netns", "exec", s.server.netns, "ping", "-n", "-q", "-c", "1", "-W",
                         "1", "-M", "do", "-s", "8000", s.client.data_address})
                .exit_code,
            1);
  EXPECT_EQ(run_command({"ip", "netns", "exec", s.server.netns, "ping", "-n", "-q", "-c", "1", "-W",
                         "1", "-M", "do", "-s", "1400", s.client.data_address})
                .exit_code,
            0);
}

// A dead daemon makes the lab unhealthy (exit code, the daemon named); `up`
// brings it back; with no lab, status has its own exit code.
TEST_F(LabTest, StatusNamesADeadDaemonAndExitsUnhealthy) {
  const LabState s = up(small_options(), kInstance, dir_);
  EXPECT_EQ(cli_status(dir_).code, 0);
  kill(s.server.ftpd_pid, SIGKILL);
  sys::wait_exit({s.server.ftpd_pid}, 5);
  StatusOutcome st = cli_status(dir_);
  EXPECT_EQ(st.code, kExitUnhealthy);
  EXPECT_FALSE(st.doc.at("healthy").as_bool());
  EXPECT_EQ(down_list(st.doc), std::vector<std::string>{"vsftpd"});
  kill(s.server.smbd_pid, SIGKILL);
  sys::wait_exit({s.server.smbd_pid}, 5);
  st = cli_status(dir_);
  EXPECT_EQ(down_list(st.doc), (std::vector<std::string>{"vsftpd", "smbd"}));
  EXPECT_EQ(check_health(s).down, (std::vector<std::string>{"vsftpd", "smbd"}));
  kill(s.server.nfsd_pid, SIGKILL);
  sys::wait_exit({s.server.nfsd_pid}, 5);
  EXPECT_EQ(check_health(s).down, (std::vector<std::string>{"vsftpd", "smbd", "nfs-ganesha"}));
  const LabState s2 = up(small_options(), kInstance, dir_);
  EXPECT_TRUE(check_health(s2).healthy) << check_health(s2).why;
  EXPECT_NE(s2.server.nfsd_pid, s.server.nfsd_pid);
  EXPECT_TRUE(
      sys::tcp_accepts_in_netns(s2.client.netns, s2.server.data_address, ganesha::kNfsPort, 5));
  EXPECT_EQ(cli_status(dir_).code, 0);
  down(kInstance, dir_);
  st = cli_status(dir_);
  EXPECT_EQ(st.code, kExitNoLab);
  EXPECT_FALSE(st.doc.at("up").as_bool());
}

// --samba adds [global] parameters; smbd restarts on a change and stays
// under the CPU quota `lab throttle` gave its predecessor.
TEST_F(LabTest, SambaParamsRestartSmbdUnderItsThrottle) {
  LabOptions o = small_options();
  o.samba_params = {"smb2 max read = 16384"};
  const LabState s = up(o, kInstance, dir_);
  const std::string conf = server_files(s).smb_conf;
  auto param = [&](const std::string& name) {
    std::string v = run_checked({"testparm", "-s", "--parameter-name", name, conf});
    while (!v.empty() && v.back() == '\n') v.pop_back();
    return v;
  };
  EXPECT_EQ(param("smb2 max read"), "16384");
  ThrottleRequest cpu;
  cpu.smbd_cpu = 0.5;
  const LabState t = throttle(cpu, kInstance, dir_);
  ASSERT_FALSE(t.throttle.cgroups.empty());
  const std::string cg = t.throttle.cgroups.front();
  const std::string rel = cg.substr(cgroup_root_of(cg).size());

  o.samba_params = {"smb2 max read = 65536", "server signing = mandatory"};
  const LabState s2 = up(o, kInstance, dir_);
  EXPECT_NE(s2.server.smbd_pid, s.server.smbd_pid);
  EXPECT_TRUE(check_health(s2).healthy) << check_health(s2).why;
  EXPECT_EQ(param("smb2 max read"), "65536");
  EXPECT_EQ(param("server signing"), "required");
  EXPECT_DOUBLE_EQ(s2.throttle.smbd_cpu, 0.5);
  const std::string in = *sys::read_file(fmt::format("/proc/{}/cgroup", s2.server.smbd_pid));
  EXPECT_NE(in.find(rel), std::string::npos) << in;
  const StatusOutcome st = cli_status(dir_);
  const json::array want{"smb2 max read = 65536", "server signing = mandatory"};
  EXPECT_EQ(st.doc.at("servers").at("samba_params").as_array(), want);
  // The share password survives the restart.
  EXPECT_EQ(*sys::read_file(s.share_password_file), *sys::read_file(s2.share_password_file));
  // Without --samba they are gone again.
  const LabState s3 = up(small_options(), kInstance, dir_);
  EXPECT_EQ(param("smb2 max read"), "8388608");
}

TEST(LabRootTest, DownWithoutLabIsANoOp) {
  std::string why;
  if (geteuid() != 0) GTEST_SKIP() << "needs root";
  EXPECT_NO_THROW(down(kInstance, test_dir("absent")));
  EXPECT_FALSE(load(test_dir("absent")).has_value());
}

// `lab throttle --client-cpu/--client-disk-read`: a session sshd starts on the
// client host after the throttle (as an agent's is) runs in the client's cpu
// and blkio cgroups, whose control files carry the limits on the client's own
// loop device; `--clear` and `down` remove the groups.
TEST_F(LabTest, ClientThrottleHoldsLaterSessionsAndIsCleared) {
  const LabState s = up(small_options(), kInstance, dir_);
  ThrottleRequest req;
  req.client_cpu = 0.3;
  req.client_disk_read_bps = 20'000'000;
  const LabState t = throttle(req, kInstance, dir_);
  EXPECT_DOUBLE_EQ(t.throttle.client_cpu, 0.3);
  EXPECT_EQ(t.throttle.client_disk_read_bps, 20'000'000u);
  const CgroupLayout l = cgroup_layout();
  ASSERT_FALSE(t.throttle.cgroups.empty());
  struct stat st;
  ASSERT_EQ(stat(s.client.loop_device.c_str(), &st), 0);
  const std::string device = fmt::format("{}:{}", major(st.st_rdev), minor(st.st_rdev));
  // The session's own cgroup lines, as the kernel reports them for a new process.
  const std::string in = ssh(t, t.client.alias, "cat /proc/self/cgroup");
  const std::string server_in = ssh(t, t.server.alias, "cat /proc/self/cgroup");
  for (const std::string& dir : t.throttle.cgroups) {
    const std::string rel = dir.substr(cgroup_root_of(dir).size());
    EXPECT_NE(in.find(":" + rel + "\n"), std::string::npos) << rel << " not in:\n" << in;
    EXPECT_EQ(server_in.find(rel), std::string::npos) << server_in;
  }
  if (!l.cpu_v1.empty()) {
    const std::string cpu_dir = l.cpu_v1 + "/" + kNames.cgroup_name + "-client";
    EXPECT_EQ(sys::read_file(cpu_dir + "/cpu.cfs_quota_us").value_or(""), "30000\n");
  }
  if (!l.blkio_v1.empty()) {
    const std::string io_dir = l.blkio_v1 + "/" + kNames.cgroup_name + "-client";
    EXPECT_EQ(sys::read_file(io_dir + "/blkio.throttle.read_bps_device").value_or(""),
              device + " 20000000\n");
  }
  const StatusOutcome so = cli_status(dir_);
  EXPECT_DOUBLE_EQ(so.doc.at("servers").at("throttle").at("client_cpu").to_number<double>(), 0.3);
  // off removes one limit and keeps the other.
  ThrottleRequest off;
  off.client_cpu = 0;
  const LabState t2 = throttle(off, kInstance, dir_);
  EXPECT_EQ(t2.throttle.client_cpu, 0);
  EXPECT_EQ(t2.throttle.client_disk_read_bps, 20'000'000u);
  for (const std::string& dir : t.throttle.cgroups) {
    const bool kept = std::find(t2.throttle.cgroups.begin(), t2.throttle.cgroups.end(), dir) !=
                      t2.throttle.cgroups.end();
    EXPECT_EQ(sys::exists(dir), kept) << dir;
  }
  ThrottleRequest clear;
  clear.clear = true;
  EXPECT_TRUE(throttle(clear, kInstance, dir_).throttle.cgroups.empty());
  for (const std::string& dir : t.throttle.cgroups) EXPECT_FALSE(sys::exists(dir)) << dir;
  // Throttled again, `down` removes them with the lab.
  const LabState t3 = throttle(req, kInstance, dir_);
  down(kInstance, dir_);
  for (const std::string& dir : t3.throttle.cgroups) EXPECT_FALSE(sys::exists(dir)) << dir;
}

}  // namespace
}  // namespace cp::lab
