#include "probe/cpu.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <ctime>
#include <thread>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/clock.h"
#include "core/error.h"
#include "probe/test_util.h"

namespace cp::probe {
namespace {

using testing::TempDir;

// A /proc/PID/stat line: utime and stime are fields 14 and 15, starttime field 22.
std::string pid_stat(int pid, const std::string& comm, uint64_t utime, uint64_t stime,
                     uint64_t start) {
  return std::to_string(pid) + " (" + comm + ") S 1 1 1 0 -1 4194560 100 0 0 0 " +
         std::to_string(utime) + " " + std::to_string(stime) + " 0 0 20 0 1 0 " +
         std::to_string(start) + " 1000000 100 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0\n";
}

// One cpuN line: user nice system idle iowait irq softirq steal guest guest_nice.
std::string cpu_line(int n, uint64_t user, uint64_t idle, uint64_t softirq) {
  return "cpu" + std::to_string(n) + " " + std::to_string(user) + " 0 0 " + std::to_string(idle) +
         " 0 0 " + std::to_string(softirq) + " 0 0 0\n";
}

class FakeProc {
 public:
  explicit FakeProc(const std::string& root) : root_(root) {}
  void stat(const std::string& cores) {
    write(root_ + "/stat", "cpu  1 2 3 4 5 6 7 8 0 0\n" + cores + "intr 1 2 3\nctxt 99\n");
  }
  void pid(int pid, const std::string& comm, uint64_t utime, uint64_t stime, uint64_t start) {
    std::string dir = root_ + "/" + std::to_string(pid);
    ::mkdir(dir.c_str(), 0755);
    write(dir + "/stat", pid_stat(pid, comm, utime, stime, start));
  }
  void remove_pid(int pid) {
    std::string dir = root_ + "/" + std::to_string(pid);
    ::unlink((dir + "/stat").c_str());
    ::rmdir(dir.c_str());
  }
  // A process with a parent (the role rules follow it) and no tick counts of its own.
  void child(int pid, int ppid, const std::string& comm) {
    ::mkdir((root_ + "/" + std::to_string(pid)).c_str(), 0755);
    pid_with_parent(pid, ppid, comm, 0);
  }
  // `pid`'s stat with a parent and `utime` ticks.
  void pid_with_parent(int pid, int ppid, const std::string& comm, uint64_t utime) {
    std::string line = pid_stat(pid, comm, utime, 0, 7);
    const size_t at = line.find(") S 1 ");
    line.replace(at, 6, ") S " + std::to_string(ppid) + " ");
    write(root_ + "/" + std::to_string(pid) + "/stat", line);
  }
  // Thread `tid` of `pid` with `ns` on a CPU (schedstat).
  void thread(int pid, int tid, uint64_t ns) {
    std::string dir = root_ + "/" + std::to_string(pid) + "/task";
    ::mkdir(dir.c_str(), 0755);
    dir += "/" + std::to_string(tid);
    ::mkdir(dir.c_str(), 0755);
    write(dir + "/schedstat", std::to_string(ns) + " 5 3\n");
  }
  static void write(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::trunc) << text;
  }

 private:
  std::string root_;
};

TEST(CpuParse, ProcStat) {
  const std::string text =
      "cpu  10 20 30 40 50 60 70 80 90 100\n"
      "cpu0 1 2 3 4 5 6 7 8 9 10\n"
      "cpu2 100 0 0 900 0 0 0 0 0 0\n"  // cpu1 is offline
      "cpu3 5 5 5 5\n"                  // an old kernel: user nice system idle only
      "cpuX 1 2 3 4\n"
      "intr 12345 0 0\n"
      "ctxt 42\n"
      "cpu4 1 2\n";  // too short: ignored
  std::vector<CpuTimes> cores = parse_proc_stat(text);
  ASSERT_EQ(cores.size(), 4u);
  // busy = user+nice+system+irq+softirq+steal; total adds idle+iowait; guest is in user.
  EXPECT_EQ(cores[0].busy, 1u + 2 + 3 + 6 + 7 + 8);
  EXPECT_EQ(cores[0].total, 1u + 2 + 3 + 6 + 7 + 8 + 4 + 5);
  EXPECT_EQ(cores[1].busy, 0u);
  EXPECT_EQ(cores[1].total, 0u);
  EXPECT_EQ(cores[2].busy, 100u);
  EXPECT_EQ(cores[2].total, 1000u);
  EXPECT_EQ(cores[3].busy, 15u);
  EXPECT_EQ(cores[3].total, 20u);
  EXPECT_TRUE(parse_proc_stat("").empty());
  EXPECT_TRUE(parse_proc_stat("cpu 1 2 3 4\n").empty());
}

TEST(CpuParse, PidStatWithAwkwardComm) {
  std::string comm;
  uint64_t jiffies = 0, start = 0;
  ASSERT_TRUE(
      parse_pid_stat(pid_stat(42, "my (odd) proc) x", 300, 45, 777), &comm, &jiffies, &start));
  EXPECT_EQ(comm, "my (odd) proc) x");
  EXPECT_EQ(jiffies, 345u);
  EXPECT_EQ(start, 777u);
  ASSERT_TRUE(parse_pid_stat(pid_stat(1, "", 1, 2, 3), &comm, &jiffies));
  EXPECT_EQ(comm, "");
  EXPECT_EQ(jiffies, 3u);
  EXPECT_FALSE(parse_pid_stat("", &comm, &jiffies));
  EXPECT_FALSE(parse_pid_stat("12 noparens S 1 2 3", &comm, &jiffies));
  EXPECT_FALSE(parse_pid_stat("12 (short) S 1 2 3", &comm, &jiffies));
  EXPECT_FALSE(parse_pid_stat("12 (bad) S 1 1 1 0 -1 4 100 0 0 0 x 3 0", &comm, &jiffies));
}

TEST(CpuSampler, FakeProcWindow) {
  TempDir dir;
  FakeProc proc(dir.path());
  ::mkdir((dir.path() + "/self").c_str(), 0755);  // not a pid: ignored
  proc.stat(cpu_line(0, 100, 900, 0) + cpu_line(1, 0, 1000, 0));
  proc.pid(1, "init", 5, 5, 1);
  proc.pid(42, "my (weird) proc", 60, 40, 100);
  proc.pid(7, "gone", 0, 0, 50);
  proc.pid(9, "reused", 500, 500, 5);
  proc.pid(10, "idle", 3, 0, 60);
  proc.pid(11, "p11", 0, 0, 70);
  proc.pid(12, "p12", 0, 0, 70);
  proc.pid(13, "p13", 0, 0, 70);
  FakeProc::write(dir.path() + "/99", "not a directory");

  // An interval far longer than the test: only sample_now() closes intervals.
  CpuSampler sampler(3600, dir.path());
  sampler.start();
  // Interval 1: cpu0 90% busy, cpu1 10% (softirq).
  proc.stat(cpu_line(0, 190, 910, 0) + cpu_line(1, 0, 1090, 10));
  sampler.sample_now();
  // Interval 2 (closed by stop, far shorter than interval_s: not counted in the max):
  // cpu0 10%, cpu1 90%.
  proc.stat(cpu_line(0, 200, 1000, 0) + cpu_line(1, 0, 1100, 100));
  proc.pid(1, "init", 6, 6, 1);                    // +2 ticks
  proc.pid(42, "my (weird) proc", 300, 100, 100);  // +300
  proc.remove_pid(7);
  proc.pid(8, "new", 30, 20, 400);    // started in the window: all 50 ticks count
  proc.pid(9, "reused", 15, 5, 500);  // pid reused (new start time): 20 ticks
  proc.pid(11, "p11", 2, 2, 70);      // +4
  proc.pid(12, "p12", 3, 3, 70);      // +6
  proc.pid(13, "p13", 4, 4, 70);      // +8
  CpuSummary s = sampler.stop();

  EXPECT_GT(s.seconds, 0);
  ASSERT_EQ(s.core_busy_pct.size(), 2u);
  EXPECT_DOUBLE_EQ(s.core_busy_pct[0], 50);  // 100 busy of 200 ticks
  EXPECT_DOUBLE_EQ(s.core_busy_pct[1], 50);
  ASSERT_EQ(s.core_busy_max_pct.size(), 2u);
  EXPECT_DOUBLE_EQ(s.core_busy_max_pct[0], 90);
  EXPECT_DOUBLE_EQ(s.core_busy_max_pct[1], 50);  // never below the average
  EXPECT_DOUBLE_EQ(s.total_busy_pct, 50);

  // One core had 200 ticks in the window.
  ASSERT_EQ(s.top.size(), 5u);
  EXPECT_EQ(s.top[0].pid, 42);
  EXPECT_EQ(s.top[0].comm, "my (weird) proc");
  EXPECT_DOUBLE_EQ(s.top[0].cpu_pct, 150);
  EXPECT_EQ(s.top[1].pid, 8);
  EXPECT_DOUBLE_EQ(s.top[1].cpu_pct, 25);
  EXPECT_EQ(s.top[2].pid, 9);
  EXPECT_DOUBLE_EQ(s.top[2].cpu_pct, 10);
  EXPECT_EQ(s.top[3].pid, 13);
  EXPECT_DOUBLE_EQ(s.top[3].cpu_pct, 4);
  EXPECT_EQ(s.top[4].pid, 12);
  EXPECT_DOUBLE_EQ(s.top[4].cpu_pct, 3);
}

TEST(CpuParse, RolesFollowTheFileServerAndKthreadd) {
  EXPECT_EQ(process_role(10, 1, "smbd", {}), "server");
  EXPECT_EQ(process_role(11, 10, "smbd-worker", {"smbd"}), "server");  // forked by smbd
  EXPECT_EQ(process_role(12, 1, "python3", {}), "other");
  EXPECT_EQ(process_role(13, 2, "ksoftirqd/0", {}), "kernel");
  EXPECT_EQ(process_role(2, 0, "kthreadd", {}), "kernel");
  EXPECT_TRUE(is_file_server_comm("vsftpd"));
  EXPECT_TRUE(is_file_server_comm("ganesha.nfsd"));
  EXPECT_FALSE(is_file_server_comm("smbclient"));  // a client, not the server
  uint64_t ns = 0;
  EXPECT_TRUE(parse_schedstat("123456 789 10\n", &ns));
  EXPECT_EQ(ns, 123456u);
  EXPECT_FALSE(parse_schedstat("garbage", &ns));
}

TEST(CpuSampler, ThreadsRolesAndKernelShares) {
  TempDir dir;
  FakeProc proc(dir.path());
  // cpu0: 40 busy ticks of which 10 system and 20 softirq over the window.
  proc.stat("cpu0 0 0 0 100 0 0 0 0 0 0\n");
  proc.child(10, 1, "smbd");
  proc.child(11, 10, "smbd");  // a child serving one connection
  proc.thread(11, 11, 0);
  proc.thread(11, 15, 1000);
  proc.child(12, 1, "python3");
  proc.thread(12, 12, 0);
  proc.child(13, 2, "ksoftirqd/0");
  proc.thread(13, 13, 0);
  CpuSampler sampler(3600, dir.path());
  sampler.start();
  proc.stat("cpu0 10 0 10 160 0 0 20 0 0 0\n");
  proc.thread(11, 11, 10);
  proc.thread(11, 15, 2000);  // the busy thread: +1000 ns
  proc.thread(12, 12, 500);
  proc.thread(13, 13, 300);
  CpuSummary s = sampler.stop();
  EXPECT_DOUBLE_EQ(s.sys_pct, 10);
  EXPECT_DOUBLE_EQ(s.softirq_pct, 20);
  const ProcLoad* child = nullptr;
  for (const auto& p : s.top) {
    if (p.pid == 11) child = &p;
    if (p.pid == 12) EXPECT_EQ(p.role, "other");
    if (p.pid == 13) EXPECT_EQ(p.role, "kernel");
  }
  ASSERT_NE(child, nullptr);
  EXPECT_EQ(child->role, "server");
  EXPECT_EQ(child->threads, 2);
  // The busiest thread did 1000 of the process's 1010 ns (whatever the window).
  EXPECT_NEAR(child->top_thread_pct / child->cpu_pct, 1000.0 / 1010, 1e-9);
  EXPECT_GT(s.server_pct, 0);
  EXPECT_GT(s.other_pct, 0);
  EXPECT_GT(s.kernel_pct, 0);
}

TEST(CpuSampler, SingleIntervalCountsForTheMax) {
  TempDir dir;
  FakeProc proc(dir.path());
  proc.stat(cpu_line(0, 0, 100, 0));
  CpuSampler sampler(3600, dir.path());
  sampler.start();
  proc.stat(cpu_line(0, 30, 170, 0));
  CpuSummary s = sampler.stop();
  ASSERT_EQ(s.core_busy_pct.size(), 1u);
  EXPECT_DOUBLE_EQ(s.core_busy_pct[0], 30);
  EXPECT_DOUBLE_EQ(s.core_busy_max_pct[0], 30);
  EXPECT_TRUE(s.top.empty());
  // A sampler can run another window.
  sampler.start();
  proc.stat(cpu_line(0, 130, 170, 0));
  EXPECT_DOUBLE_EQ(sampler.stop().core_busy_pct[0], 100);
}

TEST(CpuSampler, MissingProcIsAnError) {
  TempDir dir;
  CpuSampler sampler(0.1, dir.file("nope"));
  try {
    sampler.start();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
  }
}

// This machine's cgroup mounts (v1 per controller beside a v2 "unified"), a pure v2
// systemd host, a bind of part of a hierarchy and an escaped mount point.
constexpr const char* kMountinfo =
    "22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n"
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime shared:5 - cgroup cgroup rw,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
    "50 22 0:29 /lab /mnt/cpu\\040lab ro,relatime - cgroup cgroup rw,cpu\n"
    "51 22 0:39 / /srv/both ro - cgroup none rw,cpu,cpuacct,xattr\n";

TEST(CpuParse, CgroupMounts) {
  std::vector<CgroupMount> m = parse_cgroup_mounts(kMountinfo);
  ASSERT_EQ(m.size(), 6u);
  EXPECT_EQ(m[0].mount_point, "/sys/fs/cgroup/cpu");
  EXPECT_EQ(m[0].root, "/");
  EXPECT_FALSE(m[0].v2);
  EXPECT_EQ(m[0].controllers, std::vector<std::string>{"cpu"});
  EXPECT_EQ(m[1].controllers, std::vector<std::string>{"cpuacct"});
  EXPECT_EQ(m[2].mount_point, "/sys/fs/cgroup/systemd");  // optional fields before the '-'
  EXPECT_EQ(m[2].controllers, std::vector<std::string>{"name=systemd"});
  EXPECT_EQ(m[3].mount_point, "/sys/fs/cgroup/unified");
  EXPECT_TRUE(m[3].v2);
  EXPECT_TRUE(m[3].controllers.empty());
  EXPECT_EQ(m[4].mount_point, "/mnt/cpu lab");
  EXPECT_EQ(m[4].root, "/lab");
  EXPECT_EQ(m[5].controllers, (std::vector<std::string>{"cpu", "cpuacct", "xattr"}));
  // A pure v2 host: the hierarchy at /sys/fs/cgroup itself.
  m = parse_cgroup_mounts(
      "35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 "
      "rw,nsdelegate,memory_recursiveprot\n");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_TRUE(m[0].v2);
  EXPECT_EQ(m[0].mount_point, "/sys/fs/cgroup");
  EXPECT_TRUE(parse_cgroup_mounts("").empty());
  EXPECT_TRUE(parse_cgroup_mounts("garbage line\n1 2 3\n").empty());
}

TEST(CpuParse, PidCgroup) {
  std::vector<PidCgroup> c = parse_pid_cgroup(
      "9:name=systemd:/\n"
      "3:cpu,cpuacct:/chokepoint-lab-smbd\n"
      "0::/system.slice/smbd.service\n"
      "2:cpuset:/odd:name\n"  // ':' inside the path
      "bad line\n"
      "5:memory:relative\n");  // not a path: ignored
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(c[0].hierarchy, "9");
  EXPECT_EQ(c[0].controllers, std::vector<std::string>{"name=systemd"});
  EXPECT_EQ(c[0].path, "/");
  EXPECT_EQ(c[1].controllers, (std::vector<std::string>{"cpu", "cpuacct"}));
  EXPECT_EQ(c[1].path, "/chokepoint-lab-smbd");
  EXPECT_EQ(c[2].hierarchy, "0");
  EXPECT_TRUE(c[2].controllers.empty());
  EXPECT_EQ(c[2].path, "/system.slice/smbd.service");
  EXPECT_EQ(c[3].path, "/odd:name");
}

TEST(CpuParse, CpuLimits) {
  EXPECT_DOUBLE_EQ(parse_cfs_limit("20000\n", "100000\n"), 20);
  EXPECT_DOUBLE_EQ(parse_cfs_limit("250000", "100000"), 250);
  EXPECT_DOUBLE_EQ(parse_cfs_limit("-1\n", "100000\n"), 0);
  EXPECT_DOUBLE_EQ(parse_cfs_limit("x", "100000"), -1);
  EXPECT_DOUBLE_EQ(parse_cfs_limit("20000", "0"), -1);
  EXPECT_DOUBLE_EQ(parse_cpu_max("50000 100000\n"), 50);
  EXPECT_DOUBLE_EQ(parse_cpu_max("max 100000\n"), 0);
  EXPECT_DOUBLE_EQ(parse_cpu_max("5000 10000"), 50);
  EXPECT_DOUBLE_EQ(parse_cpu_max(""), -1);
  EXPECT_DOUBLE_EQ(parse_cpu_max("1 2 3"), -1);
}

// A fake /proc (self/mountinfo, PID/cgroup, ns links) and a fake tree of cgroup files.
class FakeCgroups {
 public:
  FakeCgroups(const std::string& proc, const std::string& fs) : proc_(proc), fs_(fs) {
    std::filesystem::create_directories(proc_ + "/self/ns");
    ::symlink("net:[100]", (proc_ + "/self/ns/net").c_str());
  }
  void mountinfo(const std::string& text) { FakeProc::write(proc_ + "/self/mountinfo", text); }
  void pid(int pid, const std::string& cgroup, const std::string& netns = "net:[100]") {
    std::string dir = proc_ + "/" + std::to_string(pid);
    std::filesystem::create_directories(dir + "/ns");
    FakeProc::write(dir + "/cgroup", cgroup);
    ::unlink((dir + "/ns/net").c_str());
    ::symlink(netns.c_str(), (dir + "/ns/net").c_str());
  }
  void file(const std::string& path, const std::string& text) {
    std::filesystem::create_directories(std::filesystem::path(fs_ + path).parent_path());
    FakeProc::write(fs_ + path, text);
  }
  // A v1 cpu cgroup `dir` allowed cpu.cfs_quota_us `quota` per 100 ms period.
  void cfs_quota(const std::string& dir, const std::string& quota) {
    file(dir + "/cpu.cfs_quota_us", quota);
    file(dir + "/cpu.cfs_period_us", "100000\n");
  }

 private:
  std::string proc_, fs_;
};

// A host's fake /proc and cgroup tree: kMountinfo's cgroups, one idle core
// (1000 ticks) so far.
struct FakeHost {
  TempDir proc, fs;
  FakeProc p{proc.path()};
  FakeCgroups g{proc.path(), fs.path()};
  FakeHost() {
    g.mountinfo(kMountinfo);
    p.stat(cpu_line(0, 0, 1000, 0));
  }
};

// Process `pid`, forked by `ppid` and named `comm`, in the root cpu cgroup and
// the network namespace `netns` (the agent's: net:[100]).
void process(FakeHost& h, int pid, int ppid, const std::string& comm,
             const std::string& netns = "net:[100]") {
  h.p.child(pid, ppid, comm);
  h.g.pid(pid, "1:cpu:/\n", netns);
}

// The top processes' pids, each with whether it runs in another network namespace.
std::vector<std::pair<int, bool>> netns_of_top(const CpuSummary& s) {
  std::vector<std::pair<int, bool>> out;
  for (const ProcLoad& l : s.top) out.emplace_back(l.pid, l.other_netns);
  return out;
}

TEST(CpuLimit, V1QuotaOfTheCgroupAndItsAncestors) {
  TempDir proc, fs;
  FakeCgroups g(proc.path(), fs.path());
  g.mountinfo(kMountinfo);
  g.cfs_quota("/sys/fs/cgroup/cpu", "-1\n");
  g.cfs_quota("/sys/fs/cgroup/cpu/lab", "50000\n");
  g.cfs_quota("/sys/fs/cgroup/cpu/lab/smbd", "20000\n");
  g.cfs_quota("/sys/fs/cgroup/cpu/lab/wide", "300000\n");
  g.pid(10, "2:cpuacct:/lab/smbd\n1:cpu:/lab/smbd\n0::/\n");
  g.pid(11, "1:cpu:/lab/wide\n");  // the parent's 50 % is tighter
  g.pid(12, "1:cpu:/\n0::/\n");
  g.pid(13, "1:cpu:/gone\n");  // no files: only the root's (none)
  EXPECT_DOUBLE_EQ(process_cpu_limit_pct(10, proc.path(), fs.path()), 20);
  EXPECT_DOUBLE_EQ(process_cpu_limit_pct(11, proc.path(), fs.path()), 50);
  EXPECT_DOUBLE_EQ(process_cpu_limit_pct(12, proc.path(), fs.path()), 0);
  EXPECT_DOUBLE_EQ(process_cpu_limit_pct(13, proc.path(), fs.path()), 0);
  EXPECT_DOUBLE_EQ(process_cpu_limit_pct(99, proc.path(), fs.path()), 0);  // no such process
  // Without the cgroup mounts (a lab host before they were mounted), nothing is visible.
  g.mountinfo("22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n");
  EXPECT_DOUBLE_EQ(process_cpu_limit_pct(10, proc.path(), fs.path()), 0);
}

TEST(CpuLimit, V2CpuMaxAndMountRoots) {
  TempDir proc, fs;
  FakeCgroups g(proc.path(), fs.path());
  g.mountinfo(
      "35 24 0:30 / /sys/fs/cgroup rw shared:9 - cgroup2 cgroup2 rw,nsdelegate\n"
      "50 22 0:29 /lab /mnt/cpu\\040lab ro,relatime - cgroup cgroup rw,cpu\n");
  g.file("/sys/fs/cgroup/system.slice/cpu.max", "max 100000\n");
  g.file("/sys/fs/cgroup/system.slice/smbd.service/cpu.max", "150000 100000\n");
  g.pid(20, "0::/system.slice/smbd.service\n");
  EXPECT_DOUBLE_EQ(process_cpu_limit_pct(20, proc.path(), fs.path()), 150);
  // v1 seen through a mount of its /lab subtree only.
  g.cfs_quota("/mnt/cpu lab", "40000");
  g.cfs_quota("/mnt/cpu lab/smbd", "-1");
  g.pid(21, "1:cpu:/lab/smbd\n0::/\n");
  EXPECT_DOUBLE_EQ(process_cpu_limit_pct(21, proc.path(), fs.path()), 40);
  g.pid(22, "1:cpu:/elsewhere\n0::/\n");  // outside what the mount shows
  EXPECT_DOUBLE_EQ(process_cpu_limit_pct(22, proc.path(), fs.path()), 0);
}

TEST(CpuSampler, KeepsProcessesNearTheirLimitAndTheirNamespace) {
  FakeHost h;
  h.g.cfs_quota("/sys/fs/cgroup/cpu/starved", "20000");
  h.g.cfs_quota("/sys/fs/cgroup/cpu/loose", "400000");
  for (int pid = 1; pid <= 8; ++pid) {
    h.p.pid(pid, "p" + std::to_string(pid), 0, 0, 10);
    h.g.pid(pid, "1:cpu:/\n");
  }
  h.g.pid(7, "1:cpu:/starved\n", "net:[200]");  // smbd of the other lab host
  h.g.pid(8, "1:cpu:/loose\n");
  CpuSampler sampler(3600, h.proc.path(), h.fs.path());
  sampler.start();
  h.p.stat(cpu_line(0, 1000, 1000, 0));  // one core, 1000 ticks in the window
  // Five busy processes at 50..90 %, then the starved one at 19 % (95 % of its 20 %), one at
  // 10 % of a 400 % limit, and one at 15 % without a limit.
  for (int pid = 1; pid <= 5; ++pid)
    h.p.pid(pid, "p" + std::to_string(pid), 400 + 100 * pid, 0, 10);
  h.p.pid(6, "p6", 150, 0, 10);
  h.p.pid(7, "smbd", 190, 0, 10);
  h.p.pid(8, "p8", 100, 0, 10);
  CpuSummary s = sampler.stop();
  ASSERT_EQ(s.top.size(), 6u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(s.top[i].pid, 5 - i);
    EXPECT_DOUBLE_EQ(s.top[i].cpu_limit_pct, 0);
    EXPECT_FALSE(s.top[i].other_netns);
  }
  EXPECT_EQ(s.top[5].comm, "smbd");
  EXPECT_DOUBLE_EQ(s.top[5].cpu_pct, 19);
  EXPECT_DOUBLE_EQ(s.top[5].cpu_limit_pct, 20);
  EXPECT_TRUE(s.top[5].other_netns);
}

// vsftpd's default isolate_network: each session runs in a fresh network
// namespace, forked by the listener in the agent's own. The session is this
// end's file server; an smbd whose whole tree lives elsewhere is not.
TEST(CpuSampler, AFileServerSessionInItsOwnNamespaceIsThisEndsServer) {
  FakeHost h;
  process(h, 20, 1, "vsftpd");                // the listener, in the agent's namespace
  process(h, 21, 20, "vsftpd", "net:[300]");  // a session, in a namespace of its own
  process(h, 30, 1, "smbd", "net:[200]");     // another host's (or container's) smbd and its child
  process(h, 31, 30, "smbd", "net:[200]");
  CpuSampler sampler(3600, h.proc.path(), h.fs.path());
  sampler.start();
  h.p.stat(cpu_line(0, 1000, 1000, 0));
  h.p.pid_with_parent(21, 20, "vsftpd", 500);
  h.p.pid_with_parent(31, 30, "smbd", 300);
  CpuSummary s = sampler.stop();
  ASSERT_EQ(netns_of_top(s), (std::vector<std::pair<int, bool>>{{21, false}, {31, true}}));
  EXPECT_EQ(s.top[0].role, "server");
}

// The kernel prints each address as its in-memory 32-bit words in hex, so
// these lines are a little-endian machine's (x86-64, aarch64).
constexpr const char* kNetTcpHeader =
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
    "timeout inode\n";
// smbd's listener on 198.18.0.1:445, and a connection from 198.18.0.2:45986.
constexpr const char* kNetTcpLines =
    "   0: 010012C6:01BD 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 "
    "4444 1 0000000000000000 100 0 0 10 0\n"
    "   1: 010012C6:01BD 020012C6:B3A2 01 00000000:00000000 00:00000000 00000000     0        0 "
    "5555 1 0000000000000000 20 4 30 10 -1\n";

TEST(CpuParse, ProcNetTcp) {
  const auto v4 = parse_proc_net_tcp(std::string(kNetTcpHeader) + kNetTcpLines, false);
  ASSERT_EQ(v4.size(), 2u);
  EXPECT_EQ(v4[0].inode, 4444u);
  EXPECT_EQ(v4[0].local_port, 445);
  EXPECT_FALSE(v4[0].established);
  EXPECT_EQ(v4[1].inode, 5555u);
  EXPECT_EQ(v4[1].remote_address, "198.18.0.2");
  EXPECT_TRUE(v4[1].established);
  // tcp6: an IPv4-mapped peer reads as IPv4; a plain IPv6 one compressed.
  const auto v6 = parse_proc_net_tcp(
      std::string(kNetTcpHeader) +
          "   0: 00000000000000000000000000000000:0015 0000000000000000FFFF0000020012C6:C001 01 "
          "00000000:00000000 00:00000000 00000000  0  0 777 1 0 20 4 30 10 -1\n"
          "   1: 000000000000000000000000000000FD:0801 000000FD000000000000000002000000:C002 01 "
          "00000000:00000000 00:00000000 00000000  0  0 778 1 0 20 4 30 10 -1\n"
          "   2: garbage\n",
      true);
  ASSERT_EQ(v6.size(), 2u);
  EXPECT_EQ(v6[0].local_port, 21);
  EXPECT_EQ(v6[0].remote_address, "198.18.0.2");
  EXPECT_EQ(v6[1].local_port, 2049);
  EXPECT_EQ(v6[1].remote_address, "fd00::2");
  EXPECT_EQ(canonical_address("::ffff:198.18.0.2"), "198.18.0.2");
  EXPECT_EQ(canonical_address("fd00:0::2"), "fd00::2");
  EXPECT_EQ(canonical_address("nas.local"), "");
}

// A file server in a container (its own network, pid and mount namespaces;
// Docker's or Podman's Samba on a NAS): no file server of its ancestors runs in
// the agent's namespace, but the child smbd holds the sample's connection (port
// 445 from the client's address), so it and what it forked are this end's
// server. Another container's smbd, serving someone else, stays competing load.
TEST(CpuSampler, AFileServerHoldingTheSamplesConnectionIsThisEndsServerInAContainer) {
  FakeHost h;
  process(h, 40, 1, "containerd-shim");       // in the agent's namespace
  process(h, 41, 40, "smbd", "net:[400]");    // the container's listener
  process(h, 42, 41, "smbd", "net:[400]");    // the client's session
  process(h, 43, 42, "worker", "net:[400]");  // a helper it forked
  process(h, 50, 1, "smbd", "net:[500]");     // another container's, with a client of its own
  for (int pid : {41, 42, 43, 50}) {
    const std::string dir = h.proc.path() + "/" + std::to_string(pid);
    std::filesystem::create_directories(dir + "/net");
    std::filesystem::create_directories(dir + "/fd");
    FakeProc::write(dir + "/net/tcp", std::string(kNetTcpHeader) + kNetTcpLines);
  }
  ::symlink("socket:[4444]", (h.proc.path() + "/41/fd/3").c_str());
  ::symlink("socket:[5555]", (h.proc.path() + "/42/fd/7").c_str());
  ::symlink("/dev/null", (h.proc.path() + "/42/fd/0").c_str());
  ::symlink("socket:[5555]", (h.proc.path() + "/50/fd/7").c_str());  // its own netns's 5555
  FakeProc::write(h.proc.path() + "/50/net/tcp",
                  std::string(kNetTcpHeader) +
                      "   1: 010012C6:01BD 030012C6:B3A2 01 00000000:00000000 00:00000000 "
                      "00000000     0        0 5555 1 0000000000000000 20 4 30 10 -1\n");
  CpuSampler sampler(3600, h.proc.path(), h.fs.path());
  sampler.start({445, "198.18.0.2"});
  h.p.stat(cpu_line(0, 1000, 1000, 0));
  h.p.pid_with_parent(42, 41, "smbd", 400);
  h.p.pid_with_parent(43, 42, "worker", 200);
  h.p.pid_with_parent(50, 1, "smbd", 300);
  CpuSummary s = sampler.stop();
  ASSERT_EQ(netns_of_top(s),
            (std::vector<std::pair<int, bool>>{{42, false}, {50, true}, {43, false}}));
  EXPECT_EQ(s.top[0].role, "server");
  EXPECT_EQ(s.top[2].role, "server");            // a descendant of the holder, whatever its name
  EXPECT_DOUBLE_EQ(s.server_pct, 30 + 40 + 20);  // by name, wherever they run
  EXPECT_DOUBLE_EQ(s.other_pct, 0);
  // Without the connection (an older orchestrator), the container is another's.
  CpuSampler blind(3600, h.proc.path(), h.fs.path());
  blind.start();
  h.p.pid_with_parent(42, 41, "smbd", 800);
  CpuSummary b = blind.stop();
  for (const ProcLoad& l : b.top) EXPECT_TRUE(l.other_netns) << l.pid;
}

TEST(CpuSampler, RealProc) {
  CpuSampler sampler(0.05);
  sampler.start();
  const double until = monotonic_seconds() + 0.3;
  volatile uint64_t spin = 0;
  while (monotonic_seconds() < until) spin = spin + 1;
  CpuSummary s = sampler.stop();
  EXPECT_GT(s.seconds, 0);
  ASSERT_FALSE(s.core_busy_pct.empty());
  EXPECT_LE(s.core_busy_pct.size(), static_cast<size_t>(sysconf(_SC_NPROCESSORS_CONF)));
  ASSERT_EQ(s.core_busy_max_pct.size(), s.core_busy_pct.size());
  for (size_t i = 0; i < s.core_busy_pct.size(); ++i) {
    EXPECT_GE(s.core_busy_pct[i], 0);
    EXPECT_LE(s.core_busy_pct[i], 100);
    EXPECT_GE(s.core_busy_max_pct[i], s.core_busy_pct[i]);
    EXPECT_LE(s.core_busy_max_pct[i], 100);
  }
  EXPECT_GT(s.total_busy_pct, 0);  // this thread was spinning
  EXPECT_LE(s.total_busy_pct, 100);
  ASSERT_FALSE(s.top.empty());
  // The 5 busiest, plus at most 5 near a limit or the endpoint's own.
  EXPECT_LE(s.top.size(), 10u);
  for (size_t i = 1; i < s.top.size(); ++i) EXPECT_GE(s.top[i - 1].cpu_pct, s.top[i].cpu_pct);
  // This process is the sampler's own: listed as the agent, with its spinning thread.
  const auto self = std::find_if(s.top.begin(), s.top.end(),
                                 [](const ProcLoad& p) { return p.pid == ::getpid(); });
  ASSERT_NE(self, s.top.end());
  EXPECT_EQ(self->role, "agent");
  EXPECT_GT(self->top_thread_pct, 0);
  EXPECT_LE(self->top_thread_pct, self->cpu_pct + 1e-9);
}

// A thread of this process that ends inside the window (a TCP sample's connection
// thread) still counts: the sampling thread saw it.
TEST(CpuSampler, AThreadThatEndsInTheWindowKeepsItsTime) {
  CpuSampler sampler(0.02);
  sampler.start();
  // The spinner runs until it has used 0.3 s of CPU itself, however long a
  // loaded machine makes that take, then ends inside the window.
  std::thread spinner([] {
    volatile uint64_t spin = 0;
    const double limit = monotonic_seconds() + 30;
    timespec ts{};
    do {
      for (int i = 0; i < 100000; ++i) spin = spin + 1;
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    } while (ts.tv_sec + ts.tv_nsec / 1e9 < 0.3 && monotonic_seconds() < limit);
  });
  spinner.join();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CpuSummary s = sampler.stop();
  const auto self = std::find_if(s.top.begin(), s.top.end(),
                                 [](const ProcLoad& p) { return p.pid == ::getpid(); });
  ASSERT_NE(self, s.top.end());
  // The main thread, the sampling thread, and the spinner that is gone.
  EXPECT_GE(self->threads, 3);
  // The gone spinner's 0.3 s of CPU are still counted (a little less for the
  // sampling period's granularity): its share of the window, in seconds.
  EXPECT_GT(self->top_thread_pct / 100 * s.seconds, 0.2);
}

}  // namespace
}  // namespace cp::probe
