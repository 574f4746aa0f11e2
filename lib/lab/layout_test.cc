#include "lab/layout.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/process.h"
#include "core/testing/error_of.h"

namespace cp::lab {
namespace {

using Argv = std::vector<std::string>;

LabState sample_state() {
  LabOptions o;
  o.rate_bits = 200'000'000;
  o.mtu = 9000;
  o.delay_s = 0.0025;
  o.disk_bytes = 256ull << 20;
  o.ram_bytes = 64ull << 20;
  LabState s = plan(o, "/var/lib/chokepoint-lab");
  s.server.loop_device = "/dev/loop3";
  s.client.loop_device = "/dev/loop4";
  s.server.sshd_pid = 4242;
  s.client.sshd_pid = 4243;
  return s;
}

// "Key value" lines of a config file -> map (later keys win; comments skipped).
std::map<std::string, std::string> config_map(const std::string& text) {
  std::map<std::string, std::string> m;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t sp = line.find(' ');
    m[line.substr(0, sp)] = sp == std::string::npos ? "" : line.substr(sp + 1);
  }
  return m;
}

using cp::testing::kind_of;

// The config `text_of` writes for a lab planned with `o`, whose options validate() accepts.
std::string conf_of(const LabOptions& o, std::string (*text_of)(const LabState&)) {
  EXPECT_NO_THROW(validate(o));
  return text_of(plan(o, "/l"));
}

// `check` refuses each line of `bad` as a config error.
void expect_refused(void (*check)(const std::string&), std::initializer_list<const char*> bad) {
  for (const char* line : bad) EXPECT_EQ(kind_of([&] { check(line); }), ErrorKind::kConfig) << line;
}

TEST(LayoutTest, PlanNamesAddressesAndPaths) {
  const LabState s = plan(LabOptions{}, "/srv/lab");
  EXPECT_EQ(s.ssh_config, "/srv/lab/ssh_config");
  EXPECT_EQ(s.identity, "/srv/lab/id_ed25519");
  EXPECT_EQ(s.known_hosts, "/srv/lab/known_hosts");
  EXPECT_EQ(s.server.role, "server");
  EXPECT_EQ(s.server.netns, "cp-server");
  EXPECT_EQ(s.server.alias, "cp-server");
  EXPECT_EQ(s.server.hostname, "cp-server");
  EXPECT_EQ(s.server.mgmt_address, "198.18.1.2");
  EXPECT_EQ(s.server.data_address, "198.18.0.1");
  EXPECT_EQ(s.server.data_ifname, "cpd-s");
  EXPECT_EQ(s.server.ram_dir, "/srv/lab/server/ram");
  EXPECT_EQ(s.server.disk_dir, "/srv/lab/server/disk");
  EXPECT_EQ(s.client.netns, "cp-client");
  EXPECT_EQ(s.client.mgmt_address, "198.18.2.2");
  EXPECT_EQ(s.client.data_address, "198.18.0.2");
  EXPECT_EQ(s.client.data_ifname, "cpd-c");
  EXPECT_EQ(s.client.disk_dir, "/srv/lab/client/disk");
  EXPECT_TRUE(s.server.loop_device.empty());
  EXPECT_EQ(s.server.sshd_pid, 0);

  const HostFiles fs = host_files(s, s.server);
  EXPECT_EQ(fs.disk_image, "/srv/lab/server/disk.img");
  EXPECT_EQ(fs.sshd_config, "/srv/lab/server/sshd_config");
  EXPECT_EQ(fs.pid_file, "/srv/lab/server/sshd.pid");
  EXPECT_EQ(fs.mgmt_root_ifname, "cpm-s");
  EXPECT_EQ(fs.mgmt_root_address, "198.18.1.1");
  EXPECT_EQ(fs.mgmt_ifname, "cpm");
  const HostFiles fc = host_files(s, s.client);
  EXPECT_EQ(fc.mgmt_root_ifname, "cpm-c");
  EXPECT_EQ(fc.mgmt_root_address, "198.18.2.1");
}

// An IPv4 subnet "a.b.c.d/len" as [first, last] addresses.
std::pair<uint32_t, uint32_t> subnet_range(const std::string& cidr) {
  unsigned a, b, c, d, len;
  EXPECT_EQ(std::sscanf(cidr.c_str(), "%u.%u.%u.%u/%u", &a, &b, &c, &d, &len), 5) << cidr;
  const uint32_t ip = (a << 24) | (b << 16) | (c << 8) | d;
  const uint32_t mask = len == 0 ? 0 : ~uint32_t{0} << (32 - len);
  EXPECT_EQ(ip & ~mask, 0u) << cidr << " is not a network address";
  return {ip, ip | ~mask};
}

uint32_t ipv4(const std::string& text) { return subnet_range(text + "/32").first; }

bool inside(uint32_t ip, std::pair<uint32_t, uint32_t> r) {
  return ip >= r.first && ip <= r.second;
}

// The names an instance ends with `suffix` ("" for instance 0, "-9" for 9).
void expect_names_end_with(const InstanceNames& n, const std::string& suffix) {
  EXPECT_EQ(n.suffix, suffix);
  EXPECT_EQ(n.dir, "/var/lib/chokepoint-lab" + suffix);
  EXPECT_EQ(n.lock_path, "/run/chokepoint-lab" + suffix + ".lock");
  EXPECT_EQ(n.server_netns, "cp-server" + suffix);
  EXPECT_EQ(n.client_netns, "cp-client" + suffix);
  EXPECT_EQ(n.server_mgmt_root_ifname, "cpm-s" + suffix);
  EXPECT_EQ(n.client_mgmt_root_ifname, "cpm-c" + suffix);
  EXPECT_EQ(n.share_user, "cplab" + suffix);
  EXPECT_EQ(n.cgroup_name, "chokepoint-lab" + suffix);
}

TEST(LayoutTest, InstanceZeroKeepsTheHistoricalNames) {
  const InstanceNames n = instance_names(0);
  expect_names_end_with(n, "");
  EXPECT_EQ(n.server_data_address, "198.18.0.1");
  EXPECT_EQ(n.client_data_address, "198.18.0.2");
}

TEST(LayoutTest, InstanceNineHasItsOwnNamesAddressesAndPaths) {
  const InstanceNames n = instance_names(9);
  expect_names_end_with(n, "-9");
  EXPECT_EQ(n.switch_netns, "cp-switch-9");
  EXPECT_EQ(n.server_mgmt_subnet, "198.18.109.0/30");
  EXPECT_EQ(n.server_mgmt_root_address, "198.18.109.1");
  EXPECT_EQ(n.server_mgmt_address, "198.18.109.2");
  EXPECT_EQ(n.client_mgmt_subnet, "198.18.109.4/30");
  EXPECT_EQ(n.client_mgmt_root_address, "198.18.109.5");
  EXPECT_EQ(n.client_mgmt_address, "198.18.109.6");
  EXPECT_EQ(n.data_subnet, "198.19.9.0/24");
  EXPECT_EQ(n.server_data_address, "198.19.9.1");
  EXPECT_EQ(n.client_data_address, "198.19.9.2");

  const LabState s = plan(LabOptions{}, "/srv/lab9", 9);
  EXPECT_EQ(s.instance, 9);
  EXPECT_EQ(s.server.netns, "cp-server-9");
  EXPECT_EQ(s.server.alias, "cp-server-9");
  EXPECT_EQ(s.client.hostname, "cp-client-9");
  EXPECT_EQ(s.server.mgmt_address, "198.18.109.2");
  EXPECT_EQ(s.client.mgmt_address, "198.18.109.6");
  EXPECT_EQ(s.server.data_address, "198.19.9.1");
  EXPECT_EQ(s.client.data_address, "198.19.9.2");
  EXPECT_EQ(s.share_user, "cplab-9");
  EXPECT_EQ(s.server.shares[0].url, "ftp://198.19.9.1/ram");
  EXPECT_EQ(host_files(s, s.server).mgmt_root_ifname, "cpm-s-9");
  EXPECT_EQ(host_files(s, s.client).mgmt_root_address, "198.18.109.5");
  const std::string ssh = ssh_config_text(s);
  EXPECT_NE(ssh.find("Host cp-server-9\n  HostName 198.18.109.2\n"), std::string::npos) << ssh;
  EXPECT_NE(ssh.find("Host cp-client-9\n  HostName 198.18.109.6\n"), std::string::npos) << ssh;
  EXPECT_NE(vsftpd_conf_text(s).find("listen_address=198.19.9.1\n"), std::string::npos);
  EXPECT_NE(smb_conf_text(s).find("interfaces = 198.19.9.1\n"), std::string::npos);
  EXPECT_EQ(state_from_json(state_to_json(s), "lab.json").instance, 9);
}

// Every instance: names fit the kernel, subnets sit in the lab range, each
// address in its subnet, and no subnet, name, dir, lock, user or cgroup is
// shared between two instances.
TEST(LayoutTest, InstancesNeverOverlap) {
  const auto range = subnet_range(kLabRange);
  std::vector<std::pair<uint32_t, uint32_t>> subnets;
  std::set<std::string> names;
  size_t name_count = 0;
  for (int i = 0; i <= kMaxInstance; ++i) {
    SCOPED_TRACE(i);
    const InstanceNames n = instance_names(i);
    EXPECT_EQ(n.instance, i);
    for (const std::string* ifname : {&n.server_mgmt_root_ifname, &n.client_mgmt_root_ifname}) {
      EXPECT_LE(ifname->size(), kMaxIfnameLength) << *ifname;
    }
    const auto server_mgmt = subnet_range(n.server_mgmt_subnet);
    const auto client_mgmt = subnet_range(n.client_mgmt_subnet);
    const auto data = subnet_range(n.data_subnet);
    EXPECT_EQ(n.data_subnet.substr(n.data_subnet.find('/') + 1), std::to_string(kDataPrefix));
    EXPECT_EQ(n.server_mgmt_subnet.substr(n.server_mgmt_subnet.find('/') + 1),
              std::to_string(kMgmtPrefix));
    EXPECT_EQ(n.client_mgmt_subnet.substr(n.client_mgmt_subnet.find('/') + 1),
              std::to_string(kMgmtPrefix));
    for (auto r : {server_mgmt, client_mgmt, data}) {
      EXPECT_TRUE(inside(r.first, range) && inside(r.second, range));
      subnets.push_back(r);
    }
    EXPECT_TRUE(inside(ipv4(n.server_mgmt_root_address), server_mgmt));
    EXPECT_TRUE(inside(ipv4(n.server_mgmt_address), server_mgmt));
    EXPECT_TRUE(inside(ipv4(n.client_mgmt_root_address), client_mgmt));
    EXPECT_TRUE(inside(ipv4(n.client_mgmt_address), client_mgmt));
    EXPECT_TRUE(inside(ipv4(n.server_data_address), data));
    EXPECT_TRUE(inside(ipv4(n.client_data_address), data));
    for (const std::string* name :
         {&n.dir, &n.lock_path, &n.server_netns, &n.client_netns, &n.switch_netns,
          &n.server_mgmt_root_ifname, &n.client_mgmt_root_ifname, &n.share_user, &n.cgroup_name}) {
      names.insert(*name);
      ++name_count;
    }
  }
  EXPECT_EQ(names.size(), name_count) << "a name is shared between instances";
  std::sort(subnets.begin(), subnets.end());
  for (size_t i = 1; i < subnets.size(); ++i) {
    EXPECT_GT(subnets[i].first, subnets[i - 1].second) << "subnets " << i - 1 << " and " << i;
  }
}

TEST(LayoutTest, ParseInstanceTakesZeroToNinetyNine) {
  EXPECT_EQ(parse_instance("0", "--instance"), 0);
  EXPECT_EQ(parse_instance("9", "--instance"), 9);
  EXPECT_EQ(parse_instance("99", "--instance"), 99);
  for (const char* bad : {"", "-1", "100", "x", "1.5", " 9", "9 ", "0x9", "1000"}) {
    EXPECT_EQ(kind_of([&] { parse_instance(bad, "--instance"); }), ErrorKind::kConfig) << bad;
  }
}

TEST(LayoutTest, ValidateRejectsWhatTheLabCannotApply) {
  EXPECT_NO_THROW(validate(LabOptions{}));
  LabOptions o;
  o.mtu = 67;
  EXPECT_EQ(kind_of([&] { validate(o); }), ErrorKind::kConfig);
  o.mtu = 65536;
  EXPECT_EQ(kind_of([&] { validate(o); }), ErrorKind::kConfig);
  o = LabOptions{};
  o.mtu = 9000;
  EXPECT_NO_THROW(validate(o));
  o.delay_s = -0.001;
  EXPECT_EQ(kind_of([&] { validate(o); }), ErrorKind::kConfig);
  o = LabOptions{};
  o.disk_bytes = 1 << 20;
  EXPECT_EQ(kind_of([&] { validate(o); }), ErrorKind::kConfig);
  o = LabOptions{};
  o.ram_bytes = 0;
  EXPECT_EQ(kind_of([&] { validate(o); }), ErrorKind::kConfig);
}

TEST(LayoutTest, ValidateDirKeepsConfigFilesSafe) {
  EXPECT_NO_THROW(validate_dir("/var/lib/chokepoint-lab"));
  EXPECT_NO_THROW(validate_dir("/var/tmp/lab_2.test"));
  expect_refused(validate_dir,
                 {"", "relative/lab", "/var/lib/my lab", "/var/lib/lab%h", "/tmp/\"x", "/run/lab",
                  "/run", "/dev/shm/lab", "/", "/var/../run/x", "/tmp/a\nb"});
  // Only whole components count: /running is not /run.
  EXPECT_NO_THROW(validate_dir("/running/lab"));
}

TEST(LayoutTest, TbfBurstCoversOneMillisecondAndFourFrames) {
  EXPECT_EQ(tbf_burst_bytes(200'000'000, 1500), 25'000u);     // 1 ms at 25 MB/s
  EXPECT_EQ(tbf_burst_bytes(1'000'000'000, 1500), 125'000u);  // 1 ms at 125 MB/s
  EXPECT_EQ(tbf_burst_bytes(1'000'000'000, 9000), 125'000u);
  EXPECT_EQ(tbf_burst_bytes(10'000'000, 1500), 4u * 1514);  // frames dominate
  EXPECT_EQ(tbf_burst_bytes(100'000'000, 9000), 4u * 9014);
  EXPECT_EQ(tbf_burst_bytes(8'001, 68), 4u * 82);
  EXPECT_EQ(tbf_burst_bytes(40'000'000'000, 1500), 5'000'000u);
}

TEST(LayoutTest, NetemLimitHoldsTwiceTheDelayedPackets) {
  // 1 Gbit/s for 20 ms = 2.5 MB = 1667 packets of 1500 B; twice that.
  EXPECT_EQ(netem_limit_packets(1'000'000'000, 0.020, 1500), 3334u);
  EXPECT_EQ(netem_limit_packets(10'000'000, 0.002, 1500), 1000u);  // netem's default floor
  // Unshaped counts as 10 Gbit/s.
  EXPECT_EQ(netem_limit_packets(0, 0.010, 9000), 2778u);
}

TEST(LayoutTest, ShapingWithRateIsTbfAsRoot) {
  LabHost h = plan(LabOptions{}, "/l").server;
  LabOptions o;
  o.rate_bits = 200'000'000;
  const auto cmds = shaping_commands(h, o);
  ASSERT_EQ(cmds.size(), 2u);
  EXPECT_EQ(cmds[0].argv,
            (Argv{"ip", "-n", "cp-server", "link", "set", "dev", "cpd-s", "mtu", "1500"}));
  EXPECT_FALSE(cmds[0].may_fail);
  EXPECT_EQ(cmds[1].argv,
            (Argv{"tc", "-n", "cp-server", "qdisc", "replace", "dev", "cpd-s", "root", "tbf",
                  "rate", "200000000bit", "burst", "25000", "latency", "50ms"}));
  EXPECT_FALSE(cmds[1].may_fail);
}

TEST(LayoutTest, UnshapedDeletesTheRootQdisc) {
  LabHost h = plan(LabOptions{}, "/l").client;
  LabOptions o;
  o.mtu = 9000;
  const auto cmds = shaping_commands(h, o);
  ASSERT_EQ(cmds.size(), 2u);
  EXPECT_EQ(cmds[0].argv.back(), "9000");
  EXPECT_EQ(cmds[0].argv[2], "cp-client");
  EXPECT_EQ(cmds[1].argv, (Argv{"tc", "-n", "cp-client", "qdisc", "del", "dev", "cpd-c", "root"}));
  EXPECT_TRUE(cmds[1].may_fail);
}

TEST(LayoutTest, DelayPutsNetemAtRootAndTbfUnderIt) {
  const auto cmds = link_shaping_commands("cp-switch", "sw-s", 1500, 1'000'000'000, 0.002);
  ASSERT_EQ(cmds.size(), 4u);
  EXPECT_TRUE(cmds[1].may_fail);  // clearing whatever was there
  EXPECT_EQ(cmds[1].argv, (Argv{"tc", "-n", "cp-switch", "qdisc", "del", "dev", "sw-s", "root"}));
  EXPECT_EQ(cmds[2].argv, (Argv{"tc", "-n", "cp-switch", "qdisc", "add", "dev", "sw-s", "root",
                                "handle", "1:", "netem", "delay", "2000us", "limit", "1000"}));
  EXPECT_EQ(cmds[3].argv, (Argv{"tc", "-n", "cp-switch", "qdisc", "replace", "dev", "sw-s",
                                "parent", "1:1", "handle", "10:", "tbf", "rate", "1000000000bit",
                                "burst", "125000", "latency", "50ms"}));
  // A delay without a rate: netem alone.
  EXPECT_EQ(link_shaping_commands("cp-switch", "sw-s", 1500, 0, 0.002).size(), 3u);
}

TEST(LayoutTest, HostsOwnEndsTakeTheirMtuAndRateButNeverTheDelay) {
  const LabState s = plan(LabOptions{}, "/l");
  LabOptions o;
  o.rate_bits = 1'000'000'000;
  o.delay_s = 0.002;
  o.mtu = 1500;
  o.client_mtu = 9000;
  const auto server = shaping_commands(s.server, o);
  ASSERT_EQ(server.size(), 2u);
  EXPECT_EQ(server[0].argv.back(), "1500");
  EXPECT_EQ(server[1].argv[4], "replace");  // tbf as root, no netem
  const auto client = shaping_commands(s.client, o);
  EXPECT_EQ(client[0].argv.back(), "9000");
  // A lab from before the switch kept its delay on the hosts' ends.
  EXPECT_EQ(shaping_commands(s.server, o, /*with_delay=*/true).size(), 4u);
}

TEST(LayoutTest, PerHostMtuAndTheSwitchTakesTheLargest) {
  LabOptions o;
  EXPECT_EQ(host_mtu(o, "server"), 1500);
  EXPECT_EQ(switch_mtu(o), 1500);
  o.mtu = 9000;
  EXPECT_EQ(host_mtu(o, "client"), 9000);
  o.server_mtu = 1500;
  EXPECT_EQ(host_mtu(o, "server"), 1500);
  EXPECT_EQ(host_mtu(o, "client"), 9000);
  EXPECT_EQ(switch_mtu(o), 9000);
  o = LabOptions{};
  o.client_mtu = 4000;
  EXPECT_EQ(switch_mtu(o), 4000);
  o.client_mtu = 20;
  EXPECT_EQ(kind_of([&] { validate(o); }), ErrorKind::kConfig);
}

TEST(LayoutTest, SwitchJoinsTheHostsDataEndsThroughItsPorts) {
  const LabState s = plan(LabOptions{}, "/l", 3);
  EXPECT_EQ(s.sw.netns, "cp-switch-3");
  const auto cmds = switch_create_commands(s);
  auto has = [&](const Argv& want) {
    return std::any_of(cmds.begin(), cmds.end(), [&](const Command& c) { return c.argv == want; });
  };
  EXPECT_TRUE(has({"ip", "-n", "cp-server-3", "link", "add", "cpd-s", "type", "veth", "peer",
                   "name", "sw-s", "netns", "cp-switch-3"}));
  EXPECT_TRUE(has({"ip", "-n", "cp-client-3", "link", "add", "cpd-c", "type", "veth", "peer",
                   "name", "sw-c", "netns", "cp-switch-3"}));
  EXPECT_TRUE(has({"ip", "-n", "cp-switch-3", "link", "add", "br0", "type", "bridge"}));
  EXPECT_TRUE(has({"ip", "netns", "exec", "cp-switch-3", "sysctl", "-q", "-w",
                   "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1"}));
}

TEST(LayoutTest, PathRateShapesBothSwitchPorts) {
  const LabState s = plan(LabOptions{}, "/l");
  LabOptions o;
  o.path_rate_bits = 100'000'000;
  o.server_mtu = 9000;
  const auto cmds = switch_port_commands(s, o, /*bridged=*/true, /*netem=*/false);
  std::vector<Argv> tbf, mtu, master;
  for (const Command& c : cmds) {
    if (std::find(c.argv.begin(), c.argv.end(), "tbf") != c.argv.end()) tbf.push_back(c.argv);
    if (c.argv.size() > 7 && c.argv[7] == "mtu") mtu.push_back(c.argv);
    if (std::find(c.argv.begin(), c.argv.end(), "master") != c.argv.end()) master.push_back(c.argv);
  }
  ASSERT_EQ(tbf.size(), 2u);
  EXPECT_EQ(tbf[0], (Argv{"tc", "-n", "cp-switch", "qdisc", "replace", "dev", "sw-s", "root", "tbf",
                          "rate", "100000000bit", "burst", "36056", "latency", "50ms"}));
  EXPECT_EQ(tbf[1][6], "sw-c");
  ASSERT_EQ(mtu.size(), 2u);
  EXPECT_EQ(mtu[0].back(), "9000");  // the larger host's
  EXPECT_EQ(mtu[1].back(), "9000");
  ASSERT_EQ(master.size(), 2u);
  EXPECT_EQ(master[0],
            (Argv{"ip", "-n", "cp-switch", "link", "set", "dev", "sw-s", "master", "br0"}));
  // With the delay line the ports leave the bridge (it joins them); with netem
  // each port delays its direction.
  const auto line = switch_port_commands(s, o, /*bridged=*/false, /*netem=*/false);
  EXPECT_TRUE(std::any_of(line.begin(), line.end(),
                          [](const Command& c) { return c.argv.back() == "nomaster"; }));
  o.delay_s = 0.005;
  const auto netem = switch_port_commands(s, o, /*bridged=*/true, /*netem=*/true);
  EXPECT_EQ(std::count_if(netem.begin(), netem.end(),
                          [](const Command& c) {
                            return std::find(c.argv.begin(), c.argv.end(), "netem") != c.argv.end();
                          }),
            2);
}

// The nas profile chroots the server's SSH sessions (never the client's),
// survives lab.json, and no other profile name is taken.
TEST(LayoutTest, NasProfileChrootsOnlyTheServersSessions) {
  LabOptions o;
  o.server_profile = "nas";
  EXPECT_NO_THROW(validate(o));
  const LabState s = plan(o, "/l");
  const std::string server = sshd_config_text(s, s.server);
  EXPECT_NE(server.find("\nChrootDirectory /l/server/nasroot\n"), std::string::npos) << server;
  EXPECT_EQ(sshd_config_text(s, s.client).find("ChrootDirectory"), std::string::npos);
  EXPECT_EQ(sshd_config_text(plan(LabOptions{}, "/l"), s.server).find("ChrootDirectory"),
            std::string::npos);
  EXPECT_EQ(state_from_json(state_to_json(s), "lab.json").options.server_profile, "nas");
  o.server_profile = "synology";
  EXPECT_EQ(kind_of([&] { validate(o); }), ErrorKind::kConfig);
}

// --server-login user: the server's ssh_config entry logs in as the share
// user (the client's stays root), diagnose works in the shares that user owns,
// it survives lab.json, and no other login is taken.
TEST(LayoutTest, UserLoginLogsTheServerInAsTheShareUserAndDiagnosesItsShares) {
  LabOptions o;
  o.server_login = "user";
  EXPECT_NO_THROW(validate(o));
  const LabState s = plan(o, "/l", 3);
  const std::string cfg = ssh_config_text(s);
  const size_t server_at = cfg.find("Host " + s.server.alias + "\n");
  const size_t client_at = cfg.find("Host " + s.client.alias + "\n");
  ASSERT_NE(server_at, std::string::npos);
  ASSERT_NE(client_at, std::string::npos);
  EXPECT_EQ(cfg.find("  User " + s.share_user + "\n", server_at), cfg.find("  User ", server_at));
  EXPECT_EQ(cfg.find("  User root\n", client_at), cfg.find("  User ", client_at));
  EXPECT_EQ(diagnosis_dirs(s, s.server),
            std::make_pair(s.server.ram_dir + "/share", s.server.disk_dir + "/share"));
  EXPECT_EQ(diagnosis_dirs(s, s.client), std::make_pair(s.client.ram_dir, s.client.disk_dir));
  EXPECT_EQ(server_home(s), "/l/server/home");
  EXPECT_TRUE(server_login_is_user(state_from_json(state_to_json(s), "lab.json")));
  // Root (the default) keeps the hosts' own dirs.
  const LabState root = plan(LabOptions{}, "/l", 3);
  EXPECT_FALSE(server_login_is_user(root));
  EXPECT_EQ(diagnosis_dirs(root, root.server),
            std::make_pair(root.server.ram_dir, root.server.disk_dir));
  o.server_login = "admin";
  EXPECT_EQ(kind_of([&] { validate(o); }), ErrorKind::kConfig);
}

TEST(LayoutTest, SambaParamsGoToGlobalAndBadOnesAreRefused) {
  LabOptions o;
  o.samba_params = {"smb2 max read = 16384", "server signing = mandatory"};
  const std::string conf = conf_of(o, smb_conf_text);
  const size_t global = conf.find("[global]");
  const size_t ram = conf.find("[ram]");
  const size_t param = conf.find("  smb2 max read = 16384\n");
  ASSERT_NE(param, std::string::npos) << conf;
  EXPECT_GT(param, global);
  EXPECT_LT(param, ram);
  EXPECT_NE(conf.find("  server signing = mandatory\n"), std::string::npos);
  expect_refused(validate_samba_param,
                 {"no equals sign", "= 1", "a = 1\n[evil]", "[x] = 1", "a\r = 1"});
  EXPECT_NO_THROW(validate_samba_param("vfs objects ="));
}

// `lab up --vsftpd` lines end vsftpd.conf (vsftpd takes the later of two
// lines); one that is not a setting is refused.
TEST(LayoutTest, VsftpdParamsEndTheConfAndBadOnesAreRefused) {
  LabOptions o;
  o.vsftpd_params = {"local_max_rate=20000000", "use_sendfile=NO"};
  const std::string conf = conf_of(o, vsftpd_conf_text);
  const size_t rate = conf.find("\nlocal_max_rate=20000000\n");
  ASSERT_NE(rate, std::string::npos) << conf;
  EXPECT_GT(rate, conf.find("ftpd_banner="));
  EXPECT_NE(conf.find("\nuse_sendfile=NO\n"), std::string::npos);
  EXPECT_EQ(vsftpd_conf_text(plan(LabOptions{}, "/l")).find("local_max_rate"), std::string::npos);
  expect_refused(validate_vsftpd_param,
                 {"local_max_rate = 1", "no_equals", "a=1\nb=2", "=1", "Local=1"});
}

// "[disk] name = value" goes to the end of the disk share's section only, as
// people set `sync always` per share; a share the lab does not export, or a
// bad parameter after the section, is refused.
TEST(LayoutTest, SambaParamsOfAShareGoToItsSectionOnly) {
  LabOptions o;
  o.samba_params = {"[disk] sync always = yes", "strict sync = yes"};
  const std::string conf = conf_of(o, smb_conf_text);
  const size_t disk = conf.find("[disk]");
  const size_t param = conf.find("  sync always = yes\n");
  ASSERT_NE(param, std::string::npos) << conf;
  EXPECT_GT(param, disk);
  EXPECT_EQ(conf.find("sync always", param + 3), std::string::npos) << conf;
  const size_t next = conf.find("\n[", disk);
  if (next != std::string::npos) EXPECT_LT(param, next) << conf;
  EXPECT_LT(conf.find("  strict sync = yes\n"), conf.find("[ram]"));
  expect_refused(validate_samba_param,
                 {"[printers] sync always = yes", "[disk] no equals", "[disk]", "[disk"});
  EXPECT_EQ(samba_param_section("[ram] aio read size = 0"),
            std::make_pair(std::string("ram"), std::string("aio read size = 0")));
}

TEST(LayoutTest, NetemProbeRunsInAThrowawayNamespace) {
  const Argv a = netem_probe_command();
  ASSERT_GE(a.size(), 3u);
  EXPECT_EQ(a[0], "unshare");
  EXPECT_EQ(a[1], "--net");
  EXPECT_NE(std::find(a.begin(), a.end(), "netem"), a.end());
  EXPECT_TRUE(says_qdisc_unknown("Error: Specified qdisc kind is unknown.\n"));
  EXPECT_FALSE(says_qdisc_unknown("RTNETLINK answers: Operation not permitted\n"));
  EXPECT_FALSE(says_qdisc_unknown(""));
}

// This machine's: v1 hierarchies per controller on a tmpfs, cgroup2 beside them.
constexpr const char* kHybridMountinfo =
    "22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n"
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "38 31 0:35 / /sys/fs/cgroup/blkio rw,relatime shared:7 - cgroup cgroup rw,blkio\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup "
    "rw,xattr,release_agent=/lib/systemd/systemd-cgroups-agent,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
    // Elsewhere, or a bind of a sub-cgroup: not mirrored.
    "50 22 0:29 / /mnt/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "51 31 0:29 /lab /sys/fs/cgroup/lab rw,relatime - cgroup cgroup rw,cpu\n";

TEST(LayoutTest, HostCgroupMountsMirrorTheRootNamespaceReadOnly) {
  const std::vector<CgroupMount> m = host_cgroup_mounts(kHybridMountinfo);
  ASSERT_EQ(m.size(), 6u);
  EXPECT_EQ(m[0].fstype, "tmpfs");
  EXPECT_EQ(m[0].mount_point, "/sys/fs/cgroup");
  EXPECT_EQ(m[1].fstype, "cgroup");
  EXPECT_EQ(m[1].options, "ro,nosuid,nodev,noexec,cpu");
  EXPECT_EQ(m[1].mount_point, "/sys/fs/cgroup/cpu");
  EXPECT_EQ(m[2].options, "ro,nosuid,nodev,noexec,blkio");
  // No release agent (a mount may not set one); the name and flags stay.
  EXPECT_EQ(m[3].options, "ro,nosuid,nodev,noexec,xattr,name=systemd");
  EXPECT_EQ(m[4].fstype, "cgroup2");
  EXPECT_EQ(m[4].options, "ro,nosuid,nodev,noexec");
  EXPECT_EQ(m[4].mount_point, "/sys/fs/cgroup/unified");
  // The tmpfs holding them turns read-only last.
  EXPECT_EQ(m[5].fstype, "tmpfs");
  EXPECT_EQ(m[5].options.rfind("remount,ro", 0), 0u);
  EXPECT_EQ(m[5].mount_point, "/sys/fs/cgroup");

  // A pure v2 host: the hierarchy is the dir itself, with its machine-wide
  // options (a mount without nsdelegate would switch it off for everyone).
  const std::vector<CgroupMount> v2 = host_cgroup_mounts(
      "35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 "
      "rw,nsdelegate,memory_recursiveprot\n");
  ASSERT_EQ(v2.size(), 1u);
  EXPECT_EQ(v2[0].fstype, "cgroup2");
  EXPECT_EQ(v2[0].options, "ro,nosuid,nodev,noexec,nsdelegate,memory_recursiveprot");
  EXPECT_EQ(v2[0].mount_point, "/sys/fs/cgroup");

  EXPECT_TRUE(host_cgroup_mounts("22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n").empty());
  EXPECT_TRUE(host_cgroup_mounts("").empty());
}

// Runs kHostCgroupScript's mount loop with a fake `mount` that logs its
// arguments and refuses one mount point: the others are still mounted.
TEST(LayoutTest, HostCgroupScriptGoesOnPastAFailedMount) {
  char tmpl[] = "/tmp/cp_layout_test_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const std::string bin = dir + "/bin", log = dir + "/mount.log";
  ASSERT_EQ(run_command({"mkdir", "-p", bin}).exit_code, 0);
  {
    std::ofstream fake(bin + "/mount");
    fake << "#!/bin/sh\necho \"$@\" >> " << log << "\ncase \"$6\" in *blkio) exit 32;; esac\n";
  }
  ASSERT_EQ(run_command({"chmod", "+x", bin + "/mount"}).exit_code, 0);
  LabHost h;
  h.sshd_pid = 1;
  std::vector<CgroupMount> mounts = {{"cgroup", "ro,cpu", dir + "/cg/cpu"},
                                     {"cgroup", "ro,blkio", dir + "/cg/blkio"},
                                     {"cgroup2", "ro", dir + "/cg/unified"}};
  Argv argv = host_cgroups_argv(h, mounts);
  // The script alone, without nsenter, and a cgroup dir that holds no mount.
  const Argv nsenter = {"nsenter", "-t", "1", "-m", "--"};
  ASSERT_TRUE(std::equal(nsenter.begin(), nsenter.end(), argv.begin()));
  argv.erase(argv.begin(), argv.begin() + static_cast<long>(nsenter.size()));
  EXPECT_EQ(argv[2], kHostCgroupScript);
  EXPECT_EQ(argv[3], kCgroupDir);
  argv[3] = dir + "/cg";
  argv.insert(argv.begin(), {"env", "PATH=" + bin + ":/usr/bin:/bin"});
  RunResult r = run_command(argv);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("no cgroup at " + dir + "/cg/blkio"), std::string::npos) << r.err;
  std::ifstream in(log);
  std::stringstream got;
  got << in.rdbuf();
  EXPECT_EQ(got.str(), "-t cgroup -o ro,cpu cgroup " + dir +
                           "/cg/cpu\n-t cgroup -o ro,blkio cgroup " + dir +
                           "/cg/blkio\n-t cgroup2 -o ro cgroup2 " + dir + "/cg/unified\n");
  // A dir that holds a mount already (a host that mounted them at start): nothing is done.
  argv[5] = "/proc";
  r = run_command(argv);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::ifstream again(log);
  std::stringstream after;
  after << again.rdbuf();
  EXPECT_EQ(after.str(), got.str());
  run_command({"rm", "-rf", dir});
}

TEST(LayoutTest, HostStartPassesPathsAsArgumentsNotInTheScript) {
  const LabState s = sample_state();
  const std::vector<CgroupMount> cgroups = host_cgroup_mounts(kHybridMountinfo);
  const Argv a = host_start_argv(s, s.server, cgroups);
  ASSERT_GE(a.size(), 10u);
  EXPECT_EQ(a[0], "setsid");
  EXPECT_EQ(a[1], "-f");
  // The spec's holder: ip netns exec <ns> unshare --mount --uts --propagation private -- sh -c
  const Argv holder = {"ip",    "netns",         "exec",    "cp-server", "unshare", "--mount",
                       "--uts", "--propagation", "private", "--",        "sh",      "-c"};
  auto it = std::search(a.begin(), a.end(), holder.begin(), holder.end());
  ASSERT_NE(it, a.end());
  const size_t script = static_cast<size_t>(it - a.begin()) + holder.size();
  EXPECT_EQ(a[script], kHostSetupScript);
  const Argv args(a.begin() + static_cast<long>(script) + 1, a.end());
  Argv want = {"cp-lab-server",
               "cp-server",
               "/var/lib/chokepoint-lab/server/ram",
               std::to_string(64ull << 20),
               "/dev/loop3",
               "/var/lib/chokepoint-lab/server/disk",
               "/var/lib/chokepoint-lab/server/sshd_config",
               "/var/lib/chokepoint-lab/server/sshd.log"};
  // Then the cgroup mounts, three arguments each.
  for (const CgroupMount& m : cgroups)
    want.insert(want.end(), {m.fstype, m.options, m.mount_point});
  EXPECT_EQ(args, want);
  EXPECT_EQ(host_start_argv(s, s.server, {}).size(), a.size() - 3 * cgroups.size());
  // The fixed script names no path of this lab; it ends by becoming sshd.
  const std::string text = kHostSetupScript;
  EXPECT_EQ(text.find("/var/lib"), std::string::npos);
  EXPECT_EQ(text.find("cgroup/"), std::string::npos);
  EXPECT_NE(text.find("config=$6 log=$7\nshift 7\n"), std::string::npos);
  EXPECT_NE(text.find("exec /usr/sbin/sshd -D -f \"$config\" -E \"$log\""), std::string::npos);
  EXPECT_NE(text.find("mkdir -m 0755 /run/sshd"), std::string::npos);
  EXPECT_NE(text.find("/dev/shm"), std::string::npos);
  // The log gets the holder's stdio too (setup errors land there).
  EXPECT_EQ(a[6], "/var/lib/chokepoint-lab/server/sshd.log");
}

TEST(LayoutTest, SshdConfigHasWhatTheLabNeeds) {
  const LabState s = sample_state();
  const auto m = config_map(sshd_config_text(s, s.client));
  EXPECT_EQ(m.at("ListenAddress"), "198.18.2.2");
  EXPECT_EQ(m.at("HostKey"), "/var/lib/chokepoint-lab/client/ssh_host_ed25519_key");
  EXPECT_EQ(m.at("AuthorizedKeysFile"),
            "/var/lib/chokepoint-lab/authorized_keys .ssh/authorized_keys");
  EXPECT_EQ(m.at("PidFile"), "/var/lib/chokepoint-lab/client/sshd.pid");
  EXPECT_EQ(m.at("PermitRootLogin"), "prohibit-password");
  EXPECT_EQ(m.at("PasswordAuthentication"), "no");
  EXPECT_EQ(m.at("KbdInteractiveAuthentication"), "no");
  EXPECT_EQ(m.at("UsePAM"), "no");
  EXPECT_EQ(m.at("StrictModes"), "no");
  EXPECT_EQ(m.at("Subsystem"), "sftp internal-sftp");
}

TEST(LayoutTest, SshConfigNamesBothHosts) {
  const LabState s = sample_state();
  const std::string text = ssh_config_text(s);
  for (const LabHost* h : {&s.server, &s.client}) {
    const std::string block = "Host " + h->alias + "\n  HostName " + h->mgmt_address +
                              "\n  User root\n  IdentityFile /var/lib/chokepoint-lab/id_ed25519\n"
                              "  IdentitiesOnly yes\n"
                              "  UserKnownHostsFile /var/lib/chokepoint-lab/known_hosts\n"
                              "  StrictHostKeyChecking yes\n";
    EXPECT_NE(text.find(block), std::string::npos) << text;
  }
}

TEST(LayoutTest, KnownHostsPairsEachKeyWithItsMgmtAddress) {
  const LabState s = sample_state();
  EXPECT_EQ(
      known_hosts_text(s, "ssh-ed25519 AAAAserver cp-server\n", "ssh-ed25519 AAAAclient root@x\n"),
      "198.18.1.2 ssh-ed25519 AAAAserver\n198.18.2.2 ssh-ed25519 AAAAclient\n");
  EXPECT_EQ(known_hosts_text(s, "ssh-ed25519 K1", "ssh-ed25519 K2\n"),
            "198.18.1.2 ssh-ed25519 K1\n198.18.2.2 ssh-ed25519 K2\n");
  EXPECT_EQ(kind_of([&] { known_hosts_text(s, "garbage", "ssh-ed25519 K2"); }), ErrorKind::kIo);
}

TEST(LayoutTest, StateJsonRoundTrips) {
  const LabState s = sample_state();
  const LabState r = state_from_json(state_to_json(s), "lab.json");
  EXPECT_EQ(r.dir, s.dir);
  EXPECT_EQ(r.ssh_config, s.ssh_config);
  EXPECT_EQ(r.identity, s.identity);
  EXPECT_EQ(r.known_hosts, s.known_hosts);
  EXPECT_EQ(r.options.rate_bits, 200'000'000u);
  EXPECT_EQ(r.options.mtu, 9000);
  EXPECT_DOUBLE_EQ(r.options.delay_s, 0.0025);
  EXPECT_EQ(r.options.disk_bytes, 256ull << 20);
  EXPECT_EQ(r.options.ram_bytes, 64ull << 20);
  for (auto [a, b] : {std::pair{&r.server, &s.server}, std::pair{&r.client, &s.client}}) {
    EXPECT_EQ(a->role, b->role);
    EXPECT_EQ(a->netns, b->netns);
    EXPECT_EQ(a->alias, b->alias);
    EXPECT_EQ(a->hostname, b->hostname);
    EXPECT_EQ(a->mgmt_address, b->mgmt_address);
    EXPECT_EQ(a->data_address, b->data_address);
    EXPECT_EQ(a->data_ifname, b->data_ifname);
    EXPECT_EQ(a->ram_dir, b->ram_dir);
    EXPECT_EQ(a->disk_dir, b->disk_dir);
    EXPECT_EQ(a->loop_device, b->loop_device);
    EXPECT_EQ(a->sshd_pid, b->sshd_pid);
  }
  EXPECT_EQ(r.sw.netns, s.sw.netns);
  // The switch and the path options survive too.
  LabState p = s;
  p.options.path_rate_bits = 100'000'000;
  p.options.server_mtu = 9000;
  p.options.client_mtu = 1400;
  p.options.samba_params = {"smb2 max read = 16384"};
  p.options.vsftpd_params = {"local_max_rate=1000"};
  p.options.ganesha_params = {"MaxWrite = 65536"};
  p.sw.delay_mode = kDelayLine;
  p.sw.delay_line_pid = 777;
  const LabState rp = state_from_json(state_to_json(p), "lab.json");
  EXPECT_EQ(rp.options.path_rate_bits, 100'000'000u);
  EXPECT_EQ(rp.options.server_mtu, 9000);
  EXPECT_EQ(rp.options.client_mtu, 1400);
  EXPECT_EQ(rp.options.samba_params, p.options.samba_params);
  EXPECT_EQ(rp.options.vsftpd_params, p.options.vsftpd_params);
  EXPECT_EQ(rp.options.ganesha_params, p.options.ganesha_params);
  EXPECT_EQ(rp.sw.netns, "cp-switch");
  EXPECT_EQ(rp.sw.delay_mode, "delay-line");
  EXPECT_EQ(rp.sw.delay_line_pid, 777);
  // Large values survive (4 TiB disk, 100 Gbit/s).
  LabState big = s;
  big.options.disk_bytes = 4ull << 40;
  big.options.rate_bits = 100'000'000'000ull;
  const LabState rb = state_from_json(state_to_json(big), "lab.json");
  EXPECT_EQ(rb.options.disk_bytes, 4ull << 40);
  EXPECT_EQ(rb.options.rate_bits, 100'000'000'000ull);
}

TEST(LayoutTest, PlanListsBothProtocolsOnBothMedia) {
  const LabState s = plan(LabOptions{}, "/srv/lab");
  ASSERT_EQ(s.server.shares.size(), 6u);
  EXPECT_EQ(s.server.shares[0].protocol, "ftp");
  EXPECT_EQ(s.server.shares[0].medium, "ram");
  EXPECT_EQ(s.server.shares[0].url, "ftp://198.18.0.1/ram");
  EXPECT_EQ(s.server.shares[0].server_dir, "/srv/lab/server/ram/share");
  EXPECT_EQ(s.server.shares[3].url, "smb://198.18.0.1/disk");
  EXPECT_EQ(s.server.shares[3].server_dir, "/srv/lab/server/disk/share");
  EXPECT_EQ(s.server.shares[4].url, "nfs://198.18.0.1/ram");
  EXPECT_EQ(s.server.shares[4].server_dir, "/srv/lab/server/ram/share");
  EXPECT_EQ(s.server.shares[5].url, "nfs://198.18.0.1/disk");
  EXPECT_EQ(s.server.shares[5].medium, "disk");
  EXPECT_TRUE(s.client.shares.empty());
  EXPECT_EQ(s.share_user, "cplab");
  EXPECT_EQ(s.share_password_file, "/srv/lab/share_password");
  EXPECT_FALSE(s.share_user_created);
  const ServerFiles f = server_files(s);
  EXPECT_EQ(f.ro_share, "/srv/lab/server/ram/ro");
  EXPECT_EQ(f.ftp_root, "/srv/lab/server/ftp/root");
  EXPECT_EQ(f.smb_conf, "/srv/lab/server/samba/smb.conf");
}

// "key=value" lines (vsftpd) or "  key = value" lines (smb.conf) -> map.
std::map<std::string, std::string> kv_map(const std::string& text, const std::string& sep) {
  std::map<std::string, std::string> m;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && line[0] == ' ') line.erase(0, 1);
    const size_t at = line.find(sep);
    if (line.empty() || line[0] == '#' || at == std::string::npos) continue;
    m[line.substr(0, at)] = line.substr(at + sep.size());
  }
  return m;
}

TEST(LayoutTest, VsftpdListensOnTheDataAddressWithNamespaceFixes) {
  const auto m = kv_map(vsftpd_conf_text(plan(LabOptions{}, "/srv/lab")), "=");
  EXPECT_EQ(m.at("listen_address"), "198.18.0.1");
  EXPECT_EQ(m.at("listen_port"), "21");
  EXPECT_EQ(m.at("background"), "NO");
  EXPECT_EQ(m.at("anonymous_enable"), "NO");
  EXPECT_EQ(m.at("write_enable"), "YES");
  EXPECT_EQ(m.at("local_root"), "/srv/lab/server/ftp/root");
  EXPECT_EQ(m.at("secure_chroot_dir"), "/srv/lab/server/ftp/empty");
  EXPECT_EQ(m.at("seccomp_sandbox"), "NO");
  // vsftpd's own defaults (isolate, isolate_network = YES) are left alone.
  EXPECT_EQ(m.count("isolate"), 0u);
  EXPECT_EQ(m.count("isolate_network"), 0u);
  EXPECT_EQ(m.at("pasv_min_port"), "30000");
  EXPECT_EQ(m.at("pasv_max_port"), "30099");
  // TLS offered on the same port, with ciphers OpenSSL 3 accepts.
  EXPECT_EQ(m.at("ssl_enable"), "YES");
  EXPECT_EQ(m.at("force_local_logins_ssl"), "NO");
  EXPECT_EQ(m.at("force_local_data_ssl"), "NO");
  EXPECT_EQ(m.at("rsa_cert_file"), "/srv/lab/server/ftp/ftps-cert.pem");
  EXPECT_EQ(m.at("rsa_private_key_file"), "/srv/lab/server/ftp/ftps-key.pem");
  EXPECT_EQ(m.at("ssl_ciphers"), "HIGH");
  EXPECT_EQ(std::string(kVsftpdPam).find("pam_shells"), std::string::npos);
}

TEST(LayoutTest, SmbConfKeepsStateInTheLabAndExportsThreeShares) {
  const std::string text = smb_conf_text(plan(LabOptions{}, "/srv/lab"));
  const auto m = kv_map(text, " = ");
  EXPECT_EQ(m.at("interfaces"), "198.18.0.1");
  EXPECT_EQ(m.at("bind interfaces only"), "yes");
  EXPECT_EQ(m.at("server min protocol"), "SMB2_02");
  EXPECT_EQ(m.at("private dir"), "/srv/lab/server/samba/private");
  EXPECT_EQ(m.at("pid directory"), "/srv/lab/server/samba/run");
  EXPECT_EQ(m.at("map to guest"), "never");
  for (const auto& [name, path] : {std::pair{"[ram]", "/srv/lab/server/ram/share"},
                                   std::pair{"[disk]", "/srv/lab/server/disk/share"},
                                   std::pair{"[ro]", "/srv/lab/server/ram/ro"}}) {
    const size_t at = text.find(name);
    ASSERT_NE(at, std::string::npos) << name;
    const std::string section = text.substr(at, text.find("\n[", at + 1) - at);
    EXPECT_NE(section.find(std::string("path = ") + path), std::string::npos) << section;
    EXPECT_NE(section.find("valid users = cplab"), std::string::npos) << section;
    EXPECT_NE(section.find(name == std::string("[ro]") ? "read only = yes" : "read only = no"),
              std::string::npos)
        << section;
  }
  // Every state dir is under the lab dir.
  for (const std::string& d : samba_dirs(server_files(plan(LabOptions{}, "/srv/lab")))) {
    EXPECT_EQ(d.rfind("/srv/lab/server/samba/", 0), 0u) << d;
  }
}

TEST(LayoutTest, ServerStartEntersTheServerHostAndPassesPathsAsArguments) {
  LabState s = plan(LabOptions{}, "/srv/lab");
  s.server.sshd_pid = 4242;
  const Argv a = server_start_argv(s, "ftp smb");
  EXPECT_EQ(Argv(a.begin(), a.begin() + 7),
            (Argv{"nsenter", "-t", "4242", "-m", "-u", "-n", "--"}));
  EXPECT_EQ(a[9], kServerStartScript);
  EXPECT_EQ(std::string(kServerStartScript).find("/srv/lab"), std::string::npos);
  EXPECT_EQ(a.size(), 11u + 12u);  // through the ps name, then $1..$12
  EXPECT_EQ(a[11], "cplab");
  EXPECT_EQ(a[12], "/srv/lab/server/ram/share");
  EXPECT_EQ(a.back(), "ftp smb");
}

TEST(LayoutTest, StateJsonCarriesSharesServersAndThrottle) {
  LabState s = sample_state();
  s.server.ftpd_pid = 77;
  s.server.smbd_pid = 78;
  s.server.nfsd_pid = 79;
  s.server.rpcbind_pid = 80;
  s.share_user_created = true;
  s.throttle.smbd_cpu = 0.25;
  s.throttle.disk_read_bps = 50'000'000;
  s.throttle.client_cpu = 0.3;
  s.throttle.client_disk_read_bps = 40'000'000;
  s.throttle.client_disk_write_bps = 20'000'000;
  s.throttle.cgroups = {"/sys/fs/cgroup/cpu/chokepoint-lab-smbd"};
  const LabState r = state_from_json(state_to_json(s), "lab.json");
  ASSERT_EQ(r.server.shares.size(), 6u);
  EXPECT_EQ(r.server.shares[1].url, s.server.shares[1].url);
  EXPECT_EQ(r.server.shares[4].protocol, "nfs");
  EXPECT_EQ(r.server.nfsd_pid, 79);
  EXPECT_EQ(r.server.rpcbind_pid, 80);
  EXPECT_EQ(r.server.shares[1].server_dir, s.server.shares[1].server_dir);
  EXPECT_EQ(r.server.ftpd_pid, 77);
  EXPECT_EQ(r.server.smbd_pid, 78);
  EXPECT_EQ(r.share_user, "cplab");
  EXPECT_TRUE(r.share_user_created);
  EXPECT_EQ(r.share_password_file, s.share_password_file);
  EXPECT_DOUBLE_EQ(r.throttle.smbd_cpu, 0.25);
  EXPECT_EQ(r.throttle.disk_read_bps, 50'000'000u);
  EXPECT_DOUBLE_EQ(r.throttle.client_cpu, 0.3);
  EXPECT_EQ(r.throttle.client_disk_read_bps, 40'000'000u);
  EXPECT_EQ(r.throttle.client_disk_write_bps, 20'000'000u);
  EXPECT_EQ(r.throttle.cgroups, s.throttle.cgroups);
}

TEST(LayoutTest, StateJsonFromBeforeTheServersStillLoads) {
  std::string text = state_to_json(sample_state());
  // Cut the new fields, as an older chokepoint wrote it.
  boost::json::object o = boost::json::parse(text).as_object();
  for (const char* k : {"share_user", "share_password_file", "share_user_created", "throttle"}) {
    o.erase(k);
  }
  for (const char* h : {"server", "client"}) {
    for (const char* k : {"shares", "ftpd_pid", "smbd_pid"}) o[h].as_object().erase(k);
  }
  const LabState r = state_from_json(boost::json::serialize(o), "old.json");
  EXPECT_TRUE(r.server.shares.empty());
  EXPECT_EQ(r.server.ftpd_pid, 0);
  EXPECT_TRUE(r.share_user.empty());
  EXPECT_FALSE(r.share_user_created);
  EXPECT_TRUE(r.throttle.cgroups.empty());
}

TEST(LayoutTest, StateJsonErrorsNameTheFileAndField) {
  const std::string good = state_to_json(sample_state());
  try {
    state_from_json("{not json", "/x/lab.json");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kConfig);
    EXPECT_NE(std::string(e.what()).find("/x/lab.json"), std::string::npos);
    EXPECT_NE(e.hint().find("lab down"), std::string::npos);
  }
  std::string missing = good;
  missing.replace(missing.find("\"loop_device\""), 13, "\"loop_devicX\"");
  try {
    state_from_json(missing, "/x/lab.json");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("loop_device"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("missing"), std::string::npos) << e.what();
  }
  std::string typed = good;
  typed.replace(typed.find("\"mtu\":9000"), 10, "\"mtu\":\"9000\"");
  EXPECT_EQ(kind_of([&] { state_from_json(typed, "f"); }), ErrorKind::kConfig);
  std::string version = good;
  version.replace(version.find("\"version\":1"), 11, "\"version\":7");
  EXPECT_EQ(kind_of([&] { state_from_json(version, "f"); }), ErrorKind::kConfig);
  EXPECT_EQ(kind_of([&] { state_from_json("[1,2]", "f"); }), ErrorKind::kConfig);
}

}  // namespace
}  // namespace cp::lab
