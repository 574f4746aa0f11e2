// The CPU message: what one end's CPU did during a sample (per core, per role, the
// busiest processes and their busiest threads). Filled by the probe (probe/cpu.h),
// sent by the agent, stored per sample and read back by analysis and export through
// this one codec.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace boost::json {
class value;
}  // namespace boost::json

namespace cp::msg {

struct ProcLoad {
  int pid = 0;
  std::string comm;
  double cpu_pct = 0;  // % of ONE core (all threads together, so may exceed 100), window average
  // The CPU limit of its cgroups, % of one core: v1 cpu.cfs_quota_us / cpu.cfs_period_us,
  // v2 cpu.max, the tightest of its cgroup and their ancestors. 0: no limit, or none visible.
  double cpu_limit_pct = 0;
  // It runs in another network namespace than the sampler: a container, or the other
  // host of a lab on one machine. False when not known (only root may look).
  bool other_netns = false;
  // Who it is (process_role()): "agent" (this sampler's own process), "server" (a file
  // server daemon or its child), "kernel" (a kernel thread) or "other" (competing load).
  std::string role;
  // Its busiest thread, % of one core over the window (from per-thread schedstat, ns);
  // -1 when per-thread times are not visible. A thread cannot use more than one core, so
  // this is what tells a saturated single-threaded server (or probe) from a busy process.
  double top_thread_pct = -1;
  int threads = 0;  // threads seen at the end of the window (0: not known)
  // Its threads' time runnable but waiting for a CPU (schedstat run_delay), % of the
  // window summed over threads: what competing load costs it.
  double wait_pct = 0;
  // Of its limiting cgroup's CFS periods in the window, the share it was throttled
  // in (cpu.stat), %; -1 when not known. A binding quota shows here even when
  // competing load keeps the process from using all of it.
  double throttled_pct = -1;
};

struct CpuSummary {
  double seconds = 0;                     // window length (wall)
  std::vector<double> core_busy_pct;      // per core (index = N of cpuN), window average, 0..100
  std::vector<double> core_busy_max_pct;  // per core, max over the sampling intervals
  double total_busy_pct = 0;              // all cores together, average (0..100)
  // Of all cores' time: kernel (system) and interrupt (irq + softirq) work, average
  // (0..100). High at MTU 1500 they are the per-packet cost jumbo frames cut.
  double sys_pct = 0;
  double softirq_pct = 0;
  // CPU of every process by role (see ProcLoad::role), % of one core, window average.
  double agent_pct = 0, server_pct = 0, kernel_pct = 0, other_pct = 0;
  // The agent's and file servers' threads waiting for a CPU, % of the window summed.
  double own_wait_pct = 0;
  // The 5 busiest processes, and up to 5 more that used at least half of their
  // cgroup CPU limit or are the endpoint's own (the agent, a file server); all sorted
  // by cpu_pct, descending.
  std::vector<ProcLoad> top;
  // The file server instance serving the sample's connection (when the
  // sampler was told it, cpu_start's port and peer): the topmost file-server
  // ancestor of the process holding it, e.g. vsftpd's listener for its session
  // process; 0 when unknown. The verdict reads that instance's config.
  int server_pid = 0;
};

// The codec. to_json writes every figure at kCpuDigits significant digits: the
// precision reports show (98.5 %, 0.1234 s), and a sixth of the bytes of the
// 17 digits a double needs, in each sample stored. from_json is lenient: a field an older agent did
// not send keeps its default, so stored runs stay readable.
inline constexpr int kCpuDigits = 4;
boost::json::value to_json(const CpuSummary& s);
// `v` at kCpuDigits significant digits (the nearest double to that decimal).
double round_sig(double v);
CpuSummary cpu_summary_from_json(const boost::json::value& v);
// The same from the peer (an agent's reply; `what` names it in errors): a
// field of the wrong type, a missing "seconds", "total_busy_pct" or "top", or
// over kMaxCores cores or kMaxTop processes throws Error(kPeer) naming the field.
inline constexpr size_t kMaxCores = 4096;
inline constexpr size_t kMaxTop = 64;
CpuSummary cpu_summary_from_peer(const boost::json::value& v, std::string_view what);

}  // namespace cp::msg
