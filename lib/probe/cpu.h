// CPU load while a sample runs: per-core busy time from /proc/stat, sampled on
// a background thread, and the busiest processes from /proc/PID/stat.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace cp::probe {

struct ProcLoad {
  int pid = 0;
  std::string comm;
  double cpu_pct = 0;  // % of ONE core (all threads together, so may exceed 100), window average
};

struct CpuSummary {
  double seconds = 0;                     // window length (wall)
  std::vector<double> core_busy_pct;      // per core (index = N of cpuN), window average, 0..100
  std::vector<double> core_busy_max_pct;  // per core, max over the sampling intervals
  double total_busy_pct = 0;              // all cores together, average (0..100)
  std::vector<ProcLoad> top;              // up to 5 busiest processes, descending
};

class CpuSampler {
 public:
  // Samples <proc_root>/stat every interval_s on a background thread from start() to stop().
  explicit CpuSampler(double interval_s = 0.25, std::string proc_root = "/proc");
  ~CpuSampler();  // stops the thread if still running
  CpuSampler(const CpuSampler&) = delete;
  CpuSampler& operator=(const CpuSampler&) = delete;

  // Throws Error(kIo) when <proc_root>/stat cannot be read. Calling it while running is a bug.
  void start();
  // Ends the window and summarises it. Calling it when not running is a bug.
  CpuSummary stop();
  // Closes one sampling interval now (what the thread does every interval_s); lets
  // tests with a fake proc_root decide exactly which snapshots are taken.
  void sample_now();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Pure parsers (unit-tested on fixed text):
struct CpuTimes {
  uint64_t busy = 0;   // user+nice+system+irq+softirq+steal (guest is already in user), ticks
  uint64_t total = 0;  // busy + idle + iowait, ticks
};
// Per core, indexed by N of the cpuN lines (not the aggregate "cpu" line); a core missing
// from the text (offline) stays {0, 0}.
std::vector<CpuTimes> parse_proc_stat(std::string_view text);
// /proc/PID/stat: comm (may contain spaces and parens: it runs to the LAST ')') and
// utime+stime in ticks; optionally the start time (ticks after boot) that tells a reused
// pid apart. False when the text is not in that format.
bool parse_pid_stat(std::string_view text, std::string* comm, uint64_t* jiffies,
                    uint64_t* start_ticks = nullptr);

}  // namespace cp::probe
