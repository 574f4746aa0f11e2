#include "lab/throttle.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace cp::lab {
namespace {

// This machine kind: cgroup v1 hierarchies plus an empty v2 (hybrid).
const char* kHybrid =
    "30 25 0:26 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755\n"
    "31 30 0:27 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "32 30 0:28 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
    "33 30 0:29 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio\n"
    "34 30 0:30 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
// A systemd machine with only v2.
const char* kPureV2 = "40 25 0:35 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";

std::string ops_text(const ThrottlePlan& p) {
  std::string out;
  for (const CgroupOp& op : p.ops) {
    out += op.kind == CgroupOp::kMkdir   ? "mkdir "
           : op.kind == CgroupOp::kWrite ? "write "
                                         : "move ";
    out += op.path;
    if (!op.value.empty()) out += " = " + op.value;
    out += "\n";
  }
  return out;
}

// The ops that make v1 cpu cgroup `name` with `quota_us` per 100 ms and move `pids` into it.
std::string v1_cpu_ops(const std::string& name, int quota_us, const std::vector<int>& pids) {
  const std::string cg = "/sys/fs/cgroup/cpu/" + name;
  std::string out = "mkdir " + cg + "\n" + "write " + cg + "/cpu.cfs_period_us = 100000\n" +
                    "write " + cg + "/cpu.cfs_quota_us = " + std::to_string(quota_us) + "\n";
  for (int pid : pids) out += "move " + cg + "/cgroup.procs = " + std::to_string(pid) + "\n";
  return out;
}

// The ops that make v1 blkio cgroup `name` limiting device `dev` to `read_bps` and
// `write_bps` (0: no limit) and move `pids` into it.
std::string v1_blkio_ops(const std::string& name, const std::string& dev, uint64_t read_bps,
                         uint64_t write_bps, const std::vector<int>& pids) {
  const std::string cg = "/sys/fs/cgroup/blkio/" + name;
  std::string out = "mkdir " + cg + "\n" + "write " + cg +
                    "/blkio.throttle.read_bps_device = " + dev + " " + std::to_string(read_bps) +
                    "\n" + "write " + cg + "/blkio.throttle.write_bps_device = " + dev + " " +
                    std::to_string(write_bps) + "\n";
  for (int pid : pids) out += "move " + cg + "/cgroup.procs = " + std::to_string(pid) + "\n";
  return out;
}

TEST(ThrottleTest, ParsesHybridAndV2Layouts) {
  CgroupLayout l = parse_cgroup_layout(kHybrid, "");
  EXPECT_EQ(l.cpu_v1, "/sys/fs/cgroup/cpu");
  EXPECT_EQ(l.blkio_v1, "/sys/fs/cgroup/blkio");
  EXPECT_EQ(l.v2, "/sys/fs/cgroup/unified");
  EXPECT_TRUE(l.v2_controllers.empty());
  l = parse_cgroup_layout(
      "31 30 0:27 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n", "");
  EXPECT_EQ(l.cpu_v1, "/sys/fs/cgroup/cpu,cpuacct");
  EXPECT_EQ(l.blkio_v1, "");
  l = parse_cgroup_layout(kPureV2, "cpuset cpu io memory pids\n");
  EXPECT_EQ(l.v2, "/sys/fs/cgroup");
  EXPECT_EQ(l.cpu_v1, "");
  EXPECT_EQ(l.v2_controllers, (std::vector<std::string>{"cpuset", "cpu", "io", "memory", "pids"}));
}

TEST(ThrottleTest, V1CpuQuotaMovesOnlySmbd) {
  LabThrottle want;
  want.smbd_cpu = 0.2;
  const ThrottlePlan p =
      plan_throttle(parse_cgroup_layout(kHybrid, ""), want, "7:0", {101, 102}, {50, 101, 102, 200});
  EXPECT_EQ(ops_text(p), v1_cpu_ops("chokepoint-lab-smbd", 20000, {101, 102}));
  EXPECT_EQ(p.cgroups, (std::vector<std::string>{"/sys/fs/cgroup/cpu/chokepoint-lab-smbd"}));
}

TEST(ThrottleTest, AnInstanceNamesItsOwnCgroups) {
  LabThrottle want;
  want.smbd_cpu = 0.5;
  want.disk_read_bps = 1'000'000;
  const ThrottlePlan p = plan_throttle(parse_cgroup_layout(kHybrid, ""), want, "7:0", {101}, {101},
                                       "chokepoint-lab-9");
  EXPECT_EQ(p.cgroups, (std::vector<std::string>{"/sys/fs/cgroup/cpu/chokepoint-lab-9-smbd",
                                                 "/sys/fs/cgroup/blkio/chokepoint-lab-9-server"}));
  // Still recognised as the lab's, so clear and down remove them.
  EXPECT_EQ(cgroup_root_of(p.cgroups[0]), "/sys/fs/cgroup/cpu");
}

TEST(ThrottleTest, V1DiskLimitsTheWholeServerHost) {
  LabThrottle want;
  want.disk_read_bps = 50'000'000;
  const ThrottlePlan p =
      plan_throttle(parse_cgroup_layout(kHybrid, ""), want, "7:3", {101}, {50, 101});
  EXPECT_EQ(ops_text(p), v1_blkio_ops("chokepoint-lab-server", "7:3", 50'000'000, 0, {50, 101}));
}

TEST(ThrottleTest, V2UsesLeavesAndIoMaxOnTheirParent) {
  LabThrottle want;
  want.smbd_cpu = 0.05;
  want.disk_write_bps = 10'000'000;
  const ThrottlePlan p =
      plan_throttle(parse_cgroup_layout(kPureV2, "cpu io"), want, "7:0", {101}, {50, 101});
  EXPECT_EQ(ops_text(p),
            "write /sys/fs/cgroup/cgroup.subtree_control = +cpu +io\n"
            "mkdir /sys/fs/cgroup/chokepoint-lab\n"
            "write /sys/fs/cgroup/chokepoint-lab/cgroup.subtree_control = +cpu +io\n"
            "write /sys/fs/cgroup/chokepoint-lab/io.max = 7:0 rbps=max wbps=10000000\n"
            "mkdir /sys/fs/cgroup/chokepoint-lab/smbd\n"
            "write /sys/fs/cgroup/chokepoint-lab/smbd/cpu.max = 5000 100000\n"
            "move /sys/fs/cgroup/chokepoint-lab/smbd/cgroup.procs = 101\n"
            "mkdir /sys/fs/cgroup/chokepoint-lab/server\n"
            "move /sys/fs/cgroup/chokepoint-lab/server/cgroup.procs = 50\n");
  EXPECT_EQ(p.cgroups, (std::vector<std::string>{"/sys/fs/cgroup/chokepoint-lab/smbd",
                                                 "/sys/fs/cgroup/chokepoint-lab/server",
                                                 "/sys/fs/cgroup/chokepoint-lab"}));
}

TEST(ThrottleTest, NfsdGetsAQuotaOfItsOwnBesideSmbd) {
  LabThrottle want;
  want.smbd_cpu = 0.5;
  want.nfsd_cpu = 0.2;
  const ThrottlePlan v1 = plan_throttle(parse_cgroup_layout(kHybrid, ""), want, "7:0", {101},
                                        {50, 101, 300}, "chokepoint-lab", {300});
  EXPECT_EQ(ops_text(v1), v1_cpu_ops("chokepoint-lab-smbd", 50000, {101}) +
                              v1_cpu_ops("chokepoint-lab-nfsd", 20000, {300}));
  // v2: ganesha.nfsd in its own leaf, left out of the server leaf.
  LabThrottle only_nfsd;
  only_nfsd.nfsd_cpu = 0.2;
  const ThrottlePlan v2 = plan_throttle(parse_cgroup_layout(kPureV2, "cpu io"), only_nfsd, "7:0",
                                        {101}, {50, 101, 300}, "chokepoint-lab", {300});
  EXPECT_EQ(ops_text(v2),
            "write /sys/fs/cgroup/cgroup.subtree_control = +cpu\n"
            "mkdir /sys/fs/cgroup/chokepoint-lab\n"
            "write /sys/fs/cgroup/chokepoint-lab/cgroup.subtree_control = +cpu\n"
            "mkdir /sys/fs/cgroup/chokepoint-lab/nfsd\n"
            "write /sys/fs/cgroup/chokepoint-lab/nfsd/cpu.max = 20000 100000\n"
            "move /sys/fs/cgroup/chokepoint-lab/nfsd/cgroup.procs = 300\n"
            "mkdir /sys/fs/cgroup/chokepoint-lab/server\n");
  EXPECT_EQ(throttle_text(want), "smbd CPU 50% of a core; ganesha.nfsd CPU 20% of a core");
}

TEST(ThrottleTest, TinyQuotaIsRaisedToTheKernelMinimum) {
  LabThrottle want;
  want.smbd_cpu = 0.001;
  const ThrottlePlan p = plan_throttle(parse_cgroup_layout(kHybrid, ""), want, "7:0", {}, {});
  EXPECT_NE(ops_text(p).find("cpu.cfs_quota_us = 1000\n"), std::string::npos) << ops_text(p);
}

TEST(ThrottleTest, MissingControllerIsUnsupported) {
  LabThrottle want;
  want.smbd_cpu = 0.2;
  try {
    plan_throttle(parse_cgroup_layout(kPureV2, "memory pids"), want, "7:0", {}, {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("no cgroup cpu controller"), std::string::npos);
  }
  LabThrottle none;
  EXPECT_TRUE(plan_throttle(CgroupLayout{}, none, "7:0", {1}, {1}).ops.empty());
}

TEST(ThrottleTest, RootsAndText) {
  EXPECT_EQ(cgroup_root_of("/sys/fs/cgroup/cpu/chokepoint-lab-smbd"), "/sys/fs/cgroup/cpu");
  EXPECT_EQ(cgroup_root_of("/sys/fs/cgroup/chokepoint-lab/server"), "/sys/fs/cgroup");
  EXPECT_EQ(cgroup_root_of("/sys/fs/cgroup/cpu/other"), "");
  LabThrottle t;
  EXPECT_EQ(throttle_text(t), "none");
  t.smbd_cpu = 0.2;
  t.disk_read_bps = 50'000'000;
  EXPECT_EQ(throttle_text(t), "smbd CPU 20% of a core; server disk read 50 MB/s");
}

// The client end: its CPU quota on every process of the client host (its sshd,
// so the agent a later session starts), its disk limits on its own device, each
// host in cgroups of its own.
TEST(ThrottleTest, V1ClientCpuAndDiskGoToTheClientHostOnly) {
  LabThrottle want;
  want.client_cpu = 0.25;
  want.client_disk_read_bps = 50'000'000;
  const ClientTargets client{"7:4", {60, 61}};
  const ThrottlePlan p = plan_throttle(parse_cgroup_layout(kHybrid, ""), want, "", {101}, {50, 101},
                                       "chokepoint-lab-7", {}, client);
  EXPECT_EQ(ops_text(p),
            v1_cpu_ops("chokepoint-lab-7-client", 25000, {60, 61}) +
                v1_blkio_ops("chokepoint-lab-7-client", "7:4", 50'000'000, 0, {60, 61}));
  EXPECT_EQ(p.cgroups, (std::vector<std::string>{"/sys/fs/cgroup/cpu/chokepoint-lab-7-client",
                                                 "/sys/fs/cgroup/blkio/chokepoint-lab-7-client"}));
  for (const std::string& c : p.cgroups) EXPECT_FALSE(cgroup_root_of(c).empty()) << c;
}

TEST(ThrottleTest, V1ServerAndClientDisksEachLimitTheirOwnDevice) {
  LabThrottle want;
  want.disk_write_bps = 10'000'000;
  want.client_disk_write_bps = 20'000'000;
  const ThrottlePlan p = plan_throttle(parse_cgroup_layout(kHybrid, ""), want, "7:3", {101},
                                       {50, 101}, "chokepoint-lab", {}, {"7:4", {60}});
  EXPECT_EQ(ops_text(p), v1_blkio_ops("chokepoint-lab-server", "7:3", 0, 10'000'000, {50, 101}) +
                             v1_blkio_ops("chokepoint-lab-client", "7:4", 0, 20'000'000, {60}));
}

TEST(ThrottleTest, V2ClientGetsALeafWithItsCpuMaxAndIoMax) {
  LabThrottle want;
  want.client_cpu = 0.2;
  want.client_disk_write_bps = 30'000'000;
  const ThrottlePlan p = plan_throttle(parse_cgroup_layout(kPureV2, "cpu io"), want, "", {101},
                                       {50, 101}, "chokepoint-lab", {}, {"7:4", {60}});
  EXPECT_EQ(ops_text(p),
            "write /sys/fs/cgroup/cgroup.subtree_control = +cpu +io\n"
            "mkdir /sys/fs/cgroup/chokepoint-lab\n"
            "write /sys/fs/cgroup/chokepoint-lab/cgroup.subtree_control = +cpu +io\n"
            "mkdir /sys/fs/cgroup/chokepoint-lab/client\n"
            "write /sys/fs/cgroup/chokepoint-lab/client/cpu.max = 20000 100000\n"
            "write /sys/fs/cgroup/chokepoint-lab/client/io.max = 7:4 rbps=max wbps=30000000\n"
            "move /sys/fs/cgroup/chokepoint-lab/client/cgroup.procs = 60\n");
  // No server leaf: the server host is not throttled.
  EXPECT_EQ(p.cgroups, (std::vector<std::string>{"/sys/fs/cgroup/chokepoint-lab/client",
                                                 "/sys/fs/cgroup/chokepoint-lab"}));
}

TEST(ThrottleTest, ClientCpuWithoutACpuControllerIsUnsupported) {
  LabThrottle want;
  want.client_cpu = 0.2;
  try {
    plan_throttle(parse_cgroup_layout(kPureV2, "io"), want, "", {}, {}, "chokepoint-lab", {},
                  {"", {60}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kUnsupported);
  }
  LabThrottle disk;
  disk.client_disk_read_bps = 1'000'000;
  EXPECT_THROW(plan_throttle(parse_cgroup_layout(kPureV2, "cpu"), disk, "", {}, {},
                             "chokepoint-lab", {}, {"7:4", {60}}),
               Error);
}

TEST(ThrottleTest, TextNamesTheClientsThrottles) {
  LabThrottle t;
  t.client_cpu = 0.25;
  t.client_disk_read_bps = 50'000'000;
  t.client_disk_write_bps = 20'000'000;
  EXPECT_EQ(throttle_text(t),
            "client CPU 25% of a core; client disk read 50 MB/s; client disk write 20 MB/s");
}

}  // namespace
}  // namespace cp::lab
