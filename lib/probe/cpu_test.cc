#include "probe/cpu.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

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
  EXPECT_LE(s.top.size(), 5u);
  for (size_t i = 1; i < s.top.size(); ++i) EXPECT_GE(s.top[i - 1].cpu_pct, s.top[i].cpu_pct);
}

}  // namespace
}  // namespace cp::probe
