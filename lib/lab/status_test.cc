#include "lab/status.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include "lab/layout.h"

namespace cp::lab {
namespace {

namespace json = boost::json;

// What tc 6.1 printed for the lab's 200mbit tbf.
constexpr const char* kTbfJson = R"([{"kind":"tbf","handle":"8002:","root":true,"refcnt":3,)"
                                 R"("options":{"rate":25000000,"burst":25000,"lat":50000}}])";

TEST(StatusTest, ParsesTbf) {
  HostStatus h;
  parse_qdiscs(kTbfJson, &h);
  EXPECT_EQ(h.qdisc, "tbf");
  EXPECT_EQ(h.rate_bits, 200'000'000u);
  EXPECT_EQ(h.burst_bytes, 25'000u);
  EXPECT_EQ(h.delay_s, 0);
}

TEST(StatusTest, ParsesNetemWithTbfChild) {
  HostStatus h;
  parse_qdiscs(R"([{"kind":"netem","handle":"1:","root":true,"refcnt":2,)"
               R"("options":{"limit":1000,"delay":{"delay":0.002,"jitter":0,"correlation":0}}},)"
               R"({"kind":"tbf","handle":"10:","parent":"1:1",)"
               R"("options":{"rate":125000000,"burst":125000,"lat":50000}}])",
               &h);
  EXPECT_EQ(h.qdisc, "netem+tbf");
  EXPECT_EQ(h.rate_bits, 1'000'000'000u);
  EXPECT_DOUBLE_EQ(h.delay_s, 0.002);
}

TEST(StatusTest, UnshapedAndGarbage) {
  HostStatus h;
  parse_qdiscs(R"([{"kind":"noqueue","handle":"0:","root":true,"refcnt":2,"options":{}}])", &h);
  EXPECT_EQ(h.qdisc, "noqueue");
  EXPECT_EQ(h.rate_bits, 0u);
  HostStatus g;
  parse_qdiscs("not json", &g);
  parse_qdiscs("", &g);
  parse_qdiscs(R"({"kind":"tbf"})", &g);
  EXPECT_EQ(g.qdisc, "");
  EXPECT_EQ(g.rate_bits, 0u);
}

TEST(StatusTest, ParsesIpv4AddressesAndMtu) {
  const char* addr =
      R"([{"ifindex":1,"ifname":"lo","mtu":65536,"addr_info":[{"family":"inet","local":"127.0.0.1","prefixlen":8}]},)"
      R"({"ifindex":2,"ifname":"cpd-s","mtu":9000,"addr_info":[{"family":"inet","local":"198.18.0.1","prefixlen":24},)"
      R"({"family":"inet6","local":"fe80::1","prefixlen":64}]},)"
      R"({"ifindex":3,"ifname":"cpm","addr_info":[{"family":"inet","local":"198.18.1.2","prefixlen":30}]}])";
  EXPECT_EQ(
      parse_addresses(addr),
      (std::vector<std::string>{"lo 127.0.0.1/8", "cpd-s 198.18.0.1/24", "cpm 198.18.1.2/30"}));
  EXPECT_TRUE(parse_addresses("").empty());
  EXPECT_EQ(parse_mtu(R"([{"ifindex":2,"ifname":"cpd-s","mtu":9000}])"), 9000);
  EXPECT_EQ(parse_mtu("[]"), 0);
  EXPECT_EQ(parse_mtu("Device \"x\" does not exist."), 0);
}

TEST(StatusTest, ParsesFindmnt) {
  MountView m = parse_findmnt("tmpfs 2147483648 cp-ram\n");
  EXPECT_TRUE(m.mounted);
  EXPECT_EQ(m.fstype, "tmpfs");
  EXPECT_EQ(m.size_bytes, 2147483648u);
  EXPECT_EQ(m.source, "cp-ram");
  m = parse_findmnt("ext4 3153272832 /dev/loop3\n");
  EXPECT_EQ(m.fstype, "ext4");
  EXPECT_EQ(m.source, "/dev/loop3");
  EXPECT_FALSE(parse_findmnt("").mounted);
  EXPECT_FALSE(parse_findmnt("ext4 big /dev/loop3").mounted);
}

LabStatus sample(bool healthy) {
  LabOptions o;
  o.rate_bits = 200'000'000;
  LabStatus st;
  st.state = plan(o, "/var/lib/chokepoint-lab");
  st.state.server.loop_device = "/dev/loop0";
  st.state.server.sshd_pid = 100;
  st.healthy = healthy;
  st.why = healthy ? "" : "sshd of cp-client (pid 0) is not running";
  for (auto [hs, h] :
       {std::pair{&st.server, &st.state.server}, std::pair{&st.client, &st.state.client}}) {
    hs->host = *h;
    hs->netns_present = true;
    hs->sshd_alive = h->role == "server";
    hs->hostname_inside = h->role == "server" ? "cp-server" : "";
    parse_qdiscs(kTbfJson, hs);
    hs->mtu = 1500;
  }
  st.server.ram = parse_findmnt("tmpfs 2147483648 cp-ram");
  st.server.disk = parse_findmnt("ext4 3221225472 /dev/loop0");
  st.server.readahead_kib = 128;
  st.server.loop_direct_io = true;
  st.client.problems.push_back("sshd of cp-client (pid 0) is not running in cp-client");
  return st;
}

TEST(StatusTest, TextShowsBothHostsAndTheLink) {
  const std::string t = status_text(sample(true));
  for (const char* want : {"lab instance 0 in /var/lib/chokepoint-lab: up",
                           "cp-server (network namespace cp-server: present)",
                           "cp-client (network namespace cp-client: present)", "pid 100 (alive)",
                           "/var/lib/chokepoint-lab/server/ram: tmpfs, 2 GiB",
                           "/var/lib/chokepoint-lab/server/disk: ext4, 3 GiB",
                           "/dev/loop0 (direct I/O), readahead 128 KiB",
                           "cpd-s: 200 Mbit/s (tbf, burst 25000 B), MTU 1500", "198.18.0.2",
                           "not mounted", "problem    sshd of cp-client"}) {
    EXPECT_NE(t.find(want), std::string::npos) << "missing '" << want << "' in:\n" << t;
  }
  EXPECT_EQ(t.find("UNHEALTHY"), std::string::npos);
  const std::string broken = status_text(sample(false));
  EXPECT_NE(broken.find("UNHEALTHY (sshd of cp-client (pid 0) is not running)"), std::string::npos);
  EXPECT_NE(broken.find("chokepoint lab up"), std::string::npos);
}

TEST(StatusTest, SharesTextNamesTheLoginAndTheFtpsCertificate) {
  LabState s = plan(LabOptions{}, "/var/lib/chokepoint-lab");
  ASSERT_FALSE(s.server.shares.empty());
  const std::string t = shares_text(s);
  for (const char* want :
       {"share      ftp://198.18.0.1/ram", "share      smb://198.18.0.1/disk",
        "login      user cplab", "password in /var/lib/chokepoint-lab/share_password",
        "ftps       ftps://198.18.0.1/ram (or /disk): options = "
        "ca_file=/var/lib/chokepoint-lab/server/ftp/ftps-cert.pem"}) {
    EXPECT_NE(t.find(want), std::string::npos) << "missing '" << want << "' in:\n" << t;
  }
  // `lab status` shows the same lines.
  EXPECT_NE(status_text(sample(true)).find(t), std::string::npos);
  s.server.shares.clear();
  EXPECT_EQ(shares_text(s), "");
}

TEST(StatusTest, JsonCarriesTheSameFacts) {
  const json::value v = json::parse(status_json(sample(true)));
  const json::object& o = v.as_object();
  EXPECT_TRUE(o.at("up").as_bool());
  EXPECT_TRUE(o.at("healthy").as_bool());
  EXPECT_EQ(o.at("options").as_object().at("rate_bits").to_number<uint64_t>(), 200'000'000u);
  const json::object& s = o.at("server").as_object();
  EXPECT_EQ(s.at("netns").as_string(), "cp-server");
  EXPECT_EQ(s.at("sshd_pid").to_number<int>(), 100);
  EXPECT_TRUE(s.at("sshd_alive").as_bool());
  EXPECT_EQ(s.at("ram").as_object().at("fstype").as_string(), "tmpfs");
  EXPECT_EQ(s.at("disk").as_object().at("size_bytes").to_number<uint64_t>(), 3221225472u);
  EXPECT_EQ(s.at("rate_bits").to_number<uint64_t>(), 200'000'000u);
  EXPECT_EQ(s.at("mtu").to_number<int>(), 1500);
  EXPECT_EQ(s.at("readahead_kib").to_number<int>(), 128);
  const json::object& c = o.at("client").as_object();
  EXPECT_FALSE(c.at("sshd_alive").as_bool());
  EXPECT_EQ(c.at("problems").as_array().size(), 1u);
  EXPECT_TRUE(o.at("down").as_array().empty());
}

// `lab status` shows the client's throttles beside the server's, in its text
// and as numbers in its JSON.
TEST(StatusTest, ShowsTheClientThrottles) {
  LabStatus st = sample(true);
  st.state.throttle.smbd_cpu = 0.2;
  st.state.throttle.client_cpu = 0.25;
  st.state.throttle.client_disk_read_bps = 50'000'000;
  st.state.throttle.client_disk_write_bps = 10'000'000;
  st.state.throttle.cgroups = {"/sys/fs/cgroup/cpu/chokepoint-lab-client"};
  const std::string t = status_text(st);
  EXPECT_NE(t.find("throttle   smbd CPU 20% of a core; client CPU 25% of a core; client disk read "
                   "50 MB/s; client disk write 10 MB/s"),
            std::string::npos)
      << t;
  const json::value v = json::parse(status_json(st));
  const json::object& th = v.at("servers").at("throttle").as_object();
  EXPECT_DOUBLE_EQ(th.at("client_cpu").to_number<double>(), 0.25);
  EXPECT_EQ(th.at("client_disk_read_bps").to_number<uint64_t>(), 50'000'000u);
  EXPECT_EQ(th.at("client_disk_write_bps").to_number<uint64_t>(), 10'000'000u);
  EXPECT_DOUBLE_EQ(th.at("smbd_cpu").to_number<double>(), 0.2);
  EXPECT_EQ(th.at("cgroups").as_array().size(), 1u);
}

TEST(StatusTest, JsonReportsThePathAndWhatIsDown) {
  LabStatus st = sample(false);
  st.down = {"client-sshd", "delay-line"};
  st.state.options.path_rate_bits = 100'000'000;
  st.state.options.delay_s = 0.005;
  st.state.options.server_mtu = 9000;
  st.state.options.samba_params = {"smb2 max read = 16384"};
  st.state.sw.delay_mode = kDelayLine;
  st.state.sw.delay_line_pid = 4321;
  st.switch_present = true;
  PortStatus p;
  p.ifname = "sw-s";
  p.toward = "server";
  p.qdisc = "tbf";
  p.rate_bits = 100'000'000;
  p.mtu = 9000;
  st.ports = {p};
  st.delay_line = parse_delay_line_stats(
      R"({"directions":[{"from":"sw-s","to":"sw-c","frames":3,"bytes":4500,"dropped":1,)"
      R"("send_errors":0,"max_queued_bytes":3000}]})");
  const json::object o = json::parse(status_json(st)).as_object();
  EXPECT_FALSE(o.at("healthy").as_bool());
  EXPECT_EQ(o.at("down").as_array(), (json::array{"client-sshd", "delay-line"}));
  const json::object& path = o.at("path").as_object();
  EXPECT_EQ(path.at("switch_netns").as_string(), "cp-switch");
  EXPECT_EQ(path.at("rate_bits").to_number<uint64_t>(), 100'000'000u);
  EXPECT_DOUBLE_EQ(path.at("delay_s").as_double(), 0.005);
  EXPECT_EQ(path.at("delay_mode").as_string(), "delay-line");
  EXPECT_EQ(path.at("server_mtu").to_number<int>(), 9000);
  EXPECT_EQ(path.at("client_mtu").to_number<int>(), 1500);
  EXPECT_EQ(path.at("switch_mtu").to_number<int>(), 9000);
  const json::object& port = path.at("ports").as_array()[0].as_object();
  EXPECT_EQ(port.at("ifname").as_string(), "sw-s");
  EXPECT_EQ(port.at("rate_bits").to_number<uint64_t>(), 100'000'000u);
  const json::object& line = path.at("delay_line").as_object();
  EXPECT_EQ(line.at("pid").to_number<int>(), 4321);
  EXPECT_EQ(line.at("directions").as_array()[0].at("dropped").to_number<int>(), 1);
  EXPECT_EQ(o.at("servers").at("samba_params").as_array(), (json::array{"smb2 max read = 16384"}));
  EXPECT_EQ(o.at("options").at("samba_params").as_array(), (json::array{"smb2 max read = 16384"}));
}

TEST(StatusTest, ParseMasterNamesTheBridge) {
  EXPECT_EQ(parse_master(R"([{"ifname":"sw-s","mtu":1500,"master":"br0"}])"), "br0");
  EXPECT_EQ(parse_master(R"([{"ifname":"sw-s","mtu":1500}])"), "");
  EXPECT_EQ(parse_master("garbage"), "");
}

TEST(StatusTest, NoLab) {
  EXPECT_EQ(no_lab_text(), "no lab is up; start one with `chokepoint lab up`\n");
  const json::value v = json::parse(no_lab_json());
  EXPECT_FALSE(v.as_object().at("up").as_bool());
  EXPECT_NE(std::string(v.as_object().at("message").as_string()).find("lab up"), std::string::npos);
  EXPECT_EQ(v.as_object().at("instance").as_int64(), 0);
}

// Another instance's status names that instance, so its `lab up` starts the right lab.
TEST(StatusTest, NoLabOfAnotherInstanceNamesIt) {
  const json::value v = json::parse(no_lab_json(7));
  EXPECT_FALSE(v.as_object().at("up").as_bool());
  EXPECT_EQ(v.as_object().at("instance").as_int64(), 7);
}

}  // namespace
}  // namespace cp::lab
