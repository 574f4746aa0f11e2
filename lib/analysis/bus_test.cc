// The bus beneath each disk in the ladder and the verdict (bus_rules.cc), with
// facts shaped as the agent's probe gives them (core/facts_message.h BusFacts:
// kind, link as sysfs says it, payload ceiling after line coding).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <string>
#include <vector>

#include "analysis/ladder.h"
#include "analysis/testing/findings.h"

namespace cp::analysis {
namespace {

using testing::analyzed;
using testing::finding;
using testing::names_layer;

// Payload ceilings as probe/linux/bus.cc computes them, bytes/s.
constexpr double kSata3G = 300e6;          // 3.0 Gbps, 8b/10b
constexpr double kSata6G = 600e6;          // 6.0 Gbps, 8b/10b
constexpr double kPcie3x4 = 3938461538.0;  // 8.0 GT/s x4, 128b/130b
constexpr double kUsb5G = 500e6;           // 5000 Mbit/s, 8b/10b

std::string bus_json(const std::string& kind, const std::string& link, double ceiling) {
  return fmt::format(R"({{"kind":"{}","link":"{}","ceiling_bytes_per_s":{:.0f}}})", kind, link,
                     ceiling);
}

// A host's facts: a 10 GbE NIC and its disk_dir's device as the probe reports it.
std::string facts(const std::string& role, const std::string& device_json) {
  return fmt::format(R"({{"hostname":"{}","net":{{"name":"eth0","mtu":1500,"speed_mbit":10000}},)"
                     R"("disk_dir":{{"path":"/srv","fs_type":"ext4","device":{}}}}})",
                     role, device_json);
}
std::string one_disk(const std::string& name, const std::string& bus) {
  return fmt::format(R"({{"name":"{0}","disk":"{0}","partition":false,"slaves":[],"bus":{1}}})",
                     name, bus);
}

void add_stage(RunRecord& run, const std::string& layer, const std::string& where,
               const std::string& op, uint64_t size, std::vector<double> mbps) {
  StageRecord st;
  st.layer = layer;
  st.where = where;
  st.status = "complete";
  for (double v : mbps) {
    SampleRecord s;
    s.op = op;
    s.size = size;
    s.bytes = size ? size : static_cast<uint64_t>(v * 2e6);
    s.seconds = double(s.bytes) / (v * 1e6);
    s.id = static_cast<int64_t>(run.stages.size() * 100 + st.samples.size() + 1);
    st.samples.push_back(s);
  }
  run.stages.push_back(st);
}

// Server disk reads `disk_mbps` on `device`; TCP and the client disk are far faster.
RunRecord run_with(const std::string& device, std::vector<double> disk_mbps) {
  RunRecord run;
  run.hosts.push_back({"server", "server", facts("server", device)});
  run.hosts.push_back({"client", "client", facts("client", one_disk("nvme0n1", "null"))});
  add_stage(run, "disk", "server", "read", 100'000'000, disk_mbps);
  add_stage(run, "disk", "client", "write", 100'000'000, {2000, 2010, 1990});
  add_stage(run, "tcp", "server->client", "send", 0, {1100, 1105, 1098});
  return run;
}

const Row& server_disk(const Analysis& a) {
  const Row* r = find_row(a, "disk:server:read:100000000");
  EXPECT_NE(r, nullptr);
  return *r;
}

TEST(Bus, DiskRowIsHeldAgainstItsSataLinksTheoreticalCeiling) {
  const Analysis a =
      analyzed(run_with(one_disk("sda", bus_json("sata", "3.0 Gbps", kSata3G)), {150, 152, 149}));
  const Row& r = server_disk(a);
  EXPECT_EQ(r.bus.kind, "sata");
  EXPECT_DOUBLE_EQ(r.bus.theoretical, kSata3G);
  EXPECT_DOUBLE_EQ(r.bus.effective(), kSata3G * kBusEffective);
  EXPECT_NEAR(r.bus_ratio, 0.5, 0.001);
}

TEST(Bus, DiskAtItsSataLinksEffectiveCeilingIsCappedByTheBus) {
  const Analysis a =
      analyzed(run_with(one_disk("sda", bus_json("sata", "3.0 Gbps", kSata3G)), {240, 242, 239}));
  const Finding* f = finding(a, "server -> client");
  ASSERT_TRUE(names_layer(f, "path.bus", "server bus"));
  EXPECT_EQ(f->cap, "disk:server:read:100000000");
  EXPECT_NEAR(f->numbers.at("bus_ratio"), 0.80, 0.001);
  EXPECT_EQ(f->words.at("bus_kind"), "sata");
  EXPECT_DOUBLE_EQ(f->numbers.at("bus_theoretical_bytes_per_s"), kSata3G);
}

TEST(Bus, DiskBelowItsBusEffectiveCeilingIsTheDiskItself) {
  const Analysis a =
      analyzed(run_with(one_disk("sda", bus_json("sata", "6.0 Gbps", kSata6G)), {240, 242, 239}));
  const Finding* f = finding(a, "server -> client");
  ASSERT_TRUE(names_layer(f, "path.slowest", "server disk"));
}

TEST(Bus, NvmeDiskAtItsPcieLinksEffectiveCeilingIsCappedByTheBus) {
  RunRecord run =
      run_with(one_disk("nvme0n1", bus_json("pcie", "8.0 GT/s PCIe x4", kPcie3x4)), {3200, 3210});
  // TCP and the client disk far above: 4 GB/s and 5 GB/s.
  for (SampleRecord& s : run.stages[2].samples) s.seconds = double(s.bytes) / 4000e6;
  for (SampleRecord& s : run.stages[1].samples) s.seconds = double(s.bytes) / 5000e6;
  run.hosts[0].facts_json =
      fmt::format(R"({{"hostname":"server","net":{{"name":"eth0","mtu":1500,"speed_mbit":100000}},)"
                  R"("disk_dir":{{"path":"/srv","device":{}}}}})",
                  one_disk("nvme0n1", bus_json("pcie", "8.0 GT/s PCIe x4", kPcie3x4)));
  const Analysis a = analyzed(run);
  const Finding* f = finding(a, "server -> client");
  ASSERT_TRUE(names_layer(f, "path.bus", "server bus"));
  EXPECT_EQ(f->words.at("bus_kind"), "pcie");
}

TEST(Bus, UsbDiskBelowItsLinksEffectiveCeilingKeepsTheDisk) {
  const Analysis a =
      analyzed(run_with(one_disk("sdc", bus_json("usb", "5000 Mbit/s", kUsb5G)), {350, 352, 349}));
  EXPECT_NEAR(server_disk(a).bus_ratio, 0.70, 0.01);
  EXPECT_EQ(finding(a, "server -> client")->layer, "server disk");
}

TEST(Bus, LoopDeviceHasNoBusAndNoCeiling) {
  const Analysis a = analyze(
      stored::decode(run_with(one_disk("loop0", bus_json("virtual", "", 0)), {3000, 3010, 2990})));
  const Row& r = server_disk(a);
  EXPECT_EQ(r.bus.kind, "virtual");
  EXPECT_EQ(r.bus.theoretical, 0);
  EXPECT_EQ(r.bus_ratio, 0);
  EXPECT_NE(finding(a, "server -> client")->layer, "server bus");
}

TEST(Bus, OlderAgentWithoutBusFactsLeavesTheRowWithoutABus) {
  const Analysis a = analyzed(
      run_with(R"({"name":"sda","disk":"sda","partition":false,"slaves":[]})", {240, 241}));
  EXPECT_TRUE(server_disk(a).bus.empty());
  EXPECT_EQ(finding(a, "server -> client")->layer, "server disk");
}

std::string md_with(const std::string& member_buses) {
  return fmt::format(R"({{"name":"md0","disk":"md0","partition":false,"slaves":["sda1","sdb1"],)"
                     R"("bus":{},"member_buses":[{}]}})",
                     bus_json("virtual", "", 0), member_buses);
}

TEST(Bus, ArrayIsHeldAgainstItsMembersLinksTogether) {
  const std::string members =
      fmt::format(R"({{"member":"sda1","bus":{}}},{{"member":"sdb1","bus":{}}})",
                  bus_json("sata", "3.0 Gbps", kSata3G), bus_json("sata", "3.0 Gbps", kSata3G));
  const Analysis fast = analyzed(run_with(md_with(members), {500, 505, 498}));
  EXPECT_EQ(server_disk(fast).bus.kind, "members");
  EXPECT_EQ(server_disk(fast).bus.links.size(), 2u);
  EXPECT_DOUBLE_EQ(server_disk(fast).bus.theoretical, 2 * kSata3G);
  EXPECT_EQ(finding(fast, "server -> client")->layer, "server bus");
  // At one member's ceiling only: the two links together are not the limit.
  const Analysis slow = analyzed(run_with(md_with(members), {290, 292, 288}));
  EXPECT_EQ(finding(slow, "server -> client")->layer, "server disk");
}

TEST(Bus, ArrayWithAMemberOnNoBusHasNoCeiling) {
  const std::string members =
      fmt::format(R"({{"member":"sda1","bus":{}}},{{"member":"loop1","bus":{}}})",
                  bus_json("sata", "3.0 Gbps", kSata3G), bus_json("virtual", "", 0));
  const Analysis a = analyzed(run_with(md_with(members), {290, 292, 288}));
  EXPECT_EQ(server_disk(a).bus.kind, "members");
  EXPECT_EQ(server_disk(a).bus.theoretical, 0);
  EXPECT_EQ(finding(a, "server -> client")->layer, "server disk");
}

TEST(Bus, ArrayOfLoopDevicesHasNoBus) {
  const std::string members =
      fmt::format(R"({{"member":"loop0","bus":{}}},{{"member":"loop1","bus":{}}})",
                  bus_json("virtual", "", 0), bus_json("virtual", "", 0));
  const Analysis a = analyzed(run_with(md_with(members), {900}));
  EXPECT_EQ(server_disk(a).bus.kind, "virtual");
}

TEST(Bus, ProtocolFromADiskAtItsBusCeilingNamesTheServersBus) {
  RunRecord run = run_with(one_disk("sda", bus_json("sata", "3.0 Gbps", kSata3G)), {240, 242, 239});
  add_stage(run, "smb", "ram", "read", 100'000'000, {900, 905, 898});
  add_stage(run, "smb", "disk", "read", 100'000'000, {236, 238, 235});
  const Analysis a = analyzed(run);
  const Finding* f = finding(a, "smb disk read");
  ASSERT_TRUE(names_layer(f, "protocol.disk_bus", "server bus"));
  EXPECT_EQ(f->cap, "disk:server:read:100000000");
}

}  // namespace
}  // namespace cp::analysis
